/**
 * `memento-archive purge`: its options checked, the data folder's lock taken (refused while a daemon runs; a
 * `--dry-run` only reads and runs beside it, saying so), the
 * erasure itself (archive/store/upkeep/purge.ts), and what it prints: one line per
 * capture erased (a revisit erased with its original says so) and a summary.
 *
 *   memento-archive purge [--config F] --url URL | --prefix URL* [--before DATE] [--after DATE] [--dry-run]
 */
import { existsSync } from 'node:fs';
import { toTimestamp14 } from '#shared/http-date.js';
import { inContext, OperatorError } from '#shared/operator-error.js';
import { urlPattern } from '../read/access-rules.js';
import { type ArchiveConfig, parseInstant } from '../config.js';
import { DataDirLock } from '../store/lock.js';
import { reindex } from '../store/upkeep/maintenance.js';
import { openIndex, sqliteIndexFile } from '../store/index/open-index.js';
import { openWarcStore } from '../store/warcs/open-warcs.js';
import { purge, type PurgeReport, type PurgeSelection, type PurgeTarget } from '../store/upkeep/purge.js';
import type { WarcStore } from '../store/warcs/warc-store.js';
import { progressBar, say } from './terminal.js';

/** The options of `purge` as parsed from the command line. */
export interface PurgeOptions {
  url?: string;
  prefix?: string;
  before?: string;
  after?: string;
  'dry-run'?: boolean;
}

/**
 * The selection the options name.
 *
 * @returns the selection, or the one-line reason it cannot be made
 */
export function purgeSelection(o: PurgeOptions): PurgeSelection | string {
  if ((o.url === undefined) === (o.prefix === undefined)) return 'give either --url URL or --prefix URL* (one of them)';
  if (o.url !== undefined && o.url.endsWith('*')) return `--url takes one URL; for every URL under ${o.url} use --prefix`;
  const text = o.url ?? (o.prefix!.endsWith('*') ? o.prefix! : o.prefix + '*');
  const sel: Partial<PurgeSelection> = {};
  try {
    sel.pattern = urlPattern(text);
  } catch (err) {
    if (err instanceof OperatorError) return `${o.url !== undefined ? '--url' : '--prefix'} ${JSON.stringify(text)}: ${err.message}`;
    throw err;
  }
  for (const k of ['before', 'after'] as const) {
    if (o[k] === undefined) continue;
    const t = parseInstant(o[k]);
    if (t === undefined) return `--${k} must be a date like 2026-01-01T00:00:00Z or 14 digits, not ${JSON.stringify(o[k])}`;
    sel[k] = t;
  }
  if (sel.before !== undefined && sel.after !== undefined && sel.after >= sel.before) return '--after must be earlier than --before';
  return sel as PurgeSelection;
}

/** What a purge of `config`'s archive works on: its data folder, WARC store `warcs`, the index the config names, and how to rebuild it. */
export function purgeTarget(config: ArchiveConfig, warcs: WarcStore): PurgeTarget {
  return {
    dataDir: config.dataDir,
    warcs,
    // The purge itself (never a dry run): no daemon may write into a shared index meanwhile.
    openIndex: () => openIndex(config, { writers: 'upkeep' }),
    rebuild: async () => void (await reindex(sqliteIndexFile(config.dataDir), warcs, { postgres: config.indexPostgres })),
  };
}

/** The summary line of a report. */
function summary(r: PurgeReport, dryRun: boolean): string {
  const files = r.rewritten.length + r.removed.length;
  const what = `${r.captures.length} capture(s) (${r.records} WARC record(s)${dryRun ? '' : `, ${r.rows} index row(s)`})`;
  const where = `${files} WARC file(s) (${r.rewritten.length} rewritten, ${r.removed.length} removed): ${r.bytesBefore} → ${r.bytesAfter} bytes`;
  return dryRun ? `purge (dry run): would erase ${what} from ${where}; nothing was changed` : `purge: erased ${what} from ${where}`;
}

/**
 * `memento-archive purge`: erases the selected captures for good. Prints
 * one line per capture erased (or that would be) and a summary on stdout,
 * refusals on stderr, a progress bar on stderr when it is a terminal.
 *
 * The index is the one the config names (SQLite or PostgreSQL), the WARC
 * files those of the folder or the bucket (purge-objects.ts).
 *
 * @returns the exit status: 0 done (or nothing matched; a dry run also
 *   while a daemon runs), 1 no data folder, 2 bad options
 * @throws OperatorError (exit status 1, its line said by the command line)
 *   when the data folder is in use, a WARC file is damaged, or the
 *   PostgreSQL index cannot be reached
 */
export async function runPurge(config: ArchiveConfig, o: PurgeOptions): Promise<number> {
  const out = (line: string) => process.stdout.write(line + '\n');
  const sel = purgeSelection(o);
  if (typeof sel === 'string') {
    say(`purge: ${sel}`);
    return 2;
  }
  if (!existsSync(config.dataDir)) {
    say(`purge: ${config.dataDir}: no such data folder`);
    return 1;
  }
  const dryRun = o['dry-run'] === true;
  let lock: DataDirLock | undefined;
  try {
    lock = await DataDirLock.acquire(config.dataDir, 'purge');
  } catch (err) {
    // The folder is busy (the lock's one error an operator can act on).
    if (!dryRun || !(err instanceof OperatorError)) throw inContext(err, { after: '; stop it before purge' });
    // A dry run changes nothing: it reads beside the daemon (the purge itself will need it stopped).
    say(`${err.message}; a dry run only reads (stop it before the purge itself)`);
  }
  const bar = progressBar('purge');
  const warcs = await openWarcStore(config);
  const target = purgeTarget(config, warcs);
  try {
    const r = await purge(target, sel, { dryRun, daemonRuns: !lock, log: out, progress: bar.update });
    bar.stop();
    for (const c of r.captures) {
      const of = c.revisitOf ? `, a revisit of ${toTimestamp14(c.revisitOf.datetime)} ${c.revisitOf.uriR}` : '';
      out(`${dryRun ? 'would erase' : 'erased'}: ${toTimestamp14(c.datetime)} ${c.uriR} (${c.file}${of})`);
    }
    out(summary(r, dryRun));
    // A purge is visible in the evidence log: one purge entry per capture entry removed (docs/evidence.md).
    if (!dryRun) out(`purge: ${r.logEntries} purge entr${r.logEntries === 1 ? 'y' : 'ies'} appended to the evidence log`);
    return 0;
  } catch (err) {
    bar.stop();
    throw inContext(err, { before: 'purge: ' });
  } finally {
    await warcs.close();
    await lock?.release();
  }
}
