/**
 * The evidence log of each archive (docs/evidence.md): an append-only
 * Merkle tree (RFC 9162 §2.1, merkle.ts) over its entries in commit
 * order, kept in three tables of the index database, so that a capture's
 * entry commits in the same transaction as its memento row:
 *
 * - `log_leaf` (archive_id, leaf_index, leaf_hash, kind `capture`|`purge`,
 *   leaf_text — NULL once the capture is purged —, urlkey, datetime: the
 *   memento's key, for finding a memento's entry);
 * - `log_node` (archive_id, level, idx, hash): every perfect subtree of
 *   level ≥ 1, written as the leaves that complete it commit, so that a
 *   root or a proof reads O(log n) rows;
 * - `log_head` (archive_id, tree_size, root_hash, timestamp, signature,
 *   origin): the signed tree heads (tree-heads.ts), kept forever;
 * - `log_checkpoint` (archive_id, tree_size, note, tsr, published):
 *   the published checkpoints (checkpoint-publisher.ts), kept forever.
 *
 * The SQL is the index's own (log-sqlite.ts, log-pg.ts, behind
 * {@link LogTx} and {@link LogStore}); what to write and what to read is
 * decided here, once for both.
 */
import { type NewLeaf, purgeLeafText } from './leaf.js';

export type { NewLeaf };
import { appendLeaves, consistencyProof, frontier, inclusionPath, leafHash, type NodeKey, type StoredNode, treeRoot } from './merkle.js';

/** An entry as stored. */
export interface LeafRow {
  archive_id: string;
  leaf_index: number;
  leaf_hash: Buffer;
  kind: 'capture' | 'purge';
  /** NULL once purged. */
  leaf_text: string | null;
  urlkey: string | null;
  datetime: number | null;
}

/** A signed tree head as stored (`timestamp` ms since the epoch). */
export interface TreeHead {
  archive_id: string;
  tree_size: number;
  root_hash: Buffer;
  timestamp: number;
  signature: Buffer;
  /** The log's origin the signature covers (tree-heads.ts `signedText`); `null` for a head signed before heads named their log. */
  origin: string | null;
}

/** An entry as an entry bundle needs it. */
export type BundleEntry = Pick<LeafRow, 'leaf_index' | 'leaf_text' | 'urlkey' | 'datetime'>;

/** A published checkpoint as stored (checkpoint-publisher.ts). */
export interface CheckpointRow {
  archive_id: string;
  tree_size: number;
  /** The signed note: the checkpoint text, a blank line, the log's signature line and the witnesses' cosignature lines (C2SP tlog-checkpoint). */
  note: string;
  /** The RFC 3161 TimeStampResp (DER) over the note text; `null` without `tsa_url`. */
  tsr: Buffer | null;
  /** When it was published, ms since the epoch. */
  published: number;
}

/** The log tables inside one open write transaction of the index (its connection). */
export interface LogTx {
  /** Serializes appends to `archive`'s log until the transaction ends (PostgreSQL: an advisory lock; SQLite's writer is alone already). */
  lock(archive: string): Promise<void>;
  /** The number of entries of `archive`'s log. */
  size(archive: string): Promise<number>;
  /** The hashes of perfect subtrees (level 0 from `log_leaf`), in order. @throws when one is missing */
  nodes(archive: string, keys: NodeKey[]): Promise<Buffer[]>;
  /** Of the memento keys `keys` (`<urlkey> <datetime>`), those that have a capture entry in `archive`'s log. */
  captured(archive: string, keys: { urlkey: string; datetime: number }[]): Promise<Set<string>>;
  insertLeaves(rows: LeafRow[]): Promise<void>;
  insertNodes(archive: string, nodes: StoredNode[]): Promise<void>;
  /** Erases the text and key of the capture entries `indexes` (a purge). */
  eraseLeaves(archive: string, indexes: number[]): Promise<void>;
  /** The capture entries of the memento keys given (newest entry per key), for a purge. */
  leavesOf(archive: string, keys: { urlkey: string; datetime: number }[]): Promise<LeafRow[]>;
}

/** Reads of the committed log, and the tree heads. */
export interface LogStore {
  /** The archives with a log entry or a tree head. */
  archives(): Promise<string[]>;
  size(archive: string): Promise<number>;
  nodes(archive: string, keys: NodeKey[]): Promise<Buffer[]>;
  /** The newest capture entry of the memento (archive, urlkey, datetime epoch s); `undefined` when none. */
  leafOf(archive: string, urlkey: string, datetime: number): Promise<LeafRow | undefined>;
  /** The capture entries of the memento keys given, by leaf index. */
  leavesOf(archive: string, keys: { urlkey: string; datetime: number }[]): Promise<LeafRow[]>;
  /** Up to `limit` entries from `from` on, by leaf index. */
  leaves(archive: string, from: number, limit: number): Promise<LeafRow[]>;
  /** Up to `limit` stored nodes (level ≥ 1) after `(level, idx)`, ordered by level then idx. */
  storedNodes(archive: string, after: NodeKey, limit: number): Promise<StoredNode[]>;
  /** The newest tree head, or the one of `size`; `undefined` when none. */
  head(archive: string, size?: number): Promise<TreeHead | undefined>;
  /** Every kept tree head of `archive`, by size. */
  heads(archive: string): Promise<TreeHead[]>;
  /** The kept tree head of the smallest size (the first signed: when the log was begun); `undefined` when none. */
  firstHead(archive: string): Promise<TreeHead | undefined>;
  /** Keeps `head` unless one of its size is kept already (another replica signed it). */
  addHead(head: TreeHead): Promise<void>;
  /** The hashes of the `limit` perfect subtrees of `level` (0: leaf hashes) from index `from` on, in order. @throws when one is missing */
  levelHashes(archive: string, level: number, from: number, limit: number): Promise<Buffer[]>;
  /** The entries `[from, from + limit)` for an entry bundle (tiles.ts), by leaf index: index, text (null once purged), memento key. */
  bundleEntries(archive: string, from: number, limit: number): Promise<BundleEntry[]>;
  /** The newest published checkpoint, or the one of `size`; `undefined` when none. */
  checkpoint(archive: string, size?: number): Promise<CheckpointRow | undefined>;
  /** Up to `limit` published checkpoints of sizes above `after`, by size. */
  checkpoints(archive: string, after: number, limit: number): Promise<CheckpointRow[]>;
  /** Keeps a published checkpoint unless one of its size is kept already (another replica published it). */
  addCheckpoint(row: CheckpointRow): Promise<void>;
}

/**
 * The hashes {@link LogStore.levelHashes} read as one aggregate: `n`
 * rows of keys unique in `[from, from + limit)`, the smallest `first`,
 * their hashes concatenated in order. All `limit` are there exactly when
 * `n` is `limit` and `first` is `from`.
 * @throws when one is missing
 */
export function hashesOf(archive: string, level: number, from: number, limit: number, n: number, first: number | null, bytes: Buffer): Buffer[] {
  if (n !== limit || (n > 0 && Number(first) !== from) || bytes.length !== 32 * n)
    throw new Error(`the evidence log of archive ${archive} lacks nodes of level ${level} from ${from} on (${n} of ${limit})`);
  return Array.from({ length: n }, (_, i) => bytes.subarray(32 * i, 32 * i + 32));
}

/** The memento key's text in {@link LogTx.captured}'s answer. */
export const keyText = (k: { urlkey: string; datetime: number }): string => `${k.urlkey} ${k.datetime}`;

/**
 * Appends `leaves` to their archives' logs inside the transaction `tx`, in
 * order: per archive, the log is locked, its size and frontier read (one
 * query each), then the entries and the perfect subtrees they complete
 * are written (one statement each).
 *
 * @param opts.ifAbsent leave out the capture entries of mementos already in
 *   the log (recovery and `reindex` of records that may have been logged)
 */
export async function appendToLog(tx: LogTx, leaves: readonly NewLeaf[], opts: { ifAbsent?: boolean } = {}): Promise<void> {
  const byArchive = new Map<string, NewLeaf[]>();
  for (const l of leaves) {
    const list = byArchive.get(l.archive_id);
    if (list) list.push(l);
    else byArchive.set(l.archive_id, [l]);
  }
  // Archives in one order (their ids sorted), so that two daemons appending to the same two logs at once never wait on each other in a circle.
  for (const [archive, list] of byId(byArchive)) {
    await tx.lock(archive);
    let todo = list;
    if (opts.ifAbsent) {
      const keys = list.filter((l) => l.urlkey !== null && l.datetime !== null).map((l) => ({ urlkey: l.urlkey!, datetime: l.datetime! }));
      const there = keys.length ? await tx.captured(archive, keys) : new Set<string>();
      // Of two entries of one memento the later is kept, as the index keeps the later row (insertMany).
      const last = new Map<string, NewLeaf>();
      for (const l of list) if (l.urlkey !== null && l.datetime !== null) last.set(keyText({ urlkey: l.urlkey, datetime: l.datetime }), l);
      todo = list.filter((l) => {
        if (l.urlkey === null || l.datetime === null) return true;
        const k = keyText({ urlkey: l.urlkey, datetime: l.datetime });
        return !there.has(k) && last.get(k) === l;
      });
      if (!todo.length) continue;
    }
    const n = await tx.size(archive);
    const front = n ? await tx.nodes(archive, frontier(n)) : [];
    const hashes = todo.map((l) => leafHash(l.text));
    const { nodes } = appendLeaves(n, front, hashes);
    await tx.insertLeaves(
      todo.map((l, i) => ({
        archive_id: archive,
        leaf_index: n + i,
        leaf_hash: hashes[i],
        kind: l.kind,
        leaf_text: l.text,
        urlkey: l.urlkey,
        datetime: l.datetime,
      })),
    );
    if (nodes.length) await tx.insertNodes(archive, nodes);
  }
}

/** The root hash of `archive`'s tree of size `n` (RFC 9162 MTH). */
export function rootOf(log: LogStore, archive: string, n: number): Promise<Buffer> {
  return treeRoot(n, (keys) => log.nodes(archive, keys));
}

/** The inclusion path of entry `m` in `archive`'s tree of size `n` (RFC 9162 §2.1.3.1). */
export function inclusionOf(log: LogStore, archive: string, m: number, n: number): Promise<Buffer[]> {
  return inclusionPath(m, n, (keys) => log.nodes(archive, keys));
}

/** The consistency proof between `archive`'s trees of sizes `m` and `n` (RFC 9162 §2.1.4.1). */
export function consistencyOf(log: LogStore, archive: string, m: number, n: number): Promise<Buffer[]> {
  return consistencyProof(m, n, (keys) => log.nodes(archive, keys));
}

/**
 * Records a purge inside the transaction `tx` that deletes the mementos
 * `keys` of `archive`: each one's capture entry keeps its leaf hash (the
 * tree never changes) but loses its text and key, and a purge entry
 * naming it (leaf.ts `purgeLeafText`) is appended. Mementos without an
 * entry (indexed before the log existed) add nothing.
 * @param at when the purge ran, epoch milliseconds
 * @returns the purge entries appended
 */
export async function logPurge(tx: LogTx, archive: string, keys: { urlkey: string; datetime: number }[], at: number): Promise<number> {
  if (!keys.length) return 0;
  await tx.lock(archive);
  const removed = (await tx.leavesOf(archive, keys)).filter((l) => l.leaf_text !== null).sort((a, b) => a.leaf_index - b.leaf_index);
  if (!removed.length) return 0;
  await tx.eraseLeaves(
    archive,
    removed.map((l) => l.leaf_index),
  );
  await appendToLog(
    tx,
    removed.map((l) => ({ archive_id: archive, kind: 'purge', text: purgeLeafText(at, l.leaf_index, l.leaf_hash), urlkey: null, datetime: null })),
  );
  return removed.length;
}

/**
 * {@link logPurge} for mementos of any archives (`purge`, inside the
 * transaction of MementoIndex.rewriteRows): grouped by archive id.
 * @param at when the purge ran, epoch milliseconds
 * @returns the purge entries appended
 */
export async function logPurgeOf(tx: LogTx, gone: { archive_id: string; urlkey: string; datetime: number }[], at: number): Promise<number> {
  const byArchive = new Map<string, { urlkey: string; datetime: number }[]>();
  for (const g of gone) byArchive.set(g.archive_id, [...(byArchive.get(g.archive_id) ?? []), g]);
  let n = 0;
  for (const [archive, keys] of byId(byArchive)) n += await logPurge(tx, archive, keys, at);
  return n;
}

/** The entries of `m` in the order of their keys (archive ids), bytewise. */
function byId<T>(m: Map<string, T>): [string, T][] {
  return [...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}
