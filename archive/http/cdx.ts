/**
 * `GET/HEAD /cdx?url=…`: the CDX server API over every local archive, as
 * pywb, OutbackCDX and the Wayback CDX server answer it (the request:
 * archive/cdx/query.ts; the answer: archive/cdx/answer.ts), streamed from
 * the index. README "CDX server API".
 */
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { cdxBody, cdxRows, NDJSON } from '../cdx/answer.js';
import { parseCdxQuery } from '../cdx/query.js';
import type { CdxRow } from '../store/index-db.js';
import { readRoute, TEXT } from './context.js';

/** The CDX plugin. */
export async function cdxRoutes(app: FastifyInstance): Promise<void> {
  readRoute(app, '/cdx', (req, reply) => cdx(app, req, reply), { resource: 'cdx' });
}

/**
 * Whether a memento may be listed in a CDX answer. The one place CDX rows
 * are filtered: access rules that hide captures (block, exclude, embargo)
 * apply here. Today every memento of the index is listed.
 */
export function cdxListed(_app: FastifyInstance, _row: CdxRow): boolean {
  return true;
}

/**
 * The parameters are checked before anything is sent (a bad one is a 400
 * with its reason, for HEAD too); then `text/plain` (or NDJSON), streamed
 * (chunked). Every answer, errors included, is open to any origin.
 */
async function cdx(app: FastifyInstance, req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  // Open to scripts of any origin, the 400s too (so that a page can read why).
  reply.header('access-control-allow-origin', '*');
  const target = req.raw.url ?? '';
  const q = parseCdxQuery(new URLSearchParams(target.includes('?') ? target.slice(target.indexOf('?') + 1) : ''), app.config.maxUrlLength);
  reply.type(q.output === 'json' ? NDJSON : TEXT);
  if (req.method === 'HEAD') return reply.send();
  return reply.send(Readable.from(cdxBody(cdxRows(app.store.index, q), q, (row) => cdxListed(app, row))));
}
