/**
 * `memento-archive purge`: erasing captures for good (a takedown that must
 * not be reversible, e.g. a GDPR erasure request). Every WARC file is read
 * (a capture's records are found by their own WARC-Target-URI and
 * WARC-Date, so a same-second capture the index no longer names goes too);
 * a file holding a selected record is written again without it — every
 * other record copied byte for byte, so the mementos left serve exactly
 * what they served — to a temp file, fsynced and renamed over the old one;
 * the index rows of that file are moved to the new offsets and the rows of
 * the erased mementos deleted, and the index is vacuumed (SQLite's free
 * pages and its WAL would otherwise keep the deleted rows' bytes).
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
 * rebuilds the index (both remove the marker). The index is written through
 * a connection of this module's own (the daemon is not running).
 */
import { type FileHandle, open, rename, rm, stat } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import sqlite3 from 'sqlite3';
import { exactUrlkey } from '#shared/uri.js';
import { matchesPattern, type UrlPattern } from '../access.js';
import { logPurge } from '../evidence/log.js';
import { LOG_SCHEMA_SQLITE, SqliteLogTx } from '../evidence/log-sqlite.js';
import { IndexDb } from './index-db.js';
import { type Log, type Progress, PURGE_MARKER, reindex } from './maintenance.js';
import { listWarcFiles } from './warc-files.js';
import { scanWarcFile } from './warc-scan.js';

export { PURGE_MARKER };

/** The data folder has the marker of a purge that did not finish; `message` says what to do. */
export class PurgeInterruptedError extends Error {
  constructor(dataDir: string) {
    super(`${path.join(dataDir, PURGE_MARKER)}: a purge did not finish, the index may not match the WARC files; run memento-archive purge again, or reindex`);
    this.name = 'PurgeInterruptedError';
  }
}

/** A WARC file cannot be read whole: purge changes nothing; `message` says which and why. */
export class PurgeRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PurgeRefusedError';
  }
}

/** @throws PurgeInterruptedError when `dataDir` has the marker of an unfinished purge */
export function checkNoPurgePending(dataDir: string): void {
  if (existsSync(path.join(dataDir, PURGE_MARKER))) throw new PurgeInterruptedError(dataDir);
}

/** What to erase: the captures of a URL (or under a URL prefix), optionally only those `before` / `after` an instant. */
export interface PurgeSelection {
  /** archive/access.ts `urlPattern` of `--url URL` or `--prefix URL*`. */
  pattern: UrlPattern;
  /** Only captures earlier than this (epoch s). */
  before?: number;
  /** Only captures at or after this (epoch s). */
  after?: number;
}

/** One capture erased (or, in a dry run, to be erased): its response (or revisit) record. */
export interface PurgedCapture {
  file: string;
  uriR: string;
  /** WARC-Date, epoch seconds. */
  datetime: number;
  /** A revisit erased because its original was: the original's URI-R and datetime (epoch s). */
  revisitOf?: { uriR: string; datetime: number };
}

/** What a purge did (or, in a dry run, would do). */
export interface PurgeReport {
  /** The response (and revisit, resource) records erased: one per capture. */
  captures: PurgedCapture[];
  /** Every record erased, request records included. */
  records: number;
  /** Index rows deleted. */
  rows: number;
  /** WARC files written again without the records, and those removed because nothing but their warcinfo was left. */
  rewritten: string[];
  removed: string[];
  /** Bytes of the WARC files touched, before and after. */
  bytesBefore: number;
  bytesAfter: number;
  /** A previous purge had not finished: the index was rebuilt first. */
  reindexed: boolean;
  /** Purge entries appended to the evidence log (one per removed capture entry; docs/evidence.md). */
  logEntries: number;
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

/** A record of a file as the plan needs it: where it is and whether it goes. */
interface PlannedRecord {
  offset: number;
  length: number;
  type: string;
  drop: boolean;
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
  abs: string,
  file: string,
  sel: PurgeSelection,
  erasedIds: Set<string>,
  report: PurgeReport,
  appending: boolean,
): Promise<PlannedRecord[]> {
  const out: PlannedRecord[] = [];
  for await (const item of scanWarcFile(abs)) {
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

/** Runs a statement. @returns the rows it changed */
function run(db: sqlite3.Database, sql: string, params: unknown[] = []): Promise<number> {
  return new Promise((resolve, reject) =>
    db.run(sql, params, function (this: sqlite3.RunResult, err: Error | null) {
      if (err) reject(err);
      else resolve(this.changes);
    }),
  );
}

function rows<T>(db: sqlite3.Database, sql: string, params: unknown[] = []): Promise<T[]> {
  return new Promise((resolve, reject) => db.all(sql, params, (err, r: T[]) => (err ? reject(err) : resolve(r))));
}

/** Runs `fn` in one write transaction. */
async function transaction(db: sqlite3.Database, fn: () => Promise<void>): Promise<void> {
  await run(db, 'BEGIN IMMEDIATE');
  try {
    await fn();
    await run(db, 'COMMIT');
  } catch (err) {
    await run(db, 'ROLLBACK').catch(() => undefined);
    throw err;
  }
}

/**
 * The index rows of one rewritten (or removed) file: rows of erased
 * records (every row, when the file was removed) deleted, the others moved
 * to their new offsets, in one transaction. @returns rows deleted
 */
async function reindexFile(
  db: sqlite3.Database,
  file: string,
  plan: PlannedRecord[],
  moved: Map<number, number>,
  removed: boolean,
  entries: PurgeEntries,
): Promise<number> {
  const dropped = new Set(plan.filter((r) => r.drop).map((r) => r.offset));
  let deleted = 0;
  await transaction(db, async () => {
    const gone: MementoKey[] = [];
    for (const row of await rows<MementoKey & { id: number; warc_offset: number }>(
      db,
      'SELECT id, warc_offset, archive_id, urlkey, datetime FROM memento WHERE warc_file = ?',
      [file],
    )) {
      const to = moved.get(row.warc_offset);
      if (removed || dropped.has(row.warc_offset)) {
        deleted += await run(db, 'DELETE FROM memento WHERE id = ?', [row.id]);
        gone.push(row);
      } else if (to !== undefined && to !== row.warc_offset) await run(db, 'UPDATE memento SET warc_offset = ? WHERE id = ?', [to, row.id]);
    }
    await entries.add(gone);
  });
  return deleted;
}

/** A memento's key, as a purge entry finds its capture entry by it. */
type MementoKey = { archive_id: string; urlkey: string; datetime: number };

/**
 * The purge entries of one purge run (archive/evidence/log.ts `logPurge`):
 * appended inside the transaction that deletes the rows, all dated when
 * the purge began.
 */
class PurgeEntries {
  private readonly tx: SqliteLogTx;
  private readonly at = Date.now();
  /** Purge entries appended. */
  count = 0;
  constructor(db: sqlite3.Database) {
    this.tx = new SqliteLogTx(db);
  }
  /** Records the removal of the mementos `keys` (inside the caller's transaction). */
  async add(keys: MementoKey[]): Promise<void> {
    const byArchive = new Map<string, MementoKey[]>();
    for (const k of keys) byArchive.set(k.archive_id, [...(byArchive.get(k.archive_id) ?? []), k]);
    for (const [archive, list] of byArchive) this.count += await logPurge(this.tx, archive, list, this.at);
  }
  close(): Promise<void> {
    return this.tx.close();
  }
}

/** Deletes the index rows of the selection left (rows at a WARC file that is missing), with their purge entries. @returns how many */
async function deleteLeftRows(db: sqlite3.Database, sel: PurgeSelection, entries: PurgeEntries): Promise<number> {
  const { key, prefix } = sel.pattern;
  let sql = `FROM memento WHERE ${prefix ? 'substr(urlkey, 1, ?) = ?' : 'urlkey = ?'}`;
  const params: unknown[] = prefix ? [key.length, key] : [key];
  if (sel.before !== undefined) {
    sql += ' AND datetime < ?';
    params.push(sel.before);
  }
  if (sel.after !== undefined) {
    sql += ' AND datetime >= ?';
    params.push(sel.after);
  }
  let deleted = 0;
  await transaction(db, async () => {
    const gone = await rows<MementoKey>(db, `SELECT archive_id, urlkey, datetime ${sql}`, params);
    deleted = await run(db, `DELETE ${sql}`, params);
    await entries.add(gone);
  });
  return deleted;
}

/** Opens the index for purge's writes: deleted content overwritten (`secure_delete`). */
async function openIndex(file: string): Promise<sqlite3.Database> {
  const db = await new Promise<sqlite3.Database>((resolve, reject) => {
    const d = new sqlite3.Database(file, sqlite3.OPEN_READWRITE, (err) => (err ? reject(err) : resolve(d)));
  });
  db.configure('busyTimeout', 10_000);
  await run(db, 'PRAGMA secure_delete = ON');
  // An index no daemon of this version opened yet: the evidence log's tables.
  await new Promise<void>((resolve, reject) => db.exec(LOG_SCHEMA_SQLITE, (err) => (err ? reject(err) : resolve())));
  return db;
}

/** A file with records to erase, and what to do with it. */
interface FilePlan {
  file: string;
  size: number;
  records: PlannedRecord[];
  /** Nothing but its warcinfo is left: the file is removed. */
  empty: boolean;
}

/** Reads every WARC file and plans what goes: the files with records to erase. @throws PurgeRefusedError on a damaged file */
async function planAll(warcsDir: string, sel: PurgeSelection, report: PurgeReport, progress?: Progress, daemonRuns = false): Promise<FilePlan[]> {
  const byArchive = [...(await listWarcFiles(warcsDir)).values()];
  const files = byArchive.flat();
  const newest = new Set(byArchive.map((f) => f[f.length - 1]));
  let total = 0;
  for (const f of files) total += (await stat(path.join(warcsDir, f))).size;
  const erasedIds = new Set<string>();
  const plans: FilePlan[] = [];
  let done = 0;
  for (const file of files) {
    const abs = path.join(warcsDir, file);
    const size = (await stat(abs)).size;
    const records = await planFile(abs, file, sel, erasedIds, report, daemonRuns && newest.has(file));
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

/**
 * Erases the selected captures from the WARC files under
 * `<dataDir>/warcs` and from `<dataDir>/index.sqlite3` (see the module
 * comment): every file is read first, and nothing is changed when one is
 * damaged. The caller holds the data folder's lock.
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
  dataDir: string,
  sel: PurgeSelection,
  opts: { dryRun?: boolean; daemonRuns?: boolean; log?: Log; progress?: Progress } = {},
): Promise<PurgeReport> {
  if (opts.daemonRuns && !opts.dryRun) throw new Error('purge: only a dry run may run beside a daemon');
  const log = opts.log ?? (() => undefined);
  const warcsDir = path.join(dataDir, 'warcs');
  const indexFile = path.join(dataDir, 'index.sqlite3');
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
  };
  if (!opts.dryRun && existsSync(path.join(dataDir, PURGE_MARKER))) {
    log(`purge: ${path.join(dataDir, PURGE_MARKER)}: a previous purge did not finish; rebuilding the index from the WARC files first`);
    await reindex(indexFile, warcsDir);
    report.reindexed = true;
  }
  const plans = await planAll(warcsDir, sel, report, opts.progress, opts.daemonRuns);
  if (opts.dryRun) return report;
  // No index yet (a data folder of WARC files alone): an empty one, which the daemon fills on start.
  if (!existsSync(indexFile)) await (await IndexDb.open(indexFile)).close();
  const db = await openIndex(indexFile);
  const entries = new PurgeEntries(db);
  try {
    for (const { file, size, records, empty } of plans) {
      const abs = path.join(warcsDir, file);
      await setMarker(dataDir);
      let moved = new Map<number, number>();
      if (empty) await rm(abs);
      else {
        moved = await copyKept(abs, abs + '.purge-tmp', records);
        await rename(abs + '.purge-tmp', abs);
      }
      await syncDir(path.dirname(abs));
      report.rows += await reindexFile(db, file, records, moved, empty, entries);
      const erased = records.filter((r) => r.drop).length;
      const after = empty ? 0 : (await stat(abs)).size;
      log(`purge: ${file}: ${erased} record(s) erased, ${size} → ${after} bytes${empty ? ' (nothing but warcinfo left: removed)' : ''}`);
    }
    report.rows += await deleteLeftRows(db, sel, entries);
    report.logEntries = entries.count;
    await entries.close();
    // The deleted rows' bytes must not stay in free pages or the WAL.
    await run(db, 'VACUUM');
    await run(db, 'PRAGMA wal_checkpoint(TRUNCATE)');
  } finally {
    await entries.close();
    await new Promise<void>((resolve) => db.close(() => resolve()));
  }
  if (existsSync(path.join(dataDir, PURGE_MARKER))) {
    await rm(path.join(dataDir, PURGE_MARKER), { force: true });
    await syncDir(dataDir);
  }
  return report;
}
