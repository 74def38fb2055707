/**
 * The archive's one read cache: for each recently asked URL (urlkey), a
 * compact view of its mementos (per archive, the Memento-Datetimes and row
 * ids in one packed array, oldest first, and the URI-R as captured), from
 * which TimeGates, Mementos, the redirector and the TimeMaps' holdings are
 * answered without asking SQLite; and with it the whole answers made from
 * it (a TimeGate's 302, a Memento's 200: archive/read/kept-answers.ts).
 * Bounded by an estimate of its bytes (`index_cache_bytes`), least
 * recently used URL dropped first (lru-cache).
 *
 * One rule keeps it fresh: a write of a urlkey invalidates every answer
 * read for it. The store calls {@link ReadCache.written} with the urlkeys of
 * every index commit after it committed and before the PUTs it answers are
 * acknowledged (archive/store/store.ts), which drops the URL's view with
 * every answer kept with it, and makes any read of the URL still in flight
 * unfit to keep: each load takes a ticket (its urlkey's generation) before
 * it asks the index, a write bumps the generation, and an answer whose
 * ticket is older goes to the request that asked (it began before the
 * write was acknowledged) but is not kept. So no read that begins after a
 * capture's acknowledgement gets an answer without it.
 *
 * Access rules are not applied here: archive/read/access-rules.ts uses these plain
 * answers only for a URL whose policy is open. `purge` and `reindex` rewrite
 * the index only while the daemon is stopped (they hold the data folder's
 * lock), so the next daemon starts with an empty cache; {@link ReadCache.clear}
 * drops everything for a caller that changes the index otherwise.
 */
import { LRUCache } from 'lru-cache';
import type { MementoRef, Neighbourhood, Spans } from './index/memento-row.js';

/** Most mementos of one URL kept in its view; a URL with more is asked of the index on each read. */
export const MAX_VIEW_MEMENTOS = 4096;

/** Most whole answers kept with one URL's view (different mementos, forms, hosts, Prefer). */
export const ANSWERS_PER_URL = 8;

/**
 * Heap bytes of a view and of a timeline besides their numbers and strings
 * (objects, array headers, the view's Map of answers, lru-cache's entry),
 * measured with V8 (`process.memoryUsage()` over 100,000 views of 10
 * mementos); strings are counted at 2 bytes a character, an upper bound.
 */
const VIEW_BYTES = 630;
const TIMELINE_BYTES = 120;

/** Bits of the doorkeeper of answers ({@link ReadCache.keep}): 128 KiB. */
const ASKED_BITS = 1 << 20;

/** One memento as a view is built from: archive, row id, Memento-Datetime (epoch s), URI-R as captured. */
export interface ViewRow {
  archive_id: string;
  id: number;
  datetime: number;
  uri_r: string;
}

/** Last index `i` with `dt[i] <= t` among the first `n`; -1 when none. */
function lastAtOrBefore(packed: readonly number[], n: number, t: number): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (packed[mid] <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

/** One URL's mementos in one archive, oldest first: datetimes then row ids in one array of numbers (unboxed doubles in V8). */
export class Timeline {
  /** Mementos in it (at least one). */
  readonly length: number;

  /**
   * @param packed `[datetime_0 … datetime_n-1, id_0 … id_n-1]`, datetimes ascending (epoch s)
   * @param uris the URI-R of every memento, or of each in turn when they differ
   */
  constructor(
    readonly archive: string,
    private readonly packed: readonly number[],
    private readonly uris: string | readonly string[],
  ) {
    this.length = packed.length / 2;
  }

  /** The memento at position `i` (0 the oldest) as a navigation link needs it. */
  ref(i: number): MementoRef {
    return { id: this.packed[this.length + i], datetime: this.packed[i], uri_r: typeof this.uris === 'string' ? this.uris : this.uris[i] };
  }

  /** First, last and the two mementos on each side of `t` (epoch s), as {@link Neighbourhood}. */
  neighbourhood(t: number): Neighbourhood {
    const n = this.length;
    const at = lastAtOrBefore(this.packed, n, t);
    const atOrBefore: MementoRef[] = [];
    const after: MementoRef[] = [];
    for (let i = at; i >= 0 && i > at - 2; i--) atOrBefore.push(this.ref(i));
    for (let i = at + 1; i < n && i < at + 3; i++) after.push(this.ref(i));
    return { first: this.ref(0), last: this.ref(n - 1), atOrBefore, after };
  }

  /** An estimate of its heap bytes. */
  get bytes(): number {
    const uris = typeof this.uris === 'string' ? 2 * this.uris.length : this.uris.reduce((s, u) => s + 2 * u.length + 16, 0);
    return TIMELINE_BYTES + 8 * this.packed.length + uris;
  }
}

/** What the cache holds of one URL: its mementos per archive, and the whole answers made from them. */
export class UrlView {
  /** Whole answers kept with the view, by the key that names what else they depend on (made with the first). */
  answers: Map<string, unknown> | undefined;
  /** An estimate of its heap bytes (the timelines, the key, the answers). */
  bytes: number;

  /**
   * @param timelines one per archive holding the URL
   * @param complete false when the URL has more than {@link MAX_VIEW_MEMENTOS} mementos (no timelines: ask the index)
   */
  constructor(
    readonly urlkey: string,
    readonly timelines: readonly Timeline[],
    readonly complete: boolean,
  ) {
    this.bytes = VIEW_BYTES + 2 * urlkey.length + timelines.reduce((s, x) => s + x.bytes, 0);
  }

  /** The URL's mementos in `archive`; `undefined` when it has none there. */
  timeline(archive: string): Timeline | undefined {
    for (const x of this.timelines) if (x.archive === archive) return x;
    return undefined;
  }

  /** For each archive holding the URL: first and last datetime (epoch s) and the count. */
  spans(): Spans {
    return this.timelines.map((x) => ({ archive_id: x.archive, first: x.ref(0).datetime, last: x.ref(x.length - 1).datetime, n: x.length }));
  }

  /**
   * Builds a view from the URL's rows (any order), or an incomplete one
   * when there are more than {@link MAX_VIEW_MEMENTOS}.
   */
  static of(urlkey: string, rows: readonly ViewRow[]): UrlView {
    if (rows.length > MAX_VIEW_MEMENTOS) return new UrlView(urlkey, [], false);
    const sorted = [...rows].sort((a, b) => (a.archive_id < b.archive_id ? -1 : a.archive_id > b.archive_id ? 1 : a.datetime - b.datetime));
    const timelines: Timeline[] = [];
    for (let from = 0; from < sorted.length;) {
      let to = from + 1;
      while (to < sorted.length && sorted[to].archive_id === sorted[from].archive_id) to++;
      const n = to - from;
      const packed: number[] = [];
      const uris: string[] = [];
      let same = true;
      for (let i = 0; i < n; i++) {
        const r = sorted[from + i];
        packed.push(r.datetime);
        uris.push(r.uri_r);
        same &&= r.uri_r === uris[0];
      }
      for (let i = 0; i < n; i++) packed.push(sorted[from + i].id);
      timelines.push(new Timeline(sorted[from].archive_id, packed, same ? uris[0] : uris));
      from = to;
    }
    return new UrlView(urlkey, timelines, true);
  }
}

/** Counters since the cache was made. */
export interface ReadCacheStats {
  /** Views answered from memory. */
  hits: number;
  /** Views loaded from the index. */
  misses: number;
  /** Views not kept because a write of their urlkey committed while they were loaded. */
  discarded: number;
  /** Views dropped by writes. */
  invalidated: number;
}

/** A urlkey's generation while loads of it are in flight. */
interface Generation {
  gen: number;
  inFlight: number;
}

/**
 * Views of recently asked URLs and the answers made from them, dropped by
 * writes (see the module comment). With `maxBytes` 0 it keeps nothing:
 * every read loads its view from the index.
 */
export class ReadCache {
  private readonly lru: LRUCache<string, UrlView> | null;
  private readonly generations = new Map<string, Generation>();
  /** Hits, misses, discarded loads, invalidated views. */
  readonly stats: ReadCacheStats = { hits: 0, misses: 0, discarded: 0, invalidated: 0 };

  /** @param maxBytes an estimate of the heap bytes kept at most (`index_cache_bytes`); 0 keeps none */
  constructor(maxBytes: number) {
    this.lru = maxBytes <= 0 ? null : new LRUCache<string, UrlView>({ maxSize: maxBytes, sizeCalculation: (v) => v.bytes });
  }

  /**
   * The view of `urlkey`: from memory, else built from the rows `load`
   * reads from the index (`undefined`: more than {@link MAX_VIEW_MEMENTOS})
   * and kept unless a write of the urlkey committed meanwhile.
   */
  async view(urlkey: string, load: () => Promise<readonly ViewRow[] | undefined>): Promise<UrlView> {
    const hit = this.lru?.get(urlkey);
    if (hit) {
      this.stats.hits++;
      return hit;
    }
    this.stats.misses++;
    let g = this.generations.get(urlkey);
    if (!g) {
      g = { gen: 0, inFlight: 0 };
      this.generations.set(urlkey, g);
    }
    const ticket = g.gen;
    g.inFlight++;
    try {
      const rows = await load();
      const v = rows ? UrlView.of(urlkey, rows) : new UrlView(urlkey, [], false);
      if (g.gen !== ticket) this.stats.discarded++;
      else this.lru?.set(urlkey, v);
      return v;
    } finally {
      if (--g.inFlight === 0) this.generations.delete(urlkey);
    }
  }

  /** The answer kept with `view` (a neighbourhood's `view`) under `key` (archive/read/kept-answers.ts); `undefined` when none is. */
  answer<T>(view: object | undefined, key: string): T | undefined {
    return view instanceof UrlView ? (view.answers?.get(key) as T | undefined) : undefined;
  }

  /**
   * Keeps a whole answer made from `view` under `key` (which must name
   * everything besides the view the answer depends on) until the view
   * leaves the cache: a write of its URL, or eviction. Its `bytes` count
   * in the view's. Kept the second time it is offered lately, not the
   * first (a doorkeeper); nothing is kept with a view the cache no longer
   * holds (a write dropped it meanwhile, or it was never kept), nor past
   * {@link ANSWERS_PER_URL} answers.
   *
   * @param bytes an estimate of the answer's heap bytes
   */
  keep(view: object | undefined, key: string, value: unknown, bytes: number): void {
    if (!this.lru || !(view instanceof UrlView) || this.lru.peek(view.urlkey) !== view) return;
    if (view.answers && (view.answers.size >= ANSWERS_PER_URL || view.answers.has(key))) return;
    if (!this.askedBefore(view.urlkey, key)) return;
    (view.answers ??= new Map()).set(key, value);
    view.bytes += bytes + 2 * key.length + 64;
    // Out and in again, so that lru-cache counts its size anew (a set of the same value keeps the old size), evicting others for it.
    this.lru.delete(view.urlkey);
    this.lru.set(view.urlkey, view);
  }

  /**
   * A write of `urlkeys` committed: drops their views (and the answers kept
   * with them), and makes loads of them in flight unfit to keep. Called by
   * the store after every index commit, before its PUTs are acknowledged.
   */
  written(urlkeys: Iterable<string>): void {
    for (const k of urlkeys) {
      if (this.lru?.delete(k)) this.stats.invalidated++;
      const g = this.generations.get(k);
      if (g) g.gen++;
    }
  }

  /** Drops every view, and makes every load in flight unfit to keep. */
  clear(): void {
    this.lru?.clear();
    for (const g of this.generations.values()) g.gen++;
  }

  /**
   * True when the answer `key` of `urlkey` was offered to {@link keep}
   * lately (a "doorkeeper", as in TinyLFU: a hashed bitmap, cleared when a
   * quarter of its bits are set); marks it. An answer is kept the second
   * time it is made, not the first: under a load spread over many URLs,
   * answers asked once would otherwise fill the cache and push out the
   * views, which every request of a URL uses (bench/timegate.ts: 11% of
   * view hits with every answer kept, at 32 MiB and 100,000 URLs).
   */
  private askedBefore(urlkey: string, key: string): boolean {
    let h = 0x811c9dc5;
    for (let i = 0; i < urlkey.length; i++) h = Math.imul(h ^ urlkey.charCodeAt(i), 0x01000193);
    for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
    const bit = (h >>> 0) % ASKED_BITS;
    const mask = 1 << (bit & 31);
    if (this.asked[bit >>> 5] & mask) return true;
    this.asked[bit >>> 5] |= mask;
    if (++this.askedSet > ASKED_BITS / 4) {
      this.asked.fill(0);
      this.askedSet = 0;
    }
    return false;
  }

  private readonly asked = new Uint32Array(ASKED_BITS / 32);
  private askedSet = 0;

  /** Estimated bytes held. */
  get bytes(): number {
    return this.lru?.calculatedSize ?? 0;
  }

  /** URLs held. */
  get size(): number {
    return this.lru?.size ?? 0;
  }
}
