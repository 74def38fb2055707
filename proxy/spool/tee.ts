/**
 * The spool copy of one capture while it streams ({@link SpoolTee}): up to
 * `memoryBytes` in memory, beyond that in a file under `tmp/` written
 * asynchronously (one `writev` of whatever is waiting), so the client
 * never waits on the disk. It ends thrown away (the archive has the
 * capture) or committed: fdatasynced and renamed into its archive's queue,
 * from then on it survives a crash.
 *
 * A disk that falls more than `maxPendingBytes` behind makes the tee
 * "behind": with `slowDisk: 'wait'` the proxy then reads the response no
 * faster than the disk writes; with `drop` the tee gives up (`spool-slow`).
 */
import { type FileHandle, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { metaLine, type SpoolMeta, spoolFileName } from './file.js';
import type { ArchiveQueue } from './queue.js';
import type { SpoolRoom } from './room.js';

/** How a commit ended: in the queue under `seq`, or not spooled and why (`spool-full`, `spool-slow`, `spool-error: …`). */
export type CommitResult = { result: 'spooled'; seq: number } | { result: 'dropped'; reason: string };

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

  /** @param done called once the tee is finished with the disk (discarded or committed) */
  constructor(
    private readonly spool: SpoolRoom,
    meta: SpoolMeta,
    private readonly done: (tee: SpoolTee) => void = () => {},
  ) {
    this.meta = meta;
    this.write(metaLine(meta));
  }

  /** Adds bytes of the capture record. Never waits; may drop the tee (see {@link dropped}). */
  write(chunk: Buffer): void {
    if (this.state !== 'open' || this.dropped !== undefined) return;
    if (!this.spool.reserve(chunk.length)) {
      this.drop('spool-full');
      return;
    }
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
    this.settledP = this.cleanup().finally(() => this.done(this));
  }

  /**
   * The record is complete and must be kept: writes what is left, fsyncs,
   * renames it into the queue of its archive (or, for `'rejected'`, into
   * `rejected/`: the archive refused it for good).
   *
   * @returns `spooled`, or `dropped` with the reason (spool full, too slow,
   *   a disk error); never rejects.
   */
  commit(queue: ArchiveQueue | 'rejected'): Promise<CommitResult> {
    if (this.state !== 'open') return Promise.resolve({ result: 'dropped', reason: 'the capture was already settled' });
    this.state = 'committing';
    this.checkCaughtUp();
    const p = (async (): Promise<CommitResult> => {
      if (!this.fileStarted && this.dropped === undefined && queue !== 'rejected') return this.commitWhole(queue);
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
        const seq = this.spool.nextSeq();
        if (queue === 'rejected') {
          const tmp = path.join(path.dirname(this.tmp!), spoolFileName(seq));
          await rename(this.tmp!, tmp);
          this.tmp = undefined;
          this.reserved = 0; // now counted as a rejected file
          await this.spool.moveToRejected(tmp, this.size);
          return { result: 'spooled', seq };
        }
        await queue.ensureDir();
        const file = path.join(queue.dir, spoolFileName(seq));
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
      this.done(this);
    });
    this.settledP = p.then(() => undefined);
    return p;
  }

  /** {@link commit} of a record still all in memory: written, synced and renamed into `queue` by the spool's writer thread (proxy/spool/commit-writer.ts). */
  private async commitWhole(queue: ArchiveQueue): Promise<CommitResult> {
    const seq = this.spool.nextSeq();
    const file = path.join(queue.dir, spoolFileName(seq));
    const chunks = this.chunks;
    this.chunks = [];
    this.memBytes = 0;
    try {
      await queue.ensureDir();
      await this.spool.writer.write({ tmp: this.spool.tmpPath(), file, chunks });
    } catch (err) {
      this.dropped = `spool-error: ${(err as Error).message}`;
      await this.cleanup();
      return { result: 'dropped', reason: this.dropped };
    }
    this.reserved = 0; // now counted as a queued file
    queue.add({ seq, file, size: this.size });
    this.spool.changed();
    return { result: 'spooled', seq };
  }

  /** Resolves once {@link discard} or {@link commit} has finished with the disk (the spool's close waits on it). */
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

/** `bufs` without their first `n` bytes. */
function skipBytes(bufs: Buffer[], n: number): Buffer[] {
  let i = 0;
  while (i < bufs.length && n >= bufs[i].length) n -= bufs[i++].length;
  const rest = bufs.slice(i);
  if (rest.length && n > 0) rest[0] = rest[0].subarray(n);
  return rest;
}
