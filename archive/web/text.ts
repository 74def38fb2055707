/**
 * The text of a capture, for "what changed" (`/web/diff/…`): an HTML page
 * as the lines a reader sees (htmlparser2's tokenizer; scripts, styles and
 * templates left out, block elements start a line), any other text type as
 * it is. The stored body is decoded (content-coding, then charset) and read
 * only up to {@link TEXT_LIMIT} bytes, so a diff holds two bounded texts
 * whatever the size of the captures.
 */
import { isUtf8 } from 'node:buffer';
import { BoundedParser } from '../replay/html-parser.js';
import { charsetOf, getHeader } from '#shared/http-head.js';
import { canDecode, decodeBody, storedContentEncoding } from '../replay/content-coding.js';
import { isHtml } from '../replay/html-base.js';
import type { StoredResponse } from '../store/warcs/warc-reader.js';

/** Most decoded body bytes read of each capture. */
export const TEXT_LIMIT = 1024 * 1024;

/** The text of a capture. */
export interface CaptureText {
  /** `html`: the text a reader sees; `text`: the body as it is; `none`: not text (an image…), or empty. */
  kind: 'html' | 'text' | 'none';
  /** One entry per line, trimmed, no empty lines. */
  lines: string[];
  /** The body was longer than {@link TEXT_LIMIT} and was cut there. */
  truncated: boolean;
}

const SKIP = new Set(['script', 'style', 'noscript', 'template']);
const BLOCK = new Set([
  'address', 'article', 'aside', 'blockquote', 'br', 'dd', 'details', 'div', 'dl', 'dt', 'fieldset', 'figcaption', 'figure', 'footer', 'form',
  'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'header', 'hr', 'li', 'main', 'nav', 'ol', 'p', 'pre', 'section', 'summary', 'table', 'td', 'th', 'tr', 'ul', 'title',
]); // prettier-ignore

/** A decoder for the body's charset (its Content-Type, else UTF-8 when the first bytes are UTF-8, else windows-1252). */
function decoderFor(contentType: string | undefined, head: Buffer): TextDecoder {
  const label = charsetOf(contentType) ?? (isUtf8(head.subarray(0, Math.min(head.length, 64 * 1024 - 4))) ? 'utf-8' : 'windows-1252');
  try {
    return new TextDecoder(label);
  } catch {
    return new TextDecoder('windows-1252');
  }
}

/**
 * Decodes a stored body (its content-coding `enc`, then its charset,
 * {@link decoderFor}) up to `limit` body bytes, handing each piece of text
 * to `onText` as it comes; a corrupt content-coding ends it with what was
 * read. Closes `stored` before it returns.
 *
 * @returns `cut`: the body was longer than `limit`; `rest`: what the
 *   charset decoder still held at the end (an incomplete last character)
 */
export async function readDecodedText(
  stored: StoredResponse,
  enc: string | undefined,
  limit: number,
  onText: (text: string) => void,
): Promise<{ cut: boolean; rest: string }> {
  const contentType = getHeader(stored.headers, 'content-type');
  let decoder: TextDecoder | undefined;
  let read = 0;
  let cut = false;
  try {
    for await (const chunk of enc ? decodeBody(stored.body, enc) : stored.body) {
      let buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      if (read + buf.length > limit) {
        buf = buf.subarray(0, limit - read);
        cut = true;
      }
      read += buf.length;
      decoder ??= decoderFor(contentType, buf);
      onText(decoder.decode(buf, { stream: true }));
      if (cut) break;
    }
  } catch {
    // a corrupt content-coding: what was read so far
  } finally {
    stored.close();
  }
  return { cut, rest: decoder?.decode() ?? '' };
}

/**
 * Reads the text of a stored response (see the module comment). Closes
 * `stored` before it returns.
 *
 * @param mime the capture's media type (lower case, no parameters)
 */
export async function captureText(stored: StoredResponse, mime: string): Promise<CaptureText> {
  const html = isHtml(mime);
  const textual = html || mime.startsWith('text/') || /[+/](json|xml|javascript)$/.test(mime);
  const enc = storedContentEncoding(stored);
  if (!textual || stored.bodyLength === 0 || (enc && !canDecode(enc))) {
    stored.close();
    return { kind: 'none', lines: [], truncated: false };
  }
  const lines: string[] = [];
  let line = '';
  const endLine = () => {
    const l = line.replace(/\s+/g, ' ').trim();
    if (l) lines.push(l);
    line = '';
  };
  let skipping = 0;
  const parser = new BoundedParser(
    {
      onopentagname(name) {
        if (SKIP.has(name)) skipping++;
        if (BLOCK.has(name)) endLine();
      },
      onclosetag(name) {
        if (SKIP.has(name)) skipping = Math.max(0, skipping - 1);
        if (BLOCK.has(name)) endLine();
      },
      ontext(text) {
        if (!skipping) line += text;
      },
    },
    { decodeEntities: true, lowerCaseTags: true },
  );
  let plain = '';
  const { cut: truncated, rest } = await readDecodedText(stored, enc, TEXT_LIMIT, (s) => (html ? parser.write(s) : (plain += s)));
  if (!html) {
    plain += rest;
    return {
      kind: 'text',
      lines: plain
        .split(/\r?\n/)
        .map((l) => l.trimEnd())
        .filter((l) => l.trim() !== ''),
      truncated,
    };
  }
  parser.end();
  endLine();
  return { kind: 'html', lines, truncated };
}
