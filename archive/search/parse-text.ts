/**
 * The title and the text a reader sees of a page, for the full-text index:
 * parsed with the archive's one HTML parser (htmlparser2 through
 * replay/html-parser.ts `BoundedParser`, as the diff's text is,
 * web/text.ts). Script, style, noscript and template content and comments
 * are left out; entities decoded; white space folded. Plain text is kept
 * as it is. At most {@link MAX_TEXT_CHARS} characters are kept (and
 * {@link MAX_TITLE_CHARS} of the title); control characters are dropped
 * (snippets mark matches with two of them). A pure function of its input,
 * which imports nothing of the daemon: it runs in a work pool's thread
 * (archive/work/tasks.ts `text`).
 */
import { BoundedParser } from '../replay/html-parser.js';

/** Most characters of text kept per memento. */
export const MAX_TEXT_CHARS = 200_000;
/** Most characters of a title kept. */
export const MAX_TITLE_CHARS = 500;

const SKIP = new Set(['script', 'style', 'noscript', 'template']);
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g;

/** A memento's searchable text: its title ('' for none, and for plain text) and visible text, folded to single spaces. */
export interface ExtractedText {
  title: string;
  body: string;
}

/** Folds white space and drops control characters. */
function clean(s: string, max: number): string {
  return s.replace(CONTROL, ' ').replace(/\s+/g, ' ').trim().slice(0, max);
}

/**
 * The title and visible text of a body read by extract.ts `readIndexedText`
 * (see the module comment).
 */
export function extractFromText(input: { html: boolean; text: string }): ExtractedText {
  if (!input.html) return { title: '', body: clean(input.text, MAX_TEXT_CHARS) };
  let body = '';
  let title = '';
  let skipping = 0;
  let inTitle = 0;
  const parser = new BoundedParser(
    {
      onopentagname(name) {
        if (SKIP.has(name)) skipping++;
        else if (name === 'title') inTitle++;
        // Elements separate words (`<td>a</td><td>b</td>` is "a b").
        body += ' ';
      },
      onclosetag(name) {
        if (SKIP.has(name)) skipping = Math.max(0, skipping - 1);
        else if (name === 'title') inTitle = Math.max(0, inTitle - 1);
        body += ' ';
      },
      ontext(text) {
        if (skipping) return;
        if (inTitle) {
          if (title.length < MAX_TITLE_CHARS * 2) title += text;
        } else if (body.length < MAX_TEXT_CHARS * 2) body += text;
      },
    },
    { decodeEntities: true, lowerCaseTags: true },
  );
  parser.write(input.text);
  parser.end();
  return { title: clean(title, MAX_TITLE_CHARS), body: clean(body, MAX_TEXT_CHARS) };
}
