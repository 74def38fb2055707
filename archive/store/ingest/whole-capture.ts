/**
 * What the archive checks and computes of a capture record before its
 * capture is decided (docs/storage.md): its two heads parsed
 * (shared/capture-record.ts) and checked (shared/capture-rules.ts
 * `acceptCapture`), its index row derived (index-row.ts), its body's
 * length compared with the embedded Content-Length, and its two digests:
 * the payload digest, SHA-256 of the response body (the row's `digest`,
 * the WARC-Payload-Digest), and the block digest, SHA-256 of the
 * response head and body (the response record's WARC-Block-Digest).
 *
 * A record of at most {@link WHOLE_BYTES} arrives whole in memory, and
 * the event loop only keeps its chunks: the write queue's batch does all
 * of that for all of its whole records in one task of the ingest pool's
 * thread (`capture-checks`, archive/work/tasks.ts; whole-batch.ts), the
 * records packed into one buffer moved to the thread, each fed to the
 * parser in the chunks it arrived in, so that a bad record is refused
 * with the same status and reason as on the event loop. A larger record
 * is parsed, checked and hashed on the event loop as it streams
 * (streamed-capture.ts), with the same functions.
 */
import { createHash } from 'node:crypto';
import { type CaptureHead, CaptureRecordError, CaptureRecordParser, type HeadLimits } from '#shared/capture-record.js';
import { acceptCapture } from '#shared/capture-rules.js';
import { getHeader } from '#shared/http-head.js';
import { UriError } from '#shared/uri.js';
import type { NewMementoRow } from '../index/index-db.js';
import { indexRow } from '../index/index-row.js';

/** Most bytes of a capture record (heads and body) kept whole in memory and checked in the batch's task. */
export const WHOLE_BYTES = 256 * 1024;

/** The limits a capture record is checked against (archive config `max_head_bytes`, `max_headers`, `max_url_length`). */
export interface RecordLimits extends HeadLimits {
  maxUrlLength: number;
}

/**
 * The index row of a capture whose heads are `head` (without archive id,
 * WARC position and digest), when shared/capture-rules.ts accepts them.
 * @throws CaptureRecordError (400) for what those rules refuse; UriError for a URI-R without a urlkey
 */
export function checkedRow(head: CaptureHead, receivedAt: Date, limits: RecordLimits, given?: Date): NewMementoRow {
  const { uriR, datetime } = acceptCapture(head, receivedAt, limits, given);
  return indexRow({
    archiveId: '',
    uriR,
    datetime,
    status: head.response.status,
    responseHeaders: head.response.headers,
    requestHeaders: head.request.headers,
    digest: '',
  });
}

/** Why a body of `length` bytes is not the one the heads declare (the embedded Content-Length, unless 204 or 304), or `null`. */
export function bodyLengthError(head: CaptureHead, length: number): string | null {
  // acceptCapture checked that every Content-Length value is the same number.
  const declared = getHeader(head.response.headers, 'content-length')?.split(',')[0].trim();
  const bodyless = head.response.status === 204 || head.response.status === 304;
  if (declared === undefined || bodyless || Number(declared) === length) return null;
  return `response body is ${length} bytes but the embedded Content-Length says ${Number(declared)}`;
}

/** What crosses to the thread: the records back to back (`bytes`, moved), each one's chunk lengths as received, its dates (ms), the limits. */
export interface PackedRecords {
  bytes: Uint8Array;
  chunks: number[][];
  receivedAt: number[];
  /** The PUT's Memento-Datetime (ms), or `null`. */
  given: (number | null)[];
  limits: RecordLimits;
}

/** A whole record as the thread found it: refused (`status`, one-line `reason`), or its row, head lengths, digests and a body length error. */
export type CheckedRecord =
  | { refused: { status: number; reason: string } }
  | { row: NewMementoRow; requestLength: number; responseLength: number; payload: string; block: string; lengthError: string | null };

/** The whole records of a batch (each its chunks as received, its dates) copied into one buffer of its own (so that it can be moved). */
export function packRecords(records: readonly { chunks: readonly Buffer[]; receivedAt: Date; given?: Date }[], limits: RecordLimits): PackedRecords {
  const chunks = records.map((r) => r.chunks.map((c) => c.length));
  const bytes = new Uint8Array(chunks.flat().reduce((a, b) => a + b, 0));
  let at = 0;
  for (const r of records)
    for (const c of r.chunks) {
      bytes.set(c, at);
      at += c.length;
    }
  return { bytes, chunks, receivedAt: records.map((r) => r.receivedAt.getTime()), given: records.map((r) => r.given?.getTime() ?? null), limits };
}

/** One record of {@link checkPacked}. */
function checkOne(chunks: Buffer[], receivedAt: Date, given: Date | undefined, limits: RecordLimits): CheckedRecord {
  const parser = new CaptureRecordParser(limits);
  const body: Buffer[] = [];
  let row: NewMementoRow | null = null;
  try {
    for (const c of chunks) {
      const out = parser.feed(c);
      if (!row && parser.head) row = checkedRow(parser.head, receivedAt, limits, given);
      if (out.length) body.push(out);
    }
    parser.finish();
  } catch (err) {
    if (err instanceof CaptureRecordError) return { refused: { status: err.status, reason: err.message } };
    if (err instanceof UriError) return { refused: { status: 400, reason: err.message } };
    throw err;
  }
  const head = parser.head!;
  const payload = createHash('sha256');
  const block = createHash('sha256').update(head.responseBytes);
  let length = 0;
  for (const b of body) {
    payload.update(b);
    block.update(b);
    length += b.length;
  }
  row!.digest = 'sha256:' + payload.digest('hex');
  return {
    row: row!,
    requestLength: head.requestBytes.length,
    responseLength: head.responseBytes.length,
    payload: row!.digest,
    block: 'sha256:' + block.digest('hex'),
    lengthError: bodyLengthError(head, length),
  };
}

/**
 * The `capture-checks` task: each record of `input` parsed, checked and
 * hashed as on the event loop, in order.
 * @throws RangeError when the chunk lengths do not add up to the bytes sent
 */
export function checkPacked(input: PackedRecords): CheckedRecord[] {
  const buf = Buffer.from(input.bytes.buffer, input.bytes.byteOffset, input.bytes.byteLength);
  if (input.chunks.flat().reduce((a, b) => a + b, 0) !== buf.length) throw new RangeError('capture-checks: the chunk lengths do not add up to the bytes sent');
  let at = 0;
  return input.chunks.map((lengths, i) => {
    const chunks = lengths.map((n) => buf.subarray(at, (at += n)));
    const given = input.given[i];
    return checkOne(chunks, new Date(input.receivedAt[i]), given === null ? undefined : new Date(given), input.limits);
  });
}

/** Most time the checks of `bytes` of a batch's records may take in the pool's thread, ms: 10 s and 1 s a MiB. */
export const checkDeadlineMs = (bytes: number) => 10_000 + bytes / 1024;
