/**
 * Header field names on the wire in their registered case (`Link`, `Vary`,
 * `Location`, `Memento-Datetime`, `Content-Type`, `Preference-Applied`…).
 * Field names are case-insensitive (RFC 9110 §5.1), but real Memento tools
 * look them up by exact case (LANL's Memento validator reads
 * `headers["Link"]`), and fastify lower-cases every name given to
 * `reply.header()`. So routes set headers as they like, and one `onSend`
 * hook hands each to Node under its registered name, which Node sends as
 * given.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';

declare module 'fastify' {
  interface FastifyReply {
    /** Every header of the answer is on Node's response under its registered name already ({@link setRegisteredHeaders}). */
    headersPlaced: boolean;
  }
}

/** Names whose registered case is not the capitalised hyphen-separated words (IANA HTTP Field Name Registry). */
const IRREGULAR = new Map(
  [
    'ETag',
    'WWW-Authenticate',
    'Content-MD5',
    'Content-ID',
    'DNT',
    'TE',
    'P3P',
    'NEL',
    'SourceMap',
    'X-XSS-Protection',
    'X-UA-Compatible',
    'X-DNS-Prefetch-Control',
    'X-WebKit-CSP',
  ].map((n) => [n.toLowerCase(), n]),
);

/** The prefix of the original headers a Memento echoes (`X-Archive-Orig-<name>`). */
const ECHO = 'x-archive-orig-';

/** Names seen, so that a name is spelled once, not on every answer (bounded: echoed names come from stored captures). */
const seen = new Map<string, string>();
const SEEN_MAX = 2048;

/**
 * The registered case of a field name: `memento-datetime` →
 * `Memento-Datetime`, `etag` → `ETag`; a name not in the registry gets
 * each hyphen-separated word capitalised (`x-archive-headers-omitted` →
 * `X-Archive-Headers-Omitted`), and an echoed original header its own
 * name's case after the prefix (`x-archive-orig-etag` → `X-Archive-Orig-ETag`).
 *
 * @param name a field name in any case
 */
export function fieldName(name: string): string {
  const lower = name.toLowerCase();
  let out = seen.get(lower);
  if (out !== undefined) return out;
  if (lower.startsWith(ECHO) && lower.length > ECHO.length) out = 'X-Archive-Orig-' + fieldName(lower.slice(ECHO.length));
  else out = IRREGULAR.get(lower) ?? lower.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());
  if (seen.size < SEEN_MAX) seen.set(lower, out);
  return out;
}

/**
 * Moves every header set so far on `reply` from fastify's (lower-cased)
 * store onto Node's response under {@link fieldName}. `Content-Length`
 * stays with fastify, which works it out after `onSend`. Doing it twice
 * changes nothing; an answer sent by {@link setRegisteredHeaders} has its
 * headers in place already and is left alone.
 */
export function useRegisteredFieldNames(reply: FastifyReply): void {
  if (reply.headersPlaced) return;
  const headers = reply.getHeaders();
  for (const name of Object.keys(headers)) {
    const value = headers[name];
    if (name === 'content-length' || value === undefined) continue;
    reply.removeHeader(name);
    reply.raw.setHeader(fieldName(name), value);
  }
}

/**
 * Puts the headers of an answer whose headers are all known at once
 * (archive/http/answer.ts) straight on Node's response under
 * {@link fieldName}, where {@link useRegisteredFieldNames} would move them,
 * without the round trip through fastify's store (an `undefined` value is
 * left out; `Content-Length` is left to the caller, for fastify).
 */
export function setRegisteredHeaders(reply: FastifyReply, headers: Record<string, string | string[] | undefined>): void {
  const res = reply.raw;
  for (const name of Object.keys(headers)) {
    const value = headers[name];
    if (value !== undefined && name !== 'content-length') res.setHeader(fieldName(name), value);
  }
  reply.headersPlaced = true;
}

/**
 * Adds the `onSend` hook that applies {@link useRegisteredFieldNames} to
 * every answer of `app`: routes, errors and 404s (register it before the
 * routes). fastify runs no hooks for the errors of its own router (a
 * malformed address); their handler calls {@link useRegisteredFieldNames}
 * itself.
 */
export function sendRegisteredFieldNames(app: FastifyInstance): void {
  app.decorateReply('headersPlaced', false);
  app.addHook('onSend', (_req, reply, payload, done) => {
    useRegisteredFieldNames(reply);
    done(null, payload);
  });
}
