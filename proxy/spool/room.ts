/**
 * The spool folder's room: what the queues (proxy/spool/queue.ts) and the
 * tees (proxy/spool/tee.ts) share of the spool, so that neither needs the
 * spool itself (proxy/spool/spool.ts owns them): the folder and its
 * `tmp/`, the bound on its bytes (queued files, tees in progress and
 * `rejected/` hold at most `maxBytes`; room is made by deleting the oldest
 * rejected captures first, logged; when there are none left, a capture
 * that would pass the bound is refused), `rejected/` itself, the names of
 * new files (sequence numbers, tmp paths), the settings they read, the log
 * and metrics, and a hook that reports a change of depth or bytes.
 */
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import type http from 'node:http';
import path from 'node:path';
import type { Logger } from '../log.js';
import { silentLogger } from '../log.js';
import type { ProxyMetrics } from '../metrics.js';
import { REJECTED_DIR, type SpoolMeta, seqOfFileName, TMP_DIR, tmpFileName } from './file.js';
import { CommitWriter } from './commit-writer.js';

/** Settings of a spool; every one has a default. */
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
   * read the response only as fast as the disk takes it (`SpoolTee.behind`);
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

/** See the module comment. One per spool. */
export class SpoolRoom {
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
  /** Writes the captures committed whole from memory (proxy/spool/commit-writer.ts). */
  readonly writer = new CommitWriter();
  private seq = 0;
  private tmpSeq = 0;
  private used = 0;
  /** The files of `rejected/`, oldest first (counted in {@link used}). */
  private readonly rejected: { file: string; size: number }[] = [];
  private rejectedDirReady: Promise<unknown> | undefined;

  /**
   * @param dir absolute path of the spool folder
   * @param changed called when the bytes held or the files queued change (the spool's gauges)
   */
  constructor(
    dir: string,
    o: SpoolOptions,
    readonly changed: () => void,
  ) {
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
  }

  /** Bytes held (queued files, tees in progress, `rejected/`). */
  get bytes(): number {
    return this.used;
  }

  /** A file found at start (`seq`, `size` bytes): counted in the bound; later sequence numbers are higher. */
  noteFound(seq: number, size: number): void {
    this.seq = Math.max(this.seq, seq);
    this.used += size;
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
  makeRoom(n: number): boolean {
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
  async loadRejected(): Promise<void> {
    const dir = path.join(this.dir, REJECTED_DIR);
    const names = (await readdir(dir).catch(() => [] as string[])).filter((f) => seqOfFileName(f) !== undefined).sort();
    for (const f of names) {
      const file = path.join(dir, f);
      const size = (await stat(file)).size;
      this.rejected.push({ file, size });
      this.noteFound(seqOfFileName(f)!, size);
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
}
