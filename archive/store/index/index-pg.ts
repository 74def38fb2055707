/**
 * The index of mementos in PostgreSQL (`storage.index:
 * postgres://…`, docs/scale-out.md): the {@link MementoIndex} of
 * index-db.ts, the same rows and answers, on a database several daemons
 * can share. Through `pg`, a pool of connections; every fixed query is a
 * named prepared statement (parsed once per connection).
 *
 * The table is the SQLite one with PostgreSQL types: datetimes, ids,
 * offsets and lengths `bigint` (returned as JavaScript numbers: all are
 * below 2^53), text columns in the `C` collation, so that urlkeys sort
 * and compare byte by byte as in SQLite (the CDX walks, the URL lists and
 * their paging depend on it). It is created when missing, under an
 * advisory lock so that daemons starting together do not race.
 *
 * Several daemons (replicas) may write into one table
 * (docs/scale-out.md "Replicas"): the unique key (urlkey, archive_id,
 * datetime) is the arbiter between them. Ingest inserts with
 * {@link PgIndex.insertNew} (`ON CONFLICT DO NOTHING`): a row another
 * daemon committed first is never replaced, and the store re-decides the
 * rows that lost. A daemon whose WARC files are in its own folder must be
 * the only one on its database (the others could not read its files):
 * {@link PgIndex.open} with `writers` takes an advisory lock that says so
 * for as long as the daemon runs.
 */
import pg from 'pg';
import { withoutPassword } from '../../storage-config.js';
import { neighbourhoodFromView, ViewLoads } from './view-loads.js';
import { type NeighbourRow, neighbourhoodOfRows, neighbourhoodWithinSql, rangeSql, VIEW_BATCH_SIZES } from './index-sql.js';
import {
  type AtOrBefore,
  type DumpRow,
  type MementoIndex,
  PgIndexError,
  type RowChange,
  type SqlDialect,
  type TimemapRow,
  type WalkQuery,
} from './memento-index.js';

export { PgIndexError };
import type { MementoRow, Neighbourhood, NewMementoRow, Ranges, Spans } from './memento-row.js';
import { MAX_VIEW_MEMENTOS, ReadCache, type UrlView, type ViewRow } from '../read-cache.js';
import { appendToLog, logPurgeOf } from '../../evidence/log.js';
import { LOG_SCHEMA_PG, PgLogStore, PgLogTx } from './log-pg.js';
import { PgTextQueries, TEXT_SCHEMA_PG } from './text-pg.js';
import type { LogAppend } from './memento-index.js';
import { FeedQueries, KeyQueries, PageQueries, PanelQuery, type IndexReads } from './queries.js';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS memento (
  id bigserial PRIMARY KEY,
  archive_id text COLLATE "C" NOT NULL,
  urlkey text COLLATE "C" NOT NULL,
  uri_r text COLLATE "C" NOT NULL,
  datetime bigint NOT NULL,
  status integer NOT NULL,
  mime text COLLATE "C" NOT NULL,
  digest text COLLATE "C" NOT NULL,
  warc_file text COLLATE "C" NOT NULL,
  warc_offset bigint NOT NULL,
  warc_length bigint NOT NULL,
  client_ip text,
  refers_to bigint,
  UNIQUE (urlkey, archive_id, datetime)
);
CREATE INDEX IF NOT EXISTS memento_urlkey_datetime ON memento (urlkey, datetime, id);
CREATE INDEX IF NOT EXISTS memento_warc_file ON memento (warc_file, warc_offset);
`;

/** Key of the advisory lock taken while the schema is made (any number the daemons agree on). */
const SCHEMA_LOCK = 726_617_001;

const COLS = 'id, archive_id, urlkey, uri_r, datetime, status, mime, digest, warc_file, warc_offset, warc_length, client_ip, refers_to';
/** Each column of a new row with the type of its array parameter ({@link PgIndex.insertMany}). */
const INSERT_COLS: readonly (readonly [keyof NewMementoRow, string])[] = [
  ['archive_id', 'text'],
  ['urlkey', 'text'],
  ['uri_r', 'text'],
  ['datetime', 'bigint'],
  ['status', 'int'],
  ['mime', 'text'],
  ['digest', 'text'],
  ['warc_file', 'text'],
  ['warc_offset', 'bigint'],
  ['warc_length', 'bigint'],
  ['client_ip', 'text'],
  ['refers_to', 'bigint'],
];
const INSERT = `INSERT INTO memento (${INSERT_COLS.map(([c]) => c).join(', ')})
  SELECT * FROM unnest(${INSERT_COLS.map(([, type], i) => `$${i + 1}::${type}[]`).join(', ')})
  ON CONFLICT (urlkey, archive_id, datetime) DO UPDATE SET ${INSERT_COLS.filter(([c]) => !['urlkey', 'archive_id', 'datetime'].includes(c))
    .map(([c]) => `${c} = excluded.${c}`)
    .join(', ')}`;
/** Ingest's insert: a key another daemon committed first stays as it is; the keys inserted are returned ({@link PgIndex.insertNew}). */
const INSERT_NEW = `INSERT INTO memento (${INSERT_COLS.map(([c]) => c).join(', ')})
  SELECT * FROM unnest(${INSERT_COLS.map(([, type], i) => `$${i + 1}::${type}[]`).join(', ')})
  ON CONFLICT (urlkey, archive_id, datetime) DO NOTHING RETURNING urlkey, archive_id, datetime`;
/**
 * Key of the advisory lock of the daemons writing into the database
 * ({@link PgIndex.open} `writers`): held shared by each daemon whose WARC
 * files are in a bucket (replicas), exclusive by one whose WARC files are
 * in its own folder.
 */
export const WRITERS_LOCK = 726_617_002;
/** Rows per INSERT statement (recovery and reindex insert many; a write batch is one statement). */
const ROWS_PER_INSERT = 5000;

/** A memento's unique key. */
type MementoKey = Pick<NewMementoRow, 'urlkey' | 'archive_id' | 'datetime'>;
/** Pairs per {@link PgIndex.atOrBeforeMany} query, as in SQLite. */
const PAIRS_PER_LOOKUP = 300;
/** Rows per query when {@link PgIndex.mementoPages} walks a TimeMap, as in SQLite. */
const TIMEMAP_PAGE = 1000;

/** PostgreSQL's fragments of the callers' SQL (memento-index.ts `SqlDialect`): `to_char` in UTC for SQLite's `strftime`. */
export const POSTGRES_SQL: SqlDialect = {
  yearMonth: (col) => `to_char(to_timestamp(${col}) AT TIME ZONE 'UTC', 'YYYY-MM')`,
  monthDay: (col) => `to_char(to_timestamp(${col}) AT TIME ZONE 'UTC', 'MM-DD')`,
  timestamp14: (col) => `to_char(to_timestamp(${col}) AT TIME ZONE 'UTC', 'YYYYMMDDHH24MISS')`,
  surtHost: (col) => `substr(${col}, 1, greatest(strpos(${col}, ')') - 1, 0))`,
  // Built as text: json_build_object writes spaces (`{"a" : "b"}`) where SQLite's json_object writes none.
  jsonObject: (members) =>
    `('{' || ${members.map(([k, v]) => `'${JSON.stringify(k)}:' || COALESCE(to_json((${v})::text)::text, 'null')`).join(" || ',' || ")} || '}')`,
  jsonTexts: (param) => `SELECT ordinality - 1 AS i, value FROM json_array_elements_text((${param})::json) WITH ORDINALITY`,
  least: (a, b) => `LEAST(${a}, ${b})`,
  greatest: (a, b) => `GREATEST(${a}, ${b})`,
};

/** Runs `work` on one pooled connection between BEGIN and COMMIT; on an error, ROLLBACK and rethrow. @throws `work`'s or the database's error */
async function inTransaction(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<void>): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await work(client);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/** bigint (count, datetime, id) as a JavaScript number; every other type as `pg` reads it. */
const TYPES = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === pg.types.builtins.INT8 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

/**
 * `sql` with its `$name` parameters numbered (`$1`, `$2`, …) as PostgreSQL
 * wants them, and the names in that order.
 */
function numbered(sql: string): { text: string; names: string[] } {
  const names: string[] = [];
  const text = sql.replace(/\$([A-Za-z_]\w*)/g, (_m, name: string) => {
    const key = '$' + name;
    let i = names.indexOf(key);
    if (i < 0) i = names.push(key) - 1;
    return `$${i + 1}`;
  });
  return { text, names };
}

/**
 * Parameter values for {@link numbered} SQL. PostgreSQL text holds no NUL,
 * which the CDX walks append to a urlkey as the end of a range
 * (`key + "\0"`: just after `key`); U+0001 stands in for it: no urlkey
 * holds a control character (they are percent-encoded), so it bounds the
 * same urlkeys.
 */
function values(names: readonly string[], params: Record<string, string | number>): unknown[] {
  return names.map((n) => {
    const v = params[n];
    return typeof v === 'string' && v.includes('\0') ? v.replace(/\0/g, '\u0001') : v;
  });
}

/**
 * Who may write into the database beside this daemon ({@link PgIndex.open}):
 * `alone` for a daemon whose WARC files are in its own folder (no other
 * daemon may write, since none could read its files), `replicas` for one
 * whose WARC files are in a bucket (other replicas may, each with its WARC
 * files in the bucket too); `upkeep` for a command that rewrites the
 * index (`purge`, `reindex`): no daemon may run on it meanwhile.
 */
export type Writers = 'alone' | 'replicas' | 'upkeep';

/**
 * Takes the advisory lock {@link WRITERS_LOCK} on a connection of its own,
 * exclusive (`alone`) or shared (`replicas`), without waiting; the lock
 * lasts as long as that connection (closing it, or the process ending,
 * lets it go).
 * @throws PgIndexError when another daemon holds it the other way, saying which setting to change
 */
async function holdWritersLock(url: string, writers: Writers): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  // A broken connection (the server restarted) loses the lock; the pool's queries report the failure.
  client.on('error', () => undefined);
  await client.connect();
  const take = writers === 'replicas' ? 'pg_try_advisory_lock_shared' : 'pg_try_advisory_lock';
  const { rows } = await client.query<{ ok: boolean }>(`SELECT ${take}($1) AS ok`, [WRITERS_LOCK]);
  if (rows[0].ok) return client;
  await client.end();
  if (writers === 'upkeep') throw new PgIndexError(`the index database ${withoutPassword(url)} is in use by an archive daemon: stop every daemon on it first`);
  throw new PgIndexError(
    writers === 'alone'
      ? `the index database ${withoutPassword(url)} is in use by another archive daemon, and this one keeps its WARC files in its own folder (storage.warcs: folder), which no other daemon can read: run one daemon per database, or give every daemon on it storage.warcs: s3://…`
      : `the index database ${withoutPassword(url)} is in use by an archive daemon that keeps its WARC files in its own folder (storage.warcs: folder), which no other daemon can read: stop it, or give it storage.warcs: s3://… as this one has`,
  );
}

/** The index in PostgreSQL: see the module comment. */
export class PgIndex implements MementoIndex, IndexReads {
  readonly sql = POSTGRES_SQL;
  readonly pages = new PageQueries(this);
  readonly feeds = new FeedQueries(this);
  readonly panel = new PanelQuery(this);
  readonly keys = new KeyQueries(this);
  /** The full-text index of the mementos' text (text-pg.ts). */
  readonly text: PgTextQueries;
  commits = 0;
  private readonly statements = new Map<string, { text: string; names: string[] }>();

  private constructor(
    private readonly pool: pg.Pool,
    readonly cache: ReadCache,
    /** The connection holding {@link WRITERS_LOCK}, when taken. */
    private readonly writersLock?: pg.Client,
  ) {
    this.log = new PgLogStore(pool);
    this.text = new PgTextQueries(pool);
    this.viewLoads = new ViewLoads(cache, (urlkeys) => this.loadViews(urlkeys), VIEW_BATCH_SIZES[VIEW_BATCH_SIZES.length - 1]);
  }

  /** The read cache's views, loaded in batches (view-loads.ts). */
  private readonly viewLoads: ViewLoads;

  /** The evidence log's reads and tree heads (archive/evidence/log.ts). */
  readonly log: PgLogStore;

  /**
   * Connects to the database at `url` (`postgres://user[:password]@host[:port]/database`;
   * libpq's `PG*` variables fill what it leaves out) and makes the table
   * and its indexes when missing.
   * @param opts.cacheBytes bytes of the read cache (read-cache.ts; default 0: none)
   * @param opts.connections most connections of the pool (default 10)
   * @param opts.writers a daemon's: who may write beside it ({@link Writers}), held until {@link close}; omitted: nothing is checked
   * @throws PgIndexError when the database cannot be reached or the schema made, or another daemon writes into it that `writers` does not allow (the pool is closed then)
   */
  static async open(url: string, opts: { cacheBytes?: number; connections?: number; writers?: Writers } = {}): Promise<PgIndex> {
    const pool = new pg.Pool({ connectionString: url, max: opts.connections ?? 10, types: TYPES });
    // An idle connection's error (the server restarted) is not the process's end: the next query reports it.
    pool.on('error', () => undefined);
    try {
      await inTransaction(pool, async (client) => {
        await client.query('SELECT pg_advisory_xact_lock($1)', [SCHEMA_LOCK]);
        await client.query(SCHEMA);
        await client.query('ALTER TABLE memento ADD COLUMN IF NOT EXISTS refers_to bigint');
        await client.query(LOG_SCHEMA_PG);
        await client.query(TEXT_SCHEMA_PG);
      });
    } catch (err) {
      await pool.end();
      throw new PgIndexError(`the index database ${withoutPassword(url)}: ${(err as Error).message}`, { cause: err });
    }
    let lock: pg.Client | undefined;
    try {
      if (opts.writers) lock = await holdWritersLock(url, opts.writers);
    } catch (err) {
      await pool.end();
      throw err instanceof PgIndexError ? err : new PgIndexError(`the index database ${withoutPassword(url)}: ${(err as Error).message}`, { cause: err });
    }
    return new PgIndex(pool, new ReadCache(opts.cacheBytes ?? 0), lock);
  }

  /** Runs a named prepared statement (`$name` parameters) to its end. */
  private async q<T>(name: string, sql: string, params: Record<string, string | number> = {}): Promise<T[]> {
    let st = this.statements.get(name);
    if (!st) this.statements.set(name, (st = numbered(sql)));
    return (await this.pool.query<T & pg.QueryResultRow>({ name, text: st.text, values: values(st.names, params) })).rows;
  }

  /** Runs SQL that varies (not prepared by name), `$name` parameters. */
  private async once<T>(sql: string, params: Record<string, string | number>): Promise<T[]> {
    const st = numbered(sql);
    return (await this.pool.query<T & pg.QueryResultRow>(st.text, values(st.names, params))).rows;
  }

  /**
   * {@link MementoIndex.insertMany}: one transaction, {@link ROWS_PER_INSERT}
   * rows per statement (array parameters, one prepared statement). Of two
   * rows of one key only the later is sent (PostgreSQL refuses to update a
   * row twice in one statement; SQLite applies both in order: the same end).
   * The evidence log entries `log` are appended after the rows in the same
   * transaction (archive/evidence/log.ts, under the archive's advisory lock).
   */
  async insertMany(rows: NewMementoRow[], log?: LogAppend): Promise<void> {
    if (!rows.length && !log?.leaves.length) return;
    const last = new Map<string, NewMementoRow>();
    for (const r of rows) {
      const key = `${r.urlkey}\n${r.archive_id}\n${r.datetime}`;
      last.delete(key);
      last.set(key, r);
    }
    await this.insertRows('insert', INSERT, [...last.values()], log);
  }

  /**
   * {@link MementoIndex.insertNew}: as {@link insertMany}, but a row whose
   * key is in the table (another daemon committed it first) is left out
   * (`ON CONFLICT DO NOTHING`) and returned. Rows go in key order, so that
   * two daemons inserting the same keys at once wait for each other rather
   * than deadlock.
   */
  async insertNew(rows: NewMementoRow[], log?: LogAppend): Promise<NewMementoRow[]> {
    if (!rows.length) return [];
    const key = (r: Pick<NewMementoRow, 'urlkey' | 'archive_id' | 'datetime'>) => `${r.urlkey}\n${r.archive_id}\n${String(r.datetime).padStart(16, '0')}`;
    const ordered = [...rows].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
    const inserted = new Set((await this.insertRows('insertNew', INSERT_NEW, ordered, log, key)).map(key));
    return rows.filter((r) => !inserted.has(key(r)));
  }

  /**
   * `rows` by the prepared statement `name` (`sql`), {@link ROWS_PER_INSERT}
   * a statement, then the evidence log entries of `log`, in one
   * transaction; with `keyOf`, only the capture entries of the rows the
   * statements returned (inserted).
   * @returns the rows the statements returned
   */
  private async insertRows(name: string, sql: string, rows: NewMementoRow[], log?: LogAppend, keyOf?: (r: MementoKey) => string): Promise<MementoKey[]> {
    const out: MementoKey[] = [];
    await inTransaction(this.pool, async (client) => {
      for (let from = 0; from < rows.length; from += ROWS_PER_INSERT) {
        const part = rows.slice(from, from + ROWS_PER_INSERT);
        out.push(...(await client.query({ name, text: sql, values: INSERT_COLS.map(([c]) => part.map((r) => r[c])) })).rows);
      }
      const inserted = keyOf && new Set(out.map(keyOf));
      const leaves = inserted
        ? log?.leaves.filter((l) => l.urlkey === null || inserted.has(keyOf({ urlkey: l.urlkey, archive_id: l.archive_id, datetime: l.datetime! })))
        : log?.leaves;
      if (leaves?.length) await appendToLog(new PgLogTx(client), leaves, log);
    });
    this.commits++;
    return out;
  }

  async atOrBeforeMany(pairs: { urlkey: string; t: number }[]): Promise<AtOrBefore[]> {
    const out: AtOrBefore[] = [];
    for (let from = 0; from < pairs.length; from += PAIRS_PER_LOOKUP) {
      const part = pairs.slice(from, from + PAIRS_PER_LOOKUP);
      const { rows } = await this.pool.query<MementoRow & { q_i: number; q_newest: number | null }>({
        name: 'atOrBefore',
        text: `SELECT q.i AS q_i, (SELECT max(datetime) FROM memento WHERE urlkey = q.k) AS q_newest, m.*
          FROM unnest($1::int[], $2::text[], $3::bigint[]) AS q(i, k, t)
          LEFT JOIN LATERAL (SELECT * FROM memento WHERE urlkey = q.k AND datetime <= q.t ORDER BY datetime DESC, id DESC LIMIT 1) m ON TRUE`,
        values: [part.map((_p, j) => from + j), part.map((p) => p.urlkey), part.map((p) => p.t)],
      });
      for (const { q_i, q_newest, ...row } of rows) {
        const found = row.id === null ? undefined : (row as MementoRow);
        out[q_i] = { row: found, isNewest: q_newest === null || (found !== undefined && found.datetime === q_newest) };
      }
    }
    return out;
  }

  async rowAt(archive: string, urlkey: string, datetime: number): Promise<MementoRow | undefined> {
    const at = { $urlkey: urlkey, $archive: archive, $datetime: datetime };
    return (await this.q<MementoRow>('at', `SELECT ${COLS} FROM memento WHERE urlkey = $urlkey AND archive_id = $archive AND datetime = $datetime`, at))[0];
  }

  async byId(id: number): Promise<MementoRow | undefined> {
    return (await this.q<MementoRow>('byId', `SELECT ${COLS} FROM memento WHERE id = $id`, { $id: id }))[0];
  }

  neighbourhood(archive: string, urlkey: string, t: number, whole = false): Promise<Neighbourhood | undefined> {
    return neighbourhoodFromView(this, archive, urlkey, t, whole);
  }

  view(urlkey: string): Promise<UrlView> {
    return this.viewLoads.view(urlkey);
  }

  /** The rows of each of `urlkeys` (at most 64) in one query; `undefined` for one with more than a view holds. */
  private async loadViews(urlkeys: readonly string[]): Promise<(ViewRow[] | undefined)[]> {
    // Per urlkey: one row (many = true, or no memento) or its mementos (many = false).
    const { rows } = await this.pool.query<ViewRow & { i: number; many: boolean }>({
      name: 'view',
      text: `SELECT q.i, c.many, m.archive_id, m.id, m.datetime, m.uri_r FROM unnest($1::text[]) WITH ORDINALITY AS q(k, i)
          CROSS JOIN LATERAL (SELECT count(*) > ${MAX_VIEW_MEMENTOS} AS many FROM (SELECT 1 FROM memento WHERE urlkey = q.k LIMIT ${MAX_VIEW_MEMENTOS + 1}) AS x) AS c
          LEFT JOIN LATERAL (SELECT archive_id, id, datetime, uri_r FROM memento WHERE urlkey = q.k AND NOT c.many) AS m ON TRUE`,
      values: [urlkeys],
    });
    const out: (ViewRow[] | undefined)[] = urlkeys.map(() => []);
    for (const { i, many, archive_id, id, datetime, uri_r } of rows) {
      if (many) out[i - 1] = undefined;
      else if (id !== null) out[i - 1]?.push({ archive_id, id, datetime, uri_r });
    }
    return out;
  }

  page(archive: string, urlkey: string, after: number, limit: number): Promise<MementoRow[]> {
    return this.q<MementoRow>(
      'page',
      `SELECT ${COLS} FROM memento WHERE urlkey = $urlkey AND archive_id = $archive AND datetime > $after ORDER BY datetime ASC LIMIT $limit`,
      { $urlkey: urlkey, $archive: archive, $after: after, $limit: limit },
    );
  }

  async *mementoPages(archive: string, urlkey: string): AsyncGenerator<TimemapRow[]> {
    let after = Number.MIN_SAFE_INTEGER;
    for (;;) {
      const rows = await this.q<TimemapRow>(
        'timemapPage',
        'SELECT datetime, uri_r FROM memento WHERE urlkey = $urlkey AND archive_id = $archive AND datetime > $after ORDER BY datetime ASC LIMIT $limit',
        { $urlkey: urlkey, $archive: archive, $after: after, $limit: TIMEMAP_PAGE },
      );
      if (rows.length) yield rows;
      if (rows.length < TIMEMAP_PAGE) return;
      after = rows[rows.length - 1].datetime;
    }
  }

  async spans(urlkey: string): Promise<Spans> {
    const v = await this.view(urlkey);
    if (v.complete) return v.spans();
    return this.q<Spans[number]>(
      'spans',
      'SELECT archive_id, min(datetime) AS first, max(datetime) AS last, count(*) AS n FROM memento WHERE urlkey = $urlkey GROUP BY archive_id',
      { $urlkey: urlkey },
    );
  }

  async neighbourhoodWithin(archive: string, urlkey: string, t: number, ranges: Ranges, whole = false): Promise<Neighbourhood | undefined> {
    if (!ranges.length) return undefined;
    const n = neighbourhoodOfRows(await this.once<NeighbourRow>(neighbourhoodWithinSql(ranges), { $urlkey: urlkey, $archive: archive, $t: t }));
    if (!n) return undefined;
    if (whole && n.atOrBefore[0]) n.atOrBefore[0] = (await this.byId(n.atOrBefore[0].id)) ?? n.atOrBefore[0];
    return n;
  }

  async spansWithin(urlkey: string, ranges: Ranges): Promise<Spans> {
    if (!ranges.length) return [];
    return this.once(
      `SELECT archive_id, min(datetime) AS first, max(datetime) AS last, count(*) AS n FROM memento WHERE urlkey = $urlkey AND (${rangeSql(ranges)}) GROUP BY archive_id`,
      { $urlkey: urlkey },
    );
  }

  async anyWithin(urlkey: string, ranges: Ranges, archive?: string): Promise<boolean> {
    if (!ranges.length) return false;
    const sql = `SELECT 1 FROM memento WHERE urlkey = $urlkey AND (${rangeSql(ranges)})${archive === undefined ? '' : ' AND archive_id = $archive'} LIMIT 1`;
    return (await this.once(sql, archive === undefined ? { $urlkey: urlkey } : { $urlkey: urlkey, $archive: archive })).length > 0;
  }

  /** The named queries' read (index/reads.ts): a statement prepared by name (`browse.<name>`), or sent unnamed with `name` null. */
  browse<T>(name: string | null, sql: string, params: Record<string, string | number>): Promise<T[]> {
    return name === null ? this.once<T>(sql, params) : this.q<T>(`browse.${name}`, sql, params);
  }

  /** Walk statements differ with each CDX query's fields: sent unnamed (parsed per page), nothing to free. */
  walkQuery<T>(sql: string): WalkQuery<T> {
    return { all: (params) => this.once<T>(sql, params), close: async () => undefined };
  }

  async ping(): Promise<void> {
    await this.pool.query('SELECT 1');
  }

  async writable(): Promise<void> {
    const r = await this.pool.query<{ standby: boolean; ro: string }>(
      "SELECT pg_is_in_recovery() AS standby, current_setting('default_transaction_read_only') AS ro",
    );
    if (r.rows[0].standby) throw new Error('the database is a standby in recovery: it takes no writes');
    if (r.rows[0].ro === 'on') throw new Error('the database takes no writes (default_transaction_read_only is on)');
  }

  async count(): Promise<number> {
    return (await this.q<{ n: number }>('count', 'SELECT count(*) AS n FROM memento'))[0].n;
  }

  async *allMementos(archive?: string, pageSize = 5000): AsyncGenerator<MementoRow> {
    const where = archive === undefined ? '' : 'AND archive_id = $archive';
    let after = 0;
    for (;;) {
      const rows = await this.q<MementoRow>(`all${where ? 'Of' : ''}`, `SELECT ${COLS} FROM memento WHERE id > $after ${where} ORDER BY id LIMIT $limit`, {
        $after: after,
        $limit: pageSize,
        ...(archive === undefined ? {} : { $archive: archive }),
      });
      yield* rows;
      if (rows.length < pageSize) return;
      after = rows[rows.length - 1].id;
    }
  }

  fileEnds(archive: string): Promise<{ warc_file: string; end: number }[]> {
    return this.q('fileEnds', 'SELECT warc_file, max(warc_offset + warc_length) AS "end" FROM memento WHERE archive_id = $archive GROUP BY warc_file', {
      $archive: archive,
    });
  }

  rowsOfFile(file: string): Promise<MementoRow[]> {
    return this.q('ofFile', `SELECT ${COLS} FROM memento WHERE warc_file = $file ORDER BY warc_offset`, { $file: file });
  }

  async revisitOriginal(
    named: { urlkey: string; datetime: number } | null,
    own: Pick<MementoRow, 'urlkey' | 'datetime' | 'digest'>,
  ): Promise<number | undefined> {
    if (named) {
      const [at] = await this.q<{ id: number }>(
        'originalAt',
        'SELECT id FROM memento WHERE urlkey = $urlkey AND datetime = $datetime AND refers_to IS NULL ORDER BY id DESC LIMIT 1',
        { $urlkey: named.urlkey, $datetime: named.datetime },
      );
      if (at) return at.id;
    }
    const [same] = await this.q<{ id: number }>(
      'originalByDigest',
      'SELECT id FROM memento WHERE urlkey = $urlkey AND datetime <= $datetime AND digest = $digest AND refers_to IS NULL ORDER BY datetime DESC, id DESC LIMIT 1',
      { $urlkey: own.urlkey, $datetime: own.datetime, $digest: own.digest },
    );
    return same?.id;
  }

  files(): Promise<{ warc_file: string; n: number }[]> {
    return this.q('files', 'SELECT warc_file, count(*) AS n FROM memento GROUP BY warc_file');
  }

  async dump(): Promise<DumpRow[]> {
    const rows = await this.q<MementoRow & { original: string | null }>(
      'everything',
      `SELECT m.*, o.archive_id || ' ' || o.datetime || ' ' || o.uri_r AS original FROM memento m LEFT JOIN memento o ON o.id = m.refers_to
        ORDER BY m.archive_id, m.urlkey, m.datetime`,
    );
    return rows.map(({ id: _id, refers_to: _r, original, ...r }) => ({ ...r, refers_to: original }));
  }

  /** {@link MementoIndex.rewriteRows}: one statement each for the deletes and the moves (array parameters), in one transaction. */
  async rewriteRows(change: RowChange): Promise<{ deleted: number; logEntries: number }> {
    let deleted = 0;
    let logEntries = 0;
    await inTransaction(this.pool, async (client) => {
      const gone = await client.query<MementoRow>('SELECT archive_id, urlkey, datetime FROM memento WHERE id = ANY($1::bigint[])', [change.drop]);
      logEntries = await logPurgeOf(new PgLogTx(client), gone.rows, change.at);
      if (change.drop.length) deleted = (await client.query('DELETE FROM memento WHERE id = ANY($1::bigint[])', [change.drop])).rowCount ?? 0;
      if (change.move.length)
        await client.query(
          `UPDATE memento AS m SET warc_file = u.f, warc_offset = u.o FROM unnest($1::bigint[], $2::text[], $3::bigint[]) AS u(id, f, o) WHERE m.id = u.id`,
          [change.move.map((x) => x.id), change.move.map((x) => x.warc_file), change.move.map((x) => x.warc_offset)],
        );
    });
    return { deleted, logEntries };
  }

  /** {@link MementoIndex.compact}: `VACUUM FULL memento` (the table written anew; readers wait while it runs). */
  async compact(): Promise<void> {
    await this.pool.query('VACUUM FULL memento');
  }

  /** Ends the pool (waits for queries running) and lets go of the writers' lock. */
  async close(): Promise<void> {
    await this.pool.end();
    await this.writersLock?.end().catch(() => undefined);
  }
}
