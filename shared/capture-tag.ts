/**
 * The entity tag of a capture, for conditional capture PUTs
 * (docs/capture-record.md, "Conditional captures"): what the archive's
 * dedup compares — the payload digest, the status and the media type —
 * in one opaque tag (RFC 9110 §8.8.3), so that a client can ask "store this
 * only if the memento it would follow differs" with `If-None-Match`
 * (RFC 9110 §13.1.2) before it sends the body. Both daemons build the tag
 * here: the archive from a memento's index row, the capture proxy from the
 * capture it holds.
 */

/** Media type without parameters, lower case; `''` for none (RFC 9110 §8.3.1). The index row's `mime`. */
export function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0].trim().toLowerCase();
}

/** What the dedup of a capture compares (an index row has these three). */
export interface CaptureIdentity {
  /** WARC-Payload-Digest of the body as stored: `sha256:<64 hex digits>`. */
  digest: string;
  /** The captured response's status. */
  status: number;
  /** Its media type, {@link mediaType} of its `Content-Type`. */
  mime: string;
}

/** Characters left as they are in the tag's media-type part (etagc, RFC 9110 §8.8.3, minus `%` and `;`). */
const TAG_SAFE = /[^A-Za-z0-9!#$&'()*+,./:<=>?@[\]^_`{|}~-]/g;

/**
 * The strong entity tag of a capture, quotes included:
 * `"<digest>;<status>;<media type>"`, e.g.
 * `"sha256:2c26…e7ae;200;text/html"`. The media type is percent-encoded
 * (UTF-8) where it has a character an entity tag cannot hold (space,
 * `"`, `;`, `%`, control or non-ASCII characters), so any Content-Type a
 * server sent gives a valid tag; an empty one leaves the part empty.
 */
export function captureEntityTag(c: CaptureIdentity): string {
  const mime = c.mime.replace(TAG_SAFE, (ch) => [...Buffer.from(ch, 'utf8')].map((b) => '%' + b.toString(16).toUpperCase().padStart(2, '0')).join(''));
  return `"${c.digest};${c.status};${mime}"`;
}

/**
 * An `If-None-Match` field value (RFC 9110 §13.1.2): `'*'`, or the
 * opaque tags it lists (quotes kept, `W/` removed: If-None-Match uses the
 * weak comparison, RFC 9110 §8.8.3.2). Malformed members are left out;
 * `undefined` when the field is absent or lists no valid tag (the
 * condition is then ignored, as for any field a server cannot parse).
 */
export function parseIfNoneMatch(value: string | string[] | undefined): '*' | string[] | undefined {
  if (value === undefined) return undefined;
  const text = Array.isArray(value) ? value.join(', ') : value;
  if (text.trim() === '*') return '*';
  const tags = text.match(/(?:W\/)?"[^"]*"/g)?.map((t) => (t.startsWith('W/') ? t.slice(2) : t));
  return tags && tags.length ? tags : undefined;
}

/**
 * Whether `If-None-Match` (as {@link parseIfNoneMatch} gives it) matches
 * the memento a capture would follow: `'*'` matches any memento, a list
 * matches when one of its tags is that memento's
 * {@link captureEntityTag}. No memento matches nothing.
 */
export function ifNoneMatchMatches(condition: '*' | string[], memento: CaptureIdentity | undefined): boolean {
  if (!memento) return false;
  if (condition === '*') return true;
  return condition.includes(captureEntityTag(memento));
}
