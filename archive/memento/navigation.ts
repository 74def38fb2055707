/**
 * Memento addresses and navigation links (RFC 7089 §2.2; the URL space is
 * in docs/url-space.md): the builders of every URI-G, URI-M and URI-T this
 * archive names, the choice of the memento for an instant, and the
 * first/prev/next/last links around it.
 */
import { formatHttpDate, toTimestamp14 } from '#shared/http-date.js';
import type { Link } from '#shared/link.js';
import { timestampBound } from '../cdx/query.js';
import type { MementoRef, MementoRow, Neighbourhood } from '../store/index-db.js';
import { FORM_MODIFIERS, type MementoForm } from './prefer.js';
import { buildUriM } from './uri-m.js';

/** Builders of the archive's URIs, all absolute under `base` (no trailing slash). */
export const uris = {
  /** URI-M of a form (prefer.ts) at the memento's Memento-Datetime (uri-m.ts): the archival replay, `ol_` original links, `id_` raw. */
  memento: (base: string, archive: string, row: Pick<MementoRow, 'datetime' | 'uri_r'>, form: MementoForm = 'replay') =>
    buildUriM(base, { archive, timestamp: toTimestamp14(row.datetime), modifier: FORM_MODIFIERS[form], uriR: row.uri_r }),
  /** URI-G of one archive. */
  timegate: (base: string, archive: string, uriR: string) => `${base}/${archive}/timegate/${uriR}`,
  /** URI-T, link-format. */
  timemap: (base: string, archive: string, uriR: string) => `${base}/${archive}/timemap/link/${uriR}`,
  /** URI-T, JSON. */
  timemapJson: (base: string, archive: string, uriR: string) => `${base}/${archive}/timemap/json/${uriR}`,
  timebundle: (base: string, archive: string, uriR: string) => `${base}/${archive}/timebundle/${uriR}`,
  /** The TimeGate redirector. */
  redirector: (base: string, uriR: string) => `${base}/tg/${uriR}`,
  /** The index TimeMap over all archives. */
  indexTimemap: (base: string, uriR: string) => `${base}/tg/timemap/${uriR}`,
  /** The calendar of every capture, for people (`/web/` `*` `/<URI-R>`). */
  calendar: (base: string, uriR: string) => `${base}/web/*/${uriR}`,
  /** The index TimeMap as JSON. */
  indexTimemapJson: (base: string, uriR: string) => `${base}/tg/timemap/json/${uriR}`,
  /** A memento's receipt in the evidence log (C2SP tlog-proof). */
  receipt: (base: string, archive: string, row: Pick<MementoRow, 'datetime' | 'uri_r'>) =>
    `${base}/${archive}/receipt/${toTimestamp14(row.datetime)}/${row.uri_r}`,
};

/** The memento chosen for an instant, with its neighbours for Link (id, datetime, URI-R of each). */
export interface Selection {
  memento: MementoRef;
  first: MementoRef;
  last: MementoRef;
  prev?: MementoRef;
  next?: MementoRef;
}

/** The span of time an address's timestamp names: epoch seconds, both ends included (one instant for 14 digits). */
export interface Period {
  start: number;
  end: number;
}

/**
 * The period a Wayback-style timestamp names: 1–14 digits `YYYYMMDDhhmmss`
 * (UTC) read as a prefix, from the first to the last second whose
 * 14-digit timestamp begins with them (`2024` → 2024-01-01T00:00:00Z to
 * 2024-12-31T23:59:59Z, `202402` → February 2024). Digits beyond `now`
 * (compared as digits, before any check that they form a date:
 * `99999999999999`, `2099`, and `3`) name the instant `now`, so that
 * whatever the newest capture is, it is the nearest; `2` names 2000–2999,
 * whose last capture is the newest too (pywb's reading of both).
 *
 * @param now epoch seconds
 * @returns `undefined` when it is not 1–14 digits or no date begins with
 *   them (`202413`, `20250230`)
 */
export function timestampPeriod(ts: string, now = Date.now() / 1000): Period | undefined {
  if (!/^\d{1,14}$/.test(ts)) return undefined;
  if (ts > toTimestamp14(now).slice(0, ts.length)) return { start: Math.floor(now), end: Math.floor(now) };
  const start = timestampBound(ts, 'first');
  const end = timestampBound(ts, 'last');
  return start === undefined || end === undefined ? undefined : { start, end };
}

/**
 * Whether `a` is nearer to `period` than `b` (epoch s): the one at the
 * smaller distance from the period (none inside it); of two inside it the
 * later one (as pywb, which reads a period as its last second), of two
 * outside it at the same distance the earlier one.
 */
export function nearerToPeriod(a: number, b: number, period: Period): boolean {
  const d = (x: number) => (x < period.start ? period.start - x : x > period.end ? x - period.end : 0);
  if (d(a) !== d(b)) return d(a) < d(b);
  return d(a) === 0 ? a > b : a < b;
}

/**
 * Picks the memento closest in time to `t` (epoch s) from a neighbourhood
 * read at `t`: before the first → the first, after the last → the last; a
 * tie goes to the earlier one (the state the resource was in at `t`).
 * RFC 7089 §4.1.1 leaves the choice to the server; this is the
 * Wayback/pywb rule. With `from` < `t`, the period `[from, t]` is asked for
 * ({@link timestampPeriod}): its last memento, else the nearest to it
 * ({@link nearerToPeriod}).
 */
export function select(n: Neighbourhood, t: number, from = t): Selection {
  const [before, before2] = n.atOrBefore;
  const [after, after2] = n.after;
  const useAfter = !before || (after !== undefined && nearerToPeriod(after.datetime, before.datetime, { start: from, end: t }));
  if (useAfter) return { memento: after!, first: n.first, last: n.last, prev: before, next: after2 };
  return { memento: before, first: n.first, last: n.last, prev: before2, next: after };
}

/** How many navigation links {@link mementoLinks} gives, most first. */
export type LinkDetail = 'all' | 'ends' | 'chosen';
export const LINK_DETAILS: readonly LinkDetail[] = ['all', 'ends', 'chosen'];

/** A memento known by its URI-M and Memento-Datetime (epoch s), in this archive or in another one. */
export interface KnownMemento {
  uri: string;
  datetime: number;
}

/**
 * The memento links of a selection, one link per URI-M with all its
 * relations combined in the order first, prev, next, last, memento
 * (`rel="first last memento"` for a single capture, `rel="first prev
 * memento"`), each with its quoted IMF-fixdate `datetime` (RFC 7089 §2.2.4,
 * §4.2.1), oldest first.
 *
 * @param form the form whose URI-Ms the links name (the form asked for:
 *   an `id_` or `ol_` address, or Prefer at a TimeGate)
 * @param detail how many links: `all`; `ends` (first, last and the chosen
 *   memento, no prev/next); `chosen` (the chosen memento only). Fewer links
 *   keep the answer's head small for a long URI-R (head-budget.ts).
 */
export function mementoLinks(base: string, archive: string, s: Selection, form: MementoForm = 'replay', detail: LinkDetail = 'all'): Link[] {
  const known = (row: MementoRef | undefined): KnownMemento | undefined => row && { uri: uris.memento(base, archive, row, form), datetime: row.datetime };
  return navigationLinks({ memento: known(s.memento)!, first: known(s.first)!, last: known(s.last)!, prev: known(s.prev), next: known(s.next) }, detail);
}

/**
 * Memento links across archives (the redirector's, RFC 7089 §4.2 in front
 * of several TimeGates): `chosen`, and the first, prev, next and last
 * memento among `chosen` and `known` (mementos of the chosen archive and
 * of the others: their first and last at least). Exact when `known` holds
 * the chosen archive's neighbours of `chosen` and every archive's first
 * and last: time spans do not overlap, so a neighbour outside the chosen
 * archive is the last (or first) memento of another. Shaped as
 * {@link mementoLinks}.
 */
export function linksAcross(chosen: KnownMemento, known: readonly KnownMemento[], detail: LinkDetail = 'all'): Link[] {
  let first = chosen;
  let last = chosen;
  let prev: KnownMemento | undefined;
  let next: KnownMemento | undefined;
  for (const m of known) {
    if (m.datetime < first.datetime) first = m;
    if (m.datetime > last.datetime) last = m;
    if (m.datetime < chosen.datetime && (!prev || m.datetime > prev.datetime)) prev = m;
    if (m.datetime > chosen.datetime && (!next || m.datetime < next.datetime)) next = m;
  }
  return navigationLinks({ memento: chosen, first, last, prev, next }, detail);
}

/** The links of a navigation (see {@link mementoLinks}): one per URI-M, relations combined, oldest first. */
function navigationLinks(
  s: { memento: KnownMemento; first: KnownMemento; last: KnownMemento; prev?: KnownMemento; next?: KnownMemento },
  detail: LinkDetail,
): Link[] {
  const entries: [string, KnownMemento | undefined][] = [
    ['first', detail === 'chosen' ? undefined : s.first],
    ['prev', detail === 'all' ? s.prev : undefined],
    ['memento', s.memento],
    ['next', detail === 'all' ? s.next : undefined],
    ['last', detail === 'chosen' ? undefined : s.last],
  ];
  const byUri = new Map<string, { m: KnownMemento; rels: string[] }>();
  for (const [rel, m] of entries) {
    if (!m) continue;
    const e = byUri.get(m.uri) ?? { m, rels: [] };
    e.rels.push(rel);
    byUri.set(m.uri, e);
  }
  const order = ['first', 'prev', 'next', 'last'];
  return [...byUri.values()]
    .sort((a, b) => a.m.datetime - b.m.datetime)
    .map(({ m, rels }) => ({
      uri: m.uri,
      rel: [...rels.filter((r) => r !== 'memento').sort((a, b) => order.indexOf(a) - order.indexOf(b)), 'memento'].join(' '),
      datetime: formatHttpDate(m.datetime),
    }));
}
