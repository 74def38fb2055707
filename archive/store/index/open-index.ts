/**
 * The index of mementos the config names (memento-index.ts): the
 * PostgreSQL database of `storage.index` (index-pg.ts), else the SQLite
 * file `index.sqlite3` in the data folder (index-db.ts). The daemon and
 * the upkeep commands open it here, so that each command works on either.
 */
import path from 'node:path';
import type { ArchiveConfig } from '../../config.js';
import { IndexDb } from './index-db.js';
import type { MementoIndex } from './memento-index.js';

/** The SQLite index file of a data folder. */
export function sqliteIndexFile(dataDir: string): string {
  return path.join(dataDir, 'index.sqlite3');
}

/**
 * Opens the index `config` names. The PostgreSQL client is loaded only
 * when the index is there; that index has no read cache (other daemons may
 * write to it, and the cache hears only of this one's writes).
 *
 * @param opts.cacheBytes the SQLite index's read cache (default none)
 * @param opts.anyUrlkeys SQLite: open an index whatever rules computed its urlkeys (index-db.ts)
 * @param opts.writers PostgreSQL, the daemon only: take the writers' lock (index-pg.ts `WRITERS_LOCK`), shared by `replicas` (WARC files in a bucket), `alone` otherwise; `upkeep` for a command that rewrites the index while no daemon runs on it
 * @throws index-pg.ts `PgIndexError` when the database cannot be reached; index-db.ts `StaleIndexError`; a file SQLite cannot open
 */
export async function openIndex(
  config: ArchiveConfig,
  opts: { cacheBytes?: number; anyUrlkeys?: boolean; writers?: 'alone' | 'replicas' | 'upkeep' } = {},
): Promise<MementoIndex> {
  if (config.indexPostgres !== undefined) return (await import('./index-pg.js')).PgIndex.open(config.indexPostgres, { writers: opts.writers });
  return IndexDb.open(sqliteIndexFile(config.dataDir), opts);
}
