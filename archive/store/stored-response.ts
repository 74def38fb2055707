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
