/**
 * The `--from DATE` / `--to DATE` options of the commands that select
 * mementos by their Memento-Datetime (`wacz`, `search-export`).
 */
import { timestampBound } from '../cdx/query.js';
import { parseInstant } from '../config.js';

/** A range of Memento-Datetimes, both ends included, in epoch seconds; an end not given is open. */
export interface DateRange {
  from?: number;
  to?: number;
}

/**
 * Reads `--from` and `--to`: each 1–14 digits (a timestamp prefix: its
 * first second for `--from`, its last for `--to`, so `--to 2025` is all of
 * 2025) or an ISO 8601 instant.
 *
 * @returns the range, or the one-line reason it is wrong (a date neither
 *   form reads; `--from` later than `--to`)
 */
export function dateRange(o: { from?: string; to?: string }): DateRange | string {
  const range: DateRange = {};
  for (const [k, end] of [
    ['from', 'first'],
    ['to', 'last'],
  ] as const) {
    const v = o[k];
    if (v === undefined) continue;
    const t = /^\d{1,14}$/.test(v) ? timestampBound(v, end) : parseInstant(v);
    if (t === undefined) return `--${k} must be a date like 2026-01-01T00:00:00Z or 1 to 14 digits (yyyyMMddhhmmss), not ${JSON.stringify(v)}`;
    range[k] = t;
  }
  if (range.from !== undefined && range.to !== undefined && range.from > range.to) return '--from must not be later than --to';
  return range;
}
