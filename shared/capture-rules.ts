/**
 * What a capture record must be for the archive to store it (the refusals
 * of docs/capture-record.md), in one place for both daemons: the archive
 * applies these rules to every PUT, and the capture proxy applies the very
 * same rules before it sends one, so that it never sends (nor spools) what
 * the archive would refuse for good.
 */
import { isUtf8 } from 'node:buffer';
import {
  type CapturedRequest,
  type CapturedResponse,
  CaptureRecordError,
  type CaptureHead,
  CaptureRecordParser,
  type HeadLimits,
  serializeCaptureHead,
} from './capture-record.js';
import { parseHttpDate, toEpochSeconds } from './http-date.js';
import { formatFieldLines, getHeader, getHeaders, isToken, type RawHeader } from './http-head.js';
import { checkCaptureTarget, MAX_URI_LENGTH, UriError, uriRFromRequest } from './uri.js';

/** The limits a capture record is checked against (the archive's config). */
export interface CaptureLimits extends HeadLimits {
  /** Longest request target and URI-R, in characters. */
  maxUrlLength: number;
}

export const DEFAULT_CAPTURE_LIMITS: CaptureLimits = { maxHeadBytes: 64 * 1024, maxHeaders: 200, maxUrlLength: MAX_URI_LENGTH };

/** What an acceptable capture's heads give. */
export interface AcceptedCapture {
  uriR: string;
  /** Memento-Datetime, epoch seconds: the response's Date, else the receipt time. */
  datetime: number;
}

/**
 * What says that a request has a body (RFC 9112 §6.1, §6.2, §6.3): any
 * `Transfer-Encoding`, or a `Content-Length` other than 0 (several, or
 * one that is not a number, count as a body too). `null` when there is none.
 *
 * @param headers the request's fields, as parsed (names in any case)
 * @returns the field that says so, as `Name: value` (the value cut to 40 characters)
 */
export function requestBodyOf(headers: readonly RawHeader[]): string | null {
  const te = getHeaders(headers, 'transfer-encoding');
  if (te.length) return `Transfer-Encoding: ${te.join(', ').slice(0, 40)}`;
  const lengths = getHeaders(headers, 'content-length');
  if (lengths.length && !lengths.every((v) => /^\s*0+\s*$/.test(v))) return `Content-Length: ${lengths.join(', ').slice(0, 40)}`;
  return null;
}

// The HTTP-date shape, to tell "names no real instant" (refused) from "not an HTTP-date" (receipt time).
const DATE_SHAPE = /^[A-Za-z]{3}, +\d{1,2}[ -][A-Za-z]{3}[ -]\d{2,4} \d{2}:\d{2}:\d{2} GMT$/;

/**
 * Checks the parsed heads of a capture record and gives its URI-R and
 * Memento-Datetime. Refused, each with a one-line reason (400): a method
 * other than GET (a memento is a GET representation; the record carries no
 * request body); a request that says it had a body ({@link requestBodyOf}:
 * the answer to it is not the URL's representation, and anyone could plant
 * content under a public URL that way); no or two Host headers, or a Host
 * that is not host[:port];
 * a target that {@link checkCaptureTarget} refuses; a 1xx status (interim,
 * not a representation); a Transfer-Encoding in the response head (the
 * body comes without its transfer coding); a Content-Length that is not one
 * number; a Date that has the HTTP-date form but names no real instant, or
 * lies before 1970 or more than a day after `receivedAt`. A Date that is
 * not an HTTP-date at all gives way to `receivedAt`.
 *
 * URI-R: Host + target of the embedded request; `https` when the request
 * carries `X-Forwarded-Proto: https` (which the capture proxy sets itself).
 *
 * `given`: the capture's Memento-Datetime when its sender knows it (a PUT's
 * `Memento-Datetime` header; `memento-archive import` gives the record's
 * WARC-Date): it is used instead of the response's Date, which is then not
 * checked; it must not lie before 1970 or more than a day after `receivedAt`.
 *
 * @throws CaptureRecordError (status 400)
 */
export function acceptCapture(
  head: CaptureHead,
  receivedAt: Date,
  limits: Pick<CaptureLimits, 'maxUrlLength'> = DEFAULT_CAPTURE_LIMITS,
  given?: Date,
): AcceptedCapture {
  const { request, response } = head;
  if (request.method !== 'GET')
    throw new CaptureRecordError(`embedded request method ${request.method} is not archived: a capture is a GET request and its response`);
  const body = requestBodyOf(request.headers);
  if (body !== null)
    throw new CaptureRecordError(
      `embedded request had a body (${body}): what it caused is not the URL's representation; a capture is a GET without a body and its response`,
    );
  const hosts = getHeaders(request.headers, 'host');
  if (hosts.length > 1) throw new CaptureRecordError('embedded request has more than one Host header');
  let uriR: string;
  try {
    checkCaptureTarget(request.target, limits.maxUrlLength);
    const proto = getHeader(request.headers, 'x-forwarded-proto')?.trim().toLowerCase();
    uriR = uriRFromRequest(hosts[0], request.target, proto === 'https' ? 'https' : 'http', limits.maxUrlLength);
  } catch (err) {
    if (err instanceof UriError) throw new CaptureRecordError(err.message);
    throw err;
  }
  if (response.status < 200) throw new CaptureRecordError(`status ${response.status} is an interim response, not a representation to archive`);
  if (getHeader(response.headers, 'transfer-encoding') !== undefined) {
    throw new CaptureRecordError('embedded response has Transfer-Encoding: send the body without its transfer coding (chunked undone) and drop the header');
  }
  const lengths = getHeaders(response.headers, 'content-length')
    .flatMap((v) => v.split(','))
    .map((v) => v.trim());
  if (lengths.some((v) => !/^\d{1,15}$/.test(v)) || new Set(lengths).size > 1) {
    throw new CaptureRecordError(`embedded response Content-Length is not one number: ${JSON.stringify(lengths.join(', ').slice(0, 60))}`);
  }
  if (given) {
    if (!(given.getTime() >= 0 && given.getTime() <= receivedAt.getTime() + 86_400_000))
      throw new CaptureRecordError(`the capture's Memento-Datetime ${JSON.stringify(given.toISOString())} is before 1970 or more than a day ahead`);
    return { uriR, datetime: toEpochSeconds(given) };
  }
  const dateText = getHeader(response.headers, 'date');
  const date = parseHttpDate(dateText);
  if (!date && dateText && DATE_SHAPE.test(dateText.trim()))
    throw new CaptureRecordError(`embedded response Date names no real instant: ${JSON.stringify(dateText.slice(0, 40))}`);
  if (date && (date.getTime() < 0 || date.getTime() > receivedAt.getTime() + 86_400_000)) {
    throw new CaptureRecordError(
      `embedded response Date ${JSON.stringify(dateText!.slice(0, 40))} is before 1970 or more than a day after the archive received it`,
    );
  }
  return { uriR, datetime: toEpochSeconds(date ?? receivedAt) };
}

/**
 * Why the archive would refuse a capture whose heads are `headBytes` (the
 * serialized request and response heads, shared/capture-record.ts), or
 * `null` when it would take it: the head syntax and limits, then
 * {@link acceptCapture}. The capture proxy asks this before it sends.
 */
export function refusalOf(headBytes: Buffer, receivedAt: Date, limits: CaptureLimits = DEFAULT_CAPTURE_LIMITS): CaptureRecordError | null {
  const r = inspectCapture(headBytes, receivedAt, limits);
  return 'refusal' in r ? r.refusal : null;
}

/**
 * As {@link refusalOf}, and for a capture the archive would take, its
 * heads as the archive parses them and what {@link acceptCapture} gives
 * (URI-R, Memento-Datetime): what the capture proxy needs for a
 * conditional PUT's entity tag (status, media type) and datetime.
 */
export function inspectCapture(
  headBytes: Buffer,
  receivedAt: Date,
  limits: CaptureLimits = DEFAULT_CAPTURE_LIMITS,
): { refusal: CaptureRecordError } | { head: CaptureHead; accepted: AcceptedCapture } {
  try {
    const parser = new CaptureRecordParser(limits);
    parser.feed(headBytes);
    parser.finish();
    const head = parser.head!;
    return { head, accepted: acceptCapture(head, receivedAt, limits) };
  } catch (err) {
    if (err instanceof CaptureRecordError) return { refusal: err };
    throw err;
  }
}

// What the fast path of inspectCaptureHeads takes as is; anything else goes through the archive's own parser.
const PLAIN_TARGET = /^[\x21-\x7e]+$/;
const ASCII_VALUE = /^[\t\x20-\x7e]*$/;
const LATIN1_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const EDGE_SPACE = /^[ \t]|[ \t]$/;
const HTTP_VERSION = /^HTTP\/(?:1\.[01]|2(?:\.0)?)$/;

/** True when the archive's strict parser reads `fields` back as they are (no field dropped, renamed or trimmed, no refusal). */
function plainFields(fields: readonly RawHeader[], max: number): boolean {
  if (fields.length > max) return false;
  for (const [name, value] of fields) {
    if (!isToken(name) || EDGE_SPACE.test(value)) return false;
    if (!plainValue(value)) return false;
  }
  return true;
}

/** A field value or reason phrase the strict parser takes: visible ASCII, SP, HTAB, or valid UTF-8 (shared/http-head.ts `isFieldValue`). */
function plainValue(value: string): boolean {
  return ASCII_VALUE.test(value) || (LATIN1_VALUE.test(value) && isUtf8(Buffer.from(value, 'latin1')));
}

/**
 * As {@link inspectCapture} on `serializeCaptureHead(request, response)`
 * (shared/capture-record.ts), and those bytes, for a sender that has the
 * heads as fields rather than bytes (the capture proxy): when every part
 * is one that the archive's strict parser reads back unchanged (a token
 * method and field names; a target of visible ASCII; HTTP/1.0, 1.1 or 2;
 * a status of 100–599; a reason and field values of visible ASCII, SP,
 * HTAB or valid UTF-8, the values without leading or trailing SP or HTAB; at
 * most `maxHeaders` fields per head and `maxHeadBytes` in all), the
 * parse is skipped: its result would be these fields (the returned
 * head shares them with the caller). Anything else is
 * serialized and parsed as the archive parses it, so the verdict and its
 * message are the archive's in every case.
 *
 * @returns the refusal, or the heads, what {@link acceptCapture} gives,
 *   and the bytes of parts 1–6 of the record
 * @throws TypeError when a header name or value holds CR or LF (as
 *   `serializeCaptureHead`)
 */
export function inspectCaptureHeads(
  request: CapturedRequest,
  response: CapturedResponse,
  receivedAt: Date,
  limits: CaptureLimits = DEFAULT_CAPTURE_LIMITS,
): { refusal: CaptureRecordError; bytes: Buffer } | { head: CaptureHead; accepted: AcceptedCapture; bytes: Buffer } {
  const plain =
    isToken(request.method) &&
    PLAIN_TARGET.test(request.target) &&
    HTTP_VERSION.test(request.httpVersion) &&
    HTTP_VERSION.test(response.httpVersion) &&
    Number.isInteger(response.status) &&
    response.status >= 100 &&
    response.status <= 599 &&
    plainValue(response.reason) &&
    plainFields(request.headers, limits.maxHeaders) &&
    plainFields(response.headers, limits.maxHeaders);
  if (!plain) {
    const bytes = serializeCaptureHead(request, response);
    return { ...inspectCapture(bytes, receivedAt, limits), bytes };
  }
  const requestText = `${request.method} ${request.target} ${request.httpVersion}\r\n${formatFieldLines(request.headers)}\r\n`;
  const responseText = `${response.httpVersion} ${response.status}${response.reason ? ' ' + response.reason : ''}\r\n${formatFieldLines(response.headers)}\r\n`;
  const bytes = Buffer.from(requestText + responseText, 'latin1');
  if (bytes.length > limits.maxHeadBytes) return { ...inspectCapture(bytes, receivedAt, limits), bytes };
  // (The parse would give these very fields: the head shares them with the caller.)
  const head: CaptureHead = {
    request,
    response,
    requestBytes: bytes.subarray(0, requestText.length),
    responseBytes: bytes.subarray(requestText.length),
  };
  try {
    return { head, accepted: acceptCapture(head, receivedAt, limits), bytes };
  } catch (err) {
    if (err instanceof CaptureRecordError) return { refusal: err, bytes };
    throw err;
  }
}
