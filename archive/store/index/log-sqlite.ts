/**
 * The evidence log's tables in the SQLite index (log.ts has their shape
 * and the logic): the statements of a write transaction on the index's
 * write connection ({@link SqliteLogTx}), and the reads of the committed
 * log on its read connection ({@link SqliteLogStore}). Sets of keys and
 * rows go in as one JSON parameter (`json_each`), so that each step is
 * one prepared statement whatever the batch size; hashes travel as hex
 * inside JSON and as BLOBs outside it. The key lists are the outer loop
 * of each join (`CROSS JOIN`, and the memento key's index named): left
 * to itself, SQLite's planner scanned every entry of the archive per
 * query (measured: the ingest bench's CPU per capture grew with the log).
 */
import { existsSync } from 'node:fs';
import sqlite3 from 'sqlite3';
import { all, run } from './sqlite-calls.js';
import { type BundleEntry, type CheckpointRow, hashesOf, keyText, type LeafRow, type LogStore, type LogTx, type TreeHead } from '../../evidence/log.js';
import type { NodeKey, StoredNode } from '../../evidence/merkle.js';

/** The log's tables (log.ts), made on open of every index, old ones included. */
export const LOG_SCHEMA_SQLITE = `
CREATE TABLE IF NOT EXISTS log_leaf (
  archive_id TEXT NOT NULL,
  leaf_index INTEGER NOT NULL,
  leaf_hash BLOB NOT NULL,
  kind TEXT NOT NULL,
  leaf_text TEXT,
  urlkey TEXT,
  datetime INTEGER,
  PRIMARY KEY (archive_id, leaf_index)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS log_leaf_memento ON log_leaf (urlkey, archive_id, datetime);
CREATE TABLE IF NOT EXISTS log_node (
  archive_id TEXT NOT NULL,
  level INTEGER NOT NULL,
  idx INTEGER NOT NULL,
  hash BLOB NOT NULL,
  PRIMARY KEY (archive_id, level, idx)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS log_head (
  archive_id TEXT NOT NULL,
  tree_size INTEGER NOT NULL,
  root_hash BLOB NOT NULL,
  timestamp INTEGER NOT NULL,
  signature BLOB NOT NULL,
  origin TEXT,
  PRIMARY KEY (archive_id, tree_size)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS log_checkpoint (
  archive_id TEXT NOT NULL,
  tree_size INTEGER NOT NULL,
  note TEXT NOT NULL,
  tsr BLOB,
  published INTEGER NOT NULL,
  PRIMARY KEY (archive_id, tree_size)
) WITHOUT ROWID;
`;

/** The log's tables, in the order `copyLogTables` copies them. */
const LOG_TABLES = ['log_leaf', 'log_node', 'log_head', 'log_checkpoint'] as const;

/** Gives a `log_head` made before heads named their log its `origin` column (NULL in every existing head). */
export async function upgradeLogTables(db: sqlite3.Database): Promise<void> {
  const cols = await new Promise<{ name: string }[]>((resolve, reject) =>
    db.all('PRAGMA table_info(log_head)', (err, rows: { name: string }[]) => (err ? reject(err) : resolve(rows))),
  );
  if (!cols.some((c) => c.name === 'origin')) await run(db, 'ALTER TABLE log_head ADD COLUMN origin TEXT');
}

const LEAF_COLS = 'archive_id, leaf_index, leaf_hash, kind, leaf_text, urlkey, datetime';
const HEAD_COLS = 'archive_id, tree_size, root_hash, timestamp, signature, origin';
const CHECKPOINT_COLS = 'archive_id, tree_size, note, tsr, published';

const SQL = {
  size: 'SELECT leaf_index FROM log_leaf WHERE archive_id = $a ORDER BY leaf_index DESC LIMIT 1',
  nodes: `SELECT 0 AS level, l.leaf_index AS idx, l.leaf_hash AS hash FROM json_each($leaves) k CROSS JOIN log_leaf l ON l.archive_id = $a AND l.leaf_index = k.value
    UNION ALL SELECT n.level, n.idx, n.hash FROM json_each($nodes) k CROSS JOIN log_node n ON n.archive_id = $a AND n.level = k.value ->> 0 AND n.idx = k.value ->> 1`,
  leavesOf: `SELECT ${LEAF_COLS} FROM json_each($keys) k CROSS JOIN log_leaf l INDEXED BY log_leaf_memento ON l.urlkey = k.value ->> 0 AND l.archive_id = $a AND l.datetime = k.value ->> 1
    AND l.kind = 'capture' ORDER BY l.leaf_index`,
  insertLeaves: `INSERT INTO log_leaf (${LEAF_COLS}) SELECT $a, value ->> 0, unhex(value ->> 1), value ->> 2, value ->> 3, value ->> 4, value ->> 5 FROM json_each($rows)`,
  insertNodes: 'INSERT INTO log_node (archive_id, level, idx, hash) SELECT $a, value ->> 0, value ->> 1, unhex(value ->> 2) FROM json_each($rows)',
  erase: 'UPDATE log_leaf SET leaf_text = NULL, urlkey = NULL, datetime = NULL WHERE archive_id = $a AND leaf_index IN (SELECT value FROM json_each($indexes))',
  leafOf: `SELECT ${LEAF_COLS} FROM log_leaf INDEXED BY log_leaf_memento WHERE urlkey = $urlkey AND archive_id = $a AND datetime = $datetime AND kind = 'capture' ORDER BY leaf_index DESC LIMIT 1`,
  leaves: `SELECT ${LEAF_COLS} FROM log_leaf WHERE archive_id = $a AND leaf_index >= $from ORDER BY leaf_index LIMIT $limit`,
  storedNodes: 'SELECT level, idx AS "index", hash FROM log_node WHERE archive_id = $a AND (level, idx) > ($level, $idx) ORDER BY level, idx LIMIT $limit',
  newestHead: `SELECT ${HEAD_COLS} FROM log_head WHERE archive_id = $a ORDER BY tree_size DESC LIMIT 1`,
  headAt: `SELECT ${HEAD_COLS} FROM log_head WHERE archive_id = $a AND tree_size = $size`,
  heads: `SELECT ${HEAD_COLS} FROM log_head WHERE archive_id = $a ORDER BY tree_size`,
  firstHead: `SELECT ${HEAD_COLS} FROM log_head WHERE archive_id = $a ORDER BY tree_size LIMIT 1`,
  addHead: `INSERT INTO log_head (${HEAD_COLS}) VALUES ($a, $size, $root, $timestamp, $signature, $origin) ON CONFLICT DO NOTHING`,
  archives: 'SELECT DISTINCT archive_id FROM log_leaf UNION SELECT DISTINCT archive_id FROM log_head UNION SELECT DISTINCT archive_id FROM log_checkpoint',
  leafHashes: `SELECT count(*) AS n, min(idx) AS first, group_concat(hex(hash), '') AS hex FROM
    (SELECT leaf_index AS idx, leaf_hash AS hash FROM log_leaf WHERE archive_id = $a AND leaf_index >= $from AND leaf_index < $to ORDER BY leaf_index)`,
  nodeHashes: `SELECT count(*) AS n, min(idx) AS first, group_concat(hex(hash), '') AS hex FROM
    (SELECT idx, hash FROM log_node WHERE archive_id = $a AND level = $level AND idx >= $from AND idx < $to ORDER BY idx)`,
  bundleEntries: `SELECT json_group_array(json_array(leaf_index, leaf_text, urlkey, datetime)) AS j FROM
    (SELECT leaf_index, leaf_text, urlkey, datetime FROM log_leaf WHERE archive_id = $a AND leaf_index >= $from AND leaf_index < $to ORDER BY leaf_index)`,
  newestCheckpoint: `SELECT ${CHECKPOINT_COLS} FROM log_checkpoint WHERE archive_id = $a ORDER BY tree_size DESC LIMIT 1`,
  checkpointAt: `SELECT ${CHECKPOINT_COLS} FROM log_checkpoint WHERE archive_id = $a AND tree_size = $size`,
  checkpoints: `SELECT ${CHECKPOINT_COLS} FROM log_checkpoint WHERE archive_id = $a AND tree_size > $after ORDER BY tree_size LIMIT $limit`,
  addCheckpoint: `INSERT INTO log_checkpoint (${CHECKPOINT_COLS}) VALUES ($a, $size, $note, $tsr, $published) ON CONFLICT DO NOTHING`,
} as const;

/** Prepared statements of one connection, made on first use. */
class Statements {
  private readonly stmts = new Map<string, sqlite3.Statement>();
  constructor(private readonly db: sqlite3.Database) {}
  get(name: keyof typeof SQL): sqlite3.Statement {
    let st = this.stmts.get(name);
    if (!st) this.stmts.set(name, (st = this.db.prepare(SQL[name])));
    return st;
  }
  async close(): Promise<void> {
    for (const s of this.stmts.values()) await new Promise<void>((r) => s.finalize(() => r()));
    this.stmts.clear();
  }
}

/** Perfect subtree hashes of `keys`, in order, through the `nodes` statement. @throws when one is missing */
async function readNodes(st: Statements, archive: string, keys: NodeKey[]): Promise<Buffer[]> {
  const leaves = keys.filter((k) => k.level === 0).map((k) => k.index);
  const nodes = keys.filter((k) => k.level > 0).map((k) => [k.level, k.index]);
  const rows = await all<{ level: number; idx: number; hash: Buffer }>(st.get('nodes'), {
    $a: archive,
    $leaves: JSON.stringify(leaves),
    $nodes: JSON.stringify(nodes),
  });
  const byKey = new Map(rows.map((r) => [`${r.level}/${r.idx}`, r.hash]));
  return keys.map((k) => {
    const h = byKey.get(`${k.level}/${k.index}`);
    if (!h) throw new Error(`the evidence log of archive ${archive} lacks its node ${k.level}/${k.index}`);
    return h;
  });
}

/** The log inside a write transaction on `db` (the index's write connection, or purge's). */
export class SqliteLogTx implements LogTx {
  private readonly st: Statements;
  constructor(db: sqlite3.Database) {
    this.st = new Statements(db);
  }
  async lock(): Promise<void> {
    // The transaction is BEGIN IMMEDIATE: SQLite has one writer.
  }
  async size(archive: string): Promise<number> {
    const [row] = await all<{ leaf_index: number }>(this.st.get('size'), { $a: archive });
    return row ? row.leaf_index + 1 : 0;
  }
  nodes(archive: string, keys: NodeKey[]): Promise<Buffer[]> {
    return readNodes(this.st, archive, keys);
  }
  async captured(archive: string, keys: { urlkey: string; datetime: number }[]): Promise<Set<string>> {
    return new Set((await this.leavesOf(archive, keys)).map((l) => keyText({ urlkey: l.urlkey!, datetime: l.datetime! })));
  }
  leavesOf(archive: string, keys: { urlkey: string; datetime: number }[]): Promise<LeafRow[]> {
    return all<LeafRow>(this.st.get('leavesOf'), { $a: archive, $keys: JSON.stringify(keys.map((k) => [k.urlkey, k.datetime])) });
  }
  async insertLeaves(rows: LeafRow[]): Promise<void> {
    if (!rows.length) return;
    const json = JSON.stringify(rows.map((r) => [r.leaf_index, r.leaf_hash.toString('hex'), r.kind, r.leaf_text, r.urlkey, r.datetime]));
    await run(this.st.get('insertLeaves'), null, { $a: rows[0].archive_id, $rows: json });
  }
  async insertNodes(archive: string, nodes: StoredNode[]): Promise<void> {
    await run(this.st.get('insertNodes'), null, { $a: archive, $rows: JSON.stringify(nodes.map((n) => [n.level, n.index, n.hash.toString('hex')])) });
  }
  async eraseLeaves(archive: string, indexes: number[]): Promise<void> {
    await run(this.st.get('erase'), null, { $a: archive, $indexes: JSON.stringify(indexes) });
  }
  close(): Promise<void> {
    return this.st.close();
  }
}

/** The committed log, read on `reader` (read-only); tree heads are written on `writer`. */
export class SqliteLogStore implements LogStore {
  private readonly r: Statements;
  private readonly w: Statements;
  constructor(reader: sqlite3.Database, writer: sqlite3.Database) {
    this.r = new Statements(reader);
    this.w = new Statements(writer);
  }
  async archives(): Promise<string[]> {
    return (await all<{ archive_id: string }>(this.r.get('archives'), {})).map((r) => r.archive_id);
  }
  async size(archive: string): Promise<number> {
    const [row] = await all<{ leaf_index: number }>(this.r.get('size'), { $a: archive });
    return row ? row.leaf_index + 1 : 0;
  }
  nodes(archive: string, keys: NodeKey[]): Promise<Buffer[]> {
    return readNodes(this.r, archive, keys);
  }
  async leafOf(archive: string, urlkey: string, datetime: number): Promise<LeafRow | undefined> {
    return (await all<LeafRow>(this.r.get('leafOf'), { $a: archive, $urlkey: urlkey, $datetime: datetime }))[0];
  }
  leavesOf(archive: string, keys: { urlkey: string; datetime: number }[]): Promise<LeafRow[]> {
    return all<LeafRow>(this.r.get('leavesOf'), { $a: archive, $keys: JSON.stringify(keys.map((k) => [k.urlkey, k.datetime])) });
  }
  leaves(archive: string, from: number, limit: number): Promise<LeafRow[]> {
    return all<LeafRow>(this.r.get('leaves'), { $a: archive, $from: from, $limit: limit });
  }
  storedNodes(archive: string, after: NodeKey, limit: number): Promise<StoredNode[]> {
    return all<StoredNode>(this.r.get('storedNodes'), { $a: archive, $level: after.level, $idx: after.index, $limit: limit });
  }
  async head(archive: string, size?: number): Promise<TreeHead | undefined> {
    if (size === undefined) return (await all<TreeHead>(this.r.get('newestHead'), { $a: archive }))[0];
    return (await all<TreeHead>(this.r.get('headAt'), { $a: archive, $size: size }))[0];
  }
  heads(archive: string): Promise<TreeHead[]> {
    return all<TreeHead>(this.r.get('heads'), { $a: archive });
  }
  async firstHead(archive: string): Promise<TreeHead | undefined> {
    return (await all<TreeHead>(this.r.get('firstHead'), { $a: archive }))[0];
  }
  async addHead(h: TreeHead): Promise<void> {
    await run(this.w.get('addHead'), null, {
      $a: h.archive_id,
      $size: h.tree_size,
      $root: h.root_hash,
      $timestamp: h.timestamp,
      $signature: h.signature,
      $origin: h.origin,
    });
  }
  async levelHashes(archive: string, level: number, from: number, limit: number): Promise<Buffer[]> {
    // One row of all the hashes (hex, in order): a row per hash costs the driver more than the hashes themselves.
    const [r] = await all<{ n: number; first: number | null; hex: string | null }>(this.r.get(level === 0 ? 'leafHashes' : 'nodeHashes'), {
      $a: archive,
      ...(level === 0 ? {} : { $level: level }),
      $from: from,
      $to: from + limit,
    });
    return hashesOf(archive, level, from, limit, r?.n ?? 0, r?.first ?? null, Buffer.from(r?.hex ?? '', 'hex'));
  }
  async bundleEntries(archive: string, from: number, limit: number): Promise<BundleEntry[]> {
    // One row (a JSON array) for all of them: a row each costs the driver more than the entries.
    const [r] = await all<{ j: string }>(this.r.get('bundleEntries'), { $a: archive, $from: from, $to: from + limit });
    return (JSON.parse(r?.j ?? '[]') as [number, string | null, string | null, number | null][]).map(([leaf_index, leaf_text, urlkey, datetime]) => ({
      leaf_index,
      leaf_text,
      urlkey,
      datetime,
    }));
  }
  async checkpoint(archive: string, size?: number): Promise<CheckpointRow | undefined> {
    if (size === undefined) return (await all<CheckpointRow>(this.r.get('newestCheckpoint'), { $a: archive }))[0];
    return (await all<CheckpointRow>(this.r.get('checkpointAt'), { $a: archive, $size: size }))[0];
  }
  checkpoints(archive: string, after: number, limit: number): Promise<CheckpointRow[]> {
    return all<CheckpointRow>(this.r.get('checkpoints'), { $a: archive, $after: after, $limit: limit });
  }
  async addCheckpoint(c: CheckpointRow): Promise<void> {
    await run(this.w.get('addCheckpoint'), null, { $a: c.archive_id, $size: c.tree_size, $note: c.note, $tsr: c.tsr, $published: c.published });
  }
  async close(): Promise<void> {
    await this.r.close();
    await this.w.close();
  }
}

/**
 * Copies the log tables of the SQLite index `from` (when it exists and has
 * them) into the index file `to` (made when missing): `reindex` builds a
 * new index from the WARC files, and the log is not derivable from them.
 */
export async function copyLogTables(from: string, to: string): Promise<void> {
  if (!existsSync(from)) return;
  const db = await new Promise<sqlite3.Database>((resolve, reject) => {
    const d = new sqlite3.Database(to, (err) => (err ? reject(err) : resolve(d)));
  });
  try {
    await new Promise<void>((resolve, reject) => db.exec(LOG_SCHEMA_SQLITE, (err) => (err ? reject(err) : resolve())));
    await run(db, 'ATTACH DATABASE $file AS old', { $file: from });
    const have = await new Promise<{ name: string }[]>((resolve, reject) =>
      db.all("SELECT name FROM old.sqlite_master WHERE type = 'table' AND name LIKE 'log\\_%' ESCAPE '\\'", (err, rows: { name: string }[]) =>
        err ? reject(err) : resolve(rows),
      ),
    );
    for (const t of LOG_TABLES) {
      if (!have.some((h) => h.name === t)) continue;
      // The columns both have: an index of an older version lacks some (its heads' origin).
      const cols = await new Promise<{ name: string }[]>((resolve, reject) =>
        db.all(`PRAGMA old.table_info(${t})`, (err, rows: { name: string }[]) => (err ? reject(err) : resolve(rows))),
      );
      const list = cols.map((c) => c.name).join(', ');
      await run(db, `INSERT INTO main.${t} (${list}) SELECT ${list} FROM old.${t}`);
    }
    await run(db, 'DETACH DATABASE old');
  } finally {
    await new Promise<void>((resolve) => db.close(() => resolve()));
  }
}
