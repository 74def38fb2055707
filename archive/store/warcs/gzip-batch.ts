/**
 * The gzip of a write batch's records in a work pool's thread (the
 * `gzip-records` task, archive/work/tasks.ts), so that the event loop only
 * builds the records and appends the members: the records of the batch
 * packed into one buffer that is moved to the thread (not copied), each
 * gzipped there into its own member (warc-writer.ts `gzipRecord`, the same
 * bytes as in this thread), and the members packed into one buffer moved
 * back. One message each way per batch.
 */
import { type EncodedPair, gzipRecord, type RawPair } from './warc-writer.js';

/** What crosses to the thread: the records' bytes back to back, each record's length, the zlib level (1 … 9). */
export interface PackedRecords {
  bytes: Uint8Array;
  lengths: number[];
  level: number;
}

/** What comes back: the gzip members back to back (`body`, moved), each member's length, in the records' order. */
export interface PackedMembers {
  body: Uint8Array;
  lengths: number[];
}

/** Each pair's response record then its request record, copied into one buffer of its own (so that it can be moved). */
export function packRecords(pairs: readonly RawPair[], level: number): PackedRecords {
  const lengths: number[] = [];
  for (const p of pairs) {
    let n = 0;
    for (const part of p.response) n += part.length;
    lengths.push(n, p.request.length);
  }
  const bytes = new Uint8Array(lengths.reduce((a, b) => a + b, 0));
  let at = 0;
  for (const p of pairs)
    for (const part of [...p.response, p.request]) {
      bytes.set(part, at);
      at += part.length;
    }
  return { bytes, lengths, level };
}

/** The `gzip-records` task: each record of `input` its own gzip member. @throws RangeError when the lengths do not add up to the bytes */
export function gzipPacked(input: PackedRecords): PackedMembers {
  const buf = Buffer.from(input.bytes.buffer, input.bytes.byteOffset, input.bytes.byteLength);
  if (input.lengths.reduce((a, b) => a + b, 0) !== buf.length) throw new RangeError('gzip-records: the record lengths do not add up to the bytes sent');
  const members: Buffer[] = [];
  let at = 0;
  for (const n of input.lengths) {
    members.push(gzipRecord(buf.subarray(at, at + n), input.level));
    at += n;
  }
  const body = new Uint8Array(members.reduce((a, m) => a + m.length, 0));
  at = 0;
  for (const m of members) {
    body.set(m, at);
    at += m.length;
  }
  return { body, lengths: members.map((m) => m.length) };
}

/** The pairs of {@link packRecords}, their members taken from `out` in order. @throws RangeError when `out` does not hold two members per pair */
export function unpackMembers(pairs: readonly RawPair[], out: PackedMembers): EncodedPair[] {
  if (out.lengths.length !== pairs.length * 2) throw new RangeError('gzip-records: not two members per record pair');
  const body = Buffer.from(out.body.buffer, out.body.byteOffset, out.body.byteLength);
  let at = 0;
  const next = (n: number) => body.subarray(at, (at += n));
  return pairs.map((p, i) => ({
    response: next(out.lengths[2 * i]),
    request: next(out.lengths[2 * i + 1]),
    recordId: p.recordId,
    blockDigest: p.blockDigest,
  }));
}
