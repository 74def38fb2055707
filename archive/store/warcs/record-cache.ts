/**
 * Hot small response records kept in memory, already read and inflated
 * (lru-cache, bounded by bytes): a Memento asked for again skips the
 * positioned read, the gunzip and the parsing of the WARC and HTTP heads.
 *
 * Keyed by (WARC file, offset, length): a record there never changes while
 * the daemon runs (WARC files are append-only; a rollback only takes back
 * records no index row ever named; a later capture of the same second is a
 * new record elsewhere, and the index row moves to it). `purge` and
 * `reindex`, which move records, run only without the daemon. So an entry
 * never goes stale and nothing invalidates it.
 *
 * The body and header list of an entry are shared by every answer made
 * from it: callers must not change them.
 */
import { LRUCache } from 'lru-cache';
import type { StoredResponse } from './stored-response.js';

/** The largest record kept: inflated body plus its HTTP head, bytes. */
export const MAX_RECORD = 64 * 1024;

/** A record as kept: its HTTP head and whole body. */
type Kept = Pick<StoredResponse, 'statusLine' | 'status' | 'reason' | 'headers'> & { body: Buffer };

const noop = () => undefined;

/** An async iterable of one buffer (none when empty). */
async function* once(buf: Buffer): AsyncGenerator<Uint8Array> {
  if (buf.length) yield buf;
}

/** The cache's key of the record at `file`/`offset`/`length` (a response record's place in its WARC file). */
const recordKey = (file: string, offset: number, length: number): string => `${file}\n${offset}\n${length}`;

/** Hot small response records, most recently used kept, at most `maxBytes` of them. */
export class RecordCache {
  private readonly lru: LRUCache<string, Kept> | null;
  /** Records answered from memory, and records read from their file (and kept when small). */
  readonly stats = { hits: 0, misses: 0 };

  /** @param maxBytes bytes of records kept (`record_cache_bytes`); 0 keeps none */
  constructor(maxBytes: number) {
    this.lru = maxBytes <= 0 ? null : new LRUCache<string, Kept>({ maxSize: maxBytes, sizeCalculation: (v, k) => recordBytes(v) + 2 * k.length + 64 });
  }

  /** The record at `file`/`offset`/`length` as a fresh {@link StoredResponse} over the kept bytes; `undefined` when not kept. */
  get(file: string, offset: number, length: number): StoredResponse | undefined {
    const k = this.lookup(file, offset, length);
    if (!k) return undefined;
    return {
      statusLine: k.statusLine,
      status: k.status,
      reason: k.reason,
      headers: k.headers,
      body: once(k.body),
      bodyBuffer: k.body,
      bodyLength: k.body.length,
      close: noop,
    };
  }

  /**
   * The body of the record at `file`/`offset`/`length` as kept (shared:
   * not to be changed); `undefined` when not kept. Counted as {@link get}.
   */
  body(file: string, offset: number, length: number): Buffer | undefined {
    return this.lookup(file, offset, length)?.body;
  }

  /** The kept record at `file`/`offset`/`length`, counted as a hit or a miss; `undefined` when not kept (or the cache is off, uncounted). */
  private lookup(file: string, offset: number, length: number): Kept | undefined {
    if (!this.lru) return undefined;
    const k = this.lru.get(recordKey(file, offset, length));
    if (k) this.stats.hits++;
    else this.stats.misses++;
    return k;
  }

  /** The kept body of the record at `file`/`offset`/`length` without counting a lookup or a use; `undefined` when not kept. */
  peek(file: string, offset: number, length: number): Buffer | undefined {
    return this.lru?.peek(recordKey(file, offset, length))?.body;
  }

  /**
   * Keeps a record read whole (`bodyBuffer` set) when it is no larger than
   * {@link MAX_RECORD}: its body is copied into a buffer of its own, so
   * that the entry holds no more than it counts (the inflated record's WARC
   * head is not kept).
   *
   * @returns the kept copy of the body (the reader answers with it, so that an answer kept with the read
   *   cache finds its body here and does not hold a second copy); `undefined` when not kept
   */
  set(file: string, offset: number, length: number, r: StoredResponse): Buffer | undefined {
    if (!this.lru || !r.bodyBuffer) return undefined;
    const kept: Kept = { statusLine: r.statusLine, status: r.status, reason: r.reason, headers: r.headers, body: r.bodyBuffer };
    if (recordBytes(kept) > MAX_RECORD) return undefined;
    const body = Buffer.allocUnsafeSlow(r.bodyBuffer.length);
    r.bodyBuffer.copy(body);
    this.lru.set(recordKey(file, offset, length), { ...kept, body });
    return body;
  }

  /** Bytes held. */
  get bytes(): number {
    return this.lru?.calculatedSize ?? 0;
  }

  /** Records held. */
  get size(): number {
    return this.lru?.size ?? 0;
  }
}

/** The bytes a kept record counts for: its body and (two bytes a character) its head. */
function recordBytes(k: Kept): number {
  let n = k.body.length + 2 * k.statusLine.length + 128;
  for (const [name, value] of k.headers) n += 2 * (name.length + value.length) + 48;
  return n;
}
