/**
 * What the pages for people (`/web/`) ask of the index, over every local
 * archive at once (one timeline per URI-R, whichever archive holds each
 * memento), shaped for the pages: the index's named queries
 * (archive/store/index/page-queries.ts, the index's `pages`) do the
 * counting, each one grouped scan or a few seeks of the `(urlkey,
 * datetime)` index, so a calendar of 100,000 captures costs one index
 * range scan.
 *
 * The queries of one URL take the access rules' policy of that URL
 * (archive/access.ts): captures it does not show are left out of every
 * count and list (the statement then varies with the rules and is not
 * kept). The queries over the whole index take the rules as AccessRules
 * `shownRules` gives them.
 */
import type { ShownRule, UrlPolicy } from '../access.js';
import { urlkeyRanges } from '../cdx/query.js';
import { nearerToPeriod } from '../memento/navigation.js';
import type { Capture, UrlSummary } from '../store/index/page-queries.js';
import type { MementoIndex } from '../store/memento-index.js';
import type { Ranges } from '../store/memento-row.js';

export type { Capture };

/** The datetimes `policy` shows (undefined: every memento, no policy or nothing of the URL hidden). */
function shownOf(policy: UrlPolicy | undefined): Ranges | undefined {
  return !policy || policy.open ? undefined : policy.ranges('allow');
}

/** Captures per year of one URI-R, with its first and last Memento-Datetime. */
export interface CalendarSummary {
  total: number;
  first: number;
  last: number;
  /** Oldest year first; `months[m]` is the count in month m (0 = January). */
  years: { year: number; n: number; months: number[] }[];
}

/**
 * The captures of `urlkey` per year and month, across archives; `undefined`
 * when it has none. One grouped scan of the `(urlkey, datetime)` index.
 */
export async function calendarSummary(index: MementoIndex, urlkey: string, policy?: UrlPolicy): Promise<CalendarSummary | undefined> {
  const rows = await index.pages.months(urlkey, shownOf(policy));
  if (!rows.length) return undefined;
  const years = new Map<number, { year: number; n: number; months: number[] }>();
  for (const r of rows) {
    const year = Number(r.month.slice(0, 4));
    let y = years.get(year);
    if (!y) years.set(year, (y = { year, n: 0, months: new Array<number>(12).fill(0) }));
    y.n += r.n;
    y.months[Number(r.month.slice(5, 7)) - 1] = r.n;
  }
  return {
    total: rows.reduce((a, r) => a + r.n, 0),
    first: Math.min(...rows.map((r) => r.first)),
    last: Math.max(...rows.map((r) => r.last)),
    years: [...years.values()],
  };
}

/**
 * Captures of `urlkey` per day of one year (UTC): `"MM-DD"` → count.
 *
 * @param year four-digit year
 */
export function daysOfYear(index: MementoIndex, urlkey: string, year: number, policy?: UrlPolicy): Promise<Map<string, number>> {
  return index.pages.days(urlkey, Date.UTC(year, 0, 1) / 1000, Date.UTC(year + 1, 0, 1) / 1000, shownOf(policy));
}

/** Most captures one day lists. */
export const DAY_LIMIT = 1000;

/**
 * The captures of `urlkey` in `[from, to)` (epoch s), oldest first, at most
 * {@link DAY_LIMIT}; and the Memento-Datetime of the capture just before
 * `from` (for "compare with previous" on the first one).
 */
export async function capturesBetween(
  index: MementoIndex,
  urlkey: string,
  from: number,
  to: number,
  policy?: UrlPolicy,
): Promise<{ captures: Capture[]; before?: number }> {
  const within = shownOf(policy);
  const captures = await index.pages.between(urlkey, from, to, DAY_LIMIT, within);
  return { captures, before: await index.pages.before(urlkey, from, within) };
}

/** The capture nearest to an instant with its neighbours on the one timeline of all archives (RFC 7089 §2.2.1 terms). */
export interface Nearest {
  memento: Capture;
  first: Capture;
  last: Capture;
  prev?: Capture;
  next?: Capture;
}

/**
 * The capture of `urlkey` nearest to `t` (epoch s; a tie goes to the
 * earlier one) across every local archive, with the first, last, previous
 * and next captures; `undefined` when there is none. Four index seeks.
 * With `from` < `t`, the period `[from, t]` is asked for: its last capture,
 * else the one nearest to it (navigation.ts `nearerToPeriod`).
 */
export async function nearestCapture(index: MementoIndex, urlkey: string, t: number, policy?: UrlPolicy, from = t): Promise<Nearest | undefined> {
  const around = await index.pages.around(urlkey, t, shownOf(policy));
  if (!around) return undefined;
  const { first, last, atOrBefore: before, after } = around;
  const useBefore = before[0] && (!after[0] || !nearerToPeriod(after[0].datetime, before[0].datetime, { start: from, end: t }));
  if (useBefore) return { memento: before[0], first, last, prev: before[1], next: after[0] };
  return { memento: after[0], first, last, prev: before[0], next: after[1] };
}

/** Whether `urlkey` has a capture (that `policy` shows) whose URI-R is exactly `uriR` (the scheme included, which the urlkey leaves out). */
export function hasCaptureOf(index: MementoIndex, urlkey: string, uriR: string, policy?: UrlPolicy): Promise<boolean> {
  return index.pages.hasUriR(urlkey, uriR, shownOf(policy));
}

/** One archived URL under a prefix (its count and first/last Memento-Datetime, epoch s). */
export type UrlUnderPrefix = UrlSummary;

/**
 * The archived URLs whose urlkey starts with `prefix`, in urlkey order,
 * after `afterKey` (keyset paging), at most `limit`; each with its count
 * and first/last Memento-Datetime. A range scan of the urlkey index.
 */
export function urlsUnder(index: MementoIndex, prefix: string, afterKey: string, limit: number): Promise<UrlUnderPrefix[]> {
  return index.pages.under(prefix, afterKey, limit);
}

/**
 * The archived URLs of the domain of `urlkey` (its host, any port of it,
 * and every subdomain: cdx/query.ts `urlkeyRanges` `domain`), in urlkey
 * order after `afterKey`, at most `limit`; shaped as {@link urlsUnder}. One
 * range scan of the urlkey index from `<host>)` to `<host>:`, keeping the
 * keys whose next character ends the host name.
 */
export function urlsOfDomain(index: MementoIndex, urlkey: string, afterKey: string, limit: number): Promise<UrlUnderPrefix[]> {
  const [host] = urlkeyRanges(urlkey, 'domain');
  return index.pages.ofDomain(host.from.slice(0, -1), afterKey, limit);
}

/** One archived site (host and port as in the urlkey). */
export interface Site {
  /** The host as people write it (`www.example.org:8080`). */
  host: string;
  urls: number;
  captures: number;
  last: number;
}

/** The host of a urlkey's SURT host part: `org,example,www:8080` → `www.example.org:8080` (IP literals as they are). */
export function hostOfSurt(surtHost: string): string {
  const colon = surtHost.startsWith('[') ? surtHost.indexOf(']:') + 1 : surtHost.lastIndexOf(':');
  const name = colon > 0 ? surtHost.slice(0, colon) : surtHost;
  const port = colon > 0 ? surtHost.slice(colon) : '';
  if (name.startsWith('[')) return name + port;
  return name.split(',').reverse().join('.') + port;
}

/**
 * Every archived site with its number of URLs and captures, most captures
 * first (at most `limit`), over the captures `shown` shows (AccessRules
 * `shownRules`; empty, the default: every capture. A hidden capture is in
 * no count or date, a site of hidden captures only is not listed). A scan
 * of the whole urlkey index: callers cache it.
 */
export async function sites(index: MementoIndex, limit: number, shown: readonly ShownRule[] = []): Promise<Site[]> {
  const rows = await index.pages.sites(limit, shown);
  return rows.map((r) => ({ host: hostOfSurt(r.surtHost), urls: r.urls, captures: r.captures, last: r.last }));
}

/** The `limit` captures indexed last (by index row, newest first) of those `shown` shows (AccessRules `shownRules`; empty: all). */
export function recentCaptures(index: MementoIndex, limit: number, shown: readonly ShownRule[] = []): Promise<Capture[]> {
  return index.pages.recent(limit, shown);
}

/** How many captures `shown` shows (AccessRules `shownRules`; empty: all), in every archive. */
export function captureCount(index: MementoIndex, shown: readonly ShownRule[] = []): Promise<number> {
  return index.pages.count(shown);
}
