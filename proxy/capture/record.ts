/**
 * What the heads of a capture record hold: the request and the response as
 * the proxy saw them, with what must not be stored taken out. Cookie values
 * are removed unless the vhost keeps them (RFC 6265 §4.1.1, §4.2.1);
 * credentials keep only their scheme, always (RFC 9110 §11.6.2, §11.7.2);
 * hop-by-hop fields go (RFC 9110 §7.6.1); a client-sent `X-Client-IP` or
 * `X-Forwarded-*` (proxy/forwarding.ts, every CGI spelling) is replaced by
 * what the proxy knows; the request line and `Host` name the URL the
 * content server was asked for, under the vhost's own name
 * (proxy/capture/address.ts). The record's byte layout is
 * shared/capture-record.ts's.
 */
import type { IncomingMessage } from 'node:http';
import type { CapturedRequest, CapturedResponse } from '#shared/capture-record.js';
import { fromRawHeaders, type RawHeader } from '#shared/http-head.js';
import { clientAddress } from '#shared/net.js';
import type { Vhost } from '../config/vhost-file.js';
import { isProxyOwned } from '../forwarding.js';
import type { CaptureAddress } from './address.js';

/**
 * A `Cookie` value with the values removed, names kept (`a=1; b=2` →
 * `a=; b=`; RFC 6265 §4.2.1). A pair without `=` is dropped.
 */
export function redactCookie(value: string): string {
  return value
    .split(';')
    .map((p) => p.trim())
    .filter((p) => p.includes('='))
    .map((p) => p.slice(0, p.indexOf('=')).trim() + '=')
    .join('; ');
}

/**
 * A `Set-Cookie` value with the cookie's value removed, its name and
 * attributes kept (`sid=abc; Path=/; HttpOnly` → `sid=; Path=/; HttpOnly`;
 * RFC 6265 §4.1.1).
 */
export function redactSetCookie(value: string): string {
  const semi = value.indexOf(';');
  const pair = semi >= 0 ? value.slice(0, semi) : value;
  const attrs = semi >= 0 ? value.slice(semi) : '';
  const eq = pair.indexOf('=');
  return (eq >= 0 ? pair.slice(0, eq).trim() + '=' : '=') + attrs;
}

/** `Basic dXNlcjpwdw==` → `Basic` (the scheme, no credentials). */
function redactCredentials(value: string): string {
  return value.trim().split(/\s+/)[0] ?? '';
}

/**
 * Request headers of the capture record: the client's headers as received
 * (names, order and duplicates kept), except
 * - `Host`: one line, the URI-R's `host[:port]` (`authority`), where the
 *   client's first `Host` was (the archive files the capture under it);
 * - any spelling of `X-Client-IP` the client sent (it would forge the
 *   stored address); with `EnableIP: On`, `X-Client-IP: <socket address>`
 *   is added at the end;
 * - any spelling of `X-Forwarded-Host`, `-Proto`, `-Port` the client sent,
 *   and spellings of `X-Forwarded-For` other than that one (the archive
 *   takes the URI-R's scheme from `X-Forwarded-Proto`, so a client could
 *   otherwise file a page under https); `X-Forwarded-Proto: https` is added
 *   when the client connection was TLS;
 * - `Cookie` values (names kept) unless `ArchiveCookies: On`;
 * - the credentials of `Authorization` / `Proxy-Authorization` (scheme kept), always.
 */
function captureRequestHeaders(req: IncomingMessage, vhost: Vhost, scheme: 'http' | 'https', authority: string): RawHeader[] {
  let hostSeen = false;
  const headers = fromRawHeaders(req.rawHeaders)
    .filter(([k]) => {
      if (k.toLowerCase() !== 'host') return !isProxyOwned(k);
      if (hostSeen) return false;
      return (hostSeen = true);
    })
    .map(([k, v]): RawHeader => {
      const n = k.toLowerCase();
      if (n === 'host') return [k, authority];
      if (n === 'cookie' && !vhost.archiveCookies) return [k, redactCookie(v)];
      if (n === 'authorization' || n === 'proxy-authorization') return [k, redactCredentials(v)];
      return [k, v];
    });
  if (!hostSeen) headers.unshift(['Host', authority]);
  if (scheme === 'https') headers.push(['X-Forwarded-Proto', 'https']);
  if (vhost.enableIP) {
    const ip = clientAddress(req.socket.remoteAddress);
    if (ip) headers.push(['X-Client-IP', ip]);
  }
  return headers;
}

const HOP_BY_HOP = new Set(['transfer-encoding', 'connection', 'keep-alive']);

/**
 * Response headers of the capture record: the content server's headers as
 * received (`rawHeaders`: names, order, duplicates kept) without the
 * hop-by-hop `Transfer-Encoding`, `Connection` and `Keep-Alive` (the body
 * is stored with the transfer coding undone), and with `Set-Cookie` values
 * removed (name and attributes kept) unless `ArchiveCookies: On`.
 */
function captureResponseHeaders(rawHeaders: string[], vhost: Vhost): RawHeader[] {
  return fromRawHeaders(rawHeaders)
    .filter(([k]) => !HOP_BY_HOP.has(k.toLowerCase()))
    .map(([k, v]): RawHeader => (k.toLowerCase() === 'set-cookie' && !vhost.archiveCookies ? [k, redactSetCookie(v)] : [k, v]));
}

/**
 * The request and response heads of a capture record, from what the proxy
 * saw (`scheme`: of the client's connection; `address`: where it is filed,
 * the target the content server was asked for).
 */
export function captureHeads(
  req: IncomingMessage,
  proxyRes: IncomingMessage,
  vhost: Vhost,
  scheme: 'http' | 'https',
  address: CaptureAddress,
): { request: CapturedRequest; response: CapturedResponse } {
  return {
    request: {
      method: req.method ?? 'GET',
      target: address.target,
      httpVersion: `HTTP/${req.httpVersion}`,
      headers: captureRequestHeaders(req, vhost, scheme, address.authority),
    },
    response: {
      httpVersion: `HTTP/${proxyRes.httpVersion}`,
      status: proxyRes.statusCode ?? 0,
      reason: proxyRes.statusMessage ?? '',
      headers: captureResponseHeaders(proxyRes.rawHeaders, vhost),
    },
  };
}
