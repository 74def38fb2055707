/**
 * The canonical urlkey of CDX indexes: the SURT form of a URL after the
 * Internet Archive's canonicalization, as Python's `surt` package computes
 * it with its defaults (`surt.surt(url)`), which is what pywb calls for
 * every lookup and what its `cdx-indexer` writes. A CDXJ file whose keys
 * are not this form is sorted and searched wrongly by pywb.
 *
 * `http://www.Example.org:80/A/b/?B=2&a=1#f` → `org,example)/a/b?a=1&b=2`.
 *
 * It is deliberately fuzzier than the archive's own index key
 * (`exactUrlkey` in uri.ts: scheme dropped, escapes of unreserved
 * characters decoded, `//` merged, nothing else folded):
 * `www.` stripped, path and query lower-cased, query arguments sorted,
 * session ids (`jsessionid=`, `PHPSESSID=`, ASP.NET path ids…) dropped, a
 * trailing `/` dropped, dot-segments resolved, percent-escapes decoded and
 * re-escaped minimally. Used only for exports (`memento-archive cdxj`).
 */
// The archive's URI-Rs are WHATWG-normalised http(s) URLs (shared/uri.ts): an
// ASCII host (punycode), IPv4 literals already in dotted-decimal form, no
// fragment. So the IDNA and IP-format steps of GoogleURLCanonicalizer are
// identities here and left out.

/** UTF-8 bytes of `s` as a binary string (one char per byte), the unit `surt` works in. */
function bytesOf(s: string): string {
  return Buffer.from(s, 'utf8').toString('latin1');
}

/** Python's `unquote_to_bytes`: every `%XX` with two hex digits becomes its byte; other `%` stay. */
function unquote(s: string): string {
  return s.replace(/%([0-9A-Fa-f]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
}

/** GoogleURLCanonicalizer.unescapeRepeatedly: unquote until nothing changes. */
function unescapeRepeatedly(s: string): string {
  for (;;) {
    const u = unquote(s);
    if (u === s) return s;
    s = u;
  }
}

/** GoogleURLCanonicalizer.escapeOnce: percent-encode (upper-case hex) bytes up to space, `#`, `%` and from DEL up; keep the rest. */
function escapeOnce(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    out += c <= 0x20 || c >= 0x7f || c === 0x23 || c === 0x25 ? '%' + c.toString(16).toUpperCase().padStart(2, '0') : s[i];
  }
  return out;
}

/** ASCII-only lower-casing, as Python's `bytes.lower()`. */
function lowerAscii(s: string): string {
  return s.replace(/[A-Z]+/g, (m) => m.toLowerCase());
}

/** GoogleURLCanonicalizer.normalizePath: `.` and `..` segments resolved, empty segments dropped (a trailing `/` kept). */
function normalizePath(path: string): string {
  if (!path) return '/';
  const kept: string[] = [];
  for (const p of path.split('/').slice(1)) {
    if (p === '.') continue;
    if (p === '..') {
      if (kept.length) kept.pop();
      else kept.push(p);
    } else kept.push(p);
  }
  let out = '/';
  for (let i = 0; i < kept.length - 1; i++) if (kept[i]) out += kept[i] + '/';
  if (kept.length) out += kept[kept.length - 1];
  return out;
}

const PATH_SESSION_IDS = [/^(.*\/)(\((?:[a-z]\([0-9a-z]{24}\))+\)\/)([^?]+\.aspx.*)$/i, /^(.*\/)(\([0-9a-z]{24}\)\/)([^?]+\.aspx.*)$/i];

const QUERY_SESSION_IDS = [
  /^(.*)(?:jsessionid=[0-9a-zA-Z]{32})(?:&(.*))?$/i,
  /^(.*)(?:phpsessid=[0-9a-zA-Z]{32})(?:&(.*))?$/i,
  /^(.*)(?:sid=[0-9a-zA-Z]{32})(?:&(.*))?$/i,
  /^(.*)(?:ASPSESSIONID[a-zA-Z]{8}=[a-zA-Z]{24})(?:&(.*))?$/i,
  /^(.*)(?:cfid=[^&]+&cftoken=[^&]+)(?:&(.*))?$/i,
];

/** URLRegexTransformer.stripPathSessionID (ASP.NET cookieless session ids in the path). */
function stripPathSessionId(path: string): string {
  for (const re of PATH_SESSION_IDS) {
    const m = re.exec(path);
    if (m) path = m[1] + m[3];
  }
  return path;
}

/** URLRegexTransformer.stripQuerySessionID. */
function stripQuerySessionId(query: string): string {
  for (const re of QUERY_SESSION_IDS) {
    const m = re.exec(query);
    if (m) query = m[2] ? m[1] + m[2] : m[1];
  }
  return query;
}

/** IAURLCanonicalizer.alphaReorderQuery: arguments sorted as (name, value) tuples, bytewise; a bare `name` before `name=…`. */
function alphaReorderQuery(query: string): string {
  if (query.length <= 1) return query;
  const args = query.split('&').map((a) => {
    const eq = a.indexOf('=');
    return eq < 0 ? [a] : [a.slice(0, eq), a.slice(eq + 1)];
  });
  const cmp = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);
  args.sort((a, b) => cmp(a[0], b[0]) || a.length - b.length || cmp(a[1] ?? '', b[1] ?? ''));
  return args.map((t) => t.join('=')).join('&');
}

const DEFAULT_PORT: Record<string, string> = { 'http:': '80', 'https:': '443' };

/**
 * The canonical SURT urlkey of an http(s) URL, equal to Python
 * `surt.surt(url)` with its default options (DefaultIAURLCanonicalizer:
 * GoogleURLCanonicalizer then IAURLCanonicalizer; `with_scheme=False`,
 * `reverse_ipaddr=True`, no trailing comma), which pywb uses as the key of
 * its CDXJ indexes. Host labels are reversed even for an IPv4 address
 * (`http://127.0.0.1:8080/` → `1,0,0,127:8080)/`), as `surt` does.
 *
 * @param uri an absolute http(s) URL, e.g. a URI-R from the index
 * @throws TypeError when `uri` is not a URL (a URI-R from the index always is)
 */
export function canonicalUrlkey(uri: string): string {
  const u = new URL(uri);
  // handyurl.parse: hostname lower-cased, IPv6 brackets stripped, default port kept until IA strips it.
  let host = bytesOf(u.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase());
  const port = u.port && u.port !== DEFAULT_PORT[u.protocol] ? u.port : '';
  const rawQuery = u.search.length > 1 ? bytesOf(u.search.slice(1)) : '';

  // GoogleURLCanonicalizer
  let query = rawQuery ? escapeOnce(unescapeRepeatedly(rawQuery)) : '';
  host = unescapeRepeatedly(host)
    .split('..')
    .join('.')
    .replace(/^\.+|\.+$/g, '');
  host = escapeOnce(lowerAscii(host));
  let path = escapeOnce(normalizePath(unescapeRepeatedly(bytesOf(u.pathname))));

  // IAURLCanonicalizer
  host = host.replace(/^www\d*\./, '');
  path = stripPathSessionId(lowerAscii(path));
  if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
  if (query) query = alphaReorderQuery(lowerAscii(stripQuerySessionId(query)));

  // handyurl.geturl_bytes(surt=True, with_scheme=False)
  // Every byte outside printable ASCII was escaped above: the key is ASCII, so string order is byte order.
  return `${host.split('.').reverse().join(',')}${port ? ':' + port : ''})${path || '/'}${query ? '?' + query : ''}`;
}
