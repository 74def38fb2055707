/**
 * The URLs of archival replay: every URL a stored page names becomes the
 * archive address of that URL at the page's own Memento-Datetime
 * (`{base}/<id>/memento/<ts>/<absolute URL>`), so that what the page
 * embeds or links to comes from the archive at the nearest time (temporal
 * coherence, RFC 7089 §4.5). Relative URLs resolve against the page's base
 * (its base element, else its URI-R); `data:`, `javascript:`, `mailto:`,
 * fragments and other non-http(s) URLs stay as they are. Also the two
 * micro-syntaxes with URLs inside an attribute: `srcset` (HTML "srcset
 * attribute") and the `content` of `<meta http-equiv=refresh>` (HTML
 * "shared declarative refresh steps").
 */
import { decodeHTMLAttribute } from 'entities';

/** Where a page is replayed from: the archive address it maps URLs to. */
export interface ReplayTarget {
  /** The archive's public base URL, no trailing slash. */
  base: string;
  /** The archive the page is in. */
  archiveId: string;
  /** The page's Memento-Datetime, 14 digits. */
  ts: string;
}

// ASCII whitespace as HTML strips it around URLs.
const EDGE_SPACE = /^[\t\n\f\r ]+|[\t\n\f\r ]+$/g;

/**
 * The archive address of `raw` (a URL as written in the page, entities
 * already decoded) resolved against `docBase`; `null` when it stays as it
 * is (empty, a fragment only, not http(s), unparsable, or already an
 * archive address).
 */
export function archiveUrl(target: ReplayTarget, raw: string, docBase: string): string | null {
  const value = raw.replace(EDGE_SPACE, '');
  if (!value || value.startsWith('#')) return null;
  let url: URL;
  try {
    url = new URL(value, docBase);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  const hash = url.hash;
  url.hash = '';
  const abs = url.href;
  if (abs.startsWith(target.base + '/')) return null;
  return `${target.base}/${target.archiveId}/memento/${target.ts}/${abs}${hash}`;
}

/**
 * The byte view (latin1 string) of a value in a page whose bytes are
 * `utf8`, as the characters the page means: URLs in a UTF-8 page are UTF-8;
 * in a latin1 or windows-1252 page each byte is its character already.
 */
export function textOf(latin1: string, utf8: boolean): string {
  return utf8 && /[\x80-\xff]/.test(latin1) ? Buffer.from(latin1, 'latin1').toString('utf8') : latin1;
}

/** An attribute value as written (entities not decoded, byte view) → the text it means (entities decoded). */
export function attributeUrl(raw: string, utf8: boolean): string {
  return decodeHTMLAttribute(textOf(raw, utf8));
}

/**
 * Text for a double-quoted attribute value in a page whose bytes are
 * `utf8`, as a byte view: `&` and `"` escaped; other characters as the
 * page's bytes (UTF-8), or, in a single-byte page, as themselves up to
 * U+00FF and as character references above.
 */
export function attributeBytes(text: string, utf8: boolean): string {
  const escaped = text.replace(/&/g, '&amp;').replace(/"/g, '&quot;');
  if (utf8) return Buffer.from(escaped, 'utf8').toString('latin1');
  return escaped.replace(/[\u0100-\u{10ffff}]/gu, (c) => `&#x${c.codePointAt(0)!.toString(16)};`);
}

/**
 * A `srcset` value with each image candidate's URL rewritten by `map`
 * (descriptors and separators kept): HTML's "parse a srcset attribute" —
 * a URL runs to the next whitespace; commas at its end separate
 * candidates; descriptors run to the next comma outside parentheses.
 */
export function rewriteSrcset(value: string, map: (url: string) => string | null): string {
  let out = '';
  let i = 0;
  const n = value.length;
  while (i < n) {
    // Separators: whitespace and commas.
    const sep = /^[\t\n\f\r ,]*/.exec(value.slice(i))![0];
    out += sep;
    i += sep.length;
    if (i >= n) break;
    let url = /^[^\t\n\f\r ]*/.exec(value.slice(i))![0];
    let trailing = '';
    const commas = /,+$/.exec(url);
    if (commas) {
      trailing = commas[0];
      url = url.slice(0, -trailing.length);
    }
    i += url.length + trailing.length;
    out += (map(url) ?? url) + trailing;
    if (trailing) continue;
    // Descriptors up to a comma outside parentheses.
    let depth = 0;
    const start = i;
    while (i < n && !(value[i] === ',' && depth === 0)) {
      if (value[i] === '(') depth++;
      else if (value[i] === ')') depth = Math.max(0, depth - 1);
      i++;
    }
    out += value.slice(start, i);
  }
  return out;
}

/**
 * The `content` of a `<meta http-equiv="refresh">` (or a `Refresh` header)
 * with its URL rewritten by `map`: `5; url=next.html`, `0;URL='x'`,
 * `3, next.html` (HTML's declarative refresh syntax). Without a URL it is
 * returned as it is.
 */
export function rewriteRefresh(value: string, map: (url: string) => string | null): string {
  const m = /^(\s*[\d.]*\s*[;,]?\s*(?:url\s*=\s*)?)(['"]?)(.*?)(\2\s*)$/is.exec(value);
  if (!m || !m[3]) return value;
  const mapped = map(m[3]);
  return mapped === null ? value : m[1] + m[2] + mapped + m[4];
}
