/**
 * A capture of the write queue (store.ts) and how its batch appends it:
 * the records of a body whole in memory built here, uncompressed, for the
 * batch to gzip in one task of the ingest pool's thread
 * (warcs/gzip-batch.ts); a larger body streamed by the appender.
 */
import type { CaptureHead } from '#shared/capture-record.js';
import type { Via } from '../../evidence/leaf.js';
import type { ArchiveSpan } from '../../spans.js';
import type { MementoRow, NewMementoRow } from '../index/index-db.js';
import type { IngestResult } from '../store-types.js';
import { type CapturePair, ONE_SHOT, pairRecords, type RawPair, revisitRecords } from '../warcs/warc-writer.js';
import type { BodySpill } from './body-spill.js';

/** A capture in the write queue, its PUT waiting for the batch's answer. */
export interface PendingCapture {
  archive: ArchiveSpan;
  row: NewMementoRow;
  head: CaptureHead;
  body: BodySpill;
  /** `sha256:<hex>` of the response head + body: the response record's WARC-Block-Digest. */
  blockDigest: string;
  revisitOf?: MementoRow;
  /** How it came in (leaf.ts `Via`). */
  via: Via;
  resolve: (r: Omit<IngestResult, 'bytes'>) => void;
  reject: (e: unknown) => void;
}

/** A capture of a batch to append: its records uncompressed when its body is whole in memory (else streamed), and the original of a revisit. */
export interface Plan {
  p: PendingCapture;
  found?: { row: MementoRow; recordId: string };
  raw?: RawPair;
}

/** What the WARC writer needs of a capture besides its body. */
function recordOf(p: PendingCapture) {
  return {
    uriR: p.row.uri_r,
    datetime: new Date(p.row.datetime * 1000),
    requestHead: p.head.requestBytes,
    responseHead: p.head.responseBytes,
    payloadDigest: p.row.digest,
    blockDigest: p.blockDigest,
    via: p.via,
  };
}

/** The capture `p` for the appender, its body read as it streams. */
export function streamedOf(p: PendingCapture): CapturePair {
  return { ...recordOf(p), body: () => p.body.read(), bodyBuffer: p.body.inMemory(), bodyLength: p.body.length };
}

/**
 * How capture `p` (new, or a revisit of `found`) is to be appended: its
 * records built here, uncompressed, when its body is whole in memory (at
 * most warc-writer.ts `ONE_SHOT`), else streamed by the appender.
 */
export function planOf(p: PendingCapture, found: { row: MementoRow; recordId: string } | undefined): Plan {
  if (found)
    return {
      p,
      found,
      raw: revisitRecords({ ...recordOf(p), original: { uriR: found.row.uri_r, datetime: new Date(found.row.datetime * 1000), recordId: found.recordId } }),
    };
  const whole = p.body.inMemory();
  if (!whole || whole.length > ONE_SHOT) return { p };
  return { p, raw: pairRecords({ ...streamedOf(p), bodyBuffer: whole, blockDigest: p.blockDigest }) };
}
