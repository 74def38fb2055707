/**
 * The one reader of message heads in the project: a start line and
 * `name: value` field lines, each ending in CRLF (RFC 9112 §2.1, §5). HTTP
 * request and response heads in capture records and WARC records, and the
 * WARC named fields of a record's header block (WARC 1.1 §4, same syntax)
 * all go through {@link parseHead}.
 *
 * Two modes: `strict` refuses what an archive must not store (bare CR or
 * LF, NUL, obs-fold, a name that is not a token, control characters or
 * non-UTF-8 bytes in a value); lenient skips lines without a colon, for
 * reading back records the archive wrote itself or another tool wrote.
 */
import { isUtf8 } from 'node:buffer';

/** One header field as it appeared on the wire (name case kept). */
export type RawHeader = [name: string, value: string];

/** A head that breaks the syntax in strict mode; `message` is one line (HTTP 400; 431 when `tooMany`). */
export class HeadSyntaxError extends Error {
  /** More field lines than allowed. */
  tooMany?: boolean;
  constructor(message: string) {
    super(message);
    this.name = 'HeadSyntaxError';
  }
}

/** A parsed head: its first line and its fields in order. */
export interface ParsedHead {
  startLine: string;
  fields: RawHeader[];
}

/** Options of {@link parseHead}. */
export interface HeadOptions {
  /** Refuse rather than skip what breaks the syntax (see the module comment). */
  strict?: boolean;
  /** Names the head in error messages (`embedded request`). */
  what?: string;
  /** Most field lines; more throws a {@link HeadSyntaxError} with `tooMany` set (strict only). */
  maxFields?: number;
  /**
   * How bytes become text: `latin1` (default: every byte one character, so
   * HTTP values go out again exactly as they came) or `utf8` (WARC named
   * fields, which WARC 1.1 §4 says are UTF-8).
   */
  encoding?: 'latin1' | 'utf8';
}

// RFC 9110 §5.6.2 token characters.
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// Field values: visible ASCII, obs-text (0x80-0xFF), SP and HTAB; never CR, LF or NUL.
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** True when `s` is an RFC 9110 token (a method, a field name). */
export function isToken(s: string): boolean {
  return TOKEN.test(s);
}

/** True when `s` (latin1 view of bytes) is a field value: no control characters, UTF-8 when non-ASCII. */
export function isFieldValue(s: string): boolean {
  return FIELD_VALUE.test(s) && isUtf8(Buffer.from(s, 'latin1'));
}

/**
 * Parses a head: `bytes` holds the start line and the field lines, with or
 * without the final blank line. Bytes are read as latin1 unless told
 * otherwise, so that every byte stays one character (obs-text survives;
 * values are as on the wire).
 *
 * @throws HeadSyntaxError in strict mode, with a one-line reason
 */
export function parseHead(bytes: Buffer, opts: HeadOptions = {}): ParsedHead {
  const { startLine, fieldLines } = splitHead(bytes, opts);
  return { startLine, fields: parseFields(fieldLines, opts) };
}

/**
 * The first step of {@link parseHead}: the start line and the field lines,
 * unparsed (a caller that checks the start line before the fields).
 *
 * @throws HeadSyntaxError in strict mode: a NUL byte, a bare CR or LF
 */
export function splitHead(bytes: Buffer, opts: HeadOptions = {}): { startLine: string; fieldLines: string[] } {
  const what = opts.what ?? 'head';
  let text = bytes.toString(opts.encoding ?? 'latin1');
  if (text.endsWith('\r\n\r\n')) text = text.slice(0, -2);
  if (opts.strict && text.includes('\0')) throw new HeadSyntaxError(`${what} contains a NUL byte`);
  const lines = text.split('\r\n');
  if (lines[lines.length - 1] === '') lines.pop();
  if (opts.strict) {
    for (const l of lines) if (/[\r\n]/.test(l)) throw new HeadSyntaxError(`${what} has a bare LF or CR; lines must end with CRLF`);
  }
  const startLine = lines.shift() ?? '';
  return { startLine, fieldLines: lines };
}

/**
 * The second step of {@link parseHead}: field lines as {@link RawHeader}s.
 *
 * @throws HeadSyntaxError in strict mode: more than `maxFields` lines
 *   (`tooMany` set), obs-fold, no colon, a name that is not a token, a
 *   control character or non-UTF-8 bytes in a value
 */
export function parseFields(lines: string[], opts: HeadOptions = {}): RawHeader[] {
  const what = opts.what ?? 'head';
  if (opts.strict && opts.maxFields !== undefined && lines.length > opts.maxFields) {
    throw Object.assign(new HeadSyntaxError(`${what} has ${lines.length} header lines, more than the limit of ${opts.maxFields}`), { tooMany: true });
  }
  const fields: RawHeader[] = [];
  for (const line of lines) {
    const field = opts.strict ? strictField(line, what) : lenientField(line);
    if (field) fields.push(field);
  }
  return fields;
}

function lenientField(line: string): RawHeader | undefined {
  const colon = line.indexOf(':');
  if (colon <= 0) return undefined;
  return [line.slice(0, colon).trim(), line.slice(colon + 1).trim()];
}

function strictField(line: string, what: string): RawHeader {
  if (line[0] === ' ' || line[0] === '\t') throw new HeadSyntaxError(`${what} header line folding (obs-fold) is not accepted`);
  const colon = line.indexOf(':');
  if (colon <= 0) throw new HeadSyntaxError(`${what} header line without a colon: ${JSON.stringify(line.slice(0, 60))}`);
  const name = line.slice(0, colon);
  if (!TOKEN.test(name)) throw new HeadSyntaxError(`${what} header name is not a token: ${JSON.stringify(name.slice(0, 60))}`);
  const value = line.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, '');
  if (!FIELD_VALUE.test(value)) throw new HeadSyntaxError(`${what} header ${name} has a control character in its value`);
  if (!isUtf8(Buffer.from(value, 'latin1'))) throw new HeadSyntaxError(`${what} header ${name} is not valid UTF-8`);
  return [name, value];
}

/** A status line's parts (RFC 9112 §4). */
export interface StatusLine {
  /** `HTTP/1.1` */
  httpVersion: string;
  status: number;
  /** Reason phrase, possibly empty. */
  reason: string;
}

/**
 * Parses a status line `HTTP/x.y NNN reason` (RFC 9112 §4). The protocol
 * version is not checked here (any non-space word): a caller that must
 * refuse versions it does not know checks `httpVersion` itself.
 *
 * @returns the parts, or `undefined` when it is not a status line
 */
export function parseStatusLine(line: string): StatusLine | undefined {
  const m = /^(\S+) (\d{3})(?: (.*))?$/.exec(line);
  return m ? { httpVersion: m[1], status: Number(m[2]), reason: m[3] ?? '' } : undefined;
}

/** A request line's parts (RFC 9112 §3). */
export interface RequestLine {
  method: string;
  /** Request target as sent (origin-form `/path?q`, or absolute-form). */
  target: string;
  httpVersion: string;
}

/**
 * Splits a request line `METHOD target HTTP/x.y` at its two spaces.
 *
 * @returns the parts, or `undefined` when it does not have three parts
 */
export function parseRequestLine(line: string): RequestLine | undefined {
  const parts = line.split(' ');
  if (parts.length !== 3) return undefined;
  const [method, target, httpVersion] = parts;
  return { method, target, httpVersion };
}

/**
 * The name a CGI server gives a header field (RFC 3875 §4.1.18:
 * `HTTP_` + upper case, `-` as `_`), so that `X-Client-IP`,
 * `x-client_ip` and `X_CLIENT_IP` are one field to a CGI or PHP program.
 * Compare names with it to drop every spelling of a field.
 */
export function cgiName(name: string): string {
  return 'HTTP_' + name.toUpperCase().replace(/-/g, '_');
}

/** Header lookup, case-insensitive; the first value or `undefined`. */
export function getHeader(headers: readonly RawHeader[], name: string): string | undefined {
  const n = name.toLowerCase();
  for (const [k, v] of headers) if (k.toLowerCase() === n) return v;
  return undefined;
}

/** The `charset` parameter of a Content-Type value, lower case (`text/html; charset="ISO-8859-1"` → `iso-8859-1`); `undefined` when none (RFC 9110 §8.3.2). */
export function charsetOf(contentType: string | undefined): string | undefined {
  return /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? '')?.[1]?.toLowerCase();
}

/** Header lookup, case-insensitive; every value in order. */
export function getHeaders(headers: readonly RawHeader[], name: string): string[] {
  const n = name.toLowerCase();
  return headers.filter(([k]) => k.toLowerCase() === n).map(([, v]) => v);
}

/** Node's `rawHeaders` (flat `[name, value, name, value…]`) as {@link RawHeader} pairs. */
export function fromRawHeaders(raw: string[]): RawHeader[] {
  const out: RawHeader[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) out.push([raw[i], raw[i + 1]]);
  return out;
}

/** Field lines `Name: value\r\n` of `headers`, in order. */
export function formatFieldLines(headers: readonly RawHeader[]): string {
  let s = '';
  for (const [k, v] of headers) s += `${k}: ${v}\r\n`;
  return s;
}
