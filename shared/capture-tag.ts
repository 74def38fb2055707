/**
 * The capture tag (docs/capture-record.md, "The archive's answer"): what
 * the archive's dedup compares — the payload digest, the status and the
 * media type — in one opaque entity tag (RFC 9110 §8.8.3). The archive
 * sends it as the `ETag` of its answer to a capture PUT (the tag of the
 * memento the capture stored or matched); the capture proxy builds the
 * same tag from a capture it holds and compares it with the one the
 * archive last answered (proxy/capture/unchanged-cache.ts). Both daemons
 * build it here: the archive from a memento's index row, the proxy from
 * the capture.
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
