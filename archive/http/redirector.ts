/**
 * The TimeGate redirector over every archive (`/tg/<URI-R>`, 302 to the
 * chosen archive's TimeGate, RFC 7089 §4.2 pattern 2.1 in front of several
 * archives) and the index TimeMap (`/tg/timemap/<URI-R>`, RFC 7089 §5:
 * every archive's TimeMap, then the local mementos). The choice itself is
 * archive/memento/choice.ts; remote archives are asked only when it
 * depends on them.
 */
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { formatLinkHeader, type Link } from '../../shared/link.js';
import { hiddenError, visibleNeighbourhood } from '../access.js';
import { FIXED_HEAD_BYTES, HEAD_BUDGET, headerBytes, type LinkLevel, linkWithin } from '../memento/head-budget.js';
import { chooseArchive, localChoice } from '../memento/choice.js';
import { addRemoteHoldings, localHoldings } from '../memento/holdings.js';
import { keptWith, LINK_DETAILS, mementoLinks, select, uris } from '../memento/navigation.js';
import { probeTimegate, timemapSpan } from '../memento/remote.js';
import { indexTimemapHead, LINK_FORMAT, linkFormat, timemapMementoLinks } from '../memento/timemap.js';
import { type ArchiveSpan, isLocal } from '../spans.js';
import type { Neighbourhood } from '../store/index-db.js';
import { acceptDatetime, readRoute, redirect, wantsPage } from './context.js';

/** The redirector and index TimeMap plugin. */
export async function redirectorRoutes(app: FastifyInstance): Promise<void> {
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
  const policy = app.access.policy(urlkey);
  const holdings = await localHoldings(store.index, config.archives, urlkey, policy);
  let target = localChoice(config.archives, holdings, t);
  if (!target) {
    const ad = t === undefined ? undefined : String(req.headers['accept-datetime']);
    await addRemoteHoldings(holdings, config.archives, (a) => probeTimegate(a.timegate! + uriR, ad));
    target = chooseArchive(config.archives, holdings, t);
  }
  if (!target) throw await hiddenError(store.index, policy, uriR, base, `no memento of ${uriR} in any archive`);
  // The memento links, as many as the head has room for (head-budget.ts), richest first.
  let levels: LinkLevel[] = [holdings.get(target.id)?.links ?? []];
  let n: Neighbourhood | undefined;
  let chosen = '';
  if (isLocal(target)) {
    const at = t ?? Number.MAX_SAFE_INTEGER;
    n = await visibleNeighbourhood(store.index, policy, target.id, at);
    const s = n && select(n, at);
    chosen = String(s?.memento.id);
    levels = s ? LINK_DETAILS.map((d) => () => formatLinkHeader(mementoLinks(base, target.id, s, 'replay', d))) : [];
  }
  const location = isLocal(target) ? uris.timegate(base, target.id, uriR) : target.timegate + uriR;
  const vary = 'accept-datetime';
  reply.header('vary', vary);
  const required: Link[] = [
    { uri: uriR, rel: 'original' },
    { uri: uris.indexTimemap(base, uriR), rel: 'timemap index', type: LINK_FORMAT },
  ];
  const used = FIXED_HEAD_BYTES + headerBytes('location', location) + headerBytes('vary', vary);
  // Kept with the neighbourhood for the next request that chooses the same memento (navigation.ts keptWith).
  reply.header(
    'link',
    keptWith(n, `redirector ${chosen} ${target.id} ${used} ${base} ${uriR}`, () => linkWithin(HEAD_BUDGET - used, required, [...levels, []])),
  );
  return redirect(reply, 302, location);
}

/**
 * `GET/HEAD /tg/timemap/<URI-R>`: the index TimeMap (link-format): its
 * head (indexTimemapHead), then the local mementos oldest first with one
 * `first` and one `last` over all of them. Remote TimeMaps are read only
 * as far as their `self` link. 404 when no archive has the URI-R. To a
 * browser (`Accept: text/html`), 302 to the calendar of the URI-R.
 */
async function indexTimemap(app: FastifyInstance, req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { config, store } = app;
  const { uriR, urlkey, base } = req;
  const policy = app.access.policy(urlkey);
  const holdings = await localHoldings(store.index, config.archives, urlkey, policy);
  await addRemoteHoldings(holdings, config.archives, (a) => timemapSpan(a.timemap! + uriR));
  const timemapOf = (a: ArchiveSpan) => (a.timemap ? a.timemap + uriR : uris.timemap(base, a.id, uriR));
  const head = indexTimemapHead(base, uriR, config.archives, holdings, timemapOf);
  if (!head.some((l) => l.rel === 'timemap')) throw await hiddenError(store.index, policy, uriR, base, `no memento of ${uriR} in any archive`);
  reply.header('Vary', 'Accept');
  if (wantsPage(req)) return redirect(reply, 302, uris.calendar(base, uriR));
  reply.type(LINK_FORMAT);
  if (req.method === 'HEAD') return reply.send();
  const localSpans = config.archives.filter((a) => isLocal(a) && holdings.has(a.id));
  const span = { first: holdings.get(localSpans[0]?.id)?.first ?? 0, last: holdings.get(localSpans[localSpans.length - 1]?.id)?.last ?? 0 };
  const all = async function* () {
    for (const a of localSpans) yield* timemapMementoLinks(policy.filter(store.index.mementos(a.id, urlkey)), base, a.id, span);
  };
  return reply.send(Readable.from(linkFormat(head, all())));
}
