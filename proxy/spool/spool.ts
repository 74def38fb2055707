/**
 * The durable spool: captures the live PUT did not deliver wait here, on
 * disk, to be re-sent in order, one queue per archive endpoint.
 *
 * ```
 * spool/
 *   tmp/                        captures being teed (removed at start: a crash left them half-written)
 *   <host>_<port>/              one queue per archive endpoint (ArchiveHost:ArchivePort)
 *     0000000000000042.capture  one capture waiting to be re-sent (proxy/spool/file.ts)
 *   rejected/                   captures the archive refused for good (kept for the sysadmin)
 * ```
 *
 * Folders are 0700, files 0600: captures hold what visitors asked for.
 *
 * {@link Spool} owns the folder, the queues (proxy/spool/queue.ts) and the
 * tees (proxy/spool/tee.ts), and the bound: queued files, tees in progress
 * and `rejected/` hold at most `maxBytes`. Room is made by deleting the
 * oldest rejected captures first (logged); when there are none left, a
 * capture that would pass the bound is refused (refuse-new: what is queued
 * stays queued and in order).
 */
import { chmod, mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import type http from 'node:http';
import path from 'node:path';
import type { Logger } from '../log.js';
import { silentLogger } from '../log.js';
import type { ProxyMetrics } from '../metrics.js';
import { queueDirName, REJECTED_DIR, type SpoolMeta, seqOfFileName, TMP_DIR, tmpFileName } from './file.js';
import { ArchiveQueue, type QueuedFile } from './queue.js';
import { SpoolTee } from './tee.js';

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
  /** The proxy's connections to the archives (proxy/archive-put.ts); without it, a new connection per re-send. */
  agent?: http.Agent;
}

/** The spool folder: its queues, its bound, its tees. See the module's comment. */
export class Spool {
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
  readonly agent: http.Agent | undefined;
  paused: boolean;
  private seq = 0;
  private tmpSeq = 0;
  private used = 0;
  private readonly queues = new Map<string, ArchiveQueue>();
  private readonly tees = new Set<SpoolTee>();
  /** The files of `rejected/`, oldest first (counted in {@link used}). */
  private readonly rejected: { file: string; size: number }[] = [];
  private rejectedDirReady: Promise<unknown> | undefined;
  private closed = false;

  private constructor(dir: string, o: SpoolOptions) {
    this.dir = dir;
    this.tmpDir = path.join(dir, TMP_DIR);
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
    this.agent = o.agent;
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
    // An existing folder too (mkdir's mode applies only to the folders it makes).
    await chmod(spool.dir, 0o700).catch(() => {});
    await chmod(spool.tmpDir, 0o700).catch(() => {});
    const leftovers = await readdir(spool.tmpDir);
    if (leftovers.length) {
      await Promise.all(leftovers.map((f) => rm(path.join(spool.tmpDir, f), { force: true, recursive: true })));
      spool.log({
        level: 'warn',
        msg: 'spool: removed captures left half-written by a crash (their live PUT outcome is unknown)',
        count: leftovers.length,
        dir: spool.tmpDir,
      });
    }
    let total = 0;
    await spool.loadRejected();
    for (const d of await readdir(spool.dir, { withFileTypes: true })) {
      if (!d.isDirectory() || d.name === TMP_DIR || d.name === REJECTED_DIR) continue;
      const q = spool.queueNamed(d.name);
      const entries: QueuedFile[] = [];
      for (const f of await readdir(path.join(spool.dir, d.name))) {
        const seq = seqOfFileName(f);
        if (seq === undefined) continue;
        const file = path.join(spool.dir, d.name, f);
        const size = (await stat(file)).size;
        entries.push({ seq, file, size });
        spool.seq = Math.max(spool.seq, seq);
        spool.used += size;
      }
      q.load(entries);
      total += entries.length;
    }
    if (total) spool.log({ msg: 'spool: captures waiting from an earlier run; re-sending them', count: total, bytes: spool.used, dir: spool.dir });
    spool.makeRoom(0);
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
    return this.queueNamed(queueDirName(host, port));
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

  /**
   * For the tees: reserves `n` bytes of the bound, deleting the oldest
   * rejected captures to make room; false when that would pass `maxBytes`
   * all the same.
   */
  reserve(n: number): boolean {
    if (!this.makeRoom(n)) return false;
    this.used += n;
    return true;
  }

  /**
   * Deletes the oldest files of `rejected/` until `n` more bytes fit under
   * `maxBytes` (each deletion logged); false when they do not fit even with
   * `rejected/` empty.
   */
  private makeRoom(n: number): boolean {
    while (this.used + n > this.maxBytes && this.rejected.length > 0) {
      const oldest = this.rejected.shift()!;
      this.used -= oldest.size;
      void rm(oldest.file, { force: true });
      this.log({ level: 'warn', msg: 'spool: rejected capture deleted to make room (spool_max_bytes)', file: oldest.file, bytes: oldest.size });
    }
    return this.used + n <= this.maxBytes;
  }

  /** The `rejected/` folder (made 0700 on first use). */
  private async rejectedDir(): Promise<string> {
    const dir = path.join(this.dir, REJECTED_DIR);
    this.rejectedDirReady ??= mkdir(dir, { recursive: true, mode: 0o700 });
    await this.rejectedDirReady.catch(() => mkdir(dir, { recursive: true, mode: 0o700 }));
    return dir;
  }

  /** The files `rejected/` holds from an earlier run, oldest (lowest sequence) first, counted in the bound. */
  private async loadRejected(): Promise<void> {
    const dir = path.join(this.dir, REJECTED_DIR);
    const names = (await readdir(dir).catch(() => [] as string[])).filter((f) => seqOfFileName(f) !== undefined).sort();
    for (const f of names) {
      const file = path.join(dir, f);
      const size = (await stat(file)).size;
      this.rejected.push({ file, size });
      this.used += size;
      this.seq = Math.max(this.seq, seqOfFileName(f)!);
    }
  }

  /**
   * For the queues and tees: moves a complete spool file of `size` bytes
   * (already counted in the bound) into `rejected/`, where it stays
   * counted until room is needed.
   *
   * @returns its new path
   */
  async moveToRejected(file: string, size: number): Promise<string> {
    const dest = path.join(await this.rejectedDir(), path.basename(file));
    try {
      await rename(file, dest);
    } catch {
      await rm(file, { force: true });
      this.release(size);
      return dest;
    }
    this.rejected.push({ file: dest, size });
    this.changed();
    return dest;
  }

  /**
   * For `/healthz`: one line per archive that is unreachable while
   * captures wait for it (see {@link ArchiveQueue.health}); empty when all is well.
   */
  health(): string[] {
    return [...this.queues.values()].map((q) => q.health()).filter((l): l is string => l !== undefined);
  }

  /** For the tees and queues: gives back `n` bytes of the bound. */
  release(n: number): void {
    this.used = Math.max(0, this.used - n);
  }

  /** For the tees: the next sequence number of a queued file (higher than any in the folder). */
  nextSeq(): number {
    return ++this.seq;
  }

  /** For the tees: a fresh absolute path under `tmp/`. */
  tmpPath(): string {
    return path.join(this.tmpDir, tmpFileName(++this.tmpSeq));
  }

  /** For the tees: `t` is done with the disk (no longer waited on by {@link close}). */
  teeDone(t: SpoolTee): void {
    this.tees.delete(t);
  }

  /** For the tees and queues: updates the depth and bytes gauges. */
  changed(): void {
    this.metrics?.spoolDepth.set(this.depth);
    this.metrics?.spoolBytes.set(this.used);
  }
}
