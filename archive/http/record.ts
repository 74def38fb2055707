/**
 * `GET/HEAD /<id>/record/<ts>/<URI-R>`: the memento's own WARC record, as
 * it is stored, for anyone to check its entry in the log
 * (docs/evidence.md), as `application/warc` (the records:
 * archive/evidence/memento-records.ts); and {@link exactMemento}, the
 * memento at an exact timestamp that the log, tile and receipt addresses
 * name too.
 */
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { parseTimestamp14, toEpochSeconds } from '#shared/http-date.js';
import { httpError } from '#shared/http-error.js';
import { mementoRecords } from '../evidence/memento-records.js';
import type { MementoRow } from '../read/rows.js';
import { blockedError } from '../read/visible-index.js';
import { localArchive, readRoute } from './context.js';

/**
 * The memento of a URL stored at exactly `ts` in archive `archiveId`, as
 * the access rules let it be seen: its index row.
 *
 * @param url the URI-R, its urlkey, and the archive's base URL (for a 451's `Link`)
 * @param ts the Memento-Datetime as 14 digits (UTC)
 * @throws HttpError 404 for a `ts` that is not 14 digits or not a stored
 *   datetime, and for an excluded or embargoed memento (as if not stored);
 *   451 for a blocked one (RFC 7725)
 */
export async function exactMemento(
  app: FastifyInstance,
  archiveId: string,
  url: { uriR: string; urlkey: string; base: string },
  ts: string,
): Promise<MementoRow> {
  const when = /^\d{14}$/.test(ts) ? parseTimestamp14(ts) : null;
  const notFound = () =>
    httpError(404, `no memento of ${url.uriR} at ${ts.slice(0, 40)} in archive ${archiveId}; the address needs its exact 14-digit timestamp`);
  if (!when) throw notFound();
  const row = await app.visible.exact(archiveId, url.urlkey, toEpochSeconds(when));
  if (!row) throw notFound();
  if (row === 'block') throw blockedError(url.uriR, url.base);
  return row;
}

/** The `/record` plugin. */
export async function recordRoutes(app: FastifyInstance): Promise<void> {
  readRoute(app, '/:archive/record/:ts/*', (req, reply) => record(app, req as FastifyRequest<{ Params: Record<string, string> }>, reply), {
    uriR: true,
    resource: 'record',
  });
}

/**
 * `GET/HEAD /<id>/record/<ts>/<URI-R>`: `application/warc`, the memento's
 * record (and its published request record where the config says so:
 * evidence/memento-records.ts `mementoRecords`), `Content-Disposition:
 * attachment; filename="<id>-<ts>.warc"`. Errors as {@link exactMemento}.
 */
async function record(app: FastifyInstance, req: FastifyRequest<{ Params: Record<string, string> }>, reply: FastifyReply): Promise<unknown> {
  const archive = localArchive(app.config, req.params.archive);
  const ts = req.params.ts;
  const row = await exactMemento(app, archive.id, req, ts);
  const { records, close } = await mementoRecords(app.store.warcs, row, app.config.publishRequests);
  reply
    .code(200)
    .header('content-type', 'application/warc')
    .header('content-disposition', `attachment; filename="${archive.id}-${ts}.warc"`)
    .header('access-control-allow-origin', '*')
    .header('x-content-type-options', 'nosniff');
  if (req.method === 'HEAD') {
    close();
    return reply.send();
  }
  const stream = Readable.from(records);
  stream.once('close', close);
  return reply.send(stream);
}
