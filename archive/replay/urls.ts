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
 * "shared declarative refresh steps"). Light on purpose (no HTML or CSS
 * library): the Memento answer uses it for a 3xx's Location without
 * loading the rewriters.
 */
import { buildUriM } from '#shared/uri-m.js';

/** The address of the script every replayed HTML page loads first (archive/replay/static/replay.js, served by archive/http/static.ts). */
export const REPLAY_SCRIPT_PATH = '/_static/replay.js';

/** Where a page is replayed from: the archive address it maps URLs to. */
export interface ReplayTarget {
  /** The archive's public base URL, no trailing slash. */
  base: string;
  /** The archive the page is in. */
  archiveId: string;
  /** The time its URLs are rewritten at, 14 digits: the page's Memento-Datetime, or the reader's time (the banner page's frame). */
  ts: string;
}

// ASCII whitespace as HTML strips it around URLs.
const EDGE_SPACE = /^[\t\n\f\r ]+|[\t\n\f\r ]+$/g;

/** Whether a character code is ASCII whitespace (tab, LF, FF, CR, space). */
function isSpace(c: number): boolean {
  return c === 32 || c === 9 || c === 10 || c === 12 || c === 13;
}

/**
 * The archive address of `raw` (a URL as written in the page, entities
 * already decoded) resolved against `docBase`; `null` when it stays as it
 * is (empty, a fragment only, not http(s), unparsable, or already an
 * archive address). `modifier` names the form of the address (prefer.ts
 * `FORM_MODIFIERS`: `''` the replay, `id_` raw, `ol_` original links).
 */
export function archiveUrl(target: ReplayTarget, raw: string, docBase: string, modifier = ''): string | null {
  const value = raw.length && (isSpace(raw.charCodeAt(0)) || isSpace(raw.charCodeAt(raw.length - 1))) ? raw.replace(EDGE_SPACE, '') : raw;
  if (!value || value.charCodeAt(0) === 35 /* # */) return null;
  let href: string;
  try {
    // An absolute http(s) URL needs no base (half the parsing).
    href = /^https?:\/\//i.test(value) ? new URL(value).href : new URL(value, docBase).href;
  } catch {
    return null;
  }
  if (!href.startsWith('http:') && !href.startsWith('https:')) return null;
  if (href.startsWith(target.base + '/')) return null;
  // The fragment stays outside the archive address (it is the browser's, not part of the URI-R).
  return buildUriM(target.base, { archive: target.archiveId, timestamp: target.ts, modifier, uriR: href });
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

/** Whether a character is an ASCII digit. */
function isDigit(c: string | undefined): boolean {
  return c !== undefined && c >= '0' && c <= '9';
}

/**
 * The URL in a refresh value (the `content` of `<meta http-equiv="refresh">`,
 * entities decoded, or a `Refresh` header) as a browser finds it (HTML
 * "shared declarative refresh steps": `5; url=next.html`, `0;URL='x'`,
 * `3, next.html`), with the text before and after it; `undefined` when the
 * value names no URL (a reload of the page itself, or not a refresh).
 */
export function refreshParts(value: string): { before: string; url: string; after: string } | undefined {
  const n = value.length;
  let i = 0;
  const skipSpace = () => {
    while (i < n && isSpace(value.charCodeAt(i))) i++;
  };
  skipSpace();
  const timeStart = i;
  while (isDigit(value[i])) i++;
  if (i === timeStart && value[i] !== '.') return undefined;
  while (isDigit(value[i]) || value[i] === '.') i++;
  if (i >= n) return undefined;
  if (value[i] !== ';' && value[i] !== ',' && !isSpace(value.charCodeAt(i))) return undefined;
  skipSpace();
  if (value[i] === ';' || value[i] === ',') i++;
  skipSpace();
  if (i >= n) return undefined;
  const start = i;
  let from = start;
  let quoted = true;
  if (value[i] === 'u' || value[i] === 'U') {
    i++;
    quoted = false;
    if (value[i] === 'r' || value[i] === 'R') {
      i++;
      if (value[i] === 'l' || value[i] === 'L') {
        i++;
        skipSpace();
        if (value[i] === '=') {
          i++;
          skipSpace();
          from = i;
          quoted = true;
        }
      }
    }
  }
  let url = value.slice(from);
  if (quoted && (value[from] === "'" || value[from] === '"')) {
    const quote = value[from];
    from++;
    url = value.slice(from);
    const end = url.indexOf(quote);
    if (end >= 0) url = url.slice(0, end);
  }
  return { before: value.slice(0, from), url, after: value.slice(from + url.length) };
}

/**
 * A refresh value (see {@link refreshParts}) with its URL rewritten by
 * `map`: as it is when it names no URL; `null` when `map` refuses the URL
 * (`null`), so that the refresh is dropped.
 */
export function rewriteRefresh(value: string, map: (url: string) => string | null): string | null {
  const parts = refreshParts(value);
  if (!parts) return value;
  const mapped = map(parts.url);
  return mapped === null ? null : parts.before + mapped + parts.after;
}

/**
 * Where a refresh may go in the replay: the archive address of `url`
 * ({@link archiveUrl}), or `url` itself when it stays in the page or
 * already names the archive; `null` for any other (another scheme, or
 * unparsable), which the replay drops.
 */
export function refreshUrl(target: ReplayTarget, url: string, docBase: string): string | null {
  const mapped = archiveUrl(target, url, docBase);
  if (mapped !== null) return mapped;
  const value = url.replace(EDGE_SPACE, '');
  if (!value || value.startsWith('#')) return url;
  try {
    return new URL(value, docBase).href.startsWith(target.base + '/') ? url : null;
  } catch {
    return null;
  }
}
