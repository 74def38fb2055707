/**
 * The index's read cache: the answers of {@link IndexDb.neighbourhood}
 * (TimeGates, Mementos, the redirector) and {@link IndexDb.spans} (the
 * redirector's and the TimeMaps' holdings) for recently asked URLs, kept in
 * memory (lru-cache, bounded by an estimate of their bytes), so that a hot
 * request asks SQLite nothing: no round trip to libuv's thread pool, no
 * row conversion.
 *
 * Never stale for a read that starts after a capture was acknowledged:
 * every index commit ({@link IndexDb.insertMany}) calls {@link indexed}
 * with its rows before it returns, and so before the PUT that caused it is
 * answered; that drops the entries of each (archive, urlkey) it wrote, a
 * same-second replacement of a row included.
 *
 * The race it closes: a lookup asked before a commit can come back after
 * it with the answer of before. Each lookup takes a ticket (its urlkey's
 * generation) before it asks; a commit that writes the urlkey bumps the
 * generation; an answer whose ticket is older still goes to the request
 * that asked (it started before the commit) but is not kept. Generations
 * are kept only for urlkeys with a lookup in flight.
 *
 * An answer is kept the second time its URL misses, not the first (a
 * "doorkeeper", as in TinyLFU: a hashed bitmap of the URLs that missed
 * lately): under a load that rarely asks for a URL twice, such as a
 * uniform sweep over a million mementos, the cache would otherwise take
 * in and evict an answer per request, and the garbage collector pay for
 * it, for no hit.
 *
 * One neighbourhood holds for every instant from its memento at or before
 * the instant to (not including) its first memento after it, so an entry,
 * keyed by (archive, urlkey), keeps up to {@link INTERVALS} such intervals
 * and answers any instant that falls in one. A lookup that found no
 * memento holds for every instant. Access rules are not applied here: a
 * read asks through archive/access.ts, which uses these plain answers only
 * for a URL whose policy is open.
 *
 * The cached objects are shared by every request that gets them, so they
 * are frozen when kept (a change would throw); a frozen neighbourhood is
 * what whole answers are kept with ({@link IndexCache.keep}).
 */
import { LRUCache } from 'lru-cache';
import type { MementoRef, MementoRow, Neighbourhood } from './index-db.js';

/** What {@link IndexDb.spans} answers: per archive, first and last datetime (epoch s) and count. */
export type Spans = { archive_id: string; first: number; last: number; n: number }[];

/**
 * Intervals kept per (archive, urlkey); the oldest goes first. Enough for
 * a URL asked for at many instants (each interval is counted in the
 * cache's bytes, so a busy URL costs memory, not a slot another URL needs).
 */
export const INTERVALS = 32;

/** A neighbourhood and the instants `[lo, hi)` (epoch s) it is the answer for. */
interface Interval {
  lo: number;
  hi: number;
  /** `atOrBefore[0]` is the whole row (or there is none): it serves a `whole` lookup. */
  whole: boolean;
  n: Neighbourhood | undefined;
  bytes: number;
}

type Entry = { kind: 'n'; intervals: readonly Interval[] } | { kind: 's'; spans: Spans };

/** Counters since the cache was made. */
export interface IndexCacheStats {
  hits: number;
  misses: number;
  /** Answers not kept because a commit wrote their urlkey while they were asked for. */
  discarded: number;
  /** Entries dropped by commits. */
  invalidated: number;
}

/** Most values kept with one neighbourhood ({@link IndexCache.keptWith}): answers to different forms, hosts, Prefer. */
export const KEPT_PER_NEIGHBOURHOOD = 8;

/** Bits of the doorkeeper's bitmap (128 KiB); it is cleared when a quarter of them are set. */
const SEEN_BITS = 1 << 20;

/** FNV-1a of a string's UTF-16 code units, 32 bits. */
function hash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** A urlkey's generation while lookups of it are in flight. */
interface Generation {
  gen: number;
  inFlight: number;
}

const strBytes = (s: string | null | undefined) => (s ? 2 * s.length : 0);

/** Freezes a neighbourhood, its arrays and its references (shared by every request that gets it). */
function freeze(n: Neighbourhood): void {
  for (const r of [n.first, n.last, ...n.atOrBefore, ...n.after]) Object.freeze(r);
  Object.freeze(n.atOrBefore);
  Object.freeze(n.after);
  Object.freeze(n);
}

/** An estimate of the heap bytes of one memento reference or whole row. */
function refBytes(r: MementoRef): number {
  const row = r as Partial<MementoRow>;
  if (row.warc_file === undefined) return 64 + strBytes(r.uri_r);
  return (
    200 +
    strBytes(r.uri_r) +
    strBytes(row.urlkey) +
    strBytes(row.archive_id) +
    strBytes(row.mime) +
    strBytes(row.digest) +
    strBytes(row.warc_file) +
    strBytes(row.client_ip)
  );
}

/**
 * An estimate of the heap bytes of a neighbourhood: each distinct reference
 * once, plus the arrays (the answers kept with it count their own bytes:
 * {@link IndexCache.keep}).
 */
function neighbourhoodBytes(n: Neighbourhood | undefined): number {
  if (!n) return 64;
  const refs = new Set<MementoRef>([n.first, n.last, ...n.atOrBefore, ...n.after]);
  let bytes = 160;
  for (const r of refs) bytes += refBytes(r);
  return bytes;
}

/**
 * Neighbourhoods and spans of recently asked URLs, invalidated by index
 * commits (see the module comment). With `maxBytes` 0 it keeps nothing
 * and every call asks the index.
 */
export class IndexCache {
  private readonly lru: LRUCache<string, Entry> | null;
  private readonly generations = new Map<string, Generation>();
  /** For each kept neighbourhood: its entry's key, and the values kept with it ({@link keptWith}). */
  private readonly kept = new WeakMap<Neighbourhood, { key: string; values: Map<string, unknown> }>();
  private readonly seen = new Uint32Array(SEEN_BITS / 32);
  private seenSet = 0;
  /** Hits, misses, discarded answers, invalidated entries. */
  readonly stats: IndexCacheStats = { hits: 0, misses: 0, discarded: 0, invalidated: 0 };

  /** @param maxBytes an estimate of the heap bytes kept at most (`index_cache_bytes`); 0 keeps none */
  constructor(maxBytes: number) {
    this.lru =
      maxBytes <= 0
        ? null
        : new LRUCache<string, Entry>({
            maxSize: maxBytes,
            sizeCalculation: (e, key) => 64 + 2 * key.length + (e.kind === 'n' ? e.intervals.reduce((s, i) => s + i.bytes, 0) : 64 + 96 * e.spans.length),
          });
  }

  /**
   * The neighbourhood of `urlkey` in `archive` around `t` (epoch s) as
   * {@link IndexDb.neighbourhood} answers it: from the cache when an
   * interval holds `t` (and, for `whole`, has the whole row), else from
   * `load`, whose answer is kept unless a commit wrote the urlkey meanwhile.
   */
  neighbourhood(
    archive: string,
    urlkey: string,
    t: number,
    whole: boolean,
    load: () => Promise<Neighbourhood | undefined>,
  ): Promise<Neighbourhood | undefined> {
    if (!this.lru) return load();
    const key = `n${archive}\n${urlkey}`;
    const e = this.lru.get(key);
    if (e?.kind === 'n') {
      for (const i of e.intervals) {
        if (i.lo <= t && t < i.hi && (i.whole || !whole)) {
          this.stats.hits++;
          return Promise.resolve(i.n);
        }
      }
    }
    this.stats.misses++;
    if (!this.missedBefore(key)) return load();
    return this.fill(urlkey, load, (n) => this.keepNeighbourhood(key, n, whole));
  }

  /** For each archive holding `urlkey`: first and last datetime and count, as {@link IndexDb.spans} answers it, from the cache or `load`. */
  spans(urlkey: string, load: () => Promise<Spans>): Promise<Spans> {
    if (!this.lru) return load();
    const key = `s${urlkey}`;
    const e = this.lru.get(key);
    if (e?.kind === 's') {
      this.stats.hits++;
      return Promise.resolve(e.spans);
    }
    this.stats.misses++;
    if (!this.missedBefore(key)) return load();
    return this.fill(urlkey, load, (spans) => this.lru!.set(key, { kind: 's', spans }));
  }

  /**
   * Drops what the index answered for the (archive, urlkey) of each row
   * and its urlkey's spans, and makes answers in flight for those urlkeys
   * unfit to keep. Called by every index commit, after it committed and
   * before it returns.
   */
  indexed(rows: readonly { archive_id: string; urlkey: string }[]): void {
    if (!this.lru) return;
    for (const r of rows) {
      if (this.lru.delete(`n${r.archive_id}\n${r.urlkey}`)) this.stats.invalidated++;
      if (this.lru.delete(`s${r.urlkey}`)) this.stats.invalidated++;
      const g = this.generations.get(r.urlkey);
      if (g) g.gen++;
    }
  }

  /**
   * The value kept with neighbourhood `n` under `key` by {@link keep};
   * `undefined` when none is (or `n` is not the cache's).
   */
  keptWith<T>(n: Neighbourhood | undefined, key: string): T | undefined {
    return (n && this.kept.get(n)?.values.get(key)) as T | undefined;
  }

  /**
   * Keeps a value made from a neighbourhood this cache answered (a whole
   * answer, archive/http/kept-answer.ts) with it under `key`, for the next
   * request that asks {@link keptWith} with the same key, until the
   * neighbourhood leaves the cache (a commit that writes its URL, or
   * eviction), with which it goes. `key` must name everything besides `n`
   * that the value depends on. Its `bytes` (an estimate of its heap size)
   * are counted in the neighbourhood's entry, so the cache stays within
   * its bytes; at most {@link KEPT_PER_NEIGHBOURHOOD} values per
   * neighbourhood. Nothing is kept with a neighbourhood that is not the
   * cache's (none, the cache off, one the access rules filtered) or that a
   * commit dropped meanwhile.
   *
   * @param bytes an estimate of the value's heap bytes
   */
  keep(n: Neighbourhood | undefined, key: string, value: unknown, bytes: number): void {
    const k = n && this.kept.get(n);
    if (!k || k.values.size >= KEPT_PER_NEIGHBOURHOOD || k.values.has(key)) return;
    const e = this.lru!.peek(k.key);
    const iv = e?.kind === 'n' ? e.intervals.find((i) => i.n === n) : undefined;
    if (!iv) return;
    iv.bytes += bytes + 2 * key.length + 64;
    k.values.set(key, value);
    // A new entry object, so that lru-cache counts its size again.
    this.lru!.set(k.key, { kind: 'n', intervals: (e as { intervals: readonly Interval[] }).intervals });
  }

  /** Estimated bytes held. */
  get bytes(): number {
    return this.lru?.calculatedSize ?? 0;
  }

  /** Entries held (one per (archive, urlkey) with neighbourhoods, one per urlkey with spans). */
  get size(): number {
    return this.lru?.size ?? 0;
  }

  /** True when `key` missed lately (the doorkeeper); marks it as missed. */
  private missedBefore(key: string): boolean {
    const h = hash(key) % SEEN_BITS;
    const bit = 1 << (h & 31);
    if (this.seen[h >>> 5] & bit) return true;
    this.seen[h >>> 5] |= bit;
    if (++this.seenSet > SEEN_BITS / 4) {
      this.seen.fill(0);
      this.seenSet = 0;
    }
    return false;
  }

  /** Asks `load` with a ticket of `urlkey`'s generation; `keep`s the answer when no commit wrote the urlkey meanwhile. */
  private async fill<T>(urlkey: string, load: () => Promise<T>, keep: (v: T) => void): Promise<T> {
    let g = this.generations.get(urlkey);
    if (!g) {
      g = { gen: 0, inFlight: 0 };
      this.generations.set(urlkey, g);
    }
    const ticket = g.gen;
    g.inFlight++;
    try {
      const v = await load();
      if (g.gen === ticket) keep(v);
      else this.stats.discarded++;
      return v;
    } finally {
      if (--g.inFlight === 0) this.generations.delete(urlkey);
    }
  }

  /** Adds the interval `n` answers for to the entry at `key` (a new entry object, so that lru-cache counts its size again). */
  private keepNeighbourhood(key: string, n: Neighbourhood | undefined, whole: boolean): void {
    if (n) {
      freeze(n);
      this.kept.set(n, { key, values: new Map() });
    }
    const lo = n?.atOrBefore[0]?.datetime ?? -Infinity;
    const hi = n?.after[0]?.datetime ?? Infinity;
    const iv: Interval = { lo, hi, whole: whole || !n?.atOrBefore.length, n, bytes: 48 + neighbourhoodBytes(n) };
    const had = this.lru!.peek(key);
    const intervals = had?.kind === 'n' ? had.intervals : [];
    const same = intervals.find((i) => i.lo === lo);
    if (same && (same.whole || !iv.whole)) return;
    this.lru!.set(key, { kind: 'n', intervals: [...intervals.filter((i) => i !== same), iv].slice(-INTERVALS) });
  }
}
