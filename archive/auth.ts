/**
 * Guards of the capture endpoint (issue 5): who may PUT, and the one-line
 * answers of the HTTP layer to requests too broken to reach a route.
 *
 * Write access (conf/archive.yaml): a PUT must come from an address in
 * `put_allow` (CIDR blocks; default loopback only: `127.0.0.0/8`, `::1`),
 * and, when `put_tokens` lists any, carry `Authorization: Bearer <token>`
 * with one of them (RFC 6750). Refused: 403 (address) or 401 with
 * `WWW-Authenticate: Bearer` (token), a one-line reason, nothing read or
 * stored. The read side (GET/HEAD) is open to everyone.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { BlockList, isIPv4 } from 'node:net';
import http from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { parseCidr, type ArchiveConfig } from './config.js';

const TEXT = 'text/plain; charset=UTF-8';
const REALM = 'memento-archive';

/** The client address as `put_allow` sees it: an IPv4-mapped IPv6 address (`::ffff:127.0.0.1`) is its IPv4 address. */
export function clientAddress(remote: string | undefined): string {
  if (!remote) return '';
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(remote);
  return m ? m[1] : remote;
}

/** A `put_allow` list as a matcher. @throws TypeError for an entry that is not an address or CIDR block (config validation catches these first). */
export function allowList(entries: string[]): (address: string) => boolean {
  const list = new BlockList();
  for (const e of entries) {
    const c = parseCidr(e);
    if (!c) throw new TypeError(`not an address or CIDR block: ${e}`);
    list.addSubnet(c[0], c[1], c[2]);
  }
  const seen = new Map<string, boolean>();
  return (address) => {
    const a = clientAddress(address);
    if (!a) return false;
    let ok = seen.get(a);
    if (ok === undefined) {
      ok = list.check(a, isIPv4(a) ? 'ipv4' : 'ipv6');
      if (seen.size > 10_000) seen.clear();
      seen.set(a, ok);
    }
    return ok;
  };
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * The fastify `onRequest` hook of the PUT plugin: answers 403 or 401 (with
 * a one-line reason and `Connection: close`) before any of the body is
 * read, or lets the request through.
 */
export function putAuthHook(config: Pick<ArchiveConfig, 'putAllow' | 'putTokens'>) {
  const allowed = allowList(config.putAllow);
  const tokens = config.putTokens.map(digest);
  return async function putAuth(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    const address = clientAddress(req.socket.remoteAddress);
    if (!allowed(address)) {
      reply.code(403).header('connection', 'close').type(TEXT);
      return reply.send(`PUT from ${address || 'an unknown address'} is not allowed: the address is not in put_allow\n`);
    }
    if (!tokens.length) return;
    const auth = req.headers.authorization;
    const m = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(auth ?? '');
    if (!m) {
      reply.code(401).header('www-authenticate', `Bearer realm="${REALM}"`).header('connection', 'close').type(TEXT);
      return reply.send(auth ? 'Authorization is not "Bearer <token>"\n' : 'a capture PUT needs Authorization: Bearer <token> (put_tokens is set)\n');
    }
    const given = digest(m[1]);
    if (!tokens.some((t) => timingSafeEqual(t, given))) {
      reply.code(401).header('www-authenticate', `Bearer realm="${REALM}", error="invalid_token"`).header('connection', 'close').type(TEXT);
      return reply.send('the bearer token is not one of put_tokens\n');
    }
  };
}

/**
 * fastify's `clientErrorHandler`: a request Node's HTTP parser rejects
 * (malformed request line, headers over `max_http_header_bytes`, bad
 * chunked encoding, Content-Length with Transfer-Encoding, a timeout) gets
 * a text/plain answer with a one-line reason, then the connection is closed.
 */
export function clientErrorHandler(config: Pick<ArchiveConfig, 'maxHttpHeaderBytes'>) {
  return function onClientError(err: NodeJS.ErrnoException & { reason?: string }, socket: Socket): void {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    let status = 400;
    let reason: string;
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      status = 408;
      reason = 'the request was not received in time (request_timeout / headers_timeout)';
    } else if (err.code === 'HPE_HEADER_OVERFLOW') {
      status = 431;
      reason = `the request line and headers are larger than the limit of ${config.maxHttpHeaderBytes} bytes (max_http_header_bytes)`;
    } else if (err.code === 'HPE_UNEXPECTED_CONTENT_LENGTH') {
      reason = 'malformed HTTP request: Content-Length together with Transfer-Encoding';
    } else if (err.code === 'HPE_INVALID_EOF_STATE') {
      reason = 'the request body ended early: the client closed the connection before its Content-Length or last chunk';
    } else if (err.code === 'HPE_INVALID_CHUNK_SIZE' || err.code === 'HPE_STRICT') {
      reason = `malformed chunked encoding in the request body (${err.reason ?? err.code})`;
    } else {
      reason = `malformed HTTP request: ${(err.reason ?? err.message ?? String(err.code)).replace(/[\r\n]+/g, ' ').slice(0, 200)}`;
    }
    const body = reason + '\n';
    // Only when nothing of a response has gone out on this socket yet.
    const sent = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
    if (socket.writable && !sent) {
      socket.write(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: ${TEXT}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    }
    socket.destroy();
  };
}
