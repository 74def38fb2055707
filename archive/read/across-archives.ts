/**
 * The reads over every archive, local and remote, as plain answers
 * (answer.ts): the TimeGate redirector (`/tg/<URI-R>`, a 302 to the chosen
 * archive's TimeGate, RFC 7089 §4.2 pattern 2.1 in front of several
 * archives) and the index TimeMap (`/tg/timemap/<URI-R>`, RFC 7089 §5:
 * every archive's TimeMap, then the local mementos; as JSON at
 * `/tg/timemap/json/<URI-R>`). The choice of archive is
 * archive/memento/choice.ts; remote archives are asked only when it
 * depends on them. The reader (reader.ts) answers with these.
 */
import { parseHttpDate, toEpochSeconds } from '#shared/http-date.js';
import { formatLink, type Link } from '#shared/link.js';
import { chooseArchive, type Holdings, localChoice } from '../memento/choice.js';
import { FIXED_HEAD_BYTES, HEAD_BUDGET, headerBytes, linkWithin } from '../memento/head-budget.js';
import { addRemoteHoldings, localHoldings } from '../memento/holdings.js';
import { type KnownMemento, LINK_DETAILS, linksAcross, uris } from '../memento/navigation.js';
import { probeTimegate, timemapSpan } from '../memento/remote.js';
import { indexJsonTimemap, indexTimemapEntries, indexTimemapHead, LINK_FORMAT, linkFormat, timemapMementoLinks } from '../memento/timemap.js';
import { type ArchiveSpan, isLocal } from '../spans.js';
import { type Answer, lazy, redirectAnswer } from './answer.js';
import { instant, select } from './nearest.js';
import type { MementoRef } from './rows.js';
import type { VisibleIndex } from './visible-index.js';

/** A read over every archive: the URI-R (normalised), its urlkey, the public base URL. */
export interface AcrossRead {
  uriR: string;
  urlkey: string;
  base: string;
}

/** What these reads read with: the visible index, and the configured archives (local and remote). */
export interface AcrossParts {
  visible: VisibleIndex;
  archives: readonly ArchiveSpan[];
}

/**
 * The redirector: 302 to the TimeGate of the chosen archive, with `Vary:
 * accept-datetime` and `Link`: original, the index TimeMap, and the
 * memento links across archives (the memento the chosen TimeGate will
 * choose, its prev/next, and first/last over every archive known to hold
 * the URI-R: clients such as py-memento-client read navigation from the
 * first TimeGate of a redirect chain), as many as the head has room for.
 *
 * @param q.acceptDatetime Accept-Datetime as epoch seconds, and as sent (passed on to a remote TimeGate that is asked)
 * @throws HttpError 404 when no archive has the URI-R; 451 when every local memento is hidden and some are blocked
 */
export async function redirector(parts: AcrossParts, q: AcrossRead & { acceptDatetime?: { seconds: number; header: string } }): Promise<Answer> {
  const { archives, visible } = parts;
  const { uriR, urlkey, base } = q;
  const t = q.acceptDatetime?.seconds;
  const holdings = await localHoldings(visible, archives, urlkey);
  let target = localChoice(archives, holdings, t);
  if (!target) {
    await addRemoteHoldings(holdings, archives, (a) => probeTimegate(a.timegate! + uriR, q.acceptDatetime?.header));
    target = chooseArchive(archives, holdings, t);
  }
  if (!target) throw await visible.absent(urlkey, uriR, base, `no memento of ${uriR} in any archive`);
  // The memento links, as many as the head has room for (head-budget.ts), richest first.
  const levels = await linksAcrossArchives(parts, base, urlkey, target, holdings, t);
  const location = isLocal(target) ? uris.timegate(base, target.id, uriR) : target.timegate + uriR;
  const vary = 'accept-datetime';
  const required: Link[] = [
    { uri: uriR, rel: 'original' },
    { uri: uris.indexTimemap(base, uriR), rel: 'timemap index', type: LINK_FORMAT },
  ];
  const used = FIXED_HEAD_BYTES + headerBytes('location', location) + headerBytes('vary', vary);
  return redirectAnswer(302, location, { vary, link: linkWithin(HEAD_BUDGET - used, required, [...levels, []]) });
}

/**
 * The redirector's memento links at each level of detail (richest first):
 * the memento the chosen archive's TimeGate chooses for `t`, its prev and
 * next, and the first and last memento over every archive whose mementos
 * are known here: each local archive that has the URI-R (from the index:
 * its first and last), and each remote archive asked for this request
 * (the links of its TimeGate's answer). A remote archive is not asked for
 * its links alone. Local mementos the access rules hide are left out.
 * When the chosen remote TimeGate's choice is not among its links, its
 * links are passed on as they came.
 */
async function linksAcrossArchives(
  parts: AcrossParts,
  base: string,
  urlkey: string,
  target: ArchiveSpan,
  holdings: Holdings,
  t: number | undefined,
): Promise<Link[][]> {
  const at = t ?? Number.MAX_SAFE_INTEGER;
  const known: KnownMemento[] = [];
  let chosen: KnownMemento | undefined;
  const local = parts.archives.filter((a) => isLocal(a) && holdings.get(a.id)?.state === 'yes');
  const hoods = await Promise.all(local.map((a) => parts.visible.neighbourhood(a.id, urlkey, at)));
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
  for (const a of parts.archives.filter((x) => !isLocal(x))) {
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
 * The index TimeMap in link-format: its head (indexTimemapHead), then the
 * local mementos oldest first with one `first` and one `last` over all of
 * them, streamed. Remote TimeMaps are read only as far as their `self`
 * link. A TimeMap URI (URI-T) answers its TimeMap to every client, a
 * browser's `Accept: text/html` included (Memento validators ask that
 * way); the calendar for people is linked from it in the `Link` header
 * (`rel="alternate"; type="text/html"`).
 *
 * @throws HttpError 404 when no archive has the URI-R; 451 as {@link redirector}
 */
export async function indexTimemap(parts: AcrossParts, q: AcrossRead): Promise<Answer> {
  const { archives, visible } = parts;
  const { uriR, urlkey, base } = q;
  const holdings = await everyHolding(parts, uriR, urlkey);
  const timemapOf = (a: ArchiveSpan) => (a.timemap ? a.timemap + uriR : uris.timemap(base, a.id, uriR));
  const head = indexTimemapHead(base, uriR, archives, holdings, timemapOf);
  if (!head.some((l) => l.rel === 'timemap')) throw await visible.absent(urlkey, uriR, base, `no memento of ${uriR} in any archive`);
  const localSpans = archives.filter((a) => isLocal(a) && holdings.has(a.id));
  const span = { first: holdings.get(localSpans[0]?.id)?.first ?? 0, last: holdings.get(localSpans[localSpans.length - 1]?.id)?.last ?? 0 };
  const all = async function* () {
    for (const a of localSpans) {
      for await (const page of visible.timemapPages(a.id, urlkey)) yield timemapMementoLinks(page, base, a.id, span);
    }
  };
  const headers = { link: formatLink({ uri: uris.calendar(base, uriR), rel: 'alternate', type: 'text/html' }), 'content-type': LINK_FORMAT };
  return { status: 200, headers, body: lazy(() => linkFormat(head, all())) };
}

/**
 * The index TimeMap as JSON (indexJsonTimemap): every archive's TimeMap in
 * `timemap_index` (a local one's JSON TimeMap; a remote one's when its
 * TimeMap address has this daemon's shape, `…/timemap/link/`, else its
 * link-format TimeMap with `type`), then the local mementos oldest first.
 *
 * @throws HttpError 404 when no archive has the URI-R; 451 as {@link redirector}
 */
export async function indexJsonTimemapOf(parts: AcrossParts, q: AcrossRead): Promise<Answer> {
  const { archives, visible } = parts;
  const { uriR, urlkey, base } = q;
  const holdings = await everyHolding(parts, uriR, urlkey);
  const index = indexTimemapEntries(
    archives,
    holdings,
    (a) =>
      isLocal(a) ? uris.timemapJson(base, a.id, uriR) : /\/timemap\/link\/$/.test(a.timemap!) ? a.timemap!.replace(/link\/$/, 'json/') + uriR : undefined,
    (a) => (a.timemap ? a.timemap + uriR : uris.timemap(base, a.id, uriR)),
  );
  if (!index.length) throw await visible.absent(urlkey, uriR, base, `no memento of ${uriR} in any archive`);
  const localSpans = archives.filter((a) => isLocal(a) && holdings.has(a.id));
  const pages = async function* () {
    for (const a of localSpans) for await (const rows of visible.timemapPages(a.id, urlkey)) yield { archiveId: a.id, rows };
  };
  return { status: 200, headers: { 'content-type': 'application/json' }, body: lazy(() => indexJsonTimemap(base, uriR, index, pages())) };
}

/** What each archive holds of the URI-R: local ones from the index (what the access rules show), remote ones from the `self` link of their TimeMap. */
async function everyHolding(parts: AcrossParts, uriR: string, urlkey: string): Promise<Holdings> {
  const holdings = await localHoldings(parts.visible, parts.archives, urlkey);
  await addRemoteHoldings(holdings, parts.archives, (a) => timemapSpan(a.timemap! + uriR));
  return holdings;
}
