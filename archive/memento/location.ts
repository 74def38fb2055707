/**
 * The `Location` of a Memento of a 3xx, in every form (RFC 7089 §4.5.4;
 * docs/http-api.md "Memento"): a browser that follows it stays in the
 * archive. The stored target, resolved against the URI-R, becomes the
 * archive address of that URL in the same form (`/<id>/memento/<ts>/…`,
 * `…<ts>ol_/…`, `…<ts>id_/…`) at the memento's time, where the nearest
 * capture answers; a target that is already an archive address goes out
 * as stored; one that cannot go into the archive (another scheme, or
 * unparsable) is not sent. The stored value always goes out as
 * `X-Archive-Orig-Location` (response.ts), as pywb sends it: so the
 * archive's origin never redirects to a site a stored page chose.
 */
import { archiveUrl, type ReplayTarget } from '../replay/urls.js';
import { FORM_MODIFIERS, type MementoForm } from './prefer.js';

/** A 3xx status: its `Location` is followed. */
export function isRedirect(status: number): boolean {
  return status >= 300 && status < 400;
}

/**
 * The `Location` a Memento of a 3xx sends (see the module comment).
 *
 * @param target the archive, and the time (14 digits) the address names
 * @param form the form served: the address keeps it
 * @param stored the stored `Location` value, as captured
 * @param uriR the memento's URI-R (a relative target resolves against it)
 * @returns `location`: the value to send, `undefined` for none; `changed`: it differs from the stored one (for Preference-Applied's `original-links`)
 */
export function mementoLocation(target: ReplayTarget, form: MementoForm, stored: string, uriR: string): { location?: string; changed: boolean } {
  const mapped = archiveUrl(target, stored, uriR, FORM_MODIFIERS[form]);
  if (mapped !== null) return { location: mapped, changed: true };
  try {
    if (new URL(stored.trim(), uriR).href.startsWith(target.base + '/')) return { location: stored, changed: false };
  } catch {
    // unparsable: not sent
  }
  return { changed: true };
}
