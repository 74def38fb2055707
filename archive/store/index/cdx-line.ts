/**
 * The text of a CDX line as SQL (the CDX server API, archive/cdx/): the
 * database computes each row's line as it reads the rows, so that one
 * string per row, not its columns, is handed to JavaScript. Made only of
 * the fixed fragments below and the database's own (`SqlDialect`: the
 * timestamp, the JSON object), never of request text.
 */
import type { SqlDialect } from './dialect.js';

/** A field of a CDX line, by its pywb name. */
export type CdxField = 'urlkey' | 'timestamp' | 'url' | 'mime' | 'status' | 'digest' | 'length' | 'offset' | 'filename' | 'redirect' | 'robotflags' | 'archive';

/** The shape of the lines asked for: the fields in order, and `text` (space-separated) or `json` (one object per line). */
export interface CdxLine {
  fields: readonly CdxField[];
  output: 'text' | 'json';
}

/**
 * Each field's text as SQL over a memento's columns: as the index holds
 * it; `-` for an empty media type, digest or file name (the CDX sign for
 * "none") and for `redirect` and `robotflags`, which the index does not
 * keep; numbers as text (pywb's JSON has strings only). A revisit (a row
 * with `refers_to`) is listed as CDX indexers list a WARC `revisit`
 * record: `mime` is `warc/revisit`, `length`/`offset`/`filename` are
 * those of the revisit record, `status` that of its own HTTP head (the
 * original's, as pywb's cdxj-indexer reads it from the head), `digest`
 * the payload's.
 */
const FIELD_SQL: Readonly<Record<Exclude<CdxField, 'timestamp'>, string>> = {
  urlkey: 'urlkey',
  url: 'uri_r',
  mime: "CASE WHEN refers_to IS NULL THEN COALESCE(NULLIF(mime, ''), '-') ELSE 'warc/revisit' END",
  status: 'CAST(status AS TEXT)',
  digest: "COALESCE(NULLIF(digest, ''), '-')",
  length: 'CAST(warc_length AS TEXT)',
  offset: 'CAST(warc_offset AS TEXT)',
  filename: "COALESCE(NULLIF(warc_file, ''), '-')",
  redirect: "'-'",
  robotflags: "'-'",
  archive: 'archive_id',
};

/**
 * The SQL expression of one row's line (without its `\n`): the fields
 * separated by spaces (`text`), or one JSON object whose members are the
 * fields by their pywb names, every value a string (`json`: compact,
 * escaped as JSON requires). Made only of the fixed fragments above and
 * the database's own (`sql`: the timestamp, the JSON object).
 */
export function lineSql(sql: SqlDialect, fields: readonly CdxField[], output: CdxLine['output']): string {
  const field = (f: CdxField) => (f === 'timestamp' ? sql.timestamp14('datetime') : FIELD_SQL[f]);
  if (output === 'text') return fields.map(field).join(" || ' ' || ");
  return sql.jsonObject(fields.map((f) => [f, field(f)] as const));
}
