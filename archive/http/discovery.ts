/**
 * Discovery (RFC 6415 host-meta): `/.well-known/host-meta` as XRD and
 * `/.well-known/host-meta.json` as JRD, each with Link templates for the
 * TimeGate redirector and the index TimeMap.
 */
import type { FastifyInstance } from 'fastify';
import { LINK_FORMAT } from '../memento/timemap.js';
import { readRoute } from './context.js';

function xmlAttr(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
}

/** The host-meta plugin. */
export async function discoveryRoutes(app: FastifyInstance): Promise<void> {
  readRoute(
    app,
    '/.well-known/host-meta',
    async (req, reply) => {
      const base = xmlAttr(req.base);
      const xml = `<?xml version="1.0" encoding="UTF-8"?>
<XRD xmlns="http://docs.oasis-open.org/ns/xri/xrd-1.0">
  <Link rel="timegate" template="${base}/tg/{uri}"/>
  <Link rel="timemap" type="${LINK_FORMAT}" template="${base}/tg/timemap/{uri}"/>
</XRD>
`;
      return reply.type('application/xrd+xml; charset=UTF-8').send(xml);
    },
    { resource: 'host-meta' },
  );
  readRoute(
    app,
    '/.well-known/host-meta.json',
    async (req, reply) => {
      const base = req.base;
      const links = [
        { rel: 'timegate', template: `${base}/tg/{uri}` },
        { rel: 'timemap', type: LINK_FORMAT, template: `${base}/tg/timemap/{uri}` },
      ];
      return reply.type('application/jrd+json; charset=utf-8').send(JSON.stringify({ links }, null, 2) + '\n');
    },
    { resource: 'host-meta' },
  );
}
