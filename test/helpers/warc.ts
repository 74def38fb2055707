/**
 * WARC records written byte by byte for the import tests (WARC 1.1 §4): a
 * version line, named fields, Content-Length, the block, CRLF CRLF;
 * optionally one gzip member per record. Hand-made rather than through a
 * WARC library, so that a test controls every byte (heads exactly as a
 * crawler wrote them, chunked bodies, a wrong digest, a cut file).
 */
import { createHash, randomUUID } from 'node:crypto';
import zlib from 'node:zlib';
import { base32 } from '../../archive/store/warcs/warc-scan.js';

/** `sha1:<BASE32>`, the digest form of wget and Heritrix (the base32 of warc-scan.ts, which the wget WARCs of the e2e import test check against a real crawler). */
export function sha1Digest(data: Buffer | string): string {
  return 'sha1:' + base32(createHash('sha1').update(data).digest());
}

/** A new `<urn:uuid:…>` record id. */
export const recordId = () => `<urn:uuid:${randomUUID()}>`;

export interface RecordOptions {
  /** `WARC/1.0` or `WARC/1.1` (default 1.1). */
  version?: string;
  /** Add `WARC-Block-Digest` (sha1) computed over the block (default true); a string states that digest instead. */
  blockDigest?: boolean | string;
}

/** One WARC record: `fields` (WARC-Type, WARC-Record-ID… as given), then Content-Length and WARC-Block-Digest, then the block. */
export function warcRecord(fields: [string, string][], block: Buffer | string, opts: RecordOptions = {}): Buffer {
  const body = Buffer.isBuffer(block) ? block : Buffer.from(block, 'latin1');
  const all = [...fields];
  if (opts.blockDigest !== false) all.push(['WARC-Block-Digest', typeof opts.blockDigest === 'string' ? opts.blockDigest : sha1Digest(body)]);
  all.push(['Content-Length', String(body.length)]);
  const head = `${opts.version ?? 'WARC/1.1'}\r\n${all.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), body, Buffer.from('\r\n\r\n')]);
}

/** The records as a file's bytes: concatenated, or one gzip member each. */
export function warcFile(records: Buffer[], gzip: boolean): Buffer {
  return Buffer.concat(gzip ? records.map((r) => zlib.gzipSync(r)) : records);
}

/** An HTTP response message (`HTTP/1.1 <status>`, headers as given, body). */
export function httpResponse(status: string, headers: [string, string][], body: Buffer | string = ''): Buffer {
  const b = Buffer.isBuffer(body) ? body : Buffer.from(body);
  return Buffer.concat([Buffer.from(`HTTP/1.1 ${status}\r\n${headers.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`, 'latin1'), b]);
}

/** An HTTP GET request head for `uri` (Host from it) with extra headers. */
export function httpRequest(uri: string, headers: [string, string][] = [], method = 'GET'): Buffer {
  const u = new URL(uri);
  return Buffer.from(`${method} ${u.pathname}${u.search} HTTP/1.1\r\nHost: ${u.host}\r\n${headers.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`, 'latin1');
}

/** A response record and its request record (request first, as wget writes them, or after, as Heritrix does). */
export function exchange(
  uri: string,
  date: string,
  response: Buffer,
  opts: { request?: Buffer; requestFirst?: boolean; id?: string; payloadDigest?: string; version?: string } = {},
): { records: Buffer[]; id: string } {
  const resId = opts.id ?? recordId();
  const reqId = recordId();
  const split = response.indexOf('\r\n\r\n') + 4;
  const res = warcRecord(
    [
      ['WARC-Type', 'response'],
      ['WARC-Record-ID', resId],
      ['WARC-Date', date],
      ['WARC-Target-URI', uri],
      ['Content-Type', 'application/http; msgtype=response'],
      ['WARC-Payload-Digest', opts.payloadDigest ?? sha1Digest(response.subarray(split))],
      ...(opts.requestFirst ? ([['WARC-Concurrent-To', reqId]] as [string, string][]) : []),
    ],
    response,
    { version: opts.version },
  );
  const req = warcRecord(
    [
      ['WARC-Type', 'request'],
      ['WARC-Record-ID', reqId],
      ['WARC-Date', date],
      ['WARC-Target-URI', uri],
      ['Content-Type', 'application/http; msgtype=request'],
      ...(opts.requestFirst ? [] : ([['WARC-Concurrent-To', resId]] as [string, string][])),
    ],
    opts.request ?? httpRequest(uri),
    { version: opts.version },
  );
  return { records: opts.requestFirst ? [req, res] : [res, req], id: resId };
}
