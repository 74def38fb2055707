/**
 * The TimeGate redirector over every archive (`/tg/<URI-R>`, 302 to the
 * chosen archive's TimeGate, RFC 7089 §4.2 pattern 2.1 in front of several
 * archives) and the index TimeMap (`/tg/timemap/<URI-R>`, RFC 7089 §5:
 * every archive's TimeMap, then the local mementos; the same as JSON at
 * `/tg/timemap/json/<URI-R>`). The choice itself is
 * archive/memento/choice.ts; remote archives are asked only when it
 * depends on them.
 */
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { httpError } from '../../shared/http-error.js';
import type { Link } from '../../shared/link.js';
import { FIXED_HEAD_BYTES, HEAD_BUDGET, headerBytes, linkWithin } from '../memento/head-budget.js';
import { chooseArchive, type Holdings, localChoice } from '../memento/choice.js';
import { addRemoteHoldings, localHoldings } from '../memento/holdings.js';
import { LINK_DETAILS, mementoLinks, select, uris } from '../memento/navigation.js';
import { probeTimegate, timemapSpan } from '../memento/remote.js';
import { indexJsonTimemap, indexTimemapEntries, indexTimemapHead, LINK_FORMAT, linkFormat, timemapMementoLinks } from '../memento/timemap.js';
import { type ArchiveSpan, isLocal } from '../spans.js';
import { acceptDatetime, readRoute, redirect } from './context.js';

/** The redirector and index TimeMap plugin. */
export async function redirectorRoutes(app: FastifyInstance): Promise<void> {
  readRoute(app, '/tg/timemap/json/*', (req, reply) => indexJsonTimemapRoute(app, req, reply), { uriR: true, resource: 'index-timemap' });
  readRoute(app, '/tg/timemap/*', (req, reply) => indexTimemap(app, req, reply), { uriR: true, resource: 'index-timemap' });
  readRoute(app, '/tg/*', (req, reply) => redirector(app, req, reply), { uriR: true, resource: 'redirector' });
}

/**
 * `GET/HEAD /tg/<URI-R>`: 302 to the TimeGate of the chosen archive, with
 * `Vary: accept-datetime` and `Link`: original, the index TimeMap, and the
 * memento links the chosen TimeGate sends for the same Accept-Datetime
 * (clients such as py-memento-client read navigation from the first
 * TimeGate of a redirect chain). 404 when no archive has the URI-R.
 */
async function redirector(app: FastifyInstance, req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { config, store } = app;
  const { uriR, urlkey, base } = req;
  const t = acceptDatetime(req);
  const holdings = await localHoldings(store.index, config.archives, urlkey);
  let target = localChoice(config.archives, holdings, t);
  if (!target) {
    const ad = t === undefined ? undefined : String(req.headers['accept-datetime']);
    await addRemoteHoldings(holdings, config.archives, (a) => probeTimegate(a.timegate! + uriR, ad));
    target = chooseArchive(config.archives, holdings, t);
  }
  if (!target) throw httpError(404, `no memento of ${uriR} in any archive`);
  // The memento links, as many as the head has room for (head-budget.ts), richest first.
  let levels: Link[][] = [holdings.get(target.id)?.links ?? []];
  if (isLocal(target)) {
    const at = t ?? Number.MAX_SAFE_INTEGER;
    const n = await store.index.neighbourhood(target.id, urlkey, at);
    levels = n ? LINK_DETAILS.map((d) => mementoLinks(base, target.id, select(n, at), 'replay', d)) : [];
  }
  const location = isLocal(target) ? uris.timegate(base, target.id, uriR) : target.timegate + uriR;
  const vary = 'accept-datetime';
  reply.header('vary', vary);
  const required: Link[] = [
    { uri: uriR, rel: 'original' },
    { uri: uris.indexTimemap(base, uriR), rel: 'timemap index', type: LINK_FORMAT },
  ];
  const used = FIXED_HEAD_BYTES + headerBytes('location', location) + headerBytes('vary', vary);
  reply.header('link', linkWithin(HEAD_BUDGET - used, required, [...levels, []]));
  return redirect(reply, 302, location);
}

/**
 * `GET/HEAD /tg/timemap/<URI-R>`: the index TimeMap (link-format): its
 * head (indexTimemapHead), then the local mementos oldest first with one
 * `first` and one `last` over all of them. Remote TimeMaps are read only
 * as far as their `self` link. 404 when no archive has the URI-R.
 */
async function indexTimemap(app: FastifyInstance, req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { config, store } = app;
  const { uriR, urlkey, base } = req;
  const holdings = await everyHolding(app, uriR, urlkey);
  const timemapOf = (a: ArchiveSpan) => (a.timemap ? a.timemap + uriR : uris.timemap(base, a.id, uriR));
  const head = indexTimemapHead(base, uriR, config.archives, holdings, timemapOf);
  if (!head.some((l) => l.rel === 'timemap')) throw httpError(404, `no memento of ${uriR} in any archive`);
  reply.type(LINK_FORMAT);
  if (req.method === 'HEAD') return reply.send();
  const localSpans = config.archives.filter((a) => isLocal(a) && holdings.has(a.id));
  const span = { first: holdings.get(localSpans[0]?.id)?.first ?? 0, last: holdings.get(localSpans[localSpans.length - 1]?.id)?.last ?? 0 };
  const all = async function* () {
    for (const a of localSpans) yield* timemapMementoLinks(store.index.mementos(a.id, urlkey), base, a.id, span);
  };
  return reply.send(Readable.from(linkFormat(head, all())));
}

/** What each archive holds of the URI-R: local ones from the index, remote ones from the `self` link of their TimeMap. */
async function everyHolding(app: FastifyInstance, uriR: string, urlkey: string): Promise<Holdings> {
  const holdings = await localHoldings(app.store.index, app.config.archives, urlkey);
  await addRemoteHoldings(holdings, app.config.archives, (a) => timemapSpan(a.timemap! + uriR));
  return holdings;
}

/**
 * `GET/HEAD /tg/timemap/json/<URI-R>`: the index TimeMap as JSON
 * (indexJsonTimemap): every archive's TimeMap in `timemap_index` (a local
 * one's JSON TimeMap; a remote one's when its TimeMap address has this
 * daemon's shape, `…/timemap/link/`, else its link-format TimeMap with
 * `type`), then the local mementos oldest first. 404 when no archive has
 * the URI-R.
 */
async function indexJsonTimemapRoute(app: FastifyInstance, req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { config, store } = app;
  const { uriR, urlkey, base } = req;
  const holdings = await everyHolding(app, uriR, urlkey);
  const index = indexTimemapEntries(
    config.archives,
    holdings,
    (a) =>
      isLocal(a) ? uris.timemapJson(base, a.id, uriR) : /\/timemap\/link\/$/.test(a.timemap!) ? a.timemap!.replace(/link\/$/, 'json/') + uriR : undefined,
    (a) => (a.timemap ? a.timemap + uriR : uris.timemap(base, a.id, uriR)),
  );
  if (!index.length) throw httpError(404, `no memento of ${uriR} in any archive`);
  reply.type('application/json');
  if (req.method === 'HEAD') return reply.send();
  const localSpans = config.archives.filter((a) => isLocal(a) && holdings.has(a.id));
  const rows = async function* () {
    for (const a of localSpans) yield* store.index.mementos(a.id, urlkey);
  };
  return reply.send(Readable.from(indexJsonTimemap(base, uriR, index, rows())));
}
