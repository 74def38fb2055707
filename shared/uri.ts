/**
 * URI-R handling: the original URL of a capture, and its SURT urlkey.
 *
 * - URI-R from the embedded request: `Host` header + request target
 *   (docs/capture-record.md), scheme `http` unless the capture says
 *   the client connection was TLS.
 * - urlkey: the SURT form used as the index key (`org,example)/path?q`),
 *   see {@link exactUrlkey}.
 */
import { OperatorError } from './operator-error.js';

/** A URI-R that cannot be built or parsed; `message` is one line for an HTTP 400. */
export class UriError extends OperatorError {
  constructor(message: string) {
    super(message);
    this.name = 'UriError';
  }
}

/**
 * Longest URI-R accepted by default, in characters (the archive's
 * `max_url_length`): an answer's head repeats the URI-R several times, and
 * at this length every answer fits a client that reads 16 KiB of head.
 */
export const MAX_URI_LENGTH = 2048;

// host or [IPv6], optional :port. No userinfo, path, spaces or other characters.
const HOST_HEADER = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.?|\[[0-9A-Fa-f:.]+\])(?::(\d{1,5}))?$/;

/** True when `host` is a `Host` header value of the shape `host[:port]` (a name, an IPv4 address or a bracketed IPv6 literal; port 1–65535). */
export function isHostHeader(host: string): boolean {
  const m = HOST_HEADER.exec(host);
  return m !== null && (m[1] === undefined || (Number(m[1]) >= 1 && Number(m[1]) <= 65535));
}

/**
 * The stricter checks the archive applies to the request target of an
 * embedded capture request (hostile input), beyond
 * {@link uriRFromRequest}: no longer than `maxLength` characters; no
 * encoded NUL, CR or LF (`%00`, `%0D`, `%0A`); no raw backslash in the
 * path (URL parsers read it as `/`, servers differ); no dot-segments (`.`, `..`, also
 * as `%2E`, between `/` or `%5C`) in the path, since clients send
 * normalised paths (RFC 3986 §6.2.2.3) and a memento must name the
 * resource that was really asked for; no encoded slash or backslash
 * (`%2F`, `%5C`, any case) in the path: servers that decode it (Python's
 * http.server, many CGI applications) serve `/a%2Fb` as `/a/b`, so the
 * URI-R would be another spelling of a file than the one every URL rule
 * (`Excluded`, `access:`, `purge`) names. In the query they are data and
 * are kept.
 *
 * @throws UriError with a one-line reason.
 */
export function checkCaptureTarget(target: string, maxLength = MAX_URI_LENGTH): void {
  if (target.length > maxLength) throw new UriError(`request target is ${target.length} characters, longer than the limit of ${maxLength} (max_url_length)`);
  if (/%00/.test(target)) throw new UriError('request target has %00 (an encoded NUL byte)');
  if (/%0[ad]/i.test(target)) throw new UriError('request target has an encoded CR or LF (%0D or %0A)');
  let path = target.replace(/[?#].*$/s, '');
  if (/^https?:\/\//i.test(path)) path = path.replace(/^https?:\/\/[^/]*/i, '');
  // URL parsers read a raw `\` in a path as `/` (WHATWG URL), servers differ: the URI-R would not name what was asked for.
  if (path.includes('\\')) throw new UriError('request target has a backslash in its path (URL parsers and servers read it as "/"); it is not archived');
  // An encoded backslash separates segments too for servers that decode it.
  for (const seg of path.split(/\/|%5c/i)) {
    if (/^(?:\.|%2e){1,2}$/i.test(seg)) throw new UriError(`request target has a dot-segment "${seg}": send the normalised path (RFC 3986 §6.2.2.3)`);
  }
  const encoded = /%2f|%5c/i.exec(path);
  if (encoded) {
    throw new UriError(
      `request target has an encoded ${/%2f/i.test(encoded[0]) ? 'slash' : 'backslash'} (${encoded[0]}) in its path: servers that decode it serve another path than the URL names; it is not archived`,
    );
  }
}

/**
 * Builds the URI-R of a capture from its embedded request.
 *
 * @param host the `Host` header value (`www.example.org`, `example.org:8080`, `[::1]:80`)
 * @param target the request target: origin-form `/path?q` (RFC 7230 §5.3.1), or
 *   absolute-form `http://host/path` naming the same host (§5.3.2)
 * @param scheme `http` or `https` (`https` when the proxy marked the client connection as TLS)
 * @returns the normalised URI-R (lower-case host, no default port, no fragment)
 * @throws UriError for a Host with a path, spaces, userinfo or a bad port; a
 *   target that is neither origin-form nor absolute-form for that host; a
 *   result longer than {@link MAX_URI_LENGTH}.
 */
export function uriRFromRequest(host: string | undefined, target: string, scheme: 'http' | 'https' = 'http', maxLength = MAX_URI_LENGTH): string {
  if (!host) throw new UriError('embedded request has no Host header');
  // The capture proxy asks this for the same request up to three times (its capture address, then the archive's rules on
  // the capture's heads), and a site's pages come back again and again: the last few answers are kept (errors are not).
  const key = `${scheme} ${maxLength} ${host.length} ${host}${target}`; // (the host's length: no two inputs share a key)
  const known = recentUriRs.get(key);
  if (known !== undefined) return known;
  const uriR = buildUriR(host, target, scheme, maxLength);
  if (recentUriRs.size >= RECENT_URI_RS) recentUriRs.delete(recentUriRs.keys().next().value!);
  recentUriRs.set(key, uriR);
  return uriR;
}

/** How many {@link uriRFromRequest} answers are kept, oldest dropped first. */
const RECENT_URI_RS = 512;
const recentUriRs = new Map<string, string>();

function buildUriR(host: string, target: string, scheme: 'http' | 'https', maxLength: number): string {
  const m = HOST_HEADER.exec(host);
  if (!m) throw new UriError(`Host header is not host[:port]: ${JSON.stringify(host.slice(0, 80))}`);
  if (m[1] !== undefined && (Number(m[1]) < 1 || Number(m[1]) > 65535)) throw new UriError(`Host header port out of range: ${m[1]}`);
  let uri: string;
  if (target.startsWith('/')) {
    if (target.startsWith('//')) throw new UriError('request target starts with "//"; it is not origin-form');
    uri = `${scheme}://${host}${target}`;
  } else if (/^https?:\/\//i.test(target)) {
    let abs: URL;
    try {
      abs = new URL(target);
    } catch {
      throw new UriError('request target is not a valid absolute URL');
    }
    const own = new URL(`${scheme}://${host}/`);
    if (abs.host !== own.host) throw new UriError(`request target names host ${abs.host}, not the Host header ${own.host}`);
    uri = target;
  } else {
    throw new UriError(`request target is not origin-form (/path) or absolute-form: ${JSON.stringify(target.slice(0, 80))}`);
  }
  return normalizeUriR(uri, maxLength);
}

/**
 * Parses and normalises a URI-R given by a client (in a TimeGate, Memento
 * or TimeMap address) or built from a capture: http(s) only; host
 * lower-cased; default port dropped; fragment dropped; path dot-segments
 * resolved (WHATWG URL rules). A missing scheme means `http://` (as in
 * Wayback: `/tg/example.org/`). Two more rules make one URI-R of spellings
 * that web archives and Memento clients treat as one:
 *
 * - a bare `?` (an empty query) is dropped: `http://a.example/?` is
 *   `http://a.example/` (servers see no query in either; pywb's and
 *   Wayback's canonical keys drop it too; some Memento clients append a
 *   `?` to every address they test);
 * - `%2C` and `%3B` in the path and query are read as `,` and `;`: the
 *   archive writes those two characters percent-encoded in Link headers
 *   (shared/link.ts), and a client that follows such a link must reach the
 *   same URI-R.
 *
 * @param maxLength longest accepted, in characters (config `max_url_length`),
 *   also as written in a Link header ({@link linkLength})
 * @throws UriError when it is not an http(s) URL with a host, or is too long.
 */
export function normalizeUriR(input: string, maxLength = MAX_URI_LENGTH): string {
  let s = input;
  if (s.length > maxLength) throw new UriError(`URL is longer than ${maxLength} characters`);
  // Some clients collapse "//" in paths: "/tg/http:/a.example/" means http://a.example/.
  s = s.replace(/^(https?):\/(?!\/)/i, '$1://');
  // No scheme, or only a host:port that looks like one (`example.org:8080/x`).
  if (!/^[a-z][a-z0-9+.-]*:/i.test(s) || /^[^/:?#]+:\d+(?:[/?#]|$)/.test(s)) s = 'http://' + s;
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    throw new UriError(`not a valid URL: ${JSON.stringify(input.slice(0, 80))}`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new UriError(`only http and https URLs are archived, not ${u.protocol}`);
  if (!u.hostname) throw new UriError('URL has no host');
  if (u.username || u.password) throw new UriError('URL has userinfo');
  u.hash = '';
  let out = u.href;
  if (u.search === '' && out.endsWith('?')) out = out.slice(0, -1);
  const path = out.indexOf('/', u.protocol.length + 2);
  if (path > 0 && /%(?:2c|3b)/i.test(out)) out = out.slice(0, path) + out.slice(path).replace(/%2c/gi, ',').replace(/%3b/gi, ';');
  if (out.length > maxLength) throw new UriError(`URL is longer than ${maxLength} characters`);
  if (linkLength(out) > maxLength) throw new UriError(`URL is longer than ${maxLength} characters as written in a Link header ("," and ";" percent-encoded)`);
  return out;
}

/**
 * The length of a URI-R as the archive writes it in a Link header, where
 * `,` and `;` take three characters (`%2C`, `%3B`; shared/link.ts): the
 * length `max_url_length` bounds, so that at that length every answer's
 * head still fits 16 KiB (docs/url-space.md).
 */
export function linkLength(uri: string): number {
  let n = uri.length;
  for (let i = uri.indexOf(','); i >= 0; i = uri.indexOf(',', i + 1)) n += 2;
  for (let i = uri.indexOf(';'); i >= 0; i = uri.indexOf(';', i + 1)) n += 2;
  return n;
}

/** Unreserved characters (RFC 3986 §2.3): their percent-escapes mean the character itself. */
const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

/**
 * The percent-escapes of `s` in one canonical spelling (RFC 3986
 * §6.2.2.1, §6.2.2.2): an escape of an unreserved character (letters,
 * digits, `-`, `.`, `_`, `~`) is decoded (`%65` → `e`, `%7E` → `~`); every
 * other escape keeps its meaning and gets upper-case hex (`%2f` → `%2F`,
 * `%3f` → `%3F`, `%c3%a9` → `%C3%A9`). One pass: `%2565` stays `%2565`
 * (an escaped `%` is not decoded, so nothing is decoded twice). A `%` not
 * followed by two hex digits is left as it is.
 */
export function canonicalEscapes(s: string): string {
  if (!s.includes('%')) return s;
  return s.replace(/%([0-9A-Fa-f]{2})/g, (m, hex: string) => {
    const c = String.fromCharCode(parseInt(hex, 16));
    return UNRESERVED.test(c) ? c : m.toUpperCase();
  });
}

/**
 * A URL path in the canonical form every URL rule compares (docs/url-space.md
 * "One canonical form of a URL"): {@link canonicalEscapes}, then every run of
 * `/` merged into one (`/a//b` is `/a/b`, as Apache's MergeSlashes and
 * nginx's merge_slashes serve it); `%2C` and `%3B` read as `,` and `;`, as
 * {@link normalizeUriR} reads them. Dot-segments are resolved before (by
 * the URL parser); case is kept.
 *
 * @param path a path beginning with `/`, without query or fragment
 */
export function canonicalPath(path: string): string {
  return canonicalEscapes(path)
    .replace(/%2C/g, ',')
    .replace(/%3B/g, ';')
    .replace(/\/{2,}/g, '/');
}

/**
 * The urlkey of a URI-R: its SURT form (Sort-friendly URI Reordering
 * Transform) as CDX indexes write it, in the one canonical form that every
 * URL rule of the archive and the capture proxy matches (the index key,
 * `access:` rules, `purge`, `/cdx`, TimeMaps, the prefix list; the proxy's
 * `Excluded` compares the path the same way): `http://www.Example.org:80/a//%62?x=%2f`
 * → `org,example,www)/a/b?x=%2F`.
 *
 * Rules (docs/url-space.md "One canonical form of a URL"), after
 * {@link normalizeUriR} (host lower case, default port dropped, empty path
 * `/`, dot-segments resolved, fragment and bare `?` dropped, `%2C` `%3B`
 * read as `,` `;`): scheme dropped (http and https of one host share a key,
 * as in pywb); a trailing dot of the host dropped; host labels reversed,
 * comma-joined; a non-default port kept; in the path and query, escapes of
 * unreserved characters decoded and the others upper-cased
 * ({@link canonicalEscapes}); in the path, runs of `/` merged. Nothing else
 * is folded: path and query case and the order of query arguments count.
 * The stored URI-R keeps its spelling; only matching uses the key.
 *
 * Why not pywb's canonical form (warcio's `getSurt`, Python `surt`), which
 * also strips `www.`, lower-cases the path and sorts the query: this
 * archive records exactly the URLs its sites served, and on a legacy site
 * `/Page` and `/page`, `example.org` and `www.example.org`, or `?b=1&a=2`
 * and `?a=2&b=1` can be different resources; a fuzzy key would make the
 * TimeGate of one answer with mementos of another. Index exports for pywb
 * compute its form from the stored URI-R (shared/surt.ts).
 *
 * @throws UriError like {@link normalizeUriR}.
 */
export function exactUrlkey(uriR: string): string {
  return urlkeyOfNormal(normalizeUriR(uriR));
}

/**
 * {@link exactUrlkey} of a URI-R that {@link normalizeUriR} wrote (its
 * output as is: `scheme://host[:port]/path[?query]`, host lower case, no
 * default port, no userinfo): the read side has it already, and this
 * skips normalising and parsing it again.
 */
export function urlkeyOfNormal(normal: string): string {
  const hostStart = normal.indexOf('//') + 2;
  const pathStart = normal.indexOf('/', hostStart);
  const authority = normal.slice(hostStart, pathStart < 0 ? undefined : pathStart);
  // `[v6]:port`, `host:port`: the port is after the last ':' that follows any ']'.
  const colon = authority.lastIndexOf(':');
  const hasPort = colon > authority.lastIndexOf(']');
  let host = hasPort ? authority.slice(0, colon) : authority;
  const port = hasPort ? authority.slice(colon) : '';
  if (host.endsWith('.')) host = host.slice(0, -1);
  const key = host.startsWith('[') ? host : host.split('.').reverse().join(',');
  // Path and query as normalizeUriR wrote them (not a URL parser's pathname + search, which may respell them).
  const rest = pathStart < 0 ? '/' : normal.slice(pathStart);
  const q = rest.indexOf('?');
  const path = q < 0 ? rest : rest.slice(0, q);
  return `${key}${port})${canonicalPath(path)}${q < 0 ? '' : canonicalEscapes(rest.slice(q))}`;
}

/**
 * The urlkey with every encoded slash or backslash of its path (`%2F`,
 * `%5C`; a urlkey writes them upper case) read as `/`, and the runs of
 * `/` this makes merged as {@link canonicalPath} merges them:
 * `com,example)/assets%2Fhljs.css?x=%2F` → `com,example)/assets/hljs.css?x=%2F`.
 * The spelling of the same file that a server decoding `%2F` serves. No
 * capture of such a path is accepted ({@link checkCaptureTarget}); an
 * index may still hold keys stored before that rule, and the URL rules
 * (`access:`, `purge`) match this form as well as the key itself. Dot-segments
 * the decoding would make (`/a%2F..%2Fb`) are not resolved. The same string
 * when there is nothing to fold (no `%` in the path: one scan).
 *
 * @param urlkey a urlkey ({@link exactUrlkey})
 */
export function foldEncodedSlashes(urlkey: string): string {
  // (Asked for every key a rule is compared with: most have no `%`, or none in the path; the host has none.)
  const pct = urlkey.indexOf('%');
  if (pct < 0) return urlkey;
  const q = urlkey.indexOf('?');
  const end = q < 0 ? urlkey.length : q;
  if (pct >= end) return urlkey;
  const slash = urlkey.indexOf('%2F');
  const back = urlkey.indexOf('%5C');
  if (!((slash >= 0 && slash < end) || (back >= 0 && back < end))) return urlkey;
  const start = urlkey.indexOf(')/') + 1;
  if (start <= 0) return urlkey;
  const path = urlkey
    .slice(start, end)
    .replace(/%2F|%5C/g, '/')
    .replace(/\/{2,}/g, '/');
  return urlkey.slice(0, start) + path + urlkey.slice(end);
}

/**
 * Which rules computed the urlkeys of an index (`PRAGMA user_version` of
 * index.sqlite3): 1 is {@link exactUrlkey} as above. An index of an
 * earlier version may hold keys of another spelling of one URL; the daemon
 * refuses it until `memento-archive reindex` rebuilds it (docs/storage.md).
 */
export const URLKEY_VERSION = 1;
