/**
 * The capture record: the body of a capture PUT (DESIGN.md "The capture
 * record"; spec.md "Capture record (body of the PUT)").
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
 * The parser reads the two heads with a bounded buffer and hands the body on
 * as a stream; it never holds the body. The serializer writes the two heads;
 * the caller streams the body after them.
 */
import { isUtf8 } from 'node:buffer';
import { Transform, type TransformCallback } from 'node:stream';

/** One HTTP header as it appeared on the wire (name case kept). */
export type RawHeader = [name: string, value: string];

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

/** A capture record that breaks the format; `message` is one line for the client (HTTP 400). */
export class CaptureRecordError extends Error {
  readonly status: number;
  constructor(message: string, status = 400) {
    super(message);
    this.name = 'CaptureRecordError';
    this.status = status;
  }
}

/** Header lookup, case-insensitive; the first value or undefined. */
export function getHeader(headers: RawHeader[], name: string): string | undefined {
  const n = name.toLowerCase();
  for (const [k, v] of headers) if (k.toLowerCase() === n) return v;
  return undefined;
}

/** Header lookup, case-insensitive; every value in order. */
export function getHeaders(headers: RawHeader[], name: string): string[] {
  const n = name.toLowerCase();
  return headers.filter(([k]) => k.toLowerCase() === n).map(([, v]) => v);
}

// RFC 7230 §3.2.6 token characters.
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// HTTP/1.0, HTTP/1.1, and HTTP/2 as a proxy may write it for an h2 client.
const VERSION = /^HTTP\/(?:1\.[01]|2(?:\.0)?)$/;
// Field values: visible ASCII, obs-text (0x80-0xFF), SP and HTAB; never CR, LF or NUL.
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

function parseHeaderLines(lines: string[], which: string, limits: HeadLimits): RawHeader[] {
  if (lines.length > limits.maxHeaders) {
    throw new CaptureRecordError(`${which} has ${lines.length} header lines, more than the limit of ${limits.maxHeaders}`, 431);
  }
  const out: RawHeader[] = [];
  for (const line of lines) {
    if (line[0] === ' ' || line[0] === '\t') throw new CaptureRecordError(`${which} header line folding (obs-fold) is not accepted`);
    const colon = line.indexOf(':');
    if (colon <= 0) throw new CaptureRecordError(`${which} header line without a colon: ${JSON.stringify(line.slice(0, 60))}`);
    const name = line.slice(0, colon);
    if (!TOKEN.test(name)) throw new CaptureRecordError(`${which} header name is not a token: ${JSON.stringify(name.slice(0, 60))}`);
    const value = line.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, '');
    if (!FIELD_VALUE.test(value)) throw new CaptureRecordError(`${which} header ${name} has a control character in its value`);
    if (!isUtf8(Buffer.from(value, 'latin1'))) throw new CaptureRecordError(`${which} header ${name} is not valid UTF-8`);
    out.push([name, value]);
  }
  return out;
}

/** Splits a head (without its final blank line) into lines; every line must end in CRLF. */
function splitLines(head: Buffer, which: string): string[] {
  // latin1 keeps every byte as one char, so obs-text survives and offsets match.
  const text = head.toString('latin1');
  if (text.includes('\0')) throw new CaptureRecordError(`${which} contains a NUL byte`);
  const lines = text.split('\r\n');
  lines.pop(); // the text ends with CRLF, so the last piece is empty
  for (const l of lines) {
    if (l.includes('\n') || l.includes('\r')) throw new CaptureRecordError(`${which} has a bare LF or CR; lines must end with CRLF`);
  }
  return lines;
}

function parseRequestHead(bytes: Buffer, limits: HeadLimits): CapturedRequest {
  const lines = splitLines(bytes.subarray(0, bytes.length - 2), 'embedded request');
  const first = lines.shift() ?? '';
  const parts = first.split(' ');
  if (parts.length !== 3) throw new CaptureRecordError(`request line is not "METHOD target HTTP/x.y": ${JSON.stringify(first.slice(0, 80))}`);
  const [method, target, httpVersion] = parts;
  if (!TOKEN.test(method)) throw new CaptureRecordError(`request method is not a token: ${JSON.stringify(method.slice(0, 40))}`);
  if (!VERSION.test(httpVersion)) throw new CaptureRecordError(`request line does not end in HTTP/1.0, HTTP/1.1 or HTTP/2: ${JSON.stringify(httpVersion.slice(0, 40))}`);
  if (target.length === 0 || /[\x00-\x20\x7f-\xff]/.test(target)) throw new CaptureRecordError('request target is empty or has a control, space or non-ASCII byte');
  const headers = parseHeaderLines(lines, 'embedded request', limits);
  return { method, target, httpVersion, headers };
}

function parseResponseHead(bytes: Buffer, limits: HeadLimits): CapturedResponse {
  const lines = splitLines(bytes.subarray(0, bytes.length - 2), 'embedded response');
  const first = lines.shift() ?? '';
  const m = /^(HTTP\/(?:1\.[01]|2(?:\.0)?)) (\d{3})(?: (.*))?$/.exec(first);
  if (!m) throw new CaptureRecordError(`status line is not "HTTP/x.y NNN reason": ${JSON.stringify(first.slice(0, 80))}`);
  const status = Number(m[2]);
  if (status < 100 || status > 599) throw new CaptureRecordError(`status code ${m[2]} is outside 100-599`);
  if (!FIELD_VALUE.test(m[3] ?? '')) throw new CaptureRecordError('reason phrase has a control character');
  if (!isUtf8(Buffer.from(m[3] ?? '', 'latin1'))) throw new CaptureRecordError('reason phrase is not valid UTF-8');
  const headers = parseHeaderLines(lines, 'embedded response', limits);
  return { httpVersion: m[1], status, reason: m[3] ?? '', headers };
}

const CRLFCRLF = Buffer.from('\r\n\r\n');
const EMPTY = Buffer.alloc(0);

/**
 * Streaming parser of a capture record: a Transform whose input is the PUT
 * body and whose output is the response body (part 7) only. The heads are
 * read with at most `limits.maxHeadBytes` buffered; once both are read the
 * parser emits `'head'` with a {@link CaptureHead} before the first body byte.
 *
 * Errors (`'error'` event, a {@link CaptureRecordError} with `status` 400 or
 * 431): no request line, bad method/version, header without colon, bare LF,
 * NUL, heads over the limits, no status line, bad status code, a record
 * that ends before its second blank line.
 */
export class CaptureRecordParser extends Transform {
  private readonly limits: HeadLimits;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private requestBytes: Buffer | null = null;
  private headDone = false;
  /** Set once both heads are parsed. */
  head: CaptureHead | null = null;

  constructor(limits: Partial<HeadLimits> = {}) {
    super();
    this.limits = { ...DEFAULT_HEAD_LIMITS, ...limits };
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    let body: Buffer;
    try {
      body = this.feed(chunk);
    } catch (err) {
      cb(err as Error);
      return;
    }
    cb(null, body.length ? body : undefined);
  }

  override _flush(cb: TransformCallback): void {
    try {
      this.finish();
    } catch (err) {
      cb(err as Error);
      return;
    }
    cb();
  }

  /**
   * The same parser without stream machinery: feeds the next bytes of the
   * record and returns the body bytes among them (empty while the heads are
   * still being read). Emits `'head'` once, before returning the first body
   * bytes.
   *
   * @throws CaptureRecordError (400/431) as the stream form errors.
   */
  feed(chunk: Buffer): Buffer {
    if (this.headDone) return chunk;
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    return this.tryParse();
  }

  /** The record ended. @throws CaptureRecordError when it ended before the end of the response head. */
  finish(): void {
    if (!this.headDone) {
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
      this.headDone = true;
      this.pending = [];
      this.pendingBytes = 0;
      this.emit('head', this.head);
      return buf;
    }
  }
}

function serializeHeaders(headers: RawHeader[]): string {
  let s = '';
  for (const [k, v] of headers) s += `${k}: ${v}\r\n`;
  return s;
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
    `${request.method} ${request.target} ${request.httpVersion}\r\n${serializeHeaders(request.headers)}\r\n` +
    `${response.httpVersion} ${response.status}${response.reason ? ' ' + response.reason : ''}\r\n${serializeHeaders(response.headers)}\r\n`;
  return Buffer.from(text, 'latin1');
}

/** Node's `rawHeaders` (flat [name, value, name, value…]) as {@link RawHeader} pairs. */
export function fromRawHeaders(raw: string[]): RawHeader[] {
  const out: RawHeader[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) out.push([raw[i], raw[i + 1]]);
  return out;
}
