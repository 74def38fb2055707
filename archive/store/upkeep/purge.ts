/**
 * `memento-archive purge`: erasing captures for good (a takedown that must
 * not be reversible, e.g. a GDPR erasure request). Every WARC file is read
 * (a capture's records are found by their own WARC-Target-URI and
 * WARC-Date, so a same-second capture the index no longer names goes too);
 * a file holding a selected record is written again without it — every
 * other record copied byte for byte, so the mementos left serve exactly
 * what they served — to a temp file, fsynced and renamed over the old one;
 * the index rows of that file are moved to the new offsets and the rows of
 * the erased mementos deleted, and the index is compacted (SQLite's free
 * pages and its WAL, PostgreSQL's dead rows, would otherwise keep the
 * deleted rows' bytes). The index is either one, changed through
 * memento-index.ts (`rewriteRows`, `compact`); WARC files in a bucket are
 * replaced object by object (purge-objects.ts) instead of in place.
 *
 * What goes with a selected record: every record that names it in
 * `WARC-Concurrent-To` (its request record) or `WARC-Refers-To` (a revisit
 * of it in another tool's terms). A `revisit` record whose original is
 * selected — its `WARC-Refers-To-Target-URI` and `WARC-Refers-To-Date`
 * are, which is how this archive's revisit records name the response
 * record holding their payload — goes too, with its request record, even
 * when the revisit itself is outside the URL or dates given: without its
 * original it has no body. A selected revisit leaves its original. A file
 * left with nothing but its `warcinfo` record is removed.
 *
 * The caller holds the data folder's lock (lock.ts), except for a dry run
 * beside a running daemon (it only reads: a record the daemon is still
 * appending at the end of an archive's newest file is left out of its
 * report). While files are being
 * replaced, `<data_dir>/purge.pending` exists: if the process is stopped
 * then, the index may point at old offsets, so the daemon will not start
 * ({@link PurgeInterruptedError}) until `purge` runs again or `reindex`
 * rebuilds the index (both remove the marker).
 */
import { OperatorError } from '#shared/operator-error.js';
import { type FileHandle, open, rename, rm, stat } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { exactUrlkey } from '#shared/uri.js';
import { matchesPattern } from '../../read/access-rules.js';
import { type Log, type Progress, PURGE_MARKER } from './maintenance.js';
import type { MementoIndex } from '../index/memento-index.js';
import {
  type FilePlan,
  type PlannedRecord,
  type PurgedCapture,
  type PurgeReport,
  type PurgeSelection,
  count,
  rowChange,
  selectedRowIds,
} from './purge-plan.js';

export type { FilePlan, PlannedRecord, PurgedCapture, PurgeReport, PurgeSelection };
import type { S3WarcStore } from '../warcs/s3-warcs.js';
import type { FolderWarcStore, WarcStore } from '../warcs/warc-store.js';

export { PURGE_MARKER };

/** The data folder has the marker of a purge that did not finish; `message` says what to do. */
export class PurgeInterruptedError extends OperatorError {
  constructor(dataDir: string) {
    super(`${path.join(dataDir, PURGE_MARKER)}: a purge did not finish, the index may not match the WARC files; run memento-archive purge again, or reindex`);
    this.name = 'PurgeInterruptedError';
  }
}

/** A WARC file cannot be read whole: purge changes nothing; `message` says which and why. */
export class PurgeRefusedError extends OperatorError {
  constructor(message: string) {
    super(message);
    this.name = 'PurgeRefusedError';
  }
}

/** @throws PurgeInterruptedError when `dataDir` has the marker of an unfinished purge */
export function checkNoPurgePending(dataDir: string): void {
  if (existsSync(path.join(dataDir, PURGE_MARKER))) throw new PurgeInterruptedError(dataDir);
}

/** A URI field's value without the `<…>` WARC 1.0 writers put around it. */
const bareUri = (v: string | undefined) => v?.trim().replace(/^<(.*)>$/, '$1');

/** True when a record's target URI and date are selected. */
function selected(sel: PurgeSelection, target: string | undefined, date: string | undefined): boolean {
  if (!target || !date) return false;
  let key: string;
  try {
    key = exactUrlkey(target);
  } catch {
    return false;
  }
  const t = Math.floor(Date.parse(date) / 1000);
  if (Number.isNaN(t) || !matchesPattern(sel.pattern, key)) return false;
  return (sel.before === undefined || t < sel.before) && (sel.after === undefined || t >= sel.after);
}

/**
 * Reads one WARC file and decides which records go (module comment): the
 * selected ones, revisits of a selected original, and those naming an
 * erased record (`erasedIds`, added to as it goes: this archive writes a
 * record's request record after it).
 *
 * @throws Error on a damaged record: a file that cannot be read whole is not rewritten (run verify)
 */
async function planFile(
  warcs: WarcStore,
  file: string,
  sel: PurgeSelection,
  erasedIds: Set<string>,
  report: PurgeReport,
  appending: boolean,
): Promise<PlannedRecord[]> {
  const out: PlannedRecord[] = [];
  for await (const item of warcs.scan(file)) {
    // A partial record where a running daemon appends: a write in progress, not damage.
    if (item.kind === 'partial' && appending) break;
    if (item.kind !== 'record')
      throw new PurgeRefusedError(
        `${file}: ${item.kind} record at offset ${item.offset}: ${item.reason}; nothing was changed (start the daemon once, so that crash recovery repairs a cut tail, or run memento-archive verify)`,
      );
    const r = item.record;
    const h = r.headers;
    const refs = [h.get('warc-concurrent-to'), h.get('warc-refers-to')];
    const own = r.type !== 'warcinfo' && selected(sel, h.get('warc-target-uri'), h.get('warc-date'));
    const original = { uriR: bareUri(h.get('warc-refers-to-target-uri')), date: h.get('warc-refers-to-date') };
    const ofErased = !own && r.type === 'revisit' && selected(sel, original.uriR, original.date);
    const drop = own || ofErased || (r.type !== 'warcinfo' && refs.some((x) => x !== undefined && erasedIds.has(x)));
    if (drop) {
      const id = h.get('warc-record-id');
      if (id) erasedIds.add(id);
      if (r.type === 'response' || r.type === 'revisit' || r.type === 'resource') {
        const capture: PurgedCapture = { file, uriR: h.get('warc-target-uri') ?? '', datetime: Math.floor(Date.parse(h.get('warc-date') ?? '') / 1000) };
        if (ofErased) capture.revisitOf = { uriR: original.uriR!, datetime: Math.floor(Date.parse(original.date!) / 1000) };
        report.captures.push(capture);
      }
    }
    out.push({ offset: r.offset, length: r.length, type: r.type, drop });
  }
  return out;
}

/** fsyncs a folder, so that a rename or removal in it is durable. */
async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  await fh.sync().finally(() => fh.close());
}

/** Copies the kept records of `abs` into `tmp` byte for byte, fsynced. @returns new offset by old offset */
async function copyKept(abs: string, tmp: string, plan: PlannedRecord[]): Promise<Map<number, number>> {
  const moved = new Map<number, number>();
  const src = await open(abs, 'r');
  let dst: FileHandle | undefined;
  try {
    dst = await open(tmp, 'w', 0o600);
    let pos = 0;
    const buf = Buffer.allocUnsafe(1024 * 1024);
    for (const r of plan) {
      if (r.drop) continue;
      moved.set(r.offset, pos);
      for (let done = 0; done < r.length;) {
        const { bytesRead } = await src.read(buf, 0, Math.min(buf.length, r.length - done), r.offset + done);
        if (!bytesRead) throw new Error(`${abs}: ends inside the record at offset ${r.offset}`);
        let w = 0;
        while (w < bytesRead) w += (await dst.write(buf, w, bytesRead - w, pos + w)).bytesWritten;
        done += bytesRead;
        pos += bytesRead;
      }
    }
    await dst.sync();
  } finally {
    await dst?.close();
    await src.close();
  }
  return moved;
}

/** Reads every WARC file and plans what goes: the files with records to erase. @throws PurgeRefusedError on a damaged file */
async function planAll(warcs: WarcStore, sel: PurgeSelection, report: PurgeReport, progress?: Progress, daemonRuns = false): Promise<FilePlan[]> {
  const byArchive = [...(await warcs.list()).values()];
  const files = byArchive.flat();
  const newest = new Set(byArchive.filter((f) => f.length).map((f) => f[f.length - 1].file));
  const total = files.reduce((n, f) => n + f.size, 0);
  const erasedIds = new Set<string>();
  const plans: FilePlan[] = [];
  let done = 0;
  for (const { file, size } of files) {
    const records = await planFile(warcs, file, sel, erasedIds, report, daemonRuns && newest.has(file));
    done += size;
    progress?.(done, total);
    const drops = records.filter((r) => r.drop).length;
    if (!drops) continue;
    const kept = records.filter((r) => !r.drop);
    const empty = kept.every((r) => r.type === 'warcinfo');
    const after = empty ? 0 : kept.reduce((n, r) => n + r.length, 0);
    report.records += drops;
    report.bytesBefore += size;
    report.bytesAfter += after;
    (empty ? report.removed : report.rewritten).push(file);
    plans.push({ file, size, records, empty });
  }
  return plans;
}

/** Creates the marker of a purge under way (durably), unless it exists. */
async function setMarker(dataDir: string): Promise<void> {
  const marker = path.join(dataDir, PURGE_MARKER);
  if (existsSync(marker)) return;
  const fh = await open(marker, 'w', 0o600);
  await fh.sync().finally(() => fh.close());
  await syncDir(dataDir);
}

/** Where a purge works: the data folder (its marker), the WARC files, and the index (opened once the files are read). */
export interface PurgeTarget {
  dataDir: string;
  warcs: WarcStore;
  /** Opens the index the config names (open-index.ts). */
  openIndex: () => Promise<MementoIndex>;
  /** Rebuilds the index from the WARC files (maintenance.ts `reindex`): a purge that did not finish is followed by one. */
  rebuild: () => Promise<void>;
}

/** The files of `plans` written again without their erased records (in place, each under the marker), the index following file by file. */
async function purgeFolder(dir: string, dataDir: string, index: MementoIndex, plans: FilePlan[], report: PurgeReport, log: Log): Promise<void> {
  for (const { file, size, records, empty } of plans) {
    const abs = path.join(dir, file);
    await setMarker(dataDir);
    let moved = new Map<number, number>();
    if (empty) await rm(abs);
    else {
      moved = await copyKept(abs, abs + '.purge-tmp', records);
      await rename(abs + '.purge-tmp', abs);
    }
    await syncDir(path.dirname(abs));
    count(report, await index.rewriteRows(await rowChange(index, file, file, records, moved, empty, report.at)));
    const erased = records.filter((r) => r.drop).length;
    const after = empty ? 0 : (await stat(abs)).size;
    log(`purge: ${file}: ${erased} record(s) erased, ${size} → ${after} bytes${empty ? ' (nothing but warcinfo left: removed)' : ''}`);
  }
}

/**
 * Erases the selected captures from the WARC files (a folder, or a
 * bucket: purge-objects.ts) and from the index (SQLite or PostgreSQL,
 * through memento-index.ts) (see the module comment): every file is read
 * first, and nothing is changed when one is damaged. The caller holds the
 * data folder's lock.
 *
 * @param opts.dryRun read and report only; nothing is written
 * @param opts.daemonRuns (a dry run only) a daemon holds the folder and may
 *   be appending: a partial record at the end of an archive's newest WARC
 *   file is not reported, rather than refused as damage
 * @param opts.log one line per step (a previous unfinished purge, each file rewritten)
 * @param opts.progress bytes of WARC files read so far, of all
 * @throws PurgeRefusedError when a WARC file cannot be read whole (nothing changed)
 */
export async function purge(
  target: PurgeTarget,
  sel: PurgeSelection,
  opts: { dryRun?: boolean; daemonRuns?: boolean; log?: Log; progress?: Progress } = {},
): Promise<PurgeReport> {
  if (opts.daemonRuns && !opts.dryRun) throw new Error('purge: only a dry run may run beside a daemon');
  const log = opts.log ?? (() => undefined);
  const { dataDir, warcs } = target;
  const marker = path.join(dataDir, PURGE_MARKER);
  const report: PurgeReport = {
    captures: [],
    records: 0,
    rows: 0,
    rewritten: [],
    removed: [],
    bytesBefore: 0,
    bytesAfter: 0,
    reindexed: false,
    logEntries: 0,
    at: Date.now(),
  };
  if (!opts.dryRun && existsSync(marker)) {
    log(`purge: ${marker}: a previous purge did not finish; rebuilding the index from the WARC files first`);
    await target.rebuild();
    report.reindexed = true;
  }
  const objects = warcs.kind === 's3' ? await import('./purge-objects.js') : undefined;
  if (objects && !opts.dryRun) {
    const index = await target.openIndex();
    try {
      await objects.finishPending(warcs as S3WarcStore, index, log);
    } finally {
      await index.close();
    }
  }
  const plans = await planAll(warcs, sel, report, opts.progress, opts.daemonRuns);
  if (opts.dryRun) return report;
  const index = await target.openIndex();
  try {
    if (objects) await objects.purgeObjects(warcs as S3WarcStore, index, plans, report, log);
    else await purgeFolder((warcs as FolderWarcStore).dir, dataDir, index, plans, report, log);
    count(report, await index.rewriteRows({ drop: await selectedRowIds(index, sel), move: [], at: report.at }));
    // The deleted rows' bytes must not stay in the database's free space.
    await index.compact();
  } finally {
    await index.close();
  }
  if (existsSync(marker)) {
    await rm(marker, { force: true });
    await syncDir(dataDir);
  }
  return report;
}
