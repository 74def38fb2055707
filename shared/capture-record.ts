/**
 * The capture record: the body of a capture PUT (docs/capture-record.md).
 *
 * ```
 * GET /path?q=1 HTTP/1.1\r\n          request line
 * Host: www.example.org\r\n           request headers (Host required)
 * X-Client-IP: 192.0.2.7\r\n          (optional)
 * \r\n
 * HTTP/1.1 200 OK\r\n                 status line
 * Content-Type: text/html\r\n         response headers
 * \r\n
 * <body bytes…>                       to the end of the PUT body
 * ```
 *
 * The parser reads the two heads with a bounded buffer and hands the body
 * bytes on as they come; it never holds the body. The serializer writes the two heads;
 * the caller streams the body after them.
 */
import { formatFieldLines, HeadSyntaxError, isFieldValue, isToken, parseFields, parseStatusLine, type RawHeader, splitHead } from './http-head.js';

export type { RawHeader } from './http-head.js';

/** The embedded original request (parts 1–3 of the record). */
export interface CapturedRequest {
  method: string;
  /** Request target as sent: origin-form `/path?q` (or absolute-form). */
  target: string;
  /** `HTTP/1.1` */
  httpVersion: string;
  headers: RawHeader[];
}

/** The embedded response (parts 4–6 of the record). */
export interface CapturedResponse {
  /** `HTTP/1.1` */
  httpVersion: string;
  status: number;
  /** Reason phrase, possibly empty. */
  reason: string;
  headers: RawHeader[];
}

/** What the parser reads before the body, with the exact bytes of each head. */
export interface CaptureHead {
  request: CapturedRequest;
  response: CapturedResponse;
  /** Bytes of parts 1–3 exactly as received (request line through blank line). */
  requestBytes: Buffer;
  /** Bytes of parts 4–6 exactly as received (status line through blank line). */
  responseBytes: Buffer;
}

/** Limits on the two heads; defaults in {@link DEFAULT_HEAD_LIMITS}. */
export interface HeadLimits {
  /** Most bytes of parts 1–6 together. */
  maxHeadBytes: number;
  /** Most header lines in each of the two heads. */
  maxHeaders: number;
}

export const DEFAULT_HEAD_LIMITS: HeadLimits = { maxHeadBytes: 64 * 1024, maxHeaders: 200 };

/** A capture record that breaks the format; `message` is one line for the client (HTTP 400, or 431 for heads over the limits). */
export class CaptureRecordError extends Error {
  readonly status: number;
  constructor(message: string, status = 400) {
    super(message);
    this.name = 'CaptureRecordError';
    this.status = status;
  }
}

// HTTP/1.0, HTTP/1.1, and HTTP/2 as a proxy may write it for an h2 client.
const VERSION = /^HTTP\/(?:1\.[01]|2(?:\.0)?)$/;

/** Runs a strict head step; its syntax errors become capture record errors (431 for too many lines). */
function strictly<T>(step: () => T): T {
  try {
    return step();
  } catch (err) {
    if (err instanceof HeadSyntaxError) throw new CaptureRecordError(err.message, err.tooMany ? 431 : 400);
    throw err;
  }
}

function parseRequestHead(bytes: Buffer, limits: HeadLimits): CapturedRequest {
  const opts = { strict: true, what: 'embedded request', maxFields: limits.maxHeaders };
  const { startLine, fieldLines } = strictly(() => splitHead(bytes, opts));
  const parts = startLine.split(' ');
  if (parts.length !== 3) throw new CaptureRecordError(`request line is not "METHOD target HTTP/x.y": ${JSON.stringify(startLine.slice(0, 80))}`);
  const [method, target, httpVersion] = parts;
  if (!isToken(method)) throw new CaptureRecordError(`request method is not a token: ${JSON.stringify(method.slice(0, 40))}`);
  if (!VERSION.test(httpVersion))
    throw new CaptureRecordError(`request line does not end in HTTP/1.0, HTTP/1.1 or HTTP/2: ${JSON.stringify(httpVersion.slice(0, 40))}`);
  // eslint-disable-next-line no-control-regex -- control characters are what this refuses
  if (target.length === 0 || /[\x00-\x20\x7f-\xff]/.test(target))
    throw new CaptureRecordError('request target is empty or has a control, space or non-ASCII byte');
  return { method, target, httpVersion, headers: strictly(() => parseFields(fieldLines, opts)) };
}

function parseResponseHead(bytes: Buffer, limits: HeadLimits): CapturedResponse {
  const opts = { strict: true, what: 'embedded response', maxFields: limits.maxHeaders };
  const { startLine, fieldLines } = strictly(() => splitHead(bytes, opts));
  const line = parseStatusLine(startLine);
  if (!line || !VERSION.test(line.httpVersion))
    throw new CaptureRecordError(`status line is not "HTTP/x.y NNN reason": ${JSON.stringify(startLine.slice(0, 80))}`);
  if (line.status < 100 || line.status > 599) throw new CaptureRecordError(`status code ${line.status} is outside 100-599`);
  if (!isFieldValue(line.reason)) throw new CaptureRecordError('reason phrase has a control character or is not valid UTF-8');
  return { ...line, headers: strictly(() => parseFields(fieldLines, opts)) };
}

const CRLFCRLF = Buffer.from('\r\n\r\n');
const EMPTY = Buffer.alloc(0);

/**
 * Incremental parser of a capture record: {@link feed} it the PUT body as
 * it arrives; it returns the response body bytes (part 7) among them. The
 * heads are read with at most `limits.maxHeadBytes` buffered; once both are
 * read, {@link head} is set, before the first body byte is returned.
 *
 * Errors ({@link CaptureRecordError}, status 400 or 431): no request line,
 * bad method/version, header without colon, bare LF, NUL, heads over the
 * limits, no status line, bad status code, a record that ends before its
 * second blank line.
 */
export class CaptureRecordParser {
  private readonly limits: HeadLimits;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private requestBytes: Buffer | null = null;
  /** Set once both heads are parsed. */
  head: CaptureHead | null = null;

  constructor(limits: Partial<HeadLimits> = {}) {
    this.limits = { ...DEFAULT_HEAD_LIMITS, ...limits };
  }

  /**
   * Feeds the next bytes of the record; returns the body bytes among them
   * (empty while the heads are still being read).
   *
   * @throws CaptureRecordError (400/431)
   */
  feed(chunk: Buffer): Buffer {
    if (this.head) return chunk;
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    return this.tryParse();
  }

  /** The record ended. @throws CaptureRecordError when it ended before the end of the response head. */
  finish(): void {
    if (!this.head) {
      const where = this.requestBytes ? 'the response head (status line, headers, blank line)' : 'the request head (request line, headers, blank line)';
      throw new CaptureRecordError(this.pendingBytes === 0 && !this.requestBytes ? 'capture record is empty' : `capture record ends inside ${where}`);
    }
  }

  private tryParse(): Buffer {
    let buf = this.pending.length === 1 ? this.pending[0] : Buffer.concat(this.pending);
    this.pending = [buf];
    for (;;) {
      const end = buf.indexOf(CRLFCRLF);
      const used = this.requestBytes ? this.requestBytes.length : 0;
      if (end < 0) {
        if (used + buf.length > this.limits.maxHeadBytes) {
          throw new CaptureRecordError(`capture record heads exceed the limit of ${this.limits.maxHeadBytes} bytes`, 431);
        }
        // A bare-LF record never finds CRLFCRLF; say so instead of waiting for the limit.
        if (buf.includes('\n\n')) throw new CaptureRecordError('capture record has a bare LF; lines must end with CRLF');
        return EMPTY;
      }
      if (used + end + 4 > this.limits.maxHeadBytes) {
        throw new CaptureRecordError(`capture record heads exceed the limit of ${this.limits.maxHeadBytes} bytes`, 431);
      }
      const headBytes = Buffer.from(buf.subarray(0, end + 4));
      buf = buf.subarray(end + 4);
      if (!this.requestBytes) {
        this.requestBytes = headBytes;
        this.pending = [buf];
        this.pendingBytes = buf.length;
        continue;
      }
      const request = parseRequestHead(this.requestBytes, this.limits);
      const response = parseResponseHead(headBytes, this.limits);
      this.head = { request, response, requestBytes: this.requestBytes, responseBytes: headBytes };
      this.pending = [];
      this.pendingBytes = 0;
      return buf;
    }
  }
}

/**
 * Serializes parts 1–6 of a capture record (both heads with their blank
 * lines). The caller writes the response body after it. Header names and
 * values are written as given; they must not contain CR or LF (throws
 * `TypeError` if they do, so that a header cannot forge a second head).
 */
export function serializeCaptureHead(request: CapturedRequest, response: CapturedResponse): Buffer {
  for (const [k, v] of [...request.headers, ...response.headers]) {
    if (/[\r\n]/.test(k) || /[\r\n]/.test(v)) throw new TypeError(`header ${JSON.stringify(k)} contains CR or LF`);
  }
  const text =
    `${request.method} ${request.target} ${request.httpVersion}\r\n${formatFieldLines(request.headers)}\r\n` +
    `${response.httpVersion} ${response.status}${response.reason ? ' ' + response.reason : ''}\r\n${formatFieldLines(response.headers)}\r\n`;
  return Buffer.from(text, 'latin1');
}
