/**
 * Archival replay of HTML, streamed: htmlparser2 tokenizes the page (a
 * real HTML tokenizer, never regular expressions over markup) and every
 * URL a browser fetches or follows becomes an archive address (urls.ts):
 * `href`, `src`, `srcset`, `poster`, `action`, `formaction`, `background`,
 * `longdesc`, `cite`, `xlink:href`, `<object data>`, the URL of
 * `<meta http-equiv=refresh>` (read as the browser reads it; one that would
 * leave the archive, to another scheme, is dropped), `style` attributes and `<style>` elements
 * (css.ts), and `<iframe srcdoc>` (a page of its own, the replay script
 * first in it). Relative URLs resolve against the page's base element, else
 * its URI-R; the base element's own `href` is rewritten too, so that URLs
 * scripts build from it stay in the archive. What a browser follows
 * without any fetch policy is taken out: `<link rel=preconnect>` and
 * `dns-prefetch` (the rel kept as `data-archive-orig-rel`), and
 * speculation rules (`<script type=speculationrules>` becomes a data
 * block).
 *
 * Only the tags that change are written again (their attributes as
 * written, entities kept); every other byte of the page goes out as it
 * came. The page is handled as a byte view (latin1 string), so its
 * character set is kept: URLs of a UTF-8 page are read as UTF-8. Memory is
 * bounded: only an unfinished tag or `<style>` element is held.
 *
 * Cost: each byte is tokenized once (the stack of open elements is
 * bounded, html-parser.ts), and each tag or `<style>` element is rewritten
 * once it is whole. A caller that must not spend long at once (the replay
 * on the event loop, replay.ts) sets {@link HtmlReplay.deferOver}: a tag or
 * a `<style>` element's text longer than that is not rewritten here but
 * handed back as a {@link DeferredPart} in its place in the output, for
 * the caller to rewrite elsewhere ({@link rewritePart}, in a work pool's
 * thread) — what it becomes is what this class would have written.
 */
import type { Parser } from 'htmlparser2';
import { rewriteCss } from './css.js';
import { attributeBytes, attributeUrl } from './attributes.js';
import { BoundedParser } from './html-parser.js';
import { archiveUrl, type ReplayTarget, refreshUrl, rewriteRefresh, rewriteSrcset } from './urls.js';

/** Attributes whose whole value is one URL, on any element. */
const URL_ATTRIBUTES = new Set(['href', 'src', 'poster', 'action', 'formaction', 'background', 'longdesc', 'cite', 'xlink:href', 'lowsrc', 'dynsrc']);

/**
 * `<link rel>` values a browser acts on by connecting to the host the link
 * names, before and without any fetch (HTML "link types"): `preconnect`
 * (DNS, TCP, TLS) and `dns-prefetch` (DNS). Chromium applies no
 * Content-Security-Policy to either, so the replay drops them.
 */
const CONNECTION_HINTS = new Set(['preconnect', 'dns-prefetch']);

/** The `type` a speculation-rules script gets in the replay: an unknown type, a data block that nothing reads. */
export const INERT_SPECULATION_RULES = 'text/x-archive-speculationrules';

/** A `<style>` element's text longer than this is left as it is (memory bound). */
const MAX_STYLE_CHARS = 4 * 1024 * 1024;

/**
 * A part of a page whose rewrite is left to the caller: a tag (`tag`: its
 * name and attributes as the tokenizer read them), or the text of a
 * `<style>` element (`style`), with the base URL in force where it stands.
 */
export interface DeferredPart {
  kind: 'tag' | 'style';
  /** Its text as written (a byte view of the page, latin1). */
  text: string;
  /** The URL its relative URLs resolve against. */
  docBase: string;
  /** A tag's name, as the tokenizer read it (in its context: `image` in SVG, `img` elsewhere). */
  name?: string;
  /** A tag's attributes. */
  attrs?: Attr[];
}

/** A piece of the rewritten page: text ready to go out, or a part still to rewrite. */
export type Part = string | DeferredPart;

/** What the rewriter needs to know of the page. */
export interface HtmlReplay extends ReplayTarget {
  /** The page's URI-R: its base until a base element says otherwise. */
  uriR: string;
  /** The page's bytes are UTF-8 (its URLs are read as UTF-8). */
  utf8: boolean;
  /** Markup to put right after `<head…>` (or in front of the first element of the body when there is no head). */
  inject?: string;
  /** Tags and `<style>` texts longer than this many bytes are left to the caller ({@link DeferredPart}); default none. */
  deferOver?: number;
}

/** An attribute as the tokenizer read it: its name (lower case), its value as written, its quote (`null`: unquoted). */
export type Attr = [name: string, raw: string, quote: string | null];

/** An attribute to drop (kept as `data-archive-orig-<name>`): a refresh that would leave the archive, a rel of connection hints only. */
const DROP = Symbol('drop');

/** Escapes a rewritten URL (ASCII; a serialized URL has no `"`) for a double-quoted attribute value. */
function attrValue(url: string): string {
  return url.includes('&') ? url.replace(/&/g, '&amp;') : url;
}

/**
 * A streaming HTML rewriter: {@link write} byte-view chunks of a page, then
 * {@link end}; each returns the rewritten text ready to go out.
 */
export class HtmlRewriter {
  private readonly parser: Parser;
  private input = '';
  /** Absolute offset of `input[0]`. */
  private inputStart = 0;
  /** Everything before this absolute offset has been handled (emitted or rewritten). */
  private emitted = 0;
  /** End (absolute, exclusive) of the last token the parser reported. */
  private settled = 0;
  private out = '';
  /** What is ready before {@link out}, when a part was deferred. */
  private parts: Part[] = [];
  private attrs: Attr[] = [];
  private docBase: string;
  private styleStart = -1;
  /** A base element with an href was seen (only the first counts: HTML "document base URL"). */
  private baseSeen = false;
  private injected = false;
  /** URLs rewritten so far. */
  rewritten = 0;

  constructor(private readonly page: HtmlReplay) {
    this.docBase = page.uriR;
    this.parser = new BoundedParser(
      {
        onattribute: (name, value, quote) => this.attrs.push([name, value, quote ?? null]),
        onopentag: (name) => this.openTag(name),
        onclosetag: (name) => this.closeTag(name),
        ontext: () => this.settle(),
        oncomment: () => this.settle(),
        onprocessinginstruction: () => this.settle(),
        oncdatastart: () => this.settle(),
      },
      { decodeEntities: false, lowerCaseAttributeNames: true, lowerCaseTags: true, recognizeSelfClosing: false },
    );
    if (!page.inject) this.injected = true;
  }

  /** Characters held back: an unfinished tag or `<style>` element, and what is not yet dropped from the buffer (under 64 Ki past them). */
  get held(): number {
    return this.input.length;
  }

  /** Feeds the next bytes (latin1 string) of the page; returns the text that is ready. @throws when a part was deferred (use {@link writeParts}) */
  write(chunk: string): string {
    return textOf(this.writeParts(chunk));
  }

  /** The page is complete; returns the rest of the text. @throws when a part was deferred (use {@link endParts}) */
  end(): string {
    return textOf(this.endParts());
  }

  /** Feeds the next bytes (latin1 string) of the page; returns what is ready, deferred parts in their places. */
  writeParts(chunk: string): Part[] {
    this.input += chunk;
    this.parser.write(chunk);
    this.flushSettled();
    return this.take();
  }

  /** The page is complete; returns the rest, deferred parts in their places. */
  endParts(): Part[] {
    this.parser.end();
    this.settled = this.inputStart + this.input.length;
    if (this.styleStart >= 0) this.styleStart = -1;
    this.flushSettled();
    return this.take();
  }

  private take(): Part[] {
    const parts = this.parts;
    if (this.out) parts.push(this.out);
    this.parts = [];
    this.out = '';
    return parts;
  }

  /** Puts `part` in the output where it stands. */
  private defer(part: DeferredPart): void {
    if (this.out) this.parts.push(this.out);
    this.parts.push(part);
    this.out = '';
  }

  /** Whether `length` bytes are left to the caller to rewrite. */
  private deferred(length: number): boolean {
    return this.page.deferOver !== undefined && length > this.page.deferOver;
  }

  /** The current token ended at the parser's `endIndex`. */
  private settle(): void {
    this.settled = Math.max(this.settled, this.parser.endIndex + 1);
  }

  /** Emits the input up to what is settled (and not held for a `<style>` element). */
  private flushSettled(): void {
    const upTo = this.styleStart >= 0 ? this.styleStart : this.settled;
    if (upTo > this.emitted) {
      this.out += this.slice(this.emitted, upTo);
      this.emitted = upTo;
    }
    // Drop what is emitted from the buffer.
    const keep = this.emitted - this.inputStart;
    if (keep > 64 * 1024 || keep === this.input.length) {
      this.input = this.input.slice(keep);
      this.inputStart = this.emitted;
    }
  }

  /** Input text between two absolute offsets. */
  private slice(from: number, to: number): string {
    return this.input.slice(from - this.inputStart, to - this.inputStart);
  }

  /** URLs of this page already mapped (a page repeats its links), by attribute value as written; cleared when the base changes. */
  private readonly mapped = new Map<string, string | null>();

  private map = (raw: string): string | null => {
    let mapped = this.mapped.get(raw);
    if (mapped === undefined) {
      mapped = archiveUrl(this.page, attributeUrl(raw, this.page.utf8), this.docBase);
      if (this.mapped.size < 4096) this.mapped.set(raw, mapped);
    }
    if (mapped !== null) this.rewritten++;
    return mapped;
  };

  /** {@link map}, the result escaped for an attribute value (`&`, `"`). */
  private mapEscaped = (raw: string): string | null => {
    const m = this.map(raw);
    return m === null ? null : attrValue(m);
  };

  private mapCss = (url: string): string | null => {
    const mapped = archiveUrl(this.page, url, this.docBase);
    if (mapped !== null) this.rewritten++;
    return mapped;
  };

  private openTag(name: string): void {
    const start = this.parser.startIndex;
    const end = this.parser.endIndex + 1;
    const attrs = this.attrs;
    this.attrs = [];
    if (!this.injected && name !== 'html' && name !== 'head') {
      // No head element before the content: in front of this element.
      this.emitUpTo(start);
      this.out += this.page.inject!;
      this.injected = true;
    }
    // The base element's own href resolves against the URI-R, then becomes the base of what follows.
    const defer = this.deferred(end - start);
    const docBase = this.docBase;
    const raw = this.slice(start, end);
    const rewritten = defer ? null : this.rewriteTag(name, attrs, raw);
    if (name === 'base') {
      const href = attrs.find(([n]) => n === 'href');
      if (href && !this.baseSeen) {
        this.baseSeen = true;
        try {
          this.docBase = new URL(attributeUrl(href[1], this.page.utf8), this.page.uriR).href;
          this.mapped.clear();
        } catch {
          // an unusable base element changes nothing
        }
      }
    }
    if (defer || rewritten !== null) {
      this.emitUpTo(start);
      if (defer) this.defer({ kind: 'tag', text: raw, docBase, name, attrs });
      else this.out += rewritten;
      this.emitted = end;
    }
    this.settled = Math.max(this.settled, end);
    if (name === 'head' && !this.injected) {
      this.emitUpTo(end);
      this.out += this.page.inject!;
      this.injected = true;
    }
    if (name === 'style') this.styleStart = end;
  }

  private closeTag(name: string): void {
    if (name === 'style' && this.styleStart >= 0) {
      const cssEnd = this.parser.startIndex;
      const css = this.slice(this.styleStart, cssEnd);
      this.emitUpTo(this.styleStart);
      if (css.length <= MAX_STYLE_CHARS && this.deferred(css.length)) this.defer({ kind: 'style', text: css, docBase: this.docBase });
      else this.out += css.length > MAX_STYLE_CHARS ? css : rewriteCss(css, this.mapCss);
      this.emitted = cssEnd;
      this.styleStart = -1;
    }
    this.settle();
  }

  /** Emits the input up to `to` (absolute) as it is. */
  private emitUpTo(to: number): void {
    if (to > this.emitted) {
      this.out += this.slice(this.emitted, to);
      this.emitted = to;
    }
  }

  /**
   * A tag (`name` as the tokenizer read it, its attributes, `raw` its text
   * as written) with its URLs rewritten at the current base URL; `null`
   * when nothing in it changes. For {@link rewritePart}; the page's
   * tokenizer calls it for each tag.
   */
  rewriteTag(name: string, attrs: Attr[], raw: string): string | null {
    const changed = this.rewriteAttrs(name, attrs);
    if (!changed) return null;
    const selfClosing = /\/\s*>$/.test(raw);
    return `<${name}${changed.map(([n, v, q]) => (v === null ? ` ${n}` : ` ${n}=${q ?? '"'}${v}${q ?? '"'}`)).join('')}${selfClosing ? ' />' : '>'}`;
  }

  /**
   * The tag's attributes with URLs rewritten (values as written; a
   * rewritten one double-quoted), or `null` when none changes. An
   * `integrity` attribute of a tag whose URL changed is kept as
   * `data-archive-orig-integrity`: the archive serves the nearest memento,
   * whose hash may differ, and the browser would refuse it.
   */
  private rewriteAttrs(tag: string, attrs: Attr[]): [string, string | null, string | null][] | null {
    let any = false;
    const out = attrs.map(([name, raw, quote]): [string, string | null, string | null] => {
      const next = this.rewriteValue(tag, name, raw, attrs);
      if (next === DROP) {
        // Kept for the reader of the source, inert.
        any = true;
        return [`data-archive-orig-${name}`, quote === null ? raw.replace(/"/g, '&quot;') : raw, quote ?? '"'];
      }
      if (next === null) {
        if (quote === null && raw === '') return [name, null, null];
        // An unquoted value goes out double-quoted: a `"` in it becomes a reference.
        return [name, quote === null ? raw.replace(/"/g, '&quot;') : raw, quote ?? '"'];
      }
      any = true;
      return [name, next, '"'];
    });
    if (!any) return null;
    return out.map(([name, v, q]) => (name === 'integrity' ? ['data-archive-orig-integrity', v, q] : [name, v, q]));
  }

  /** One attribute's value rewritten (as it goes in double quotes), or `null` when it stays. */
  private rewriteValue(tag: string, name: string, raw: string, attrs: Attr[]): string | typeof DROP | null {
    if (URL_ATTRIBUTES.has(name) || (name === 'data' && tag === 'object')) {
      const m = this.map(raw);
      return m === null ? null : attrValue(m);
    }
    if (name === 'srcset' || name === 'imagesrcset') {
      const r = rewriteSrcset(raw, this.mapEscaped);
      return r === raw ? null : r.replace(/"/g, '&quot;');
    }
    if (name === 'style') {
      // The declarations as they are meant (entities decoded), rewritten, written back escaped.
      const text = attributeUrl(raw, this.page.utf8);
      const r = rewriteCss(text, this.mapCss);
      return r === text ? null : attributeBytes(r, this.page.utf8);
    }
    if (name === 'srcdoc' && tag === 'iframe') {
      // A document in an attribute: rewritten as a page of its own, with this page's base, the replay script first in it.
      const text = attributeUrl(raw, this.page.utf8);
      const inner = new HtmlRewriter({ ...this.page, uriR: this.docBase, utf8: true, deferOver: undefined });
      const bytes = Buffer.from(text, 'utf8').toString('latin1');
      const r = inner.write(bytes) + inner.end();
      this.rewritten += inner.rewritten;
      return r === bytes ? null : attributeBytes(Buffer.from(r, 'latin1').toString('utf8'), this.page.utf8);
    }
    if (name === 'rel' && tag === 'link') {
      // Connection hints connect to a host whatever the fetch policy says: dropped (kept as data-archive-orig-rel when nothing else is left).
      const tokens = attributeUrl(raw, this.page.utf8)
        .split(/[\t\n\f\r ]+/)
        .filter(Boolean);
      const kept = tokens.filter((k) => !CONNECTION_HINTS.has(k.toLowerCase()));
      if (kept.length === tokens.length) return null;
      return kept.length ? attributeBytes(kept.join(' '), this.page.utf8) : DROP;
    }
    if (name === 'type' && tag === 'script' && attributeUrl(raw, this.page.utf8).trim().toLowerCase() === 'speculationrules') {
      // Speculation rules prefetch their URLs as navigations, which no fetch directive governs: a data block instead.
      return INERT_SPECULATION_RULES;
    }
    if (
      name === 'content' &&
      tag === 'meta' &&
      attrs.some(([n, v]) => n === 'http-equiv' && attributeUrl(v, this.page.utf8).trim().toLowerCase() === 'refresh')
    ) {
      // The refresh as the browser reads it (entities decoded): into the archive, or dropped when it would leave it.
      const text = attributeUrl(raw, this.page.utf8);
      const r = rewriteRefresh(text, (u) => refreshUrl(this.page, u, this.docBase));
      if (r === null) return DROP;
      if (r === text) return null;
      this.rewritten++;
      return attributeBytes(r, this.page.utf8);
    }
    return null;
  }
}

/** The text of parts that are all text. @throws when one is a deferred part */
function textOf(parts: Part[]): string {
  let s = '';
  for (const p of parts) {
    if (typeof p !== 'string') throw new Error('a part of the page was deferred: read it with writeParts/endParts');
    s += p;
  }
  return s;
}

/**
 * What the rewriter writes for a deferred part of a page (as
 * {@link HtmlRewriter} would have written it in place): a tag rewritten
 * alone, at the base URL in force where it stood; a `<style>` text's CSS
 * rewritten.
 *
 * @param page the page (its `inject` is what an `<iframe srcdoc>` gets first; `deferOver` is not used)
 * @returns the text, and how many URLs were rewritten
 */
export function rewritePart(part: DeferredPart, page: HtmlReplay): { text: string; rewritten: number } {
  const at = { ...page, uriR: part.docBase, deferOver: undefined };
  if (part.kind === 'style') {
    let rewritten = 0;
    const text = rewriteCss(part.text, (url) => {
      const mapped = archiveUrl(at, url, part.docBase);
      if (mapped !== null) rewritten++;
      return mapped;
    });
    return { text, rewritten };
  }
  const rw = new HtmlRewriter(at);
  const text = rw.rewriteTag(part.name ?? '', part.attrs ?? [], part.text) ?? part.text;
  return { text, rewritten: rw.rewritten };
}
