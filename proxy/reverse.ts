/**
 * ProxyPassReverse, as Apache's: a content server that names its own
 * address in `Location` (RFC 9110 §10.2.2), `Content-Location` (§8.7) or
 * the `url=` of `Refresh` sends its clients to an address they should
 * never see; the proxy rewrites those to the site's public origin, for the
 * client and in the capture alike (the capture is what the visitor saw).
 */
import type http from 'node:http';
import { formatHostPort } from '#shared/net.js';
import { parseHost } from './capture/address.js';
import type { Vhost } from './config/vhost-file.js';

const URL_FIELDS = new Set(['location', 'content-location']);
const FIELDS = [...URL_FIELDS, 'refresh'];
// `Refresh: 5; url=http://…` (also `,` and quotes; the form browsers accept).
const REFRESH = /^(\s*\d+(?:\.\d*)?\s*[;,]\s*url\s*=\s*['"]?)(.*)$/is;

/** {@link upstreamOrigins} of each vhost, worked out once (vhosts are frozen; a reload makes new ones). */
const originsOf = new WeakMap<Vhost, readonly string[]>();

/**
 * The origins (`http://host:port`, and `http://host` when the port is the
 * scheme's default) by which a URL can name the content server.
 */
function upstreamOrigins(upstream: string): string[] {
  const u = new URL(upstream);
  const origins = [`${u.protocol}//${u.host}`.toLowerCase()];
  const defaultPort = u.protocol === 'https:' ? '443' : '80';
  if (u.port === '' || u.port === defaultPort) origins.push(`${u.protocol}//${u.hostname}:${defaultPort}`.toLowerCase());
  return origins;
}

/**
 * The site's origin as the client sees it: the client connection's scheme
 * and the `Host` it sent, when that is one of the vhost's names; otherwise
 * (a default vhost answering another name) `server_name` and the port the
 * client connected to (none when it is the scheme's default).
 */
export function publicOriginOf(vhost: Vhost, hostHeader: string | undefined, scheme: 'http' | 'https', localPort: number | undefined): string {
  const host = parseHost(hostHeader);
  if (host && vhost.names.includes(host.name)) return `${scheme}://${hostHeader!.trim().toLowerCase()}`;
  const port = localPort !== undefined && localPort !== (scheme === 'https' ? 443 : 80) ? localPort : 0;
  return `${scheme}://${formatHostPort(vhost.serverName, port).replace(/:0$/, '')}`;
}

/** `url` with the content server's origin replaced by `publicOrigin`; unchanged when it names anything else. */
export function reverseUrl(url: string, origins: readonly string[], publicOrigin: string): string {
  const lower = url.toLowerCase();
  for (const o of origins) {
    if (lower.startsWith(o) && (lower.length === o.length || '/?#'.includes(lower[o.length]))) return publicOrigin + url.slice(o.length);
  }
  return url;
}

/** A header value with the content server's origin replaced (for `Refresh`, in its `url=` part). */
function reverseValue(name: string, value: string, origins: readonly string[], publicOrigin: string): string {
  if (URL_FIELDS.has(name)) return reverseUrl(value, origins, publicOrigin);
  const m = REFRESH.exec(value);
  return m ? m[1] + reverseUrl(m[2], origins, publicOrigin) : value;
}

/**
 * Rewrites, in the content server's response head (`headers`, which the
 * client gets, and `rawHeaders`, which the capture records), the
 * `Location`, `Content-Location` and `Refresh` values that name the
 * vhost's `upstream` to the site's public origin ({@link publicOriginOf}
 * of `hostHeader`, `scheme` and `localPort`, worked out only when the
 * response has one of those fields), unless the vhost says
 * `ProxyPassReverse: Off`.
 */
export function reverseUpstreamUrls(
  proxyRes: http.IncomingMessage,
  vhost: Vhost,
  hostHeader: string | undefined,
  scheme: 'http' | 'https',
  localPort: number | undefined,
): void {
  if (!vhost.proxyPassReverse) return;
  const headers = proxyRes.headers;
  if (headers.location === undefined && headers['content-location'] === undefined && headers.refresh === undefined) return;
  let origins = originsOf.get(vhost);
  if (!origins) originsOf.set(vhost, (origins = upstreamOrigins(vhost.upstream)));
  const publicOrigin = publicOriginOf(vhost, hostHeader, scheme, localPort);
  const raw = proxyRes.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    if (URL_FIELDS.has(name) || name === 'refresh') raw[i + 1] = reverseValue(name, raw[i + 1], origins, publicOrigin);
  }
  for (const name of FIELDS) {
    const v = headers[name];
    if (typeof v === 'string') headers[name] = reverseValue(name, v, origins, publicOrigin);
  }
}
