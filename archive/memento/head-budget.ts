/**
 * How large an answer's head may grow. HTTP clients cap the head they read
 * (Node's default `maxHeaderSize` is 16 KiB; a longer head is
 * HPE_HEADER_OVERFLOW), and a URI-R appears in an answer many times
 * (Location, Content-Location, every link of the Link header). So the
 * archive keeps its answers' heads within {@link HEAD_BUDGET}: with a long
 * URI-R the Link header carries fewer navigation links (prev/next go
 * first, then first/last; RFC 7089 makes them optional), and a Memento
 * echoes as many original headers as fit. With `max_url_length` at its
 * default every answer fits.
 */
import { formatLinkHeader, type Link } from '#shared/link.js';

/** Bytes of an answer's head the archive may fill: under 16 KiB, with room for what Node adds (status line, Date, Connection…). */
export const HEAD_BUDGET = 15 * 1024;

/** An allowance for the head lines every answer has besides those counted (status line, Date, Connection, Keep-Alive, Content-Type, Content-Length). */
export const FIXED_HEAD_BYTES = 512;

/** Bytes the header lines `name: value\r\n` take (one line per value of a list). */
export function headerBytes(name: string, value: string | string[] | undefined): number {
  if (value === undefined) return 0;
  const values = Array.isArray(value) ? value : [value];
  return values.reduce((n, v) => n + name.length + 4 + Buffer.byteLength(v, 'latin1'), 0);
}

/** One level of links for {@link linkWithin}: the links, or a function giving them already formatted (asked only when the level is tried). */
export type LinkLevel = Link[] | (() => string);

/**
 * The Link header value with the most links that fits `budget` bytes (its
 * `Link: ` line included): `required` links always, then the first of
 * `levels` (richest first) that fits; the poorest level when none does.
 * Each link is formatted once, and a level only when the richer ones did
 * not fit.
 */
export function linkWithin(budget: number, required: Link[], levels: readonly LinkLevel[]): string {
  const head = formatLinkHeader(required);
  let value = head;
  for (const level of levels) {
    const more = typeof level === 'function' ? level() : formatLinkHeader(level);
    value = head && more ? `${head}, ${more}` : head || more;
    if (headerBytes('link', value) <= budget) return value;
  }
  return value;
}
