/**
 * Time-span archives: one daemon serves several archives, each holding the
 * captures whose Memento-Datetime falls in its span; a span may also be a
 * remote archive's (another host's TimeGate). Ingest files a capture under
 * the span that holds its datetime; the redirector picks among spans
 * (archive/memento/choice.ts). See docs/architecture.md "Archives and time
 * spans".
 */

/** One time-span archive. */
export interface ArchiveSpan {
  /** Path segment naming the archive (`/<id>/timegate/…`). */
  id: string;
  /** Inclusive start, epoch seconds; `-Infinity` when open. */
  from: number;
  /** Exclusive end, epoch seconds; `Infinity` when open. */
  until: number;
  /** Base address of a TimeGate on another host (`http://h:p/id/timegate/`); absent for local archives. */
  timegate?: string;
  /** Base address of that host's link-format TimeMap; set whenever `timegate` is. */
  timemap?: string;
}

/** True for an archive this daemon stores and serves itself. */
export function isLocal(a: ArchiveSpan): boolean {
  return a.timegate === undefined;
}

/** The archive whose span holds `t` (epoch seconds), local or remote; `undefined` in a gap. */
export function archiveForInstant(archives: readonly ArchiveSpan[], t: number): ArchiveSpan | undefined {
  return archives.find((a) => a.from <= t && t < a.until);
}

/** Seconds from `t` to the span of `a` (0 inside it). */
export function spanDistance(a: Pick<ArchiveSpan, 'from' | 'until'>, t: number): number {
  return t < a.from ? a.from - t : t >= a.until ? t - a.until + 1 : 0;
}

/** Seconds from `t` to the closed interval `[first, last]` of an archive's mementos (0 inside it). */
export function holdingDistance(h: { first: number; last: number }, t: number): number {
  return t < h.first ? h.first - t : t > h.last ? t - h.last : 0;
}
