/**
 * What the Atom feeds of changes (`/feed/`, archive/feed/) ask of the
 * index: the new mementos (a `response` record of their own, `refers_to`
 * null: a revisit is no change) of one urlkey or of the urlkeys under a
 * prefix, over every local archive at once, numbered oldest first by
 * `(datetime, id)`, each with the Memento-Datetime of the entry before it
 * of the same urlkey (for the link to what changed).
 *
 * Every query first takes at most `examine` rows of the `(urlkey,
 * datetime)` index range (revisits and hidden rows included), so that its
 * cost is bounded however many mementos the range holds; the caller asks
 * {@link FeedQueries.count} first and refuses a range that holds more.
 * The rows the access rules hide are left out by a condition the caller
 * gives: `within` (the spans of datetimes the rules show of one urlkey,
 * UrlPolicy `ranges('allow')`) or `shown` (AccessRules `shownRules`, for a
 * prefix). Datetimes are epoch seconds (UTC); errors are the database
 * driver's. SQL of SQLite and PostgreSQL alike (window functions: SQLite
 * 3.25 and later).
 */
import type { IndexReads } from './reads.js';
import type { Ranges } from './memento-row.js';
import { type ShownRule, shownCondition, withinSql } from './shown-sql.js';

/** The urlkeys a feed covers: one (`exact`), or every one that starts with `key`. */
export interface FeedRange {
  key: string;
  prefix: boolean;
  /** The datetimes shown of `key` (exact only; undefined: every one). */
  within?: Ranges;
  /** The rules as SQL conditions (prefix only; empty: every memento shown). */
  shown?: readonly ShownRule[];
}

/** One entry of a feed: a new memento shown, `n` its place oldest first (from 1). */
export interface FeedRow {
  n: number;
  id: number;
  archive_id: string;
  urlkey: string;
  uri_r: string;
  datetime: number;
  status: number;
  mime: string;
  /** The Memento-Datetime of the entry before it of the same urlkey; null for the first. */
  prev: number | null;
}

/** The rows of a range and the conditions that keep the shown new mementos, as SQL and parameters. */
function parts(r: FeedRange, examine: number): { from: string; keep: string; params: Record<string, string | number> } {
  const range = r.prefix ? 'urlkey >= $key AND urlkey < $end' : 'urlkey = $key';
  const params: Record<string, string | number> = { $key: r.key, $examine: examine };
  if (r.prefix) params.$end = r.key + '\uffff';
  let keep = 'refers_to IS NULL';
  if (r.prefix) {
    const cond = shownCondition(r.shown ?? []);
    Object.assign(params, cond.params);
    keep += ` AND ${cond.sql}`;
  } else keep += withinSql(r.within);
  const from = `(SELECT id, archive_id, urlkey, uri_r, datetime, status, mime, refers_to FROM memento WHERE ${range} ORDER BY urlkey, datetime LIMIT $examine) AS r`;
  return { from, keep, params };
}

/** The feeds' queries (see the module comment); the index's `feeds`. */
export class FeedQueries {
  constructor(private readonly db: IndexReads) {}

  /**
   * How many rows of the range were examined (at most `examine`: when it
   * is that many, the range may hold more) and how many of them are
   * entries (new mementos shown). One bounded scan.
   */
  async count(r: FeedRange, examine: number): Promise<{ examined: number; entries: number }> {
    const { from, keep, params } = parts(r, examine);
    const [row] = await this.db.browse<{ examined: number; entries: number | null }>(
      null,
      `SELECT count(*) AS examined, sum(CASE WHEN ${keep} THEN 1 ELSE 0 END) AS entries FROM ${from}`,
      params,
    );
    return { examined: Number(row.examined), entries: Number(row.entries ?? 0) };
  }

  /**
   * The entries numbered `first` to `last` (inclusive, from 1, oldest
   * first), newest first, among the first `examine` rows of the range.
   */
  async entries(r: FeedRange, examine: number, first: number, last: number): Promise<FeedRow[]> {
    const { from, keep, params } = parts(r, examine);
    const rows = await this.db.browse<FeedRow>(
      null,
      `SELECT * FROM (
         SELECT ROW_NUMBER() OVER (ORDER BY datetime, id) AS n, id, archive_id, urlkey, uri_r, datetime, status, mime,
                LAG(datetime) OVER (PARTITION BY urlkey ORDER BY datetime, id) AS prev
           FROM ${from} WHERE ${keep}) AS f
        WHERE n >= $first AND n <= $last ORDER BY n DESC`,
      { ...params, $first: first, $last: last },
    );
    return rows.map((x) => ({ ...x, n: Number(x.n), id: Number(x.id), prev: x.prev === null ? null : Number(x.prev) }));
  }
}
