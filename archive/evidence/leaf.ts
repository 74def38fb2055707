/**
 * The bytes of the evidence log's entries (docs/evidence.md "Entries"): a
 * capture entry names a memento's own WARC record, a purge entry names a
 * capture entry that `purge` removed. A leaf's hash is RFC 9162's
 * `SHA-256(0x00 ‖ leaf)` over the UTF-8 of this text (merkle.ts).
 *
 * A capture entry has one of two forms, and an entry once written is
 * never rewritten (the log is append-only):
 *
 * - the first form, four lines: `<URI-R>`, `<14-digit Memento-Datetime>`,
 *   `<WARC-Record-ID>`, `<digest>` (entries written before the second
 *   form existed, and of records without an `Archive-Capture-Via` field);
 * - the second form adds `via <how it came in>` (the record's
 *   `Archive-Capture-Via` field: {@link VIA_FIELD}) and, for a revisit
 *   record, `refers-to <its WARC-Refers-To>` and `payload-digest <its
 *   WARC-Payload-Digest>`: the record id and payload digest of the
 *   capture whose body it repeats.
 *
 * Which form a record's entry has is decided by the record alone
 * ({@link leafOfRecord}), so that anyone holding the record can rebuild
 * its entry byte for byte.
 */
import { toTimestamp14 } from '#shared/http-date.js';
import type { NewMementoRow } from '../store/index/memento-row.js';

/** An entry to append. */
export interface NewLeaf {
  archive_id: string;
  kind: 'capture' | 'purge';
  /** The leaf text (leaf.ts). */
  text: string;
  /** A capture's memento key (urlkey, Memento-Datetime epoch s); null for a purge entry. */
  urlkey: string | null;
  datetime: number | null;
}

/**
 * The WARC named field (WARC 1.1 §4: a field of our own, which other
 * readers ignore) that says how a capture came into the archive; its
 * value is the `via` line of the entry. See {@link isVia}.
 */
export const VIA_FIELD = 'Archive-Capture-Via';

/**
 * How a capture came in, as a record's {@link VIA_FIELD} and its entry's
 * `via` line say it:
 *
 * - `put`: a capture PUT (what the capture proxy sends for each response
 *   it passes to a browser; any client allowed to PUT may send one);
 * - `import`: `memento-archive import` of a WARC file;
 * - `import wacz sha256:<hex>`: `memento-archive import` of a WACZ
 *   package whose `datapackage.json` has that SHA-256 (the package's own
 *   digest, which its `datapackage-digest.json` signs), which passed the
 *   integrity check (archive/import/wacz-integrity.ts); `none` in place of
 *   the digest for a package without a `datapackage.json`;
 * - the same followed by ` damaged`: a package that failed that check,
 *   imported all the same with `--accept-damaged`.
 */
export type Via = string;

const VIA = /^(put|import|import wacz (sha256:[0-9a-f]{64}|none)( damaged)?)$/;

/** Whether `s` is a {@link Via} value. */
export function isVia(s: string): boolean {
  return VIA.test(s);
}

/** The {@link Via} of a capture imported from a WACZ package whose datapackage.json digest is `packageDigest` (`null`: it has none). */
export function waczVia(packageDigest: string | null, damaged: boolean): Via {
  return `import wacz ${packageDigest ?? 'none'}${damaged ? ' damaged' : ''}`;
}

/** A capture entry's fields, as `/proof` gives them (`leaf`). */
export interface CaptureLeaf {
  /** The URI-R as captured. */
  uri: string;
  /** The 14-digit Memento-Datetime (UTC). */
  datetime: string;
  /** The memento's own record's `WARC-Record-ID`, angle brackets included (`<urn:uuid:…>`). */
  record_id: string;
  /** `sha256:` + lower-case hex of SHA-256 over that record's block exactly as stored. */
  digest: string;
  /** How the capture came in ({@link Via}); absent in the first form. */
  via?: Via;
  /** A revisit's `WARC-Refers-To`: the record id of the capture whose body it repeats (second form only). */
  refers_to?: string;
  /** A revisit's `WARC-Payload-Digest`: the payload digest of that capture (second form only). */
  payload_digest?: string;
}

const DIGEST = /^sha256:[0-9a-f]{64}$/;

/**
 * The leaf text of a capture entry (see the module comment):
 * `<URI-R>\n<datetime>\n<WARC-Record-ID>\n<digest>`, then, in the second
 * form, `\nvia <via>`, then for a revisit `\nrefers-to <id>\npayload-digest <digest>`.
 * @throws Error when a field holds a line break (it would make the text
 *   ambiguous), is empty, or has the wrong shape (digest not
 *   `sha256:<64 hex>`, datetime not 14 digits, via not a {@link Via}),
 *   or revisit lines are given without `via`
 */
export function captureLeafText(l: CaptureLeaf): string {
  const all = [l.uri, l.record_id, l.via ?? '', l.refers_to ?? '', l.payload_digest ?? ''].join(' ');
  if (/[\r\n]/.test(all)) throw new Error(`a log leaf field holds a line break: ${JSON.stringify(all)}`);
  if (!l.uri || !l.record_id) throw new Error('a log leaf lacks its URI-R or WARC-Record-ID');
  if (!/^\d{14}$/.test(l.datetime)) throw new Error(`a log leaf's datetime is not 14 digits: ${JSON.stringify(l.datetime)}`);
  if (!DIGEST.test(l.digest)) throw new Error(`a log leaf's digest is not sha256:<64 lower-case hex>: ${JSON.stringify(l.digest)}`);
  const first = `${l.uri}\n${l.datetime}\n${l.record_id}\n${l.digest}`;
  const revisit = l.refers_to !== undefined || l.payload_digest !== undefined;
  if (l.via === undefined) {
    if (revisit) throw new Error('a log leaf names a revisit’s original without saying how the capture came in');
    return first;
  }
  if (!isVia(l.via)) throw new Error(`a log leaf's via is not put, import or import wacz <digest>: ${JSON.stringify(l.via)}`);
  if (!revisit) return `${first}\nvia ${l.via}`;
  if (!l.refers_to || !l.payload_digest) throw new Error('a revisit’s log leaf lacks the record id or payload digest of its original');
  return `${first}\nvia ${l.via}\nrefers-to ${l.refers_to}\npayload-digest ${l.payload_digest}`;
}

/** The fields of a capture leaf's text, either form; `undefined` for text of another shape (a purge entry's). */
export function parseCaptureLeaf(text: string): CaptureLeaf | undefined {
  const parts = text.split('\n');
  if (parts[0] === 'purge' || parts.length < 4 || !/^\d{14}$/.test(parts[1])) return undefined;
  const leaf: CaptureLeaf = { uri: parts[0], datetime: parts[1], record_id: parts[2], digest: parts[3] };
  if (parts.length === 4) return leaf;
  const tail = (line: string | undefined, label: string) => (line?.startsWith(label + ' ') ? line.slice(label.length + 1) : undefined);
  leaf.via = tail(parts[4], 'via');
  if (leaf.via === undefined) return undefined;
  if (parts.length === 5) return leaf;
  leaf.refers_to = tail(parts[5], 'refers-to');
  leaf.payload_digest = tail(parts[6], 'payload-digest');
  return parts.length === 7 && leaf.refers_to !== undefined && leaf.payload_digest !== undefined ? leaf : undefined;
}

/** A WARC record as far as its entry needs it. */
export interface RecordForLeaf {
  /** `WARC-Type`: `response` or `revisit`. */
  type: string;
  /** The value of a named field of its WARC header (case-insensitive name), or `undefined`. */
  field(name: string): string | undefined;
  /** `sha256:<hex>` of its block as stored. */
  blockDigest: string;
}

/**
 * The entry a record calls for (see the module comment): its URI-R and
 * Memento-Datetime as given (`datetime` epoch s), its `WARC-Record-ID`,
 * its block digest; and, when it has a {@link VIA_FIELD}, the second
 * form: that field and, for a revisit record, its `WARC-Refers-To` and
 * `WARC-Payload-Digest` (`''` when missing: the text then cannot be made,
 * {@link captureLeafText} throws).
 */
export function leafOfRecord(uri: string, datetime: number, r: RecordForLeaf): CaptureLeaf {
  const leaf: CaptureLeaf = { uri, datetime: toTimestamp14(datetime), record_id: r.field('warc-record-id') ?? '', digest: r.blockDigest };
  const via = r.field(VIA_FIELD.toLowerCase());
  if (via === undefined) return leaf;
  leaf.via = via;
  if (r.type === 'revisit') {
    leaf.refers_to = r.field('warc-refers-to') ?? '';
    leaf.payload_digest = r.field('warc-payload-digest') ?? '';
  }
  return leaf;
}

/**
 * The leaf text of a purge entry: `purge\n<14-digit UTC time of the purge>\n<leaf_index of the removed entry>\n<base64 leaf hash of the removed entry>`.
 * @param at when the purge ran, epoch milliseconds
 */
export function purgeLeafText(at: number, leafIndex: number, removedHash: Buffer): string {
  return `purge\n${toTimestamp14(Math.floor(at / 1000))}\n${leafIndex}\n${removedHash.toString('base64')}`;
}

/**
 * The evidence log entry of the memento `row` whose own record (response
 * or revisit) was written with the entry fields `fields` (its record id,
 * block digest, and in the second form how it came in and a revisit's
 * original): {@link captureLeafText}.
 */
export function captureLeaf(row: NewMementoRow, fields: Omit<CaptureLeaf, 'uri' | 'datetime'>): NewLeaf {
  return {
    archive_id: row.archive_id,
    kind: 'capture',
    text: captureLeafText({ uri: row.uri_r, datetime: toTimestamp14(row.datetime), ...fields }),
    urlkey: row.urlkey,
    datetime: row.datetime,
  };
}
