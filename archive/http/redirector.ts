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
import { parseHttpDate, toEpochSeconds } from '#shared/http-date.js';
import { formatLink, type Link } from '#shared/link.js';
import { FIXED_HEAD_BYTES, HEAD_BUDGET, headerBytes, linkWithin } from '../memento/head-budget.js';
import { chooseArchive, type Holdings, localChoice } from '../memento/choice.js';
import { addRemoteHoldings, localHoldings } from '../memento/holdings.js';
import { type KnownMemento, LINK_DETAILS, linksAcross, uris } from '../memento/navigation.js';
import { instant, select } from '../read/nearest.js';
import { probeTimegate, timemapSpan } from '../memento/remote.js';
import { indexJsonTimemap, indexTimemapEntries, indexTimemapHead, LINK_FORMAT, linkFormat, timemapMementoLinks } from '../memento/timemap.js';
import { type ArchiveSpan, isLocal } from '../spans.js';
import type { MementoRef } from '../read/rows.js';
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
 * memento links across archives (the memento the chosen TimeGate will
 * choose, its prev/next, and first/last over every archive known to hold
 * the URI-R: clients such as py-memento-client read navigation from the
 * first TimeGate of a redirect chain). 404 when no archive has the URI-R.
 */
async function redirector(app: FastifyInstance, req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { config } = app;
  const { uriR, urlkey, base } = req;
  const t = acceptDatetime(req);
  const holdings = await localHoldings(app.visible, config.archives, urlkey);
  let target = localChoice(config.archives, holdings, t);
  if (!target) {
    const ad = t === undefined ? undefined : String(req.headers['accept-datetime']);
    await addRemoteHoldings(holdings, config.archives, (a) => probeTimegate(a.timegate! + uriR, ad));
    target = chooseArchive(config.archives, holdings, t);
  }
  if (!target) throw await app.visible.absent(urlkey, uriR, base, `no memento of ${uriR} in any archive`);
  // The memento links, as many as the head has room for (head-budget.ts), richest first.
  const levels = await linksAcrossArchives(app, base, urlkey, target, holdings, t);
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
 * The redirector's memento links at each level of detail (richest first):
 * the memento the chosen archive's TimeGate chooses for `t`, its prev and
 * next, and the first and last memento over every archive whose mementos
 * are known here: each local archive that has the URI-R (from the index:
 * its first and last), and each remote archive asked for this request
 * (the links of its TimeGate's answer). A remote archive is not asked for
 * its links alone. Local mementos the access rules hide are left out. When the chosen remote TimeGate's choice is not among
 * its links, its links are passed on as they came.
 */
async function linksAcrossArchives(
  app: FastifyInstance,
  base: string,
  urlkey: string,
  target: ArchiveSpan,
  holdings: Holdings,
  t: number | undefined,
): Promise<Link[][]> {
  const at = t ?? Number.MAX_SAFE_INTEGER;
  const known: KnownMemento[] = [];
  let chosen: KnownMemento | undefined;
  const local = app.config.archives.filter((a) => isLocal(a) && holdings.get(a.id)?.state === 'yes');
  const hoods = await Promise.all(local.map((a) => app.visible.neighbourhood(a.id, urlkey, at)));
  for (const [i, a] of local.entries()) {
    const n = hoods[i];
    if (!n) continue;
    const known1 = (row: MementoRef): KnownMemento => ({ uri: uris.memento(base, a.id, row), datetime: row.datetime });
    if (a.id !== target.id) known.push(known1(n.first), known1(n.last));
    else {
      const s = select(n, instant(at));
      chosen = known1(s.memento);
      for (const row of [s.first, s.prev, s.next, s.last]) if (row) known.push(known1(row));
    }
  }
  for (const a of app.config.archives.filter((x) => !isLocal(x))) {
    const h = holdings.get(a.id);
    for (const l of h?.links ?? []) {
      const date = l.datetime === undefined ? undefined : parseHttpDate(l.datetime);
      if (!date) continue;
      const m = { uri: l.uri, datetime: toEpochSeconds(date) };
      known.push(m);
      if (a.id === target.id && l.uri === h?.location) chosen = m;
    }
  }
  if (!chosen) return isLocal(target) ? [] : [holdings.get(target.id)?.links ?? []];
  const c = chosen;
  return LINK_DETAILS.map((d) => linksAcross(c, known, d));
}

/**
 * `GET/HEAD /tg/timemap/<URI-R>`: the index TimeMap (link-format): its
 * head (indexTimemapHead), then the local mementos oldest first with one
 * `first` and one `last` over all of them. Remote TimeMaps are read only
 * as far as their `self` link. 404 when no archive has the URI-R. A
 * TimeMap URI (URI-T, RFC 7089 §5) answers its TimeMap to every client,
 * a browser's `Accept: text/html` included (Memento validators ask that
 * way); the calendar for people is linked from it in the `Link` header
 * (`rel="alternate"; type="text/html"`).
 */
async function indexTimemap(app: FastifyInstance, req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { config } = app;
  const { uriR, urlkey, base } = req;
  const holdings = await everyHolding(app, uriR, urlkey);
  const timemapOf = (a: ArchiveSpan) => (a.timemap ? a.timemap + uriR : uris.timemap(base, a.id, uriR));
  const head = indexTimemapHead(base, uriR, config.archives, holdings, timemapOf);
  if (!head.some((l) => l.rel === 'timemap')) throw await app.visible.absent(urlkey, uriR, base, `no memento of ${uriR} in any archive`);
  reply.header('link', formatLink({ uri: uris.calendar(base, uriR), rel: 'alternate', type: 'text/html' }));
  reply.type(LINK_FORMAT);
  if (req.method === 'HEAD') return reply.send();
  const localSpans = config.archives.filter((a) => isLocal(a) && holdings.has(a.id));
  const span = { first: holdings.get(localSpans[0]?.id)?.first ?? 0, last: holdings.get(localSpans[localSpans.length - 1]?.id)?.last ?? 0 };
  const all = async function* () {
    for (const a of localSpans) {
      for await (const page of app.visible.timemapPages(a.id, urlkey)) yield timemapMementoLinks(page, base, a.id, span);
    }
  };
  return reply.send(Readable.from(linkFormat(head, all())));
}

/** What each archive holds of the URI-R: local ones from the index (what the access rules show), remote ones from the `self` link of their TimeMap. */
async function everyHolding(app: FastifyInstance, uriR: string, urlkey: string): Promise<Holdings> {
  const holdings = await localHoldings(app.visible, app.config.archives, urlkey);
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
  const { config } = app;
  const { uriR, urlkey, base } = req;
  const holdings = await everyHolding(app, uriR, urlkey);
  const index = indexTimemapEntries(
    config.archives,
    holdings,
    (a) =>
      isLocal(a) ? uris.timemapJson(base, a.id, uriR) : /\/timemap\/link\/$/.test(a.timemap!) ? a.timemap!.replace(/link\/$/, 'json/') + uriR : undefined,
    (a) => (a.timemap ? a.timemap + uriR : uris.timemap(base, a.id, uriR)),
  );
  if (!index.length) throw await app.visible.absent(urlkey, uriR, base, `no memento of ${uriR} in any archive`);
  reply.type('application/json');
  if (req.method === 'HEAD') return reply.send();
  const localSpans = config.archives.filter((a) => isLocal(a) && holdings.has(a.id));
  const pages = async function* () {
    for (const a of localSpans) for await (const rows of app.visible.timemapPages(a.id, urlkey)) yield { archiveId: a.id, rows };
  };
  return reply.send(Readable.from(indexJsonTimemap(base, uriR, index, pages())));
}
