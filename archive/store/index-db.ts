/**
 * The SQLite index of the archive (docs/storage.md): one row per memento,
 * keyed by (urlkey, archive id, Memento-Datetime), pointing at the WARC
 * response record that holds it.
 *
 * Rule for two different captures of one URI-R in the same second (one
 * URI-M): the row keeps the capture received last; both WARC records stay
 * in the WARC files. See docs/storage.md "Same-second captures".
 */
import { chmod, open } from 'node:fs/promises';
import sqlite3 from 'sqlite3';

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
  /** Byte offset of the response record (its gzip member) in the WARC file. */
  warc_offset: number;
  /** Byte length of that gzip member. */
  warc_length: number;
  client_ip: string | null;
}

export type NewMementoRow = Omit<MementoRow, 'id'>;

/** One answer of {@link IndexDb.atOrBeforeMany}. */
export interface AtOrBefore {
  /** The latest memento at or before the instant asked; `undefined` when there is none. */
  row: MementoRow | undefined;
  /** `row` is the newest memento of its urlkey (none after the instant), or the urlkey has no memento at all. */
  isNewest: boolean;
}

/**
 * What a navigation link needs of a memento (RFC 7089 §2.2.1: its URI-M and
 * datetime): the row id, Memento-Datetime (epoch s) and the URI-R as
 * captured. Read from the `(urlkey, archive_id, datetime)` index plus the
 * row's `uri_r`, not the whole row.
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
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS memento (
  id INTEGER PRIMARY KEY,
  archive_id TEXT NOT NULL,
  urlkey TEXT NOT NULL,
  uri_r TEXT NOT NULL,
  datetime INTEGER NOT NULL,
  status INTEGER NOT NULL,
  mime TEXT NOT NULL,
  digest TEXT NOT NULL,
  warc_file TEXT NOT NULL,
  warc_offset INTEGER NOT NULL,
  warc_length INTEGER NOT NULL,
  client_ip TEXT,
  UNIQUE (urlkey, archive_id, datetime)
);
CREATE INDEX IF NOT EXISTS memento_urlkey_datetime ON memento (urlkey, datetime);
`;

const COLS = 'id, archive_id, urlkey, uri_r, datetime, status, mime, digest, warc_file, warc_offset, warc_length, client_ip';
const INSERT_COLS = 'archive_id, urlkey, uri_r, datetime, status, mime, digest, warc_file, warc_offset, warc_length, client_ip';
// Same-second rule: a row whose (urlkey, archive_id, datetime) exists is replaced by the later one.
const UPSERT = `ON CONFLICT (urlkey, archive_id, datetime) DO UPDATE SET uri_r = excluded.uri_r, status = excluded.status, mime = excluded.mime,
  digest = excluded.digest, warc_file = excluded.warc_file, warc_offset = excluded.warc_offset, warc_length = excluded.warc_length,
  client_ip = excluded.client_ip`;
const BY = 'urlkey = $urlkey AND archive_id = $archive';

function run(db: sqlite3.Database | sqlite3.Statement, sql: string | null, params: object = {}): Promise<void> {
  return new Promise((resolve, reject) => {
    const cb = (err: Error | null) => (err ? reject(err) : resolve());
    if (db instanceof sqlite3.Statement) db.run(params, cb);
    else (db as sqlite3.Database).run(sql as string, params, cb);
  });
}

function all<T>(stmt: sqlite3.Statement, params: object): Promise<T[]> {
  return new Promise((resolve, reject) => stmt.all(params, (err: Error | null, rows: T[]) => (err ? reject(err) : resolve(rows))));
}

/**
 * The first row of a read-connection query. Not `get`: sqlite3's `get` leaves
 * the statement mid-result, which keeps a read transaction (an old WAL
 * snapshot) open on that connection; `all` runs the statement to its end.
 */
async function first<T>(stmt: sqlite3.Statement, params: object): Promise<T | undefined> {
  return (await all<T>(stmt, params))[0];
}

function get<T>(stmt: sqlite3.Statement, params: object): Promise<T | undefined> {
  // reset first when there is nothing to bind (binding resets): `get` leaves a statement mid-result.
  if (Object.keys(params).length === 0) stmt.reset();
  return new Promise((resolve, reject) => stmt.get(params, (err: Error | null, row: T) => (err ? reject(err) : resolve(row))));
}

/** Most neighbourhood lookups answered by one query. */
const NEIGHBOURHOOD_BATCH = 64;

/** A waiting {@link IndexDb.neighbourhood} call. */
interface Lookup {
  archive: string;
  urlkey: string;
  t: number;
  whole: boolean;
  resolve: (n: Neighbourhood | undefined) => void;
  reject: (err: unknown) => void;
}

/** A row of {@link neighbourhoodSql}: lookup number, which neighbour (1 first, 2 last, 3/4 at or before, 5/6 after), the memento. */
interface NeighbourRow extends MementoRef {
  i: number;
  kind: number;
  /** The whole-row columns: absent from the statement without them, NULL on rows that are not whole. */
  status?: number | null;
  mime?: string | null;
  digest?: string | null;
  warc_file?: string | null;
  warc_offset?: number | null;
  warc_length?: number | null;
  client_ip?: string | null;
}

/**
 * The neighbourhoods of `n` lookups `(i, urlkey, archive, t, whole)` in one
 * query: each neighbour's id is found in the covering `(urlkey,
 * archive_id, datetime)` index (one seek each), then its row by id for
 * `uri_r` (and, for the one at or before `t` of a `whole` lookup, every
 * column). `CROSS JOIN`: SQLite then keeps r as the outer loop (a plain
 * join let the planner scan the whole table against an automatic index on r).
 */
export function neighbourhoodSql(n: number, withWhole = true): string {
  const one = (kind: number, cond: string, order: string, offset: number) =>
    `SELECT i, ${kind} AS kind, ${kind === 3 ? 'w' : '0'} AS w, (SELECT id FROM memento WHERE urlkey = q.k AND archive_id = q.a${cond} ORDER BY datetime ${order} LIMIT 1 OFFSET ${offset}) AS id FROM q`;
  const whole = (col: string) => `CASE WHEN r.w THEN m.${col} END AS ${col}`;
  return `WITH q(i, k, a, t, w) AS (VALUES ${new Array(n).fill('(?, ?, ?, ?, ?)').join(', ')}),
    r(i, kind, w, id) AS (
      ${one(1, '', 'ASC', 0)}
      UNION ALL ${one(2, '', 'DESC', 0)}
      UNION ALL ${one(3, ' AND datetime <= q.t', 'DESC', 0)}
      UNION ALL ${one(4, ' AND datetime <= q.t', 'DESC', 1)}
      UNION ALL ${one(5, ' AND datetime > q.t', 'ASC', 0)}
      UNION ALL ${one(6, ' AND datetime > q.t', 'ASC', 1)})
    SELECT r.i AS i, r.kind AS kind, m.id AS id, m.datetime AS datetime, m.uri_r AS uri_r
      ${withWhole ? ', ' + ['status', 'mime', 'digest', 'warc_file', 'warc_offset', 'warc_length', 'client_ip'].map(whole).join(', ') : ''}
    FROM r CROSS JOIN memento m ON m.id = r.id`;
}

/**
 * Creates `file` with mode 0600 when it does not exist, and makes an
 * existing one 0600 (when this process may: a file of another user is left
 * as it is).
 */
export async function ownerOnly(file: string): Promise<void> {
  await (await open(file, 'a', 0o600)).close();
  await chmod(file, 0o600).catch(() => undefined);
}

/** Rows per query when {@link IndexDb.mementos} walks a TimeMap. */
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
export class IndexDb {
  private constructor(
    private readonly db: sqlite3.Database,
    private readonly reader: sqlite3.Database,
    private readonly pager: sqlite3.Database,
    private readonly stmts: Record<string, sqlite3.Statement>,
  ) {}

  /**
   * Opens (creating if needed) the index at `file`.
   * @param opts.synchronous SQLite's `synchronous` pragma (default `NORMAL`, see above)
   * @throws on a file SQLite cannot open.
   */
  static async open(file: string, opts: { synchronous?: 'NORMAL' | 'FULL' } = {}): Promise<IndexDb> {
    // Rows hold client addresses: the owner's only (SQLite gives its -wal and -shm files the same mode).
    await ownerOnly(file);
    const db = await new Promise<sqlite3.Database>((resolve, reject) => {
      const d = new sqlite3.Database(file, (err) => (err ? reject(err) : resolve(d)));
    });
    db.configure('busyTimeout', 10_000);
    await run(db, 'PRAGMA journal_mode = WAL');
    await run(db, `PRAGMA synchronous = ${opts.synchronous ?? 'NORMAL'}`);
    await new Promise<void>((resolve, reject) => db.exec(SCHEMA, (err) => (err ? reject(err) : resolve())));
    const openReadOnly = () =>
      new Promise<sqlite3.Database>((resolve, reject) => {
        const d = new sqlite3.Database(file, sqlite3.OPEN_READONLY, (err) => (err ? reject(err) : resolve(d)));
      });
    const reader = await openReadOnly();
    reader.configure('busyTimeout', 10_000);
    await run(reader, `PRAGMA mmap_size = ${MMAP_BYTES}`);
    const pager = await openReadOnly();
    pager.configure('busyTimeout', 10_000);
    const prep = (sql: string) => db.prepare(sql);
    const read = (sql: string) => reader.prepare(sql);
    const stmts = {
      byId: read(`SELECT ${COLS} FROM memento WHERE id = $id`),
      page: pager.prepare(`SELECT ${COLS} FROM memento WHERE ${BY} AND datetime > $after ORDER BY datetime ASC LIMIT $limit`),
      spans: pager.prepare(
        `SELECT archive_id, min(datetime) AS first, max(datetime) AS last, count(*) AS n FROM memento WHERE urlkey = $urlkey GROUP BY archive_id`,
      ),
      count: prep('SELECT count(*) AS n FROM memento'),
      fileEnds: prep('SELECT warc_file, max(warc_offset + warc_length) AS end FROM memento WHERE archive_id = $archive GROUP BY warc_file'),
      ofFile: prep(`SELECT ${COLS} FROM memento WHERE warc_file = $file ORDER BY warc_offset`),
      files: prep('SELECT warc_file, count(*) AS n FROM memento GROUP BY warc_file'),
      everything: prep(`SELECT ${COLS} FROM memento ORDER BY archive_id, urlkey, datetime`),
    };
    return new IndexDb(db, reader, pager, stmts);
  }

  /**
   * Inserts rows in one transaction. A row whose (urlkey, archive_id, datetime) exists
   * replaces it (same-second rule).
   */
  async insertMany(rows: NewMementoRow[]): Promise<void> {
    await run(this.db, 'BEGIN IMMEDIATE');
    try {
      // Multi-row upserts (rows apply in order, so of two rows with one key the later
      // wins, as the same-second rule wants): one statement per 80 rows, not one per row.
      for (let from = 0; from < rows.length; from += 80) {
        const part = rows.slice(from, from + 80);
        const stmt = this.cached(
          `insert${part.length}`,
          () => `INSERT INTO memento (${INSERT_COLS}) VALUES ${part.map(() => '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ')} ${UPSERT}`,
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
        ]);
        await new Promise<void>((resolve, reject) => stmt.run(params, (err: Error | null) => (err ? reject(err) : resolve())));
      }
      await run(this.db, 'COMMIT');
      this.commits++;
    } catch (err) {
      await run(this.db, 'ROLLBACK').catch(() => undefined);
      throw err;
    }
  }

  /** Prepared statements of the batch queries, one per batch size (at most 80 + 300 of them). */
  private readonly batchStmts = new Map<string, sqlite3.Statement>();

  private cached(key: string, sql: () => string): sqlite3.Statement {
    let st = this.batchStmts.get(key);
    if (!st) {
      st = this.db.prepare(sql());
      this.batchStmts.set(key, st);
    }
    return st;
  }

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
      const stmt = this.cached(
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

  /** The memento with row id `id` (a {@link MementoRef}'s), whole; `undefined` when gone. */
  byId(id: number): Promise<MementoRow | undefined> {
    return first<MementoRow>(this.stmts.byId, { $id: id });
  }

  /**
   * First, last and the two mementos on each side of `t` (epoch s) for
   * `urlkey` in `archive`, as {@link MementoRef}s (id, datetime, uri_r:
   * what navigation links need); with `whole`, the last memento at or
   * before `t` (`atOrBefore[0]`, the one a Memento route serves when its
   * datetime is `t`) is the whole {@link MementoRow}. `undefined` when the
   * URI-R has no memento there.
   *
   * Lookups asked for while one is running are answered together by the
   * next query (up to {@link NEIGHBOURHOOD_BATCH} per query): each sqlite3
   * query is a round trip to libuv's thread pool, which under load costs
   * more than the lookup itself.
   */
  neighbourhood(archive: string, urlkey: string, t: number, whole = false): Promise<Neighbourhood | undefined> {
    return new Promise((resolve, reject) => {
      this.lookups.push({ archive, urlkey, t, whole, resolve, reject });
      this.scheduleLookups();
    });
  }

  private lookups: Lookup[] = [];
  private lookupRunning = false;
  private lookupScheduled = false;

  /** Runs the waiting lookups after this turn of the event loop (so that requests read in it join), one query at a time. */
  private scheduleLookups(): void {
    if (this.lookupScheduled || this.lookupRunning || !this.lookups.length) return;
    this.lookupScheduled = true;
    setImmediate(() => {
      this.lookupScheduled = false;
      void this.runLookups();
    });
  }

  private async runLookups(): Promise<void> {
    if (this.lookupRunning || !this.lookups.length) return;
    this.lookupRunning = true;
    const batch = this.lookups.splice(0, NEIGHBOURHOOD_BATCH);
    try {
      // Without a whole-row lookup in the batch, the statement without the seven whole-row columns
      // (converting them to JS, even as NULLs, is a good part of a lookup's cost).
      const whole = batch.some((q) => q.whole);
      const stmt = this.cachedRead(`nb${batch.length}${whole ? 'w' : ''}`, () => neighbourhoodSql(batch.length, whole));
      const params: (string | number)[] = [];
      for (const [i, q] of batch.entries()) params.push(i, q.urlkey, q.archive, q.t, q.whole ? 1 : 0);
      const rows = await new Promise<NeighbourRow[]>((resolve, reject) =>
        stmt.all(params, (err: Error | null, r: NeighbourRow[]) => (err ? reject(err) : resolve(r))),
      );
      const out: (Neighbourhood | undefined)[] = new Array(batch.length).fill(undefined);
      for (const r of rows) {
        out[r.i] ??= { first: undefined!, last: undefined!, atOrBefore: [], after: [] };
        const n = out[r.i]!;
        let ref: MementoRef;
        if (r.warc_file != null) {
          const q = batch[r.i];
          const row: MementoRow = {
            id: r.id,
            archive_id: q.archive,
            urlkey: q.urlkey,
            uri_r: r.uri_r,
            datetime: r.datetime,
            status: r.status!,
            mime: r.mime!,
            digest: r.digest!,
            warc_file: r.warc_file,
            warc_offset: r.warc_offset!,
            warc_length: r.warc_length!,
            client_ip: r.client_ip ?? null,
          };
          ref = row;
        } else ref = { id: r.id, datetime: r.datetime, uri_r: r.uri_r };
        switch (r.kind) {
          case 1:
            n.first = ref;
            break;
          case 2:
            n.last = ref;
            break;
          case 3:
            n.atOrBefore[0] = ref;
            break;
          case 4:
            n.atOrBefore[1] = ref;
            break;
          case 5:
            n.after[0] = ref;
            break;
          default:
            n.after[1] = ref;
        }
      }
      // A hole (the second at or before without the first) cannot happen; keep the arrays dense anyway.
      for (const n of out) {
        if (!n) continue;
        n.atOrBefore = n.atOrBefore.filter(Boolean);
        n.after = n.after.filter(Boolean);
      }
      for (const [i, q] of batch.entries()) q.resolve(out[i]);
    } catch (err) {
      for (const q of batch) q.reject(err);
    } finally {
      this.lookupRunning = false;
      this.scheduleLookups();
    }
  }

  /** Prepared statements on the read connection, one per batch size. */
  private readonly readStmts = new Map<string, sqlite3.Statement>();

  private cachedRead(key: string, sql: () => string): sqlite3.Statement {
    let st = this.readStmts.get(key);
    if (!st) {
      st = this.reader.prepare(sql());
      this.readStmts.set(key, st);
    }
    return st;
  }

  /** Up to `limit` mementos of `urlkey` in `archive` after `after` (epoch s), oldest first (keyset paging). */
  page(archive: string, urlkey: string, after: number, limit: number): Promise<MementoRow[]> {
    return all<MementoRow>(this.stmts.page, { $urlkey: urlkey, $archive: archive, $after: after, $limit: limit });
  }

  /**
   * Every memento of `urlkey` in `archive`, oldest first, read from the
   * index {@link TIMEMAP_PAGE} rows at a time (keyset paging on datetime),
   * so that a TimeMap of any size is read in constant memory.
   */
  async *mementos(archive: string, urlkey: string): AsyncGenerator<MementoRow> {
    let after = Number.MIN_SAFE_INTEGER;
    for (;;) {
      const rows = await this.page(archive, urlkey, after, TIMEMAP_PAGE);
      yield* rows;
      if (rows.length < TIMEMAP_PAGE) return;
      after = rows[rows.length - 1].datetime;
    }
  }

  /** For each archive holding `urlkey`: first and last datetime (epoch s) and the count. */
  spans(urlkey: string): Promise<{ archive_id: string; first: number; last: number; n: number }[]> {
    return all(this.stmts.spans, { $urlkey: urlkey });
  }

  /**
   * A read-only query of the pages for people (archive/web/queries.ts): `sql`
   * prepared once per `name` on the paging connection, run to its end.
   *
   * @param name a stable name for the statement (its cache key)
   * @param sql one SELECT with `$name` parameters
   */
  browse<T>(name: string, sql: string, params: Record<string, string | number>): Promise<T[]> {
    let st = this.browseStmts.get(name);
    if (!st) {
      st = this.pager.prepare(sql);
      this.browseStmts.set(name, st);
    }
    return all<T>(st, params);
  }

  private readonly browseStmts = new Map<string, sqlite3.Statement>();

  /** Number of index rows (mementos). */
  /** A trivial query on the read connection: resolves when the index answers (health check). */
  async ping(): Promise<void> {
    await new Promise<void>((resolve, reject) => this.reader.get('SELECT 1', (err) => (err ? reject(err) : resolve())));
  }

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

  /** Every WARC file the index points into, with its row count. For `verify`. */
  files(): Promise<{ warc_file: string; n: number }[]> {
    return all(this.stmts.files, {});
  }

  /**
   * Every row, ordered by archive, urlkey, datetime, without `id`: what the
   * index answers, for comparing an index with its rebuild (`reindex`).
   */
  async dump(): Promise<NewMementoRow[]> {
    const rows = await all<MementoRow>(this.stmts.everything, {});
    return rows.map(({ id: _id, ...r }) => r);
  }

  /** Finalizes statements and closes the file. */
  async close(): Promise<void> {
    for (const s of [...Object.values(this.stmts), ...this.batchStmts.values(), ...this.readStmts.values(), ...this.browseStmts.values()])
      await new Promise<void>((r) => s.finalize(() => r()));
    await new Promise<void>((resolve, reject) => this.reader.close((err) => (err ? reject(err) : resolve())));
    await new Promise<void>((resolve, reject) => this.pager.close((err) => (err ? reject(err) : resolve())));
    await new Promise<void>((resolve, reject) => this.db.close((err) => (err ? reject(err) : resolve())));
  }
}
