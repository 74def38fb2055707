/**
 * The body of each form of a Memento (prefer.ts `MementoForm`): `raw`, the
 * stored bytes; `links`, an HTML page with a base element naming its URI-R
 * (html-base.ts) and nothing rewritten; `replay`, the archival replay
 * (archive/replay/replay.ts). With what the form changed, for
 * Preference-Applied.
 */
import { toTimestamp14 } from '#shared/http-date.js';
import type { ReplayOptions } from '../replay/replay.js';
import type { ReplayTarget } from '../replay/urls.js';
import type { MementoRow } from '../store/index/index-db.js';
import type { StoredResponse } from '../store/warcs/warc-reader.js';
import { canDecode, decodeBody, type DecodeOptions, decodeWhole, INLINE_LIMIT, storedContentEncoding } from '../replay/content-coding.js';
import { isHtml, withBaseElement, withBaseElementBuffer } from '../replay/html-base.js';
import type { MementoForm } from './prefer.js';
import type { BodyChanges } from '../replay/cache.js';

let replayLoaded: Promise<typeof import('../replay/replay.js')> | undefined;

/**
 * The replay module (archive/replay/replay.ts), imported once. The
 * rewriters (an HTML tokenizer, a CSS tokenizer, entity tables: some 15 MiB)
 * load with the first replay, not with the daemon; the import is kept, as
 * each `import()` resolves the specifier again (through tsx's resolve hook
 * on the module loader's thread: some 0.4 ms of CPU a replay, bench/results.md
 * 2026-11-29 08:05).
 */
function replayModule(): Promise<typeof import('../replay/replay.js')> {
  replayLoaded ??= import('../replay/replay.js');
  return replayLoaded;
}

/** Reads a memento's stored response record (again). */
export type ReadRecord = (row: MementoRow) => Promise<StoredResponse>;

/** The body of a Memento answer as it will be sent. */
export interface BodyPlan {
  /** The record to close when done (it may have been reopened). */
  stored: StoredResponse;
  body: AsyncIterable<Uint8Array>;
  /** The whole body when it is in memory (then sent as one buffer). */
  bodyBuffer: Buffer | null;
  /** Exact length in bytes of what is sent; `null` when it streams without one (a large page rewritten as it goes). */
  length: number | null;
  /** How the body differs from the stored one. */
  changes: BodyChanges;
  /** The stored Content-Encoding was undone: the body goes out without it. */
  decoded: boolean;
  /** The status has no body (204, 304, 1xx) or the stored body is empty. */
  bodyless: boolean;
  /** Releases what the body holds (the record, a decoder): once the body is sent, or instead of sending it (HEAD). */
  close(): void;
}

/** A buffer as a body stream (one chunk). */
async function* bufferBody(buf: Buffer): AsyncGenerator<Uint8Array> {
  yield buf;
}

const UNCHANGED: BodyChanges = { content: false, links: false };

/**
 * The links form's body: the stored bytes for a non-HTML page, a bodyless
 * answer or a page that already has a base element; else the page with its
 * base element. A content-coded page is decoded first: in memory when the
 * record is small and it decodes to at most {@link INLINE_LIMIT} bytes (the
 * length exact); else as it streams, without a length (chunked), at most
 * `decode.maxBytes` decoded bytes (content-coding.ts), so that neither a HEAD
 * nor a GET decodes a whole compression bomb before its head is sent. A
 * corrupt encoded body found before the head goes out as stored. Holds at
 * most the first 64 KiB of a streamed page.
 */
async function linksBody(
  row: MementoRow,
  stored: StoredResponse,
  enc: string | undefined,
  asStored: BodyPlan,
  read: ReadRecord,
  decode: DecodeOptions,
): Promise<BodyPlan> {
  if (!isHtml(row.mime) || asStored.bodyless || (enc && !canDecode(enc))) return asStored;
  let whole = stored.bodyBuffer;
  if (enc && whole) {
    const d = decodeWhole(whole, enc, Math.min(INLINE_LIMIT, decode.maxBytes ?? INLINE_LIMIT));
    if (d === 'corrupt') return asStored;
    whole = d === 'large' ? null : d;
  }
  if (whole) {
    // A small record, read (and decoded) whole: insert in memory.
    const r = withBaseElementBuffer(whole, row.uri_r);
    if (!r.added) return asStored;
    return { ...asStored, body: bufferBody(r.body), bodyBuffer: r.body, length: r.body.length, changes: { content: true, links: false }, decoded: !!enc };
  }
  if (!enc) {
    const r = await withBaseElement(stored.body, row.uri_r);
    return { ...asStored, body: r.body, bodyBuffer: null, length: stored.bodyLength + r.added, changes: { content: r.added > 0, links: false } };
  }
  const decoded = decodeBody(stored.body, enc, decode);
  const r = await withBaseElement(decoded, row.uri_r).catch(() => null);
  if (r?.added) {
    const close = () => {
      void decoded.return(undefined);
      stored.close();
    };
    return { ...asStored, body: r.body, bodyBuffer: null, length: null, changes: { content: true, links: false }, decoded: true, close };
  }
  // Nothing to insert, or the encoded body is corrupt (or too large) in its first bytes: it goes out as stored.
  await decoded.return(undefined);
  stored.close();
  const fresh = await read(row);
  return { ...asStored, stored: fresh, body: fresh.body, bodyBuffer: fresh.bodyBuffer, length: fresh.bodyLength, close: () => fresh.close() };
}

/**
 * The body of a Memento in `form` (see the module comment).
 *
 * @param target where the replay form's URLs point (the archive, and the time they are rewritten at: the memento's timestamp or the reader's)
 * @param contentType the stored Content-Type (the replay reads URLs in its charset)
 * @param decode the bound of a streamed decoding, and who hears how it ended (content-coding.ts)
 * @param replay where the replay form's rewrite runs when it does not fit in a slice of the event loop (replay.ts)
 * @throws HttpError 503 when the replay form's rewrite cannot be done now (replay.ts)
 */
export async function planBody(
  row: MementoRow,
  stored: StoredResponse,
  form: MementoForm,
  read: ReadRecord,
  target: ReplayTarget,
  contentType?: string,
  decode: DecodeOptions = {},
  replay: ReplayOptions = {},
): Promise<BodyPlan> {
  const enc = storedContentEncoding(stored);
  const bodyless = stored.status === 204 || stored.status === 304 || stored.status < 200 || stored.bodyLength === 0;
  const asStored: BodyPlan = {
    stored,
    body: stored.body,
    bodyBuffer: stored.bodyBuffer,
    length: stored.bodyLength,
    changes: UNCHANGED,
    decoded: false,
    bodyless,
    close: () => stored.close(),
  };
  if (form === 'raw') return asStored;
  if (form === 'links') return linksBody(row, stored, enc, asStored, read, decode);
  const { replayBody } = await replayModule();
  const page = { ...target, uriR: row.uri_r, mime: row.mime, contentType, contentEncoding: enc, clock: toTimestamp14(row.datetime) };
  const r = await replayBody(stored, page, decode, replay);
  return { ...asStored, body: r.body, bodyBuffer: r.bodyBuffer, length: r.length, changes: { content: r.changed, links: r.changed }, decoded: r.decoded };
}
