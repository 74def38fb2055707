/**
 * Prefer negotiation of raw Mementos (spec.md "Prefer rules"; RFC 7240).
 *
 * Dimensions: `original-content`, `original-links`, `echo-original-headers`.
 * pywb's tokens are understood too: `raw` = all three, `rewritten` = none
 * beyond the default. Unknown preferences are ignored (RFC 7240 §2).
 */

export const DIMENSIONS = ['original-content', 'original-links', 'echo-original-headers'] as const;
export type Dimension = (typeof DIMENSIONS)[number];

/**
 * The dimensions asked for in Prefer header value(s).
 *
 * @param header one Prefer value or several (repeated headers)
 * @returns the set of known dimensions asked for (empty when none)
 */
export function parsePrefer(header: string | string[] | undefined): Set<Dimension> {
  const out = new Set<Dimension>();
  if (!header) return out;
  const text = Array.isArray(header) ? header.join(',') : header;
  for (const pref of text.split(',')) {
    const token = pref.split(';')[0].split('=')[0].trim().toLowerCase();
    if ((DIMENSIONS as readonly string[]).includes(token)) out.add(token as Dimension);
    else if (token === 'raw') DIMENSIONS.forEach((d) => out.add(d));
  }
  return out;
}

/**
 * The dimensions a Memento response satisfies: the default Memento keeps
 * links and echoes headers; it keeps content too unless a base element was
 * added; the raw (`id_`) variant satisfies all three.
 */
export function satisfied(raw: boolean, bodyChanged: boolean): Dimension[] {
  return raw || !bodyChanged ? [...DIMENSIONS] : ['original-links', 'echo-original-headers'];
}
