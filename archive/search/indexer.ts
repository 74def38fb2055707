/**
 * The daemon's text indexer: extracts the text of every new HTML or
 * plain-text memento (extract.ts) into the full-text index
 * (archive/store/index/text-queries.ts), off the request path. A capture
 * is acknowledged when its record and row are committed; the store's
 * commit callback (`onCommitted`) nudges the indexer ({@link TextIndexer.nudge}),
 * which reads, in row id order, the mementos that have no text yet
 * (`missing`: responses of the indexed types, never revisits), one at a
 * time, and stores their texts a batch at a time ({@link BATCH_TEXTS} or
 * {@link BATCH_CHARS}, or the end of a step: one transaction, one FTS5
 * segment for the batch, which costs less per text than one each). The
 * same walk, from row id 0 when the daemon starts, catches up with
 * whatever has no text: captures committed
 * just before a crash, and a whole index after `reindex` (a new index
 * file starts without text). The event loop only reads each record's raw
 * bytes (its gzip member, at most 3 MiB: extract.ts `TEXT_RECORD_BYTES`)
 * and moves them, not copied, to the daemon's `text` work pool's thread
 * (archive/work/), which inflates the record, decodes its body (at most
 * 1 MiB of decoded text per memento) and parses it, with a deadline: all
 * of that costs time in proportion to the stored page.
 *
 * A catch-up (a walk step that found a full {@link STEP} of rows without
 * text: after `reindex` or an import, a million of them) yields to
 * readers: while GET or HEAD requests keep coming, it works for a memento,
 * then pauses for three times as long ({@link CATCH_UP_SHARE}), so that it
 * takes at most a quarter of the time from the answers; with no reader it
 * runs at full speed. The texts of new captures (a step of a few rows) are
 * never paced.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { MementoIndex } from '../store/index/memento-index.js';
import type { MementoRow } from '../store/index/memento-row.js';
import type { MementoText } from '../store/index/text-queries.js';
import { type ExtractedText, extractFromRecord, type RecordBytes, TEXT_RECORD_BYTES } from './extract.js';

/** Rows read per walk step. */
export const STEP = 100;
/** While readers are answered, the share of the time a catch-up walk may work (its pauses are the rest). */
export const CATCH_UP_SHARE = 0.25;
/** Longest pause of a catch-up walk between two mementos (ms). */
export const MAX_PAUSE_MS = 1_000;

/** What paces a catch-up walk (see the module comment); tests give their own clock and pause. */
export interface WalkPace {
  /** How many GET or HEAD requests the daemon has started so far (a counter that only grows). */
  readsStarted: () => number;
  /** A clock in ms (default: `performance.now`). */
  now?: () => number;
  /** Waits `ms` (default: a timer). */
  pause?: (ms: number) => Promise<void>;
}
/** Most texts stored in one transaction. */
export const BATCH_TEXTS = 16;
/** Most characters (titles and texts) stored in one transaction. */
export const BATCH_CHARS = 4_000_000;

/** The text indexer (see the module comment). */
export class TextIndexer {
  private after = 0;
  private running: Promise<void> | undefined;
  private again = false;
  private closed = false;
  /** Mementos whose text was stored, and those whose stored response could not be read (retried at the next start). */
  readonly stats = { indexed: 0, failed: 0 };

  /**
   * @param index the archive's index (its `text`; without one the indexer does nothing)
   * @param read reads the first `max` raw bytes of a memento's record (the store's `readRecordBytes`)
   * @param onError told of a memento whose record could not be read or parsed
   * @param extract where the text is extracted from the record's bytes (the daemon: its `text` work pool's thread, the bytes moved there; default: this thread)
   * @param pace what paces a catch-up while readers are answered (absent: never paced)
   */
  constructor(
    private readonly index: MementoIndex,
    private readonly read: (row: MementoRow, max: number) => Promise<Uint8Array>,
    private readonly onError: (row: MementoRow, err: unknown) => void = () => undefined,
    private readonly extract: (input: RecordBytes) => Promise<ExtractedText> = extractFromRecord,
    private readonly pace?: WalkPace,
  ) {}

  /** There may be mementos without text: walk them (now, or again when the running walk ends). */
  nudge(): void {
    if (this.closed || !this.index.text) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.walk().finally(() => {
      this.running = undefined;
      if (this.again && !this.closed) {
        this.again = false;
        this.nudge();
      }
    });
  }

  /** Resolves when no walk is running nor asked for (every memento committed before the call has its text, or failed). */
  async drained(): Promise<void> {
    while (this.running) await this.running;
  }

  /** Stops after the memento being read; resolves when it has. */
  async close(): Promise<void> {
    this.closed = true;
    await this.running?.catch(() => undefined);
  }

  private async walk(): Promise<void> {
    const text = this.index.text!;
    const yieldTo = this.yielder();
    for (;;) {
      const rows = await text.missing(this.after, STEP).catch(() => []);
      if (!rows.length || this.closed) return;
      let batch: MementoText[] = [];
      let chars = 0;
      // A full step: more rows may wait, a catch-up, paced while readers come.
      const catchingUp = rows.length >= STEP;
      for (const row of rows) {
        if (this.closed) break;
        if (catchingUp) await yieldTo?.();
        this.after = row.id;
        try {
          const record = await this.read(row, TEXT_RECORD_BYTES);
          const t = await this.extract({ record, length: row.warc_length, mime: row.mime, file: row.warc_file, offset: row.warc_offset });
          batch.push({ id: row.id, title: t.title, body: t.body });
          chars += t.title.length + t.body.length;
        } catch (err) {
          this.stats.failed++;
          this.onError(row, err);
        }
        if (batch.length >= BATCH_TEXTS || chars >= BATCH_CHARS) {
          await this.store(batch, rows);
          batch = [];
          chars = 0;
        }
      }
      await this.store(batch, rows);
      if (this.closed) return;
    }
  }

  /**
   * The pause before each memento of a catch-up step: if a read started
   * since the last memento began, wait (1 / {@link CATCH_UP_SHARE} − 1)
   * times the time that memento took (at most {@link MAX_PAUSE_MS}).
   */
  private yielder(): (() => Promise<void>) | undefined {
    const pace = this.pace;
    if (!pace) return undefined;
    const now = pace.now ?? (() => performance.now());
    const pause = pace.pause ?? ((ms: number) => sleep(ms).then(() => undefined));
    let began: number | undefined;
    let reads = pace.readsStarted();
    return async () => {
      const t = now();
      const seen = pace.readsStarted();
      if (began !== undefined && seen !== reads) await pause(Math.min(MAX_PAUSE_MS, (t - began) * (1 / CATCH_UP_SHARE - 1)));
      reads = pace.readsStarted();
      began = now();
    };
  }

  /** Stores a batch of texts; when that fails, each of its mementos counts as failed (retried at the next start). */
  private async store(batch: MementoText[], rows: readonly MementoRow[]): Promise<void> {
    if (!batch.length) return;
    try {
      await this.index.text!.putMany(batch);
      this.stats.indexed += batch.length;
    } catch (err) {
      this.stats.failed += batch.length;
      for (const t of batch) {
        const row = rows.find((r) => r.id === t.id);
        if (row) this.onError(row, err);
      }
    }
  }
}
