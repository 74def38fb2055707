/**
 * `memento-archive reindex [--config FILE]`: the index rebuilt from the
 * WARC files alone (the data folder's, or the objects of `storage.warcs`)
 * (archive/store/upkeep/maintenance.ts `reindex`): a new index.sqlite3, or the
 * rows of the PostgreSQL index of `storage.index` replaced in one
 * transaction. Under the data folder's lock: the daemon (every daemon on
 * that database) must be stopped first.
 */
import { existsSync } from 'node:fs';
import type { ArchiveConfig } from '../config.js';
import { inContext } from '#shared/operator-error.js';
import { DataDirLock } from '../store/lock.js';
import type { MementoIndex } from '../store/index/memento-index.js';
import { openIndex, sqliteIndexFile } from '../store/index/open-index.js';
import { reindex } from '../store/upkeep/maintenance.js';
import { openWarcStore } from '../store/warcs/open-warcs.js';
import { progressBar } from './terminal.js';

/**
 * Rebuilds the index; prints each damaged or partial record skipped
 * (`skipped: …`) and a summary line (with the old index's row count) on
 * stdout, a progress bar on stderr when it is a terminal.
 *
 * @returns the exit code: 0 done
 * @throws OperatorError (exit status 1) when the data folder is in use or the PostgreSQL index cannot be reached
 */
export async function runReindex(config: ArchiveConfig): Promise<number> {
  let lock: DataDirLock;
  try {
    lock = await DataDirLock.acquire(config.dataDir, 'reindex');
  } catch (err) {
    throw inContext(err, { after: '; stop it before reindex' });
  }
  const bar = progressBar('reindex');
  const rowBar = progressBar('reindex rows', 'rows');
  try {
    const indexFile = sqliteIndexFile(config.dataDir);
    let before = 0;
    // On PostgreSQL the index stays open, holding the writers' lock: no daemon starts on it while it is rebuilt.
    let held: MementoIndex | undefined;
    if (config.indexPostgres !== undefined || existsSync(indexFile)) {
      let index;
      try {
        index = await openIndex(config, { anyUrlkeys: true, writers: 'upkeep' });
      } catch (err) {
        throw inContext(err, { after: '; nothing was changed' });
      }
      before = await index.count();
      if (config.indexPostgres === undefined) await index.close();
      else held = index;
    }
    const warcs = await openWarcStore(config);
    const r = await reindex(indexFile, warcs, {
      progress: bar.update,
      postgres: config.indexPostgres,
      rowProgress: (done, total) => {
        bar.stop();
        rowBar.update(done, total);
      },
    }).finally(() => Promise.all([warcs.close(), held?.close()]));
    bar.stop();
    rowBar.stop();
    for (const s of r.skipped) process.stdout.write(`skipped: ${s}\n`);
    const unlogged = r.unlogged ? `; ${r.unlogged} record(s) without an evidence log entry left out (not published; memento-archive verify lists them)` : '';
    process.stdout.write(`reindex: ${r.rows} mementos from ${r.records} WARC records in ${r.files} files (the old index had ${before} rows)${unlogged}\n`);
    return 0;
  } finally {
    bar.stop(false);
    rowBar.stop(false);
    await lock.release();
  }
}
