/**
 * The text a search finds in a memento: its title and the text a reader
 * sees, from the stored body, with the archive's one HTML parser
 * (htmlparser2 through replay/html-parser.ts `BoundedParser`, as the diff's
 * text does, web/text.ts). Script, style, noscript and template content and
 * comments are left out; entities decoded; white space folded. Plain text
 * is kept as it is. Bounded per capture: at most {@link TEXT_LIMIT} decoded
 * body bytes are read, at most {@link MAX_TEXT_CHARS} characters kept (and
 * {@link MAX_TITLE_CHARS} of the title); control characters are dropped
 * (snippets mark matches with two of them).
 */
import { BoundedParser } from '../replay/html-parser.js';
import { canDecode } from '../replay/content-coding.js';
import { storedContentEncoding } from '../memento/body.js';
import { isHtml } from '../replay/html-base.js';
import { readDecodedText, TEXT_LIMIT } from '../web/text.js';
import type { StoredResponse } from '../store/warcs/warc-reader.js';

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
 * Reads what a memento's text is extracted from: its body decoded to text
 * (at most {@link TEXT_LIMIT} decoded bytes); closes `stored`. `null` for a
 * body not HTML nor text, an empty one, or one in a content-coding the
 * archive cannot decode (its text is empty).
 *
 * @param mime the memento's media type, lower case, no parameters
 */
export async function readIndexedText(stored: StoredResponse, mime: string): Promise<{ html: boolean; text: string } | null> {
  const html = isHtml(mime);
  const enc = storedContentEncoding(stored);
  if ((!html && mime !== 'text/plain') || stored.bodyLength === 0 || (enc && !canDecode(enc))) {
    stored.close();
    return null;
  }
  const parts: string[] = [];
  const { rest } = await readDecodedText(stored, enc, TEXT_LIMIT, (s) => parts.push(s));
  parts.push(rest);
  return { html, text: parts.join('') };
}

/**
 * The title and visible text of a body read by {@link readIndexedText}
 * (see the module comment): a pure function of its input, the CPU part of
 * the extraction (it runs in a work pool's thread, archive/work/tasks.ts).
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

/**
 * Extracts the title and visible text of a stored response (see the module
 * comment); closes `stored`. A body not HTML nor text, or in a
 * content-coding the archive cannot decode, gives empty text.
 *
 * @param mime the memento's media type, lower case, no parameters
 * @param extract where {@link extractFromText} runs (default: in this thread)
 */
export async function extractText(
  stored: StoredResponse,
  mime: string,
  extract: (input: { html: boolean; text: string }) => ExtractedText | Promise<ExtractedText> = extractFromText,
): Promise<ExtractedText> {
  const input = await readIndexedText(stored, mime);
  return input ? extract(input) : { title: '', body: '' };
}
