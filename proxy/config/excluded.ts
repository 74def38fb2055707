/**
 * What the `Excluded` setting means: its entries and a request's path are
 * compared in one canonical form (the archive's urlkey path, shared/uri.ts,
 * docs/url-space.md), as prefixes on segment boundaries. The config loader
 * normalises the entries ({@link excludedPrefix}); the capture decision
 * (proxy/capture/verdict.ts) matches a request against them
 * ({@link isExcludedPath}). RFC 3986 §6.2.2, §5.2.4.
 */
import { canonicalEscapes, canonicalPath } from '#shared/uri.js';

/**
 * A request path as the Excluded rules see it, in the canonical form of the
 * archive's urlkey path (shared/uri.ts `canonicalPath`, docs/url-space.md):
 * query removed; percent-encoded unreserved characters decoded and other
 * escapes upper-cased (RFC 3986 §6.2.2.2: `%70rivate` = `private`);
 * dot segments resolved (RFC 3986 §5.2.4, `%2e` counted as a dot, WHATWG URL
 * rules); runs of `/` merged into one (as Apache's MergeSlashes does). So a
 * client cannot reach an excluded page under another spelling and have it
 * captured. Case is kept (paths are case-sensitive, RFC 3986 §6.2.2.1).
 *
 * @param target request target, origin-form `/a/b?q` or absolute-form `http://h/a/b?q`
 */
export function normalizeMatchPath(target: string): string {
  let p = target;
  if (!p.startsWith('/')) {
    try {
      p = new URL(p).pathname;
    } catch {
      p = '/' + p;
    }
  }
  const q = p.search(/[?#]/);
  if (q >= 0) p = p.slice(0, q);
  p = p.replace(/\/{2,}/g, '/');
  p = canonicalEscapes(p);
  try {
    p = new URL(p, 'http://x').pathname;
  } catch {
    // keep p as it is
  }
  // The path of the archive's urlkey (shared/uri.ts): the same escapes and merged slashes.
  return canonicalPath(p);
}

/**
 * True when `target`'s path is under one of the `excluded` prefixes, on a
 * segment boundary: `/search` excludes `/search`, `/search/x` and
 * `/search?q=1`, not `/searchx`. The path is compared after
 * {@link normalizeMatchPath} (so `/%73earch` and `/a/../search` are
 * excluded too); `excluded` entries are normalised the same way by the
 * config loader.
 *
 * @param excluded normalised prefixes (`Vhost.excluded`)
 * @param target request target, origin-form or absolute-form
 */
export function isExcludedPath(excluded: readonly string[], target: string): boolean {
  if (excluded.length === 0) return false;
  const p = normalizeMatchPath(target);
  for (const ex of excluded) {
    if (ex === '/' || p === ex || p.startsWith(ex + '/')) return true;
  }
  return false;
}

/** An `Excluded` entry as the matcher compares it: normalised, no trailing `/` (except `/` itself). */
export function excludedPrefix(entry: string): string {
  const p = normalizeMatchPath(entry);
  return p.length > 1 && p.endsWith('/') ? p.slice(0, -1) : p;
}
