/**
 * Merkle tree hashing and proofs of RFC 9162 §2.1 (Certificate
 * Transparency 2.0), over stored hashes of perfect subtrees, so that a
 * tree of any size is never rebuilt: the root of a tree of size n, the
 * inclusion path of a leaf (§2.1.3.1) and the consistency proof between
 * two sizes (§2.1.4.1) each read O(log n) stored hashes.
 *
 * A perfect subtree is named by a {@link NodeKey} `(level, index)`: the
 * 2^level leaves `[index·2^level, (index+1)·2^level)`. Level 0 is a leaf
 * (its leaf hash). Every subtree hash the RFC's definitions use is either
 * such a node or, along the tree's right edge, the hash of a range
 * `[start, end)` that is not a power of two long; that one is made from the
 * perfect subtrees that tile the range (largest first), hashed right to
 * left — which is what MTH computes for it.
 *
 * Pure functions: no I/O but the `read` callback given.
 */
import { createHash } from 'node:crypto';

/** One perfect subtree: leaves `[index·2^level, (index+1)·2^level)`. */
export interface NodeKey {
  level: number;
  index: number;
}

/** A stored perfect subtree's hash. */
export interface StoredNode extends NodeKey {
  hash: Buffer;
}

/**
 * Reads the hashes of the perfect subtrees `keys` (level 0: leaf hashes),
 * in the same order. Every key asked for exists (the tree holds those
 * leaves); an implementation throws when one is missing.
 */
export type NodeReader = (keys: NodeKey[]) => Promise<Buffer[]>;

/** SHA-256 of the empty string: the Merkle Tree Hash of the empty tree (RFC 9162 §2.1.1). */
export const EMPTY_ROOT: Buffer = createHash('sha256').digest();

/** The leaf hash `SHA-256(0x00 ‖ leaf)` (RFC 9162 §2.1.1). */
export function leafHash(leaf: Buffer | string): Buffer {
  return createHash('sha256')
    .update(Buffer.of(0))
    .update(typeof leaf === 'string' ? Buffer.from(leaf, 'utf8') : leaf)
    .digest();
}

/** The interior node hash `SHA-256(0x01 ‖ left ‖ right)` (RFC 9162 §2.1.1). */
export function nodeHash(left: Buffer, right: Buffer): Buffer {
  return createHash('sha256').update(Buffer.of(1)).update(left).update(right).digest();
}

/** The largest power of two smaller than `n` (n ≥ 2): the RFC's split point k. */
export function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** The text key of a node (for maps). */
export function nodeId(k: NodeKey): string {
  return `${k.level}/${k.index}`;
}

/**
 * The perfect subtrees that tile `[start, end)`, left to right: each the
 * largest one aligned at its start that fits.
 */
export function tiles(start: number, end: number): NodeKey[] {
  const out: NodeKey[] = [];
  let at = start;
  while (at < end) {
    let level = 0;
    while (at % 2 ** (level + 1) === 0 && at + 2 ** (level + 1) <= end) level++;
    out.push({ level, index: at / 2 ** level });
    at += 2 ** level;
  }
  return out;
}

/** A range of leaves `[start, end)` whose Merkle Tree Hash a proof holds. */
type Range = readonly [start: number, end: number];

/** The subtrees of the inclusion path of leaf `m` in `[start, end)`, from the leaf up (RFC 9162 §2.1.3.1 PATH). */
function pathRanges(m: number, start: number, end: number): Range[] {
  const n = end - start;
  if (n <= 1) return [];
  const k = splitPoint(n);
  if (m < k) return [...pathRanges(m, start, start + k), [start + k, end]];
  return [...pathRanges(m - k, start + k, end), [start, start + k]];
}

/** The subtrees of SUBPROOF(m, D[start:end], b) (RFC 9162 §2.1.4.1). */
function subproofRanges(m: number, start: number, end: number, b: boolean): Range[] {
  const n = end - start;
  if (m === n) return b ? [] : [[start, end]];
  const k = splitPoint(n);
  if (m <= k) return [...subproofRanges(m, start, start + k, b), [start + k, end]];
  return [...subproofRanges(m - k, start + k, end, false), [start, start + k]];
}

/** The hashes of `ranges`, reading each perfect subtree they need once (one `read` call). */
async function hashRanges(ranges: readonly Range[], read: NodeReader): Promise<Buffer[]> {
  const tiled = ranges.map(([s, e]) => tiles(s, e));
  const keys = new Map<string, NodeKey>();
  for (const t of tiled) for (const k of t) keys.set(nodeId(k), k);
  const list = [...keys.values()];
  const hashes = await read(list);
  const byId = new Map(list.map((k, i) => [nodeId(k), hashes[i]]));
  return tiled.map((t) => foldTiles(t.map((k) => byId.get(nodeId(k))!)));
}

/** The Merkle Tree Hash of a range from the hashes of its tiles (left to right): hashed right to left. */
export function foldTiles(hashes: readonly Buffer[]): Buffer {
  let h = hashes[hashes.length - 1];
  for (let i = hashes.length - 2; i >= 0; i--) h = nodeHash(hashes[i], h);
  return h;
}

/** Checks that `m` and `n` are whole numbers with `0 ≤ m < n` (or `≤` when `allowEqual`). @throws RangeError */
function checkSizes(m: number, n: number, what: string, allowEqual: boolean): void {
  if (!Number.isSafeInteger(m) || !Number.isSafeInteger(n) || m < 0 || (allowEqual ? m > n : m >= n))
    throw new RangeError(`${what}: ${m} and ${n} are not sizes 0 ≤ ${m} ${allowEqual ? '≤' : '<'} ${n}`);
}

/** The Merkle Tree Hash of the tree of the first `n` leaves (RFC 9162 §2.1.1); {@link EMPTY_ROOT} for 0. */
export async function treeRoot(n: number, read: NodeReader): Promise<Buffer> {
  checkSizes(0, n, 'tree root', true);
  if (n === 0) return EMPTY_ROOT;
  return (await hashRanges([[0, n]], read))[0];
}

/**
 * The inclusion proof (audit path) of leaf `m` in the tree of size `n`,
 * RFC 9162 §2.1.3.1: the sibling hashes from the leaf up to the root.
 * @throws RangeError unless 0 ≤ m < n
 */
export async function inclusionPath(m: number, n: number, read: NodeReader): Promise<Buffer[]> {
  checkSizes(m, n, 'inclusion path', false);
  return hashRanges(pathRanges(m, 0, n), read);
}

/**
 * The consistency proof between the trees of sizes `m` and `n`, RFC 9162
 * §2.1.4.1 (PROOF(m, D[n])); empty when m = n.
 * @throws RangeError unless 0 < m ≤ n
 */
export async function consistencyProof(m: number, n: number, read: NodeReader): Promise<Buffer[]> {
  checkSizes(m, n, 'consistency proof', true);
  if (m === 0) throw new RangeError('consistency proof: the first size must be at least 1');
  return hashRanges(subproofRanges(m, 0, n, true), read);
}

/** The perfect subtrees of a tree of size `n` that later leaves build on (its "frontier": the tiles of `[0, n)`). */
export function frontier(n: number): NodeKey[] {
  return tiles(0, n);
}

/**
 * Appending leaves to a tree of size `n` whose frontier hashes
 * ({@link frontier}, in order) are `front`: the new perfect subtrees of
 * level ≥ 1 that the leaf hashes `added` complete, and the new tree's
 * root. The leaves themselves (level 0) are not in `nodes`.
 */
export function appendLeaves(n: number, front: readonly Buffer[], added: readonly Buffer[]): { nodes: StoredNode[]; root: Buffer } {
  const stack: StoredNode[] = frontier(n).map((k, i) => ({ ...k, hash: front[i] }));
  const nodes: StoredNode[] = [];
  for (const [i, h] of added.entries()) {
    stack.push({ level: 0, index: n + i, hash: h });
    while (stack.length >= 2 && stack[stack.length - 1].level === stack[stack.length - 2].level) {
      const right = stack.pop()!;
      const left = stack.pop()!;
      const node = { level: right.level + 1, index: Math.floor(right.index / 2), hash: nodeHash(left.hash, right.hash) };
      nodes.push(node);
      stack.push(node);
    }
  }
  return { nodes, root: stack.length ? foldTiles(stack.map((s) => s.hash)) : EMPTY_ROOT };
}
