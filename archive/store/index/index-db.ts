/**
 * The SQLite index of the archive (docs/storage.md): one row per memento,
 * keyed by (urlkey, archive id, Memento-Datetime), pointing at the WARC
 * response record that holds it.
 *
 * Two different captures of one URI-R in the same second (one URI-M): the
 * store refuses the second (409, archive/store/store.ts), so ingest never
 * writes two rows of one key. WARC files written before that rule may hold
 * such pairs: recovery and `reindex` keep the later record, as the index
 * did when it was written. See docs/storage.md "Same-second captures".
 */
import { access, chmod, constants, open } from 'node:fs/promises';
import path from 'node:path';
import sqlite3 from 'sqlite3';
import { all, first, get, Prepared, readAll, run, runChanges } from './sqlite-calls.js';
import { checkUrlkeys, StaleIndexError } from './urlkey-version.js';
import { neighbourhoodFromView, ViewLoads } from './view-loads.js';
import { type NeighbourRow, neighbourhoodOfRows, neighbourhoodWithinSql, type Ranges, rangeSql, SQLITE_SQL, VIEW_BATCH_SIZES, viewSql } from './index-sql.js';
import type { AtOrBefore, DumpRow, MementoIndex, RowChange, TimemapRow, WalkQuery } from './memento-index.js';
import type { MementoRef, MementoRow, Neighbourhood, NewMementoRow, Spans } from './memento-row.js';
import { MAX_VIEW_MEMENTOS, ReadCache, type UrlView, type ViewRow } from '../read-cache.js';
import { appendToLog, logPurgeOf } from '../../evidence/log.js';
import { SqliteLogStore, SqliteLogTx } from './log-sqlite.js';
import { makeTables } from './index-db-tables.js';
import type { LogAppend } from './memento-index.js';
import { FeedQueries, KeyQueries, PageQueries, PanelQuery, type IndexReads } from './queries.js';
import { TextQueries } from './text-queries.js';

export { StaleIndexError };
export type { AtOrBefore, DumpRow, MementoRef, MementoRow, Neighbourhood, NewMementoRow, Spans, TimemapRow };

const ROWS_PER_INSERT = 80; // rows of one multi-row INSERT statement (12 parameters each)

const COLS = 'id, archive_id, urlkey, uri_r, datetime, status, mime, digest, warc_file, warc_offset, warc_length, client_ip, refers_to';
const INSERT_COLS = 'archive_id, urlkey, uri_r, datetime, status, mime, digest, warc_file, warc_offset, warc_length, client_ip, refers_to';
// Of two rows of one key the later wins: only recovery/reindex of older WARC files meet one (see the module comment).
const UPSERT = `ON CONFLICT (urlkey, archive_id, datetime) DO UPDATE SET uri_r = excluded.uri_r, status = excluded.status, mime = excluded.mime,
  digest = excluded.digest, warc_file = excluded.warc_file, warc_offset = excluded.warc_offset, warc_length = excluded.warc_length,
  client_ip = excluded.client_ip, refers_to = excluded.refers_to`;
const BY = 'urlkey = $urlkey AND archive_id = $archive';

/**
 * Creates `file` with mode 0600 when it does not exist, and makes an
 * existing one 0600 (when this process may: a file of another user is left
 * as it is).
 */
export async function ownerOnly(file: string): Promise<void> {
  await (await open(file, 'a', 0o600)).close();
  await chmod(file, 0o600).catch(() => undefined);
}

/** Rows per query when {@link IndexDb.mementoPages} walks a TimeMap. */
const TIMEMAP_PAGE = 1000;

/** Memory-mapped bytes of the index file on the read connection (SQLite `mmap_size`): reads skip a copy through the page cache. */
const MMAP_BYTES = 256 * 1024 * 1024;

/**
 * Async access to the index file (sqlite3, WAL journal).
 *
 * Three connections: the writer (ingest, recovery, maintenance queries); a
 * read-only one for the Memento read side's point lookups (TimeGate,
 * Memento, spans) with `mmap_size` set, so that reads neither queue behind
 * a write transaction nor copy pages; and a read-only one without mmap for
 * the queries that walk every memento of a URI-R (TimeMap paging, spans),
 * so that 100,000 mementos do not map the pages they touch into the
 * daemon's RSS (measured in bench/timemap.ts: +30 MiB with mmap). In WAL
 * mode the readers see every committed transaction, so a capture is
 * readable once its PUT is acknowledged.
 *
 * Durability: `synchronous=NORMAL` by default. A committed transaction is
 * in the WAL file when the commit returns, so it survives the daemon being
 * killed; after a power cut or OS crash the last transactions may be gone
 * from the index, but never the WARC records they pointed at (those are
 * fsynced before the commit), and crash recovery re-indexes every complete
 * record after the last indexed one on the next start. So one fsync per
 * batch (the WARC file's) makes an acknowledged capture durable.
 */
export class IndexDb implements MementoIndex, IndexReads {
  /** SQLite's SQL fragments (index-sql.ts). */
  readonly sql = SQLITE_SQL;
  readonly pages = new PageQueries(this);
  readonly feeds = new FeedQueries(this);
  readonly panel = new PanelQuery(this);
  readonly keys = new KeyQueries(this);
  /** The full-text index of the mementos' text (text-queries.ts). */
  readonly text: TextQueries;

  private constructor(
    private readonly db: sqlite3.Database,
    private readonly reader: sqlite3.Database,
    private readonly pager: sqlite3.Database,
    /** The full-text reads' own connection (text-queries.ts). */
    private readonly texter: sqlite3.Database,
    private readonly stmts: Record<string, sqlite3.Statement>,
    /**
     * The read cache in front of {@link neighbourhood} and {@link spans}
     * (read-cache.ts); the store tells it of every write it commits.
     */
    readonly cache: ReadCache,
    /** The index file. */
    private readonly file: string,
  ) {
    this.text = new TextQueries(db, texter);
    this.log = new SqliteLogStore(reader, db);
    this.logTx = new SqliteLogTx(db);
    this.batchStmts = new Prepared(db);
    this.readStmts = new Prepared(reader);
    this.browseStmts = new Prepared(pager);
    this.viewLoads = new ViewLoads(cache, (urlkeys) => this.loadViews(urlkeys), VIEW_BATCH_SIZES[VIEW_BATCH_SIZES.length - 1]);
  }

  /** The read cache's views, loaded in batches (view-loads.ts). */
  private readonly viewLoads: ViewLoads;

  /** The evidence log's reads and tree heads (archive/evidence/log.ts). */
  readonly log: SqliteLogStore;
  /** The evidence log's writes, inside {@link insertMany}'s transaction. */
  private readonly logTx: SqliteLogTx;

  /**
   * Opens (creating if needed) the index at `file`.
   * @param opts.synchronous SQLite's `synchronous` pragma (default `NORMAL`, see above)
   * @param opts.cacheBytes bytes of the read cache (`index_cache_bytes`; default 0: none)
   * @param opts.anyUrlkeys open an index whatever rules computed its urlkeys (for `reindex`, which only counts its rows)
   * @throws on a file SQLite cannot open; StaleIndexError for an index whose urlkeys an earlier version computed otherwise.
   */
  static async open(file: string, opts: { synchronous?: 'NORMAL' | 'FULL'; cacheBytes?: number; anyUrlkeys?: boolean } = {}): Promise<IndexDb> {
    // Rows hold client addresses: the owner's only (SQLite gives its -wal and -shm files the same mode).
    await ownerOnly(file);
    const db = await new Promise<sqlite3.Database>((resolve, reject) => {
      const d = new sqlite3.Database(file, (err) => (err ? reject(err) : resolve(d)));
    });
    db.configure('busyTimeout', 10_000);
    await run(db, 'PRAGMA journal_mode = WAL');
    await run(db, `PRAGMA synchronous = ${opts.synchronous ?? 'NORMAL'}`);
    await makeTables(db);
    if (!opts.anyUrlkeys) {
      try {
        await checkUrlkeys(db, file);
      } catch (err) {
        await new Promise<void>((resolve) => db.close(() => resolve()));
        throw err;
      }
    }
    const openReadOnly = () =>
      new Promise<sqlite3.Database>((resolve, reject) => {
        const d = new sqlite3.Database(file, sqlite3.OPEN_READONLY, (err) => (err ? reject(err) : resolve(d)));
      });
    const reader = await openReadOnly();
    reader.configure('busyTimeout', 10_000);
    await run(reader, `PRAGMA mmap_size = ${MMAP_BYTES}`);
    const pager = await openReadOnly();
    pager.configure('busyTimeout', 10_000);
    const texter = await openReadOnly();
    texter.configure('busyTimeout', 10_000);
    const prep = (sql: string) => db.prepare(sql);
    const read = (sql: string) => reader.prepare(sql);
    const stmts = {
      byId: read(`SELECT ${COLS} FROM memento WHERE id = $id`),
      at: read(`SELECT ${COLS} FROM memento WHERE ${BY} AND datetime = $datetime`),
      page: pager.prepare(`SELECT ${COLS} FROM memento WHERE ${BY} AND datetime > $after ORDER BY datetime ASC LIMIT $limit`),
      timemapPage: pager.prepare(`SELECT datetime, uri_r FROM memento WHERE ${BY} AND datetime > $after ORDER BY datetime ASC LIMIT $limit`),
      spans: pager.prepare(
        `SELECT archive_id, min(datetime) AS first, max(datetime) AS last, count(*) AS n FROM memento WHERE urlkey = $urlkey GROUP BY archive_id`,
      ),
      count: prep('SELECT count(*) AS n FROM memento'),
      fileEnds: prep('SELECT warc_file, max(warc_offset + warc_length) AS end FROM memento WHERE archive_id = $archive GROUP BY warc_file'),
      ofFile: prep(`SELECT ${COLS} FROM memento WHERE warc_file = $file ORDER BY warc_offset`),
      files: prep('SELECT warc_file, count(*) AS n FROM memento GROUP BY warc_file'),
      originalAt: prep('SELECT id FROM memento WHERE urlkey = $urlkey AND datetime = $datetime AND refers_to IS NULL ORDER BY id DESC LIMIT 1'),
      originalByDigest: prep(
        'SELECT id FROM memento WHERE urlkey = $urlkey AND datetime <= $datetime AND digest = $digest AND refers_to IS NULL ORDER BY datetime DESC, id DESC LIMIT 1',
      ),
      everything: prep(
        `SELECT m.*, o.archive_id || ' ' || o.datetime || ' ' || o.uri_r AS original FROM memento m LEFT JOIN memento o ON o.id = m.refers_to
          ORDER BY m.archive_id, m.urlkey, m.datetime`,
      ),
    };
    return new IndexDb(db, reader, pager, texter, stmts, new ReadCache(opts.cacheBytes ?? 0), file);
  }

  /**
   * Inserts rows in one transaction. A row whose (urlkey, archive_id, datetime) exists
   * replaces it (for recovery and reindex of old WARC files, see the module comment).
   * Up to {@link ROWS_PER_INSERT} rows (a write batch) are one statement, its own transaction
   * (one round trip to SQLite's thread); more, or rows with evidence log entries
   * (`log`, appended after the rows: archive/evidence/log.ts), are several between
   * `BEGIN IMMEDIATE` and `COMMIT`.
   */
  async insertMany(rows: NewMementoRow[], log?: LogAppend): Promise<void> {
    const leaves = log?.leaves.length ? log : undefined;
    if (!rows.length && !leaves) return;
    if (rows.length <= ROWS_PER_INSERT && !leaves) {
      await this.insertPart(rows);
    } else {
      await run(this.db, 'BEGIN IMMEDIATE');
      try {
        // Rows apply in order, so of two rows with one key the later wins.
        for (let from = 0; from < rows.length; from += ROWS_PER_INSERT) await this.insertPart(rows.slice(from, from + ROWS_PER_INSERT));
        if (leaves) await appendToLog(this.logTx, leaves.leaves, leaves);
        await run(this.db, 'COMMIT');
      } catch (err) {
        await run(this.db, 'ROLLBACK').catch(() => undefined);
        throw err;
      }
    }
    this.commits++;
  }

  /** {@link MementoIndex.insertNew}: the daemon is the only writer of its SQLite file (the data folder's lock), so no row is left out. */
  async insertNew(rows: NewMementoRow[], log?: LogAppend): Promise<NewMementoRow[]> {
    await this.insertMany(rows, log);
    return [];
  }

  /** One multi-row upsert of at most {@link ROWS_PER_INSERT} rows. */
  private insertPart(part: NewMementoRow[]): Promise<void> {
    const stmt = this.batchStmts.get(
      `insert${part.length}`,
      () => `INSERT INTO memento (${INSERT_COLS}) VALUES ${part.map(() => '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ')} ${UPSERT}`,
    );
    const params = part.flatMap((r) => [
      r.archive_id,
      r.urlkey,
      r.uri_r,
      r.datetime,
      r.status,
      r.mime,
      r.digest,
      r.warc_file,
      r.warc_offset,
      r.warc_length,
      r.client_ip,
      r.refers_to,
    ]);
    return new Promise<void>((resolve, reject) => stmt.run(params, (err: Error | null) => (err ? reject(err) : resolve())));
  }

  /** Prepared statements of the batch queries on the write connection, one per batch size (at most 80 + 300 of them). */
  private readonly batchStmts: Prepared;

  /** Transactions committed by {@link insertMany} since the index was opened. */
  commits = 0;

  /**
   * For each (urlkey, t) pair, the latest memento of `urlkey` in any archive
   * at or before `t` (epoch s), all in one query (one round trip to SQLite's
   * thread): the dedup lookups of a write batch. With it, whether that is
   * the newest memento of `urlkey` (no memento after `t`), or there is no
   * memento of `urlkey` at all: what the store's cache of newest mementos
   * may keep.
   * @returns one entry per pair, in order; `row` undefined where there is none before `t`.
   */
  async atOrBeforeMany(pairs: { urlkey: string; t: number }[]): Promise<AtOrBefore[]> {
    const out: AtOrBefore[] = [];
    for (let from = 0; from < pairs.length; from += 300) {
      const part = pairs.slice(from, from + 300);
      const stmt = this.batchStmts.get(
        `lookup${part.length}`,
        () => `WITH q(i, k, t) AS (VALUES ${part.map(() => '(?, ?, ?)').join(', ')})
        SELECT q.i AS q_i, (SELECT max(datetime) FROM memento WHERE urlkey = q.k) AS q_newest, m.* FROM q LEFT JOIN memento m ON m.id = (
          SELECT id FROM memento WHERE urlkey = q.k AND datetime <= q.t ORDER BY datetime DESC, id DESC LIMIT 1)`,
      );
      const params = part.flatMap((p, j) => [from + j, p.urlkey, p.t]);
      const rows = await new Promise<(MementoRow & { q_i: number; q_newest: number | null })[]>((resolve, reject) =>
        stmt.all(params, (err: Error | null, r: (MementoRow & { q_i: number; q_newest: number | null })[]) => (err ? reject(err) : resolve(r))),
      );
      for (const { q_i, q_newest, ...row } of rows) {
        const found = row.id === null ? undefined : (row as MementoRow);
        out[q_i] = { row: found, isNewest: q_newest === null || (found !== undefined && found.datetime === q_newest) };
      }
    }
    return out;
  }

  /** The memento of `urlkey` in `archive` at `datetime` (epoch s; the row's unique key), whole; `undefined` when there is none. */
  rowAt(archive: string, urlkey: string, datetime: number): Promise<MementoRow | undefined> {
    return first<MementoRow>(this.stmts.at, { $urlkey: urlkey, $archive: archive, $datetime: datetime });
  }

  /** The memento with row id `id` (a {@link MementoRef}'s), whole; `undefined` when gone. */
  byId(id: number): Promise<MementoRow | undefined> {
    return first<MementoRow>(this.stmts.byId, { $id: id });
  }

  /**
   * First, last and the two mementos on each side of `t` (epoch s) for
   * `urlkey` in `archive`, as {@link MementoRef}s (id, datetime, uri_r:
   * what navigation links need), and `view`, the read cache's view it was
   * made from (answers made from it are kept with it); with `whole`, the
   * last memento at or before `t` (`atOrBefore[0]`, the one a Memento route
   * serves when its datetime is `t`) is the whole {@link MementoRow} (one
   * more query). `undefined` when the URI-R has no memento there.
   *
   * From the URL's view in the read cache (read-cache.ts), loaded from the
   * index when it is not there; a URL with more mementos than a view holds
   * is asked of the index each time.
   */
  async neighbourhood(archive: string, urlkey: string, t: number, whole = false): Promise<Neighbourhood | undefined> {
    return neighbourhoodFromView(this, archive, urlkey, t, whole);
  }

  /**
   * The read cache's view of `urlkey` (read-cache.ts): every memento of it
   * per archive, from memory or loaded from the index, batched
   * (view-loads.ts: up to 64 urlkeys per query, a prepared statement per
   * batch size).
   */
  view(urlkey: string): Promise<UrlView> {
    return this.viewLoads.view(urlkey);
  }

  /** The rows of each of `urlkeys` (at most 64) in one query; `undefined` for one with more than a view holds. */
  private async loadViews(urlkeys: readonly string[]): Promise<(ViewRow[] | undefined)[]> {
    const size = VIEW_BATCH_SIZES.find((n) => n >= urlkeys.length) ?? VIEW_BATCH_SIZES[VIEW_BATCH_SIZES.length - 1];
    const stmt = this.readStmts.get(`view${size}`, () => viewSql(size, MAX_VIEW_MEMENTOS));
    const params: (string | number | null)[] = [];
    for (let i = 0; i < size; i++) params.push(i, i < urlkeys.length ? urlkeys[i] : null);
    const got = await new Promise<{ many: number; j: string }[]>((resolve, reject) =>
      stmt.all(params, (err: Error | null, r: { many: number; j: string }[]) => (err ? reject(err) : resolve(r))),
    );
    const out: (ViewRow[] | undefined)[] = urlkeys.map(() => []);
    for (const { many, j } of got) {
      if (many) for (const i of JSON.parse(j) as number[]) out[i] = undefined;
      else
        for (const [i, archive_id, id, datetime, uri_r] of JSON.parse(j) as [number, string, number, number, string][])
          out[i]?.push({ archive_id, id, datetime, uri_r });
    }
    return out;
  }

  /** Prepared statements on the read connection, one per batch size. */
  private readonly readStmts: Prepared;

  /** Up to `limit` mementos of `urlkey` in `archive` after `after` (epoch s), oldest first (keyset paging). */
  page(archive: string, urlkey: string, after: number, limit: number): Promise<MementoRow[]> {
    return all<MementoRow>(this.stmts.page, { $urlkey: urlkey, $archive: archive, $after: after, $limit: limit });
  }

  /**
   * Every memento of `urlkey` in `archive`, oldest first, as its datetime
   * (epoch s) and URI-R: what a TimeMap lists. Read from the index
   * {@link TIMEMAP_PAGE} rows at a time (keyset paging on datetime) and
   * handed on a page at a time, so that a TimeMap of any size is read in
   * constant memory and the rows cross no async step one by one.
   */
  async *mementoPages(archive: string, urlkey: string): AsyncGenerator<TimemapRow[]> {
    let after = Number.MIN_SAFE_INTEGER;
    for (;;) {
      const rows = await all<TimemapRow>(this.stmts.timemapPage, { $urlkey: urlkey, $archive: archive, $after: after, $limit: TIMEMAP_PAGE });
      if (rows.length) yield rows;
      if (rows.length < TIMEMAP_PAGE) return;
      after = rows[rows.length - 1].datetime;
    }
  }

  /** For each archive holding `urlkey`: first and last datetime (epoch s) and the count. */
  async spans(urlkey: string): Promise<Spans> {
    const v = await this.view(urlkey);
    return v.complete ? v.spans() : all(this.stmts.spans, { $urlkey: urlkey });
  }

  /** The named queries' read (index/reads.ts) on the paging connection: a statement kept per `name`, or prepared per call with `name` null. */
  browse<T>(name: string | null, sql: string, params: Record<string, string | number>): Promise<T[]> {
    if (name === null) return readAll<T>(this.pager, sql, params);
    return all<T>(
      this.browseStmts.get(name, () => sql),
      params,
    );
  }

  /** The named queries' statements on the paging connection. */
  private readonly browseStmts: Prepared;

  /**
   * As {@link neighbourhood}, counting only the mementos whose datetime lies
   * in one of `ranges` (`[from, until)` epoch s, ±Infinity open): the
   * navigation of a URL some of whose mementos the access rules hide
   * (archive/read/access-rules.ts). One query of its own, not batched.
   */
  async neighbourhoodWithin(archive: string, urlkey: string, t: number, ranges: Ranges, whole = false): Promise<Neighbourhood | undefined> {
    if (!ranges.length) return undefined;
    const n = neighbourhoodOfRows(await readAll<NeighbourRow>(this.reader, neighbourhoodWithinSql(ranges), { $urlkey: urlkey, $archive: archive, $t: t }));
    if (!n) return undefined;
    if (whole && n.atOrBefore[0]) n.atOrBefore[0] = (await this.byId(n.atOrBefore[0].id)) ?? n.atOrBefore[0];
    return n;
  }

  /** As {@link spans}, counting only the mementos whose datetime lies in one of `ranges` (as {@link neighbourhoodWithin}). */
  async spansWithin(urlkey: string, ranges: Ranges): Promise<Spans> {
    const sql = `SELECT archive_id, min(datetime) AS first, max(datetime) AS last, count(*) AS n FROM memento WHERE urlkey = $urlkey AND (${rangeSql(ranges)}) GROUP BY archive_id`;
    return ranges.length ? readAll(this.pager, sql, { $urlkey: urlkey }) : [];
  }

  /**
   * True when `urlkey` has a memento (in `archive`, else in any) whose
   * datetime lies in `ranges`: one index seek, one row at most.
   */
  async anyWithin(urlkey: string, ranges: Ranges, archive?: string): Promise<boolean> {
    if (!ranges.length) return false;
    const sql = `SELECT 1 FROM memento WHERE urlkey = $urlkey AND (${rangeSql(ranges)})${archive === undefined ? '' : ' AND archive_id = $archive'} LIMIT 1`;
    const rows = await readAll(this.reader, sql, archive === undefined ? { $urlkey: urlkey } : { $urlkey: urlkey, $archive: archive });
    return rows.length > 0;
  }

  /**
   * Prepares `sql` on the index connection without mmap, the one that walks
   * of many rows read on (TimeMaps); the caller closes the statement.
   * For the CDX walks of archive/store/index/cdx-walk.ts.
   */
  walkQuery<T>(sql: string): WalkQuery<T> {
    const st = this.pager.prepare(sql);
    return { all: (params) => all<T>(st, params), close: () => new Promise<void>((r) => st.finalize(() => r())) };
  }

  /** A trivial query on the read connection: resolves when the index answers (health check). */
  async ping(): Promise<void> {
    await new Promise<void>((resolve, reject) => this.reader.get('SELECT 1', (err) => (err ? reject(err) : resolve())));
  }

  /** Resolves when the write connection answers and the index file and its folder (`-wal`, `-shm`) are writable. */
  async writable(): Promise<void> {
    await access(this.file, constants.W_OK);
    await access(path.dirname(this.file), constants.W_OK);
    await new Promise<void>((resolve, reject) => this.db.get('SELECT 1', (err) => (err ? reject(err) : resolve())));
  }

  /** Number of index rows (mementos). */
  async count(): Promise<number> {
    return (await get<{ n: number }>(this.stmts.count, {}))!.n;
  }

  /**
   * For each WARC file of `archive` that the index points into: the end
   * (offset + length) of the last indexed response record in it. Crash
   * recovery starts reading there.
   */
  fileEnds(archive: string): Promise<{ warc_file: string; end: number }[]> {
    return all(this.stmts.fileEnds, { $archive: archive });
  }

  /** The rows that point into `file` (relative to `warcs/`), by offset. For `verify`. */
  rowsOfFile(file: string): Promise<MementoRow[]> {
    return all<MementoRow>(this.stmts.ofFile, { $file: file });
  }

  /**
   * The row id of the memento whose `response` record holds a revisit
   * record's payload, for recovery and `reindex` (which read revisit
   * records back): the response row (any archive) of the urlkey and
   * datetime the record names (`WARC-Refers-To-Target-URI`,
   * `WARC-Refers-To-Date`), else the latest response row of the revisit's
   * own urlkey at or before its datetime with its payload digest;
   * `undefined` when there is none. Asked on the write connection, so that
   * rows inserted just before are seen.
   */
  async revisitOriginal(
    named: { urlkey: string; datetime: number } | null,
    own: Pick<MementoRow, 'urlkey' | 'datetime' | 'digest'>,
  ): Promise<number | undefined> {
    const at = named && (await first<{ id: number }>(this.stmts.originalAt, { $urlkey: named.urlkey, $datetime: named.datetime }));
    if (at) return at.id;
    const same = await first<{ id: number }>(this.stmts.originalByDigest, { $urlkey: own.urlkey, $datetime: own.datetime, $digest: own.digest });
    return same?.id;
  }

  /** Every WARC file the index points into, with its row count. For `verify`. */
  files(): Promise<{ warc_file: string; n: number }[]> {
    return all(this.stmts.files, {});
  }

  /**
   * Every row, ordered by archive, urlkey, datetime, without `id`: what the
   * index answers, for comparing an index with its rebuild (`reindex`).
   * Row ids differ between the two, so a revisit's `refers_to` is given as
   * its original's `<archive_id> <datetime> <uri_r>` instead.
   */
  async dump(): Promise<DumpRow[]> {
    const rows = await all<MementoRow & { original: string | null }>(this.stmts.everything, {});
    return rows.map(({ id: _id, refers_to: _r, original, ...r }) => ({ ...r, refers_to: original }));
  }

  /**
   * Every memento, or every memento of `archive`, in row id order, read
   * `pageSize` rows at a time (keyset paging on id) from the read
   * connection, so that an export of any size (`memento-archive cdxj`)
   * takes bounded memory. Rows committed while it runs may or may not be
   * included.
   */
  async *allMementos(archive?: string, pageSize = 5000): AsyncGenerator<MementoRow> {
    const where = archive === undefined ? '' : 'AND archive_id = $archive';
    const stmt = this.readStmts.get(`all${where ? 'Of' : ''}`, () => `SELECT ${COLS} FROM memento WHERE id > $after ${where} ORDER BY id LIMIT $limit`);
    let after = 0;
    for (;;) {
      const rows = await all<MementoRow>(stmt, { $after: after, $limit: pageSize, ...(archive === undefined ? {} : { $archive: archive }) });
      yield* rows;
      if (rows.length < pageSize) return;
      after = rows[rows.length - 1].id;
    }
  }

  /**
   * {@link MementoIndex.rewriteRows}, on the write connection with
   * `secure_delete` on (a deleted row's bytes are overwritten in the file).
   */
  async rewriteRows(change: RowChange): Promise<{ deleted: number; logEntries: number }> {
    const exec = (sql: string, params: unknown[]) => runChanges(this.db, sql, params);
    await exec('PRAGMA secure_delete = ON', []);
    await exec('BEGIN IMMEDIATE', []);
    let deleted = 0;
    try {
      const gone = await readAll<MementoRow>(this.db, 'SELECT archive_id, urlkey, datetime FROM memento WHERE id IN (SELECT value FROM json_each(?))', [
        JSON.stringify(change.drop),
      ]);
      const logEntries = await logPurgeOf(this.logTx, gone, change.at);
      for (const id of change.drop) deleted += await exec('DELETE FROM memento WHERE id = ?', [id]);
      for (const m of change.move) await exec('UPDATE memento SET warc_file = ?, warc_offset = ? WHERE id = ?', [m.warc_file, m.warc_offset, m.id]);
      await exec('COMMIT', []);
      return { deleted, logEntries };
    } catch (err) {
      await exec('ROLLBACK', []).catch(() => undefined);
      throw err;
    }
  }

  /** {@link MementoIndex.compact}: `VACUUM`, then the WAL checkpointed and truncated. */
  async compact(): Promise<void> {
    await run(this.db, 'VACUUM');
    await run(this.db, 'PRAGMA wal_checkpoint(TRUNCATE)');
  }

  /** Finalizes statements and closes the file. */
  async close(): Promise<void> {
    await this.log.close();
    await this.logTx.close();
    for (const s of Object.values(this.stmts)) await new Promise<void>((r) => s.finalize(() => r()));
    for (const p of [this.batchStmts, this.readStmts, this.browseStmts]) await p.finalize();
    await new Promise<void>((resolve, reject) => this.reader.close((err) => (err ? reject(err) : resolve())));
    await new Promise<void>((resolve, reject) => this.pager.close((err) => (err ? reject(err) : resolve())));
    await new Promise<void>((resolve, reject) => this.texter.close((err) => (err ? reject(err) : resolve())));
    await new Promise<void>((resolve, reject) => this.db.close((err) => (err ? reject(err) : resolve())));
  }
}
