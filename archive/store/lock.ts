/**
 * One writer per data folder. The archive daemon, `reindex`, `purge` and
 * `import` (when no daemon runs) hold an exclusive lock on `<data_dir>/data.lock` for as long as they
 * run (and `memento-archive witness` on its state folder): a second one
 * fails at once, naming the folder and the holder's pid.
 * `verify` only reads and runs beside the daemon without it.
 *
 * The lock is SQLite's (an exclusive lock in `locking_mode=EXCLUSIVE`,
 * POSIX advisory locks underneath), so the operating system releases it
 * when the holder exits, `kill -9` included: a crash never leaves a stale
 * lock behind. Who holds it is written beside it in `daemon.pid`
 * (`<pid> <what>`), which is only informative.
 */
import { OperatorError } from '#shared/operator-error.js';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import sqlite3 from 'sqlite3';
import { ownerOnly } from './index/index-db.js';

/** The folder is held by another process; `message` names the folder and the holder. */
export class DataDirBusyError extends OperatorError {
  constructor(
    message: string,
    readonly holderPid: number | null,
  ) {
    super(message);
    this.name = 'DataDirBusyError';
  }
}

/** What holds a data folder, for the message another process gets. */
export type LockHolder = 'daemon' | 'reindex' | 'purge' | 'import' | 'migrate' | 'witness';

const HOLDER_WORDS: Record<LockHolder, string> = {
  daemon: 'a daemon',
  reindex: 'memento-archive reindex',
  purge: 'memento-archive purge',
  import: 'memento-archive import',
  migrate: 'memento-archive migrate',
  witness: 'memento-archive witness',
};

function run(db: sqlite3.Database, sql: string): Promise<void> {
  return new Promise((resolve, reject) => db.run(sql, (err) => (err ? reject(err) : resolve())));
}

/** The holder of a data folder as `daemon.pid` names it, or `null`. */
export async function lockHolder(dataDir: string): Promise<{ pid: number; what: LockHolder } | null> {
  const text = await readFile(path.join(dataDir, 'daemon.pid'), 'utf8').catch(() => '');
  const [pid, what] = text.trim().split(/\s+/);
  const n = Number(pid);
  if (!Number.isSafeInteger(n) || n <= 0) return null;
  return { pid: n, what: what in HOLDER_WORDS ? (what as LockHolder) : 'daemon' };
}

/** An exclusive hold on a data folder; {@link release} it when done. */
export class DataDirLock {
  private constructor(
    private readonly db: sqlite3.Database,
    readonly dataDir: string,
  ) {}

  /**
   * Takes the data folder's lock (the folder must exist).
   *
   * @param what who takes it (named to a process that finds the folder busy)
   * @throws DataDirBusyError when another process (or another store in this one) holds it
   */
  static async acquire(dataDir: string, what: LockHolder): Promise<DataDirLock> {
    const file = path.join(dataDir, 'data.lock');
    await ownerOnly(file);
    const db = await new Promise<sqlite3.Database>((resolve, reject) => {
      const d = new sqlite3.Database(file, (err) => (err ? reject(err) : resolve(d)));
    });
    try {
      await run(db, 'PRAGMA locking_mode = EXCLUSIVE');
      await run(db, 'BEGIN EXCLUSIVE');
      await run(db, 'CREATE TABLE IF NOT EXISTS holder (pid INTEGER)');
      await run(db, 'COMMIT');
    } catch (err) {
      await new Promise<void>((resolve) => db.close(() => resolve()));
      if ((err as { code?: string }).code !== 'SQLITE_BUSY') throw err;
      const holder = await lockHolder(dataDir);
      const who = holder ? `${HOLDER_WORDS[holder.what]} (pid ${holder.pid})` : 'another process';
      throw new DataDirBusyError(`${who} is running on ${dataDir}`, holder?.pid ?? null);
    }
    await writeFile(path.join(dataDir, 'daemon.pid'), `${process.pid} ${what}\n`, { mode: 0o600 });
    return new DataDirLock(db, dataDir);
  }

  /** Lets go of the folder (and removes `daemon.pid` when it is this process's). Idempotent. */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    const holder = await lockHolder(this.dataDir);
    if (holder?.pid === process.pid) await rm(path.join(this.dataDir, 'daemon.pid'), { force: true });
    await new Promise<void>((resolve) => this.db.close(() => resolve()));
  }

  private released = false;
}
