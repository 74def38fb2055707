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
 *
 * No rewrite holds the event loop for longer than a slice (about
 * {@link SLICE_MS} ms, archive/work/slices.ts), whatever the stored page:
 *
 * - In memory: the rewrite is tried on the event loop within one slice
 *   (a page of up to {@link TRY_INLINE_BYTES}; most pages are done
 *   within it); a page that is not done by then, or has a tag or a
 *   `<style>` text of more than {@link DEFER_OVER} bytes, is rewritten
 *   whole in the `replay` work pool's thread (archive/work/pool.ts) within
 *   {@link REWRITE_DEADLINE_MS}. When the pool's queue is full, or the
 *   page is not done by that deadline, the answer is a 503 with
 *   `Retry-After` ({@link RewriteRefused}): never the page unrewritten.
 * - As it streams: the page is fed to the tokenizer a few KiB at a time,
 *   and the rewrite waits for a later turn of the event loop each time it
 *   has used up a slice; a tag or `<style>` text of more than
 *   {@link DEFER_OVER} bytes is rewritten in the pool's thread (a full
 *   queue is waited out for a while). A part the pool cannot rewrite in
 *   time ends the body there (the reader sees it cut short).
 *
 * Without a pool (a tool, a test) every rewrite runs here, at once.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { httpError } from '#shared/http-error.js';
import { ScavengeCounter } from '#shared/gc.js';
import type { StoredResponse } from '../store/warcs/warc-reader.js';
import { canDecode, decodeBody, type DecodeOptions, decodeWhole, INLINE_LIMIT } from './content-coding.js';
import { isHtml } from './html-base.js';
import { SLICE_MS, SliceClock } from '../work/slices.js';
import { type WorkPool, WorkRefused } from '../work/pool.js';
import { type DeferredPart, type HtmlReplay, HtmlRewriter, type Part, rewritePart } from './html.js';
import { FEED_BYTES, isUtf8Page, replayScript, type RewritePage, rewriteWhole, rewriteWithin, type Rewritten } from './rewrite.js';

/** Decoded bodies up to this many bytes are rewritten in memory. */
export { INLINE_LIMIT };

/** Tags and `<style>` texts longer than this (bytes) are rewritten in the pool's thread: their rewrite alone could outlast a slice. */
export const DEFER_OVER = 8 * 1024;
/** Pages up to this many bytes are tried on the event loop first; a larger one does not rewrite within a slice. */
export const TRY_INLINE_BYTES = 128 * 1024;
/** Most time the rewrite of a whole page may take in the pool's thread, ms. */
export const REWRITE_DEADLINE_MS = 10_000;
/** Most time the rewrite of one part of a streamed page may take in the pool's thread, ms. */
export const PART_DEADLINE_MS = 10_000;
/** How long a streamed page waits, at most, for room in a full pool queue before its body is cut, ms. */
const PART_BUSY_WAIT_MS = 10_000;

export { SLICE_MS };

/** What {@link replayBody} needs to know of the memento. */
export interface ReplayPage extends RewritePage {
  /** Media type (lower case, no parameters). */
  mime: string;
  /** The stored Content-Encoding, lower case; `undefined` for none. */
  contentEncoding?: string;
}

/** Where a replay's rewrite runs when it does not fit in a slice, and what is asked of it. */
export interface ReplayOptions {
  /** The `replay` work pool; none (a tool, a test): every rewrite runs in this thread, at once. */
  pool?: WorkPool;
  /** The reader went away: a rewrite still waiting for a thread is dropped. */
  signal?: AbortSignal;
  /** Only {@link ReplayBody.changed} is wanted (a TimeGate's Preference-Applied): an HTML page is not rewritten, since it always changes. */
  changesOnly?: boolean;
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

/** The 503 of a page whose rewrite the pool did not take or did not finish (see the module comment). */
export function rewriteRefused(err: WorkRefused): Error {
  if (err.outcome === 'busy')
    return httpError(503, 'the archive is rewriting other pages for replay just now; try again in a few seconds', { headers: { 'retry-after': '5' } });
  return httpError(
    503,
    `this capture takes longer to rewrite for replay than one answer may take (${REWRITE_DEADLINE_MS / 1000} s); try again later, or ask for its stored bytes (the id_ form)`,
    { headers: { 'retry-after': '30' } },
  );
}

/** A page held in memory, rewritten: within a slice here, else in the pool's thread. @throws HttpError 503 when the pool refuses it */
async function rewriteInMemory(kind: 'html' | 'css', bytes: Buffer, page: ReplayPage, opts: ReplayOptions): Promise<Rewritten> {
  const { pool } = opts;
  if (!pool) return rewriteWhole(kind, bytes, page);
  if (bytes.length <= TRY_INLINE_BYTES) {
    const clock = new SliceClock();
    const out = rewriteWithin(kind, bytes, page, DEFER_OVER, () => clock.spent);
    if (out !== 'over') return out;
  }
  // A copy the thread owns (the record's buffer stays in the caches): moved to it, not copied again.
  const copy = new Uint8Array(bytes);
  const plain: RewritePage = { base: page.base, archiveId: page.archiveId, ts: page.ts, uriR: page.uriR, contentType: page.contentType, clock: page.clock };
  try {
    const r = await pool.run('replay', { kind, bytes: copy, page: plain }, REWRITE_DEADLINE_MS, opts.signal, [copy.buffer]);
    return r.body ? Buffer.from(r.body.buffer, r.body.byteOffset, r.body.byteLength) : 'unchanged';
  } catch (err) {
    if (err instanceof WorkRefused) throw rewriteRefused(err);
    throw err;
  }
}

/** A deferred part of a streamed page, rewritten in the pool's thread (a full queue waited out for {@link PART_BUSY_WAIT_MS}). */
async function partText(part: DeferredPart, page: HtmlReplay, opts: ReplayOptions): Promise<string> {
  if (!opts.pool) return rewritePart(part, page).text;
  const until = performance.now() + PART_BUSY_WAIT_MS;
  for (;;) {
    try {
      return (await opts.pool.run('replay-part', { part, page }, PART_DEADLINE_MS, opts.signal)).text;
    } catch (err) {
      if (!(err instanceof WorkRefused) || err.outcome !== 'busy' || performance.now() > until) throw err;
      await delay(100);
    }
  }
}

/**
 * Rewrites an HTML page as it streams (the stored body, decoded when
 * needed), in slices (see the module comment), a scavenge every few MiB
 * (shared/gc.ts).
 */
async function* rewriteStream(source: AsyncIterable<Uint8Array>, page: ReplayPage, opts: ReplayOptions): AsyncGenerator<Uint8Array> {
  let rw: HtmlRewriter | null = null;
  let at: HtmlReplay | null = null;
  const scavenge = new ScavengeCounter();
  const clock = new SliceClock();
  // Text ready at once, or a promise of it when a part is deferred (the common case awaits nothing).
  const text = (parts: Part[]): string | Promise<string> => {
    if (parts.every((p) => typeof p === 'string')) return parts.join('');
    return parts.reduce<Promise<string>>(async (s, p) => (await s) + (typeof p === 'string' ? p : await partText(p, at!, opts)), Promise.resolve(''));
  };
  for await (const chunk of source) {
    scavenge.add(chunk.byteLength);
    const buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (!rw) {
      at = { base: page.base, archiveId: page.archiveId, ts: page.ts, uriR: page.uriR, utf8: isUtf8Page(page.contentType, buf), inject: replayScript(page) };
      rw = new HtmlRewriter({ ...at, deferOver: opts.pool ? DEFER_OVER : undefined });
    }
    const input = buf.toString('latin1');
    let out = '';
    for (let i = 0; i < input.length; i += FEED_BYTES) {
      const ready = text(rw.writeParts(input.slice(i, i + FEED_BYTES)));
      out += typeof ready === 'string' ? ready : await ready;
      if (clock.spent) await clock.next();
    }
    if (out) yield Buffer.from(out, 'latin1');
  }
  if (rw) {
    const rest = await text(rw.endParts());
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
 * @param opts where a rewrite that does not fit in a slice runs
 * @throws HttpError 503 (`Retry-After`) when a page held in memory cannot be rewritten now (the pool's queue is full, or its deadline passed)
 */
export async function replayBody(stored: StoredResponse, page: ReplayPage, decode: DecodeOptions = {}, opts: ReplayOptions = {}): Promise<ReplayBody> {
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
      // An HTML page always changes (the replay script goes in): nothing to learn from rewriting it.
      if (opts.changesOnly && kind === 'html')
        return { body: once(Buffer.alloc(0)), bodyBuffer: null, length: null, changed: true, decoded: enc !== undefined };
      const out = await rewriteInMemory(kind, bytes, page, opts);
      // Nothing to rewrite (a stylesheet without URLs): the stored bytes, coding and all.
      if (out === 'unchanged') return asStored;
      return { body: once(out), bodyBuffer: out, length: out.length, changed: true, decoded: enc !== undefined };
    }
  }
  if (kind === 'css') return asStored;
  const source = enc ? decodeBody(stored.body, enc, decode) : stored.body;
  return { body: rewriteStream(source, page, opts), bodyBuffer: null, length: null, changed: true, decoded: enc !== undefined };
}
