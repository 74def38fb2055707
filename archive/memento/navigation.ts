/**
 * Memento addresses and navigation links (RFC 7089 §2.2; the URL space is
 * in docs/url-space.md): the builders of every URI-G, URI-M and URI-T this
 * archive names, and the first/prev/next/last links around the memento
 * chosen for an instant (the choice: archive/read/nearest.ts).
 */
import { formatHttpDate, toTimestamp14 } from '#shared/http-date.js';
import type { Link } from '#shared/link.js';
import type { Selection } from '../read/nearest.js';
import type { MementoRef, MementoRow } from '../store/index/memento-row.js';
import { FORM_MODIFIERS, type MementoForm } from './prefer.js';
import { buildUriM } from '#shared/uri-m.js';

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
