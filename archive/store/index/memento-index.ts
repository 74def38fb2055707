/**
 * The archive's index of mementos as the daemon uses it: one interface, two
 * implementations. {@link IndexDb} (index-db.ts) keeps it in a SQLite file
 * in the data folder (the default); {@link PgIndex} (index-pg.ts) in a
 * PostgreSQL database that several daemons may share (`storage.index`,
 * docs/scale-out.md). Both hold the same rows and give the same answers
 * (test/archive/store/index/index-contract.test.ts runs one suite on both).
 *
 * One row per memento (memento-row.ts `MementoRow`), unique on (urlkey,
 * archive id, Memento-Datetime). Datetimes are epoch seconds (UTC), row
 * ids positive integers, both JavaScript numbers. Errors are the database
 * driver's, thrown as they come (nothing is written by a failed call).
 *
 * No SQL is written outside the adapters and archive/store/index/: the
 * reads of the pages for people and of the coherence panel, and the
 * lookups by key pattern, are named queries written once for both
 * databases there ({@link MementoIndex.pages}, {@link MementoIndex.panel},
 * {@link MementoIndex.keys}). The CDX walks (cdx-walk.ts) write theirs
 * over {@link MementoIndex.walkQuery}, with the fragments of
 * {@link MementoIndex.sql}.
 */
import { OperatorError } from '#shared/operator-error.js';
import type { MementoRow, Neighbourhood, NewMementoRow, Ranges, Spans } from './memento-row.js';
import type { ReadCache, UrlView } from '../read-cache.js';
import type { LogStore, NewLeaf } from '../../evidence/log.js';
import type { FeedQueries } from './feed-queries.js';
import type { KeyQueries } from './key-queries.js';
import type { PageQueries } from './page-queries.js';
import type { PanelQuery } from './panel-query.js';
import type { SqlDialect } from './dialect.js';
import type { TextIndex } from './text-queries.js';

export type { SqlDialect };

/**
 * Evidence log entries to append in the same transaction as a batch's rows
 * (archive/evidence/log.ts `appendToLog`): `leaves` in order; with
 * `ifAbsent`, a capture entry of a memento already in the log is left out
 * (recovery and `reindex`).
 */
export interface LogAppend {
  leaves: NewLeaf[];
  ifAbsent?: boolean;
}

/** One answer of {@link MementoIndex.atOrBeforeMany}. */
export interface AtOrBefore {
  /** The latest memento at or before the instant asked; `undefined` when there is none. */
  row: MementoRow | undefined;
  /** `row` is the newest memento of its urlkey (none after the instant), or the urlkey has no memento at all. */
  isNewest: boolean;
}

/** A row as {@link MementoIndex.dump} gives it: no id, and a revisit's original named by archive, datetime and URI-R. */
export type DumpRow = Omit<MementoRow, 'id' | 'refers_to'> & { refers_to: string | null };

/** What a TimeMap lists of a memento: its datetime (epoch s) and URI-R as captured. */
export type TimemapRow = Pick<MementoRow, 'datetime' | 'uri_r'>;

/** A statement of a long read ({@link MementoIndex.walkQuery}): run as often as needed, then closed. */
export interface WalkQuery<T> {
  /** Every row for `params` (`$name` keys, as in the SQL). */
  all(params: Record<string, string | number>): Promise<T[]>;
  /** Frees the statement (a walk ends or is abandoned). */
  close(): Promise<void>;
}

/** The archive's index of mementos (see the module comment). */
export interface MementoIndex {
  /** The SQL fragments of this database, for the CDX walks' statements (cdx-walk.ts, cdx-line.ts); used in this folder only. */
  readonly sql: SqlDialect;

  /** The queries of the pages for people (archive/store/index/page-queries.ts): calendars, days, captures, URL and site lists, counts. */
  readonly pages: PageQueries;

  /** The queries of the feeds of changes (archive/store/index/feed-queries.ts): new mementos of a URL or prefix, numbered oldest first. */
  readonly feeds: FeedQueries;

  /** The coherence panel's query (archive/store/index/panel-query.ts). */
  readonly panel: PanelQuery;

  /** Lookups by urlkey pattern (archive/store/index/key-queries.ts): stored keys under prefixes, a purge selection's row ids. */
  readonly keys: KeyQueries;

  /** The full-text index of the mementos' text (SQLite: text-queries.ts; PostgreSQL: text-pg.ts); absent: none. */
  readonly text?: TextIndex;

  /** The read cache in front of {@link neighbourhood} and {@link spans} (read-cache.ts); the store tells it of every commit. */
  readonly cache: ReadCache;

  /** Transactions committed by {@link insertMany} since the index was opened. */
  readonly commits: number;

  // The write path (archive/store/store.ts, capture-is-new.ts, crash recovery).

  /**
   * Inserts `rows` in one transaction (all or none). A row whose (urlkey,
   * archive_id, datetime) exists replaces it, and of two rows of one key in
   * `rows` the later wins (recovery and `reindex` of old WARC files; ingest
   * never writes a key twice). `refers_to` is kept as given. The
   * evidence log entries `log` are appended in the same transaction, so
   * that a capture is never committed without its entry.
   */
  insertMany(rows: NewMementoRow[], log?: LogAppend): Promise<void>;

  /** The evidence log: its entries, nodes and signed tree heads (archive/evidence/log.ts). */
  readonly log: LogStore;

  /**
   * Ingest's commit: inserts `rows` (of distinct keys) in one transaction,
   * never replacing a row: a row whose (urlkey, archive_id, datetime) is
   * in the index already (another daemon sharing it committed that key
   * first, docs/scale-out.md) is left out. An index with one writer (SQLite,
   * under the data folder's lock: the write queue decided every row
   * against it) inserts them all as {@link insertMany} does. The capture
   * entries of `log` go into the evidence log in the same transaction, but
   * only those of the rows inserted.
   * @returns the rows left out (none with one writer)
   */
  insertNew(rows: NewMementoRow[], log?: LogAppend): Promise<NewMementoRow[]>;

  /**
   * For each `(urlkey, t)` (t epoch s): the latest memento of `urlkey` in any
   * archive at or before `t` (of two at one second, the higher row id), and
   * whether it is the newest of its urlkey (or the urlkey has none at all).
   * Batched: one query per 300 pairs at most.
   * @returns one entry per pair, in order
   */
  atOrBeforeMany(pairs: { urlkey: string; t: number }[]): Promise<AtOrBefore[]>;

  /** The memento of `urlkey` in `archive` at `datetime` (epoch s: the row's unique key), whole; `undefined` when there is none (a revisit's original known without its id). */
  rowAt(archive: string, urlkey: string, datetime: number): Promise<MementoRow | undefined>;

  // The Memento read path (archive/http/, archive/read/access-rules.ts, archive/memento/).

  /** The memento with row id `id`, whole; `undefined` when there is none. */
  byId(id: number): Promise<MementoRow | undefined>;

  /**
   * First, last and the two mementos on each side of `t` (epoch s) of
   * `urlkey` in `archive`, from the URL's view in the read cache; with
   * `whole`, `atOrBefore[0]` is the whole row. `undefined` when the URL has
   * no memento there.
   */
  neighbourhood(archive: string, urlkey: string, t: number, whole?: boolean): Promise<Neighbourhood | undefined>;

  /** The read cache's view of `urlkey` (every memento of it per archive), from memory or loaded (batched) from the index. */
  view(urlkey: string): Promise<UrlView>;

  /** Up to `limit` mementos of `urlkey` in `archive` with datetime after `after` (epoch s), oldest first. */
  page(archive: string, urlkey: string, after: number, limit: number): Promise<MementoRow[]>;

  /** Every memento of `urlkey` in `archive`, oldest first, as datetime and URI-R (a TimeMap), a page of rows at a time. */
  mementoPages(archive: string, urlkey: string): AsyncGenerator<TimemapRow[]>;

  /** For each archive holding `urlkey`: first and last datetime (epoch s) and the count, archives in no fixed order. */
  spans(urlkey: string): Promise<Spans>;

  /**
   * As {@link neighbourhood}, over the mementos whose datetime lies in one
   * of `ranges` (`[from, until)` epoch s; ±Infinity open): what the access
   * rules show. Never from the read cache.
   */
  neighbourhoodWithin(archive: string, urlkey: string, t: number, ranges: Ranges, whole?: boolean): Promise<Neighbourhood | undefined>;

  /** As {@link spans}, over the mementos whose datetime lies in `ranges`. */
  spansWithin(urlkey: string, ranges: Ranges): Promise<Spans>;

  /** Whether `urlkey` has a memento (in `archive`, else in any) whose datetime lies in `ranges`. */
  anyWithin(urlkey: string, ranges: Ranges, archive?: string): Promise<boolean>;

  /** Prepares a long read (the CDX walks, cdx-walk.ts) on the connection for walks; the caller closes it. */
  walkQuery<T>(sql: string): WalkQuery<T>;

  /** Resolves when the index answers a trivial query (health check). */
  ping(): Promise<void>;

  /** Resolves when the index can take writes (health check): SQLite's file and folder writable; PostgreSQL not a standby nor read-only. @throws why not */
  writable(): Promise<void>;

  /** Number of mementos. */
  count(): Promise<number>;

  /** Every memento, or every memento of `archive`, in row id order, `pageSize` rows per query (`cdxj` export). */
  allMementos(archive?: string, pageSize?: number): AsyncGenerator<MementoRow>;

  // Upkeep (crash recovery, verify, reindex).

  /** For each WARC file of `archive` the index points into: the end (offset + length, bytes) of its last indexed record. */
  fileEnds(archive: string): Promise<{ warc_file: string; end: number }[]>;

  /** The rows that point into WARC file `file` (relative to `warcs/`), by offset. */
  rowsOfFile(file: string): Promise<MementoRow[]>;

  /**
   * The row id of the memento whose `response` record holds a revisit
   * record's payload (recovery and `reindex` reading revisit records): the
   * response row (any archive) of `named`'s urlkey and datetime (the
   * record's `WARC-Refers-To-Target-URI` and `-Date`; of several, the
   * highest id), else the latest response row of the revisit's own urlkey
   * at or before its datetime with its digest; `undefined` when none.
   * Sees every row committed before it is asked.
   */
  revisitOriginal(named: { urlkey: string; datetime: number } | null, own: Pick<MementoRow, 'urlkey' | 'datetime' | 'digest'>): Promise<number | undefined>;

  /** Every WARC file the index points into, with its row count. */
  files(): Promise<{ warc_file: string; n: number }[]>;

  /** Every row without `id`, by archive, urlkey, datetime; a revisit's original named `<archive_id> <datetime> <uri_r>`. */
  dump(): Promise<DumpRow[]>;

  /**
   * Upkeep (`purge`): in one transaction, deletes the rows whose ids are
   * in `change.drop` and points each row of `change.move` at its new WARC
   * file and offset (a file written again without some records). In the
   * same transaction, the evidence log records the removal: each deleted
   * memento's capture entry loses its text and a purge entry dated
   * `change.at` names it (archive/evidence/log.ts `logPurge`).
   * @returns rows deleted and purge entries appended
   */
  rewriteRows(change: RowChange): Promise<{ deleted: number; logEntries: number }>;

  /**
   * Upkeep (`purge`, after {@link rewriteRows}): rewrites the database's
   * own files, so that the bytes of deleted rows are not left in free
   * space (SQLite: `VACUUM` and a truncated WAL; PostgreSQL: `VACUUM FULL`
   * of the table, which takes it from readers while it runs).
   */
  compact(): Promise<void>;

  /** Closes the index (its statements and connections). */
  close(): Promise<void>;
}

/** Rows a purge deletes, and rows it moves to a new WARC file and offset ({@link MementoIndex.rewriteRows}). */
export interface RowChange {
  drop: readonly number[];
  move: readonly { id: number; warc_file: string; warc_offset: number }[];
  /** When the purge ran (epoch ms): the date of its purge entries in the evidence log. */
  at: number;
}

/** The PostgreSQL index (index-pg.ts) could not be opened: the database (its URL without a password) and why, in one line. Here, so that catching it loads no PostgreSQL client. */
export class PgIndexError extends OperatorError {}
