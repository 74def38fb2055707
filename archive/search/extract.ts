/**
 * The text a search finds in a memento, read from its stored record: the
 * raw bytes of the record's gzip member (the event loop reads them, at
 * most {@link TEXT_RECORD_BYTES}, and moves them to the `text` work
 * pool's thread), inflated there and split into WARC header, HTTP head and
 * body (archive/store/warcs/warc-reader.ts: in one call as the store reads
 * a small record, `inflateRecord`, else streamed, `streamRecord`), the body
 * decoded to text (content-coding, then charset; at most
 * {@link TEXT_LIMIT} decoded bytes), then its title and visible text
 * parsed out (parse-text.ts).
 */
import { Readable } from 'node:stream';
import { canDecode, storedContentEncoding } from '../replay/content-coding.js';
import { isHtml } from '../replay/html-base.js';
import { readDecodedText, TEXT_LIMIT } from '../web/text.js';
import { inflateRecord, SMALL_RECORD, type StoredResponse, streamRecord } from '../store/warcs/warc-reader.js';
import { type ExtractedText, extractFromText } from './parse-text.js';

export type { ExtractedText };

/**
 * Most raw bytes of a record read for its text: enough for the largest
 * WARC header block (64 KiB) and HTTP head (1 MiB) a record may have and
 * {@link TEXT_LIMIT} bytes of body, since neither gzip nor a content-coding
 * grows incompressible bytes by more than a few bytes per block. A longer
 * record's text is what these bytes inflate to (the same 1 MiB of text).
 */
export const TEXT_RECORD_BYTES = 3 * 1024 * 1024;

/** A memento's record as the indexer hands it to {@link extractFromRecord}. */
export interface RecordBytes {
  /** The first bytes (at most {@link TEXT_RECORD_BYTES}) of its gzip member, raw. */
  record: Uint8Array;
  /** The whole member's length (more than `record`'s: the record was cut). */
  length: number;
  /** The memento's media type, lower case, no parameters. */
  mime: string;
  /** Where the record is (WARC file relative to `warcs/`, offset of its gzip member), for errors. */
  file: string;
  offset: number;
}

/**
 * Reads what a memento's text is extracted from: its body decoded to text
 * (at most {@link TEXT_LIMIT} decoded bytes); closes `stored`. `null` for a
 * body not HTML nor text, an empty one, or one in a content-coding the
 * archive cannot decode (its text is empty).
 *
 * @param mime the memento's media type, lower case, no parameters
 */
async function readIndexedText(stored: StoredResponse, mime: string): Promise<{ html: boolean; text: string } | null> {
  const html = isHtml(mime);
  const enc = storedContentEncoding(stored);
  if ((!html && mime !== 'text/plain') || stored.bodyLength === 0 || (enc && !canDecode(enc))) {
    stored.close();
    return null;
  }
  const parts: string[] = [];
  const { rest } = await readDecodedText(stored, enc, TEXT_LIMIT, (s) => parts.push(s));
  parts.push(rest);
  return { html, text: parts.join('') };
}

/**
 * The title and visible text of a memento from its record's raw bytes
 * (see the module comment; the daemon runs this in its `text` work pool's
 * thread). A body not HTML nor text, or in a content-coding the archive
 * cannot decode, gives empty text; a record cut at
 * {@link TEXT_RECORD_BYTES} gives the text of what was read.
 *
 * @throws when the bytes are not a gzipped WARC response record with an HTTP head
 */
export async function extractFromRecord(input: RecordBytes): Promise<ExtractedText> {
  const member = Buffer.from(input.record.buffer, input.record.byteOffset, input.record.byteLength);
  // Inflated in one call when whole and small (as the store reads it), else streamed (bounded by TEXT_LIMIT).
  const whole = member.length === input.length && member.length <= SMALL_RECORD ? inflateRecord(member, input.file, input.offset) : null;
  const stored = whole ?? (await streamRecord(Readable.from([member]), input.file, input.offset));
  const text = await readIndexedText(stored, input.mime);
  return text ? extractFromText(text) : { title: '', body: '' };
}
