/**
 * TimeMap serializers (RFC 7089 §5): the link-format TimeMap of one
 * archive (RFC 6690), the same as JSON (the mementoweb.org timemap-json
 * shape), and the index TimeMap over every archive. They take the mementos
 * as an async iterable, oldest first, and yield text a page at a time, so a
 * TimeMap of any size is sent in constant memory.
 */
import { formatHttpDate, formatIsoSeconds } from '#shared/http-date.js';
import { formatLink, type Link } from '#shared/link.js';
import type { ArchiveSpan } from '../spans.js';
import type { Holdings } from './choice.js';
import { uris } from './navigation.js';

export const LINK_FORMAT = 'application/link-format';

/** Text is yielded once this many characters are waiting. */
const CHUNK_CHARS = 32 * 1024;

/** What a TimeMap needs of a memento: its datetime (epoch s) and URI-R as captured. */
export interface TimemapEntry {
  datetime: number;
  uri_r: string;
}

/** The first and last Memento-Datetime of the mementos a TimeMap lists (epoch s). */
export interface Span {
  first: number;
  last: number;
}

/**
 * The head of one archive's TimeMap: `original`, `self` (with `type` and
 * `from`/`until`, RFC 7089 §5.1) and `timegate`.
 */
export function timemapHead(base: string, archiveId: string, uriR: string, span: Span): Link[] {
  return [
    { uri: uriR, rel: 'original' },
    { uri: uris.timemap(base, archiveId, uriR), rel: 'self', type: LINK_FORMAT, from: formatHttpDate(span.first), until: formatHttpDate(span.last) },
    { uri: uris.timegate(base, archiveId, uriR), rel: 'timegate' },
  ];
}

/**
 * Memento links of a page of one archive's mementos (RFC 7089 §5), oldest
 * first; those at `span.first` / `span.last` also get `first` / `last`.
 */
export function timemapMementoLinks(rows: readonly TimemapEntry[], base: string, archiveId: string, span: Span): Link[] {
  return rows.map((row) => {
    const rel =
      row.datetime === span.first || row.datetime === span.last
        ? `${row.datetime === span.first ? 'first ' : ''}${row.datetime === span.last ? 'last ' : ''}memento`
        : 'memento';
    return { uri: uris.memento(base, archiveId, row), rel, datetime: formatHttpDate(row.datetime) };
  });
}

/**
 * A link-format document (RFC 6690 §2): links separated by `,` and a line
 * end; the head first, then the links of `rest` a page at a time, written
 * out in chunks of about 32 Ki characters.
 */
export async function* linkFormat(head: Link[], rest: AsyncIterable<Link[]>): AsyncGenerator<string> {
  let buf = head.map(formatLink).join(',\n');
  for await (const page of rest) {
    for (const l of page) buf += ',\n' + formatLink(l);
    if (buf.length > CHUNK_CHARS) {
      yield buf;
      buf = '';
    }
  }
  yield buf + '\n';
}

/**
 * One archive's TimeMap as mementoweb.org timemap-json:
 * `{original_uri, timegate_uri, timemap_uri: {link_format, json_format},
 * mementos: {list: [{datetime, uri}…], first: {…}, last: {…}}}`, datetimes
 * in ISO 8601 UTC.
 */
export async function* jsonTimemap(pages: AsyncIterable<TimemapEntry[]>, base: string, archiveId: string, uriR: string): AsyncGenerator<string> {
  const head = JSON.stringify({
    original_uri: uriR,
    timegate_uri: uris.timegate(base, archiveId, uriR),
    timemap_uri: { link_format: uris.timemap(base, archiveId, uriR), json_format: uris.timemapJson(base, archiveId, uriR) },
  });
  yield* withMementos(head, pagesOf(archiveId, pages), (id, row) => uris.memento(base, id, row));
}

/** The pages of one archive, each with its archive id. */
async function* pagesOf(archiveId: string, pages: AsyncIterable<TimemapEntry[]>): AsyncGenerator<ArchivePage> {
  for await (const rows of pages) yield { archiveId, rows };
}

/** A page of one archive's mementos. */
export interface ArchivePage {
  archiveId: string;
  rows: readonly TimemapEntry[];
}

/**
 * A JSON object `head` (its text) with a last member `mementos: {list:
 * [{datetime, uri}…], first, last}` (`first`/`last` null when the list is
 * empty), the list written as the pages stream in, oldest first.
 *
 * @param uriOf the URI-M of a row of an archive
 */
async function* withMementos(head: string, pages: AsyncIterable<ArchivePage>, uriOf: (archiveId: string, row: TimemapEntry) => string): AsyncGenerator<string> {
  let out = head.slice(0, -1) + ',"mementos":{"list":[';
  let first: string | undefined;
  let last = '';
  for await (const { archiveId, rows } of pages) {
    for (const row of rows) {
      last = `{"datetime":"${formatIsoSeconds(row.datetime)}","uri":${JSON.stringify(uriOf(archiveId, row))}}`;
      out += (first ? ',' : '') + last;
      first ??= last;
    }
    if (out.length > CHUNK_CHARS) {
      yield out;
      out = '';
    }
  }
  yield out + `],"first":${first ?? 'null'},"last":${first ? last : 'null'}}}\n`;
}

/** `from`/`until` attributes of a span's configured bounds (open ends left out). */
function configuredBounds(a: ArchiveSpan): { from?: string; until?: string } {
  return {
    ...(Number.isFinite(a.from) ? { from: formatHttpDate(a.from) } : {}),
    ...(Number.isFinite(a.until) ? { until: formatHttpDate(a.until) } : {}),
  };
}

/**
 * The head of the index TimeMap over every archive: `original`; `self`
 * with `from`/`until` over every archive whose mementos' span is known;
 * `timegate` (the redirector); one `timemap` link per archive that has (or
 * may have) the URI-R, with its span (known, else the configured one).
 *
 * @param archives oldest first; those with a holding other than `no` are listed
 * @param timemapOf the TimeMap address of an archive for the URI-R
 */
export function indexTimemapHead(
  base: string,
  uriR: string,
  archives: readonly ArchiveSpan[],
  holdings: Holdings,
  timemapOf: (a: ArchiveSpan) => string,
): Link[] {
  const listed = archives.filter((a) => holdings.get(a.id) && holdings.get(a.id)!.state !== 'no');
  const known = [...holdings.values()].filter((h) => h.first !== undefined && h.last !== undefined);
  const bounds = (a: ArchiveSpan) => {
    const h = holdings.get(a.id)!;
    return h.first !== undefined && h.last !== undefined ? { from: formatHttpDate(h.first), until: formatHttpDate(h.last) } : configuredBounds(a);
  };
  const self: Link = { uri: uris.indexTimemap(base, uriR), rel: 'self', type: LINK_FORMAT };
  if (known.length) {
    self.from = formatHttpDate(Math.min(...known.map((h) => h.first!)));
    self.until = formatHttpDate(Math.max(...known.map((h) => h.last!)));
  }
  return [
    { uri: uriR, rel: 'original' },
    self,
    { uri: uris.redirector(base, uriR), rel: 'timegate' },
    ...listed.map((a): Link => ({ uri: timemapOf(a), rel: 'timemap', type: LINK_FORMAT, ...bounds(a) })),
  ];
}

/** One archive's entry in the `timemap_index` of the JSON index TimeMap (mementoweb.org timemap-json). */
export interface TimemapIndexEntry {
  /** The archive's JSON TimeMap of the URI-R (its link-format one, with `type`, when that is all that is known). */
  uri: string;
  archive_id: string;
  type?: string;
  /** ISO 8601 UTC: its first and last memento when known, else its configured span (open ends left out). */
  from?: string;
  until?: string;
}

/**
 * The `timemap_index` of the JSON index TimeMap: the archives the
 * link-format index TimeMap lists ({@link indexTimemapHead}: those with a
 * holding other than `no`), oldest first, with the same bounds.
 *
 * @param jsonTimemapOf the JSON TimeMap address of an archive for the URI-R, `undefined` when not known (then `linkTimemapOf` with its type)
 */
export function indexTimemapEntries(
  archives: readonly ArchiveSpan[],
  holdings: Holdings,
  jsonTimemapOf: (a: ArchiveSpan) => string | undefined,
  linkTimemapOf: (a: ArchiveSpan) => string,
): TimemapIndexEntry[] {
  return archives
    .filter((a) => holdings.get(a.id) && holdings.get(a.id)!.state !== 'no')
    .map((a) => {
      const h = holdings.get(a.id)!;
      const json = jsonTimemapOf(a);
      const known = h.first !== undefined && h.last !== undefined;
      const [from, until] = known ? [h.first!, h.last!] : [a.from, a.until];
      return {
        uri: json ?? linkTimemapOf(a),
        archive_id: a.id,
        ...(json ? {} : { type: LINK_FORMAT }),
        ...(Number.isFinite(from) ? { from: formatIsoSeconds(from) } : {}),
        ...(Number.isFinite(until) ? { until: formatIsoSeconds(until) } : {}),
      };
    });
}

/**
 * The index TimeMap as mementoweb.org timemap-json: `{original_uri,
 * timegate_uri (the redirector), timemap_uri: {link_format, json_format}
 * (the index TimeMap's two forms), timemap_index: [{uri, archive_id, from,
 * until}…], mementos: {list, first, last}}`: every archive's TimeMap, then
 * the mementos of `rows` (each at its own archive's URI-M), oldest first,
 * with one first and one last over all of them. Streamed.
 */
export function indexJsonTimemap(base: string, uriR: string, index: TimemapIndexEntry[], pages: AsyncIterable<ArchivePage>): AsyncGenerator<string> {
  const head = JSON.stringify({
    original_uri: uriR,
    timegate_uri: uris.redirector(base, uriR),
    timemap_uri: { link_format: uris.indexTimemap(base, uriR), json_format: uris.indexTimemapJson(base, uriR) },
    timemap_index: index,
  });
  return withMementos(head, pages, (id, row) => uris.memento(base, id, row));
}
