/**
 * One archive's queue in the spool and its sender: the files waiting for
 * that archive (`ArchiveHost:ArchivePort`), re-sent one at a time in
 * sequence order, each as one PUT with `Content-Length` and the same record
 * bytes (so the archive's dedup makes a second copy harmless), unconditional
 * (a re-send is rare, and its record is on disk, not in memory), on the
 * proxy's kept-alive connections to the archive. Failures
 * back off exponentially; a refusal that a retry cannot fix (a 4xx other
 * than 401, 403, 408, 409, 429; RFC 9110 §15.5) moves the file to
 * `rejected/` and does not hold back the files behind it; a 409 (the
 * archive keeps another capture of that URI-R and second) deletes the file,
 * logged and counted. The queue is also the
 * archive's health as the proxy sees it ({@link ArchiveQueue.down},
 * {@link ArchiveQueue.health}).
 */
import { createReadStream } from 'node:fs';
import { mkdir, rm, unlink } from 'node:fs/promises';
import type http from 'node:http';
import path from 'node:path';
import { ScavengeCounter } from '#shared/gc.js';
import { answerFailure, isConflict, isPermanentRefusal, isStored, openCapturePut, readCaptureAnswer } from '#shared/capture-put.js';
import { readMeta, SpoolFileError, type SpoolMeta } from './file.js';
import type { SpoolRoom } from './room.js';

/** A capture waiting in a queue. */
export interface QueuedFile {
  seq: number;
  /** Absolute path. */
  file: string;
  /** Bytes, meta line included. */
  size: number;
}

/** How one re-send went. */
type SendResult = { ok: true; status: number } | { ok: false; status?: number; reason: string };

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
  /** When the archive started failing (ms since the epoch), while {@link down}. */
  private downSince: number | undefined;
  /** Why the last PUT to this archive failed, while {@link down}. */
  private lastError: string | undefined;
  /** The queue's folder made (once, not on every commit); unset again when making it failed. */
  private dirMade: Promise<void> | undefined;

  /** @param paused the sender starts only once {@link resume}d (the spool was opened paused) */
  constructor(
    private readonly spool: SpoolRoom,
    readonly name: string,
    private paused = false,
  ) {
    this.dir = path.join(spool.dir, name);
    this.delay = spool.retryMinMs;
  }

  /**
   * Makes the queue's folder ({@link dir}, mode 0700) if it is missing: the
   * one place a queue's folder is made, before a spool file is renamed into
   * it. The first call makes it; later calls share that promise.
   *
   * @throws (rejects with) the file system's error; the next call tries again
   */
  ensureDir(): Promise<void> {
    const made = (this.dirMade ??= mkdir(this.dir, { recursive: true, mode: 0o700 }).then(() => undefined));
    return made.catch((err: unknown) => {
      if (this.dirMade === made) this.dirMade = undefined;
      throw err;
    });
  }

  /** Starts the sender of a queue made paused. */
  resume(): void {
    this.paused = false;
    this.kick();
  }

  /** Captures waiting. */
  get depth(): number {
    return this.files.length;
  }

  /** A live PUT to this archive failed (`reason`, one line): back off (unless already backing off). */
  noteFailure(reason: string): void {
    this.lastError = reason;
    if (this.down) return;
    this.markDown();
    this.nextTry = Date.now() + this.delay;
    this.delay = Math.min(this.delay * 2, this.spool.retryMaxMs);
  }

  /** A PUT to this archive succeeded: it is up; send what is queued. */
  noteSuccess(): void {
    const wasDown = this.down;
    this.markUp();
    this.nextTry = 0;
    if (wasDown) this.interrupt();
    this.kick();
  }

  /**
   * The archive as the proxy sees it, for `/healthz`: one line when it is
   * unreachable (backing off) and captures wait for it; `undefined` otherwise.
   */
  health(now = Date.now()): string | undefined {
    if (!this.down || this.files.length === 0) return undefined;
    const n = this.files.length;
    const since = this.downSince === undefined ? '' : ` for ${Math.round((now - this.downSince) / 1000)} s`;
    const next = Math.max(0, Math.ceil((this.nextTry - now) / 1000));
    return `archive ${this.label}: unreachable${since} (${this.lastError ?? 'PUTs fail'}); ${n} capture${n === 1 ? ' waits' : 's wait'} in the spool, next try in ${next} s`;
  }

  /** `host:port` of the archive (from the queue's folder name). */
  get label(): string {
    return this.name.replace(/_(\d+)$/, ':$1');
  }

  private markDown(): void {
    if (!this.down) this.downSince = Date.now();
    this.down = true;
  }

  private markUp(): void {
    this.down = false;
    this.downSince = undefined;
    this.lastError = undefined;
    this.delay = this.spool.retryMinMs;
  }

  /**
   * Queues a committed file and starts the sender. Its seq is usually the
   * highest so far; one committed from a tmp file (proxy/spool/tee.ts) can
   * overtake one being written whole by the writer thread, which then goes
   * to its place in sequence order (never before the file being sent).
   */
  add(entry: QueuedFile): void {
    let i = this.files.length;
    while (i > (this.running ? 1 : 0) && this.files[i - 1].seq > entry.seq) i--;
    this.files.splice(i, 0, entry);
    this.kick();
  }

  /** Queues the files found at start, in sequence order (the sender is started by {@link kick}). */
  load(entries: QueuedFile[]): void {
    this.files.push(...entries);
    this.files.sort((a, b) => a.seq - b.seq);
  }

  /** Starts the sender unless it runs, is paused, or the queue is empty. */
  kick(): void {
    if (this.running || this.closed || this.paused || this.files.length === 0) return;
    this.running = true;
    void this.run().finally(() => {
      this.running = false;
      if (!this.closed && this.files.length > 0 && !this.paused) this.kick();
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

  /** The sender: the queue's files in order until it is empty or closed. */
  private async run(): Promise<void> {
    const { log, metrics } = this.spool;
    while (!this.closed && this.files.length > 0) {
      if (this.down) await this.sleepUntil(this.nextTry);
      if (this.closed) return;
      const entry = this.files[0];
      let result: SendResult;
      let meta: SpoolMeta | undefined;
      try {
        const read = await readMeta(entry.file);
        meta = read.meta;
        if (this.closed) return; // closed while the meta line was read: no new PUT (close() would wait on it)
        result = await this.send(entry, read.meta, read.offset);
      } catch (err) {
        result = { ok: false, reason: `spool file unreadable: ${(err as Error).message}` };
        if ((err as NodeJS.ErrnoException).code === 'ENOENT' || err instanceof SpoolFileError) {
          await this.dropUnreadable(entry, err as Error);
          continue;
        }
      }
      if (this.closed) return;
      if (result.ok) {
        await this.sent(entry, meta, result.status);
        continue;
      }
      if (result.status !== undefined && isConflict(result.status)) {
        this.markUp();
        await this.conflict(entry, meta, result.reason);
        continue;
      }
      metrics?.putFailures.inc({ via: 'spool' });
      if (result.status !== undefined && isPermanentRefusal(result.status)) {
        // The archive answered: it is up, and the files behind this one go without waiting.
        this.markUp();
        await this.reject(entry, meta, result.reason);
        continue;
      }
      this.lastError = result.reason;
      this.markDown();
      this.nextTry = Date.now() + this.delay;
      log({
        level: 'warn',
        msg: 'spooled capture not sent; retrying later',
        uriR: meta?.uriR,
        reason: result.reason,
        retryInMs: this.delay,
        queue: this.name,
        depth: this.files.length,
      });
      this.delay = Math.min(this.delay * 2, this.spool.retryMaxMs);
    }
  }

  /** The first file is gone or not a spool file: nothing to re-send, drop it. */
  private async dropUnreadable(entry: QueuedFile, err: Error): Promise<void> {
    this.spool.log({ level: 'error', msg: 'spool file dropped: unreadable', file: entry.file, error: err.message });
    this.files.shift();
    this.spool.release(entry.size);
    await rm(entry.file, { force: true });
    this.spool.metrics?.dropped.inc({ reason: 'spool-error' });
    this.spool.changed();
  }

  /** The archive has the first file: delete it; the archive is up. */
  private async sent(entry: QueuedFile, meta: SpoolMeta | undefined, status: number): Promise<void> {
    // Count it sent in the same turn as it leaves the queue (the depth), so the two never disagree.
    this.files.shift();
    this.spool.metrics?.capturesSent.inc({ via: 'spool' });
    await unlink(entry.file).catch(() => {});
    this.spool.release(entry.size);
    this.spool.log({ msg: 'spooled capture sent', uriR: meta?.uriR, archiveStatus: status, seq: entry.seq, queue: this.name, depth: this.files.length });
    this.markUp();
    this.spool.changed();
  }

  /** The archive will never take the first file: move it to `rejected/` (it stays counted in the spool's bound). */
  private async reject(entry: QueuedFile, meta: SpoolMeta | undefined, reason: string): Promise<void> {
    this.files.shift();
    const dest = await this.spool.moveToRejected(entry.file, entry.size);
    this.spool.metrics?.dropped.inc({ reason: 'rejected' });
    this.spool.log({ level: 'error', msg: 'the archive refused a spooled capture for good; moved to rejected/', uriR: meta?.uriR, file: dest, reason });
    this.spool.changed();
  }

  /** The archive keeps another capture of that URI-R and second (409): the first file is deleted, logged and counted; not an error. */
  private async conflict(entry: QueuedFile, meta: SpoolMeta | undefined, reason: string): Promise<void> {
    this.files.shift();
    this.spool.metrics?.conflicts.inc({ via: 'spool' });
    await unlink(entry.file).catch(() => {});
    this.spool.release(entry.size);
    this.spool.log({
      level: 'warn',
      msg: 'the archive holds another capture of this URI-R at that second; the spooled one is dropped',
      uriR: meta?.uriR,
      reason,
      seq: entry.seq,
      queue: this.name,
      depth: this.files.length,
    });
    this.spool.changed();
  }

  /** One re-send: PUT of the record bytes (after the meta line) with Content-Length. */
  private send(entry: QueuedFile, meta: SpoolMeta, offset: number): Promise<SendResult> {
    return new Promise((resolve) => {
      let settled = false;
      const done = (r: SendResult) => {
        if (settled) return;
        settled = true;
        this.current = undefined;
        body.destroy();
        // A failed re-send does not leave its connection to the next one (it may be mid-body).
        if (!r.ok) req.destroy();
        resolve(r);
      };
      const body = createReadStream(entry.file, { start: offset });
      const req = openCapturePut(meta, this.spool.tokenFor?.(meta), { 'Content-Length': entry.size - offset }, this.spool.agent);
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
      req.on('response', (res) =>
        readCaptureAnswer(res, (answer) => {
          if (answer.complete && isStored(answer)) done({ ok: true, status: answer.status });
          else done({ ok: false, status: answer.status, reason: answerFailure(answer) });
        }),
      );
      const gc = new ScavengeCounter();
      body.on('data', (c: Buffer | string) => gc.add(c.length));
      body.pipe(req);
    });
  }
}
