/**
 * Undoing the content-coding of a stored body (RFC 9110 §8.4.1), so that the
 * default Memento of a gzip/deflate/br-encoded HTML page can get its base
 * element. Streams; holds one chunk at a time.
 */
import { Readable } from 'node:stream';
import zlib from 'node:zlib';

/** Content codings we can decode (lower case). `x-gzip` is gzip (RFC 9110 §8.4.1.3). */
export function canDecode(encoding: string): boolean {
  return ['gzip', 'x-gzip', 'deflate', 'br'].includes(encoding);
}

/** True when the first two bytes are a zlib (RFC 1950) header, as `deflate` should be. */
function isZlibHeader(b: Buffer): boolean {
  return b.length >= 2 && (b[0] & 0x0f) === 8 && ((b[0] << 8) | b[1]) % 31 === 0;
}

/**
 * Decodes a body stream of content-coding `encoding`.
 *
 * `deflate` is the zlib format (RFC 9110 §8.4.1.2), but some servers send a
 * raw deflate stream under that name: the first bytes decide.
 *
 * @param body the stored body bytes
 * @param encoding one of {@link canDecode}
 * @returns the decoded bytes; the iteration throws on corrupt or cut data
 */
export async function* decodeBody(body: AsyncIterable<Uint8Array>, encoding: string): AsyncGenerator<Buffer> {
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
  try {
    for await (const chunk of z) yield chunk as Buffer;
  } finally {
    src.destroy();
    z.destroy();
  }
}

/**
 * Decodes a whole body only to count its bytes (nothing is kept).
 *
 * @returns the decoded length, or `null` when the data is corrupt or cut
 */
export async function decodedLength(body: AsyncIterable<Uint8Array>, encoding: string): Promise<number | null> {
  let n = 0;
  try {
    for await (const c of decodeBody(body, encoding)) n += c.length;
    return n;
  } catch {
    return null;
  }
}
