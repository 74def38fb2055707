/**
 * The text a search finds in a memento, read from its stored body: the
 * body decoded to text (at most {@link TEXT_LIMIT} decoded bytes, in the
 * event loop: reading and decoding are I/O and zlib's threads), then its
 * title and visible text parsed out (parse-text.ts, a pure function the
 * daemon runs in its `text` work pool's thread).
 */
import { canDecode } from '../replay/content-coding.js';
import { storedContentEncoding } from '../memento/body.js';
import { isHtml } from '../replay/html-base.js';
import { readDecodedText, TEXT_LIMIT } from '../web/text.js';
import type { StoredResponse } from '../store/warcs/warc-reader.js';
import { type ExtractedText, extractFromText } from './parse-text.js';

export type { ExtractedText };

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
