/**
 * A memento's WARC records as `/<id>/record/<ts>/<URI-R>` serves them
 * (archive/http/record.ts), for anyone to check its entry in the log
 * (docs/evidence.md): its own record — the `response` record (or, for a
 * revisit, the `revisit` record) — gunzipped from its gzip member (WARC
 * 1.1 §9: one member per record).
 *
 * The `request` record captured with it holds what the visitor sent and
 * is never served (archive/evidence/published-request.ts). Only an
 * archive with `publish_requests: true` adds a request record, made anew
 * from the stored one with the allowed fields only, after the memento's.
 * To find the stored one: the index knows where the memento's own record
 * is (file, offset and length of its gzip member), not where its request
 * record is. This archive writes the request record right after its
 * response (WARC 1.1 §5.7, linked by `WARC-Concurrent-To`); WARC files of
 * other tools put it right before. Both places are looked at, a bounded
 * number of bytes each, and a record there is taken only when it is a
 * `request` linked to the memento's record by `WARC-Concurrent-To`
 * (either way round). A memento without one (a WARC file of another tool
 * that kept none) gets its own record alone.
 */
import zlib from 'node:zlib';
import { getHeader, getHeaders, parseHead, type RawHeader } from '#shared/http-head.js';
import { publishedRequest } from './published-request.js';
import type { MementoRow } from '../read/rows.js';
import { gunzipOf } from '../store/warcs/warc-reader.js';
import type { WarcStore } from '../store/warcs/warc-store.js';

const CRLFCRLF = Buffer.from('\r\n\r\n');
/** Bytes read after (and before) the memento's record to find its request record first: a request record is a few hundred bytes. */
const NEAR = 64 * 1024;
/** …and at most this many, for a request record with a long head (as long as the longest HTTP head a WARC scan accepts). */
const FAR = 1024 * 1024 + NEAR;
/** Longest WARC header block looked at. */
const MAX_WARC_HEAD = 64 * 1024;
/** Longest request record inflated. */
const MAX_REQUEST_RECORD = 4 * 1024 * 1024;

/** A WARC record's header block: version line and named fields (WARC 1.1 §4). */
interface WarcHead {
  version: string;
  fields: RawHeader[];
}

/** The header block at the start of an inflated record, or `undefined` when `rec` does not start with a whole one. */
function warcHead(rec: Buffer): WarcHead | undefined {
  const end = rec.indexOf(CRLFCRLF);
  if (end < 0 || end > MAX_WARC_HEAD) return undefined;
  try {
    const { startLine, fields } = parseHead(rec.subarray(0, end + 4));
    return /^WARC\/1\.[01]$/.test(startLine) ? { version: startLine, fields } : undefined;
  } catch {
    return undefined;
  }
}

/** Where the deflate data of the gzip member at `buf[at]` starts (RFC 1952 §2.3), or `undefined` when no gzip header is there. */
function gzipDataStart(buf: Buffer, at: number): number | undefined {
  if (buf.length < at + 10 || buf[at] !== 0x1f || buf[at + 1] !== 0x8b || buf[at + 2] !== 8) return undefined;
  const flags = buf[at + 3];
  let pos = at + 10;
  if (flags & 4) pos = buf.length >= pos + 2 ? pos + 2 + buf.readUInt16LE(pos) : Infinity; // FEXTRA
  for (const bit of [8, 16]) if (flags & bit && pos < buf.length) pos = buf.indexOf(0, pos) < 0 ? Infinity : buf.indexOf(0, pos) + 1; // FNAME, FCOMMENT
  if (flags & 2) pos += 2; // FHCRC
  return pos <= buf.length ? pos : undefined;
}

/** The first bytes of the record in the gzip member at `buf[at]` (inflated from its first KiB at most), to read its WARC header. */
function peek(buf: Buffer, at: number): Buffer | undefined {
  const start = gzipDataStart(buf, at);
  if (start === undefined) return undefined;
  try {
    return zlib.inflateRawSync(buf.subarray(start, start + 1024), { finishFlush: zlib.constants.Z_SYNC_FLUSH });
  } catch {
    return undefined;
  }
}

/**
 * The gzip member starting at `buf[at]` when all of it is in `buf`: its
 * length in bytes and the record it inflates to (CRC-32 and size checked,
 * RFC 1952); `undefined` otherwise.
 */
export function memberAt(buf: Buffer, at: number): { length: number; record: Buffer } | undefined {
  const start = gzipDataStart(buf, at);
  if (start === undefined) return undefined;
  try {
    const r = zlib.inflateRawSync(buf.subarray(start), { info: true, maxOutputLength: MAX_REQUEST_RECORD }) as unknown as {
      engine: { bytesWritten: number };
    };
    const end = start + r.engine.bytesWritten + 8;
    if (end > buf.length) return undefined;
    return { length: end - at, record: zlib.gunzipSync(buf.subarray(at, end)) };
  } catch {
    return undefined;
  }
}

/** True when `req` is the `request` record of the record `res` (WARC 1.1 §5.7 `WARC-Concurrent-To`, either way round). */
function isRequestOf(req: WarcHead, res: WarcHead): boolean {
  if (getHeader(req.fields, 'warc-type') !== 'request') return false;
  const resId = getHeader(res.fields, 'warc-record-id');
  const reqId = getHeader(req.fields, 'warc-record-id');
  return (!!resId && getHeaders(req.fields, 'warc-concurrent-to').includes(resId)) || (!!reqId && getHeaders(res.fields, 'warc-concurrent-to').includes(reqId));
}

/** The request record right after the memento's record (`after`: the byte after its gzip member), or `undefined`. */
async function requestAfter(warcs: WarcStore, file: string, after: number, res: WarcHead): Promise<Buffer | undefined> {
  let buf = await warcs.readAt(file, after, NEAR);
  const head = warcHead(peek(buf, 0) ?? Buffer.alloc(0));
  if (!head || !isRequestOf(head, res)) return undefined;
  let m = memberAt(buf, 0);
  if (!m && buf.length === NEAR) {
    buf = await warcs.readAt(file, after, FAR);
    m = memberAt(buf, 0);
  }
  return m?.record;
}

/**
 * The request record right before the memento's record at `offset`, or
 * `undefined`: the gzip member that ends exactly at `offset`, found among
 * the gzip headers of the {@link NEAR} bytes before it, nearest first.
 */
async function requestBefore(warcs: WarcStore, file: string, offset: number, res: WarcHead): Promise<Buffer | undefined> {
  const from = Math.max(0, offset - NEAR);
  const buf = await warcs.readAt(file, from, offset - from);
  for (let at = buf.lastIndexOf(0x1f, buf.length - 10); at >= 0; at = at > 0 ? buf.lastIndexOf(0x1f, at - 1) : -1) {
    if (buf[at + 1] !== 0x8b || buf[at + 2] !== 8) continue;
    const m = memberAt(buf, at);
    if (!m || at + m.length !== buf.length) continue;
    const head = warcHead(m.record);
    return head && isRequestOf(head, res) ? m.record : undefined;
  }
  return undefined;
}

/**
 * The memento's own record, streamed inflated from its gzip member, with
 * its WARC header read first. @throws when the member does not hold a WARC
 * `response` or `revisit` record.
 */
async function openOwnRecord(warcs: WarcStore, row: MementoRow): Promise<{ head: WarcHead; body: AsyncGenerator<Buffer>; close(): void }> {
  const { gunzip, close } = gunzipOf(await warcs.stream(row.warc_file, row.warc_offset, row.warc_length));
  const it = gunzip[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const first: Buffer[] = [];
  let got = 0;
  let head: WarcHead | undefined;
  try {
    while (!head && got <= MAX_WARC_HEAD) {
      const { value, done } = await it.next();
      if (done) break;
      first.push(value);
      got += value.length;
      head = warcHead(first.length === 1 ? first[0] : Buffer.concat(first));
    }
  } catch (err) {
    close();
    throw err;
  }
  const type = head && getHeader(head.fields, 'warc-type');
  if (!head || (type !== 'response' && type !== 'revisit')) {
    close();
    throw new Error(`no WARC response or revisit record at ${row.warc_file}:${row.warc_offset}`);
  }
  async function* body(): AsyncGenerator<Buffer> {
    try {
      yield* first;
      for (;;) {
        const { value, done } = await it.next();
        if (done) return;
        yield value;
      }
    } finally {
      close();
    }
  }
  return { head, body: body(), close };
}

/**
 * The memento's WARC records as served, uncompressed: its own record
 * (`response` or `revisit`) as stored; with `publishRequests`, then the
 * published form of the `request` record beside it, when there is one
 * (published-request.ts). `close` lets go of the file when the records are
 * not read to the end.
 */
export async function mementoRecords(warcs: WarcStore, row: MementoRow, publishRequests: boolean): Promise<{ records: AsyncGenerator<Buffer>; close(): void }> {
  const own = await openOwnRecord(warcs, row);
  let request: Buffer | undefined;
  try {
    if (publishRequests) {
      request =
        (await requestAfter(warcs, row.warc_file, row.warc_offset + row.warc_length, own.head)) ??
        (await requestBefore(warcs, row.warc_file, row.warc_offset, own.head));
    }
  } catch (err) {
    own.close();
    throw err;
  }
  const ownId = getHeader(own.head.fields, 'warc-record-id') ?? '';
  const published = request && publishedRequest(request, ownId);
  async function* records(): AsyncGenerator<Buffer> {
    yield* own.body;
    if (published) yield published;
  }
  return { records: records(), close: own.close };
}
