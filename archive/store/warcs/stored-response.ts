/**
 * A response record as read back from a WARC file (warc-reader.ts), and as
 * the record cache (record-cache.ts) keeps it: the shape both share, in a
 * module of its own so that neither imports the other for it.
 */
import type { RawHeader } from '#shared/http-head.js';

/** A response record read back: the captured status line, headers and a stream of the stored body bytes. */
export interface StoredResponse {
  statusLine: string;
  status: number;
  reason: string;
  headers: RawHeader[];
  /** The payload exactly as stored (content-coding untouched). */
  body: AsyncIterable<Uint8Array>;
  /**
   * The same payload as one buffer when the record was small enough to be
   * read and inflated whole ({@link SMALL_RECORD}); `null` when it streams.
   */
  bodyBuffer: Buffer | null;
  /** Payload length in bytes (from the WARC Content-Length minus the HTTP head). */
  bodyLength: number;
  /** Releases the file when the body is not read to its end. */
  close(): void;
}

/** Reads a record by its place: WARC file (relative to `warcs/`), offset and length of its gzip member (warc-reader.ts `WarcReader.read`). */
export type ReadRecord = (file: string, offset: number, length: number) => Promise<StoredResponse>;

/**
 * The stored response of a memento (docs/storage.md "Reading a revisit"):
 * its own `response` record; for a revisit (`refers_to` set), the status
 * and headers of its own `revisit` record (WARC 1.1 §6.7.2: the HTTP head
 * of the revisit) with the payload of its original's `response` record.
 *
 * @param byId the index's row of a memento id (the revisit's original)
 * @throws when a record is missing or damaged, or a revisit's original row is gone
 */
export async function readMementoResponse(
  read: ReadRecord,
  byId: (id: number) => Promise<MementoPlace | undefined>,
  row: MementoPlace & { refers_to: number | null },
): Promise<StoredResponse> {
  const own = await read(row.warc_file, row.warc_offset, row.warc_length);
  if (row.refers_to === null) return own;
  // Its head is read whole; release its file (a record read as a stream holds it open).
  own.close();
  const original = await byId(row.refers_to);
  if (!original) throw new Error(`revisit at ${row.warc_file}:${row.warc_offset}: the memento it refers to (row ${row.refers_to}) is gone`);
  const payload = await read(original.warc_file, original.warc_offset, original.warc_length);
  return { ...own, body: payload.body, bodyBuffer: payload.bodyBuffer, bodyLength: payload.bodyLength, close: payload.close };
}

/** Where a memento's record is: WARC file relative to `warcs/`, offset and length of its gzip member. */
export interface MementoPlace {
  warc_file: string;
  warc_offset: number;
  warc_length: number;
}
