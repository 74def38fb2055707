/**
 * Capture ingest: `PUT <put_prefix>put/<anything>` with a capture record
 * body (docs/capture-record.md). The URI-R comes from the embedded request,
 * never from the PUT address. The archive alone decides whether a capture
 * is new (archive/store/ingest/capture-is-new.ts, in the write queue): it answers
 *
 * - **201** (a new memento was stored: a new response, or a revisit — a
 *   capture identical to the memento it follows, at least
 *   `revisit_interval` after it, written as a WARC revisit record) or
 *   **200** (the capture is identical — payload digest, status, media
 *   type — to the memento it follows, within `revisit_interval` of it;
 *   nothing stored), both with `Location:` the URI-M of that
 *   memento, `ETag:` its capture tag (shared/capture-tag.ts) and
 *   `Archive-Revisit-After:` an HTTP-date (see {@link revisitAfter}): a
 *   capture of this URI-R with that tag, dated from the capture just sent
 *   up to before that instant, would be answered 200 and store nothing,
 *   so a sender that remembers the answer need not send it, and
 *   `Archive-Capture:` what was stored — `new` (a response of its own),
 *   `revisit` (a revisit record of the memento holding its payload) or
 *   `duplicate` (nothing; the 200) — so that a sender need not read the
 *   index to know it (shared/capture-put.ts `CAPTURE_FIELD`);
 * - **409** when a different capture of the URI-R is stored at the same
 *   second (a stored memento is never replaced; the body names its URI-M);
 * - errors as the store refuses them; 411 without a body length or chunked
 *   (RFC 9112 §6.3), 413 over `max_capture_bytes` by its Content-Length.
 *
 * A PUT may carry `Memento-Datetime: <HTTP-date>`, the capture's datetime
 * when its sender knows it (`memento-archive import` sends each WARC
 * record's WARC-Date): it is used instead of the response's Date; one that
 * is not an HTTP-date is 400.
 *
 * A PUT may carry `Archive-Revisit-Of: <archive id> <14 digits> <URI-R>`,
 * the memento whose payload the capture repeats (import sends it for a
 * WARC revisit record; archive/store/ingest/revisit-of.ts): a memento that is not
 * stored or that the access rules hide is 422 (the same answer for both),
 * a body with another payload is 400; else the capture is stored as a
 * revisit of it (unless it is a duplicate or revisit of its own URI-R's
 * newest memento).
 *
 * A PUT may carry `Archive-Capture-Via: <how>`
 * (archive/evidence/leaf.ts `Via`: `import`, `import wacz <digest>[ damaged]`),
 * which `memento-archive import` sends: it goes into the capture's record
 * and evidence log entry instead of `put`; any other value is 400.
 */
import type { FastifyInstance } from 'fastify';
import { CAPTURE_FIELD, type CaptureKind } from '#shared/capture-put.js';
import { captureEntityTag } from '#shared/capture-tag.js';
import { formatHttpDate, parseHttpDate } from '#shared/http-date.js';
import { httpError } from '#shared/http-error.js';
import { isVia, VIA_FIELD, type Via } from '../evidence/leaf.js';
import { uris } from '../memento/navigation.js';
import type { MementoRow, NewMementoRow } from '../read/rows.js';
import { parseRevisitOf, REVISIT_OF } from '../store/ingest/revisit-of.js';
import { TEXT } from './context.js';
import { putAccessHook } from './guards.js';

/**
 * The `Archive-Revisit-After` of a PUT answered 200 or 201 whose memento is
 * `row`: `row`'s Memento-Datetime plus the `revisit_interval` setting
 * (`intervalS`), as an HTTP-date (RFC 9110 §5.6.7). An identical capture
 * dated before it stores nothing; from then on it is recorded as a revisit.
 * With `revisit_interval: off` (`null`) identical captures never store
 * anything and the answer says one day, so that a sender that remembers
 * answers still asks again daily.
 */
export function revisitAfter(row: Pick<MementoRow, 'datetime'>, intervalS: number | null): string {
  return formatHttpDate(row.datetime + (intervalS ?? 86_400));
}

/** A PUT's `Archive-Capture-Via` (`put` when absent). @throws HttpError 400 for a value that is not a leaf.ts `Via` */
function viaOf(header: string | string[] | undefined): Via {
  if (header === undefined) return 'put';
  const v = String(header).trim();
  if (!isVia(v)) throw httpError(400, `the PUT's ${VIA_FIELD} is not put, import or import wacz sha256:<hex>[ damaged]`, { close: true });
  return v;
}

/** The PUTs answered with a revisit (their raw requests), for the daemon's capture metrics (server.ts). */
export const revisitPuts = new WeakSet<object>();

/** The capture PUT plugin: the access hook, a body left unparsed for the store to stream, the route. */
export async function ingestRoutes(app: FastifyInstance): Promise<void> {
  const { config, store } = app;
  app.addHook('onRequest', putAccessHook(config));
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, _payload, done) => done(null));
  app.put(`${config.putPrefix}put/*`, { config: { resource: 'put' } }, async (req, reply) => {
    const te = req.headers['transfer-encoding'];
    const cl = req.headers['content-length'];
    if (cl === undefined && !te) throw httpError(411, 'a capture PUT needs Content-Length or Transfer-Encoding: chunked', { close: true });
    if (cl !== undefined && Number(cl) > config.maxCaptureBytes) {
      throw httpError(413, `capture record of ${cl} bytes is larger than the limit of ${config.maxCaptureBytes} bytes`, { close: true });
    }
    const given = req.headers['memento-datetime'];
    const datetime = given === undefined ? undefined : parseHttpDate(String(given));
    if (datetime === null) throw httpError(400, "the PUT's Memento-Datetime is not an HTTP-date (e.g. Tue, 20 Mar 2001 20:35:00 GMT)", { close: true });
    const revisitOf = await namedOriginal(app, req.headers[REVISIT_OF.toLowerCase()]);
    const via = viaOf(req.headers[VIA_FIELD.toLowerCase()]);
    const result = await store.ingest(req.raw, new Date(), { datetime, revisitOf, via });
    app.metrics.ingestBytes.inc(result.bytes);
    const row: MementoRow | NewMementoRow = result.row;
    const uriM = uris.memento(req.base, row.archive_id, row);
    if (result.conflict) {
      // The body has been read whole: the connection may stay open. A memento the access rules hide is not named.
      if (!app.visible.shows(row.urlkey, row.datetime))
        throw httpError(409, 'conflict: another capture of this URI-R is stored at the same second; nothing stored');
      throw httpError(409, `conflict: a different capture of this URI-R is stored at the same second, ${uriM}; nothing stored`);
    }
    if (result.kind === 'revisit') revisitPuts.add(req.raw);
    const kind: CaptureKind = result.kind === 'revisit' ? 'revisit' : result.created ? 'new' : 'duplicate';
    return reply
      .code(result.created ? 201 : 200)
      .header('location', uriM)
      .header('etag', captureEntityTag(row))
      .header('archive-revisit-after', revisitAfter(row, config.revisitIntervalS))
      .header(CAPTURE_FIELD.toLowerCase(), kind)
      .type(TEXT)
      .send(uriM + '\n');
  });
}

/**
 * The memento an `Archive-Revisit-Of` value names, when the access rules
 * show it and its payload; `undefined` without the header.
 * @throws HttpError 400 for a value not of its form, 422 for a memento not stored or hidden (one answer for both)
 */
async function namedOriginal(app: FastifyInstance, value: string | string[] | undefined): Promise<MementoRow | undefined> {
  if (value === undefined) return undefined;
  const named = typeof value === 'string' ? parseRevisitOf(value) : undefined;
  if (!named) throw httpError(400, `the PUT's ${REVISIT_OF} is not "<archive id> <14-digit datetime> <URI-R>"`, { close: true });
  const row = await app.visible.revisitTarget(named.archiveId, named.urlkey, named.datetime);
  if (!row) throw httpError(422, `the PUT's ${REVISIT_OF} names no memento of this archive; nothing stored`, { close: true });
  return row;
}
