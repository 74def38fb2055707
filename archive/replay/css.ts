/**
 * Archival replay of CSS (CSS Syntax Level 3, with css-tree's tokenizer):
 * the URL of every `url(…)` (unquoted or quoted), of `@import "…"`, and of
 * the strings of `image-set(…)` becomes an archive address (urls.ts). The
 * text is a byte view (latin1 string) of the stylesheet: only the URLs
 * change, every other byte stays as it was.
 */
import { tokenize, tokenTypes } from 'css-tree/tokenizer';

/** Unescapes CSS escapes in a URL or string (`\\(` → `(`, `\\41 ` → `A`). */
function unescapeCss(s: string): string {
  return s.replace(/\\([0-9a-fA-F]{1,6}[\t\n\f\r ]?|[\s\S])/g, (_, e: string) =>
    /^[0-9a-fA-F]/.test(e) ? String.fromCodePoint(parseInt(e.trim(), 16) || 0xfffd) : e,
  );
}

/** A URL for CSS: in a quoted string, `"` and `\\` and newlines escaped. */
function quoted(url: string, quote: string): string {
  return quote + url.replace(/[\\"'\n\r]/g, (c) => '\\' + c.charCodeAt(0).toString(16) + ' ') + quote;
}

/**
 * Rewrites the URLs of a stylesheet, a `<style>` element's text or a
 * `style` attribute's declarations.
 *
 * @param css the CSS as a byte view (latin1 string)
 * @param map the archive address of a URL (already unescaped), or `null` to keep it
 * @returns the CSS with the URLs replaced; the same string when nothing changed
 */
export function rewriteCss(css: string, map: (url: string) => string | null): string {
  const edits: [start: number, end: number, text: string][] = [];
  // What the tokens before this one said: inside url( or image-set( functions, after @import.
  let pending: 'url' | 'import' | null = null;
  const functions: string[] = [];
  tokenize(css, (type, start, end) => {
    const text = css.slice(start, end);
    if (type === tokenTypes.WhiteSpace || type === tokenTypes.Comment) return;
    if (type === tokenTypes.Url) {
      // url(  x.png  ): the URL between the parentheses, whitespace trimmed.
      const inner = text.slice(4, text.endsWith(')') ? -1 : undefined);
      const url = unescapeCss(inner.trim());
      const mapped = map(url);
      if (mapped !== null) edits.push([start, end, `url(${quoted(mapped, '"')})`]);
    } else if (type === tokenTypes.String) {
      // A string right inside image-set( (not inside a type() within it).
      const inImageSet = /image-set\($/.test(functions[functions.length - 1] ?? '');
      if (pending || inImageSet) {
        const quote = text[0];
        const url = unescapeCss(text.slice(1, text.endsWith(quote) ? -1 : undefined));
        const mapped = map(url);
        if (mapped !== null) edits.push([start, end, quoted(mapped, quote)]);
      }
    } else if (type === tokenTypes.AtKeyword) {
      pending = text.toLowerCase() === '@import' ? 'import' : null;
      return;
    } else if (type === tokenTypes.Function) {
      functions.push(text.toLowerCase());
      pending = text.toLowerCase() === 'url(' ? 'url' : pending === 'import' ? null : pending;
      return;
    } else if (type === tokenTypes.LeftParenthesis) {
      functions.push('(');
    } else if (type === tokenTypes.RightParenthesis) {
      functions.pop();
    }
    pending = null;
  });
  if (!edits.length) return css;
  let out = '';
  let at = 0;
  for (const [start, end, text] of edits) {
    out += css.slice(at, start) + text;
    at = end;
  }
  return out + css.slice(at);
}
