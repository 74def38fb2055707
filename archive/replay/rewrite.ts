/**
 * The archival replay's rewrite of a whole HTML page or stylesheet held
 * in memory (html.ts, css.ts): in one piece in a work pool's thread (the
 * `replay` task, archive/work/tasks.ts), or on the event loop for as long
 * as one slice lasts (replay.ts tries that first: most pages are done
 * within it). Plain data in and out, so that it can run in either place.
 */
import { isUtf8 } from 'node:buffer';
import { charsetOf } from '#shared/http-head.js';
import { rewriteCss } from './css.js';
import { HtmlRewriter, type Part } from './html.js';
import { archiveUrl, REPLAY_SCRIPT_PATH, type ReplayTarget } from './urls.js';

/** Bytes of a page fed to the HTML tokenizer at a time when the rewrite must stop at the end of a slice. */
export const FEED_BYTES = 2 * 1024;

/** What the rewrite needs to know of the memento (plain data: it crosses to a work pool's thread). */
export interface RewritePage extends ReplayTarget {
  uriR: string;
  /** The stored Content-Type (its charset decides how URLs are read). */
  contentType?: string;
  /**
   * The page's own Memento-Datetime, 14 digits: the clock of the replay
   * shim (its `data-memento-datetime`); default `ts` (the time URLs are
   * rewritten at, which is the reader's in the banner page's frame).
   */
  clock?: string;
}

/** What a whole rewrite gives: the rewritten bytes, or `unchanged` (a stylesheet without a URL to rewrite). */
export type Rewritten = Buffer | 'unchanged';

/** Whether the page's bytes are UTF-8: its charset says so, or, without one, its first bytes are valid UTF-8. */
export function isUtf8Page(contentType: string | undefined, head: Buffer): boolean {
  const charset = charsetOf(contentType);
  if (charset) return charset === 'utf-8' || charset === 'utf8';
  return isUtf8(head.subarray(0, 64 * 1024));
}

/** The script element injected into replayed HTML; it reads the page's Memento-Datetime from its attribute. */
export function replayScript(page: RewritePage): string {
  return `<script src="${page.base}${REPLAY_SCRIPT_PATH}" data-memento-datetime="${page.clock ?? page.ts}"></script>`;
}

/** Rewrites a whole page or stylesheet held in memory, in one piece. */
export function rewriteWhole(kind: 'html' | 'css', bytes: Buffer, page: RewritePage): Rewritten {
  const utf8 = isUtf8Page(page.contentType, bytes);
  if (kind === 'css') {
    const css = bytes.toString(utf8 ? 'utf8' : 'latin1');
    const out = rewriteCss(css, (url) => archiveUrl(page, url, page.uriR));
    return out === css ? 'unchanged' : Buffer.from(out, utf8 ? 'utf8' : 'latin1');
  }
  const rw = new HtmlRewriter({ ...page, utf8, inject: replayScript(page) });
  return Buffer.from(rw.write(bytes.toString('latin1')) + rw.end(), 'latin1');
}

/**
 * {@link rewriteWhole} within a slice of the event loop: the page is fed
 * to the tokenizer {@link FEED_BYTES} at a time, and the rewrite gives up
 * (`over`) when `spent()` says the slice is used up before the next
 * piece (never after the last one: work done is not thrown away, so a
 * page of one piece is always rewritten here, whatever the machine's
 * load), or at a tag or `<style>` text longer than `deferOver` bytes (or
 * a stylesheet longer than that): their rewrite alone could outlast the
 * slice.
 */
export function rewriteWithin(kind: 'html' | 'css', bytes: Buffer, page: RewritePage, deferOver: number, spent: () => boolean): Rewritten | 'over' {
  if (kind === 'css') return bytes.length > deferOver ? 'over' : rewriteWhole(kind, bytes, page);
  const rw = new HtmlRewriter({ ...page, utf8: isUtf8Page(page.contentType, bytes), inject: replayScript(page), deferOver });
  const text = bytes.toString('latin1');
  const out: string[] = [];
  const take = (parts: Part[]): boolean => parts.every((p) => typeof p === 'string' && out.push(p) > 0);
  for (let at = 0; at < text.length; at += FEED_BYTES) {
    if (at > 0 && spent()) return 'over';
    if (!take(rw.writeParts(text.slice(at, at + FEED_BYTES)))) return 'over';
  }
  return take(rw.endParts()) ? Buffer.from(out.join(''), 'latin1') : 'over';
}
