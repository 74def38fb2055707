/**
 * How the pages for people write dates, distances and counts: always UTC
 * in the page (a `<time>` element carries the instant; the browser's
 * script adds the reader's local time on hover), English words, digits
 * grouped.
 */
import { domainToUnicode } from 'node:url';
import { formatIsoSeconds } from '#shared/http-date.js';

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

/** `5 March 2024, 12:34:56 UTC` for an instant in epoch seconds. */
export function longDate(t: number): string {
  const d = new Date(t * 1000);
  const hms = d.toISOString().slice(11, 19);
  return `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()}, ${hms} UTC`;
}

/** `2024-03-05 12:34` (UTC) for an instant in epoch seconds: tables. */
export function shortDate(t: number): string {
  return new Date(t * 1000).toISOString().slice(0, 16).replace('T', ' ');
}

/** The instant as a `<time datetime>` value (ISO 8601, UTC). */
export function isoDate(t: number): string {
  return formatIsoSeconds(t);
}

/** English name of a month, 0 = January. */
export function monthName(m: number): string {
  return MONTHS[m];
}

/** `1,234` */
export function count(n: number): string {
  return n.toLocaleString('en-US');
}

/** `1 capture` / `3 captures` */
export function plural(n: number, word: string): string {
  return `${count(n)} ${word}${n === 1 ? '' : 's'}`;
}

const UNITS: [number, string][] = [
  [365 * 86400, 'year'],
  [30 * 86400, 'month'],
  [86400, 'day'],
  [3600, 'hour'],
  [60, 'minute'],
  [1, 'second'],
];

/**
 * A length of time in words: `3 days`, `1 year 2 months`, `0 seconds` (the
 * largest unit, rounded down; at most two units).
 *
 * @param seconds a length of time (its sign is ignored)
 */
export function span(seconds: number): string {
  let d = Math.abs(seconds);
  if (d === 0) return '0 seconds';
  const parts: string[] = [];
  for (const [size, unit] of UNITS) {
    if (d >= size && parts.length < 2) {
      const n = Math.floor(d / size);
      parts.push(plural(n, unit));
      d -= n * size;
    } else if (parts.length) break;
  }
  return parts.join(' ');
}

/**
 * How far a capture is from the instant asked for, in words: `exactly the
 * time asked for`, `3 days after the time asked for`, `1 hour before …`
 * ({@link span}).
 *
 * @param capture the capture's Memento-Datetime (epoch s)
 * @param asked the instant asked for (epoch s)
 */
export function distance(capture: number, asked: number): string {
  if (capture === asked) return 'exactly the time asked for';
  return `${span(capture - asked)} ${capture > asked ? 'after' : 'before'} the time asked for`;
}

// Characters a decoded path never shows: controls, format characters (bidi overrides, zero-width), separators
// (spaces of every kind), and look-alikes of `/`, `?`, `#`, `.`: they stay percent-encoded, as browsers' address bars keep them.
const HIDDEN_CHARS = /[\p{C}\p{Z}\u2215\u2044\u29f8\uff0f\uff1f\uff03\u2024\uff0e\u3002]/u;

/**
 * A URL as a person reads it, for display only (never for a link, whose
 * address stays the URI-R as stored): an IDN host in Unicode (its
 * `xn--` labels decoded, node:url `domainToUnicode`) and each run of
 * percent-encoded non-ASCII bytes of the path and query decoded when it
 * is UTF-8 and none of its characters is invisible or a look-alike of a
 * delimiter. ASCII escapes (`%2F`, `%20`…) stay as they are.
 *
 * @param url an absolute http(s) URL (a normalised URI-R)
 */
export function displayUrl(url: string): string {
  const m = /^(https?:\/\/)([^/?#]*)(.*)$/is.exec(url);
  if (!m) return url;
  const [, scheme, authority, rest] = m;
  const shownRest = rest.replace(/(?:%[89a-f][0-9a-f])+/gi, (run) => {
    let s: string;
    try {
      s = decodeURIComponent(run);
    } catch {
      return run;
    }
    return HIDDEN_CHARS.test(s) ? run : s;
  });
  return scheme + displayHost(authority) + shownRest;
}

/**
 * A `host[:port]` as a person reads it, for display only: its IDN labels
 * (`xn--…`) in Unicode (node:url `domainToUnicode`); an IPv6 literal, or a
 * name that does not decode, as it is.
 */
export function displayHost(authority: string): string {
  const hp = /^([^[\]:@]+)(:\d+)?$/.exec(authority);
  if (!hp || !/(^|\.)xn--/i.test(hp[1])) return authority;
  return (domainToUnicode(hp[1]) || hp[1]) + (hp[2] ?? '');
}
