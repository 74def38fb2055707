/**
 * `memento-archive cdxj [--config FILE] [--archive ID]`: the index (SQLite
 * or PostgreSQL) as CDXJ on stdout (archive/store/upkeep/cdxj.ts), for pywb and OutbackCDX. It only
 * reads, so it runs beside the daemon (as `verify` does).
 */
import { inContext } from '#shared/operator-error.js';
import { nowSeconds } from '../read/access-rules.js';
import { VisibleIndex } from '../read/visible-index.js';
import type { ArchiveConfig } from '../config.js';
import { isLocal } from '../spans.js';
import { writeCdxj } from '../store/upkeep/cdxj.js';
import type { MementoIndex } from '../store/index/memento-index.js';
import { openIndex } from '../store/index/open-index.js';
import { say } from './terminal.js';

/**
 * Writes the CDXJ of every memento (of archive `archive` when given) that
 * the access rules (`access:` of the config, archive/read/access-rules.ts) show at
 * this moment to stdout, sorted, then one summary line on stderr (`cdxj: N
 * lines`, and how many hidden mementos were left out). Blocked, excluded
 * and embargoed mementos are not exported: a tool replaying the export
 * would show them.
 *
 * @returns the exit code: 0; 2 when `archive` names no local archive of
 *   the config (one line on stderr, nothing on stdout). A reader that
 *   closes stdout early (`| head`) ends it quietly.
 * @throws OperatorError (exit status 1) when the index cannot be read
 */
export async function runCdxj(config: ArchiveConfig, opts: { archive?: string } = {}): Promise<number> {
  if (opts.archive !== undefined && !config.archives.some((a) => a.id === opts.archive && isLocal(a))) {
    say(`no local archive "${opts.archive}" in the config (${config.archives.map((a) => a.id).join(', ')})`);
    return 2;
  }
  let index: MementoIndex;
  try {
    index = await openIndex(config);
  } catch (err) {
    // The SQLite index is named by its folder; a PostgreSQL index's error names its database itself.
    const where = config.indexPostgres === undefined ? `cannot open the index in ${config.dataDir}: ` : '';
    throw inContext(err, { before: where, otherwise: (e) => `cannot open the index in ${config.dataDir}: ${e.message}` });
  }
  let closed = false;
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') closed = true;
  });
  try {
    const visible = await VisibleIndex.open(index, config.access, config.archives, false);
    const now = nowSeconds();
    let hidden = 0;
    // What the access rules hide now is not exported: an export feeds other tools' replay, which knows nothing of the rules.
    const shown = async function* () {
      for await (const row of index.allMementos(opts.archive)) {
        if (visible.shows(row.urlkey, row.datetime, now)) yield row;
        else hidden++;
      }
    };
    const n = await writeCdxj(shown(), process.stdout);
    process.stderr.write(
      `cdxj: ${n} lines${opts.archive === undefined ? '' : ` (archive ${opts.archive})`}${hidden ? `; ${hidden} mementos the access rules hide left out` : ''}\n`,
    );
    return 0;
  } catch (err) {
    if (closed || (err as NodeJS.ErrnoException).code === 'EPIPE') return 0;
    throw err;
  } finally {
    await index.close();
  }
}
