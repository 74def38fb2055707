/**
 * The shape of this archive's URI-Ms (RFC 7089 §1.2; docs/url-space.md):
 * `{base}/{archive}/memento/{timestamp}{modifier}/{URI-R}`, the one builder
 * and the one parser of it. The timestamp is the Memento-Datetime as 14
 * digits `YYYYMMDDhhmmss` (UTC), or 1–13 digits naming a period (Wayback
 * style, archive/read/nearest.ts `timestampPeriod`); the modifier is `''` or two
 * lower-case letters and `_` (archive/memento/prefer.ts `FORM_MODIFIERS` and
 * `CONTEXT_MODIFIERS` say which name a form: `id_`, `ol_`, `im_`, `js_`,
 * `cs_`, `oe_`, `if_`, `fw_`). The URI-R follows as it is, not encoded.
 */

/** A URI-M's parts after the archive's base. */
export interface UriM {
  /** The archive's id. */
  archive: string;
  /** The Memento-Datetime, 14 digits (UTC), or 1–13 digits naming a period. */
  timestamp: string;
  /** `''`, or the form or context modifier (`id_`, `ol_`, `if_`…). */
  modifier: string;
  /** The URI-R, as it is. */
  uriR: string;
}

/** The timestamp segment: 1–14 digits and an optional modifier. */
const TIMESTAMP_SEGMENT = String.raw`(\d{1,14})([a-z]{2}_)?`;
const SEGMENT = new RegExp(`^${TIMESTAMP_SEGMENT}$`);
/** `/{archive}/memento/{timestamp}{modifier}/{URI-R}`, first found (RFC 3986 §3.3: the archive id is one path segment). */
const URI_M = new RegExp(String.raw`/([^/?#]+)/memento/${TIMESTAMP_SEGMENT}/(.*)$`, 's');

/**
 * The path of a URI-M under the archive's base, without the leading slash:
 * `{archive}/memento/{timestamp}{modifier}/{URI-R}`. Nothing is checked or
 * encoded: the parts are as the caller has them.
 */
export function uriMPath(m: UriM): string {
  return `${m.archive}/memento/${m.timestamp}${m.modifier}/${m.uriR}`;
}

/**
 * A URI-M (RFC 7089 §1.2): `{base}/{archive}/memento/{timestamp}{modifier}/{URI-R}`.
 *
 * @param base the archive's public base URL, no trailing slash (`''` for a path from the root)
 */
export function buildUriM(base: string, m: UriM): string {
  return `${base}/${uriMPath(m)}`;
}

/**
 * The timestamp segment of a URI-M, `{timestamp}{modifier}` (`20010320203500`,
 * `2001id_`): 1–14 digits and an optional modifier of two lower-case
 * letters and `_`, any such (the caller asks prefer.ts `formOfModifier`
 * which form it names, if any).
 *
 * @returns `undefined` when the segment has another shape (no digits, more than 14, upper case)
 */
export function parseUriMTimestamp(segment: string): { timestamp: string; modifier: string } | undefined {
  const m = SEGMENT.exec(segment);
  return m ? { timestamp: m[1], modifier: m[2] ?? '' } : undefined;
}

/**
 * The parts of the first URI-M shape found in `uri` (an absolute URI-M, or
 * a path after the base): `base` is what comes before it (`''` when `uri`
 * starts with it). Case-sensitive, as the Memento route is. The modifier
 * is any of two lower-case letters and `_`; which name a form, archive/memento/prefer.ts
 * `formOfModifier` says. The URI-R is everything after the timestamp
 * segment's slash, as it is (query included).
 *
 * @returns `undefined` when `uri` has no `/{archive}/memento/{1–14 digits}{modifier}/` in it
 */
export function parseUriM(uri: string): (UriM & { base: string }) | undefined {
  const m = URI_M.exec(uri);
  if (!m) return undefined;
  return { base: uri.slice(0, m.index), archive: m[1], timestamp: m[2], modifier: m[3] ?? '', uriR: m[4] };
}
