/**
 * The archive's store: capture ingest (a capture record → WARC records +
 * index row, durably, with dedup and group commit) and the record reads
 * the Memento side needs. docs/storage.md.
 */
import { createHash } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { type CaptureHead, CaptureRecordError, CaptureRecordParser } from '#shared/capture-record.js';
import { type AcceptedCapture, acceptCapture } from '#shared/capture-rules.js';
import { ScavengeCounter } from '#shared/gc.js';
import { type HttpError, httpError, isHttpError } from '#shared/http-error.js';
import { getHeader } from '#shared/http-head.js';
import { UriError } from '#shared/uri.js';
import type { ArchiveConfig } from '../config.js';
import { type ArchiveSpan, archiveForInstant, isLocal } from '../spans.js';
import { BodySpill } from './ingest/body-spill.js';
import { type AnyRow, CaptureIsNew, type DedupBatch } from './ingest/capture-is-new.js';
import type { MementoRow, NewMementoRow } from './index/index-db.js';
import { indexRow } from './index/index-row.js';
import { DataDirLock } from './lock.js';
import { type RecoveryReport, recover } from './upkeep/maintenance.js';
import type { MementoIndex } from './index/memento-index.js';
import { openIndex } from './index/open-index.js';
import { checkNoPurgePending } from './upkeep/purge.js';
import type { RecordCache } from './warcs/record-cache.js';
import { readMementoResponse } from './warcs/stored-response.js';
import type { StoredResponse, WarcReader } from './warcs/warc-reader.js';
import { openWarcStore } from './warcs/open-warcs.js';
import type { WarcAppender, WarcStore } from './warcs/warc-store.js';
import type { EncodedPair, WrittenRecord } from './warcs/warc-writer.js';
import { type PendingCapture, planOf, type Plan, streamedOf } from './ingest/batch-plan.js';
import { packRecords, unpackMembers } from './warcs/gzip-batch.js';
import { WorkPool } from '../work/pool.js';
import { captureLeaf } from '../evidence/leaf.js';
import type { IngestOptions, IngestResult, OpenOptions, StoreStats } from './store-types.js';
import { digestRecord } from '../evidence/record-digest.js';
import type { NewLeaf } from '../evidence/log.js';

export type { IngestOptions, IngestResult, OpenOptions, StoreStats } from './store-types.js';

/** A capture that cannot be stored: the HTTP answer (`status`, one-line reason); the connection closes after it (the body may be unread). */
function refuse(status: number, reason: string): HttpError {
  return httpError(status, reason, { close: true });
}

/** The 503 of a capture decided against one that lost its key to another daemon's ({@link ArchiveStore.decideLost}). */
const LOST_RACE = 'another archive daemon stored a capture of this URI-R first, which this one was compared with; nothing stored, send it again';

type Pending = PendingCapture;

/** Most time the gzip of `bytes` of a batch's records may take in the pool's thread, ms: 10 s and 1 s a MiB (zlib level 9 does some 10 MiB/s). */
const gzipDeadlineMs = (bytes: number) => 10_000 + bytes / 1024;

/** True when other daemons (replicas) may write into the index `config` names: PostgreSQL with the WARC files in a bucket. */
function sharedIndex(config: ArchiveConfig): boolean {
  return config.indexPostgres !== undefined && config.warcStore !== undefined;
}

export class ArchiveStore {
  private queue: Pending[] = [];
  /** Write-queue counters (group commit: compare `batches` with `written`). */
  readonly stats: StoreStats = {
    batches: 0,
    fsyncs: 0,
    transactions: 0,
    written: 0,
    revisits: 0,
    duplicates: 0,
    conflicts: 0,
    ms: { lookup: 0, append: 0, sync: 0, commit: 0 },
  };
  /**
   * Called once per stored batch (group commit): its captures, how many of
   * them were written (the rest were duplicates), and how long the fsync
   * of its WARC files took, seconds. For the daemon's metrics.
   */
  onBatch?: (captures: number, written: number, syncSeconds: number) => void;
  /** Called after each commit of new rows (the full-text indexer, archive/search/indexer.ts, then reads what has no text yet). */
  onCommitted?: () => void;
  /**
   * True for a memento the access rules hide (set by the daemon,
   * archive/read/access-rules.ts): the dedup never takes a capture for a duplicate of
   * a hidden memento (it is stored, as if that one had never been
   * captured), so no answer names a hidden URI-M.
   */
  hidden?: (urlkey: string, datetime: number) => boolean;
  /** What crash recovery did when the store opened. */
  recovery: RecoveryReport | null = null;
  private writing = false;
  /** Resolved whenever the write queue runs empty. */
  private idle: Promise<void> = Promise.resolve();
  private markIdle: () => void = () => undefined;
  private readonly writers = new Map<string, WarcAppender>();
  /** `<data_dir>/warcs`: the WARC files when they are kept in the folder (the default). */
  readonly warcsDir: string;
  private readonly tmpDir: string;

  /** Reads response records, with a cached read-only descriptor per WARC file. */
  private readonly reader: WarcReader;

  /** Is a capture new? (dedup and same-second conflicts, capture-is-new.ts) */
  private readonly isNew: CaptureIsNew;

  /**
   * The thread that gzips each batch's records (gzip-batch.ts): one, so that
   * the event loop's core and the other share the write path; one batch at a time.
   */
  private readonly gzip = new WorkPool('ingest', { threads: 1, queue: 2, idleMs: 10 * 60_000 });

  private constructor(
    readonly config: ArchiveConfig,
    readonly index: MementoIndex,
    private readonly lock: DataDirLock,
    /** Where the WARC files are: the folder, or a bucket (`storage.warcs`; warc-store.ts). */
    readonly warcs: WarcStore,
  ) {
    this.warcsDir = path.join(config.dataDir, 'warcs');
    this.tmpDir = path.join(config.dataDir, 'tmp');
    this.reader = this.warcs.reader(config.recordCacheBytes);
    this.isNew = new CaptureIsNew(index, () => this.hidden, config.revisitIntervalS, !sharedIndex(config));
  }

  /**
   * Opens the store in `config.dataDir` (creates `warcs/`, `tmp/`,
   * `index.sqlite3` unless the index is in PostgreSQL ({@link openIndex};
   * @throws index-pg.ts `PgIndexError` when that database cannot be reached),
   * mode 0700), takes the data folder's lock, refuses a
   * folder an unfinished purge left (purge.ts `PurgeInterruptedError`), and runs crash recovery ({@link recover}): a partial
   * WARC tail is truncated, complete unacknowledged captures are indexed,
   * and each action is logged to `opts.log`.
   */
  static async open(config: ArchiveConfig, opts: OpenOptions = {}): Promise<ArchiveStore> {
    // The data folder and what is in it hold client addresses and request headers: the owner's only.
    for (const dir of [config.dataDir, path.join(config.dataDir, 'warcs'), path.join(config.dataDir, 'tmp')])
      await mkdir(dir, { recursive: true, mode: 0o700 });
    // One writer per data folder, before anything is read or repaired (lock.ts).
    const lock = await DataDirLock.acquire(config.dataDir, opts.holder ?? 'daemon');
    try {
      // An unfinished purge may have left the index pointing at old offsets.
      checkNoPurgePending(config.dataDir);
      const index = await openIndex(config, { cacheBytes: config.indexCacheBytes, writers: sharedIndex(config) ? 'replicas' : 'alone' });
      const store = new ArchiveStore(config, index, lock, await openWarcStore(config));
      // WARC objects in a bucket are whole or absent: only the folder's files can have a partial tail.
      const folder = store.warcs.kind === 'folder' ? store.warcsDir : null;
      store.recovery = await recover(index, folder, store.tmpDir, opts.log ?? (() => undefined));
      return store;
    } catch (err) {
      await lock.release();
      throw err;
    }
  }

  /**
   * Ingests one capture record (docs/capture-record.md) from a
   * stream. The heads are parsed as they arrive; the body streams into a
   * bounded buffer (memory, then a temp file) while its SHA-256 payload
   * digest is computed; then the capture is written as a WARC record pair,
   * fsynced and indexed, or found identical to the memento it follows.
   *
   * A stored memento is never replaced: a capture of a urlkey at a second
   * that already has a memento of it (Memento-Datetime has one-second
   * resolution, so both would have one URI-M) is a duplicate when it is
   * identical to that memento, else a conflict (`conflict: true`, nothing
   * written). Decided in the write queue, against the index and the
   * captures queued before it, so that of two such captures arriving
   * together exactly one is stored.
   *
   * URI-R: Host + request target of the embedded request; scheme https when
   * it carries `X-Forwarded-Proto: https`. Memento-Datetime: the response's
   * Date header, else `receivedAt`; `opts.datetime` when given.
   *
   * @throws HttpError 400 (malformed record, with a one-line reason), 413
   *   (over `maxCaptureBytes`), 422 (no local archive covers the datetime);
   *   nothing is stored then. Stream errors (client gone) are rethrown.
   */
  async ingest(body: Readable, receivedAt: Date, opts: IngestOptions = {}): Promise<IngestResult> {
    const parser = new CaptureRecordParser({ maxHeadBytes: this.config.maxHeadBytes, maxHeaders: this.config.maxHeaders });
    const spill = new BodySpill(this.tmpDir);
    const hash = createHash('sha256');
    const blockHash = createHash('sha256');
    const counter = { n: 0 };
    const gc = new ScavengeCounter();
    let prepared: { archive: ArchiveSpan; row: NewMementoRow } | null = null;
    try {
      // Plain iteration instead of stream.pipeline: it costs a fraction per PUT (no AbortSignal, no Transform).
      // destroyOnReturn false: on an error the request stays open, so that the answer can still be sent.
      for await (const chunk of body.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
        gc.add(chunk.length);
        counter.n += chunk.length;
        if (counter.n > this.config.maxCaptureBytes)
          throw refuse(413, `capture record is larger than the limit of ${this.config.maxCaptureBytes} bytes (max_capture_bytes)`);
        const out = parser.feed(chunk);
        if (!prepared && parser.head) {
          blockHash.update(parser.head.responseBytes);
          prepared = this.prepare(parser.head, receivedAt, opts.datetime);
        }
        if (out.length) {
          hash.update(out);
          blockHash.update(out);
          await spill.write(out);
        }
      }
      parser.finish();
    } catch (err) {
      await spill.dispose();
      const e = err;
      if (isHttpError(e)) throw e;
      if (e instanceof CaptureRecordError) throw refuse(e.status, e.message);
      if (e instanceof UriError) throw refuse(400, e.message);
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ERR_STREAM_PREMATURE_CLOSE' || code === 'ECONNRESET' || (e as Error).message === 'aborted') {
        throw refuse(400, 'capture record was cut: the client closed the connection before the end of the body');
      }
      throw e;
    }
    const head = parser.head!;
    const { archive, row } = prepared!;
    // prepare() checked that every Content-Length value is the same number.
    const declared = getHeader(head.response.headers, 'content-length')?.split(',')[0].trim();
    const bodyless = row.status === 204 || row.status === 304;
    if (declared !== undefined && !bodyless && Number(declared) !== spill.length) {
      await spill.dispose();
      throw refuse(400, `response body is ${spill.length} bytes but the embedded Content-Length says ${Number(declared)}`);
    }
    row.digest = 'sha256:' + hash.digest('hex');
    if (opts.revisitOf && opts.revisitOf.digest !== row.digest) {
      await spill.dispose();
      throw refuse(400, 'the body is not the payload of the memento named as its original (another payload digest); nothing stored');
    }
    const blockDigest = 'sha256:' + blockHash.digest('hex');
    return new Promise<IngestResult>((resolve, reject) => {
      const received = counter.n;
      const done = (r: Omit<IngestResult, 'bytes'>) => resolve({ ...r, bytes: received });
      this.queue.push({ archive, row, head, body: spill, blockDigest, revisitOf: opts.revisitOf, via: opts.via ?? 'put', resolve: done, reject });
      void this.drain();
    });
  }

  /**
   * Checks the heads (shared/capture-rules.ts: what the archive refuses,
   * the same rules the capture proxy applies before it sends) and derives
   * the index row (without WARC position and digest) and the archive whose
   * span holds the capture's datetime.
   *
   * @throws HttpError 400 (refused, with a one-line reason), 422 (no local archive's span holds the datetime)
   */
  private prepare(head: CaptureHead, receivedAt: Date, given?: Date): { archive: ArchiveSpan; row: NewMementoRow } {
    const { request, response } = head;
    let accepted: AcceptedCapture;
    try {
      accepted = acceptCapture(head, receivedAt, this.config, given);
    } catch (err) {
      if (err instanceof CaptureRecordError) throw refuse(err.status, err.message);
      throw err;
    }
    const { uriR, datetime } = accepted;
    const archive = archiveForInstant(this.config.archives, datetime);
    if (!archive || !isLocal(archive)) {
      throw refuse(422, `no local archive in the config covers the capture's datetime ${new Date(datetime * 1000).toISOString()}`);
    }
    const row = indexRow({
      archiveId: archive.id,
      uriR,
      datetime,
      status: response.status,
      responseHeaders: response.headers,
      requestHeaders: request.headers,
      digest: '',
    });
    return { archive, row };
  }

  private writer(archiveId: string): WarcAppender {
    let w = this.writers.get(archiveId);
    if (!w) {
      w = this.warcs.appender(archiveId, this.config.warcMaxBytes, this.config.warcGzipLevel);
      this.writers.set(archiveId, w);
    }
    return w;
  }

  /**
   * The write queue: one batch at a time. Each capture of the batch is
   * checked for dedup and appended to its archive's WARC file; then the
   * files are fsynced once (with `storage.warcs` in a bucket: the batch's
   * object is uploaded) and the rows committed in one transaction (group
   * commit); only then are the PUTs answered.
   */
  private async drain(): Promise<void> {
    if (this.writing) return;
    this.writing = true;
    this.idle = new Promise((r) => (this.markIdle = r));
    try {
      while (this.queue.length) {
        // Let the PUTs whose bodies are arriving right now join this batch.
        await new Promise((r) => setImmediate(r));
        const batch = this.queue.splice(0, this.queue.length);
        await this.writeBatch(batch);
      }
    } finally {
      this.writing = false;
      this.markIdle();
    }
  }

  /**
   * The records of a batch's bodies whole in memory (and of its revisits),
   * gzipped in one task of the ingest pool's thread (gzip-batch.ts), in the
   * order of `plans`. `null` when the thread failed (died, or missed its
   * deadline): then every capture of the batch (`plans`, `done`) is
   * answered 503 and nothing of it is written.
   */
  private async gzipBatch(plans: Plan[], done: [PendingCapture, unknown][]): Promise<EncodedPair[] | null> {
    const raws = plans.flatMap((x) => (x.raw ? [x.raw] : []));
    if (!raws.length) return [];
    try {
      const packed = packRecords(raws, this.config.warcGzipLevel);
      return unpackMembers(
        raws,
        await this.gzip.run('gzip-records', packed, gzipDeadlineMs(packed.bytes.length), undefined, [packed.bytes.buffer as ArrayBuffer]),
      );
    } catch (err) {
      const why = refuse(503, `the records were not compressed: ${(err as Error).message}`);
      for (const x of plans) await x.p.body.dispose();
      for (const p of [...plans.map((x) => x.p), ...done.map(([p]) => p)]) p.reject(why);
      return null;
    }
  }

  /**
   * One batch of {@link drain}: the decisions (capture-is-new.ts: one index
   * query for the batch), the appends, one fsync per WARC file written, the
   * index commit ({@link commit}), then the answers.
   *
   * A revisit whose original was written in this same batch (an import of
   * a response and its revisit a day later, say) needs the original's row
   * id, which it has only once committed: the batch ends before that
   * capture, and it and the captures after it go back to the head of the
   * queue (the next batch decides them again, against the index).
   */
  private async writeBatch(batch: Pending[]): Promise<void> {
    const written: { p: PendingCapture; kind: 'new' | 'revisit'; rec: WrittenRecord; refersTo?: string }[] = [];
    const done: [PendingCapture, Omit<IngestResult, 'bytes'>][] = [];
    let captures = 0;
    let t = performance.now();
    let decide: DedupBatch;
    try {
      decide = await this.isNew.batch(batch.map((p) => p.row));
    } catch (err) {
      for (const p of batch) {
        p.reject(err);
        await p.body.dispose();
      }
      return;
    }
    this.stats.ms.lookup += performance.now() - t;
    t = performance.now();
    const plans: Plan[] = [];
    for (const [i, p] of batch.entries()) {
      const v = decide.verdict(i, p.row);
      if (v.kind === 'revisit' && v.of.refers_to === null && decide.inBatch(v.of)) {
        this.queue.unshift(...batch.slice(i));
        break;
      }
      captures++;
      if (v.kind === 'duplicate' || v.kind === 'conflict') {
        const row = v.kind === 'duplicate' ? v.of : v.with;
        done.push([p, { kind: v.kind, created: false, conflict: v.kind === 'conflict', row }]);
        this.stats[v.kind === 'duplicate' ? 'duplicates' : 'conflicts']++;
        await p.body.dispose();
        continue;
      }
      try {
        const found = v.kind === 'revisit' ? await this.originalOf(v.of) : p.revisitOf && (await this.originalOf(p.revisitOf));
        plans.push(planOf(p, found));
        decide.wrote(p.row);
      } catch (err) {
        p.reject(err);
        await p.body.dispose();
      }
    }
    const members = await this.gzipBatch(plans, done);
    if (!members) return;
    for (const { p, raw, found } of plans) {
      try {
        const w = this.writer(p.archive.id);
        const rec = raw ? await w.appendEncoded(members.shift()!) : await w.append(streamedOf(p));
        p.row.warc_file = rec.file;
        p.row.warc_offset = rec.offset;
        p.row.warc_length = rec.length;
        p.row.refers_to = found ? found.row.id : null;
        written.push({ p, kind: found ? 'revisit' : 'new', rec, refersTo: found?.recordId });
      } catch (err) {
        p.reject(err);
        // Duplicates of (and conflicts with) it point at nothing: not acknowledged either.
        for (let i = done.length - 1; i >= 0; i--) if (done[i][1].row === p.row) done.splice(i, 1)[0][0].reject(err);
      } finally {
        await p.body.dispose();
      }
    }
    this.stats.batches++;
    this.stats.ms.append += performance.now() - t;
    let committing = false;
    try {
      t = performance.now();
      for (const w of this.writers.values()) await w.sync();
      const syncMs = performance.now() - t;
      this.stats.ms.sync += syncMs;
      if (captures) this.onBatch?.(captures, written.length, syncMs / 1000);
      let lost = new Set<NewMementoRow>();
      if (written.length) {
        t = performance.now();
        committing = true;
        lost = await this.commit(
          written.map(({ p }) => p.row),
          written.map(({ p, rec, refersTo }) =>
            captureLeaf(p.row, {
              record_id: rec.recordId,
              digest: rec.blockDigest,
              via: p.via,
              ...(refersTo === undefined ? {} : { refers_to: refersTo, payload_digest: p.row.digest }),
            }),
          ),
        );
        this.stats.ms.commit += performance.now() - t;
      }
      for (const { p, kind } of written) {
        if (lost.has(p.row)) continue;
        done.push([p, { kind, created: true, conflict: false, row: p.row }]);
        this.stats.written++;
        if (kind === 'revisit') this.stats.revisits++;
      }
      if (lost.size) await this.decideLost(lost, written, done);
    } catch (err) {
      // Not acknowledged: take the records back out of the WARC files, so that no
      // unindexed record is left between acknowledged ones. Not after a failed commit to
      // PostgreSQL: it may have committed all the same (the connection lost before COMMIT's
      // answer), and a row naming records taken back would be worse than unindexed records.
      if (!committing || this.config.indexPostgres === undefined)
        for (const { p } of [...written].reverse())
          await this.writer(p.archive.id)
            .rollback(p.row.warc_file, p.row.warc_offset)
            .catch(() => undefined);
      for (const { p } of written) p.reject(err);
      // Duplicates of (and conflicts with) a capture of this batch point at nothing now: not acknowledged either.
      const lost = new Set<NewMementoRow | MementoRow>(written.map(({ p }) => p.row));
      for (let i = done.length - 1; i >= 0; i--) {
        if (lost.has(done[i][1].row)) {
          done[i][0].reject(err);
          done.splice(i, 1);
        }
      }
    }
    this.stats.fsyncs = [...this.writers.values()].reduce((n, w) => n + w.fsyncs, 0);
    for (const [p, r] of done) p.resolve(r);
  }

  /**
   * The memento whose `response` record holds the payload of a revisit
   * whose predecessor is `prev` (committed): the row its `refers_to` names,
   * else `prev` itself — with its row id, which a row the store committed
   * earlier and kept in memory does not carry (one lookup by its key, once
   * per revisit) — and its record's `WARC-Record-ID`, read from the record's
   * WARC header (the revisit record and its log entry name it). `undefined`
   * when that row is gone (purged) or its record cannot be read: the
   * capture is then stored whole, as a new memento.
   */
  private async originalOf(prev: AnyRow): Promise<{ row: MementoRow; recordId: string } | undefined> {
    const row =
      prev.refers_to !== null
        ? await this.index.byId(prev.refers_to)
        : 'id' in prev
          ? prev
          : await this.index.rowAt(prev.archive_id, prev.urlkey, prev.datetime);
    if (!row) return undefined;
    const head = await digestRecord(this.warcs, row.warc_file, row.warc_offset, row.warc_length, { headOnly: true }).catch(() => undefined);
    const recordId = head?.type === 'response' ? head.field('warc-record-id') : undefined;
    return recordId ? { row, recordId } : undefined;
  }

  /**
   * The commit point of the write path: `rows` (whose WARC records are
   * fsynced) and their evidence log entries `leaves` go into the index in
   * one transaction, never replacing a row (`insertNew`; the entries of
   * the rows left out are left out too), and then everything that keeps
   * index rows in memory learns of them. Throws the index's error (nothing
   * committed then).
   * @returns the rows left out: another daemon sharing the index committed their key first
   */
  private async commit(rows: NewMementoRow[], leaves: NewLeaf[]): Promise<Set<NewMementoRow>> {
    this.stats.transactions++;
    const lost = new Set(await this.index.insertNew(rows, { leaves }));
    // The read cache's one rule (read-cache.ts): a write of a urlkey drops every answer read for it, before the PUTs are answered.
    this.index.cache.written(rows.map((r) => r.urlkey));
    this.isNew.committed(lost.size ? rows.filter((r) => !lost.has(r)) : rows);
    this.onCommitted?.();
    return lost;
  }

  /**
   * The captures of a batch whose rows another daemon beat to their key
   * (urlkey, archive, second) between this batch's decisions and its commit
   * ({@link commit}): each is decided again against the memento that
   * daemon stored (capture-is-new.ts `lost`): a duplicate of it (200) or a
   * conflict with it (409), as if it had been stored before. Nothing is
   * indexed for them; their records stay unindexed in the WARC object
   * (`verify` counts them; an object holding nothing else is an orphan). A
   * capture of the batch that was found a duplicate of (or in conflict
   * with) a lost row is decided again the same way when at its second,
   * else answered 503 (not stored; the sender retries, and the next batch
   * decides it against the index). Never throws: a failed lookup fails
   * the captures that needed it.
   */
  private async decideLost(lost: Set<NewMementoRow>, written: { p: PendingCapture }[], done: [PendingCapture, Omit<IngestResult, 'bytes'>][]): Promise<void> {
    const again: [PendingCapture, NewMementoRow][] = written.filter(({ p }) => lost.has(p.row)).map(({ p }) => [p, p.row]);
    for (let i = done.length - 1; i >= 0; i--) {
      const [p, r] = done[i];
      if (!lost.has(r.row as NewMementoRow)) continue;
      again.push([p, r.row as NewMementoRow]);
      done.splice(i, 1);
      this.stats[r.kind === 'duplicate' ? 'duplicates' : 'conflicts']--;
    }
    for (const [p, row] of again) {
      const winner = await this.index.rowAt(row.archive_id, row.urlkey, row.datetime).catch((err: unknown) => err as Error);
      if (winner instanceof Error || winner?.datetime !== p.row.datetime) {
        p.reject(winner instanceof Error ? winner : httpError(503, LOST_RACE, { headers: { 'retry-after': '1' } }));
        continue;
      }
      const kind = this.isNew.lost(p.row, winner).kind === 'duplicate' ? 'duplicate' : 'conflict';
      this.stats[kind === 'duplicate' ? 'duplicates' : 'conflicts']++;
      done.push([p, { kind, created: false, conflict: kind === 'conflict', row: winner }]);
    }
  }

  /**
   * Reads the stored response of a memento (status, headers, body stream;
   * the body also whole in `bodyBuffer` for a small record): see
   * {@link WarcReader.read}. For a revisit (`refers_to` set), the status
   * and headers of its revisit record's HTTP head (as served then) and the
   * body of the response record of the memento it refers to.
   * @throws when a WARC record is missing or damaged, or a revisit's original row is gone.
   */
  readResponse(row: MementoRow): Promise<StoredResponse> {
    return readMementoResponse(
      (f, o, n) => this.reader.read(f, o, n),
      (id) => this.index.byId(id),
      row,
    );
  }

  /**
   * The first `max` raw bytes of a memento's own record (its gzip member,
   * not inflated; a revisit's own record, not its original's), in a buffer
   * of their own: see {@link WarcReader.memberBytes}.
   * @throws when the WARC file is missing or shorter
   */
  readRecordBytes(row: MementoRow, max: number): Promise<Uint8Array> {
    return this.reader.memberBytes(row.warc_file, row.warc_offset, row.warc_length, max);
  }

  /** Hot small response records kept in memory (record-cache.ts): their count, bytes, hits and misses. */
  get recordCache(): RecordCache {
    return this.reader.cache;
  }

  /** Waits for queued writes, closes WARC files and the index. */
  async close(): Promise<void> {
    await this.idle;
    await this.gzip.close();
    for (const w of this.writers.values()) await w.close();
    await this.reader.close();
    await this.warcs.close();
    await this.index.close();
    await this.lock.release();
  }
}
