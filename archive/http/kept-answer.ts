/**
 * Whole answers of the hot read routes (a TimeGate's 302, a Memento's
 * 200), kept with the read cache's view of the URL they were made from
 * (archive/store/read-cache.ts `answer`, `keep`) and written with as little
 * per-request work as Node allows: the status and every header line,
 * names in their registered case (field-names.ts), in one flat list for
 * `writeHead`, and the body as one buffer.
 *
 * Never stale: a kept answer lives as long as its URL's view stays in
 * the read cache, which a write of the URL drops before the capture's PUT
 * is answered (read-after-write), and the read routes use the cached view
 * only for a URL the access rules leave open
 * (archive/read/visible-index.ts `neighbourhood`, asked per request, so a
 * SIGHUP that changes the rules applies to the next request). What else
 * the answer depends on (the memento chosen, the form, Prefer, the base
 * URL from Host, the URI-R as the request spelt it, the time a replay's
 * URLs are rewritten at: its own or the reader's, archive/http/memento.ts)
 * is in its key; HEAD and GET share an answer, HEAD sends no body.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { fieldName } from './field-names.js';

/** An answer ready to write: status, header lines (flat `[name, value, name, value…]`, registered case), body. */
export interface KeptAnswer {
  status: number;
  /** As Node's `writeHead` takes raw headers; a repeated field is one pair per value. */
  lines: string[];
  /** The whole body (sent as is; `Content-Length` is among `lines` when the answer has one), when the answer holds it. */
  body: Buffer | null;
  /**
   * Where the body is found when another cache holds it (the record cache,
   * the replay cache) and counts its bytes: `undefined` when that cache no
   * longer has it (then the answer is made again).
   */
  source?: () => Buffer | undefined;
  /** An estimate of its heap bytes (the read cache counts them): the head, and the body when it holds it. */
  bytes: number;
}

/** Header values by lower-case name, as the routes build them (a list for a repeated field). */
export type HeaderValues = Record<string, string | string[] | undefined>;

/** The largest body an answer is kept with (bytes); a larger answer is made for each request. */
export const MAX_KEPT_BODY = 64 * 1024;

/**
 * Makes a {@link KeptAnswer}: `headers` in their order with registered
 * names (an `undefined` value is left out), and `Content-Length` of the body
 * when `headers` has none and there is a body.
 *
 * @param source where the body is found later when another cache holds it (then the answer does not)
 * @returns `undefined` when the body is larger than {@link MAX_KEPT_BODY} (not worth keeping)
 */
export function keptAnswer(status: number, headers: HeaderValues, body: Buffer | null, source?: () => Buffer | undefined): KeptAnswer | undefined {
  if (body && body.length > MAX_KEPT_BODY) return undefined;
  const lines: string[] = [];
  let bytes = 128 + (body && !source ? body.length : 0);
  for (const name of Object.keys(headers)) {
    const value = headers[name];
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) {
      const n = fieldName(name);
      lines.push(n, v);
      // Header strings are latin-1: one byte a character in V8.
      bytes += n.length + v.length + 32;
    }
  }
  if (body && headers['content-length'] === undefined) lines.push('Content-Length', String(body.length));
  return source ? { status, lines, body: null, source, bytes } : { status, lines, body, bytes };
}

/**
 * Writes `a` as the answer to `req`, bypassing fastify's reply (its
 * `onSend` hooks, header store and serializer; `onResponse` hooks, the
 * metrics and the request log, still run when the answer is finished).
 * HEAD gets the head alone (RFC 9110 §9.3.2).
 *
 * @returns false (and nothing written) when the body's source no longer has it
 */
export function sendKept(req: FastifyRequest, reply: FastifyReply, a: KeptAnswer): boolean {
  const body = a.source ? a.source() : a.body;
  if (a.source && !body) return false;
  reply.hijack();
  const res = reply.raw;
  res.writeHead(a.status, a.lines);
  if (req.method === 'HEAD' || !body) res.end();
  else res.end(body);
  return true;
}
