/**
 * The evidence log's tables in the PostgreSQL index (log.ts has their
 * shape and the logic): the statements of a write transaction on one
 * pooled connection ({@link PgLogTx}), and the reads of the committed log
 * on the pool ({@link PgLogStore}). Several daemons share one log per
 * archive: an append takes a transaction-scoped advisory lock on the
 * archive first, so that their leaf indexes follow one another.
 */
import type pg from 'pg';
import { type BundleEntry, type CheckpointRow, hashesOf, keyText, type LeafRow, type LogStore, type LogTx, type TreeHead } from '../../evidence/log.js';
import type { NodeKey, StoredNode } from '../../evidence/merkle.js';

/** The log's tables (log.ts), made on open of every index, old ones included. */
export const LOG_SCHEMA_PG = `
CREATE TABLE IF NOT EXISTS log_leaf (
  archive_id text COLLATE "C" NOT NULL,
  leaf_index bigint NOT NULL,
  leaf_hash bytea NOT NULL,
  kind text NOT NULL,
  leaf_text text,
  urlkey text COLLATE "C",
  datetime bigint,
  PRIMARY KEY (archive_id, leaf_index)
);
CREATE INDEX IF NOT EXISTS log_leaf_memento ON log_leaf (urlkey, archive_id, datetime);
CREATE TABLE IF NOT EXISTS log_node (
  archive_id text COLLATE "C" NOT NULL,
  level integer NOT NULL,
  idx bigint NOT NULL,
  hash bytea NOT NULL,
  PRIMARY KEY (archive_id, level, idx)
);
CREATE TABLE IF NOT EXISTS log_head (
  archive_id text COLLATE "C" NOT NULL,
  tree_size bigint NOT NULL,
  root_hash bytea NOT NULL,
  timestamp bigint NOT NULL,
  signature bytea NOT NULL,
  PRIMARY KEY (archive_id, tree_size)
);
ALTER TABLE log_head ADD COLUMN IF NOT EXISTS origin text;
CREATE TABLE IF NOT EXISTS log_checkpoint (
  archive_id text COLLATE "C" NOT NULL,
  tree_size bigint NOT NULL,
  note text NOT NULL,
  tsr bytea,
  published bigint NOT NULL,
  PRIMARY KEY (archive_id, tree_size)
);
`;

/** First key of the advisory lock of an archive's log (the second is the hash of its id); index-pg.ts holds 726_617_001 and _002. */
const LOG_LOCK = 726_617_003;

const LEAF_COLS = 'archive_id, leaf_index, leaf_hash, kind, leaf_text, urlkey, datetime';
const HEAD_COLS = 'archive_id, tree_size, root_hash, timestamp, signature, origin';
const CHECKPOINT_COLS = 'archive_id, tree_size, note, tsr, published';

const SQL = {
  lock: 'SELECT pg_advisory_xact_lock($1, hashtext($2))',
  size: 'SELECT leaf_index FROM log_leaf WHERE archive_id = $1 ORDER BY leaf_index DESC LIMIT 1',
  nodes: `SELECT 0 AS level, l.leaf_index AS idx, l.leaf_hash AS hash FROM log_leaf l WHERE l.archive_id = $1 AND l.leaf_index = ANY($2::bigint[])
    UNION ALL SELECT n.level, n.idx, n.hash FROM unnest($3::int[], $4::bigint[]) AS k(level, idx) JOIN log_node n ON n.archive_id = $1 AND n.level = k.level AND n.idx = k.idx`,
  leavesOf: `SELECT l.archive_id, l.leaf_index, l.leaf_hash, l.kind, l.leaf_text, l.urlkey, l.datetime FROM unnest($2::text[], $3::bigint[]) AS k(urlkey, datetime)
    JOIN log_leaf l ON l.urlkey = k.urlkey AND l.archive_id = $1 AND l.datetime = k.datetime AND l.kind = 'capture' ORDER BY l.leaf_index`,
  insertLeaves: `INSERT INTO log_leaf (${LEAF_COLS}) SELECT $1, * FROM unnest($2::bigint[], $3::bytea[], $4::text[], $5::text[], $6::text[], $7::bigint[])`,
  insertNodes: 'INSERT INTO log_node (archive_id, level, idx, hash) SELECT $1, * FROM unnest($2::int[], $3::bigint[], $4::bytea[])',
  erase: 'UPDATE log_leaf SET leaf_text = NULL, urlkey = NULL, datetime = NULL WHERE archive_id = $1 AND leaf_index = ANY($2::bigint[])',
  leafOf: `SELECT ${LEAF_COLS} FROM log_leaf WHERE urlkey = $2 AND archive_id = $1 AND datetime = $3 AND kind = 'capture' ORDER BY leaf_index DESC LIMIT 1`,
  leaves: `SELECT ${LEAF_COLS} FROM log_leaf WHERE archive_id = $1 AND leaf_index >= $2 ORDER BY leaf_index LIMIT $3`,
  storedNodes: 'SELECT level, idx AS "index", hash FROM log_node WHERE archive_id = $1 AND (level, idx) > ($2, $3) ORDER BY level, idx LIMIT $4',
  newestHead: `SELECT ${HEAD_COLS} FROM log_head WHERE archive_id = $1 ORDER BY tree_size DESC LIMIT 1`,
  headAt: `SELECT ${HEAD_COLS} FROM log_head WHERE archive_id = $1 AND tree_size = $2`,
  heads: `SELECT ${HEAD_COLS} FROM log_head WHERE archive_id = $1 ORDER BY tree_size`,
  firstHead: `SELECT ${HEAD_COLS} FROM log_head WHERE archive_id = $1 ORDER BY tree_size LIMIT 1`,
  addHead: `INSERT INTO log_head (${HEAD_COLS}) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
  archives: 'SELECT DISTINCT archive_id FROM log_leaf UNION SELECT DISTINCT archive_id FROM log_head UNION SELECT DISTINCT archive_id FROM log_checkpoint',
  leafHashes: `SELECT count(*) AS n, min(leaf_index) AS first, string_agg(leaf_hash, ''::bytea ORDER BY leaf_index) AS bytes
    FROM log_leaf WHERE archive_id = $1 AND leaf_index >= $2 AND leaf_index < $3`,
  nodeHashes: `SELECT count(*) AS n, min(idx) AS first, string_agg(hash, ''::bytea ORDER BY idx) AS bytes
    FROM log_node WHERE archive_id = $1 AND level = $4 AND idx >= $2 AND idx < $3`,
  bundleEntries:
    'SELECT leaf_index, leaf_text, urlkey, datetime FROM log_leaf WHERE archive_id = $1 AND leaf_index >= $2 AND leaf_index < $3 ORDER BY leaf_index',
  newestCheckpoint: `SELECT ${CHECKPOINT_COLS} FROM log_checkpoint WHERE archive_id = $1 ORDER BY tree_size DESC LIMIT 1`,
  checkpointAt: `SELECT ${CHECKPOINT_COLS} FROM log_checkpoint WHERE archive_id = $1 AND tree_size = $2`,
  checkpoints: `SELECT ${CHECKPOINT_COLS} FROM log_checkpoint WHERE archive_id = $1 AND tree_size > $2 ORDER BY tree_size LIMIT $3`,
  addCheckpoint: `INSERT INTO log_checkpoint (${CHECKPOINT_COLS}) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`,
} as const;

/** Something to run a named statement on: the pool, or one connection of a transaction. */
type Queryable = pg.Pool | pg.PoolClient;

async function q<T>(db: Queryable, name: keyof typeof SQL, values: unknown[]): Promise<T[]> {
  return (await db.query<T & pg.QueryResultRow>({ name: `log.${name}`, text: SQL[name], values })).rows;
}

/** Perfect subtree hashes of `keys`, in order. @throws when one is missing */
async function readNodes(db: Queryable, archive: string, keys: NodeKey[]): Promise<Buffer[]> {
  const inner = keys.filter((k) => k.level > 0);
  const rows = await q<{ level: number; idx: number; hash: Buffer }>(db, 'nodes', [
    archive,
    keys.filter((k) => k.level === 0).map((k) => k.index),
    inner.map((k) => k.level),
    inner.map((k) => k.index),
  ]);
  const byKey = new Map(rows.map((r) => [`${r.level}/${r.idx}`, r.hash]));
  return keys.map((k) => {
    const h = byKey.get(`${k.level}/${k.index}`);
    if (!h) throw new Error(`the evidence log of archive ${archive} lacks its node ${k.level}/${k.index}`);
    return h;
  });
}

/** The log inside a transaction on `client`. */
export class PgLogTx implements LogTx {
  constructor(private readonly client: pg.PoolClient) {}
  async lock(archive: string): Promise<void> {
    await q(this.client, 'lock', [LOG_LOCK, archive]);
  }
  async size(archive: string): Promise<number> {
    const [row] = await q<{ leaf_index: number }>(this.client, 'size', [archive]);
    return row ? row.leaf_index + 1 : 0;
  }
  nodes(archive: string, keys: NodeKey[]): Promise<Buffer[]> {
    return readNodes(this.client, archive, keys);
  }
  async captured(archive: string, keys: { urlkey: string; datetime: number }[]): Promise<Set<string>> {
    return new Set((await this.leavesOf(archive, keys)).map((l) => keyText({ urlkey: l.urlkey!, datetime: l.datetime! })));
  }
  leavesOf(archive: string, keys: { urlkey: string; datetime: number }[]): Promise<LeafRow[]> {
    return q<LeafRow>(this.client, 'leavesOf', [archive, keys.map((k) => k.urlkey), keys.map((k) => k.datetime)]);
  }
  async insertLeaves(rows: LeafRow[]): Promise<void> {
    if (!rows.length) return;
    await q(this.client, 'insertLeaves', [
      rows[0].archive_id,
      rows.map((r) => r.leaf_index),
      rows.map((r) => r.leaf_hash),
      rows.map((r) => r.kind),
      rows.map((r) => r.leaf_text),
      rows.map((r) => r.urlkey),
      rows.map((r) => r.datetime),
    ]);
  }
  async insertNodes(archive: string, nodes: StoredNode[]): Promise<void> {
    await q(this.client, 'insertNodes', [archive, nodes.map((n) => n.level), nodes.map((n) => n.index), nodes.map((n) => n.hash)]);
  }
  async eraseLeaves(archive: string, indexes: number[]): Promise<void> {
    await q(this.client, 'erase', [archive, indexes]);
  }
}

/** The committed log, read on the pool. */
export class PgLogStore implements LogStore {
  constructor(private readonly pool: pg.Pool) {}
  async archives(): Promise<string[]> {
    return (await q<{ archive_id: string }>(this.pool, 'archives', [])).map((r) => r.archive_id);
  }
  async size(archive: string): Promise<number> {
    const [row] = await q<{ leaf_index: number }>(this.pool, 'size', [archive]);
    return row ? row.leaf_index + 1 : 0;
  }
  nodes(archive: string, keys: NodeKey[]): Promise<Buffer[]> {
    return readNodes(this.pool, archive, keys);
  }
  async leafOf(archive: string, urlkey: string, datetime: number): Promise<LeafRow | undefined> {
    return (await q<LeafRow>(this.pool, 'leafOf', [archive, urlkey, datetime]))[0];
  }
  leavesOf(archive: string, keys: { urlkey: string; datetime: number }[]): Promise<LeafRow[]> {
    return q<LeafRow>(this.pool, 'leavesOf', [archive, keys.map((k) => k.urlkey), keys.map((k) => k.datetime)]);
  }
  leaves(archive: string, from: number, limit: number): Promise<LeafRow[]> {
    return q<LeafRow>(this.pool, 'leaves', [archive, from, limit]);
  }
  storedNodes(archive: string, after: NodeKey, limit: number): Promise<StoredNode[]> {
    return q<StoredNode>(this.pool, 'storedNodes', [archive, after.level, after.index, limit]);
  }
  async head(archive: string, size?: number): Promise<TreeHead | undefined> {
    if (size === undefined) return (await q<TreeHead>(this.pool, 'newestHead', [archive]))[0];
    return (await q<TreeHead>(this.pool, 'headAt', [archive, size]))[0];
  }
  heads(archive: string): Promise<TreeHead[]> {
    return q<TreeHead>(this.pool, 'heads', [archive]);
  }
  async firstHead(archive: string): Promise<TreeHead | undefined> {
    return (await q<TreeHead>(this.pool, 'firstHead', [archive]))[0];
  }
  async addHead(h: TreeHead): Promise<void> {
    await q(this.pool, 'addHead', [h.archive_id, h.tree_size, h.root_hash, h.timestamp, h.signature, h.origin]);
  }
  async levelHashes(archive: string, level: number, from: number, limit: number): Promise<Buffer[]> {
    type Agg = { n: number; first: number | null; bytes: Buffer | null };
    const [r] =
      level === 0
        ? await q<Agg>(this.pool, 'leafHashes', [archive, from, from + limit])
        : await q<Agg>(this.pool, 'nodeHashes', [archive, from, from + limit, level]);
    return hashesOf(archive, level, from, limit, Number(r?.n ?? 0), r?.first ?? null, r?.bytes ?? Buffer.alloc(0));
  }
  bundleEntries(archive: string, from: number, limit: number): Promise<BundleEntry[]> {
    return q<BundleEntry>(this.pool, 'bundleEntries', [archive, from, from + limit]);
  }
  async checkpoint(archive: string, size?: number): Promise<CheckpointRow | undefined> {
    if (size === undefined) return (await q<CheckpointRow>(this.pool, 'newestCheckpoint', [archive]))[0];
    return (await q<CheckpointRow>(this.pool, 'checkpointAt', [archive, size]))[0];
  }
  checkpoints(archive: string, after: number, limit: number): Promise<CheckpointRow[]> {
    return q<CheckpointRow>(this.pool, 'checkpoints', [archive, after, limit]);
  }
  async addCheckpoint(c: CheckpointRow): Promise<void> {
    await q(this.pool, 'addCheckpoint', [c.archive_id, c.tree_size, c.note, c.tsr, c.published]);
  }
}
