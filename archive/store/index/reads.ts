/**
 * What the named queries of this folder (page-queries.ts, panel-query.ts,
 * key-queries.ts) run on: an index adapter's own read of one SELECT and
 * the SQL fragments of its database. The adapters (index-db.ts for
 * SQLite, index-pg.ts for PostgreSQL) implement it; nothing outside the
 * store writes SQL over the index (test/repo/sql-in-adapters.test.ts).
 * Each query is written once, in SQL that both databases read alike
 * (`$name` parameters in both), with the parts that differ taken from
 * {@link IndexReads.sql}.
 */
import type { SqlDialect } from './dialect.js';

/** An adapter's reads, for the named queries. */
export interface IndexReads {
  /** The SQL fragments of this database. */
  readonly sql: SqlDialect;
  /**
   * Runs one read-only SELECT over `memento` to its end: prepared once per
   * `name` (SQL that never varies under that name), or with `name` null
   * (SQL that varies, such as the access rules' conditions) for this call
   * only. Parameters are `$name` in the SQL and keys of `params`.
   * @returns the rows, as the driver gives them (integers as numbers)
   * @throws the database driver's error
   */
  browse<T>(name: string | null, sql: string, params: Record<string, string | number>): Promise<T[]>;
}
