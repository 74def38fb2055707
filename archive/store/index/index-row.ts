/**
 * The one builder of index rows: ingest (a capture arriving by PUT),
 * crash recovery and `reindex` (records read back from WARC files) all make
 * a memento's row here, from the same parts, so that an index rebuilt from
 * the WARC files is the index ingest wrote. docs/storage.md.
 */
import { mediaType } from '#shared/capture-tag.js';
import { getHeader, type RawHeader } from '#shared/http-head.js';
import { exactUrlkey } from '#shared/uri.js';
import type { NewMementoRow } from './index-db.js';

// The one definition of a row's media type is shared with the capture proxy (conditional captures).
export { mediaType };

/** What a memento's row is made of. */
export interface RowParts {
  archiveId: string;
  uriR: string;
  /** Memento-Datetime, epoch seconds. */
  datetime: number;
  /** The captured response's status. */
  status: number;
  /** The captured response's headers (Content-Type gives the row's media type). */
  responseHeaders: readonly RawHeader[];
  /** The captured request's headers (X-Client-IP gives the row's client address); `null` when there is no request record. */
  requestHeaders: readonly RawHeader[] | null;
  /** WARC-Payload-Digest of the response (`sha256:<hex>`); `''` until known. */
  digest: string;
  /** Where the memento's own record (`response`, or `revisit`) is: file relative to `warcs/`, offset and length of its gzip member; zeros until written. */
  warc?: { file: string; offset: number; length: number };
  /** A revisit's original: the row id of the memento whose `response` record holds the payload; `null`/absent for a `response`. */
  refersTo?: number | null;
}

/** The index row of a memento. */
export function indexRow(p: RowParts): NewMementoRow {
  return {
    archive_id: p.archiveId,
    urlkey: exactUrlkey(p.uriR),
    uri_r: p.uriR,
    datetime: p.datetime,
    status: p.status,
    mime: mediaType(getHeader(p.responseHeaders, 'content-type')),
    digest: p.digest,
    warc_file: p.warc?.file ?? '',
    warc_offset: p.warc?.offset ?? 0,
    warc_length: p.warc?.length ?? 0,
    client_ip: (p.requestHeaders && getHeader(p.requestHeaders, 'x-client-ip')?.trim()) || null,
    refers_to: p.refersTo ?? null,
  };
}
