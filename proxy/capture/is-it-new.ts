/**
 * Is this capture new? The archive decides (archive/http/ingest.ts: its
 * answer to the PUT, 201 new or 200 the same as the memento it follows);
 * this is the proxy's one small cache of what it answered, for the vhosts
 * with `ArchiveUnchangedCache: On` (the default). For each PUT address
 * (archive + URI-R) it keeps the archive's last answer: the capture tag of
 * the memento (`ETag`, shared/capture-tag.ts), the datetime of the
 * capture that got that answer, and the instant from which an identical
 * capture must be sent again (`Archive-Revisit-After`: the archive then
 * records a revisit). A capture held whole is not sent when its tag is
 * that tag and its Memento-Datetime lies in between: the archive would
 * store nothing.
 *
 * It is right while this proxy is the only writer of those URI-Rs into
 * that archive (another writer's capture in between is not seen); the
 * revisit instant bounds how long it trusts an answer. Within one proxy
 * it stays right under concurrency: an entry is trusted and written only
 * when no other capture of the same address was in flight at any time
 * during this one (two overlapping captures may be answered in another
 * order than the archive filed them), and a capture that ends without an
 * answer (spooled, dropped, aborted, rejected, conflict) removes the
 * entry.
 */
import { LRUCache } from 'lru-cache';

/** Bytes of entries kept (keys and tags), least recently used dropped first. */
const CACHE_BYTES = 16 * 1024 * 1024;

/** What the archive last answered for one PUT address. */
export interface ArchiveVerdict {
  /** The `ETag` of its answer: the capture tag of the memento the capture stored or matched. */
  tag: string;
  /** Memento-Datetime of the capture that got the answer, epoch seconds. */
  since: number;
  /** Its `Archive-Revisit-After`, epoch seconds: an identical capture at or after it is sent. */
  until: number;
}

/** What the cache keeps per address while captures of it are in flight. */
interface InFlight {
  count: number;
  /** Two captures of the address overlapped since the count was last 0: no entry is trusted or written until it is. */
  contended: boolean;
}

/** See the module comment. One per proxy; keys are PUT addresses (`putUrl`). */
export class UnchangedCache {
  private readonly verdicts = new LRUCache<string, ArchiveVerdict>({ maxSize: CACHE_BYTES, sizeCalculation: (v, key) => key.length + v.tag.length + 96 });
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
   * need not be sent: it has `tag`, the tag of the archive's last answer
   * for `key`; its Memento-Datetime `datetime` (epoch seconds) is at or
   * after that answer's capture and before its revisit instant; and no
   * other capture of `key` overlapped it.
   */
  unchanged(key: string, tag: string, datetime: number): boolean {
    const f = this.inFlight.get(key);
    if (!f || f.contended || f.count !== 1) return false;
    const v = this.verdicts.get(key);
    return v !== undefined && v.tag === tag && datetime >= v.since && datetime < v.until;
  }

  /**
   * The capture of `key` ended: `verdict` when the archive answered it
   * 200 or 201 with a tag and a revisit instant (or the cache found it
   * unchanged: pass `undefined` and `keep`), `undefined` when it did not
   * (the entry goes: the archive may get it later, from the spool).
   *
   * @param keep true for a capture the cache itself answered: the entry stays as it is
   */
  settle(key: string, verdict: ArchiveVerdict | undefined, keep = false): void {
    const f = this.inFlight.get(key);
    const alone = f !== undefined && !f.contended;
    if (f && --f.count === 0) this.inFlight.delete(key);
    if (keep && alone) return;
    if (verdict !== undefined && alone) this.verdicts.set(key, verdict);
    else this.verdicts.delete(key);
  }
}
