/**
 * The one rule for "the memento nearest to an instant" (RFC 7089 §4.1.1
 * leaves the choice to the server; this is the Wayback/pywb rule), used by
 * the TimeGates, the Memento addresses whose timestamp is not stored, the
 * frame at a reader's time, the banner and "About this capture", the
 * coherence panel and the `/web/` pages. docs/url-space.md "Which memento
 * is nearest" states it for readers:
 *
 * - an address's timestamp names a period (14 digits: one second; fewer:
 *   every second they begin, {@link timestampPeriod}); a memento inside
 *   the period is nearer than any outside it, and of two inside it the
 *   later one is chosen (the state at the period's end);
 * - otherwise the smaller distance to the period wins; of two at the same
 *   distance, the earlier one (the state the resource was in at the time
 *   asked);
 * - of two mementos at the same second (two archives), the higher row id
 *   (the later stored), as the index orders them.
 */
import { timestampBound } from '../cdx/query.js';
import { toTimestamp14 } from '#shared/http-date.js';
import type { MementoRef, Neighbourhood } from '../store/index/memento-row.js';

/** The span of time an address's timestamp names: epoch seconds, both ends included (one instant for 14 digits). */
export interface Period {
  start: number;
  end: number;
}

/** The memento chosen for an instant, with its neighbours for Link (by default id, datetime, URI-R of each). */
export interface Selection<T = MementoRef> {
  memento: T;
  first: T;
  last: T;
  prev?: T;
  next?: T;
}

/** The mementos around an instant on one timeline: first, last, the two at or before it (latest first), the two after it. */
export type Around<T> = Pick<Neighbourhood, never> & { first: T; last: T; atOrBefore: T[]; after: T[] };

/**
 * The period a Wayback-style timestamp names: 1–14 digits `YYYYMMDDhhmmss`
 * (UTC) read as a prefix, from the first to the last second whose
 * 14-digit timestamp begins with them (`2024` → 2024-01-01T00:00:00Z to
 * 2024-12-31T23:59:59Z, `202402` → February 2024). Digits beyond `now`
 * (compared as digits, before any check that they form a date:
 * `99999999999999`, `2099`, and `3`) name the instant `now`, so that
 * whatever the newest capture is, it is the nearest; `2` names 2000–2999,
 * whose last capture is the newest too (pywb's reading of both).
 *
 * @param now epoch seconds
 * @returns `undefined` when it is not 1–14 digits or no date begins with
 *   them (`202413`, `20250230`)
 */
export function timestampPeriod(ts: string, now = Date.now() / 1000): Period | undefined {
  if (!/^\d{1,14}$/.test(ts)) return undefined;
  if (ts > toTimestamp14(now).slice(0, ts.length)) return { start: Math.floor(now), end: Math.floor(now) };
  const start = timestampBound(ts, 'first');
  const end = timestampBound(ts, 'last');
  return start === undefined || end === undefined ? undefined : { start, end };
}

/**
 * Whether memento `a` is nearer to `period` than memento `b` (datetimes
 * epoch s, ids the index's row ids): the module comment's rule. Strict: a
 * memento is not nearer than itself.
 */
export function nearer(a: Pick<MementoRef, 'datetime' | 'id'>, b: Pick<MementoRef, 'datetime' | 'id'>, period: Period): boolean {
  return a.datetime === b.datetime ? a.id > b.id : nearerToPeriod(a.datetime, b.datetime, period);
}

/** {@link nearer} for two distinct datetimes (epoch s): whether `a` is nearer to `period` than `b`. */
export function nearerToPeriod(a: number, b: number, period: Period): boolean {
  const d = (x: number) => (x < period.start ? period.start - x : x > period.end ? x - period.end : 0);
  if (d(a) !== d(b)) return d(a) < d(b);
  return d(a) === 0 ? a > b : a < b;
}

/**
 * Picks the nearest memento to `period` (module comment) from the
 * mementos around `period.end` (a neighbourhood, or the pages' `around`) (first, last and the two on each
 * side of it, on one timeline): before the first → the first, after the
 * last → the last; with its first, last, previous and next mementos.
 */
export function select<T extends Pick<MementoRef, 'datetime'> = MementoRef>(n: Around<T>, period: Period): Selection<T> {
  const [before, before2] = n.atOrBefore;
  const [after, after2] = n.after;
  // A memento after `period.end` and one at or before it never share a second: the datetimes decide.
  const useAfter = !before || (after !== undefined && nearerToPeriod(after.datetime, before.datetime, period));
  if (useAfter) return { memento: after!, first: n.first, last: n.last, prev: before, next: after2 };
  return { memento: before, first: n.first, last: n.last, prev: before2, next: after };
}

/** The one-second period of an instant `t` (epoch s): what a 14-digit timestamp or an Accept-Datetime names. */
export function instant(t: number): Period {
  return { start: t, end: t };
}
