/**
 * Where the TimeGate redirector sends a client: the choice of an archive
 * for a URI-R and an Accept-Datetime among time-span archives, local and
 * remote (RFC 7089 §4.1 leaves the choice to the server; the policy is in
 * docs/architecture.md "Archives and time spans"). Pure functions of the
 * config and of what each archive is known to hold.
 */
import type { Link } from '../../shared/link.js';
import { type ArchiveSpan, archiveForInstant, holdingDistance, isLocal, spanDistance } from '../spans.js';

/** What one archive holds of a URI-R; `first`/`last` epoch seconds when known. */
export interface Holding {
  /** `unknown`: a remote archive that did not answer (in time). */
  state: 'yes' | 'no' | 'unknown';
  first?: number;
  last?: number;
  /** A remote TimeGate's memento links (rel containing `memento`) from its 302. */
  links?: Link[];
}

/** What the archives hold of one URI-R, by archive id; an archive not in the map holds nothing (or was not asked). */
export type Holdings = Map<string, Holding>;

/**
 * The archive whose span holds `t` (epoch s); outside every span the first
 * (before them), the last (after them), or the nearest (in a gap).
 *
 * @param archives oldest first, at least one
 */
export function primaryArchive(archives: readonly ArchiveSpan[], t: number): ArchiveSpan {
  const found = archiveForInstant(archives, t);
  if (found) return found;
  if (t < archives[0].from) return archives[0];
  if (t >= archives[archives.length - 1].until) return archives[archives.length - 1];
  return archives.reduce((best, a) => (spanDistance(a, t) < spanDistance(best, t) ? a : best));
}

/**
 * The choice when local holdings alone decide it, so that no remote archive
 * need be asked: without Accept-Datetime, a local archive that has the
 * URI-R and is newer than every remote one; with it, the archive of its
 * span when that is local and has the URI-R.
 *
 * @param local holdings of the local archives only
 * @param t Accept-Datetime, epoch seconds; `undefined` when absent
 * @returns the archive, or `undefined` when remote archives must be asked
 */
export function localChoice(archives: readonly ArchiveSpan[], local: Holdings, t: number | undefined): ArchiveSpan | undefined {
  if (t === undefined) {
    for (const a of [...archives].reverse()) {
      if (!isLocal(a)) return undefined;
      if (local.has(a.id)) return a;
    }
    return undefined;
  }
  const primary = primaryArchive(archives, t);
  return isLocal(primary) && local.has(primary.id) ? primary : undefined;
}

/**
 * The redirector's choice over every archive:
 * - without Accept-Datetime, the newest archive that has the URI-R;
 * - with it, the archive whose span holds it ({@link primaryArchive});
 * - when that archive does not have the URI-R, the archive with mementos
 *   nearest in time (local: their first/last; remote: its span).
 * An archive that could not be asked (`unknown`) is chosen only when no
 * archive is known to have the URI-R.
 *
 * @param t Accept-Datetime, epoch seconds; `undefined` when absent
 * @returns the archive, or `undefined` when none has the URI-R
 */
export function chooseArchive(archives: readonly ArchiveSpan[], holdings: Holdings, t: number | undefined): ArchiveSpan | undefined {
  const state = (a: ArchiveSpan) => holdings.get(a.id)?.state ?? 'no';
  const newestFirst = [...archives].reverse();
  if (t === undefined) return newestFirst.find((a) => state(a) === 'yes') ?? newestFirst.find((a) => state(a) === 'unknown');
  const primary = primaryArchive(archives, t);
  const dist = (a: ArchiveSpan) => {
    const h = holdings.get(a.id);
    return h?.first !== undefined && h.last !== undefined ? holdingDistance({ first: h.first, last: h.last }, t) : spanDistance(a, t);
  };
  const nearest = (want: Holding['state']) =>
    archives.filter((a) => state(a) === want).reduce<ArchiveSpan | undefined>((b, a) => (!b || dist(a) < dist(b) ? a : b), undefined);
  if (state(primary) === 'yes') return primary;
  return nearest('yes') ?? (state(primary) === 'unknown' ? primary : nearest('unknown'));
}
