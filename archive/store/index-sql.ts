/**
 * The SQL the index (index-db.ts) builds at run time, and the shape of its
 * rows: the batched neighbourhood query of many lookups in one statement,
 * and the condition that keeps a query to ranges of datetimes (the access
 * rules' shown mementos, archive/access.ts).
 */
import type { MementoRef } from './index-db.js';

/** A row of {@link neighbourhoodSql}: lookup number, which neighbour (1 first, 2 last, 3/4 at or before, 5/6 after), the memento. */
export interface NeighbourRow extends MementoRef {
  i: number;
  kind: number;
  /** The whole-row columns: absent from the statement without them, NULL on rows that are not whole. */
  status?: number | null;
  mime?: string | null;
  digest?: string | null;
  warc_file?: string | null;
  warc_offset?: number | null;
  warc_length?: number | null;
  client_ip?: string | null;
}

/**
 * One neighbour as {@link neighbourhoodSql} hands it on: lookup number,
 * which neighbour (1 first, 2 last, 3/4 at or before, 5/6 after), id,
 * datetime, uri_r, and, for the one at or before `t` of a `whole` lookup,
 * the whole-row columns (null on the others; absent from the statement
 * without them).
 */
export type NeighbourTuple = [
  i: number,
  kind: number,
  id: number,
  datetime: number,
  uri_r: string,
  status?: number | null,
  mime?: string | null,
  digest?: string | null,
  warc_file?: string | null,
  warc_offset?: number | null,
  warc_length?: number | null,
  client_ip?: string | null,
];

/**
 * The neighbourhoods of `n` lookups `(i, urlkey, archive, t, whole)` in one
 * query: each neighbour's id is found in the covering `(urlkey,
 * archive_id, datetime)` index (one seek each), then its row by id for
 * `uri_r` (and, for the one at or before `t` of a `whole` lookup, every
 * column). `CROSS JOIN`: SQLite then keeps r as the outer loop (a plain
 * join let the planner scan the whole table against an automatic index on r).
 * The answer is one row, `j`: every neighbour as a {@link NeighbourTuple}
 * in one JSON array (`json_group_array`), so that the driver makes one
 * string instead of an object per neighbour with a property per column.
 */
export function neighbourhoodSql(n: number, withWhole = true): string {
  const one = (kind: number, cond: string, order: string, offset: number) =>
    `SELECT i, ${kind} AS kind, ${kind === 3 ? 'w' : '0'} AS w, (SELECT id FROM memento WHERE urlkey = q.k AND archive_id = q.a${cond} ORDER BY datetime ${order} LIMIT 1 OFFSET ${offset}) AS id FROM q`;
  const whole = (col: string) => `CASE WHEN r.w THEN m.${col} END`;
  return `WITH q(i, k, a, t, w) AS (VALUES ${new Array(n).fill('(?, ?, ?, ?, ?)').join(', ')}),
    r(i, kind, w, id) AS (
      ${one(1, '', 'ASC', 0)}
      UNION ALL ${one(2, '', 'DESC', 0)}
      UNION ALL ${one(3, ' AND datetime <= q.t', 'DESC', 0)}
      UNION ALL ${one(4, ' AND datetime <= q.t', 'DESC', 1)}
      UNION ALL ${one(5, ' AND datetime > q.t', 'ASC', 0)}
      UNION ALL ${one(6, ' AND datetime > q.t', 'ASC', 1)})
    SELECT json_group_array(json_array(r.i, r.kind, m.id, m.datetime, m.uri_r
      ${withWhole ? ', ' + ['status', 'mime', 'digest', 'warc_file', 'warc_offset', 'warc_length', 'client_ip'].map(whole).join(', ') : ''})) AS j
    FROM r CROSS JOIN memento m ON m.id = r.id`;
}

/** Spans of datetimes `[from, until)`, epoch seconds; `-Infinity` / `Infinity` for open ends. */
export type Ranges = readonly (readonly [number, number])[];

/** An SQL condition: `datetime` in one of `ranges` (infinite ends left open; none: never). Numbers only (made whole), so they are written in. */
export function rangeSql(ranges: Ranges): string {
  const bound = (op: string, v: number) => (Number.isFinite(v) ? `datetime ${op} ${Math.ceil(v)}` : '1');
  return ranges.map(([from, until]) => `(${bound('>=', from)} AND ${bound('<', until)})`).join(' OR ') || '0';
}
