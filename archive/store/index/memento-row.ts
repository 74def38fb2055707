/**
 * The shapes of the index's answers (docs/storage.md): a memento's row,
 * the reference a navigation link needs, the mementos around an instant,
 * and the spans of a URL per archive. Types only, so that the index
 * (index-db.ts), its SQL (index-sql.ts) and the read cache (read-cache.ts)
 * share them without importing one another.
 */

/** One memento as the index holds it. `datetime` is epoch seconds (UTC). */
export interface MementoRow {
  id: number;
  archive_id: string;
  urlkey: string;
  /** URI-R as captured (scheme and host as the client used them). */
  uri_r: string;
  datetime: number;
  status: number;
  /** Media type of the response, lower case, no parameters (`text/html`); `''` when none. */
  mime: string;
  /** WARC-Payload-Digest of the response record (`sha256:…`). */
  digest: string;
  /** WARC file name relative to the data folder's `warcs/`. */
  warc_file: string;
  /** Byte offset of the memento's own record (its gzip member) in the WARC file: the `response` record, or for a revisit its `revisit` record. */
  warc_offset: number;
  /** Byte length of that gzip member. */
  warc_length: number;
  client_ip: string | null;
  /**
   * `null` for a memento whose own WARC record is a `response`. For a
   * revisit (a WARC `revisit` record, profile identical-payload-digest:
   * the capture was identical to the memento it follows), the `id` of the
   * memento whose `response` record holds the payload: never itself a
   * revisit; possibly of another archive or (imported) another URI-R.
   * `digest`, `status` and `mime` of a revisit are that memento's.
   */
  refers_to: number | null;
}

/** A row before the index gave it an id. */
export type NewMementoRow = Omit<MementoRow, 'id'>;

/**
 * What a navigation link needs of a memento (RFC 7089 §2.2.1: its URI-M and
 * datetime): the row id, Memento-Datetime (epoch s) and the URI-R as
 * captured.
 */
export type MementoRef = Pick<MementoRow, 'id' | 'datetime' | 'uri_r'>;

/** The mementos around an instant for one URI-R in one archive (RFC 7089 §2.2.1 navigation). */
export interface Neighbourhood {
  first: MementoRef;
  last: MementoRef;
  /** Last memento at or before the instant, and the one before it. */
  atOrBefore: MementoRef[];
  /** First memento after the instant, and the one after it. */
  after: MementoRef[];
  /**
   * The read cache's view of the URL it was made from (read-cache.ts
   * `UrlView`), when it came from one: answers made from it are kept with
   * that view, and go when a write drops it.
   */
  view?: object;
}

/** Spans of datetimes `[from, until)`, epoch seconds; `-Infinity` / `Infinity` for open ends. */
export type Ranges = readonly (readonly [number, number])[];

/** Per archive holding a URL: first and last Memento-Datetime (epoch s) and the count. */
export type Spans = { archive_id: string; first: number; last: number; n: number }[];
