/**
 * The base element of the default Memento (docs/architecture.md "Replay and
 * Prefer"): HTML gets `<base href="<URI-R>">` right after `<head…>`;
 * without a head element, in front of the content (after a leading BOM,
 * doctype and `<html…>` tag, so that the page keeps its standards mode);
 * never when the page already has a base element. No link is rewritten.
 *
 * Only the first {@link SCAN_BYTES} bytes are held to decide; the rest
 * streams through.
 */

/** How far into the body we look for `<head>` and `<base>`. */
export const SCAN_BYTES = 64 * 1024;

/** True for media types that get the base element. */
export function isHtml(mime: string): boolean {
  return mime === 'text/html' || mime === 'application/xhtml+xml';
}

function escapeAttr(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** `text` with every comment (also one left open) blanked out, offsets kept. */
function withoutComments(text: string): string {
  return text.replace(/<!--[\s\S]*?(?:-->|$)/g, (m) => ' '.repeat(m.length));
}

/**
 * Where to insert in `text` (latin1 view of the first {@link SCAN_BYTES}
 * bytes), or -1 for no insertion: none when the page has a base element
 * anywhere in it (the first base element of a document wins, so ours must
 * not come before the page's own); right after `<head…>` when there is one
 * before `</head>`; else after a leading BOM, doctype, comments and
 * `<html…>`. Comments never count as elements.
 */
function insertionPoint(text: string): number {
  if (text.startsWith('\xfe\xff') || text.startsWith('\xff\xfe')) return -1; // UTF-16: not ASCII-compatible
  const code = withoutComments(text);
  if (/<base[\s>/]/i.test(code)) return -1;
  const headEnd = code.search(/<\/head\s*>/i);
  const head = /<head(?:\s[^>]*)?>/i.exec(code);
  if (head && (headEnd < 0 || head.index < headEnd)) return head.index + head[0].length;
  // No head element: in front of the content, after BOM, doctype, comments and the html start tag.
  const lead = /^(?:\xef\xbb\xbf)?(?:\s+|<!--[\s\S]*?-->|<!doctype[^>]*>|<\?xml[^>]*\?>|<html(?:\s[^>]*)?>)*/i.exec(text);
  return lead ? lead[0].length : 0;
}

/**
 * Adds the base element to an HTML body stream.
 *
 * @param body the HTML bytes (already free of content-coding)
 * @param uriR the Memento's URI-R (the base href)
 * @returns `added`: bytes inserted (0 when none), and the new body stream.
 */
export async function withBaseElement(body: AsyncIterable<Uint8Array>, uriR: string): Promise<{ added: number; body: AsyncIterable<Buffer> }> {
  const it = body[Symbol.asyncIterator]();
  const held: Buffer[] = [];
  let heldBytes = 0;
  let ended = false;
  // Hold the first SCAN_BYTES (the page's own base element may be anywhere in them), unless a base element shows up earlier.
  while (heldBytes < SCAN_BYTES) {
    const r = await it.next();
    if (r.done) {
      ended = true;
      break;
    }
    const b = Buffer.from(r.value.buffer, r.value.byteOffset, r.value.byteLength);
    held.push(b);
    heldBytes += b.length;
    if (/<base[\s>/]/i.test(withoutComments(Buffer.concat(held).subarray(0, SCAN_BYTES).toString('latin1')))) break;
  }
  const prefix = Buffer.concat(held);
  const at = insertionPoint(prefix.subarray(0, SCAN_BYTES).toString('latin1'));
  const tag = Buffer.from(`<base href="${escapeAttr(uriR)}">`, 'latin1');
  const out = async function* (): AsyncGenerator<Buffer> {
    if (at < 0) yield prefix;
    else {
      yield prefix.subarray(0, at);
      yield tag;
      yield prefix.subarray(at);
    }
    if (ended) return;
    for (;;) {
      const r = await it.next();
      if (r.done) return;
      yield Buffer.from(r.value.buffer, r.value.byteOffset, r.value.byteLength);
    }
  };
  return { added: at < 0 ? 0 : tag.length, body: out() };
}

/**
 * {@link withBaseElement} for a body held whole in memory (a small stored
 * record): the same rule, decided on the first {@link SCAN_BYTES} bytes.
 *
 * @param body the HTML bytes (already free of content-coding)
 * @param uriR the Memento's URI-R (the base href)
 * @returns `added`: bytes inserted (0 when none), and the new body (`body` itself when nothing was added)
 */
export function withBaseElementBuffer(body: Buffer, uriR: string): { added: number; body: Buffer } {
  const at = insertionPoint(body.subarray(0, SCAN_BYTES).toString('latin1'));
  if (at < 0) return { added: 0, body };
  const tag = Buffer.from(`<base href="${escapeAttr(uriR)}">`, 'latin1');
  return { added: tag.length, body: Buffer.concat([body.subarray(0, at), tag, body.subarray(at)], body.length + tag.length) };
}
