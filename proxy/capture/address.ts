/**
 * Where an exchange is filed: its URI-R, built from the vhost's own names
 * only, never from a name the client made up (RFC 9110 §7.2, §4.3.3:
 * `Host` is the client's word); the port the proxy listens on or the
 * scheme's default; and the exact target the content server is asked for,
 * so that the URI-R is the URL the content server answered (RFC 3986
 * §6.2.2.3: no dot-segments, no backslash that a parser may read as `/`).
 */
import { formatHostPort } from '#shared/net.js';
import { checkCaptureTarget, isHostHeader, UriError, uriRFromRequest } from '#shared/uri.js';
import type { Vhost } from '../config/vhost-file.js';

/** The name and port of a `Host` header value: name lower-case, without IPv6 brackets or a trailing dot. */
export interface HostOf {
  name: string;
  port?: number;
}

/**
 * The name and port of a `Host` header value of the shape `host[:port]`
 * (`WWW.Example.org:8080` → `www.example.org`, 8080; `[::1]` → `::1`);
 * `undefined` for anything else.
 */
export function parseHost(host: string | undefined): HostOf | undefined {
  if (!host || !isHostHeader(host)) return undefined;
  const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(host)!;
  let name = m[1].toLowerCase().replace(/^\[|\]$/g, '');
  if (name.endsWith('.')) name = name.slice(0, -1);
  return m[2] === undefined ? { name } : { name, port: Number(m[2]) };
}

/**
 * The path and query the content server is asked for, exactly as the
 * client wrote them: an origin-form target unchanged (no `//` merged, no
 * `\` turned into `/`), the path and query of an absolute-form one.
 */
export function upstreamTarget(target: string): string {
  const m = /^https?:\/\/[^/?#]*/i.exec(target);
  if (!m) return target;
  const rest = target.slice(m[0].length);
  return rest.startsWith('/') ? rest : '/' + rest;
}

/** Where a captured exchange is filed. */
export interface CaptureAddress {
  /** The URI-R. */
  uriR: string;
  /** `host[:port]` of the URI-R: the `Host` of the capture record. */
  authority: string;
  /** The origin-form target the content server is asked for, and the capture record's. */
  target: string;
}

/** Why an exchange has no capture address. */
export type NoAddress =
  /** The `Host` is none of the vhost's names (a default vhost caught it). */
  | { reason: 'unknown-host' }
  /** The `Host` names a port other than the one the proxy listens on (or the scheme's default). */
  | { reason: 'unknown-port' }
  /** The target cannot be a URI-R: `why` says why (a backslash, dot-segments, …). */
  | { reason: 'refused'; why: string }
  /** No `Host`, or not `host[:port]`, or a target that is not origin-form nor absolute-form for that Host. */
  | { reason: 'no-uri'; why: string };

/**
 * The capture address of a request: `scheme://name[:port]target`, where
 * name is one of the vhost's names (`server_name` with `UseCanonicalName
 * On`, else the one the client used), port the `Host`'s when it is
 * `localPort` (none when it has none or names the scheme's default), and
 * target the request's path and query exactly as sent.
 *
 * @param localPort the port of the socket the request came in on
 */
export function captureAddress(
  vhost: Vhost,
  hostHeader: string | undefined,
  reqTarget: string,
  scheme: 'http' | 'https',
  localPort: number | undefined,
): CaptureAddress | NoAddress {
  const host = parseHost(hostHeader);
  if (!host) return { reason: 'no-uri', why: `Host is not host[:port]: ${JSON.stringify((hostHeader ?? '').slice(0, 80))}` };
  if (!vhost.names.includes(host.name)) return { reason: 'unknown-host' };
  const defaultPort = scheme === 'https' ? 443 : 80;
  if (host.port !== undefined && host.port !== defaultPort && host.port !== localPort) return { reason: 'unknown-port' };
  const name = vhost.useCanonicalName ? vhost.serverName : host.name;
  const authority = host.port === undefined || host.port === defaultPort ? formatHostPort(name, 0).replace(/:0$/, '') : formatHostPort(name, host.port);
  const target = upstreamTarget(reqTarget);
  try {
    checkCaptureTarget(target); // the archive's own rule: what it would refuse is not captured
  } catch (err) {
    if (err instanceof UriError) return { reason: 'refused', why: err.message };
    throw err;
  }
  try {
    uriRFromRequest(hostHeader, reqTarget, scheme); // an absolute-form target must name the Host
    return { uriR: uriRFromRequest(authority, target, scheme), authority, target };
  } catch (err) {
    if (err instanceof UriError) return { reason: 'no-uri', why: err.message };
    throw err;
  }
}
