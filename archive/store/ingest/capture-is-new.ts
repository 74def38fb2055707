/**
 * Is this capture new? The archive's one answer (docs/storage.md
 * "Deduplication and revisits", "Same-second captures"), asked by the store's write
 * queue for each capture in queue order, against the index and the
 * captures of the same batch written before it:
 *
 * - `duplicate`: payload digest, status and media type equal those of the
 *   memento it follows in time (the latest of its urlkey at or before its
 *   datetime, in any archive, not hidden by the access rules; a revisit
 *   counts), and it is dated less than `revisit_interval` after that
 *   memento (or at its very second, or revisits are `off`): nothing is
 *   stored, the PUT names that memento (200).
 * - `revisit`: identical as above, but dated `revisit_interval` or more
 *   after that memento (and at another second): the page was served again
 *   unchanged, so the store writes a WARC `revisit` record and an index
 *   row whose `refers_to` names the memento holding the payload (the one
 *   it follows, or that one's `refers_to` when it is itself a revisit) —
 *   no second copy of the body (201).
 * - `conflict`: not identical, but a memento of its urlkey is stored at the
 *   same second (one URI-M for both): nothing is stored, 409.
 * - `new`: store it (201).
 *
 * With one writer of the index (SQLite, under the data folder's lock) the
 * newest memento of recently seen urlkeys is kept in memory, so that most
 * captures of a busy page need no index query; it is right because the
 * store tells this module of every commit ({@link CaptureIsNew.committed}).
 * On an index other daemons write into too (PostgreSQL, docs/scale-out.md)
 * nothing is kept: each batch asks the index (one query), so it sees what
 * the others committed before it; of two daemons deciding the same key at
 * once, the index's unique key picks the one stored, and the other's
 * capture is decided again against it ({@link CaptureIsNew.lost}).
 */
import { LRUCache } from 'lru-cache';
import type { AtOrBefore, MementoRow, NewMementoRow } from '../index/index-db.js';
import type { MementoIndex } from '../index/memento-index.js';

/** A memento row, stored (with id) or written in the batch being stored. */
export type AnyRow = MementoRow | NewMementoRow;

/** A capture as the decision sees it: its urlkey and Memento-Datetime (epoch s). */
export interface CaptureKey {
  urlkey: string;
  datetime: number;
}

/** What the archive does with a capture (see the module comment). */
export type Verdict = { kind: 'new' } | { kind: 'duplicate'; of: AnyRow } | { kind: 'revisit'; of: AnyRow } | { kind: 'conflict'; with: AnyRow };

/** True for a memento the access rules hide (archive/read/access-rules.ts): it is never taken for the one a capture duplicates. */
export type HiddenFn = (urlkey: string, datetime: number) => boolean;

/** The store's decision of whether a capture is new: the cache of newest mementos and the batch lookups. */
export class CaptureIsNew {
  /** The newest memento of recently seen urlkeys (`{none}`: the urlkey has none); ~16 MiB. */
  private readonly newest = new LRUCache<string, AnyRow | { none: true }>({
    maxSize: 16 * 1024 * 1024,
    sizeCalculation: (v, k) => 2 * k.length + ('uri_r' in v ? 2 * v.uri_r.length + 400 : 64),
  });

  /**
   * @param index the index the captures are committed to
   * @param hidden asked at decision time (the daemon sets the access rules after the store opens)
   * @param revisitIntervalS `revisit_interval`, seconds; `null` (`off`, the default): identical captures are always duplicates
   * @param oneWriter true (the default): this daemon alone writes into `index`, so newest mementos are kept in memory; false: other daemons may, every batch asks the index
   */
  constructor(
    private readonly index: MementoIndex,
    private readonly hidden: () => HiddenFn | undefined,
    private readonly revisitIntervalS: number | null = null,
    private readonly oneWriter = true,
  ) {}

  /**
   * Starts the decisions of one batch of the write queue: for each key, the
   * latest memento at or before its datetime in the index — from the cache
   * of newest mementos where that one is not after it, the rest in one
   * index query (one round trip to SQLite).
   *
   * @throws the index's error; nothing is decided then.
   */
  async batch(keys: CaptureKey[]): Promise<DedupBatch> {
    const found: (AnyRow | undefined)[] = new Array(keys.length).fill(undefined);
    const ask: number[] = [];
    for (const [i, k] of keys.entries()) {
      const known = this.oneWriter ? this.newest.get(k.urlkey) : undefined;
      if (known && 'none' in known) continue;
      if (known && known.datetime <= k.datetime) found[i] = known;
      else ask.push(i);
    }
    if (ask.length) {
      const rows: AtOrBefore[] = await this.index.atOrBeforeMany(ask.map((i) => ({ urlkey: keys[i].urlkey, t: keys[i].datetime })));
      for (const [j, i] of ask.entries()) {
        const { row, isNewest } = rows[j];
        found[i] = row;
        if (isNewest && this.oneWriter) this.newest.set(keys[i].urlkey, row ?? { none: true });
      }
    }
    return new DedupBatch(found, this.hidden(), this.revisitIntervalS);
  }

  /**
   * The verdict on a capture whose row the index left out because another
   * daemon committed `winner`, a memento of its key (urlkey, archive,
   * Memento-Datetime), first: a `duplicate` of it when identical (and not
   * hidden), else a `conflict` with it, as if `winner` had been in the
   * index when the capture was decided.
   */
  lost(row: NewMementoRow, winner: MementoRow): Verdict {
    return new DedupBatch([winner], this.hidden(), null).verdict(0, row);
  }

  /** `rows` are committed to the index: each is the newest of its urlkey where the cache knew the newest and it is not older. */
  committed(rows: NewMementoRow[]): void {
    if (!this.oneWriter) return;
    for (const row of rows) {
      const known = this.newest.get(row.urlkey);
      if (known && ('none' in known || known.datetime <= row.datetime)) this.newest.set(row.urlkey, row);
    }
  }
}

/**
 * The decisions of one batch, taken in queue order: each capture is
 * compared with the later of the index's memento ({@link CaptureIsNew.batch})
 * and the captures of this batch written before it ({@link wrote}).
 */
export class DedupBatch {
  /** The rows written in this batch, per urlkey, in the order written (not necessarily time order: a PUT's Memento-Datetime). */
  private readonly written = new Map<string, NewMementoRow[]>();

  constructor(
    private readonly fromIndex: (AnyRow | undefined)[],
    private readonly hidden: HiddenFn | undefined,
    private readonly revisitIntervalS: number | null = null,
  ) {}

  /**
   * The memento the `i`-th key of the batch follows in time: the latest
   * at or before its datetime, from the index or written earlier in this
   * batch, whichever is later; `undefined` when there is none.
   */
  predecessor(i: number, key: CaptureKey): AnyRow | undefined {
    const fromDb = this.fromIndex[i];
    let b: NewMementoRow | undefined;
    for (const r of this.written.get(key.urlkey) ?? []) if (r.datetime <= key.datetime && (!b || r.datetime >= b.datetime)) b = r;
    if (b && (!fromDb || b.datetime >= fromDb.datetime)) return b;
    return fromDb;
  }

  /**
   * Is the `i`-th capture of the batch new? (See the module comment.) A
   * `new` capture counts for the later ones only once the store has
   * written it ({@link wrote}).
   */
  verdict(i: number, row: NewMementoRow): Verdict {
    const prev = this.predecessor(i, row);
    if (!prev) return { kind: 'new' };
    if (prev.digest === row.digest && prev.status === row.status && prev.mime === row.mime && !this.hidden?.(prev.urlkey, prev.datetime)) {
      // A revisit needs a second of its own (its URI-M), and revisit_interval since the memento it follows.
      const every = this.revisitIntervalS;
      if (every !== null && row.datetime - prev.datetime >= Math.max(every, 1)) return { kind: 'revisit', of: prev };
      return { kind: 'duplicate', of: prev };
    }
    // Same urlkey, same second, not identical: the stored memento stays.
    if (prev.datetime === row.datetime) return { kind: 'conflict', with: prev };
    return { kind: 'new' };
  }

  /**
   * True when `row` was written in this batch ({@link wrote}) and so is not
   * in the index yet: a revisit of it cannot name its row id before the
   * batch is committed.
   */
  inBatch(row: AnyRow): boolean {
    return this.written.get(row.urlkey)?.includes(row as NewMementoRow) ?? false;
  }

  /** A capture found new (or a revisit) was written (its WARC records appended): later captures of the batch follow it. */
  wrote(row: NewMementoRow): void {
    const mine = this.written.get(row.urlkey);
    if (mine) mine.push(row);
    else this.written.set(row.urlkey, [row]);
  }
}
