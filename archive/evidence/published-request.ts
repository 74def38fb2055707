/**
 * What the archive publishes of a capture's `request` record: nothing by
 * default. The stored request record holds what a visitor sent (the
 * `X-Client-IP` the proxy adds with `EnableIP: On`, `User-Agent`,
 * `Referer`, cookie names, whatever else the browser said); it stays in
 * the WARC files for the operator, and no read path serves or exports it
 * (docs/threat-model.md "What a visitor's data becomes").
 *
 * With `publish_requests: true` an archive publishes, on `/record` and in
 * WACZ packages, a new request record made from the stored one
 * ({@link publishedRequest}): the request line and the fields of
 * {@link PUBLISHED_REQUEST_FIELDS} only (an allow-list: a field a browser
 * adds next year stays private), digests computed over its own block.
 * The stored record is not changed, and the evidence log commits to the
 * memento's response (or revisit) record, never to a request record, so
 * proofs are the same either way.
 */
import { createHash } from 'node:crypto';
import { parseHead } from '#shared/http-head.js';

/**
 * The request fields a published request record keeps (lower case), in
 * the order they had. `host` names the URI-R; `accept`,
 * `accept-encoding` and `accept-language` chose the representation the
 * site sent (RFC 9110 §12.5: proactive negotiation; a response's `Vary`
 * names them), so a reader needs them to know why the memento is this
 * variant; `x-forwarded-proto` is the capture proxy's, not the
 * visitor's (the connection was TLS). Every other field — `User-Agent`,
 * `Referer`, `Cookie`, `Authorization`, `X-Client-IP`, `X-Forwarded-For`,
 * `Forwarded`, `Via`, conditional and client-hint fields — identifies
 * or describes the visitor, and stays out.
 */
export const PUBLISHED_REQUEST_FIELDS: ReadonlySet<string> = new Set(['host', 'accept', 'accept-encoding', 'accept-language', 'x-forwarded-proto']);

const CRLF = '\r\n';
const CRLFCRLF = Buffer.from('\r\n\r\n');
/** SHA-256 of no bytes: the payload digest of a request without a body. */
const EMPTY_SHA256 = 'sha256:' + createHash('sha256').digest('hex');

/**
 * A name-based record id for the published request record of the stored
 * request record `storedId`: a UUID (RFC 9562 version 8) made of the
 * first 16 bytes of SHA-256 of a fixed label and `storedId`, so that each
 * read gives the same id and the stored (private) id cannot be read back
 * from it.
 */
export function publishedRecordId(storedId: string): string {
  const b = createHash('sha256').update('memento-archive published request record\n').update(storedId).digest().subarray(0, 16);
  b[6] = (b[6] & 0x0f) | 0x80;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = b.toString('hex');
  return `<urn:uuid:${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}>`;
}

/**
 * The published form of a stored request record (WARC 1.1 §6.5): a new
 * `WARC/1.1` `request` record with the stored record's `WARC-Date` and
 * `WARC-Target-URI`, `WARC-Concurrent-To` naming `concurrentTo` (the
 * memento's own record id), the id {@link publishedRecordId}, and as its
 * block the HTTP request line and the {@link PUBLISHED_REQUEST_FIELDS}
 * fields of the stored block's head (no body: a captured request has
 * none), its `WARC-Block-Digest` and `WARC-Payload-Digest` SHA-256 over
 * that block and payload.
 *
 * @param stored the stored request record, uncompressed (WARC header, block, CRLF CRLF)
 * @param concurrentTo the `WARC-Record-ID` of the memento's response or revisit record, with its angle brackets
 * @returns the record's bytes, uncompressed; `undefined` when `stored` is not a whole request record with an HTTP head
 */
export function publishedRequest(stored: Buffer, concurrentTo: string): Buffer | undefined {
  const headEnd = stored.indexOf(CRLFCRLF);
  if (headEnd < 0) return undefined;
  const warc = parseHead(stored.subarray(0, headEnd + 4));
  const field = (name: string) => warc.fields.find(([k]) => k.toLowerCase() === name)?.[1].trim();
  const length = Number(field('content-length'));
  const [date, uri] = [field('warc-date'), field('warc-target-uri')];
  if (!/^WARC\/1\.[01]$/.test(warc.startLine) || field('warc-type') !== 'request' || !Number.isSafeInteger(length) || !date || !uri) return undefined;
  const block = stored.subarray(headEnd + 4, headEnd + 4 + length);
  const httpEnd = block.indexOf(CRLFCRLF);
  if (block.length !== length || httpEnd < 0) return undefined;
  const http = parseHead(block.subarray(0, httpEnd + 4));
  const kept = http.fields.filter(([k]) => PUBLISHED_REQUEST_FIELDS.has(k.toLowerCase()));
  const newBlock = Buffer.from(http.startLine + CRLF + kept.map(([k, v]) => `${k}: ${v}${CRLF}`).join('') + CRLF, 'latin1');
  const header = [
    'WARC/1.1',
    'WARC-Type: request',
    `WARC-Record-ID: ${publishedRecordId(field('warc-record-id') ?? '')}`,
    `WARC-Date: ${date}`,
    `WARC-Target-URI: ${uri}`,
    `WARC-Concurrent-To: ${concurrentTo}`,
    'Content-Type: application/http; msgtype=request',
    `WARC-Payload-Digest: ${EMPTY_SHA256}`,
    `WARC-Block-Digest: sha256:${createHash('sha256').update(newBlock).digest('hex')}`,
    `Content-Length: ${newBlock.length}`,
  ];
  return Buffer.concat([Buffer.from(header.join(CRLF) + CRLF + CRLF, 'latin1'), newBlock, CRLFCRLF]);
}
