/**
 * `memento-archive reindex [--config FILE]`: a new index.sqlite3 from the
 * WARC files alone (the data folder's, or the objects of `storage.warcs`) (archive/store/maintenance.ts `reindex`), under the data
 * folder's lock: the daemon must be stopped first.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { ArchiveConfig } from '../config.js';
import { IndexDb } from '../store/index-db.js';
import { DataDirBusyError, DataDirLock } from '../store/lock.js';
import { reindex } from '../store/maintenance.js';
import { openWarcStore } from '../store/open-warcs.js';
import { progressBar, say } from './terminal.js';

/**
 * Rebuilds the index; prints each damaged or partial record skipped
 * (`skipped: …`) and a summary line (with the old index's row count) on
 * stdout, a progress bar on stderr when it is a terminal.
 *
 * @returns the exit code: 0 done, 1 the data folder is in use (one line on stderr)
 */
export async function runReindex(config: ArchiveConfig): Promise<number> {
  let lock: DataDirLock;
  try {
    lock = await DataDirLock.acquire(config.dataDir, 'reindex');
  } catch (err) {
    if (!(err instanceof DataDirBusyError)) throw err;
    say(`${err.message}; stop it before reindex`);
    return 1;
  }
  const bar = progressBar('reindex');
  try {
    const indexFile = path.join(config.dataDir, 'index.sqlite3');
    let before = 0;
    if (existsSync(indexFile)) {
      const index = await IndexDb.open(indexFile, { anyUrlkeys: true });
      before = await index.count();
      await index.close();
    }
    const warcs = await openWarcStore(config);
    const r = await reindex(indexFile, warcs, { progress: bar.update }).finally(() => warcs.close());
    bar.stop();
    for (const s of r.skipped) process.stdout.write(`skipped: ${s}\n`);
    process.stdout.write(`reindex: ${r.rows} mementos from ${r.records} WARC records in ${r.files} files (the old index had ${before} rows)\n`);
    return 0;
  } finally {
    bar.stop(false);
    await lock.release();
  }
}
