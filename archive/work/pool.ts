/**
 * The place where work whose cost grows with stored content runs when it
 * cannot be cut into slices of the event loop (slices.ts): a
 * small pool of worker threads (node:worker_threads), so that no request
 * holds the daemon's event loop, with a hard deadline per task and a
 * bounded queue. What may run here is the table of tasks in tasks.ts (the
 * text comparison of `/web/diff/…`, the embedded resources of the replay
 * banner's panel, the archival replay's rewrite of a page that does not
 * fit in a slice, a page's text for search; the gzip of a write batch's
 * records, in the store's own `ingest` pool); each task also keeps to a budget
 * of its own (edits, rows, resources), and the deadline is the backstop:
 * a task still running at its deadline has its thread terminated (the
 * next task gets a new one). docs/threat-model.md "What one request may
 * cost".
 *
 * A task the pool cannot take (its queue full) or that does not finish
 * (deadline, a crash, the thread out of its memory limit) is a
 * {@link WorkRefused}: the caller answers with a page that says so. The
 * threads start on first use and each runs one task at a time; a thread
 * with no task for {@link WorkPoolOptions.idleMs} ends, so that an idle
 * daemon keeps none (each costs some 50 MiB of memory, loading the
 * daemon's modules through tsx, and about a second to start again).
 */
import { type TransferListItem, Worker } from 'node:worker_threads';
import type { TaskInput, TaskName, TaskOutput } from './tasks.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The daemon's work pools: `diff` (`/web/diff/…`), `panel` (the replay banner's resource list), `replay` (the archival replay's rewrite), `text` (the full-text index's extraction: a new page's record inflated, decoded, parsed). */
    work: { diff: WorkPool; panel: WorkPool; replay: WorkPool; text: WorkPool };
  }
}

/** Why a task did not give its result. */
export type WorkOutcome = 'done' | 'busy' | 'deadline' | 'failed';

/** A task the pool did not finish: `busy` (the queue was full), `deadline` (stopped at its deadline), `failed` (the thread died). */
export class WorkRefused extends Error {
  constructor(
    readonly outcome: Exclude<WorkOutcome, 'done'>,
    message: string,
  ) {
    super(message);
  }
}

export interface WorkPoolOptions {
  /** Threads, each one task at a time (default 1). */
  threads?: number;
  /** Tasks that may wait for a thread; one more is refused as `busy` (default 8). */
  queue?: number;
  /** Old-generation heap of each thread, MiB (default 256): a task that needs more ends as `failed`. */
  heapMiB?: number;
  /** Most time a thread may take to start (load its modules), ms (default 60 000). */
  startMs?: number;
  /** A thread with no task for this long ends (the next task starts a new one), ms (default 60 000). */
  idleMs?: number;
  /** Told of each task's end (for the metrics). */
  onOutcome?: (task: TaskName, outcome: WorkOutcome) => void;
}

interface Job {
  task: TaskName;
  input: unknown;
  deadlineMs: number;
  resolve(value: unknown): void;
  reject(err: Error): void;
  signal?: AbortSignal;
  onAbort?: () => void;
  transfer?: readonly TransferListItem[];
}

/** One thread of the pool: not started, starting, idle or running a job. */
interface Slot {
  worker?: Worker;
  ready: boolean;
  job?: Job;
  timer?: NodeJS.Timeout;
  /** Ends the idle thread ({@link WorkPoolOptions.idleMs}). */
  idle?: NodeJS.Timeout;
}

/** The thread's entry, loaded through tsx (the daemon runs its TypeScript directly, bin/memento-archive.js). */
const ENTRY = new URL('./worker.ts', import.meta.url).href;
const TSX = import.meta.resolve('tsx/esm/api');
const BOOT = `const { workerData, parentPort } = require('node:worker_threads');
import(workerData.tsx).then((m) => { m.register(); return import(workerData.entry); }).catch((err) => { parentPort.postMessage({ boot: String(err && err.stack || err) }); });`;

/** A pool of worker threads for the named tasks of tasks.ts (see the module comment). */
export class WorkPool {
  private readonly slots: Slot[];
  private readonly waiting: Job[] = [];
  private readonly queue: number;
  private closed = false;

  /** @param name the pool's name, in messages and metrics (`diff`, `panel`) */
  constructor(
    readonly name: string,
    private readonly opts: WorkPoolOptions = {},
  ) {
    this.slots = Array.from({ length: Math.max(1, opts.threads ?? 1) }, () => ({ ready: false }));
    this.queue = opts.queue ?? 8;
  }

  /** Tasks running now. */
  get running(): number {
    return this.slots.filter((s) => s.job).length;
  }

  /** Threads started (starting, idle or running a task). */
  get threads(): number {
    return this.slots.filter((s) => s.worker).length;
  }

  /** Tasks waiting for a thread. */
  get queued(): number {
    return this.waiting.length;
  }

  /**
   * Runs `task` on `input` in a thread; its result, structured-cloned.
   *
   * @param deadlineMs most time the task may run once a thread has it (the wait for a thread is bounded by the queue)
   * @param signal aborts the task while it waits (a client that went away); a running one goes on to its end
   * @param transfer buffers of `input` moved to the thread rather than copied (no longer usable here once the task is sent)
   * @throws WorkRefused `busy`, `deadline` or `failed`; the task's own error (rethrown with its message) when it threw
   */
  run<N extends TaskName>(
    task: N,
    input: TaskInput<N>,
    deadlineMs: number,
    signal?: AbortSignal,
    transfer?: readonly TransferListItem[],
  ): Promise<TaskOutput<N>> {
    if (this.closed) return Promise.reject(new WorkRefused('failed', `the ${this.name} work pool is closed`));
    if (signal?.aborted) return Promise.reject(new WorkRefused('failed', 'the request went away'));
    return new Promise<TaskOutput<N>>((resolve, reject) => {
      const job: Job = { task, input, deadlineMs, resolve: resolve as (v: unknown) => void, reject, signal, transfer };
      const free = this.slots.find((s) => !s.job);
      if (!free && this.waiting.length >= this.queue) {
        this.end(job, 'busy', new WorkRefused('busy', `the ${this.name} work pool is busy: ${this.running} running, ${this.waiting.length} waiting`));
        return;
      }
      if (signal) {
        job.onAbort = () => {
          const i = this.waiting.indexOf(job);
          if (i < 0) return;
          this.waiting.splice(i, 1);
          this.end(job, 'failed', new WorkRefused('failed', 'the request went away'));
        };
        signal.addEventListener('abort', job.onAbort, { once: true });
      }
      if (free) this.give(free, job);
      else this.waiting.push(job);
    });
  }

  /** Hands `job` to `slot`, starting its thread if it has none; the deadline runs from when the thread has it. */
  private give(slot: Slot, job: Job): void {
    clearTimeout(slot.idle);
    slot.job = job;
    if (!slot.worker) this.start(slot);
    else if (slot.ready) this.post(slot);
  }

  private post(slot: Slot): void {
    const job = slot.job!;
    slot.timer = setTimeout(() => this.stop(slot, 'deadline', `took longer than its deadline of ${job.deadlineMs} ms`), job.deadlineMs);
    slot.worker!.postMessage({ task: job.task, input: job.input }, job.transfer);
  }

  /** Starts the thread of `slot`: it says `ready` once its modules are loaded; then its job is posted. */
  private start(slot: Slot): void {
    const worker = new Worker(BOOT, {
      eval: true,
      // Not the parent's loaders and flags (a test runner's): the thread registers tsx for itself.
      execArgv: [],
      workerData: { tsx: TSX, entry: ENTRY },
      resourceLimits: { maxOldGenerationSizeMb: this.opts.heapMiB ?? 256 },
      stdout: false,
      stderr: false,
    });
    worker.unref();
    slot.worker = worker;
    slot.ready = false;
    slot.timer = setTimeout(() => this.stop(slot, 'failed', 'its thread did not start in time'), this.opts.startMs ?? 60_000);
    worker.on('message', (m: { ready?: true; boot?: string; ok?: boolean; output?: unknown; error?: string }) => {
      if (slot.worker !== worker) return;
      if (m.ready) {
        clearTimeout(slot.timer);
        slot.ready = true;
        if (slot.job) this.post(slot);
        return;
      }
      if (m.boot !== undefined) return this.stop(slot, 'failed', `its thread did not start: ${m.boot.split('\n')[0]}`);
      const job = slot.job;
      clearTimeout(slot.timer);
      slot.job = undefined;
      if (job) {
        if (m.ok) this.end(job, 'done', undefined, m.output);
        else this.end(job, 'failed', new Error(m.error ?? 'the task failed'));
      }
      this.next(slot);
    });
    worker.on('error', (err) => slot.worker === worker && this.stop(slot, 'failed', err.message));
    worker.on('exit', () => slot.worker === worker && this.stop(slot, 'failed', 'its thread ended'));
  }

  /** Ends the job of `slot` as `outcome`, terminates its thread (the next job gets a new one). */
  private stop(slot: Slot, outcome: 'deadline' | 'failed', why: string): void {
    const worker = slot.worker;
    const job = slot.job;
    clearTimeout(slot.timer);
    clearTimeout(slot.idle);
    slot.worker = undefined;
    slot.ready = false;
    slot.job = undefined;
    if (worker) void worker.terminate();
    if (job) this.end(job, outcome, new WorkRefused(outcome, `${job.task}: ${why}`));
    this.next(slot);
  }

  /** Gives `slot` the next waiting job, if any; else its thread ends once idle for `idleMs`. */
  private next(slot: Slot): void {
    if (this.closed) return;
    const job = this.waiting.shift();
    if (job) return this.give(slot, job);
    if (!slot.worker) return;
    clearTimeout(slot.idle);
    slot.idle = setTimeout(() => this.retire(slot), this.opts.idleMs ?? 60_000);
    slot.idle.unref();
  }

  /** Ends the thread of `slot`, idle since its last task (not an outcome of any task). */
  private retire(slot: Slot): void {
    if (slot.job || !slot.worker) return;
    const worker = slot.worker;
    slot.worker = undefined;
    slot.ready = false;
    void worker.terminate();
  }

  private end(job: Job, outcome: WorkOutcome, err?: Error, output?: unknown): void {
    if (job.onAbort) job.signal?.removeEventListener('abort', job.onAbort);
    this.opts.onOutcome?.(job.task, outcome);
    if (err) job.reject(err);
    else job.resolve(output);
  }

  /** Stops every thread; tasks waiting or running end as `failed`. */
  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.waiting.splice(0)) this.end(job, 'failed', new WorkRefused('failed', `the ${this.name} work pool is closed`));
    const workers = this.slots.map((s) => s.worker).filter((w) => w !== undefined);
    for (const slot of this.slots) this.stop(slot, 'failed', 'the pool closed');
    await Promise.all(workers.map((w) => w.terminate()));
  }
}
