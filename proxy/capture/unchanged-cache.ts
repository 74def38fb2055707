/**
 * The local "unchanged since my last acknowledged capture" cache of the
 * vhosts with `ArchiveUnchangedCache: On`: for each PUT address (archive +
 * URI-R), the entity tag (shared/capture-tag.ts) of the last capture the
 * archive acknowledged (stored it, found it a duplicate, or answered 412),
 * so that a capture with the same tag needs no PUT at all.
 *
 * It is right only while this proxy is the only writer of those URI-Rs
 * into that archive (README, "Conditional captures"): the archive is the
 * authority on what is new, and this cache only remembers what the archive
 * said. Within one proxy it stays right under concurrency: an entry is
 * trusted only when no other capture of the same address was in flight
 * at any time during this one (two overlapping captures may be
 * acknowledged in another order than the archive filed them), and any
 * capture that ends without an acknowledgement (spooled, dropped,
 * aborted, rejected) removes the entry.
 */
import { LRUCache } from 'lru-cache';

/** Bytes of entries kept (keys and tags), least recently used dropped first. */
const CACHE_BYTES = 16 * 1024 * 1024;

/** What the cache keeps per address while captures of it are in flight. */
interface InFlight {
  count: number;
  /** Two captures of the address overlapped since the count was last 0: no entry is trusted or written until it is. */
  contended: boolean;
}

/** See the module comment. One per proxy; keys are PUT addresses (`putUrl`). */
export class UnchangedCache {
  private readonly tags = new LRUCache<string, string>({ maxSize: CACHE_BYTES, sizeCalculation: (tag, key) => key.length + tag.length + 64 });
  private readonly inFlight = new Map<string, InFlight>();

  /** A capture of `key` starts (pair it with one {@link settle}). */
  begin(key: string): void {
    const f = this.inFlight.get(key);
    if (f) {
      f.count++;
      f.contended = true;
    } else this.inFlight.set(key, { count: 1, contended: false });
  }

  /**
   * True when the capture of `key` now ending (after its {@link begin})
   * has `tag`, the tag of the last capture of `key` the archive
   * acknowledged, and no other capture of `key` overlapped it.
   */
  unchanged(key: string, tag: string): boolean {
    const f = this.inFlight.get(key);
    if (!f || f.contended || f.count !== 1) return false;
    return this.tags.get(key) === tag;
  }

  /**
   * The capture of `key` ended: `tag` when the archive acknowledged it
   * (or the cache found it unchanged), `undefined` when it did not (the
   * entry goes: the archive may get it later, from the spool).
   */
  settle(key: string, tag: string | undefined): void {
    const f = this.inFlight.get(key);
    const alone = f !== undefined && !f.contended;
    if (f && --f.count === 0) this.inFlight.delete(key);
    if (tag !== undefined && alone) this.tags.set(key, tag);
    else this.tags.delete(key);
  }
}
