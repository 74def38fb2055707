/**
 * The Memento (URI-M, RFC 7089 §4.2.1 and §2.1.1): `/<id>/memento/<ts>/<URI-R>`
 * serves the stored capture at that Memento-Datetime (the response is
 * assembled by archive/memento/response.ts), `<ts>id_` the raw variant,
 * Prefer variant 2 at either. A timestamp that is not stored (or a prefix
 * of 4-12 digits) redirects to the nearest stored URI-M, as Wayback-style
 * archives do.
 */
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { parseTimestamp14, toEpochSeconds } from '../../shared/http-date.js';
import { httpError } from '../../shared/http-error.js';
import { select, uris } from '../memento/navigation.js';
import { parsePrefer } from '../memento/prefer.js';
import { assembleMemento } from '../memento/response.js';
import type { MementoRow } from '../store/index-db.js';
import { localArchive, readRoute, redirect } from './context.js';

const SHAPE = 'a Memento address is /<archive>/memento/<14-digit timestamp>/<URL>';

/** The Memento plugin. */
export async function mementoRoutes(app: FastifyInstance): Promise<void> {
  readRoute(app, '/:archive/memento/:ts/*', (req, reply) => memento(app, req, reply), { uriR: true, resource: 'memento' });
  // No timestamp segment at all.
  readRoute(
    app,
    '/:archive/memento/*',
    async (req) => {
      localArchive(app.config, req.params.archive);
      throw httpError(400, SHAPE);
    },
    { resource: 'memento' },
  );
}

/**
 * `GET/HEAD /<id>/memento/<ts>[id_]/<URI-R>`: the stored status, headers
 * and body (see assembleMemento); 302 to the nearest stored URI-M for a
 * timestamp that is not stored; 400 for a malformed timestamp; 404 when the
 * archive has no memento of the URI-R. HEAD computes the same headers and
 * sends no body.
 */
async function memento(app: FastifyInstance, req: FastifyRequest<{ Params: Record<string, string> }>, reply: FastifyReply): Promise<unknown> {
  const { store } = app;
  const archive = localArchive(app.config, req.params.archive);
  const raw = req.params.ts.endsWith('id_');
  const ts = raw ? req.params.ts.slice(0, -3) : req.params.ts;
  const when = parseTimestamp14(ts);
  if (!when) throw httpError(400, `malformed Memento timestamp ${JSON.stringify(ts.slice(0, 40))}; it is 14 digits YYYYMMDDhhmmss (UTC)`);
  const { uriR, urlkey, base } = req;
  const t = toEpochSeconds(when);
  // The navigation links (id, datetime, URI-R of first/last/prev/next), and the whole row of the
  // memento at or before `t` (the one served when its datetime is `t`), in one lookup.
  const n = await store.index.neighbourhood(archive.id, urlkey, t, true);
  if (!n) throw httpError(404, `no memento of ${uriR} in archive "${archive.id}"`);
  const s = select(n, t);
  const row = n.atOrBefore[0] as MementoRow | undefined;
  if (!row || s.memento.datetime !== t || ts.length !== 14) {
    // Not a stored datetime (or a timestamp prefix): the nearest URI-M.
    return redirect(reply, 302, uris.memento(base, archive.id, s.memento, raw));
  }
  const prefer = parsePrefer(req.headers.prefer);
  const answer = await assembleMemento(
    { base, archiveId: archive.id, uriR, row, selection: s, raw, originalContent: raw || prefer.dims.has('original-content'), prefer },
    (r) => store.readResponse(r),
  );
  const { plan } = answer;
  reply.code(answer.status).headers(answer.headers);
  if (req.method === 'HEAD' || plan.bodyless) {
    plan.stored.close();
    return reply.send();
  }
  // fastify gives a Buffer without Content-Type one (application/octet-stream); a stream it leaves alone.
  if (plan.bodyBuffer && answer.headers['content-type'] !== undefined) return reply.send(plan.bodyBuffer);
  const stream = Readable.from(plan.bodyBuffer ? [plan.bodyBuffer] : plan.body);
  stream.once('close', () => plan.stored.close());
  return reply.send(stream);
}
