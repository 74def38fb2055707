/**
 * The request fields that are the proxy's word, never the client's:
 * `X-Client-IP`, `X-Forwarded-Host`, `X-Forwarded-Proto`,
 * `X-Forwarded-Port` and `Forwarded` (RFC 7239, which the proxy does not
 * set: its host= and proto= would otherwise reach the content server as the
 * client wrote them), in every spelling a CGI server reads as the same
 * variable (RFC 3875 §4.1.18: `X_Forwarded_Host` and `x-forwarded-host`
 * are both `HTTP_X_FORWARDED_HOST` to PHP), and every spelling of
 * `X-Forwarded-For` other than the one the proxy appends to. A client's
 * copies are dropped before the request goes to the content server (the
 * proxy then sets its own) and from the capture record.
 */
import type http from 'node:http';
import { cgiName } from '#shared/http-head.js';

const OWNED = new Set(['X-Client-IP', 'X-Forwarded-Host', 'X-Forwarded-Proto', 'X-Forwarded-Port', 'Forwarded'].map(cgiName));
const FORWARDED_FOR = cgiName('X-Forwarded-For');

/**
 * True for a field name the client must not send: any spelling of
 * `X-Client-IP`, `X-Forwarded-Host`, `-Proto`, `-Port`, `Forwarded`, and of
 * `X-Forwarded-For` other than `X-Forwarded-For` itself (any case).
 */
export function isProxyOwned(name: string): boolean {
  const cgi = cgiName(name);
  return OWNED.has(cgi) || (cgi === FORWARDED_FOR && name.toLowerCase() !== 'x-forwarded-for');
}

/**
 * Removes from a request's headers (Node's `req.headers`, lower-case
 * names) every field {@link isProxyOwned} names, so that the content
 * server gets only the ones the proxy sets (http-proxy's `xfwd`: the
 * client's address appended to `X-Forwarded-For`, and fresh `-Host`,
 * `-Proto`, `-Port`).
 */
export function dropProxyOwned(headers: http.IncomingHttpHeaders): void {
  for (const name in headers) {
    // Every such name starts with `x` or `f` (any case): the others (Host, Accept, …) need no closer look.
    const c = name.charCodeAt(0) | 0x20;
    if ((c === 0x78 || c === 0x66) && isProxyOwned(name)) delete headers[name];
  }
}

/** `a` when the client sent none, else its list and `a` (`1.2.3.4,127.0.0.1`). */
function appended(prior: string | string[] | undefined, value: string): string {
  return prior ? `${prior},${value}` : value;
}

/**
 * Sets the `X-Forwarded-*` fields of a request to the content server, as
 * http-proxy's `xfwd` does, without its closures per request: the client's
 * address appended to `X-Forwarded-For`, `X-Forwarded-Port` (the `Host`'s
 * port, else the scheme's default) and `-Proto` (`http`, `https`) appended
 * to what is left of the client's, `X-Forwarded-Host` the `Host` unless one
 * is left. Called after {@link dropProxyOwned}, so only `X-Forwarded-For`
 * keeps the client's values.
 *
 * @param encrypted the client's connection is TLS
 */
export function setForwarded(req: http.IncomingMessage, encrypted: boolean): void {
  const h = req.headers;
  const port = h.host ? /:(\d+)/.exec(h.host)?.[1] : undefined;
  h['x-forwarded-for'] = appended(h['x-forwarded-for'], `${req.socket.remoteAddress}`);
  h['x-forwarded-port'] = appended(h['x-forwarded-port'], port ?? (encrypted ? '443' : '80'));
  h['x-forwarded-proto'] = appended(h['x-forwarded-proto'], encrypted ? 'https' : 'http');
  h['x-forwarded-host'] ||= h.host || '';
}
