/**
 * The SQL fragments that differ between the index's two databases
 * (SQLite: index-sql.ts `SQLITE_SQL`; PostgreSQL: index-pg.ts
 * `POSTGRES_SQL`), for the queries written once for both.
 */

/**
 * The SQL fragments that differ between SQLite and PostgreSQL, as
 * functions of a column expression. Everything else the queries write
 * (comparisons, `count`, `min`, `max`, `substr`, `COALESCE`, `NULLIF`,
 * `CAST(x AS TEXT)`, `||`, `CASE`, `TRUE`/`FALSE`, row values, `LIMIT`)
 * means the same in both.
 */
export interface SqlDialect {
  /** `YYYY-MM` of an epoch-seconds column, UTC. */
  yearMonth(col: string): string;
  /** `MM-DD` of an epoch-seconds column, UTC. */
  monthDay(col: string): string;
  /** `YYYYMMDDhhmmss` (a 14-digit Memento timestamp) of an epoch-seconds column, UTC. */
  timestamp14(col: string): string;
  /** A urlkey's SURT host part: the text before its first `)`. */
  surtHost(col: string): string;
  /** A compact JSON object text (`{"k":v,...}`, no spaces) of `[name, text expression]` pairs, members in that order. */
  jsonObject(members: readonly (readonly [string, string])[]): string;
  /** A table `(i, value)` of the JSON array of strings in the parameter `param` (`$keys`): `i` its place from 0, `value` the text. */
  jsonTexts(param: string): string;
  /** The smaller / larger of two numeric expressions (SQLite's scalar `min`/`max`, PostgreSQL's `LEAST`/`GREATEST`). */
  least(a: string, b: string): string;
  greatest(a: string, b: string): string;
}
