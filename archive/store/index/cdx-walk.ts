/**
 * Keyset walks of the index for the CDX server API (archive/cdx/): every
 * memento of a urlkey range, in index order or its reverse, a page of rows
 * per query, in constant memory. Beside the index (memento-index.ts), on
 * its connection for long walks.
 */
import type { MementoRow } from './index-db.js';
import { type Ranges, rangeSql } from './index-sql.js';
import type { MementoIndex, WalkQuery } from './memento-index.js';
import { type ShownRule, shownCondition } from './shown-sql.js';
import { type CdxLine, lineSql } from './cdx-line.js';

/** Columns a CDX walk ({@link cdxWalk}) reads when asked, beyond those of every {@link CdxRow}. */
export type CdxColumn = 'archive_id' | 'uri_r' | 'status' | 'mime' | 'digest' | 'warc_file' | 'warc_offset' | 'warc_length' | 'refers_to';

/**
 * A memento as a CDX walk reads it: its place in the index order (urlkey,
 * Memento-Datetime in epoch s, row id) always; the columns asked for, and
 * `line` when a line expression was given. Never the client address
 * unless asked for.
 */
export type CdxRow = Pick<MementoRow, 'id' | 'urlkey' | 'datetime'> & Partial<Pick<MementoRow, CdxColumn>> & { line?: string };

/** A place in the index's order (urlkey, then datetime in epoch s, then row id). */
export interface IndexPosition {
  urlkey: string;
  datetime: number;
  id: number;
}

/** A set of urlkeys: exactly `from` when `to` is absent, else every urlkey `k` with `from <= k < to` (byte order: the index's urlkey collation). */
export interface UrlkeyRange {
  from: string;
  to?: string;
}

/** How {@link cdxWalk} walks a {@link UrlkeyRange}. */
export interface CdxWalk {
  /** Backwards: urlkeys descending, each newest first (default: ascending, oldest first). */
  desc?: boolean;
  /** Start strictly after this position in the walk's direction (default: the range's first row). */
  after?: IndexPosition;
  /** Only mementos with `since <= datetime <= until` (epoch s; open when absent). */
  since?: number;
  until?: number;
  /** The columns to read besides those every {@link CdxRow} has. */
  columns?: readonly CdxColumn[];
  /**
   * The CDX line the database computes into each row's `line` (in its own
   * thread: one string per row is far cheaper to hand to JS than the
   * columns it is made of; cdx-line.ts).
   */
  line?: CdxLine;
  /** Rows per query (default {@link CDX_PAGE}). */
  page?: number;
  /**
   * Only mementos whose datetime lies in one of these spans `[from, until)`
   * (epoch s): the ones the access rules show of a one-urlkey walk, so that
   * the hidden ones are not even read (an empty list: none).
   */
  within?: Ranges;
  /**
   * Only mementos these rules show (archive/read/access-rules.ts `shownRules`, for a
   * walk over many urlkeys), made one SQL condition over `urlkey` and
   * `datetime` (index/shown-sql.ts); an empty list shows every memento.
   */
  shown?: readonly ShownRule[];
}

/** Rows per query when {@link cdxWalk} walks. */
const CDX_PAGE = 1000;
/** Beyond every datetime and row id (the open end of a walk). */
const BEYOND = Number.MAX_SAFE_INTEGER;

/**
 * The mementos of a urlkey range in index order (urlkey, datetime, row
 * id; reversed with `walk.desc`), read {@link CDX_PAGE} rows per query
 * with keyset paging on the `(urlkey, datetime)` index (whose entries end
 * in the row id), so a walk over any number of rows takes constant
 * memory and each page is one index seek: first the rest of the current
 * urlkey (`(datetime, id)` past the position), then the next urlkeys of
 * the range. Reads on the index connection without mmap, as TimeMaps do
 * ({@link MementoIndex.walkQuery}), with statements of its own (prepared
 * when the walk starts, finalized when it ends or is abandoned, so that
 * any `fl=` shape of line is fine). For the CDX server API (archive/cdx/).
 */
export async function* cdxWalk(index: MementoIndex, range: UrlkeyRange, walk: CdxWalk = {}): AsyncGenerator<CdxRow> {
  const desc = walk.desc ?? false;
  const page = Math.max(1, walk.page ?? CDX_PAGE);
  const shown = walk.shown?.length ? shownCondition(walk.shown) : undefined;
  const bounds = { ...shown?.params, $since: walk.since ?? -BEYOND, $until: walk.until ?? BEYOND };
  const inRange = (k: string) => (range.to === undefined ? k === range.from : range.from <= k && k < range.to);
  const [cmp, dir] = desc ? ['<', 'DESC'] : ['>', 'ASC'];
  const cols = [
    'id',
    'datetime',
    ...new Set(walk.columns ?? []),
    ...(walk.line ? [`${lineSql(index.sql, walk.line.fields, walk.line.output)} AS line`] : []),
  ].join(', ');
  const window = `datetime >= $since AND datetime <= $until${walk.within ? ` AND (${rangeSql(walk.within)})` : ''}${shown ? ` AND ${shown.sql}` : ''}`;
  // `key`: the rest of one urlkey (its rows get their urlkey in JS: one string fewer to convert per row); `keys`: the next urlkeys of the range.
  const sql = {
    key: `SELECT ${cols} FROM memento WHERE urlkey = $urlkey AND (datetime, id) ${cmp} ($datetime, $id) AND ${window} ORDER BY datetime ${dir}, id ${dir} LIMIT $limit`,
    keys: `SELECT urlkey, ${cols} FROM memento WHERE urlkey ${cmp} $urlkey AND urlkey >= $from AND urlkey < $to AND ${window} ORDER BY urlkey ${dir}, datetime ${dir}, id ${dir} LIMIT $limit`,
  };
  const prepared = new Map<'key' | 'keys', WalkQuery<CdxRow>>();
  const query = (kind: 'key' | 'keys', params: Record<string, string | number>) => {
    let st = prepared.get(kind);
    if (!st) prepared.set(kind, (st = index.walkQuery<CdxRow>(sql[kind])));
    return st.all({ ...params, ...bounds, $limit: page });
  };
  let at: IndexPosition =
    walk.after ?? (desc ? { urlkey: range.to ?? range.from, datetime: BEYOND, id: BEYOND } : { urlkey: range.from, datetime: -BEYOND, id: -BEYOND });
  try {
    for (;;) {
      if (inRange(at.urlkey)) {
        for (;;) {
          const rows = await query('key', { $urlkey: at.urlkey, $datetime: at.datetime, $id: at.id });
          for (const r of rows) r.urlkey = at.urlkey;
          yield* rows;
          if (rows.length < page) break;
          at = rows[rows.length - 1];
        }
      }
      if (range.to === undefined) return;
      const rows = await query('keys', { $urlkey: at.urlkey, $from: range.from, $to: range.to });
      yield* rows;
      if (rows.length < page) return;
      at = rows[rows.length - 1];
    }
  } finally {
    for (const st of prepared.values()) await st.close();
  }
}
