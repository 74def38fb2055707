/**
 * The routes' one way of sending a reader's answer (archive/read/answer.ts)
 * through fastify's reply: its headers go on the response under their
 * registered names (field-names.ts, as every other answer's), then
 * fastify sends it, with its hooks.
 */
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Answer } from '../read/answer.js';
import { setRegisteredHeaders } from './field-names.js';

/**
 * Sends `a` as the answer to `req`: its status and headers under their
 * registered names (a header whose value is `undefined` is not sent), `Content-Length` of a buffered body
 * when `a` names none; its body, except to HEAD (RFC 9110 §9.3.2: the same
 * head, no body). A body that is streamed is closed when sent, failed or
 * abandoned; `a.close` runs then, or at once when the body is not sent.
 */
export function sendAnswer(req: FastifyRequest, reply: FastifyReply, a: Answer): FastifyReply {
  reply.code(a.status);
  const { headers, body } = a;
  setRegisteredHeaders(reply, headers);
  // Content-Length stays with fastify, which sets it for a buffered body after the hooks (and then in its own case).
  const length = headers['content-length'] ?? (Buffer.isBuffer(body) ? String(body.length) : undefined);
  if (length !== undefined) reply.header('content-length', length);
  if (req.method === 'HEAD' || body === null) {
    a.close?.();
    return reply.send();
  }
  // fastify gives a Buffer without Content-Type one (application/octet-stream); a stream it leaves alone.
  if (Buffer.isBuffer(body) && headers['content-type'] !== undefined) {
    a.close?.();
    return reply.send(body);
  }
  const stream = Readable.from(Buffer.isBuffer(body) ? [body] : body);
  if (a.close) stream.once('close', a.close);
  return reply.send(stream);
}
