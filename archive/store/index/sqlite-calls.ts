/**
 * The asynchronous `sqlite3` driver's callbacks as promises: the few calls
 * the index and its upkeep make.
 */
import sqlite3 from 'sqlite3';

/** Runs `sql` on `db`, or a prepared statement with `params`. */
export function run(db: sqlite3.Database | sqlite3.Statement, sql: string | null, params: object = {}): Promise<void> {
  return new Promise((resolve, reject) => {
    const cb = (err: Error | null) => (err ? reject(err) : resolve());
    if (db instanceof sqlite3.Statement) db.run(params, cb);
    else (db as sqlite3.Database).run(sql as string, params, cb);
  });
}

/** Every row of a prepared statement. */
export function all<T>(stmt: sqlite3.Statement, params: object): Promise<T[]> {
  return new Promise((resolve, reject) => stmt.all(params, (err: Error | null, rows: T[]) => (err ? reject(err) : resolve(rows))));
}

/** The rows of a one-off query (SQL text, not a prepared statement). */
export function readAll<T>(db: sqlite3.Database, sql: string, params: object): Promise<T[]> {
  return new Promise((resolve, reject) => db.all(sql, params, (err: Error | null, r: T[]) => (err ? reject(err) : resolve(r))));
}

/**
 * The first row of a read-connection query. Not `get`: sqlite3's `get` leaves
 * the statement mid-result, which keeps a read transaction (an old WAL
 * snapshot) open on that connection; `all` runs the statement to its end.
 */
export async function first<T>(stmt: sqlite3.Statement, params: object): Promise<T | undefined> {
  return (await all<T>(stmt, params))[0];
}

/** One row of a prepared statement (on the write connection). */
export function get<T>(stmt: sqlite3.Statement, params: object): Promise<T | undefined> {
  // reset first when there is nothing to bind (binding resets): `get` leaves a statement mid-result.
  if (Object.keys(params).length === 0) stmt.reset();
  return new Promise((resolve, reject) => stmt.get(params, (err: Error | null, row: T) => (err ? reject(err) : resolve(row))));
}

/** Runs `sql` with positional `params` on `db`. @returns the rows it changed (sqlite3's `changes`) */
export function runChanges(db: sqlite3.Database, sql: string, params: unknown[] = []): Promise<number> {
  return new Promise((resolve, reject) =>
    db.run(sql, params, function (this: sqlite3.RunResult, err: Error | null) {
      if (err) reject(err);
      else resolve(this.changes);
    }),
  );
}

/** Statements prepared once per key on one connection, kept until {@link finalize}. */
export class Prepared {
  private readonly stmts = new Map<string, sqlite3.Statement>();

  constructor(private readonly db: sqlite3.Database) {}

  /** The statement kept under `key`, prepared from `sql()` the first time. */
  get(key: string, sql: () => string): sqlite3.Statement {
    let st = this.stmts.get(key);
    if (!st) {
      st = this.db.prepare(sql());
      this.stmts.set(key, st);
    }
    return st;
  }

  /** Finalizes every statement kept (before the connection closes). */
  async finalize(): Promise<void> {
    for (const s of this.stmts.values()) await new Promise<void>((r) => s.finalize(() => r()));
    this.stmts.clear();
  }
}
