/**
 * The body of the archival replay form of a Memento: an HTML page or a
 * stylesheet with every URL it fetches or follows rewritten to the archive
 * at the page's datetime (html.ts, css.ts); anything else as stored. A
 * content-coded body (gzip, deflate, br) is decoded first and goes out
 * without content-coding. A page of up to {@link INLINE_LIMIT} bytes is
 * rewritten in memory (its length is known, and the result can be cached,
 * cache.ts); a larger HTML page is rewritten as it streams, in bounded
 * memory, and goes out without a length. A larger stylesheet goes out as
 * stored (its URLs are not rewritten: the one case the memory bound
 * wins).
 */
import { isUtf8 } from 'node:buffer';
import { ScavengeCounter } from '#shared/gc.js';
import { charsetOf } from '#shared/http-head.js';
import type { StoredResponse } from '../store/warc-reader.js';
import { canDecode, decodeBody, type DecodeOptions, decodeWhole, INLINE_LIMIT } from '../memento/content-coding.js';
import { isHtml } from '../memento/html-base.js';
import { rewriteCss } from './css.js';
import { HtmlRewriter } from './html.js';
import { archiveUrl, REPLAY_SCRIPT_PATH, type ReplayTarget } from './urls.js';

/** Decoded bodies up to this many bytes are rewritten in memory. */
export { INLINE_LIMIT };

/** What {@link replayBody} needs to know of the memento. */
export interface ReplayPage extends ReplayTarget {
  uriR: string;
  /** Media type (lower case, no parameters). */
  mime: string;
  /** The stored Content-Type (its charset decides how URLs are read). */
  contentType?: string;
  /** The stored Content-Encoding, lower case; `undefined` for none. */
  contentEncoding?: string;
  /**
   * The page's own Memento-Datetime, 14 digits: the clock of the replay
   * shim (its `data-memento-datetime`); default `ts` (the time URLs are
   * rewritten at, which is the reader's in the banner page's frame).
   */
  clock?: string;
}

/** A replay body. */
export interface ReplayBody {
  body: AsyncIterable<Uint8Array>;
  /** The whole body when it is in memory. */
  bodyBuffer: Buffer | null;
  /** Its length in bytes when known (in memory); `null` when it streams. */
  length: number | null;
  /** The body went through a rewriter (an HTML page or a stylesheet): it differs from the stored one. */
  changed: boolean;
  /** The stored Content-Encoding was undone. */
  decoded: boolean;
}

async function* once(buf: Buffer): AsyncGenerator<Uint8Array> {
  if (buf.length) yield buf;
}

/** What kind of body the replay rewrites: `html`, `css`, or none. */
export function replayKind(mime: string): 'html' | 'css' | null {
  return isHtml(mime) ? 'html' : mime === 'text/css' ? 'css' : null;
}

/** Whether the page's bytes are UTF-8: its charset says so, or, without one, its first bytes are valid UTF-8. */
function isUtf8Page(contentType: string | undefined, head: Buffer): boolean {
  const charset = charsetOf(contentType);
  if (charset) return charset === 'utf-8' || charset === 'utf8';
  return isUtf8(head.subarray(0, 64 * 1024));
}

/** The script element injected into replayed HTML; it reads the page's Memento-Datetime from its attribute. */
function replayScript(page: ReplayPage): string {
  return `<script src="${page.base}${REPLAY_SCRIPT_PATH}" data-memento-datetime="${page.clock ?? page.ts}"></script>`;
}

/** Rewrites a whole page or stylesheet held in memory. */
function rewriteWhole(kind: 'html' | 'css', bytes: Buffer, page: ReplayPage): Buffer {
  const text = bytes.toString('latin1');
  const utf8 = isUtf8Page(page.contentType, bytes);
  if (kind === 'css') {
    const css = utf8 ? bytes.toString('utf8') : text;
    const out = rewriteCss(css, (url) => archiveUrl(page, url, page.uriR));
    return out === css ? bytes : Buffer.from(out, utf8 ? 'utf8' : 'latin1');
  }
  const rw = new HtmlRewriter({ ...page, utf8, inject: replayScript(page) });
  return Buffer.from(rw.write(text) + rw.end(), 'latin1');
}

/** Rewrites an HTML page as it streams (the stored body, decoded when needed), a scavenge every few MiB (shared/gc.ts). */
async function* rewriteStream(source: AsyncIterable<Uint8Array>, page: ReplayPage): AsyncGenerator<Uint8Array> {
  let rw: HtmlRewriter | null = null;
  const scavenge = new ScavengeCounter();
  for await (const chunk of source) {
    scavenge.add(chunk.byteLength);
    const buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    rw ??= new HtmlRewriter({ ...page, utf8: isUtf8Page(page.contentType, buf), inject: replayScript(page) });
    const out = rw.write(buf.toString('latin1'));
    if (out) yield Buffer.from(out, 'latin1');
  }
  if (rw) {
    const rest = rw.end();
    if (rest) yield Buffer.from(rest, 'latin1');
  }
}

/**
 * The archival replay body of a stored response (see the module comment).
 * A corrupt content-coded body goes out as stored (when that shows before
 * the head is sent: a body decoded in memory). A streamed decoding stops at
 * `decode.maxBytes` (the body is cut: the reader gets an error) and when the
 * reader stops reading (content-coding.ts).
 *
 * @param decode the bound of a streamed decoding, and who hears how it ended
 */
export function replayBody(stored: StoredResponse, page: ReplayPage, decode: DecodeOptions = {}): ReplayBody {
  const asStored: ReplayBody = { body: stored.body, bodyBuffer: stored.bodyBuffer, length: stored.bodyLength, changed: false, decoded: false };
  const kind = replayKind(page.mime);
  const bodyless = stored.status === 204 || stored.status === 304 || stored.status < 200 || stored.bodyLength === 0;
  if (!kind || bodyless) return asStored;
  const enc = page.contentEncoding;
  if (enc && !canDecode(enc)) return asStored;
  if (stored.bodyBuffer) {
    const bytes = enc ? decodeWhole(stored.bodyBuffer, enc, Math.min(INLINE_LIMIT, decode.maxBytes ?? INLINE_LIMIT)) : stored.bodyBuffer;
    if (bytes === 'corrupt') return asStored;
    if (bytes !== 'large' && bytes.length <= INLINE_LIMIT) {
      const out = rewriteWhole(kind, bytes, page);
      // Nothing to rewrite (a stylesheet without URLs): the stored bytes, coding and all.
      if (out === bytes) return asStored;
      return { body: once(out), bodyBuffer: out, length: out.length, changed: true, decoded: enc !== undefined };
    }
  }
  if (kind === 'css') return asStored;
  const source = enc ? decodeBody(stored.body, enc, decode) : stored.body;
  return { body: rewriteStream(source, page), bodyBuffer: null, length: null, changed: true, decoded: enc !== undefined };
}
