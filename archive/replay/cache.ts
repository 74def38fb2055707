/**
 * Replayed bodies kept in memory (lru-cache), so that a page asked for
 * again is not read, inflated and rewritten again. A replayed body depends
 * only on the WARC record (file and offset: a memento replaced by a later
 * capture of the same second has another record), on the archive's base
 * URL (its rewritten URLs point there) and on the time its URLs are
 * rewritten at (its own Memento-Datetime, or the reader's time in the
 * banner page's frame: archive/http/memento.ts), so an entry never goes
 * stale.
 * Bounded by bytes; bodies over {@link MAX_ENTRY} are not kept, nor are
 * bodies the replay did not change (reading those again costs little).
 */
import { LRUCache } from 'lru-cache';
import type { MementoRow } from '../store/index/index-db.js';
import type { StoredResponse } from '../store/warcs/warc-reader.js';

/** How the body of a Memento answer differs from the stored one (what Preference-Applied is decided from, archive/memento/preference-applied.ts). */
export interface BodyChanges {
  /** The content differs from the stored bytes (decoded, something inserted or rewritten). */
  content: boolean;
  /** A URI of the capture was rewritten (in the body, or a 3xx Location). */
  links: boolean;
}

/** The largest body kept, bytes. */
export const MAX_ENTRY = 1024 * 1024;

/** A cached replay: the stored response's head and the replayed body. */
export interface CachedReplay {
  head: Pick<StoredResponse, 'statusLine' | 'status' | 'reason' | 'headers'>;
  body: Buffer;
  changes: BodyChanges;
  /** The stored Content-Encoding was undone. */
  decoded: boolean;
}

/**
 * The key of a memento's replay for a base URL, its URLs rewritten at `ts`
 * (14 digits: the memento's own timestamp, or the reader's time).
 */
export function cacheKey(row: Pick<MementoRow, 'warc_file' | 'warc_offset'>, base: string, ts: string): string {
  return `${row.warc_file}\n${row.warc_offset}\n${base}\n${ts}`;
}

/** Replayed bodies, most recently used kept, at most `maxBytes` of them. */
export class ReplayCache {
  private readonly lru: LRUCache<string, CachedReplay> | null;

  /** @param maxBytes bytes of bodies (and heads) kept; 0 keeps none */
  constructor(maxBytes: number) {
    this.lru =
      maxBytes <= 0
        ? null
        : new LRUCache<string, CachedReplay>({
            maxSize: Math.max(1, maxBytes),
            sizeCalculation: (v) => v.body.length + 512 + v.head.headers.reduce((n, [k, x]) => n + k.length + x.length, 0),
          });
  }

  /** The replay kept under `key` (cacheKey), if any. */
  get(key: string): CachedReplay | undefined {
    return this.lru?.get(key);
  }

  /** The entry at `key` without counting it as used; `undefined` when none. */
  peek(key: string): CachedReplay | undefined {
    return this.lru?.peek(key);
  }

  /** Keeps a replayed body (unless it is over {@link MAX_ENTRY}). */
  set(key: string, stored: StoredResponse, entry: Omit<CachedReplay, 'head'>): void {
    if (!this.lru || entry.body.length > MAX_ENTRY) return;
    const { statusLine, status, reason, headers } = stored;
    this.lru.set(key, { head: { statusLine, status, reason, headers }, ...entry });
  }

  /** Bytes held. */
  get bytes(): number {
    return this.lru?.calculatedSize ?? 0;
  }
}
