/**
 * The title of a captured HTML page, for the `title` of its line in a WACZ
 * package's pages/pages.jsonl (WACZ 1.1.1 "pages.jsonl": `title` optional),
 * so that ReplayWeb.page lists pages by their titles, not only their URLs.
 * A stored page is hostile input: only its first {@link TITLE_READ_BYTES}
 * decoded bytes are read (content-coding, then charset: web/text.ts), the
 * text of its first `<title>` element is taken with htmlparser2 (entities
 * decoded, white space folded), and at most {@link TITLE_MAX_CHARS}
 * characters are kept.
 */
import { Parser } from 'htmlparser2';
import { canDecode } from '../replay/content-coding.js';
import { storedContentEncoding } from '../replay/content-coding.js';
import type { StoredResponse } from '../store/warcs/stored-response.js';
import { readDecodedText } from '../web/text.js';

/** Most decoded body bytes read for the title (a `<title>` sits in the head, near the start). */
export const TITLE_READ_BYTES = 64 * 1024;
/** Most characters of a title kept. */
export const TITLE_MAX_CHARS = 300;

/**
 * The page's title: the text of its first `<title>` element, white space
 * folded, cut to {@link TITLE_MAX_CHARS} characters; `undefined` when it
 * has none in its first {@link TITLE_READ_BYTES} bytes, the title is empty,
 * or its content-coding is one the archive cannot decode. Closes `stored`.
 */
export async function pageTitle(stored: StoredResponse): Promise<string | undefined> {
  const enc = storedContentEncoding(stored);
  if (stored.bodyLength === 0 || (enc && !canDecode(enc))) {
    stored.close();
    return undefined;
  }
  let inTitle = false;
  let done = false;
  let title = '';
  const parser = new Parser(
    {
      onopentagname(name) {
        if (name === 'title' && !done) inTitle = true;
      },
      onclosetag(name) {
        if (name === 'title' && inTitle) {
          inTitle = false;
          done = true;
        }
      },
      ontext(text) {
        if (inTitle && title.length <= TITLE_MAX_CHARS * 4) title += text;
      },
    },
    { decodeEntities: true, lowerCaseTags: true },
  );
  const { rest } = await readDecodedText(stored, enc, TITLE_READ_BYTES, (s) => {
    if (!done) parser.write(s);
  });
  if (!done) parser.write(rest);
  parser.end();
  const folded = title.replace(/\s+/g, ' ').trim();
  return folded ? [...folded].slice(0, TITLE_MAX_CHARS).join('') : undefined;
}
