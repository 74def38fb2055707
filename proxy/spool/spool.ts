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
 *   worker-2/ …                 the spools of workers 2, 3, … (`workers:`), laid out alike (proxy/spool/workers.ts)
 * ```
 *
 * Folders are 0700, files 0600: captures hold what visitors asked for.
 *
 * {@link Spool} owns the folder, the queues (proxy/spool/queue.ts) and the
 * tees (proxy/spool/tee.ts); what those two share of it — the bound
 * (queued files, tees in progress and `rejected/` hold at most `maxBytes`;
 * room is made by deleting the oldest rejected captures first, logged;
 * when there are none left, a capture that would pass the bound is
 * refused: refuse-new, what is queued stays queued and in order),
 * `rejected/`, the file names, the settings — is its room
 * (proxy/spool/room.ts), so they depend on the room, not on the spool.
 */
import { chmod, mkdir, readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { queueDirName, REJECTED_DIR, type SpoolMeta, seqOfFileName, TMP_DIR, WORKER_DIR_RE } from './file.js';
import { ArchiveQueue, type QueuedFile } from './queue.js';
import { SpoolRoom, type SpoolOptions } from './room.js';
import { SpoolTee } from './tee.js';

export type { SpoolOptions };

/** The spool folder: its queues, its tees, and its room (proxy/spool/room.ts). See the module's comment. */
export class Spool {
  readonly dir: string;
  readonly tmpDir: string;
  /** What the queues and tees share: the bound, `rejected/`, file names, settings, log. */
  private readonly room: SpoolRoom;
  private paused: boolean;
  private readonly queues = new Map<string, ArchiveQueue>();
  private readonly tees = new Set<SpoolTee>();
  private closed = false;

  private constructor(dir: string, o: SpoolOptions) {
    this.room = new SpoolRoom(dir, o, () => this.changed());
    this.dir = dir;
    this.tmpDir = this.room.tmpDir;
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
      spool.room.log({
        level: 'warn',
        msg: 'spool: removed captures left half-written by a crash (their live PUT outcome is unknown)',
        count: leftovers.length,
        dir: spool.tmpDir,
      });
    }
    let total = 0;
    await spool.room.loadRejected();
    for (const d of await readdir(spool.dir, { withFileTypes: true })) {
      // (A worker's own spool, proxy/spool/workers.ts, is not a queue: no queue's name has no `_`.)
      if (!d.isDirectory() || d.name === TMP_DIR || d.name === REJECTED_DIR || WORKER_DIR_RE.test(d.name)) continue;
      const q = spool.queueNamed(d.name);
      const entries: QueuedFile[] = [];
      for (const f of await readdir(path.join(spool.dir, d.name))) {
        const seq = seqOfFileName(f);
        if (seq === undefined) continue;
        const file = path.join(spool.dir, d.name, f);
        const size = (await stat(file)).size;
        entries.push({ seq, file, size });
        spool.room.noteFound(seq, size);
      }
      q.load(entries);
      total += entries.length;
    }
    if (total) spool.room.log({ msg: 'spool: captures waiting from an earlier run; re-sending them', count: total, bytes: spool.bytes, dir: spool.dir });
    spool.room.makeRoom(0);
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
    return this.room.bytes;
  }

  /** The queue of the archive at `host:port` (created on first use). */
  queue(host: string, port: number): ArchiveQueue {
    return this.queueNamed(queueDirName(host, port));
  }

  private queueNamed(name: string): ArchiveQueue {
    let q = this.queues.get(name);
    if (!q) {
      q = new ArchiveQueue(this.room, name, this.paused);
      this.queues.set(name, q);
    }
    return q;
  }

  /** Starts teeing one capture (see {@link SpoolTee}). */
  tee(meta: SpoolMeta): SpoolTee {
    const t = new SpoolTee(this.room, meta, (done) => this.tees.delete(done));
    this.tees.add(t);
    return t;
  }

  /** Starts the senders of a spool opened with `paused: true`. */
  resume(): void {
    this.paused = false;
    for (const q of this.queues.values()) q.resume();
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
    await this.room.writer.close();
  }

  /**
   * For `/healthz`: one line per archive that is unreachable while
   * captures wait for it (see {@link ArchiveQueue.health}); empty when all is well.
   */
  health(): string[] {
    return [...this.queues.values()].map((q) => q.health()).filter((l): l is string => l !== undefined);
  }

  /** Updates the depth and bytes gauges (the room calls it for the tees and queues). */
  private changed(): void {
    this.room.metrics?.spoolDepth.set(this.depth);
    this.room.metrics?.spoolBytes.set(this.room.bytes);
  }
}
