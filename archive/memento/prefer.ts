/**
 * Prefer negotiation of raw Mementos (RFC 7240; the Prefer rules of
 * docs/architecture.md "Replay and Prefer").
 *
 * Dimensions: `original-content`, `original-links`, `echo-original-headers`.
 * pywb's tokens are understood too: `raw` = all three, `rewritten` = the
 * default Memento. Unknown preferences are ignored (RFC 7240 §2: a server
 * ignores preferences it does not understand); so are their parameters.
 */

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
 * The dimensions a Memento response satisfies (Prefer rule 3): the stored
 * bytes (the raw `id_` variant, or Prefer: original-content) satisfy all
 * three; the default Memento keeps links (none is rewritten) and echoes
 * headers (`X-Archive-Orig-*`), and keeps the content too when nothing was
 * inserted or decoded.
 *
 * @param originalContent the stored bytes are served exactly
 * @param bodyChanged the default Memento's body differs from the stored one
 */
export function satisfied(originalContent: boolean, bodyChanged: boolean): Dimension[] {
  return originalContent || !bodyChanged ? [...DIMENSIONS] : ['original-links', 'echo-original-headers'];
}

/**
 * The Preference-Applied value of a response (Prefer rules 3, 4, 6): the
 * dimensions the response satisfies, plus pywb's `raw` when it asked for
 * raw and got the stored bytes, or `rewritten` when it asked for that and
 * got the default Memento.
 *
 * @param originalContent the stored bytes are served exactly
 */
export function preferenceApplied(p: PreferRequest, originalContent: boolean, bodyChanged: boolean): string {
  const list: string[] = satisfied(originalContent, bodyChanged);
  if (p.raw && originalContent) list.push('raw');
  if (p.rewritten && !originalContent) list.push('rewritten');
  return list.join(', ');
}
