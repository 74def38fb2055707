/**
 * What the pages for people (`/web/`) ask of the index, over every local
 * archive at once (one timeline per URI-R, whichever archive holds each
 * memento). Every count is aggregated by the database over the `(urlkey,
 * datetime)` index; no query loads the mementos of a URI-R one by one, so
 * a calendar of 100,000 captures costs one index range scan.
 *
 * The queries of one URL take the access rules' policy of that URL
 * (archive/access.ts): captures it does not show are left out of every
 * count and list (the SQL then varies with the rules and is not cached).
 */
import type { UrlPolicy } from '../access.js';
import { urlkeyRanges } from '../cdx/query.js';
import { nearerToPeriod } from '../read/nearest.js';
import { type MementoRow, rangeSql } from '../store/index-db.js';
import type { MementoIndex } from '../store/memento-index.js';

/** One capture as a page lists it: the index row without its WARC location. */
export type Capture = Pick<MementoRow, 'archive_id' | 'urlkey' | 'uri_r' | 'datetime' | 'status' | 'mime' | 'digest'>;

const CAPTURE_COLS = 'archive_id, urlkey, uri_r, datetime, status, mime, digest';

/** The statement name and the extra SQL condition for `policy`: a cached statement when it hides nothing. */
function shown(name: string, policy: UrlPolicy | undefined): { name: string | null; cond: string } {
  if (!policy || policy.open) return { name, cond: '' };
  return { name: null, cond: ` AND (${rangeSql(policy.ranges('allow'))})` };
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
  const q = shown('web.calendar', policy);
  const rows = await index.browse<{ ym: string; n: number; first: number; last: number }>(
    q.name,
    `SELECT ${index.sql.yearMonth('datetime')} AS ym, count(*) AS n, min(datetime) AS first, max(datetime) AS last
       FROM memento WHERE urlkey = $urlkey${q.cond} GROUP BY ym ORDER BY ym`,
    { $urlkey: urlkey },
  );
  if (!rows.length) return undefined;
  const years = new Map<number, { year: number; n: number; months: number[] }>();
  for (const r of rows) {
    const year = Number(r.ym.slice(0, 4));
    let y = years.get(year);
    if (!y) years.set(year, (y = { year, n: 0, months: new Array<number>(12).fill(0) }));
    y.n += r.n;
    y.months[Number(r.ym.slice(5, 7)) - 1] = r.n;
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
export async function daysOfYear(index: MementoIndex, urlkey: string, year: number, policy?: UrlPolicy): Promise<Map<string, number>> {
  const from = Date.UTC(year, 0, 1) / 1000;
  const to = Date.UTC(year + 1, 0, 1) / 1000;
  const q = shown('web.days', policy);
  const rows = await index.browse<{ d: string; n: number }>(
    q.name,
    `SELECT ${index.sql.monthDay('datetime')} AS d, count(*) AS n
       FROM memento WHERE urlkey = $urlkey AND datetime >= $from AND datetime < $to${q.cond} GROUP BY d`,
    { $urlkey: urlkey, $from: from, $to: to },
  );
  return new Map(rows.map((r) => [r.d, r.n]));
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
  const q = shown('web.between', policy);
  const captures = await index.browse<Capture>(
    q.name,
    `SELECT ${CAPTURE_COLS} FROM memento WHERE urlkey = $urlkey AND datetime >= $from AND datetime < $to${q.cond} ORDER BY datetime LIMIT ${DAY_LIMIT}`,
    { $urlkey: urlkey, $from: from, $to: to },
  );
  const b = shown('web.before', policy);
  const prev = await index.browse<{ datetime: number }>(
    b.name,
    `SELECT datetime FROM memento WHERE urlkey = $urlkey AND datetime < $from${b.cond} ORDER BY datetime DESC LIMIT 1`,
    { $urlkey: urlkey, $from: from },
  );
  return { captures, before: prev[0]?.datetime };
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
  const q = shown('web.nearest', policy);
  const where = `urlkey = $urlkey${q.cond}`;
  const rows = await index.browse<Capture & { kind: number }>(
    q.name,
    `SELECT * FROM (SELECT 1 AS kind, ${CAPTURE_COLS} FROM memento WHERE ${where} ORDER BY datetime ASC LIMIT 1) AS k1
     UNION ALL SELECT * FROM (SELECT 2 AS kind, ${CAPTURE_COLS} FROM memento WHERE ${where} ORDER BY datetime DESC LIMIT 1) AS k2
     UNION ALL SELECT * FROM (SELECT 3 AS kind, ${CAPTURE_COLS} FROM memento WHERE ${where} AND datetime <= $t ORDER BY datetime DESC LIMIT 2) AS k3
     UNION ALL SELECT * FROM (SELECT 4 AS kind, ${CAPTURE_COLS} FROM memento WHERE ${where} AND datetime > $t ORDER BY datetime ASC LIMIT 2) AS k4`,
    { $urlkey: urlkey, $t: t },
  );
  // A compound SELECT keeps no subquery's order: each kind sorted here.
  const of = (kind: number) =>
    rows
      .filter((r) => r.kind === kind)
      .sort((x, y) => (kind === 3 ? y.datetime - x.datetime : x.datetime - y.datetime))
      .map(({ kind: _k, ...c }) => c as Capture);
  const [first] = of(1);
  const [last] = of(2);
  if (!first || !last) return undefined;
  const before = of(3);
  const after = of(4);
  const useBefore = before[0] && (!after[0] || !nearerToPeriod(after[0].datetime, before[0].datetime, { start: from, end: t }));
  if (useBefore) return { memento: before[0], first, last, prev: before[1], next: after[0] };
  return { memento: after[0], first, last, prev: before[0], next: after[1] };
}

/** Whether `urlkey` has a capture (that `policy` shows) whose URI-R is exactly `uriR` (the scheme included, which the urlkey leaves out). */
export async function hasCaptureOf(index: MementoIndex, urlkey: string, uriR: string, policy?: UrlPolicy): Promise<boolean> {
  const q = shown('web.has', policy);
  const rows = await index.browse<{ one: number }>(q.name, `SELECT 1 AS one FROM memento WHERE urlkey = $urlkey AND uri_r = $uriR${q.cond} LIMIT 1`, {
    $urlkey: urlkey,
    $uriR: uriR,
  });
  return rows.length > 0;
}

/** One archived URL under a prefix. */
export interface UrlUnderPrefix {
  urlkey: string;
  uri_r: string;
  n: number;
  first: number;
  last: number;
}

/**
 * The archived URLs whose urlkey starts with `prefix`, in urlkey order,
 * after `afterKey` (keyset paging), at most `limit`; each with its count
 * and first/last Memento-Datetime. A range scan of the urlkey index.
 */
export function urlsUnder(index: MementoIndex, prefix: string, afterKey: string, limit: number): Promise<UrlUnderPrefix[]> {
  return index.browse<UrlUnderPrefix>(
    'web.under',
    `SELECT urlkey, max(uri_r) AS uri_r, count(*) AS n, min(datetime) AS first, max(datetime) AS last
       FROM memento WHERE urlkey > $after AND urlkey >= $prefix AND urlkey < $end
       GROUP BY urlkey ORDER BY urlkey LIMIT $limit`,
    { $prefix: prefix, $end: prefix + '\uffff', $after: afterKey, $limit: limit },
  );
}

/**
 * The archived URLs of the domain of `urlkey` (its host, any port of it,
 * and every subdomain: cdx/query.ts `urlkeyRanges` `domain`), in urlkey
 * order after `afterKey`, at most `limit`; shaped as {@link urlsUnder}. One
 * range scan of the urlkey index from `<host>)` to `<host>:`, keeping the
 * keys whose next character ends the host name.
 */
export function urlsOfDomain(index: MementoIndex, urlkey: string, afterKey: string, limit: number): Promise<UrlUnderPrefix[]> {
  const [host, , ports] = urlkeyRanges(urlkey, 'domain');
  const name = host.from.slice(0, -1);
  return index.browse<UrlUnderPrefix>(
    'web.domain',
    `SELECT urlkey, max(uri_r) AS uri_r, count(*) AS n, min(datetime) AS first, max(datetime) AS last
       FROM memento WHERE urlkey > $after AND urlkey >= $from AND urlkey < $to AND substr(urlkey, $at, 1) IN (')', ',', ':')
       GROUP BY urlkey ORDER BY urlkey LIMIT $limit`,
    { $from: host.from, $to: ports.to ?? host.from, $at: name.length + 1, $after: afterKey, $limit: limit },
  );
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

/** A condition on the index rows (archive/access.ts `shownSql`): SQL over `urlkey` and `datetime`, with its parameters. */
export interface RowCondition {
  sql: string;
  params: Record<string, string>;
}

/** The condition that every row meets. */
const EVERY: RowCondition = { sql: 'TRUE', params: {} };

/**
 * Every archived site with its number of URLs and captures, most captures
 * first (at most `limit`), over the rows `shown` lets through (the access
 * rules: a hidden capture is in no count or date, a site of hidden
 * captures only is not listed). A scan of the whole urlkey index: callers
 * cache it.
 */
export async function sites(index: MementoIndex, limit: number, shown: RowCondition = EVERY): Promise<Site[]> {
  const rows = await index.browse<{ h: string; urls: number; captures: number; last: number }>(
    shown.sql === EVERY.sql ? 'web.sites' : null,
    `SELECT ${index.sql.surtHost('urlkey')} AS h, count(DISTINCT urlkey) AS urls, count(*) AS captures, max(datetime) AS last
       FROM memento WHERE ${shown.sql} GROUP BY h ORDER BY captures DESC, h LIMIT $limit`,
    { ...shown.params, $limit: limit },
  );
  return rows.map((r) => ({ host: hostOfSurt(r.h), urls: r.urls, captures: r.captures, last: r.last }));
}

/** The `limit` captures indexed last (by index row, newest first) of those `shown` lets through. */
export function recentCaptures(index: MementoIndex, limit: number, shown: RowCondition = EVERY): Promise<Capture[]> {
  return index.browse<Capture>(
    shown.sql === EVERY.sql ? 'web.recent' : null,
    `SELECT ${CAPTURE_COLS} FROM memento WHERE ${shown.sql} ORDER BY id DESC LIMIT $limit`,
    {
      ...shown.params,
      $limit: limit,
    },
  );
}

/** How many captures `shown` lets through, in every archive. */
export async function captureCount(index: MementoIndex, shown: RowCondition = EVERY): Promise<number> {
  const [r] = await index.browse<{ n: number }>(
    shown.sql === EVERY.sql ? 'web.count' : null,
    `SELECT count(*) AS n FROM memento WHERE ${shown.sql}`,
    shown.params,
  );
  return r.n;
}
