/**
 * Keeping the WARC files and the SQLite index in agreement (docs/storage.md,
 * durability): crash recovery on start, `memento-archive verify`
 * and `memento-archive reindex`.
 *
 * The WARC files are the archive; the index is derived from them. Each
 * archive's files are written strictly in order (file serial, then offset),
 * and a batch of captures is indexed only after its records are fsynced, so
 * everything after the last indexed record of an archive is the tail of the
 * batch that was being written when the daemon stopped.
 */
import { readdir, rename, rm, stat, truncate, unlink } from 'node:fs/promises';
import path from 'node:path';
import { copyLogTables } from '../index/log-sqlite.js';
import { leafOfRecord } from '../../evidence/leaf.js';
import { LeafRecordCheck, type LogVerifyCounts, type ReadRecord, verifyLogTables } from '../../evidence/log-verify.js';
import { type CheckpointVerifyCounts, type CheckpointVerifyOptions, verifyCheckpoints } from '../../evidence/checkpoint-verify.js';
import { IndexDb, type MementoRow } from '../index/index-db.js';
import type { MementoIndex } from '../index/memento-index.js';
import { RowWriter } from './record-rows.js';
import { digestsOk, isMemento, pairs, readArchivesInOrder } from './reindex-read.js';
import { RecordChecks } from './verify-records.js';
import { listWarcFiles } from '../warcs/warc-files.js';
import { type ScanItem, type ScannedRecord, scanWarcFile } from '../warcs/warc-scan.js';
import { type WarcStore, warcStoreOf } from '../warcs/warc-store.js';

/**
 * The marker file (in the data folder) of a `purge` under way (purge.ts):
 * while it exists the index may not match the WARC files. A finished
 * `reindex` removes it.
 */
export const PURGE_MARKER = 'purge.pending';

/** Where maintenance messages go (one line each). */
export type Log = (line: string) => void;

/** Progress of a long scan: bytes of WARC files read so far and in all. */
export type Progress = (done: number, total: number) => void;

/** What crash recovery did. */
export interface RecoveryReport {
  /** Complete capture pairs found after the last indexed record and indexed. */
  indexed: number;
  /** Bytes cut off partial or damaged tails. */
  truncatedBytes: number;
  /** WARC files removed because nothing complete was left in them. */
  removedFiles: string[];
  /** Leftover body spill files deleted from `tmp/`. */
  removedTmp: number;
}

/**
 * Crash recovery, run when the store opens (before any write).
 *
 * For each archive, the WARC files are read from the end of the last
 * indexed response (or revisit) record on (its request record follows it). Complete
 * response + request and revisit + request pairs found there — written and possibly fsynced, but
 * never acknowledged because the daemon stopped before their index commit —
 * are indexed, in file order (so the same-second rule holds as if they had
 * been committed); a revisit's original is found as record-rows.ts says,
 * and one whose original is not stored is logged and gets no row. In the newest file of an archive (the only one being
 * written when a daemon stops), the first partial or damaged record (a gzip
 * member cut short, a bad CRC or digest), or a response whose request
 * record is missing, is truncated away with everything after it; in an older
 * file such damage is logged and left for `verify`. A file with nothing but
 * its `warcinfo` record is removed. Leftover body
 * spill files in `tmp/` are deleted. Each action is logged. With
 * `warcsDir` null (the WARC files are objects in a bucket, each uploaded
 * whole or not at all) only `tmp/` is cleaned: an object uploaded whose
 * rows were never committed was never acknowledged and stays an orphan,
 * which `verify` lists.
 */
export async function recover(index: MementoIndex, warcsDir: string | null, tmpDir: string, log: Log): Promise<RecoveryReport> {
  const report: RecoveryReport = { indexed: 0, truncatedBytes: 0, removedFiles: [], removedTmp: 0 };
  for (const f of await readdir(tmpDir).catch(() => [] as string[])) {
    if (!/^body-.*\.tmp$/.test(f)) continue;
    await unlink(path.join(tmpDir, f)).catch(() => undefined);
    report.removedTmp++;
  }
  if (report.removedTmp) log(`recovery: deleted ${report.removedTmp} leftover body spill file(s) from ${tmpDir}`);
  if (warcsDir === null) return report;

  const rows = new RowWriter(index, (line) => log(`recovery: ${line}`));
  for (const [archiveId, files] of await listWarcFiles(warcsDir)) {
    const ends = new Map((await index.fileEnds(archiveId)).map((e) => [e.warc_file, e.end]));
    // The last file (in writing order) that the index points into, and where its indexed part ends.
    let startIdx = 0;
    let startAt = 0;
    for (let i = files.length - 1; i >= 0; i--) {
      const end = ends.get(files[i]);
      if (end !== undefined) {
        startIdx = i;
        startAt = end;
        break;
      }
    }
    for (let i = startIdx; i < files.length; i++) {
      const file = files[i];
      const abs = path.join(warcsDir, file);
      const before = rows.inserted;
      let goodEnd = i === startIdx ? startAt : 0;
      let onlyInfo = goodEnd === 0;
      let pending: ScannedRecord | null = null;
      let cut: { offset: number; reason: string } | null = null;
      for await (const item of scanWarcFile(abs, goodEnd) as AsyncGenerator<ScanItem>) {
        if (item.kind !== 'record') {
          cut = { offset: pending ? pending.offset : item.offset, reason: item.reason };
          break;
        }
        const r = item.record;
        if (!digestsOk(r)) {
          cut = { offset: pending ? pending.offset : r.offset, reason: `${r.type} record at offset ${r.offset} does not match its digest` };
          break;
        }
        if (pending) {
          if (!pairs(pending, r)) {
            cut = { offset: pending.offset, reason: `${pending.type} record at offset ${pending.offset} is not followed by its request record` };
            break;
          }
          await rows.add(archiveId, file, pending, r);
          pending = null;
          goodEnd = r.offset + r.length;
          onlyInfo = false;
        } else if (isMemento(r)) {
          pending = r;
        } else {
          // warcinfo at the start of a file, or the request record of the last indexed pair.
          if (r.type !== 'warcinfo') onlyInfo = false;
          goodEnd = r.offset + r.length;
        }
      }
      if (pending && !cut) cut = { offset: pending.offset, reason: `${pending.type} record at offset ${pending.offset} has no request record after it` };
      await rows.flush();
      const indexed = rows.inserted - before;
      if (indexed) log(`recovery: ${file}: indexed ${indexed} complete capture(s) written before the daemon stopped but never acknowledged`);
      const size = (await stat(abs)).size;
      const keep = cut ? cut.offset : goodEnd;
      if (!ends.has(file) && indexed === 0 && onlyInfo) {
        // Begun just before the daemon stopped: no capture in it to keep.
        await rm(abs, { force: true });
        report.removedFiles.push(file);
        report.truncatedBytes += size;
        log(`recovery: ${file}: removed (${size} bytes, no complete capture in it${cut ? `; ${cut.reason}` : ''})`);
      } else if (size > keep && i !== files.length - 1) {
        // Only the newest file is being written when the daemon stops; damage in an older
        // one is not a crash's tail, and what follows it may be good: leave it for verify.
        log(
          `recovery: ${file}: damaged record at offset ${keep}${cut ? `: ${cut.reason}` : ''}; not the newest file, left as it is (run memento-archive verify)`,
        );
      } else if (size > keep) {
        await truncate(abs, keep);
        report.truncatedBytes += size - keep;
        log(`recovery: ${file}: truncated ${size - keep} bytes at offset ${keep}${cut ? `: ${cut.reason}` : ''}`);
      }
    }
  }
  // Revisits whose original is in a file read after theirs.
  const before = rows.inserted;
  await rows.finish();
  if (rows.inserted > before) log(`recovery: indexed ${rows.inserted - before} revisit(s) whose original was read after them`);
  report.indexed = rows.inserted;
  return report;
}

/** What `verify` found. `ok` is false when any row or record is wrong. */
export interface VerifyReport {
  ok: boolean;
  /** Index rows checked. */
  rows: number;
  /** WARC records read (all types). */
  records: number;
  /** Response and revisit records with no index row: {@link superseded} ones, and orphans (each a problem, or in {@link orphans}). */
  unindexed: number;
  /** Of those, records a memento of the same urlkey and second is indexed instead of (superseded by a later same-second capture, or on replicas one that won the race for the key). */
  superseded: number;
  /** Index rows without an evidence log entry that were indexed before the log was kept (verify-records.ts; the others are problems). */
  unlogged: number;
  /**
   * WARC files (objects) with response or revisit records of which no
   * index row names any: with WARCs in a bucket, a batch uploaded by a
   * daemon killed before its index commit (never acknowledged; harmless,
   * may be deleted). Not a problem.
   */
  orphans: string[];
  files: number;
  bytes: number;
  /** One line per problem. */
  problems: string[];
  /** Evidence log entries, stored nodes and signed tree heads checked (archive/evidence/log-verify.ts). */
  log: LogVerifyCounts;
  /** Published checkpoints, their time-stamps and the anchors checked (archive/evidence/checkpoint-verify.ts), when asked for. */
  checkpoints?: CheckpointVerifyCounts;
}

/**
 * Checks that the index and the WARC files agree (`warcsDir` a folder's
 * path, or a store: warc-store.ts, whose objects are listed and read as
 * streams): every index row names a
 * WARC file that exists and, at its offset and length, a complete response
 * or revisit record with the row's URI-R, Memento-Datetime, payload
 * digest, status, media type and urlkey; a revisit's row refers to a
 * stored response row whose record is the one the revisit record names
 * (verify-records.ts; a revisit whose original is missing is a problem);
 * a memento record without a row is a problem unless a memento of its
 * urlkey is indexed at the same second (`superseded`) — or, with WARC
 * objects in a bucket, none of its object's records is indexed (listed in
 * `orphans`: a batch whose daemon stopped before its commit); every
 * record in every WARC file has a valid gzip member and the block and
 * payload digests it states (WARC-Block-Digest / WARC-Payload-Digest,
 * recomputed). A partial record at the very end of the newest file of an
 * archive is reported (the daemon may be writing it, or recovery will
 * truncate it on the next start), as a problem only when `strictTail`.
 * The evidence log (archive/evidence/log-verify.ts): each capture entry
 * matches the record its memento's row points at (the entry the record
 * calls for: leaf.ts `leafOfRecord`, its block digest recomputed), every
 * entry still holding its text has such a record, a row without an entry
 * is a problem unless it was indexed before the log was kept, and
 * the stored nodes and kept signed tree heads match the entries, and the
 * heads' signatures verify with `publicKeyDer` (`null`: no key, a problem;
 * absent: not checked).
 */
export async function verify(
  index: MementoIndex,
  warcsDir: WarcStore | string,
  opts: { progress?: Progress; strictTail?: boolean; publicKeyDer?: Buffer | null; checkpoints?: Omit<CheckpointVerifyOptions, 'publicKeyDer'> } = {},
): Promise<VerifyReport> {
  const warcs = warcStoreOf(warcsDir);
  const log = { entries: 0, nodes: 0, heads: 0 };
  const report: VerifyReport = { ok: true, rows: 0, records: 0, unindexed: 0, superseded: 0, unlogged: 0, orphans: [], files: 0, bytes: 0, problems: [], log };
  const problem = (s: string) => {
    report.problems.push(s);
    report.ok = false;
  };
  const leaves = new LeafRecordCheck(index.log, problem);
  const checks = new RecordChecks(index, warcs);
  // The log's sizes before the WARC files are listed: what a running daemon commits later is not looked for in them.
  await leaves.snapshot();
  const byArchive = await warcs.list();
  const onDisk = new Set([...byArchive.values()].flat().map((f) => f.file));
  let total = 0;
  for (const f of [...byArchive.values()].flat()) total += f.size;
  report.bytes = total;
  for (const { warc_file, n } of await index.files()) {
    if (!onDisk.has(warc_file)) {
      problem(`${warc_file}: named by ${n} index row(s) but the file is missing`);
      report.rows += n;
    }
  }
  let done = 0;
  for (const [archiveId, files] of byArchive) {
    for (const [fi, { file, size }] of files.entries()) {
      report.files++;
      let mementos = 0;
      const rows = new Map<number, MementoRow>((await index.rowsOfFile(file)).map((r) => [r.warc_offset, r]));
      report.rows += rows.size;
      const seen = new Set<number>();
      const read: ReadRecord[] = [];
      /** Unindexed records no same-second memento explains: problems, unless none of the object's records is indexed (a bucket's orphan). */
      const strays: string[] = [];
      for await (const item of warcs.scan(file)) {
        if (item.kind !== 'record') {
          const last = fi === files.length - 1;
          const beyond = [...rows.keys()].every((o) => o < item.offset);
          const line = `${file}: ${item.kind} record at offset ${item.offset}: ${item.reason}`;
          if (item.kind === 'partial' && last && beyond && !opts.strictTail)
            report.problems.push(line + ' (a write in progress, or a crash that recovery will truncate on the next start)');
          else problem(line);
          break;
        }
        const r = item.record;
        report.records++;
        opts.progress?.(done + r.offset + r.length, total);
        if (r.blockDigestOk === false) problem(`${file}:${r.offset}: ${r.type} record's WARC-Block-Digest does not match its block`);
        if (r.payloadDigestOk === false) problem(`${file}:${r.offset}: ${r.type} record's WARC-Payload-Digest does not match its payload`);
        if (!isMemento(r)) continue;
        mementos++;
        const row = rows.get(r.offset);
        if (!row) {
          report.unindexed++;
          if (await checks.superseded(archiveId, r)) report.superseded++;
          else
            strays.push(
              `${file}:${r.offset}: ${r.type} record of ${r.headers.get('warc-target-uri')} at ${r.headers.get('warc-date')} has no index row and no memento of it is indexed at that second: ` +
                'a capture never acknowledged (its daemon stopped between its write and its commit), or its row and log entry were deleted',
            );
          continue;
        }
        seen.add(r.offset);
        const expected = leafOfRecord(row.uri_r, row.datetime, { type: r.type, field: (k) => r.headers.get(k), blockDigest: r.blockSha256 });
        read.push({ archive_id: row.archive_id, urlkey: row.urlkey, datetime: row.datetime, where: `${file}:${r.offset}`, expected });
        const where = `${file}:${r.offset} (index row ${row.id}, ${row.uri_r})`;
        for (const p of checks.rowFields(file, r, row)) problem(`${where}: ${p}`);
        if (row.warc_length !== r.length) problem(`${where}: index length ${row.warc_length}, record length ${r.length}`);
        if (r.headers.get('warc-target-uri') !== row.uri_r) problem(`${where}: record's WARC-Target-URI is ${r.headers.get('warc-target-uri')}`);
        const t = Math.floor(Date.parse(r.headers.get('warc-date') ?? '') / 1000);
        if (t !== row.datetime)
          problem(`${where}: record's WARC-Date is ${r.headers.get('warc-date')}, index says ${new Date(row.datetime * 1000).toISOString()}`);
        if ((r.headers.get('warc-payload-digest') ?? r.payloadDigest) !== row.digest)
          problem(`${where}: index digest ${row.digest} differs from the record's ${r.headers.get('warc-payload-digest')}`);
        const revisitProblem = await checks.revisit(r, row);
        if (revisitProblem) problem(`${where}: ${revisitProblem}`);
      }
      for (const [off, row] of rows)
        if (!seen.has(off)) problem(`${file}:${off}: index row ${row.id} (${row.uri_r}) points at no complete response or revisit record`);
      await leaves.check(read);
      // A bucket's object none of whose records is indexed: uploaded by a daemon stopped before its commit (listed); anything else is a problem.
      if (mementos && !rows.size && warcs.kind === 's3') report.orphans.push(file);
      else for (const s of strays) problem(s);
      done += size;
      opts.progress?.(done, total);
    }
  }
  await leaves.finish();
  report.unlogged = leaves.unlogged;
  Object.assign(log, await verifyLogTables(index.log, opts.publicKeyDer, problem));
  if (opts.checkpoints) report.checkpoints = await verifyCheckpoints(index.log, { ...opts.checkpoints, publicKeyDer: opts.publicKeyDer }, problem);
  return report;
}

/** Appends every entry of the SQLite index `file`'s log to `to`'s log, in order, a thousand per transaction (reindex on PostgreSQL). */
async function appendEntriesOf(file: string, to: MementoIndex): Promise<void> {
  const from = await IndexDb.open(file);
  try {
    for (const archive of await from.log.archives())
      for (let at = 0; ; at += 1000) {
        const page = await from.log.leaves(archive, at, 1000);
        const leaves = page
          .filter((l) => l.leaf_text !== null)
          .map((l) => ({ archive_id: archive, kind: l.kind, text: l.leaf_text!, urlkey: l.urlkey, datetime: l.datetime }));
        if (leaves.length) await to.insertMany([], { leaves, ifAbsent: true });
        if (page.length < 1000) break;
      }
  } finally {
    await from.close();
  }
}

/** What `reindex` built. */
export interface ReindexReport {
  files: number;
  records: number;
  /** Index rows in the new index (mementos; same-second captures count once). */
  rows: number;
  /** Problems that kept a record out (damaged or partial records, records without a log entry), one line each. */
  skipped: string[];
  /** Of those, records left out because their memento has no evidence log entry though written while the log was kept (record-rows.ts `LogGate`). */
  unlogged: number;
}

/**
 * Rebuilds the index (SQLite, or PostgreSQL with `opts.postgres`) from the WARC files alone (a folder's path, or
 * a store: warc-store.ts; objects in a bucket are listed and read as
 * streams, orphans included): every complete
 * response or revisit record (with its request record for `X-Client-IP`)
 * whose memento has an entry in the evidence log, or was written before the
 * log was kept (it gets an entry now), becomes a row; one written while
 * the log was kept that has no entry (never acknowledged, or its entry
 * deleted) is never published: left out and listed (record-rows.ts
 * `LogGate`). A row is made as ingest made it (record-rows.ts: a revisit's `refers_to` found by the
 * original it names; one whose original is not found is left out and
 * listed in `skipped`), in writing order, so that of two captures of one URI-R in the same
 * second the later one holds the URI-M, as at ingest. The new index is
 * written beside the old one and renamed over it at the end; the caller must
 * hold the data folder's lock (lock.ts), so that no daemon writes meanwhile.
 * Removes the marker of an unfinished purge ({@link PURGE_MARKER}).
 *
 * With `postgres` (a `postgres://` URL: `storage.index`), the index is
 * built the same way beside `indexFile` (the log that decides which
 * records get rows is the database's), then its rows replace those of
 * the PostgreSQL index in one transaction (copy-index.ts; every daemon on
 * that database must be stopped), the entries made for mementos indexed
 * before the log was kept are appended to the database's log, and the
 * file is deleted.
 *
 * @param indexFile path of `index.sqlite3` (with `postgres`: where the rebuilt index is made, `index.sqlite3.reindex` beside it)
 * @param opts.rowProgress with `postgres`: rows copied, of all
 */
export async function reindex(
  indexFile: string,
  warcsDir: WarcStore | string,
  opts: { progress?: Progress; postgres?: string; rowProgress?: Progress } = {},
): Promise<ReindexReport> {
  const warcs = warcStoreOf(warcsDir);
  const tmp = indexFile + '.reindex';
  for (const s of ['', '-wal', '-shm']) await rm(tmp + s, { force: true });
  // The evidence log is not derivable from the WARC files: kept (SQLite: copied into the new index; PostgreSQL: stays in the
  // database). Rows already in it get no second entry; a record without one gets a row only as record-rows.ts LogGate says.
  const pg = opts.postgres === undefined ? undefined : await (await import('../index/index-pg.js')).PgIndex.open(opts.postgres, { connections: 2 });
  if (!pg) await copyLogTables(indexFile, tmp);
  const db = await IndexDb.open(tmp).catch(async (err: unknown) => {
    await pg?.close();
    throw err;
  });
  const report: ReindexReport = { files: 0, records: 0, rows: 0, skipped: [], unlogged: 0 };
  try {
    const byArchive = await warcs.list();
    report.files = [...byArchive.values()].flat().length;
    const rows = new RowWriter(db, (line) => report.skipped.push(line), 1000, { log: (pg ?? db).log });
    await readArchivesInOrder(warcs, byArchive, rows, report, opts.progress);
    await rows.finish();
    report.unlogged = rows.unlogged;
    report.rows = await db.count();
  } catch (err) {
    await db.close().catch(() => undefined);
    await pg?.close();
    for (const s of ['', '-wal', '-shm']) await rm(tmp + s, { force: true });
    throw err;
  }
  await db.close();
  if (opts.postgres !== undefined && pg) {
    // The rows replace the database's in one transaction (copy-index.ts); the PostgreSQL client is loaded only here.
    const { copyIndexToPostgres, MEMENTO_TABLE } = await import('../index/copy-index.js');
    try {
      // Only the table the WARC files rebuild: any other table of the index keeps its rows.
      await copyIndexToPostgres(tmp, opts.postgres, { tables: [MEMENTO_TABLE], replace: true, progress: opts.rowProgress });
      // Then the entries made for rows indexed before the log was kept (the new index's log holds only those).
      await appendEntriesOf(tmp, pg);
    } finally {
      await pg.close();
      for (const s of ['', '-wal', '-shm']) await rm(tmp + s, { force: true });
    }
  } else {
    for (const s of ['-wal', '-shm']) await rm(indexFile + s, { force: true });
    await rename(tmp, indexFile);
  }
  // The index now matches the WARC files, whatever an unfinished purge left.
  await rm(path.join(path.dirname(indexFile), PURGE_MARKER), { force: true });
  return report;
}
