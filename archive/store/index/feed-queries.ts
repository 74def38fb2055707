/**
 * What the Atom feeds of changes (`/feed/`, archive/feed/) ask of the
 * index: the new mementos (a `response` record of their own, `refers_to`
 * null: a revisit is no change) of one urlkey or of the urlkeys under a
 * prefix, over every local archive at once, numbered oldest first by
 * `(datetime, id)`, each with the Memento-Datetime of the entry before it
 * of the same urlkey (for the link to what changed).
 *
 * {@link FeedQueries.count} takes at most `examine` rows of the
 * `(urlkey, datetime)` index range that the access rules show (revisits
 * included; a hidden row is never counted), so that its cost is bounded however many mementos the range holds; the
 * caller refuses a range that holds more, and then asks for a page of
 * {@link FeedQueries.entries}, whose cost that bound also bounds.
 * The rows the access rules hide are left out by a condition the caller
 * gives: `within` (the spans of datetimes the rules show of one urlkey,
 * UrlPolicy `ranges('allow')`) or `shown` (AccessRules `shownRules`, for a
 * prefix). Datetimes are epoch seconds (UTC); errors are the database
 * driver's. SQL of SQLite and PostgreSQL alike.
 */
import type { IndexReads } from './reads.js';
import type { MementoRow, Ranges } from './memento-row.js';
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
export interface FeedRow extends Pick<MementoRow, 'id' | 'archive_id' | 'urlkey' | 'uri_r' | 'datetime' | 'status' | 'mime'> {
  n: number;
  /** The Memento-Datetime of the entry before it of the same urlkey; null for the first. */
  prev: number | null;
}

/**
 * The rows of a range the rules show (`range`: the urlkeys and the access
 * condition, so that a hidden row is never examined nor counted) and the
 * condition that keeps the new mementos among them, as SQL and parameters.
 */
function parts(r: FeedRange): { range: string; keep: string; params: Record<string, string | number> } {
  const params: Record<string, string | number> = { $key: r.key };
  let range = 'urlkey = $key' + withinSql(r.within);
  if (r.prefix) {
    const cond = shownCondition(r.shown ?? []);
    Object.assign(params, cond.params, { $end: r.key + '\uffff' });
    range = `urlkey >= $key AND urlkey < $end AND ${cond.sql}`;
  }
  return { range, keep: 'refers_to IS NULL', params };
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
    const { range, keep, params } = parts(r);
    const [row] = await this.db.browse<{ examined: number; entries: number | null }>(
      null,
      `SELECT count(*) AS examined, sum(CASE WHEN ${keep} THEN 1 ELSE 0 END) AS entries
         FROM (SELECT urlkey, datetime, refers_to FROM memento WHERE ${range} ORDER BY urlkey, datetime LIMIT $examine) AS r`,
      { ...params, $examine: examine },
    );
    return { examined: Number(row.examined), entries: Number(row.entries ?? 0) };
  }

  /**
   * The entries numbered `first` to `last` (inclusive, from 1, oldest
   * first), newest first. The caller has counted the range ({@link count}:
   * at most the rows it examines): one query of the entries in
   * `(datetime, id)` order (for one urlkey, the order of its index) from
   * the one before `first`, and for a prefix one index seek per urlkey on
   * the page for the entry before its oldest there.
   */
  async entries(r: FeedRange, first: number, last: number): Promise<FeedRow[]> {
    const { range, keep, params } = parts(r);
    const skip = Math.max(0, first - 2);
    const rows = await this.db.browse<Omit<FeedRow, 'n' | 'prev'>>(
      null,
      `SELECT id, archive_id, urlkey, uri_r, datetime, status, mime FROM memento WHERE ${range} AND ${keep}
        ORDER BY datetime, id LIMIT $count OFFSET $skip`,
      { ...params, $count: last - skip, $skip: skip },
    );
    // The newest entry before each one of the same urlkey: on the page, else (a prefix) sought.
    const before = new Map<string, number>();
    const out: FeedRow[] = [];
    for (const [i, x] of rows.entries()) {
      const n = skip + i + 1;
      const row = { ...x, id: Number(x.id), n, prev: before.get(x.urlkey) ?? null };
      before.set(x.urlkey, x.datetime);
      if (n >= first) out.push(row);
    }
    if (r.prefix && first > 1)
      for (const e of out) if (e.prev === null && !out.some((o) => o.urlkey === e.urlkey && o.n < e.n)) e.prev = await this.prevOf(r, e);
    return out.reverse();
  }

  /** The Memento-Datetime of the entry before `e` of its urlkey; null when none. One index seek. */
  private async prevOf(r: FeedRange, e: FeedRow): Promise<number | null> {
    const shown = shownCondition(r.shown ?? []);
    const [row] = await this.db.browse<{ datetime: number }>(
      null,
      `SELECT datetime FROM memento WHERE urlkey = $key AND (datetime < $d OR (datetime = $d AND id < $id)) AND refers_to IS NULL AND ${shown.sql}
        ORDER BY datetime DESC, id DESC LIMIT 1`,
      { ...shown.params, $key: e.urlkey, $d: e.datetime, $id: e.id },
    );
    return row ? Number(row.datetime) : null;
  }
}
