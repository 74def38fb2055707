/**
 * The spool's writer of whole captures (issue 36): a capture that is
 * still all in memory when it is committed (the usual case: its record is
 * within the spool's `memoryBytes`) is written by one worker thread with
 * the same system calls as a tee's own commit (proxy/spool/tee.ts): open a
 * file under `tmp/` (0600), write the record, fdatasync, close, rename it
 * into its queue's folder (proxy/spool/commit-worker.js). Only then does its
 * {@link CommitWriter.write} resolve: a committed capture survives a crash,
 * as before, and the spool file format is unchanged.
 *
 * Why a thread: through `fs/promises` those are five trips to libuv's
 * thread pool per capture, each waking a pool thread and then the event
 * loop, on the main thread of the proxy between the response and the next
 * request; here it is one message each way, and the captures that come in
 * while a batch is being written go together in the next one (their
 * fdatasyncs then share the file system's journal commits). Measured in
 * bench/results.md (2026-11-29, the proxy's latency with the archive down).
 */
import { Worker } from 'node:worker_threads';

/** One capture to write: the record's bytes, its tmp path and its final path in its queue's folder (made by the caller: `ArchiveQueue.ensureDir`). */
export interface CommitJob {
  tmp: string;
  file: string;
  chunks: Buffer[];
}

/** The thread's module: plain JavaScript, so the thread needs no TypeScript loader (see its comment). */
const WORKER = new URL('./commit-worker.js', import.meta.url);

interface Waiting {
  job: CommitJob;
  resolve: () => void;
  reject: (err: Error) => void;
}

/** Writes whole captures into the spool's queues on one worker thread, a batch at a time (see the module comment). */
export class CommitWriter {
  private worker: Worker | undefined;
  private queued: Waiting[] = [];
  private inFlight: Waiting[] | undefined;

  /**
   * Writes `job.chunks` to `job.tmp`, fdatasyncs it and renames it to
   * `job.file` (its folder must exist).
   *
   * @returns resolves once the file is in place and synced
   * @throws (rejects with) the file system's error message; the tmp file is then removed
   */
  write(job: CommitJob): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queued.push({ job, resolve, reject });
      this.flush();
    });
  }

  /** Stops the worker (the spool closing, after its commits settled). */
  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    if (w) await w.terminate();
  }

  private flush(): void {
    if (this.inFlight || this.queued.length === 0) return;
    const batch = this.queued;
    this.queued = [];
    this.inFlight = batch;
    const w = (this.worker ??= this.start());
    w.ref(); // a commit in flight keeps the process alive
    w.postMessage(batch.map((b) => b.job));
  }

  private start(): Worker {
    const w = new Worker(WORKER, { execArgv: [] });
    w.on('message', (errs: (string | null)[]) => {
      const batch = this.inFlight ?? [];
      this.inFlight = undefined;
      batch.forEach((b, i) => (errs[i] === null ? b.resolve() : b.reject(new Error(errs[i] ?? 'spool writer: no answer'))));
      if (this.queued.length) this.flush();
      else w.unref();
    });
    const fail = (err: Error) => {
      if (this.worker === w) this.worker = undefined;
      const lost = [...(this.inFlight ?? []), ...this.queued];
      this.inFlight = undefined;
      this.queued = [];
      for (const b of lost) b.reject(err);
    };
    w.on('error', fail);
    w.on('exit', (code) => fail(new Error(`spool writer thread exited (${code})`)));
    w.unref();
    return w;
  }
}
