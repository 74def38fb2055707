/**
 * The paging cursor of the `/web/` prefix and domain lists (`?after=`,
 * archive/read/pages.ts `VisiblePages.urlsUnder`), in the two shapes a
 * page link carries it.
 *
 * - A page that ends on a URL it shows goes on after that URL's urlkey,
 *   written as it is: readable, and good for as long as the URL is
 *   archived (the normal case: a full page).
 * - A page cut short among URLs the access rules hide goes on after a
 *   hidden urlkey, which no page may spell, not even a part of it (an
 *   excluded URL looks never captured: docs/threat-model.md). That cursor
 *   is sealed: `~` and the base64url of a 12-byte IV, the 16-byte
 *   AES-256-GCM tag and the urlkey encrypted, padded with NULs to a
 *   multiple of {@link SEAL_BLOCK} bytes so that the token's length tells
 *   no more than that; the list it belongs to (prefix or domain, and its
 *   urlkey) is its associated data. The key is made once per daemon (a
 *   {@link CursorSeal}, one per VisiblePages: `randomBytes`) and never
 *   stored: a sealed cursor opens only in the daemon that made it, until
 *   it stops, for the same list, unaltered.
 *
 * A urlkey always holds a `)` (the end of its host, shared/surt.ts), which
 * base64url never does, so the two shapes never meet: a cursor is sealed
 * when it begins with `~` and has no `)`.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { httpError } from '#shared/http-error.js';

/** The first character of a sealed cursor. */
export const SEALED_MARK = '~';

/** A sealed urlkey is padded with NULs to a multiple of this many bytes (a urlkey is printable ASCII: no NUL). */
export const SEAL_BLOCK = 128;

/**
 * The longest sealed cursor {@link CursorSeal.open} reads (characters); a longer
 * one is refused before any decoding. It seals a urlkey of up to 49,023
 * bytes, far past any request head the daemon accepts
 * (`max_http_header_bytes`, 16 KiB by default).
 */
export const MAX_SEALED_LENGTH = 65_536;

/** The one-line reason of the 400 for a sealed cursor that does not open. */
export const CURSOR_EXPIRED =
  'this page link has expired (the archive has restarted since it was made, or the link was altered); start the list again from its first page';

const IV_BYTES = 12;
const TAG_BYTES = 16;

/** Whether `cursor` is a sealed one (`~`, no `)`), as against a urlkey written as it is. */
export function isSealed(cursor: string): boolean {
  return cursor.startsWith(SEALED_MARK) && !cursor.includes(')');
}

/** Seals and opens cursors under one AES-256-GCM key, made with the object and kept only in memory. */
export class CursorSeal {
  /** @param key 32 bytes; a fresh random key unless given (a test's, to seal as another daemon would) */
  constructor(private readonly key: Buffer = randomBytes(32)) {}

  /**
   * `urlkey` sealed for the list `list` (any string naming the list, the
   * same at {@link open}): `~` and base64url, 1 + ⌈4/3 × (28 + the
   * urlkey's bytes padded to {@link SEAL_BLOCK})⌉ characters (209 for a
   * urlkey under 128 bytes). A fresh IV each call: two seals of one urlkey
   * differ.
   * @param urlkey a urlkey (printable ASCII)
   */
  seal(urlkey: string, list: string): string {
    const bytes = Buffer.from(urlkey, 'utf8');
    const plain = Buffer.alloc(Math.ceil((bytes.length + 1) / SEAL_BLOCK) * SEAL_BLOCK);
    bytes.copy(plain);
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(list, 'utf8'));
    const sealed = Buffer.concat([cipher.update(plain), cipher.final()]);
    return SEALED_MARK + Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url');
  }

  /**
   * The urlkey a cursor stands for: a sealed one ({@link isSealed}) opened
   * for `list`; any other as it is.
   * @throws HttpError 400 ({@link CURSOR_EXPIRED}) when a sealed cursor does
   *   not open: longer than {@link MAX_SEALED_LENGTH}, not base64url, of a
   *   wrong length, altered, made for another list or under another key
   *   (by the daemon before a restart)
   */
  open(cursor: string, list: string): string {
    if (!isSealed(cursor)) return cursor;
    const body = cursor.slice(SEALED_MARK.length);
    if (cursor.length > MAX_SEALED_LENGTH || !/^[A-Za-z0-9_-]+$/.test(body)) throw httpError(400, CURSOR_EXPIRED);
    const raw = Buffer.from(body, 'base64url');
    if (raw.length < IV_BYTES + TAG_BYTES + SEAL_BLOCK || (raw.length - IV_BYTES - TAG_BYTES) % SEAL_BLOCK) throw httpError(400, CURSOR_EXPIRED);
    let plain: Buffer;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(list, 'utf8'));
      decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      plain = Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
    } catch {
      throw httpError(400, CURSOR_EXPIRED);
    }
    const end = plain.indexOf(0);
    return plain.subarray(0, end < 0 ? plain.length : end).toString('utf8');
  }
}
