/**
 * Attribute values of a page held as a byte view (latin1 string, each
 * character one byte of the page): reading one as the text it means
 * (entities decoded, UTF-8 decoded in a UTF-8 page) and writing text back
 * as bytes for a double-quoted value (HTML "attribute value (double-quoted)
 * state"; entities from the `entities` package).
 */
import { decodeHTMLAttribute } from 'entities';

/**
 * The byte view (latin1 string) of a value in a page whose bytes are
 * `utf8`, as the characters the page means: URLs in a UTF-8 page are UTF-8;
 * in a latin1 or windows-1252 page each byte is its character already.
 */
export function textOf(latin1: string, utf8: boolean): string {
  return utf8 && NON_ASCII.test(latin1) ? Buffer.from(latin1, 'latin1').toString('utf8') : latin1;
}

const NON_ASCII = /[\x80-\xff]/;

/** An attribute value as written (entities not decoded, byte view) → the text it means (entities decoded). */
export function attributeUrl(raw: string, utf8: boolean): string {
  const text = textOf(raw, utf8);
  return text.includes('&') ? decodeHTMLAttribute(text) : text;
}

/**
 * Text for a double-quoted attribute value in a page whose bytes are
 * `utf8`, as a byte view: `&` and `"` escaped; other characters as the
 * page's bytes (UTF-8), or, in a single-byte page, as themselves up to
 * U+00FF and as character references above.
 */
export function attributeBytes(text: string, utf8: boolean): string {
  const escaped = text.replace(/&/g, '&amp;').replace(/"/g, '&quot;');
  if (utf8) return Buffer.from(escaped, 'utf8').toString('latin1');
  return escaped.replace(/[\u0100-\u{10ffff}]/gu, (c) => `&#x${c.codePointAt(0)!.toString(16)};`);
}
