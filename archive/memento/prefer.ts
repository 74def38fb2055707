/**
 * Prefer negotiation of raw Mementos (RFC 7240; the Prefer rules of
 * docs/architecture.md "Replay and Prefer").
 *
 * Dimensions: `original-content`, `original-links`, `echo-original-headers`.
 * pywb's tokens are understood too: `raw` = all three, `rewritten` = the
 * default Memento. Unknown preferences are ignored (RFC 7240 §2: a server
 * ignores preferences it does not understand); so are their parameters.
 */
import type { BodyChanges } from '../replay/cache.js';

export const DIMENSIONS = ['original-content', 'original-links', 'echo-original-headers'] as const;
export type Dimension = (typeof DIMENSIONS)[number];

/** What a Prefer request header asks for. */
export interface PreferRequest {
  /** Known dimensions asked for (`raw` adds all three). */
  dims: Set<Dimension>;
  /** pywb's `raw` token was sent. */
  raw: boolean;
  /** pywb's `rewritten` token was sent (= the default Memento). */
  rewritten: boolean;
}

/**
 * Parses Prefer header value(s) (RFC 7240 §2: comma-separated preferences,
 * each `token[=value]` with `;`-parameters; tokens compare case-insensitively).
 *
 * @param header one Prefer value or several (repeated headers)
 * @returns the known dimensions and pywb tokens asked for; empty when none
 *   (also for a header of unknown tokens only: Prefer rule 7)
 */
export function parsePrefer(header: string | string[] | undefined): PreferRequest {
  const out: PreferRequest = { dims: new Set(), raw: false, rewritten: false };
  if (!header) return out;
  const text = Array.isArray(header) ? header.join(',') : header;
  // Commas inside a quoted-string value do not separate preferences (RFC 7240 §2, RFC 9110 §5.6.4).
  for (const pref of text.match(/(?:[^,"]|"(?:[^"\\]|\\.)*")+/g) ?? []) {
    const token = pref.split(';')[0].split('=')[0].trim().toLowerCase();
    if ((DIMENSIONS as readonly string[]).includes(token)) out.dims.add(token as Dimension);
    else if (token === 'raw') {
      out.raw = true;
      for (const d of DIMENSIONS) out.dims.add(d);
    } else if (token === 'rewritten') out.rewritten = true;
  }
  return out;
}

/** True when the request carries any preference this archive understands. */
export function hasPreference(p: PreferRequest): boolean {
  return p.dims.size > 0 || p.raw || p.rewritten;
}

/**
 * The three forms of a Memento, each with its own URI-M
 * (docs/url-space.md): `replay`, the archival replay (`/<ts>/`: URLs
 * rewritten into the archive); `links`, the stored page with a base
 * element naming its URI-R and nothing rewritten (`/<ts>ol_/`); `raw`, the
 * stored bytes exactly (`/<ts>id_/`).
 */
export type MementoForm = 'replay' | 'links' | 'raw';

/** The timestamp modifier of each form's URI-M (`/<ts><modifier>/<URI-R>`). */
export const FORM_MODIFIERS: Record<MementoForm, string> = { replay: '', links: 'ol_', raw: 'id_' };

/**
 * The Wayback Machine's and pywb's modifiers that name the context a
 * resource is loaded in (`im_` image, `js_` script, `cs_` stylesheet, `oe_`
 * object or embed, `if_` iframe, `fw_` frame): pywb serves each as its
 * rewritten replay without a banner, and here they name the archival
 * replay, whose rewriting follows the stored Content-Type (an address of
 * that form is answered as the one without modifier, which it names in
 * Content-Location and in Link).
 */
export const CONTEXT_MODIFIERS: readonly string[] = ['im_', 'js_', 'cs_', 'oe_', 'if_', 'fw_'];

/** The form a timestamp modifier names (`''`, `ol_`, `id_`, and the replay for {@link CONTEXT_MODIFIERS}); `undefined` for another. */
export function formOfModifier(modifier: string): MementoForm | undefined {
  if (CONTEXT_MODIFIERS.includes(modifier)) return 'replay';
  return (Object.keys(FORM_MODIFIERS) as MementoForm[]).find((f) => FORM_MODIFIERS[f] === modifier);
}

/**
 * The form that satisfies the most of what was asked for (Prefer rules 3,
 * 8): `original-content` (or `raw`) → raw; else `original-links` → links;
 * else pywb's `rewritten` → replay; else the form the address names. The
 * raw URI-M stays raw whatever Prefer says.
 */
export function formFor(p: PreferRequest, addressForm: MementoForm): MementoForm {
  if (addressForm === 'raw' || p.dims.has('original-content')) return 'raw';
  if (p.dims.has('original-links')) return 'links';
  if (p.rewritten) return 'replay';
  return addressForm;
}

/**
 * The dimensions a Memento response satisfies (Prefer rule 3): the content
 * when nothing was inserted or rewritten (always in the raw form: the
 * stored bytes); the links when no URI was rewritten (the links form and
 * the raw form rewrite none in the body; the archival replay rewrites a
 * page's or a stylesheet's; every form sends a 3xx's `Location` into the
 * archive, memento/location.ts); the original headers always
 * (`X-Archive-Orig-*`).
 */
export function satisfied(form: MementoForm, changes: BodyChanges): Dimension[] {
  const out: Dimension[] = [];
  if (form === 'raw' || !changes.content) out.push('original-content');
  if (!changes.links) out.push('original-links');
  out.push('echo-original-headers');
  return out;
}

/**
 * The Preference-Applied value of a response (Prefer rules 3, 4, 6): the
 * dimensions it satisfies, plus pywb's `raw` when it asked for that and got
 * the raw form, or `rewritten` when it asked for that and got the replay.
 */
export function preferenceApplied(p: PreferRequest, form: MementoForm, changes: BodyChanges): string {
  const list: string[] = satisfied(form, changes);
  if (p.raw && form === 'raw') list.push('raw');
  if (p.rewritten && form === 'replay') list.push('rewritten');
  return list.join(', ');
}
