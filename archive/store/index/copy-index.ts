/**
 * Copying the rows of a SQLite index (index-db.ts) into a PostgreSQL one
 * (index-pg.ts): `memento-archive migrate` (a one-host archive moving to
 * the shared setup) and `reindex` on PostgreSQL (the index rebuilt into a
 * SQLite file, then put in place). One transaction: the target holds all
 * the rows or, after any failure, what it held before.
 *
 * The tables copied are a list ({@link INDEX_TABLES}): a table added to
 * both indexes is copied by adding it there. Row ids are kept as they are
 * (the target's sequence then continues after the highest), so every
 * column that names a row by id (`refers_to`, a revisit's original) stays
 * right without being rewritten, and so does the full-text index's
 * `memento_text` (keyed by the memento's row id): a migrated index can be
 * searched at once, without its texts extracted again from every WARC
 * record. The columns copied are those the two tables have in common
 * (or, for a table read through a query, the query's), each with the
 * PostgreSQL type of the target's column; the target's tables are made by
 * {@link PgIndex.open}.
 */
import { OperatorError } from '#shared/operator-error.js';
import pg from 'pg';
import sqlite3 from 'sqlite3';
import { PgIndex } from './index-pg.js';
import { readAll } from './sqlite-calls.js';

/** A table of the index, as the copy reads it. */
export interface IndexTable {
  name: string;
  /** The columns of a unique key: rows are read in its order, a page at a time. */
  key: readonly string[];
  /** A column filled from a sequence in PostgreSQL (`bigserial`): its sequence is set past the highest value copied. */
  serial?: string;
  /** The source's rows as a query, when they are not the table's own columns (SQLite's FTS5 table keeps its key as `rowid`): the columns it gives, named as the target's, and the subquery. */
  select?: { columns: readonly string[]; from: string };
  /** Rows per statement (default {@link PAGE}): fewer for a table of long texts. */
  page?: number;
}

/** The table of mementos: the one `reindex` rebuilds from the WARC files. */
export const MEMENTO_TABLE: IndexTable = { name: 'memento', key: ['id'], serial: 'id' };

/**
 * The full-text index's texts (text-queries.ts: SQLite's FTS5 table, its
 * key the memento's row id as `rowid`; text-pg.ts: a table keyed by `id`,
 * its `tsvector` made by PostgreSQL from the title and text). A text is at
 * most 200,000 characters, so 100 rows a statement.
 */
export const TEXT_TABLE: IndexTable = {
  name: 'memento_text',
  key: ['id'],
  select: { columns: ['id', 'title', 'body'], from: '(SELECT rowid AS id, title, body FROM memento_text)' },
  page: 100,
};

/**
 * The tables of the index `migrate` copies, in the order they are copied
 * (a table naming another's rows after that one): the mementos, their
 * texts, then the evidence log's entries, nodes and signed tree heads
 * (archive/evidence/).
 */
export const INDEX_TABLES: IndexTable[] = [
  MEMENTO_TABLE,
  TEXT_TABLE,
  { name: 'log_leaf', key: ['archive_id', 'leaf_index'] },
  { name: 'log_node', key: ['archive_id', 'level', 'idx'] },
  { name: 'log_head', key: ['archive_id', 'tree_size'] },
  { name: 'log_checkpoint', key: ['archive_id', 'tree_size'] },
];

/** The copy cannot be made (the target holds rows, a table differs); nothing was changed. */
export class CopyRefusedError extends OperatorError {
  constructor(message: string) {
    super(message);
    this.name = 'CopyRefusedError';
  }
}

/** Rows read from SQLite and sent to PostgreSQL per statement. */
const PAGE = 5000;

/** A row as read: column name → value. */
export type IndexRowValues = Record<string, unknown>;

export interface CopyOptions {
  /** The tables (default {@link INDEX_TABLES}). */
  tables?: readonly IndexTable[];
  /** Changes a row on the way (`migrate` renames `warc_file`); called with the table's name. */
  rewrite?: (table: string, row: IndexRowValues) => void;
  /** Delete the target's rows of the tables first (`reindex`); without it, a target table holding rows is refused. */
  replace?: boolean;
  /** Rows copied so far, of all. */
  progress?: (done: number, total: number) => void;
}

/** Row count per table name (tables the SQLite file lacks count 0). */
export type CopyCounts = Map<string, number>;

/** The target's columns of `table` and their PostgreSQL element types (`int8`, `text`, …). */
async function targetColumns(client: pg.PoolClient | pg.Client, table: string): Promise<Map<string, string>> {
  const { rows } = await client.query<{ column_name: string; udt_name: string }>(
    'SELECT column_name, udt_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1',
    [table],
  );
  return new Map(rows.map((r) => [r.column_name, r.udt_name]));
}

/**
 * What the PostgreSQL index at `pgUrl` holds of `tables` (making them when
 * missing): `undefined` when they are empty, else a phrase such as
 * `the table memento holds 12 row(s)`.
 * @throws PgIndexError when the database cannot be reached
 */
export async function targetHolds(pgUrl: string, tables: readonly IndexTable[] = INDEX_TABLES): Promise<string | undefined> {
  await (await PgIndex.open(pgUrl, { connections: 1 })).close();
  const client = new pg.Client({ connectionString: pgUrl });
  try {
    await client.connect();
    for (const t of tables) {
      const [{ n }] = (await client.query<{ n: string }>(`SELECT count(*) AS n FROM "${t.name}"`)).rows;
      if (Number(n)) return `the table ${t.name} holds ${n} row(s)`;
    }
    return undefined;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Copies the rows of the SQLite index `sqliteFile` into the PostgreSQL
 * database `pgUrl` (module comment), in one transaction, making the
 * target's tables first when missing.
 *
 * @returns the rows copied per table
 * @throws CopyRefusedError when a target table holds rows (without `replace`) or lacks a column of the source; the database's errors (nothing is changed then)
 */
export async function copyIndexToPostgres(sqliteFile: string, pgUrl: string, opts: CopyOptions = {}): Promise<CopyCounts> {
  const tables = opts.tables ?? INDEX_TABLES;
  await (await PgIndex.open(pgUrl, { connections: 1 })).close();
  // Only read, but not opened read-only: such a connection leaves the WAL's -wal and -shm files behind.
  const src = await new Promise<sqlite3.Database>((resolve, reject) => {
    const d = new sqlite3.Database(sqliteFile, sqlite3.OPEN_READWRITE, (err) => (err ? reject(err) : resolve(d)));
  });
  const client = new pg.Client({ connectionString: pgUrl });
  const counts: CopyCounts = new Map();
  try {
    await client.connect();
    await client.query('BEGIN');
    const present = new Set((await readAll<{ name: string }>(src, "SELECT name FROM sqlite_master WHERE type = 'table'", {})).map((r) => r.name));
    let total = 0;
    for (const t of tables) {
      const n = present.has(t.name) ? (await readAll<{ n: number }>(src, `SELECT count(*) AS n FROM "${t.name}"`, {}))[0].n : 0;
      counts.set(t.name, n);
      total += n;
      const [{ n: held }] = (await client.query<{ n: string }>(`SELECT count(*) AS n FROM "${t.name}"`)).rows;
      if (Number(held) && !opts.replace)
        throw new CopyRefusedError(`the target's table ${t.name} already holds ${held} row(s): the copy goes into an empty index only`);
    }
    // Tables naming other tables' rows are emptied first.
    if (opts.replace) for (const t of [...tables].reverse()) await client.query(`DELETE FROM "${t.name}"`);
    let done = 0;
    for (const t of tables) {
      if (!present.has(t.name)) continue;
      const types = await targetColumns(client, t.name);
      const cols = t.select ? [...t.select.columns] : (await readAll<{ name: string }>(src, `PRAGMA table_info("${t.name}")`, {})).map((c) => c.name);
      const missing = cols.filter((c) => !types.has(c));
      if (missing.length) throw new CopyRefusedError(`the target's table ${t.name} has no column ${missing.join(', ')}: is it an index of an older version?`);
      const insert = `INSERT INTO "${t.name}" (${cols.map((c) => `"${c}"`).join(', ')}) SELECT * FROM unnest(${cols.map((c, i) => `$${i + 1}::${types.get(c)}[]`).join(', ')})`;
      const key = t.key.map((c) => `"${c}"`).join(', ');
      const next = `WHERE (${key}) > (${t.key.map((_, i) => `$k${i}`).join(', ')})`;
      const from = t.select?.from ?? `"${t.name}"`;
      const page = t.page ?? PAGE;
      for (let after: Record<string, unknown> | null = null; ;) {
        const rows: IndexRowValues[] = await readAll<IndexRowValues>(
          src,
          `SELECT * FROM ${from} ${after ? next : ''} ORDER BY ${key} LIMIT ${page}`,
          after ?? {},
        );
        if (!rows.length) break;
        if (opts.rewrite) for (const r of rows) opts.rewrite(t.name, r);
        await client.query(
          insert,
          cols.map((c) => rows.map((r) => r[c])),
        );
        done += rows.length;
        opts.progress?.(done, total);
        const last: IndexRowValues = rows[rows.length - 1];
        after = Object.fromEntries(t.key.map((c, i) => [`$k${i}`, last[c]]));
        if (rows.length < page) break;
      }
      if (t.serial)
        await client.query(
          `SELECT setval(pg_get_serial_sequence($1, $2), COALESCE((SELECT max("${t.serial}") FROM "${t.name}"), 1), (SELECT max("${t.serial}") FROM "${t.name}") IS NOT NULL)`,
          [t.name, t.serial],
        );
    }
    await client.query('COMMIT');
    return counts;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    await client.end().catch(() => undefined);
    await new Promise<void>((resolve) => src.close(() => resolve()));
  }
}
