/**
 * A memento's WARC records as stored, for a WACZ package: its own record
 * (`response`, or `revisit`), copied unchanged, and where the archive
 * publishes requests (`publish_requests`) the published form of the
 * `request` record the archive writes right after it (WARC 1.1 §5.7,
 * linked by `WARC-Concurrent-To`; archive/evidence/published-request.ts),
 * each one gzip member (WARC 1.1 §9).
 */
import { OperatorError } from '#shared/operator-error.js';
import { createReadStream } from 'node:fs';
import { once } from 'node:events';
import { open } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import zlib from 'node:zlib';
import { publishedRequest } from '../evidence/published-request.js';
import { type ScannedRecord, scanWarcFile } from '../store/warcs/warc-scan.js';

/** Longest request record (gzip member) published; a longer one is left out. */
const MAX_REQUEST_MEMBER = 1024 * 1024;

/** A gzip member in a WARC file: byte offset and length. */
export interface Member {
  offset: number;
  length: number;
}

/** A memento's records in its WARC file. */
export interface MementoRecords {
  /** Its own record's member (where the index row points). */
  own: Member;
  /** The member of the request record that names it, when that record follows it; `null` when none does. */
  request: Member | null;
  /** `WARC-Record-ID` of its own record, with the angle brackets. */
  recordId: string;
}

/** The records at an index row's place are not what the row says, or are damaged: the file and offset, and why. */
export class RecordDamage extends OperatorError {}

/**
 * Reads the memento's own record at `offset` in `file` (checked whole:
 * gzip CRC-32, Content-Length, `WARC-Block-Digest` and, for a response,
 * `WARC-Payload-Digest`) and the record after it, which is its request
 * record when it is a `request` naming it by `WARC-Concurrent-To`.
 *
 * @param file the WARC file's path
 * @param length the gzip member's length as the index has it
 * @throws RecordDamage when there is no intact response or revisit record of that length there
 */
export async function mementoRecords(file: string, offset: number, length: number): Promise<MementoRecords> {
  const fail = (why: string) => new RecordDamage(`${file}:${offset}: ${why}`);
  const scan = scanWarcFile(file, offset);
  try {
    const first = await scan.next();
    if (first.done) throw fail('the file ends there');
    if (first.value.kind !== 'record') throw fail(first.value.reason);
    const own: ScannedRecord = first.value.record;
    if (own.length !== length) throw fail(`the record there is ${own.length} bytes, the index says ${length}`);
    if (own.type !== 'response' && own.type !== 'revisit') throw fail(`a ${own.type} record, not a response or revisit record`);
    if (own.blockDigestOk === false || own.payloadDigestOk === false) throw fail('the record does not match its digests (run verify)');
    const recordId = own.headers.get('warc-record-id') ?? '';
    const next = await scan.next();
    let request: Member | null = null;
    if (!next.done && next.value.kind === 'record') {
      const r = next.value.record;
      const names = (r.headers.get('warc-concurrent-to') ?? '').split(',').map((s) => s.trim());
      if (r.type === 'request' && recordId && names.includes(recordId)) request = { offset: r.offset, length: r.length };
    }
    return { own: { offset, length }, request, recordId };
  } finally {
    await scan.return(undefined);
  }
}

/**
 * Writes the bytes `[m.offset, m.offset + m.length)` of `file` to `out`
 * as they are, waiting when `out` is full.
 * @throws when the file is shorter, or `out` fails
 */
export async function copyMember(file: string, m: Member, out: Writable): Promise<void> {
  let got = 0;
  for await (const chunk of createReadStream(file, { start: m.offset, end: m.offset + m.length - 1, highWaterMark: 256 * 1024 })) {
    got += (chunk as Buffer).length;
    if (!out.write(chunk)) await once(out, 'drain');
  }
  if (got !== m.length) throw new RecordDamage(`${file}:${m.offset}: the file ends inside the record (${got} of ${m.length} bytes)`);
}

/**
 * The published form of the request record in member `m` of `file`
 * (published-request.ts), gzipped as one member, for the memento whose
 * own record is `recordId`; `null` when it is longer than
 * {@link MAX_REQUEST_MEMBER} or not a request record with an HTTP head.
 * @throws when the file cannot be read, or the member is not gzip
 */
export async function publishedRequestMember(file: string, m: Member, recordId: string): Promise<Buffer | null> {
  if (m.length > MAX_REQUEST_MEMBER) return null;
  const fh = await open(file, 'r');
  let member: Buffer;
  try {
    const { buffer, bytesRead } = await fh.read(Buffer.alloc(m.length), 0, m.length, m.offset);
    member = buffer.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
  const published = publishedRequest(zlib.gunzipSync(member, { maxOutputLength: 4 * MAX_REQUEST_MEMBER }), recordId);
  return published ? zlib.gzipSync(published) : null;
}
