/**
 * Undoing the content-coding of a stored body (RFC 9110 §8.4.1), so that the
 * links form of a gzip/deflate/br-encoded HTML page can get its base element
 * and the replay form can rewrite it. Streams; holds one chunk at a time.
 *
 * A small compressed body can stand for a huge decoded one (10 MB of
 * zeros gzip to 10 KB, 1 GiB to 1 MB): every decoding here is bounded, in
 * memory by {@link INLINE_LIMIT}, as a stream by `maxBytes` (the daemon's
 * `max_decoded_bytes`); a stream decodes only as fast as its reader reads,
 * and stops when the reader stops.
 */
import { Readable } from 'node:stream';
import zlib from 'node:zlib';
import type { RawHeader } from '#shared/http-head.js';

/** Decoded bodies up to this many bytes are decoded (and rewritten) in memory, their length known. */
export const INLINE_LIMIT = 2 * 1024 * 1024;

/** The default of `max_decoded_bytes`: most bytes one answer decodes from a content-coded body. */
export const DEFAULT_MAX_DECODED_BYTES = 256 * 1024 * 1024;

/** How a streamed decoding ended: `end` (all of it), `stopped` (the reader stopped first: the client left, or a HEAD), `limit` (more than `maxBytes`), `corrupt`. */
export type DecodeOutcome = 'end' | 'stopped' | 'limit' | 'corrupt';

/** Bounds and observation of a streamed decoding. */
export interface DecodeOptions {
  /** Most decoded bytes to produce; more → {@link DecodedTooLarge}. Default {@link DEFAULT_MAX_DECODED_BYTES}. */
  maxBytes?: number;
  /** Called once when the decoding ends, however it ends, with the bytes zlib decoded (those yielded, and the chunk that passed a bound). */
  onEnd?: (bytes: number, outcome: DecodeOutcome) => void;
}

/** A content-coded body decodes to more than the bound allows. */
export class DecodedTooLarge extends Error {
  constructor(readonly maxBytes: number) {
    super(`the content-coded body decodes to more than ${maxBytes} bytes (max_decoded_bytes)`);
    this.name = 'DecodedTooLarge';
  }
}

/** The Content-Encoding of stored headers, lower case; `undefined` for none or identity. */
export function storedContentEncoding(stored: { headers: readonly RawHeader[] }): string | undefined {
  const enc = stored.headers
    .find(([k]) => k.toLowerCase() === 'content-encoding')?.[1]
    .trim()
    .toLowerCase();
  return enc === 'identity' || enc === '' ? undefined : enc;
}

/** Content codings we can decode (lower case). `x-gzip` is gzip (RFC 9110 §8.4.1.3). */
export function canDecode(encoding: string): boolean {
  return ['gzip', 'x-gzip', 'deflate', 'br'].includes(encoding);
}

/** True when the first two bytes are a zlib (RFC 1950) header, as `deflate` should be. */
function isZlibHeader(b: Buffer): boolean {
  return b.length >= 2 && (b[0] & 0x0f) === 8 && ((b[0] << 8) | b[1]) % 31 === 0;
}

/**
 * Decodes a whole content-coded body held in memory, producing at most
 * `max` bytes (zlib stops there: the work is bounded too).
 *
 * @param encoding one of {@link canDecode}
 * @returns the decoded bytes, or `large` (more than `max` bytes), or `corrupt`
 */
export function decodeWhole(buf: Buffer, encoding: string, max: number): Buffer | 'large' | 'corrupt' {
  try {
    if (encoding === 'br') return zlib.brotliDecompressSync(buf, { maxOutputLength: max });
    if (encoding === 'deflate') return isZlibHeader(buf) ? zlib.inflateSync(buf, { maxOutputLength: max }) : zlib.inflateRawSync(buf, { maxOutputLength: max });
    return zlib.gunzipSync(buf, { maxOutputLength: max });
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError ? 'large' : 'corrupt';
  }
}

/**
 * Decodes a body stream of content-coding `encoding`, as fast as it is
 * read: zlib works only while its output is taken. Stopping the iteration
 * (`return()`, or `break` in a `for await`) destroys the decoder.
 *
 * `deflate` is the zlib format (RFC 9110 §8.4.1.2), but some servers send a
 * raw deflate stream under that name: the first bytes decide.
 *
 * @param body the stored body bytes
 * @param encoding one of {@link canDecode}
 * @returns the decoded bytes, at most `opts.maxBytes`; the iteration throws
 *   on corrupt or cut data, and {@link DecodedTooLarge} before a chunk that
 *   would pass the bound
 */
export async function* decodeBody(body: AsyncIterable<Uint8Array>, encoding: string, opts: DecodeOptions = {}): AsyncGenerator<Buffer> {
  const max = opts.maxBytes ?? DEFAULT_MAX_DECODED_BYTES;
  const it = body[Symbol.asyncIterator]();
  const first = await it.next();
  if (first.done) return;
  const head = Buffer.from(first.value.buffer, first.value.byteOffset, first.value.byteLength);
  const z =
    encoding === 'br'
      ? zlib.createBrotliDecompress()
      : encoding === 'deflate'
        ? isZlibHeader(head)
          ? zlib.createInflate()
          : zlib.createInflateRaw()
        : zlib.createGunzip();
  const src = Readable.from(
    (async function* () {
      yield head;
      for (;;) {
        const r = await it.next();
        if (r.done) return;
        yield r.value;
      }
    })(),
  );
  src.once('error', (err) => z.destroy(err));
  src.pipe(z);
  let bytes = 0;
  let outcome: DecodeOutcome = 'stopped';
  try {
    for await (const chunk of z) {
      bytes += (chunk as Buffer).length;
      if (bytes > max) {
        outcome = 'limit';
        throw new DecodedTooLarge(max);
      }
      yield chunk as Buffer;
    }
    outcome = 'end';
  } catch (err) {
    if (outcome !== 'limit') outcome = 'corrupt';
    throw err;
  } finally {
    src.destroy();
    z.destroy();
    opts.onEnd?.(bytes, outcome);
  }
}
