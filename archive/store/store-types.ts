/**
 * What the archive's store (store.ts) takes and gives: the options of
 * opening it and of a capture's ingest, the outcome of a capture, and the
 * write queue's counters.
 */
import type { Via } from '../evidence/leaf.js';
import type { MementoRow, NewMementoRow } from './index/index-db.js';
import type { LockHolder } from './lock.js';
import type { Log } from './upkeep/maintenance.js';

/** The outcome of a stored capture. */
export interface IngestResult {
  /**
   * What the archive did (capture-is-new.ts): `new` (a response record
   * pair and its row written), `revisit` (identical to the memento it
   * follows, `revisit_interval` or more after it: a revisit record pair and
   * its row written; `row.refers_to` names the memento holding the
   * payload), `duplicate` (identical, within the interval: nothing
   * written, `row` is the memento it follows) or `conflict` (see below).
   */
  kind: 'new' | 'revisit' | 'duplicate' | 'conflict';
  /** true for `new` and `revisit` (answered 201); false: a duplicate or a conflict, nothing was written. */
  created: boolean;
  /**
   * true: another capture of the URI-R (its urlkey) is stored at the same
   * second and this one differs from it (payload digest, status or media
   * type); nothing was written and `row` is the stored memento, which stays
   * as it is (the PUT is answered 409). See store.ts `ArchiveStore.ingest`.
   */
  conflict: boolean;
  row: MementoRow | NewMementoRow;
  /** Bytes of the capture record received. */
  bytes: number;
}

/**
 * Counters of the write queue since the store opened: how many batches
 * (each one fsync per WARC file written + one SQLite transaction), fsync
 * calls on WARC files, index transactions and stored captures.
 */
export interface StoreStats {
  batches: number;
  fsyncs: number;
  transactions: number;
  /** Captures written (201), revisits included. */
  written: number;
  /** Of `written`, the revisits (a revisit record, no second copy of the body). */
  revisits: number;
  /** Captures found identical to the memento they follow (200, nothing written). */
  duplicates: number;
  /** Captures refused because a different memento of their urlkey is stored at the same second (409, nothing written). */
  conflicts: number;
  /** Milliseconds spent in each step of the batches, summed: dedup lookups, compressing/appending, fdatasync, index commit. */
  ms: { lookup: number; append: number; sync: number; commit: number };
}

/** Options of store.ts `ArchiveStore.open`. */
export interface OpenOptions {
  /** Where crash-recovery lines go (default: nowhere). */
  log?: Log;
  /** Who holds the data folder's lock, as another process is told (default `daemon`). */
  holder?: LockHolder;
}

/** Options of store.ts `ArchiveStore.ingest`. */
export interface IngestOptions {
  /**
   * The capture's Memento-Datetime when the sender knows it (a PUT's
   * `Memento-Datetime`; `import` gives a record's WARC-Date), instead of
   * the response's Date (shared/capture-rules.ts `acceptCapture`).
   */
  datetime?: Date;
  /** The memento this capture repeats, as its sender names it (revisit-of.ts): same payload digest; written as a revisit of it unless dedup decides. */
  revisitOf?: MementoRow;
  /** How the capture came in (archive/evidence/leaf.ts `Via`): `put` when absent. Written into its record and its evidence log entry. */
  via?: Via;
}
