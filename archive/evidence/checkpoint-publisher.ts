/**
 * Publishing the evidence logs' checkpoints (docs/evidence.md
 * "Checkpoints", "Witnesses", "Timestamps"). Once a second, for each
 * local archive whose log has grown past its newest published checkpoint
 * (or has none), the daemon:
 *
 * 1. checks the log against its anchor (checkpoint-anchor.ts) and signs
 *    the checkpoint of the tree as it stands (checkpoint.ts);
 * 2. submits it to each witness (C2SP tlog-witness `add-checkpoint`) with
 *    the consistency proof from the size that witness last cosigned, and
 *    keeps the cosignatures that verify;
 * 3. with the quorum (`witness_quorum`) reached, asks the time-stamping
 *    authority (`tsa_url`) for an RFC 3161 token over the note text;
 * 4. keeps the anchor file, then the checkpoint in the database
 *    (`log_checkpoint`): it is published, served at
 *    `/<id>/tlog/checkpoint` and used by receipts.
 *
 * A checkpoint short of its quorum, or without its token, is never
 * published; the witnesses (or the authority) that failed are asked again
 * after a pause that doubles up to a minute, whether or not captures
 * arrive meanwhile; a bigger tree replaces the checkpoint waiting. What
 * stands in the way is kept as one line per archive ({@link problems}),
 * for `/healthz` and the log.
 */
import { type CheckpointRow, consistencyOf, type LogStore, rootOf } from './log.js';
import { readCheckpoint, signCheckpoint } from './checkpoint.js';
import { LogAnchorError, type LogAnchors } from './checkpoint-anchor.js';
import type { SigningKey } from './signing-key.js';
import { parseNote } from './signed-note.js';
import type { WitnessSetting } from './tlog-config.js';

/** A submission's failure as the witness client reports it: with 409, the size the witness last cosigned. */
export interface WitnessFailure extends Error {
  readonly status?: number;
  readonly recordedSize?: number;
}

/** The network clients the publisher uses (archive/evidence/witness-client.ts, timestamp.ts); given, so that tests can stand in. */
export interface TlogClients {
  /** C2SP tlog-witness add-checkpoint: the witness's verified cosignature lines. @throws WitnessFailure */
  addCheckpoint(witness: WitnessSetting, req: { oldSize: number; proof: readonly Buffer[]; note: string }): Promise<string[]>;
  /** RFC 3161: the DER TimeStampResp of the authority at `url` over `data` (a SHA-256 imprint), checked. @throws when none is granted */
  timestamp(url: string, data: Buffer): Promise<Buffer>;
}

/** What the publisher works with. */
export interface PublisherOptions {
  log: LogStore;
  key: SigningKey;
  anchors: LogAnchors;
  /** The local archives. */
  archives: readonly string[];
  origin(archive: string): string;
  witnesses: readonly WitnessSetting[];
  quorum: number;
  tsaUrl?: string;
  clients: TlogClients;
  /** What a round that failed says (once per new reason). */
  onProblem?(archive: string, line: string): void;
  /** Told of each checkpoint published. */
  onPublished?(row: CheckpointRow): void;
}

/** How often the daemon looks for a checkpoint to publish, ms. */
const INTERVAL_MS = 1000;
/** The longest pause before asking failed witnesses or the authority again, ms. */
const MAX_PAUSE_MS = 60_000;

/** A checkpoint signed and waiting for its cosignatures (and token). */
interface Pending {
  size: number;
  text: string;
  note: string;
  /** Cosignature lines per witness name. */
  cosigned: Map<string, string[]>;
}

/** Per archive: the checkpoint waiting, what each witness last cosigned, and when to try again. */
interface ArchiveState {
  pending?: Pending;
  witnessSize: Map<string, number>;
  failures: number;
  notBefore: number;
  problem?: string;
  /** The problem is the anchor check's refusal (the log was cut back or rewritten). */
  refused?: boolean;
}

/** Publishes the checkpoints of the archives named (see the module comment). */
export class CheckpointPublisher {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> = Promise.resolve();
  private closed = false;
  private readonly state = new Map<string, ArchiveState>();

  constructor(private readonly o: PublisherOptions) {}

  /** Starts looking once a second (the timer keeps no process alive). */
  start(): void {
    if (this.timer || this.closed) return;
    this.timer = setInterval(() => {
      this.running = this.running.then(() => this.round()).catch(() => undefined);
    }, INTERVAL_MS);
    this.timer.unref();
  }

  /** One round over every archive, at once; resolves when each is done. */
  async round(now = Date.now()): Promise<void> {
    await Promise.all(this.o.archives.map((a) => this.archiveRound(a, now)));
  }

  /** What stands in the way of publishing, one line per archive (empty when nothing does). */
  problems(): string[] {
    return [...this.state.values()].flatMap((s) => (s.problem ? [s.problem] : []));
  }

  /** The archives whose log the anchor check refuses to sign (cut back or rewritten): one line each, for `/healthz`. */
  refusals(): string[] {
    return [...this.state.values()].flatMap((s) => (s.problem && s.refused ? [s.problem] : []));
  }

  private stateOf(archive: string): ArchiveState {
    let s = this.state.get(archive);
    if (!s) this.state.set(archive, (s = { witnessSize: new Map(), failures: 0, notBefore: 0 }));
    return s;
  }

  private async archiveRound(archive: string, now: number): Promise<void> {
    if (this.closed) return;
    const s = this.stateOf(archive);
    try {
      const size = await this.o.log.size(archive);
      // Every round, published or not: a log cut back below its anchor is reported at once.
      await this.o.anchors.check(archive, size);
      const newest = await this.o.log.checkpoint(archive);
      if (newest && newest.tree_size >= size) {
        s.pending = undefined;
        this.ok(s);
        return;
      }
      if (!s.pending || s.pending.size !== size) s.pending = await this.sign(archive, size, newest, s);
      if (now < s.notBefore) return;
      await this.publish(archive, s, s.pending);
      this.ok(s);
    } catch (err) {
      s.failures++;
      s.notBefore = now + Math.min(MAX_PAUSE_MS, 1000 * 2 ** (s.failures - 1));
      const line = (err as Error).message;
      if (line !== s.problem) this.o.onProblem?.(archive, line);
      s.problem = line;
      s.refused = err instanceof LogAnchorError;
    }
  }

  private ok(s: ArchiveState): void {
    s.failures = 0;
    s.notBefore = 0;
    s.problem = undefined;
    s.refused = false;
  }

  /** Signs the checkpoint of `archive`'s tree of `size`, after the anchor check; learns from `newest` which witnesses cosigned what. */
  private async sign(archive: string, size: number, newest: CheckpointRow | undefined, s: ArchiveState): Promise<Pending> {
    if (newest) {
      const names = new Set(parseNote(newest.note).signatures.map((l) => l.name));
      for (const w of this.o.witnesses) if (!s.witnessSize.has(w.name) && names.has(w.name)) s.witnessSize.set(w.name, newest.tree_size);
    }
    const root = await rootOf(this.o.log, archive, size);
    const { text, note } = signCheckpoint(this.o.key, { origin: this.o.origin(archive), treeSize: size, rootHash: root });
    return { size, text, note, cosigned: new Map() };
  }

  /** Gathers the missing cosignatures, then (quorum reached) the token, then publishes. @throws Error saying what is missing */
  private async publish(archive: string, s: ArchiveState, p: Pending): Promise<void> {
    const missing = this.o.witnesses.filter((w) => !p.cosigned.has(w.name));
    const failed: string[] = [];
    await Promise.all(
      missing.map(async (w) => {
        try {
          p.cosigned.set(w.name, await this.cosign(archive, s, p, w));
          s.witnessSize.set(w.name, p.size);
        } catch (err) {
          failed.push((err as Error).message);
        }
      }),
    );
    const name = `evidence log of archive ${archive}`;
    if (p.cosigned.size < this.o.quorum)
      throw new Error(`${name}: checkpoint of size ${p.size} not published: ${p.cosigned.size} of ${this.o.quorum} cosignatures (${failed.join('; ')})`);
    // Another daemon of the archive may have published this size meanwhile; the anchor is checked again before it moves.
    await this.o.anchors.check(archive, p.size);
    let tsr: Buffer | null = null;
    if (this.o.tsaUrl !== undefined) {
      try {
        tsr = await this.o.clients.timestamp(this.o.tsaUrl, Buffer.from(p.text, 'utf8'));
      } catch (err) {
        throw new Error(`${name}: checkpoint of size ${p.size} not published: no time-stamp token from ${this.o.tsaUrl}: ${(err as Error).message}`, {
          cause: err,
        });
      }
    }
    const lines = this.o.witnesses.flatMap((w) => p.cosigned.get(w.name) ?? []);
    const note = p.note + lines.join('');
    const c = readCheckpoint(note, this.o.key);
    const row: CheckpointRow = { archive_id: archive, tree_size: p.size, note, tsr, published: Date.now() };
    this.o.anchors.advance(archive, { size: p.size, root: c.rootHash, note });
    await this.o.log.addCheckpoint(row);
    s.pending = undefined;
    this.o.onPublished?.(row);
  }

  /** One witness's cosignature lines for `p`: from the size it last cosigned (learnt from a 409 when unknown or wrong). */
  private async cosign(archive: string, s: ArchiveState, p: Pending, w: WitnessSetting): Promise<string[]> {
    let old = s.witnessSize.get(w.name) ?? 0;
    for (let attempt = 0; ; attempt++) {
      if (old > p.size)
        throw new Error(
          `witness ${w.name} has cosigned a tree of ${old} entries, larger than the log's ${p.size}: the log was cut back, or another log uses its origin`,
        );
      const proof = old > 0 && old < p.size ? await consistencyOf(this.o.log, archive, old, p.size) : [];
      try {
        return await this.o.clients.addCheckpoint(w, { oldSize: old, proof, note: p.note });
      } catch (err) {
        const e = err as WitnessFailure;
        if (e.status !== 409 || e.recordedSize === undefined || attempt > 0) throw err;
        old = e.recordedSize;
        s.witnessSize.set(w.name, old);
      }
    }
  }

  /** Stops the timer and waits for a round in progress. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }
}
