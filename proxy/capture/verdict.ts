/**
 * Which exchanges the proxy captures: the two places that decide, one from
 * the request ({@link requestVerdict}), one from the response head
 * ({@link responseVerdict}), and the rules they apply: a response is a
 * representation of the resource when its status is 2xx other than 206 or
 * 3xx other than 304 (RFC 9110 §15.3, §15.4, §15.3.7, §15.4.5); private
 * traffic is a request with `Authorization` or a session cookie
 * (`PrivateCookies`, RFC 6265 §5.4) or a response with
 * `Cache-Control: private` or `no-store` (RFC 9111 §5.2.2.7, §5.2.2.5);
 * `Excluded` paths match as the setting says (proxy/config/excluded.ts); a
 * GET that says it has a body (shared/capture-rules.ts `requestBodyOf`) is
 * passed on, never captured: what a body asked for is not the URL's
 * representation.
 */
import type http from 'node:http';
import { requestBodyOf } from '#shared/capture-rules.js';
import { isExcludedPath } from '../config/excluded.js';
import type { Vhost } from '../config/vhost-file.js';

/** Why an exchange is not captured (`null` in {@link requestVerdict} = it may be). */
export type NotCapturedReason =
  | 'archiving-off'
  | 'method'
  /** The request has a body (`Content-Length` other than 0, or a `Transfer-Encoding`). */
  | 'body'
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
 * The part of the capture decision known from the request alone.
 *
 * @returns `null` when the exchange is captured if its status allows
 *   ({@link isCapturableStatus}); otherwise the reason it is not.
 */
export function requestVerdict(vhost: Vhost, method: string, target: string, headers: http.IncomingHttpHeaders): NotCapturedReason | null {
  if (!vhost.enableArchiving) return 'archiving-off';
  if (method !== 'GET') return 'method';
  if (hasBody(headers)) return 'body';
  if (headers['accept-datetime'] !== undefined) return 'accept-datetime';
  if (isExcludedPath(vhost.excluded, target)) return 'excluded';
  if (!vhost.archivePrivate && (headers.authorization !== undefined || hasPrivateCookie(vhost, headers.cookie))) return 'private';
  return null;
}

/** True when the request head says a body follows (the archive's rule, shared/capture-rules.ts `requestBodyOf`). */
function hasBody(headers: http.IncomingHttpHeaders): boolean {
  const cl = headers['content-length'];
  const te = headers['transfer-encoding'];
  if (cl === undefined && te === undefined) return false;
  const fields: [string, string][] = [];
  if (cl !== undefined) fields.push(['Content-Length', cl]);
  if (te !== undefined) fields.push(['Transfer-Encoding', te]);
  return requestBodyOf(fields) !== null;
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
