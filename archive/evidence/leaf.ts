/**
 * The bytes of the evidence log's entries (docs/evidence.md "Leaves"):
 * a capture entry names a memento's own WARC record, a purge entry names a
 * capture entry that `purge` removed. A leaf's hash is RFC 9162's
 * `SHA-256(0x00 ‖ leaf)` over the UTF-8 of this text (merkle.ts).
 */
import { toTimestamp14 } from '#shared/http-date.js';
import type { NewMementoRow } from '../store/memento-row.js';
import type { WrittenRecord } from '../store/warc-writer.js';
import type { NewLeaf } from './log.js';

/** A capture entry's fields, as `/proof` gives them (`leaf`). */
export interface CaptureLeaf {
  /** The URI-R as captured. */
  uri: string;
  /** The 14-digit Memento-Datetime (UTC). */
  datetime: string;
  /** The memento's own record's `WARC-Record-ID`, angle brackets included (`<urn:uuid:…>`). */
  record_id: string;
  /** `sha256:` + lower-case hex of SHA-256 over that record's block exactly as stored. */
  digest: string;
}

/**
 * The leaf text of a capture: `<URI-R>\n<14-digit Memento-Datetime>\n<WARC-Record-ID>\n<digest>`.
 * @param datetime Memento-Datetime, epoch seconds
 * @throws Error when a field holds a line break (it would make the text ambiguous) or the digest is not `sha256:<64 hex>`
 */
export function captureLeafText(uriR: string, datetime: number, recordId: string, digest: string): string {
  if (/[\r\n]/.test(uriR + recordId)) throw new Error(`a log leaf field holds a line break: ${JSON.stringify(uriR + ' ' + recordId)}`);
  if (!/^sha256:[0-9a-f]{64}$/.test(digest)) throw new Error(`a log leaf's digest is not sha256:<64 lower-case hex>: ${JSON.stringify(digest)}`);
  return `${uriR}\n${toTimestamp14(datetime)}\n${recordId}\n${digest}`;
}

/** The fields of a capture leaf's text; `undefined` for text of another shape (a purge entry's). */
export function parseCaptureLeaf(text: string): CaptureLeaf | undefined {
  const parts = text.split('\n');
  if (parts.length !== 4 || parts[0] === 'purge' || !/^\d{14}$/.test(parts[1])) return undefined;
  return { uri: parts[0], datetime: parts[1], record_id: parts[2], digest: parts[3] };
}

/**
 * The leaf text of a purge entry: `purge\n<14-digit UTC time of the purge>\n<leaf_index of the removed entry>\n<base64 leaf hash of the removed entry>`.
 * @param at when the purge ran, epoch milliseconds
 */
export function purgeLeafText(at: number, leafIndex: number, removedHash: Buffer): string {
  return `purge\n${toTimestamp14(Math.floor(at / 1000))}\n${leafIndex}\n${removedHash.toString('base64')}`;
}

/** The evidence log entry of a memento whose own record (response or revisit) was written as `rec` ({@link captureLeafText}). */
export function captureLeaf(row: NewMementoRow, rec: Pick<WrittenRecord, 'recordId' | 'blockDigest'>): NewLeaf {
  return {
    archive_id: row.archive_id,
    kind: 'capture',
    text: captureLeafText(row.uri_r, row.datetime, rec.recordId, rec.blockDigest),
    urlkey: row.urlkey,
    datetime: row.datetime,
  };
}
