/**
 * The durable spool (DESIGN.md "Capture proxy": "captures that could not be
 * delivered go to a durable spool on disk and are re-sent later, in order").
 *
 * Layout of the spool folder (`spool:` in proxy.yaml):
 *
 * ```
 * spool/
 *   tmp/                      captures being teed (deleted at start: a crash left them half-written)
 *   <host>_<port>/            one queue per archive endpoint (ArchiveHost:ArchivePort)
 *     0000000000000042.capture  one capture record waiting to be re-sent
 *   rejected/                 captures the archive refused with a 4xx that a retry cannot fix (kept for the sysadmin)
 * ```
 *
 * A spool file is one line `CAPTURE-SPOOL/1 {json}\n` ({@link SpoolMeta}:
 * where to PUT it, the URI-R, the vhost) followed by the capture record
 * exactly as the live PUT sent it (or would have). Files are created with
 * mode 0600; the `ArchiveToken` is not written to disk, it is taken from the
 * vhost's current settings when the file is re-sent.
 *
 * How a capture gets here: while the response streams, every capture is
 * teed ({@link SpoolTee}): up to 64 KiB in memory, beyond that into a file
 * under `tmp/` (written asynchronously: the client never waits on the disk).
 * When the archive acknowledges the live PUT, the tee is thrown away. When
 * the live PUT fails (archive down, slow, timed out, non-2xx, cut half-way)
 * or was not tried (the archive's queue is backing off), the tee is
 * completed, fdatasynced and renamed into the queue under the next sequence
 * number: from then on it survives a crash (kill -9) and is re-sent on the
 * next start.
 *
 * Re-sending: one sender per queue sends the files in sequence order, one
 * at a time, each as one PUT (`Content-Length`, `Connection: close`, the
 * same path and the same record bytes, so the archive's dedup makes a
 * second copy harmless); a 2xx deletes the file. A failure (no connection,
 * timeout, 5xx, 401, 403, 408, 429) waits `retryMinMs`, doubling up to
 * `retryMaxMs`, and tries the same file again. Any other 4xx means the
 * archive will never take it: the file moves to `rejected/` and the next
 * one goes. While a queue is backing off, new captures for that archive
 * skip the live PUT and go straight into the queue (behind the older ones).
 *
 * Bound: the files in the queues plus the tees in progress hold at most
 * `maxBytes`. A capture that would pass it is not spooled: it is dropped
 * (refuse-new: what is queued stays queued and in order), logged and
 * counted (`capture_proxy_captures_dropped_total{reason="spool-full"}`).
 *
 * A slow disk: a tee whose disk writes fall more than `maxPendingBytes`
 * (8 MiB) behind the response is "behind". With `slowDisk: 'wait'` (the
 * default, config `spool_slow_disk: wait`) the proxy then reads that
 * response from the content server only as fast as the disk takes it, so
 * memory stays bounded and the capture is kept; the client of that one
 * response is slowed to disk speed (only a response far larger than 8 MiB
 * on a disk slower than the client's network can see it). With `drop` the
 * tee gives up instead (`spool-slow`): the client is never slowed, and the
 * capture is lost if the live PUT fails too.
 */
import { EventEmitter } from 'node:events';
import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, rename, rm, stat, unlink, type FileHandle } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import type { Logger } from './log.js';
import { silentLogger } from './log.js';
import type { ProxyMetrics } from './metrics.js';

/** What a spool file says about its capture (the JSON of its first line). */
export interface SpoolMeta {
  /** ArchiveHost */
  host: string;
  /** ArchivePort */
  port: number;
  /** PUT path: ArchivePath + URI-R. */
  path: string;
  uriR: string;
  /** `server_name` of the vhost (its current ArchiveToken is used on re-send). */
  vhost: string;
  /** When the capture started, ISO 8601. */
  capturedAt: string;
}

/** Settings of a {@link Spool}; every one has a default. */
export interface SpoolOptions {
  /** Most bytes in the queues plus the tees in progress (default 4 GiB). */
  maxBytes?: number;
  /** First wait after a failure, ms (default 1000). */
  retryMinMs?: number;
  /** Longest wait, ms (default 60 000). */
  retryMaxMs?: number;
  /** A re-send PUT gives up when the archive is silent this long, ms (default 60 000). */
  archiveTimeoutMs?: number;
  /** A tee stays in memory up to this many bytes, then goes to a tmp file (default 64 KiB). */
  memoryBytes?: number;
  /** A tee whose disk writes lag by more than this is "behind", bytes (default 8 MiB). */
  maxPendingBytes?: number;
  /**
   * What a tee that is behind does: `wait` (default): it asks the proxy to
   * read the response only as fast as the disk takes it ({@link SpoolTee.behind});
   * `drop`: it gives up, the capture is not spooled (the client is never slowed).
   */
  slowDisk?: 'wait' | 'drop';
  /** Do not start the senders (tests that look at the queue). */
  paused?: boolean;
  log?: Logger;
  metrics?: ProxyMetrics;
  /** The `ArchiveToken` to send with a re-sent capture (looked up in the current vhosts). */
  tokenFor?: (meta: SpoolMeta) => string | undefined;
}

const MAGIC = 'CAPTURE-SPOOL/1 ';
const FILE_RE = /^(\d{16})\.capture$/;

/** A re-send that the archive refused for good (4xx other than 401, 403, 408, 429). */
function isPermanentRefusal(status: number): boolean {
  return status >= 400 && status < 500 && ![401, 403, 408, 429].includes(status);
}

interface QueuedFile {
  seq: number;
  file: string;
  size: number;
}

/**
 * The captures waiting for one archive endpoint, and their sender. Also the
 * endpoint's health as the proxy sees it: {@link down} while backing off.
 */
export class ArchiveQueue {
  readonly dir: string;
  private readonly files: QueuedFile[] = [];
  private delay: number;
  private nextTry = 0;
  private running = false;
  private closed = false;
  private wake: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private current: http.ClientRequest | undefined;
  /** True while the archive is failing: new captures skip the live PUT. */
  down = false;
  /** The queue's folder exists (made once, not on every commit). */
  dirReady: Promise<unknown> | undefined;

  constructor(
    private readonly spool: Spool,
    readonly name: string,
  ) {
    this.dir = path.join(spool.dir, name);
    this.delay = spool.retryMinMs;
  }

  /** Captures waiting. */
  get depth(): number {
    return this.files.length;
  }

  /** A live PUT to this archive failed: back off (unless already backing off). */
  noteFailure(): void {
    if (this.down) return;
    this.down = true;
    this.nextTry = Date.now() + this.delay;
    this.delay = Math.min(this.delay * 2, this.spool.retryMaxMs);
  }

  /** A PUT to this archive succeeded: it is up; send what is queued. */
  noteSuccess(): void {
    const wasDown = this.down;
    this.down = false;
    this.delay = this.spool.retryMinMs;
    this.nextTry = 0;
    if (wasDown) this.interrupt();
    this.kick();
  }

  /** @internal queues a committed file (its seq is the highest so far). */
  add(entry: QueuedFile): void {
    this.files.push(entry);
    this.kick();
  }

  /** @internal */
  load(entries: QueuedFile[]): void {
    this.files.push(...entries);
    this.files.sort((a, b) => a.seq - b.seq);
  }

  /** Starts the sender unless it runs, is paused, or the queue is empty. */
  kick(): void {
    if (this.running || this.closed || this.spool.paused || this.files.length === 0) return;
    this.running = true;
    void this.run().finally(() => {
      this.running = false;
      if (!this.closed && this.files.length > 0 && !this.spool.paused) this.kick();
    });
  }

  /** Stops the sender: cuts a re-send in flight (the file stays queued). */
  async close(): Promise<void> {
    this.closed = true;
    this.interrupt();
    this.current?.destroy();
    while (this.running) await new Promise((r) => setImmediate(r));
  }

  private interrupt(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  private sleepUntil(t: number): Promise<void> {
    const ms = t - Date.now();
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.wake = resolve;
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.wake = undefined;
        resolve();
      }, ms);
    });
  }

  private async run(): Promise<void> {
    const { log, metrics } = this.spool;
    while (!this.closed && this.files.length > 0) {
      if (this.down) await this.sleepUntil(this.nextTry);
      if (this.closed) return;
      const entry = this.files[0];
      let result: { ok: true; status: number } | { ok: false; status?: number; reason: string };
      let meta: SpoolMeta | undefined;
      try {
        const read = await readMeta(entry.file);
        meta = read.meta;
        if (this.closed) return; // closed while the meta line was read: no new PUT (close() would wait on it)
        result = await this.send(entry, read.meta, read.offset);
      } catch (err) {
        result = { ok: false, reason: `spool file unreadable: ${(err as Error).message}` };
        if ((err as NodeJS.ErrnoException).code === 'ENOENT' || err instanceof SyntaxError || /spool header/.test((err as Error).message)) {
          // Gone or not ours: nothing to re-send.
          log({ level: 'error', msg: 'spool file dropped: unreadable', file: entry.file, error: (err as Error).message });
          this.files.shift();
          this.spool.release(entry.size);
          await rm(entry.file, { force: true });
          metrics?.dropped.inc({ reason: 'spool-error' });
          this.spool.changed();
          continue;
        }
      }
      if (this.closed) return;
      if (result.ok) {
        // Count it sent in the same turn as it leaves the queue (the depth), so the two never disagree.
        this.files.shift();
        metrics?.capturesSent.inc({ via: 'spool' });
        await unlink(entry.file).catch(() => {});
        this.spool.release(entry.size);
        log({ msg: 'spooled capture sent', uriR: meta?.uriR, archiveStatus: result.status, seq: entry.seq, queue: this.name, depth: this.files.length });
        this.down = false;
        this.delay = this.spool.retryMinMs;
        this.spool.emit('sent', { meta, status: result.status });
        this.spool.changed();
        continue;
      }
      metrics?.putFailures.inc({ via: 'spool' });
      if (result.status !== undefined && isPermanentRefusal(result.status)) {
        this.files.shift();
        const dest = path.join(this.spool.dir, 'rejected', path.basename(entry.file));
        await mkdir(path.dirname(dest), { recursive: true });
        await rename(entry.file, dest).catch(() => rm(entry.file, { force: true }));
        this.spool.release(entry.size);
        metrics?.dropped.inc({ reason: 'rejected' });
        log({ level: 'error', msg: 'the archive refused a spooled capture for good; moved to rejected/', uriR: meta?.uriR, file: dest, reason: result.reason });
        this.spool.emit('rejected', { meta, status: result.status });
        this.spool.changed();
        continue;
      }
      this.down = true;
      this.nextTry = Date.now() + this.delay;
      log({ level: 'warn', msg: 'spooled capture not sent; retrying later', uriR: meta?.uriR, reason: result.reason, retryInMs: this.delay, queue: this.name, depth: this.files.length });
      this.delay = Math.min(this.delay * 2, this.spool.retryMaxMs);
    }
  }

  /** One re-send: PUT of the record bytes (after the meta line) with Content-Length. */
  private send(entry: QueuedFile, meta: SpoolMeta, offset: number): Promise<{ ok: true; status: number } | { ok: false; status?: number; reason: string }> {
    return new Promise((resolve) => {
      let settled = false;
      const done = (r: { ok: true; status: number } | { ok: false; status?: number; reason: string }) => {
        if (settled) return;
        settled = true;
        this.current = undefined;
        body.destroy();
        resolve(r);
      };
      const headers: Record<string, string | number> = { 'Content-Length': entry.size - offset, Connection: 'close' };
      const token = this.spool.tokenFor?.(meta);
      if (token) headers.Authorization = `Bearer ${token}`;
      const body = createReadStream(entry.file, { start: offset });
      const req = http.request({ host: meta.host, port: meta.port, method: 'PUT', path: meta.path, agent: false, headers });
      this.current = req;
      req.setTimeout(this.spool.archiveTimeoutMs, () => {
        done({ ok: false, reason: `the archive sent nothing for ${this.spool.archiveTimeoutMs} ms` });
        req.destroy();
      });
      req.on('error', (err: NodeJS.ErrnoException) => done({ ok: false, reason: `PUT failed: ${err.code ?? ''} ${err.message}`.trim() }));
      body.on('error', (err) => {
        done({ ok: false, reason: `reading the spool file failed: ${err.message}` });
        req.destroy();
      });
      req.on('response', (res) => {
        const status = res.statusCode ?? 0;
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          if (text.length < 1024) text += d;
        });
        res.on('error', () => {});
        res.on('end', () => {
          if (status >= 200 && status < 300) done({ ok: true, status });
          else done({ ok: false, status, reason: `the archive answered ${status}: ${text.split('\n')[0].slice(0, 300)}` });
        });
        res.on('close', () => done({ ok: false, status, reason: `the archive's answer (${status}) broke off` }));
      });
      body.pipe(req);
    });
  }
}

/** `bufs` without their first `n` bytes. */
function skipBytes(bufs: Buffer[], n: number): Buffer[] {
  let i = 0;
  while (i < bufs.length && n >= bufs[i].length) n -= bufs[i++].length;
  const rest = bufs.slice(i);
  if (rest.length && n > 0) rest[0] = rest[0].subarray(n);
  return rest;
}

/** Reads the meta line of a spool file: the meta and the offset of the record. */
async function readMeta(file: string): Promise<{ meta: SpoolMeta; offset: number }> {
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.alloc(16 * 1024);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    const nl = buf.subarray(0, bytesRead).indexOf(0x0a);
    const line = nl >= 0 ? buf.subarray(0, nl).toString('utf8') : '';
    if (!line.startsWith(MAGIC)) throw new Error(`no spool header (${MAGIC.trim()}) in ${file}`);
    const meta = JSON.parse(line.slice(MAGIC.length)) as SpoolMeta;
    if (typeof meta.host !== 'string' || typeof meta.port !== 'number' || typeof meta.path !== 'string') throw new Error(`bad spool header in ${file}`);
    return { meta, offset: nl + 1 };
  } finally {
    await fh.close();
  }
}

/** The spool folder: its queues, its bound, its tees. See the module's comment. */
export class Spool extends EventEmitter {
  readonly dir: string;
  readonly tmpDir: string;
  readonly maxBytes: number;
  readonly retryMinMs: number;
  readonly retryMaxMs: number;
  readonly archiveTimeoutMs: number;
  readonly memoryBytes: number;
  readonly maxPendingBytes: number;
  readonly slowDisk: 'wait' | 'drop';
  readonly log: Logger;
  readonly metrics: ProxyMetrics | undefined;
  readonly tokenFor: ((meta: SpoolMeta) => string | undefined) | undefined;
  paused: boolean;
  private seq = 0;
  private tmpSeq = 0;
  private used = 0;
  private readonly queues = new Map<string, ArchiveQueue>();
  private readonly tees = new Set<SpoolTee>();
  private closed = false;

  private constructor(dir: string, o: SpoolOptions) {
    super();
    this.dir = dir;
    this.tmpDir = path.join(dir, 'tmp');
    this.maxBytes = o.maxBytes ?? 4 * 1024 * 1024 * 1024;
    this.retryMinMs = o.retryMinMs ?? 1000;
    this.retryMaxMs = Math.max(o.retryMaxMs ?? 60_000, this.retryMinMs);
    this.archiveTimeoutMs = o.archiveTimeoutMs ?? 60_000;
    this.memoryBytes = o.memoryBytes ?? 64 * 1024;
    this.maxPendingBytes = o.maxPendingBytes ?? 8 * 1024 * 1024;
    this.slowDisk = o.slowDisk ?? 'wait';
    this.log = o.log ?? silentLogger;
    this.metrics = o.metrics;
    this.tokenFor = o.tokenFor;
    this.paused = o.paused ?? false;
  }

  /**
   * Opens (creates) the spool folder: removes what a crash left in `tmp/`,
   * loads the queues in sequence order and starts their senders.
   *
   * @throws the file system error when the folder cannot be created or read.
   */
  static async open(dir: string, options: SpoolOptions = {}): Promise<Spool> {
    const spool = new Spool(path.resolve(dir), options);
    await mkdir(spool.tmpDir, { recursive: true, mode: 0o700 });
    const leftovers = await readdir(spool.tmpDir);
    if (leftovers.length) {
      await Promise.all(leftovers.map((f) => rm(path.join(spool.tmpDir, f), { force: true, recursive: true })));
      spool.log({ level: 'warn', msg: 'spool: removed captures left half-written by a crash (their live PUT outcome is unknown)', count: leftovers.length, dir: spool.tmpDir });
    }
    let total = 0;
    for (const d of await readdir(spool.dir, { withFileTypes: true })) {
      if (!d.isDirectory() || d.name === 'tmp' || d.name === 'rejected') continue;
      const q = spool.queueNamed(d.name);
      const entries: QueuedFile[] = [];
      for (const f of await readdir(path.join(spool.dir, d.name))) {
        const m = FILE_RE.exec(f);
        if (!m) continue;
        const file = path.join(spool.dir, d.name, f);
        const size = (await stat(file)).size;
        const seq = Number(m[1]);
        entries.push({ seq, file, size });
        spool.seq = Math.max(spool.seq, seq);
        spool.used += size;
      }
      q.load(entries);
      total += entries.length;
    }
    if (total) spool.log({ msg: 'spool: captures waiting from an earlier run; re-sending them', count: total, bytes: spool.used, dir: spool.dir });
    spool.changed();
    for (const q of spool.queues.values()) q.kick();
    return spool;
  }

  /** Captures waiting in all queues. */
  get depth(): number {
    let n = 0;
    for (const q of this.queues.values()) n += q.depth;
    return n;
  }

  /** Bytes held (queued files plus tees in progress). */
  get bytes(): number {
    return this.used;
  }

  /** The queue of the archive at `host:port` (created on first use). */
  queue(host: string, port: number): ArchiveQueue {
    return this.queueNamed(`${host.replace(/[^A-Za-z0-9.-]/g, '_')}_${port}`);
  }

  private queueNamed(name: string): ArchiveQueue {
    let q = this.queues.get(name);
    if (!q) {
      q = new ArchiveQueue(this, name);
      this.queues.set(name, q);
    }
    return q;
  }

  /** Starts teeing one capture (see {@link SpoolTee}). */
  tee(meta: SpoolMeta): SpoolTee {
    const t = new SpoolTee(this, meta);
    this.tees.add(t);
    return t;
  }

  /** Starts the senders of a spool opened with `paused: true`. */
  resume(): void {
    this.paused = false;
    for (const q of this.queues.values()) q.kick();
  }

  /**
   * Stops the senders (a re-send in flight is cut; its file stays queued)
   * and waits for the tees being committed. Idempotent.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.queues.values()].map((q) => q.close()));
    await Promise.all([...this.tees].map((t) => t.whenSettled()));
  }

  /** @internal reserves `n` bytes of the bound; false when full. */
  reserve(n: number): boolean {
    if (this.used + n > this.maxBytes) return false;
    this.used += n;
    return true;
  }

  /** @internal */
  release(n: number): void {
    this.used = Math.max(0, this.used - n);
  }

  /** @internal */
  nextSeq(): number {
    return ++this.seq;
  }

  /** @internal a fresh tmp file name */
  tmpPath(): string {
    return path.join(this.tmpDir, `${process.pid}-${Date.now()}-${++this.tmpSeq}.part`);
  }

  /** @internal */
  teeDone(t: SpoolTee): void {
    this.tees.delete(t);
  }

  /** @internal updates the gauges; emits `'changed'`. */
  changed(): void {
    this.metrics?.spoolDepth.set(this.depth);
    this.metrics?.spoolBytes.set(this.used);
    this.emit('changed');
  }
}

/**
 * The spool copy of one capture while it streams: bytes go to memory (up
 * to `memoryBytes`), then to a tmp file, never waiting. Ends in
 * {@link discard} (the archive has it) or {@link commit} (into the queue).
 */
export class SpoolTee {
  readonly meta: SpoolMeta;
  private chunks: Buffer[] = [];
  private memBytes = 0;
  private fileStarted = false;
  private fh: FileHandle | undefined;
  private tmp: string | undefined;
  private chain: Promise<void> = Promise.resolve();
  /** Bytes waiting for the file writer. */
  private queued: Buffer[] = [];
  private pumping = false;
  private pending = 0;
  private reserved = 0;
  private size = 0;
  private state: 'open' | 'committing' | 'done' = 'open';
  private settledP: Promise<void> | undefined;
  /** Why this capture cannot be spooled (`spool-full`, `spool-slow`, `spool-error: …`), once it cannot. */
  dropped: string | undefined;

  constructor(
    private readonly spool: Spool,
    meta: SpoolMeta,
  ) {
    this.meta = meta;
    this.write(Buffer.from(MAGIC + JSON.stringify(meta) + '\n', 'utf8'));
  }

  /** Adds bytes of the capture record. Never waits; may drop the tee (see {@link dropped}). */
  write(chunk: Buffer): void {
    if (this.state !== 'open' || this.dropped !== undefined) return;
    if (!this.spool.reserve(chunk.length)) return this.drop('spool-full');
    this.reserved += chunk.length;
    this.size += chunk.length;
    if (!this.fileStarted && this.memBytes + chunk.length <= this.spool.memoryBytes) {
      this.chunks.push(chunk);
      this.memBytes += chunk.length;
      return;
    }
    this.startFile();
    this.enqueue(chunk);
    if (this.pending > this.spool.maxPendingBytes && this.spool.slowDisk === 'drop') this.drop('spool-slow');
  }

  /**
   * True while the disk writes lag by more than `maxPendingBytes` (and
   * `slowDisk` is `wait`): the caller should stop reading the response until
   * {@link whenCaughtUp} resolves.
   */
  get behind(): boolean {
    return this.dropped === undefined && this.state === 'open' && this.spool.slowDisk === 'wait' && this.pending > this.spool.maxPendingBytes;
  }

  /** Resolves once the disk writes lag by less than half of `maxPendingBytes` (or the tee is dropped or done). */
  whenCaughtUp(): Promise<void> {
    if (!this.behind) return Promise.resolve();
    return new Promise((resolve) => this.caughtUp.push(resolve));
  }

  private caughtUp: (() => void)[] = [];

  private checkCaughtUp(): void {
    if (this.caughtUp.length === 0) return;
    if (this.dropped !== undefined || this.state !== 'open' || this.pending <= this.spool.maxPendingBytes / 2) {
      const waiting = this.caughtUp;
      this.caughtUp = [];
      for (const w of waiting) w();
    }
  }

  /** The capture reached the archive (or is not to be kept): frees everything. */
  discard(): void {
    if (this.state === 'done') return;
    this.state = 'done';
    this.checkCaughtUp();
    this.spool.release(this.reserved);
    this.reserved = 0;
    this.settledP = this.cleanup().finally(() => this.spool.teeDone(this));
  }

  /**
   * The record is complete and must be kept: writes what is left, fsyncs,
   * renames it into the queue of its archive.
   *
   * @returns `spooled`, or `dropped` with the reason (spool full, too slow,
   *   a disk error); never rejects.
   */
  commit(queue: ArchiveQueue): Promise<{ result: 'spooled'; seq: number } | { result: 'dropped'; reason: string }> {
    if (this.state !== 'open') return Promise.resolve({ result: 'dropped', reason: 'the capture was already settled' });
    this.state = 'committing';
    this.checkCaughtUp();
    const p = (async (): Promise<{ result: 'spooled'; seq: number } | { result: 'dropped'; reason: string }> => {
      if (this.dropped === undefined) {
        this.startFile();
        await this.chain;
      }
      if (this.dropped !== undefined) {
        await this.cleanup();
        return { result: 'dropped', reason: this.dropped };
      }
      try {
        await this.fh!.datasync();
        await this.fh!.close();
        this.fh = undefined;
        queue.dirReady ??= mkdir(queue.dir, { recursive: true, mode: 0o700 });
        await queue.dirReady.catch(() => mkdir(queue.dir, { recursive: true, mode: 0o700 }));
        const seq = this.spool.nextSeq();
        const file = path.join(queue.dir, `${String(seq).padStart(16, '0')}.capture`);
        await rename(this.tmp!, file);
        this.tmp = undefined;
        this.reserved = 0; // now counted as a queued file
        queue.add({ seq, file, size: this.size });
        this.spool.changed();
        return { result: 'spooled', seq };
      } catch (err) {
        this.dropped = `spool-error: ${(err as Error).message}`;
        await this.cleanup();
        return { result: 'dropped', reason: this.dropped };
      }
    })().finally(() => {
      this.state = 'done';
      this.spool.teeDone(this);
    });
    this.settledP = p.then(() => undefined);
    return p;
  }

  /** @internal resolves once discard/commit has finished with the disk. */
  whenSettled(): Promise<void> {
    return this.settledP ?? Promise.resolve();
  }

  private drop(reason: string): void {
    if (this.dropped !== undefined) return;
    this.dropped = reason;
    this.chunks = [];
    this.memBytes = 0;
    this.spool.release(this.reserved);
    this.reserved = 0;
    this.checkCaughtUp();
  }

  private startFile(): void {
    if (this.fileStarted) return;
    this.fileStarted = true;
    const tmp = this.spool.tmpPath();
    this.tmp = tmp;
    this.queued = this.chunks;
    this.pending = this.memBytes;
    this.chunks = [];
    this.memBytes = 0;
    this.chain = open(tmp, 'w', 0o600).then(
      (fh) => {
        this.fh = fh;
        return this.pump();
      },
      (err: Error) => this.drop(`spool-error: ${err.message}`),
    );
  }

  /** Queues bytes for the file; the writer writes everything queued with one writev. */
  private enqueue(chunk: Buffer): void {
    this.queued.push(chunk);
    this.pending += chunk.length;
    if (this.fh && !this.pumping) this.chain = this.chain.then(() => this.pump());
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.queued.length && this.dropped === undefined && this.fh) {
        const batch = this.queued;
        this.queued = [];
        let n = batch.reduce((a, b) => a + b.length, 0);
        try {
          let bufs = batch;
          while (bufs.length) {
            const { bytesWritten } = await this.fh.writev(bufs);
            n -= bytesWritten;
            this.pending -= bytesWritten;
            bufs = skipBytes(bufs, bytesWritten);
            this.checkCaughtUp();
          }
        } catch (err) {
          this.pending -= n;
          this.drop(`spool-error: ${(err as Error).message}`);
        }
      }
    } finally {
      this.queued = [];
      this.pumping = false;
      this.checkCaughtUp();
    }
  }

  private async cleanup(): Promise<void> {
    this.chunks = [];
    await this.chain;
    const fh = this.fh;
    this.fh = undefined;
    if (fh) await fh.close().catch(() => {});
    const tmp = this.tmp;
    this.tmp = undefined;
    if (tmp) await rm(tmp, { force: true });
    this.spool.release(this.reserved);
    this.reserved = 0;
  }
}
