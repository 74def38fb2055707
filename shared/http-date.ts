/**
 * HTTP dates and Memento timestamps.
 *
 * - HTTP-date (RFC 7231 §7.1.1.1): IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT`
 *   is what we send; on input the two obsolete forms (RFC 850 and asctime)
 *   are accepted as well, as the RFC requires of recipients.
 * - Memento timestamp: 14 digits `YYYYMMDDhhmmss`, UTC, as in a URI-M
 *   (`/<id>/memento/<timestamp>/<URI-R>`).
 *
 * All datetimes in this project are whole seconds (HTTP dates have no finer
 * resolution); functions here take and return `Date` or epoch seconds.
 */

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

const pad = (n: number, w = 2): string => String(n).padStart(w, '0');

/**
 * Formats an instant as IMF-fixdate (RFC 7231 §7.1.1.1), e.g.
 * `Tue, 20 Mar 2001 20:35:00 GMT`: zero-padded day, GMT. Milliseconds are
 * dropped. Used for Memento-Datetime and the `datetime`/`from`/`until` Link
 * attributes (RFC 7089 §2.1.1, §2.2.1).
 */
export function formatHttpDate(date: Date | number): string {
  const d = typeof date === 'number' ? new Date(date * 1000) : date;
  return (
    `${DAYS[d.getUTCDay()]}, ${pad(d.getUTCDate())} ${MONTHS[d.getUTCMonth()]} ${pad(d.getUTCFullYear(), 4)} ` +
    `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} GMT`
  );
}

const IMF_FIXDATE = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\d{2}) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) (\d{4}) (\d{2}):(\d{2}):(\d{2}) GMT$/;
const RFC850 =
  /^(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\d{2})-(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)-(\d{2}) (\d{2}):(\d{2}):(\d{2}) GMT$/;
const ASCTIME = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) ([ \d]\d) (\d{2}):(\d{2}):(\d{2}) (\d{4})$/;

function build(year: number, month: string, day: number, h: number, m: number, s: number): Date | null {
  const mon = MONTHS.indexOf(month);
  if (h > 23 || m > 59 || s > 60) return null;
  const t = Date.UTC(year, mon, day, h, m, Math.min(s, 59));
  const d = new Date(t);
  // Reject 31 Feb and the like instead of letting Date roll them over.
  if (d.getUTCFullYear() !== year || d.getUTCMonth() !== mon || d.getUTCDate() !== day) return null;
  return d;
}

/**
 * Parses an HTTP-date (RFC 7231 §7.1.1.1): IMF-fixdate, or the obsolete
 * RFC 850 and asctime forms. Surrounding whitespace is ignored; the weekday
 * is not checked against the date. RFC 850 two-digit years are read as the
 * nearest year not more than 50 years ahead (RFC 7231 §7.1.1.1).
 *
 * @returns the instant, or `null` when the text is not an HTTP-date or names
 *   an impossible date (31 Feb, 25:00).
 */
export function parseHttpDate(text: string | undefined | null): Date | null {
  if (typeof text !== 'string') return null;
  const v = text.trim();
  let m = IMF_FIXDATE.exec(v);
  if (m) return build(+m[4], m[3], +m[2], +m[5], +m[6], +m[7]);
  m = RFC850.exec(v);
  if (m) {
    const now = new Date().getUTCFullYear();
    let year = 1900 + +m[4];
    while (year < now - 49) year += 100;
    return build(year, m[3], +m[2], +m[5], +m[6], +m[7]);
  }
  m = ASCTIME.exec(v);
  if (m) return build(+m[7], m[2], +m[3].trim(), +m[4], +m[5], +m[6]);
  return null;
}

/**
 * Formats an instant as ISO 8601 UTC to the second, `2001-03-20T20:35:00Z`
 * (RFC 3339 §5.6; WARC 1.1 §5.4 WARC-Date; timemap-json datetimes).
 * Milliseconds are dropped. Years outside 0–9999 as `Date#toISOString`
 * writes them (`+010000-…`).
 *
 * @param date a Date, or epoch seconds
 * @throws RangeError for an invalid Date (as `Date#toISOString`)
 */
export function formatIsoSeconds(date: Date | number): string {
  const d = typeof date === 'number' ? new Date(date * 1000) : date;
  const y = d.getUTCFullYear();
  // Outside 0–9999, and an invalid Date (NaN: toISOString throws its RangeError), as Date#toISOString does.
  if (!(y >= 0 && y <= 9999)) return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
  return `${pad(y, 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}Z`;
}

/** Formats an instant as a 14-digit Memento timestamp `YYYYMMDDhhmmss` (UTC). */
export function toTimestamp14(date: Date | number): string {
  const d = typeof date === 'number' ? new Date(date * 1000) : date;
  return (
    `${pad(d.getUTCFullYear(), 4)}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}` +
    `${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}${pad(d.getUTCSeconds())}`
  );
}

/**
 * Parses the timestamp of a URI-M: 14 digits `YYYYMMDDhhmmss`, UTC. As in
 * Wayback-style archives a shorter prefix of at least 4 digits (`2001`,
 * `200103`) is accepted and means the earliest instant it covers.
 *
 * @returns the instant, or `null` for anything else (letters, 13 digits that
 *   do not form a prefix of a real date, month 13, ...).
 */
export function parseTimestamp14(ts: string): Date | null {
  if (!/^\d{4,14}$/.test(ts) || ts.length % 2 !== 0) return null;
  const full = ts + '00000101000000'.slice(ts.length);
  const year = +full.slice(0, 4),
    month = +full.slice(4, 6),
    day = +full.slice(6, 8);
  const h = +full.slice(8, 10),
    mi = +full.slice(10, 12),
    s = +full.slice(12, 14);
  if (month < 1 || month > 12 || day < 1) return null;
  return build(year, MONTHS[month - 1], day, h, mi, s);
}

/** Epoch seconds of an instant (the unit of the index's `datetime` column). */
export function toEpochSeconds(d: Date): number {
  return Math.floor(d.getTime() / 1000);
}
