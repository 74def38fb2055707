/**
 * Which exchanges the proxy captures: the two places that decide, one from
 * the request ({@link requestVerdict}), one from the response head
 * ({@link responseVerdict}), and the rules they apply: a response is a
 * representation of the resource when its status is 2xx other than 206 or
 * 3xx other than 304 (RFC 9110 §15.3, §15.4, §15.3.7, §15.4.5); private
 * traffic is a request with `Authorization` or a session cookie
 * (`PrivateCookies`, RFC 6265 §5.4) or a response with
 * `Cache-Control: private` or `no-store` (RFC 9111 §5.2.2.7, §5.2.2.5);
 * `Excluded` paths match as prefixes on segment boundaries after the path
 * is normalised (RFC 3986 §6.2.2, §5.2.4).
 */
import type http from 'node:http';
import { canonicalEscapes, canonicalPath } from '#shared/uri.js';
import type { Vhost } from '../config/vhost-file.js';

/** Why an exchange is not captured (`null` in {@link requestVerdict} = it may be). */
export type NotCapturedReason =
  | 'archiving-off'
  | 'method'
  | 'accept-datetime'
  | 'excluded'
  | 'status'
  | 'private'
  | 'no-uri'
  /** The Host is none of the vhost's names (a default vhost caught it). */
  | 'unknown-host'
  /** The Host names a port the proxy does not listen on. */
  | 'unknown-port'
  /** The archive would refuse the capture (shared/capture-rules.ts). */
  | 'refused';

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

/**
 * The part of the capture decision known from the request alone.
 *
 * @returns `null` when the exchange is captured if its status allows
 *   ({@link isCapturableStatus}); otherwise the reason it is not.
 */
export function requestVerdict(vhost: Vhost, method: string, target: string, headers: http.IncomingHttpHeaders): NotCapturedReason | null {
  if (!vhost.enableArchiving) return 'archiving-off';
  if (method !== 'GET') return 'method';
  if (headers['accept-datetime'] !== undefined) return 'accept-datetime';
  if (isExcludedPath(vhost.excluded, target)) return 'excluded';
  if (!vhost.archivePrivate && (headers.authorization !== undefined || hasPrivateCookie(vhost, headers.cookie))) return 'private';
  return null;
}

/** True when a `Cookie` value (Node joins several with `; `) names a cookie of the vhost's `PrivateCookies`. */
export function hasPrivateCookie(vhost: Pick<Vhost, 'privateCookie'>, cookie: string | undefined): boolean {
  const re = vhost.privateCookie;
  if (!re || !cookie) return false;
  return cookie.split(';').some((pair) => {
    const eq = pair.indexOf('=');
    return re.test((eq >= 0 ? pair.slice(0, eq) : pair).trim());
  });
}

/** The directive names of `Cache-Control` header values, lower-case (RFC 9111 §5.2). */
function cacheDirectives(value: string | string[] | undefined): Set<string> {
  const out = new Set<string>();
  if (value === undefined) return out;
  for (const v of Array.isArray(value) ? value : [value]) {
    // Split on commas outside quoted strings (private="Set-Cookie, X" is one directive).
    for (const part of v.match(/(?:[^,"]|"(?:[^"\\]|\\.)*")+/g) ?? []) {
      const name = part.split('=')[0].trim().toLowerCase();
      if (name) out.add(name);
    }
  }
  return out;
}

/**
 * The part of the capture decision known from the response head.
 *
 * @returns `null` when captured; `status` when the response is not a
 *   representation ({@link isCapturableStatus}); `private` for
 *   `Cache-Control: private` or `no-store` unless `ArchivePrivate: On`.
 */
export function responseVerdict(vhost: Vhost, status: number, headers: http.IncomingHttpHeaders): NotCapturedReason | null {
  if (!isCapturableStatus(status)) return 'status';
  if (!vhost.archivePrivate) {
    const cc = cacheDirectives(headers['cache-control']);
    if (cc.has('private') || cc.has('no-store')) return 'private';
  }
  return null;
}

/** A response that is a representation: 2xx other than 206, 3xx other than 304 (RFC 9110 §15.3.7, §15.4.5). */
function isCapturableStatus(status: number): boolean {
  return (status >= 200 && status < 300 && status !== 206) || (status >= 300 && status < 400 && status !== 304);
}
