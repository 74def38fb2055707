/**
 * A WARC response (with its request) as a capture record
 * (docs/capture-record.md), so that an imported record goes through the
 * very path of a capture PUT: the request head, the response head, the
 * body.
 *
 * What changes on the way, and why:
 * - The URI-R is built from the request head's `Host` and target, as for
 *   a PUT. The request record is used as it is when it names the
 *   `WARC-Target-URI`'s host; otherwise (none, or another host) a minimal
 *   `GET <path> HTTP/1.1` with that `Host` stands in for it. For an
 *   `https:` target, `X-Forwarded-Proto: https` is added (the capture
 *   record's way of saying the client came over TLS).
 * - A body with `Transfer-Encoding: chunked` is de-chunked and that header
 *   dropped, as the capture proxy does (a capture record carries the body
 *   without its transfer coding); `Content-Encoding` is kept.
 */
import { getHeader, getHeaders, parseHead, parseRequestLine, splitHead } from '#shared/http-head.js';

/** A body whose chunked transfer coding is malformed or cut short (RFC 9112 §7.1): the record cannot be imported. */
export class ChunkedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ChunkedError';
  }
}

const linesToHead = (lines: string[]) => Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1');

/** The lines of `head` (latin1: bytes kept), its start line first, without the field lines named `name` (lower case). */
function linesWithout(head: Buffer, name: string): string[] {
  const { startLine, fieldLines } = splitHead(head);
  const named = (l: string) => l.includes(':') && l.slice(0, l.indexOf(':')).trimEnd().toLowerCase() === name;
  return [startLine, ...fieldLines.filter((l) => !named(l))];
}

/** The `host[:port]` a `Host` value names, as a URL would have it (default port dropped), or `null`. */
function hostOf(scheme: string, host: string): string | null {
  try {
    return new URL(`${scheme}//${host.trim()}/`).host;
  } catch {
    return null;
  }
}

/**
 * The request head of the capture record for a response record of
 * `target` (an absolute http(s) URL): `recorded` (the HTTP head of its
 * request record) when it names that host, with `X-Forwarded-Proto` set to
 * match the scheme; else a minimal GET. A recorded request with another
 * method than GET is kept as it is, so that the archive refuses it as it
 * refuses such a PUT.
 */
export function requestHeadFor(target: URL, recorded: Buffer | null): Buffer {
  const https = target.protocol === 'https:';
  if (recorded) {
    const { startLine, fields } = parseHead(recorded);
    const line = parseRequestLine(startLine);
    const hosts = getHeaders(fields, 'host');
    if (line && line.method !== 'GET') return recorded;
    if (line && hosts.length === 1 && hostOf(target.protocol, hosts[0]) === target.host) {
      const proto = getHeader(fields, 'x-forwarded-proto')?.trim().toLowerCase();
      if ((proto === 'https') === https && getHeaders(fields, 'x-forwarded-proto').length <= 1) return recorded;
      const lines = linesWithout(recorded, 'x-forwarded-proto');
      if (https) lines.push('X-Forwarded-Proto: https');
      return linesToHead(lines);
    }
  }
  const lines = [`GET ${target.pathname}${target.search} HTTP/1.1`, `Host: ${target.host}`];
  if (https) lines.push('X-Forwarded-Proto: https');
  return linesToHead(lines);
}

/** True when the response head says `Transfer-Encoding: chunked` (and nothing else). */
export function isChunked(responseHead: Buffer): boolean {
  const te = getHeaders(parseHead(responseHead).fields, 'transfer-encoding');
  return te.length > 0 && te.join(',').trim().toLowerCase() === 'chunked';
}

/** The response head without its `Transfer-Encoding` lines. */
export function withoutTransferEncoding(responseHead: Buffer): Buffer {
  return linesToHead(linesWithout(responseHead, 'transfer-encoding'));
}

const MAX_CHUNK_LINE = 4096;

/**
 * Undoes the chunked transfer coding of a body as it streams (RFC 9112
 * §7.1): chunk sizes (with extensions), data, the last chunk and its
 * trailer section. Bytes after the trailer section are ignored.
 *
 * @throws ChunkedError for a malformed size line or chunk end, or a body
 *   that ends before its last chunk
 */
export async function* dechunk(src: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  let state: 'size' | 'data' | 'crlf' | 'trailer' | 'done' = 'size';
  let left = 0;
  let line = '';
  for await (let c of src) {
    while (c.length && state !== 'done') {
      if (state === 'data') {
        const n = Math.min(left, c.length);
        yield c.subarray(0, n);
        c = c.subarray(n);
        left -= n;
        if (left === 0) state = 'crlf';
        continue;
      }
      const nl = c.indexOf(0x0a);
      line += c.subarray(0, nl < 0 ? c.length : nl + 1).toString('latin1');
      c = nl < 0 ? c.subarray(c.length) : c.subarray(nl + 1);
      if (line.length > MAX_CHUNK_LINE) throw new ChunkedError('the chunked body has a line longer than 4096 bytes');
      if (nl < 0) continue;
      const text = line.replace(/\r?\n$/, '');
      line = '';
      if (state === 'crlf') {
        if (text !== '') throw new ChunkedError('a chunk of the chunked body is not followed by CRLF');
        state = 'size';
      } else if (state === 'size') {
        const m = /^([0-9a-fA-F]{1,15})[ \t]*(?:;.*)?$/.exec(text);
        if (!m) throw new ChunkedError(`the chunked body has a bad chunk size line ${JSON.stringify(text.slice(0, 40))}`);
        left = parseInt(m[1], 16);
        state = left === 0 ? 'trailer' : 'data';
      } else if (text === '') state = 'done';
    }
  }
  if (state !== 'done') throw new ChunkedError('the chunked body ends before its last chunk');
}
