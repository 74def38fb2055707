/**
 * The SQL the index (index-db.ts) builds at run time, and the shape of its
 * rows: the batched query of the read cache's views (every memento of
 * many URLs in one statement), and the condition that keeps a query to ranges of datetimes (the access
 * rules' shown mementos, archive/read/access-rules.ts).
 */
import type { SqlDialect } from './dialect.js';
import type { MementoRef, Neighbourhood, Ranges } from './memento-row.js';

export type { Ranges };

/** A row of {@link IndexDb.neighbourhoodWithin}'s query: which neighbour (1 first, 2 last, 3 at or before, 5 after), the memento. */
export interface NeighbourRow extends MementoRef {
  kind: number;
}

/** Lookups answered by one {@link viewSql} statement: the batch is padded to the next of these sizes (three statements in all). */
export const VIEW_BATCH_SIZES = [1, 8, 64] as const;

/**
 * The mementos of `n` urlkeys `(i, urlkey)` in one query (the read
 * cache's views, read-cache.ts): two rows, each `(many, j)`: with `many`
 * 0, `j` is every memento of the urlkeys with at most `max` of them as one
 * JSON array of `[i, archive_id, id, datetime, uri_r]` (one string for the
 * driver to make, not an object per memento); with `many` 1, `j` is the
 * JSON array of the `i` whose urlkey has more (read another way). Found in
 * the `(urlkey, datetime)` index, each memento's row by id for `uri_r`.
 * A padding lookup has a NULL urlkey (it matches nothing).
 */
export function viewSql(n: number, max: number): string {
  return `WITH q(i, k) AS (VALUES ${new Array(n).fill('(?, ?)').join(', ')}),
    c(i, k, many) AS (SELECT i, k, (SELECT count(*) FROM (SELECT 1 FROM memento WHERE urlkey = q.k LIMIT ${max + 1})) > ${max} FROM q)
    SELECT 0 AS many, json_group_array(json_array(c.i, m.archive_id, m.id, m.datetime, m.uri_r)) AS j
      FROM c CROSS JOIN memento m ON m.urlkey = c.k WHERE NOT c.many
    UNION ALL SELECT 1 AS many, json_group_array(c.i) AS j FROM c WHERE c.many`;
}

/**
 * An SQL condition: `datetime` in one of `ranges` (infinite ends left open; none: never). Numbers only (made whole), so they are written in.
 * SQL of SQLite and PostgreSQL alike (`TRUE` and `FALSE` are SQLite's 1 and 0).
 */
export function rangeSql(ranges: Ranges): string {
  const bound = (op: string, v: number) => (Number.isFinite(v) ? `datetime ${op} ${Math.ceil(v)}` : 'TRUE');
  return ranges.map(([from, until]) => `(${bound('>=', from)} AND ${bound('<', until)})`).join(' OR ') || 'FALSE';
}

/**
 * The query of {@link MementoIndex.neighbourhoodWithin} (parameters
 * `$urlkey`, `$archive`, `$t`): first, last, the two at or before `$t` and
 * the two after it, among the mementos whose datetime lies in `ranges`;
 * rows of {@link NeighbourRow} (kind 1, 2, 3, 5), read by
 * {@link neighbourhoodOfRows}. SQL of SQLite and PostgreSQL alike.
 */
export function neighbourhoodWithinSql(ranges: Ranges): string {
  const one = (kind: number, cond: string, order: string, limit: number) =>
    `SELECT ${kind} AS kind, * FROM (SELECT id, datetime, uri_r FROM memento WHERE urlkey = $urlkey AND archive_id = $archive AND (${rangeSql(ranges)})${cond}
      ORDER BY datetime ${order} LIMIT ${limit}) AS k${kind}`;
  return [one(1, '', 'ASC', 1), one(2, '', 'DESC', 1), one(3, ' AND datetime <= $t', 'DESC', 2), one(5, ' AND datetime > $t', 'ASC', 2)].join(' UNION ALL ');
}

/** The navigation of {@link neighbourhoodWithinSql}'s rows; `undefined` when there are none. */
export function neighbourhoodOfRows(rows: readonly NeighbourRow[]): Neighbourhood | undefined {
  if (!rows.length) return undefined;
  // A compound SELECT keeps no subquery's order: sorted here.
  const of = (kind: number, sign: number): MementoRef[] =>
    rows
      .filter((r) => r.kind === kind)
      .sort((x, y) => sign * (x.datetime - y.datetime))
      .map(({ id, datetime, uri_r }) => ({ id, datetime, uri_r }));
  return { first: of(1, 1)[0], last: of(2, 1)[0], atOrBefore: of(3, -1), after: of(5, 1) };
}

/** SQLite's fragments of the callers' SQL (memento-index.ts `SqlDialect`). */
export const SQLITE_SQL: SqlDialect = {
  yearMonth: (col) => `strftime('%Y-%m', ${col}, 'unixepoch')`,
  monthDay: (col) => `strftime('%m-%d', ${col}, 'unixepoch')`,
  timestamp14: (col) => `strftime('%Y%m%d%H%M%S', ${col}, 'unixepoch')`,
  surtHost: (col) => `substr(${col}, 1, instr(${col}, ')') - 1)`,
  jsonObject: (members) => `json_object(${members.map(([k, v]) => `'${k}', ${v}`).join(', ')})`,
  jsonTexts: (param) => `SELECT key AS i, value FROM json_each(${param})`,
  least: (a, b) => `min(${a}, ${b})`,
  greatest: (a, b) => `max(${a}, ${b})`,
};
