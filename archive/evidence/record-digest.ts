/**
 * A memento's own WARC record (a `response` or `revisit` record, one gzip
 * member, WARC 1.1 §9) read back as stored and hashed, streamed in bounded
 * memory: its WARC header's named fields, the SHA-256 of its block (what
 * its evidence log entry's digest is, archive/evidence/leaf.ts) and, for
 * a response record, of its payload (the HTTP body after the response
 * head: its `WARC-Payload-Digest`, and the index row's digest). Used where
 * the archive checks a record it would serve against the log (the
 * "Verify this capture" page, banner-check.ts), and to read the record id
 * of a revisit's original (store.ts, `verify`).
 */
import { createHash } from 'node:crypto';
import { getHeader, parseHead, type RawHeader } from '#shared/http-head.js';
import { gunzipOf } from '../store/warcs/warc-reader.js';
import type { WarcStore } from '../store/warcs/warc-store.js';
import type { RecordForLeaf } from './leaf.js';

const CRLFCRLF = Buffer.from('\r\n\r\n');
/** Longest WARC header block read (the URI-R twice, for a revisit, and a few short fields). */
const MAX_WARC_HEAD = 64 * 1024;
/** Longest HTTP response head looked for at the start of a response record's block. */
const MAX_HTTP_HEAD = 1024 * 1024;

/** What a record holds, as read. */
export interface RecordDigest extends RecordForLeaf {
  /** The WARC header's named fields, values as UTF-8. */
  fields: RawHeader[];
  /** The block's length as its `Content-Length` says. */
  blockLength: number;
  /** `sha256:<hex>` of the block as read (the record's first `blockLength` bytes after its WARC header); `''` when only the head was read. */
  blockDigest: string;
  /** A response record's `sha256:<hex>` of its payload (after the HTTP head); `null` for a revisit record, or when only the head was read. */
  payloadDigest: string | null;
  /** Block bytes read: `blockLength` when the record is whole. */
  blockRead: number;
}

/** The record at a place cannot be read as a response or revisit record: where and why, one line. */
export class RecordUnreadable extends Error {}

/**
 * Reads the record whose gzip member is `length` bytes at `offset` of
 * `file` in `warcs`, streamed: its WARC header and, unless `headOnly`,
 * the SHA-256 of its block and (a response) of its payload.
 * @throws RecordUnreadable when the member does not inflate, holds no WARC
 *   header within 64 KiB, or is not a response or revisit record; the
 *   store's error when the file is missing
 */
export async function digestRecord(warcs: WarcStore, file: string, offset: number, length: number, opts: { headOnly?: boolean } = {}): Promise<RecordDigest> {
  const where = `${file}:${offset}`;
  const { gunzip, close } = gunzipOf(await warcs.stream(file, offset, length));
  try {
    let head: Buffer = Buffer.alloc(0);
    let rest: Buffer | undefined;
    const it = gunzip[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    const next = async (): Promise<Buffer | undefined> => {
      try {
        const r = await it.next();
        return r.done ? undefined : r.value;
      } catch (err) {
        throw new RecordUnreadable(`${where}: the gzip member does not inflate (${(err as Error).message})`);
      }
    };
    while (!rest) {
      const c = await next();
      if (!c) throw new RecordUnreadable(`${where}: the record ends before its WARC header does`);
      head = Buffer.concat([head, c]);
      const end = head.indexOf(CRLFCRLF);
      if (end >= 0) {
        rest = head.subarray(end + 4);
        head = head.subarray(0, end + 4);
      } else if (head.length > MAX_WARC_HEAD) throw new RecordUnreadable(`${where}: no WARC header within ${MAX_WARC_HEAD} bytes`);
    }
    const { startLine, fields } = parseHead(head, { encoding: 'utf8' });
    const type = getHeader(fields, 'warc-type') ?? '';
    const blockLength = Number(getHeader(fields, 'content-length') ?? NaN);
    if (!/^WARC\/1\.[01]$/.test(startLine) || (type !== 'response' && type !== 'revisit') || !Number.isSafeInteger(blockLength) || blockLength < 0)
      throw new RecordUnreadable(`${where}: not a WARC response or revisit record`);
    const field = (name: string) => getHeader(fields, name);
    if (opts.headOnly) return { type, fields, field, blockLength, blockDigest: '', payloadDigest: null, blockRead: 0 };
    const block = createHash('sha256');
    const payload = type === 'response' ? createHash('sha256') : null;
    let read = 0;
    // The response's HTTP head, while its end is not found yet (only the payload after it is hashed as the payload).
    let httpHead: Buffer | null = payload ? Buffer.alloc(0) : null;
    for (let c: Buffer | undefined = rest; c; c = await next()) {
      const part = c.subarray(0, Math.max(0, blockLength - read));
      read += part.length;
      block.update(part);
      if (payload && httpHead) {
        const seen = Buffer.concat([httpHead, part]);
        const end = seen.indexOf(CRLFCRLF);
        if (end >= 0) {
          payload.update(seen.subarray(end + 4));
          httpHead = null;
        } else if (seen.length > MAX_HTTP_HEAD) throw new RecordUnreadable(`${where}: no HTTP head within ${MAX_HTTP_HEAD} bytes of the block`);
        else httpHead = seen;
      } else payload?.update(part);
      if (read >= blockLength) break;
    }
    return {
      type,
      fields,
      field,
      blockLength,
      blockDigest: 'sha256:' + block.digest('hex'),
      payloadDigest: payload && !httpHead ? 'sha256:' + payload.digest('hex') : null,
      blockRead: read,
    };
  } finally {
    close();
  }
}
