/**
 * Where the TimeGate redirector sends a client: the choice of an archive
 * for a URI-R and an Accept-Datetime among time-span archives, local and
 * remote (RFC 7089 §4.1 leaves the choice to the server; the policy is in
 * docs/architecture.md "Archives and time spans"). Pure functions of the
 * config and of what each archive is known to hold.
 */
import type { Link } from '#shared/link.js';
import { type ArchiveSpan, holdingDistance, isLocal, spanDistance } from '../spans.js';

/** What one archive holds of a URI-R; `first`/`last` epoch seconds when known. */
export interface Holding {
  /** `unknown`: a remote archive that did not answer (in time). */
  state: 'yes' | 'no' | 'unknown';
  first?: number;
  last?: number;
  /** A remote TimeGate's memento links (rel containing `memento`) from its 302. */
  links?: Link[];
  /** A remote TimeGate's `Location`: the URI-M it chose (absolute). */
  location?: string;
}

/** What the archives hold of one URI-R, by archive id; an archive not in the map holds nothing (or was not asked). */
export type Holdings = Map<string, Holding>;

/**
 * Seconds from `t` to the nearest memento an archive is known to hold:
 * to the closed interval of its first and last mementos when known (exact:
 * spans do not overlap, so the archive whose interval holds `t` holds the
 * nearest memento, and otherwise the nearest memento is an end of some
 * interval), else to its configured span.
 */
function mementoDistance(a: ArchiveSpan, h: Holding | undefined, t: number): number {
  return h?.first !== undefined && h.last !== undefined ? holdingDistance({ first: h.first, last: h.last }, t) : spanDistance(a, t);
}

/**
 * Of the archives in `state`, the one whose mementos are nearest `t`
 * ({@link mementoDistance}); a tie goes to the earlier archive (as a tie
 * between two mementos goes to the earlier one).
 */
function nearestArchive(archives: readonly ArchiveSpan[], holdings: Holdings, t: number, state: Holding['state']): ArchiveSpan | undefined {
  let best: ArchiveSpan | undefined;
  let bestDistance = Infinity;
  for (const a of archives) {
    const h = holdings.get(a.id);
    if ((h?.state ?? 'no') !== state) continue;
    const d = mementoDistance(a, h, t);
    if (d < bestDistance) [best, bestDistance] = [a, d];
  }
  return best;
}

/**
 * The choice when local holdings alone decide it, so that no remote archive
 * need be asked: without Accept-Datetime, a local archive that has the
 * URI-R and is newer than every remote one; with it, the local archive
 * holding the memento nearest `t`, when no remote archive's span comes as
 * near (its mementos could be nearer).
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
  const nearest = nearestArchive(archives.filter(isLocal), local, t, 'yes');
  if (!nearest) return undefined;
  const d = mementoDistance(nearest, local.get(nearest.id), t);
  return archives.some((a) => !isLocal(a) && spanDistance(a, t) <= d) ? undefined : nearest;
}

/**
 * The redirector's choice over every archive:
 * - without Accept-Datetime, the newest archive that has the URI-R;
 * - with it, the archive that holds the memento nearest in time (local:
 *   from the first/last of its mementos in the index; remote: from the
 *   first/last links of its TimeGate's answer, else its configured span),
 *   a tie going to the earlier archive.
 * An archive that could not be asked (`unknown`) is chosen only when no
 * archive is known to have the URI-R: then the one whose span is nearest.
 *
 * @param t Accept-Datetime, epoch seconds; `undefined` when absent
 * @returns the archive, or `undefined` when none has the URI-R
 */
export function chooseArchive(archives: readonly ArchiveSpan[], holdings: Holdings, t: number | undefined): ArchiveSpan | undefined {
  const state = (a: ArchiveSpan) => holdings.get(a.id)?.state ?? 'no';
  const newestFirst = [...archives].reverse();
  if (t === undefined) return newestFirst.find((a) => state(a) === 'yes') ?? newestFirst.find((a) => state(a) === 'unknown');
  return nearestArchive(archives, holdings, t, 'yes') ?? nearestArchive(archives, holdings, t, 'unknown');
}
