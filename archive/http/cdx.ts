/**
 * `GET/HEAD /cdx?url=…`: the CDX server API over every local archive, as
 * pywb, OutbackCDX and the Wayback CDX server answer it (the request:
 * archive/cdx/query.ts; the answer: archive/cdx/answer.ts), streamed from
 * the index. The contract: docs/http-api.md "CDX server API".
 */
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { cdxBody, NDJSON } from '../cdx/answer.js';
import { type CdxQuery, parseCdxQuery } from '../cdx/query.js';
import { readRoute, TEXT } from './context.js';

/** The CDX plugin. */
export async function cdxRoutes(app: FastifyInstance): Promise<void> {
  readRoute(app, '/cdx', (req, reply) => cdx(app, req, reply), { resource: 'cdx' });
}

/**
 * The parameters are checked before anything is sent (a bad one is a 400
 * with its reason, for HEAD too); then `text/plain` (or NDJSON), streamed
 * (chunked). Every answer, errors included, is open to any origin.
 */
async function cdx(app: FastifyInstance, req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  // Open to scripts of any origin, the 400s too (so that a page can read why); never sniffed as another type, the 400s neither.
  reply.header('access-control-allow-origin', '*').header('x-content-type-options', 'nosniff');
  const target = req.raw.url ?? '';
  const q = parseCdxQuery(new URLSearchParams(target.includes('?') ? target.slice(target.indexOf('?') + 1) : ''), app.config.maxUrlLength);
  reply.type(q.output === 'json' ? NDJSON : TEXT);
  if (req.method === 'HEAD') {
    // As GET: an answer with no line is sent with `Content-Length: 0`, any other streamed (chunked).
    if (!(await anyRow(app, q))) reply.header('content-length', '0');
    return reply.send();
  }
  // The rows the access rules show (archive/read/visible-index.ts `cdxRows`): the one place CDX rows are left out.
  return reply.send(Readable.from(cdxBody(app.visible.cdxRows(q), q)));
}

/** Whether the answer to `q` has a line (for HEAD: one index query of two rows, not the answer). */
async function anyRow(app: FastifyInstance, q: CdxQuery): Promise<boolean> {
  for await (const _ of app.visible.cdxRows({ ...q, limit: 1 })) return true;
  return false;
}
