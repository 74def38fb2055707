/**
 * Guards in front of the archive's routes: who may write (the capture PUT:
 * `put_allow` address blocks, then `put_tokens` bearer tokens, RFC 6750),
 * and the one-line answers to requests too broken to reach a route (Node's
 * HTTP parser refuses them: RFC 9112 framing errors, a head over
 * `max_http_header_bytes`, a timeout). Reads are open to everyone.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyRequest } from 'fastify';
import { errorText, httpError } from '#shared/http-error.js';
import { addressMatcher, bearerTokenOf, clientAddress } from '#shared/net.js';
import type { ArchiveConfig } from '../config.js';
import { TEXT } from './context.js';

const REALM = 'memento-archive';

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * The `onRequest` hook of the capture PUT: 403 (address not in
 * `put_allow`) or 401 with `WWW-Authenticate: Bearer` (no or a wrong token
 * while `put_tokens` is set), with a one-line reason, before any of the
 * body is read; the connection is closed after the answer. Tokens are
 * compared in constant time.
 */
export function putAccessHook(config: Pick<ArchiveConfig, 'putAllow' | 'putTokens'>) {
  const allowed = addressMatcher(config.putAllow);
  const tokens = config.putTokens.map(digest);
  // A connection's peer does not change: its address is matched once, not on every PUT of a kept-alive connection.
  const allowedPeer = new WeakMap<Socket, boolean>();
  return async function putAccess(req: FastifyRequest): Promise<void> {
    let ok = allowedPeer.get(req.socket);
    if (ok === undefined) allowedPeer.set(req.socket, (ok = allowed(clientAddress(req.socket.remoteAddress))));
    if (!ok) {
      const address = clientAddress(req.socket.remoteAddress);
      throw httpError(403, `PUT from ${address || 'an unknown address'} is not allowed: the address is not in put_allow`, { close: true });
    }
    if (!tokens.length) return;
    const auth = req.headers.authorization;
    const token = bearerTokenOf(auth);
    if (token === undefined) {
      throw httpError(401, auth ? 'Authorization is not "Bearer <token>"' : 'a capture PUT needs Authorization: Bearer <token> (put_tokens is set)', {
        close: true,
        headers: { 'www-authenticate': `Bearer realm="${REALM}"` },
      });
    }
    const given = digest(token);
    if (!tokens.some((t) => timingSafeEqual(t, given))) {
      throw httpError(401, 'the bearer token is not one of put_tokens', {
        close: true,
        headers: { 'www-authenticate': `Bearer realm="${REALM}", error="invalid_token"` },
      });
    }
  };
}

/** Status and one-line reason for an error of Node's HTTP parser or its timeouts. */
function clientErrorReason(err: NodeJS.ErrnoException & { reason?: string }, maxHttpHeaderBytes: number): [number, string] {
  switch (err.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return [408, 'the request was not received in time (request_timeout / headers_timeout)'];
    case 'HPE_HEADER_OVERFLOW':
      return [431, `the request line and headers are larger than the limit of ${maxHttpHeaderBytes} bytes (max_http_header_bytes)`];
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
      return [400, 'malformed HTTP request: Content-Length together with Transfer-Encoding'];
    case 'HPE_INVALID_EOF_STATE':
      return [400, 'the request body ended early: the client closed the connection before its Content-Length or last chunk'];
    case 'HPE_INVALID_CHUNK_SIZE':
    case 'HPE_STRICT':
      return [400, `malformed chunked encoding in the request body (${err.reason ?? err.code})`];
    default:
      return [400, `malformed HTTP request: ${(err.reason ?? err.message ?? String(err.code)).replace(/[\r\n]+/g, ' ').slice(0, 200)}`];
  }
}

/**
 * fastify's `clientErrorHandler`: a request Node's HTTP parser rejects gets
 * a `text/plain` answer with a one-line reason (unless a response has begun
 * on the socket), then the connection is closed.
 */
export function clientErrorHandler(config: Pick<ArchiveConfig, 'maxHttpHeaderBytes'>) {
  return function onClientError(err: NodeJS.ErrnoException & { reason?: string }, socket: Socket): void {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const [status, reason] = clientErrorReason(err, config.maxHttpHeaderBytes);
    const body = errorText(status, reason);
    // Only when nothing of a response has gone out on this socket yet.
    const sent = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
    if (socket.writable && !sent) {
      socket.write(
        `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: ${TEXT}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroy();
  };
}
