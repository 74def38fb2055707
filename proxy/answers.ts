/**
 * The proxy's own answers, as opposed to the content server's: one line of
 * text, `<status> <reason phrase>: <why>` (shared/http-error.ts
 * `errorText`), so that they stand out from a site's own pages. 421
 * Misdirected Request (RFC 9110 §15.5.20) for a Host no vhost serves, 502
 * and 504 (§15.6.3, §15.6.5) when the content server fails, 408 and 400
 * (§15.5.9, §15.5.1) when the client does.
 */
import http from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { errorText } from '#shared/http-error.js';
import type { Logger } from './log.js';

const TEXT = 'text/plain; charset=utf-8';

/**
 * Ends `res` with `status` and `body` (`text/plain; charset=utf-8`,
 * `Cache-Control: no-store`). Does nothing when the client is gone.
 */
export function sendText(res: http.ServerResponse, status: number, body: string): void {
  if (res.destroyed || res.writableEnded) return;
  res.writeHead(status, { 'Content-Type': TEXT, 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store' });
  res.end(body);
}

/** Ends `res` with an error answer: `status` and the one line `<status> <phrase>: <reason>` (see {@link sendText}). */
export function sendError(res: http.ServerResponse, status: number, reason: string): void {
  sendText(res, status, errorText(status, reason, { withStatus: true }));
}

/**
 * An error answer as raw HTTP/1.1 bytes, for a socket that has no
 * `ServerResponse` (an upgrade request, a request Node could not parse):
 * status line, `Content-Type`, `Content-Length`, `Connection: close`, the
 * one-line body. The caller closes the socket with it ({@link refuseSocket}).
 */
export function socketAnswer(status: number, reason: string): string {
  const body = errorText(status, reason, { withStatus: true });
  const head = `HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? 'Error'}\r\nContent-Type: ${TEXT}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n`;
  return head + body;
}

/** How long a refused connection may take to hand its answer to the kernel before it is cut anyway, ms. */
const REFUSE_FLUSH_MS = 2000;

/**
 * Answers a connection the proxy refuses with `answer` (raw bytes, see
 * {@link socketAnswer}) and closes it for good: once the answer is handed
 * to the kernel the socket is destroyed and its file descriptor freed,
 * whether or not the client ever closes its side (ending it alone would
 * leave it half-open, its descriptor held for as long as the client
 * likes). A client that does not read is cut after 2 s.
 */
export function refuseSocket(socket: Duplex, answer: string): void {
  const cut = setTimeout(() => socket.destroy(), REFUSE_FLUSH_MS).unref();
  socket.once('close', () => clearTimeout(cut));
  socket.end(answer, () => socket.destroy());
}

/**
 * The server's `'clientError'` listener: a request that took longer than
 * `headers_timeout` (its head) or `request_timeout` (all of it) gets 408,
 * one Node could not parse gets 400; then the connection is destroyed
 * ({@link refuseSocket}). When a response has begun on that connection (the
 * client sent garbage after a request whose answer is streaming), nothing
 * is written: an answer there would land inside the body in flight; the
 * connection is only closed (that request's own log line says it was cut,
 * with its real status). Each is logged.
 */
export function clientErrorHandler(log: Logger): (err: NodeJS.ErrnoException, socket: Duplex) => void {
  return (err, socket) => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return void socket.destroy();
    const timeout = err.code === 'ERR_HTTP_REQUEST_TIMEOUT';
    // The response in flight on this socket, if any (as archive/http/guards.ts looks at it).
    const inFlight = (socket as Duplex & { _httpMessage?: http.ServerResponse | null })._httpMessage;
    const entry = {
      level: 'warn' as const,
      msg: timeout ? 'request not received in time' : 'malformed request',
      error: err.code ?? err.message,
      client: (socket as Socket).remoteAddress,
    };
    if (inFlight?.headersSent || !socket.writable) {
      log({ ...entry, answer: 'none: a response was in flight; connection closed', status: inFlight?.statusCode });
      return void socket.destroy();
    }
    const status = timeout ? 408 : 400;
    log({ ...entry, answer: status });
    refuseSocket(socket, timeout ? socketAnswer(408, 'the request did not arrive in time') : socketAnswer(400, 'the request is malformed'));
  };
}
