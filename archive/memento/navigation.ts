/**
 * Memento addresses and navigation links (RFC 7089 §2.2; the URL space is
 * in docs/url-space.md): the builders of every URI-G, URI-M and URI-T this
 * archive names, the choice of the memento for an instant, and the
 * first/prev/next/last links around it.
 */
import { formatHttpDate, toTimestamp14 } from '../../shared/http-date.js';
import type { Link } from '../../shared/link.js';
import type { MementoRef, MementoRow, Neighbourhood } from '../store/index-db.js';
import { FORM_MODIFIERS, type MementoForm } from './prefer.js';

/** Builders of the archive's URIs, all absolute under `base` (no trailing slash). */
export const uris = {
  /** URI-M of a form (prefer.ts): the archival replay, `ol_` original links, `id_` raw. */
  memento: (base: string, archive: string, row: Pick<MementoRow, 'datetime' | 'uri_r'>, form: MementoForm = 'replay') =>
    `${base}/${archive}/memento/${toTimestamp14(row.datetime)}${FORM_MODIFIERS[form]}/${row.uri_r}`,
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
};

/** The memento chosen for an instant, with its neighbours for Link (id, datetime, URI-R of each). */
export interface Selection {
  memento: MementoRef;
  first: MementoRef;
  last: MementoRef;
  prev?: MementoRef;
  next?: MementoRef;
}

/**
 * Picks the memento closest in time to `t` (epoch s) from a neighbourhood:
 * before the first → the first, after the last → the last; a tie goes to
 * the earlier one (the state the resource was in at `t`). RFC 7089 §4.1.1
 * leaves the choice to the server; this is the Wayback/pywb rule.
 */
export function select(n: Neighbourhood, t: number): Selection {
  const [before, before2] = n.atOrBefore;
  const [after, after2] = n.after;
  const useAfter = !before || (after !== undefined && after.datetime - t < t - before.datetime);
  if (useAfter) return { memento: after!, first: n.first, last: n.last, prev: before, next: after2 };
  return { memento: before, first: n.first, last: n.last, prev: before2, next: after };
}

/** How many navigation links {@link mementoLinks} gives, most first. */
export type LinkDetail = 'all' | 'ends' | 'chosen';
export const LINK_DETAILS: readonly LinkDetail[] = ['all', 'ends', 'chosen'];

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
  const entries: [string, MementoRef | undefined][] = [
    ['first', detail === 'chosen' ? undefined : s.first],
    ['prev', detail === 'all' ? s.prev : undefined],
    ['memento', s.memento],
    ['next', detail === 'all' ? s.next : undefined],
    ['last', detail === 'chosen' ? undefined : s.last],
  ];
  const byId = new Map<number, { row: MementoRef; rels: string[] }>();
  for (const [rel, row] of entries) {
    if (!row) continue;
    const e = byId.get(row.id) ?? { row, rels: [] };
    e.rels.push(rel);
    byId.set(row.id, e);
  }
  const order = ['first', 'prev', 'next', 'last'];
  return [...byId.values()]
    .sort((a, b) => a.row.datetime - b.row.datetime)
    .map(({ row, rels }) => ({
      uri: uris.memento(base, archive, row, form),
      rel: [...rels.filter((r) => r !== 'memento').sort((a, b) => order.indexOf(a) - order.indexOf(b)), 'memento'].join(' '),
      datetime: formatHttpDate(row.datetime),
    }));
}

/** Texts kept with the neighbourhood they were made from (see {@link keptWith}). */
const kept = new WeakMap<Neighbourhood, Map<string, string>>();

/** Most texts kept per neighbourhood (the index cache counts two per memento reference). */
const KEPT_PER_NEIGHBOURHOOD = 2;

/**
 * A text made from a neighbourhood (a Link header value), kept with `n`
 * under `key` for the next request that asks with the same key: `make()`
 * the first time, the kept text after. `key` must name everything besides
 * `n` that the text depends on (the memento chosen, form, base, URI-R,
 * budget). Only with a neighbourhood the index's read cache keeps, which it
 * shares and has frozen (archive/store/index-cache.ts): a text kept with
 * one is right as long as it lives, and goes when the cache drops it. With
 * any other (or none) nothing is kept.
 */
export function keptWith(n: Neighbourhood | undefined, key: string, make: () => string): string {
  if (!n || !Object.isFrozen(n)) return make();
  let texts = kept.get(n);
  const hit = texts?.get(key);
  if (hit !== undefined) return hit;
  const text = make();
  if (!texts) kept.set(n, (texts = new Map()));
  if (texts.size < KEPT_PER_NEIGHBOURHOOD) texts.set(key, text);
  return text;
}
