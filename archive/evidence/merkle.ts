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

/** Whether `x` is a whole number a proof's sizes and indexes may be (0 ≤ x ≤ 2^53 − 1). */
function isSize(x: number): boolean {
  return Number.isSafeInteger(x) && x >= 0;
}

/** Whether `x` (≥ 1) is a power of two. */
function isPowerOfTwo(x: number): boolean {
  let p = 1;
  while (p < x) p *= 2;
  return p === x;
}

/** `x` shifted right by one bit, for sizes past 2^32 (JavaScript's `>>` is 32-bit). */
function half(x: number): number {
  return Math.floor(x / 2);
}

/**
 * Checks an inclusion proof (RFC 9162 §2.1.3.2): that the leaf whose leaf
 * hash is `leaf` is entry `index` of the tree of size `treeSize` whose
 * root is `root`, by the audit path `path` (sibling hashes from the leaf
 * up, 32 bytes each). Never throws: anything malformed is `false`.
 */
export function verifyInclusion(leaf: Buffer, index: number, treeSize: number, path: readonly Buffer[], root: Buffer): boolean {
  if (!isSize(index) || !isSize(treeSize) || index >= treeSize || path.length > 64) return false;
  if (leaf.length !== 32 || root.length !== 32 || path.some((p) => p.length !== 32)) return false;
  let fn = index;
  let sn = treeSize - 1;
  let r = leaf;
  for (const p of path) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      while (fn % 2 === 0 && fn !== 0) [fn, sn] = [half(fn), half(sn)];
    } else r = nodeHash(r, p);
    [fn, sn] = [half(fn), half(sn)];
  }
  return sn === 0 && r.equals(root);
}

/**
 * Checks a consistency proof (RFC 9162 §2.1.4.2, RFC 6962 §2.1.2): that
 * the tree of size `first` with root `firstRoot` is a prefix of the tree
 * of size `second` with root `secondRoot`, by `proof` (32-byte hashes).
 * Equal sizes are consistent when the roots are equal and the proof is
 * empty; size 0 is consistent with any tree by an empty proof. Never
 * throws: anything malformed is `false`.
 */
export function verifyConsistency(first: number, second: number, firstRoot: Buffer, secondRoot: Buffer, proof: readonly Buffer[]): boolean {
  if (!isSize(first) || !isSize(second) || first > second || proof.length > 64) return false;
  if (firstRoot.length !== 32 || secondRoot.length !== 32 || proof.some((p) => p.length !== 32)) return false;
  if (first === second) return proof.length === 0 && firstRoot.equals(secondRoot);
  if (first === 0) return proof.length === 0;
  if (proof.length === 0) return false;
  // A first tree of a power-of-two size is a node of the second: the proof leaves it out.
  const path = isPowerOfTwo(first) ? [firstRoot, ...proof] : proof;
  let fn = first - 1;
  let sn = second - 1;
  while (fn % 2 === 1) [fn, sn] = [half(fn), half(sn)];
  let fr = path[0];
  let sr = path[0];
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      while (fn % 2 === 0 && fn !== 0) [fn, sn] = [half(fn), half(sn)];
    } else sr = nodeHash(sr, c);
    [fn, sn] = [half(fn), half(sn)];
  }
  return sn === 0 && fr.equals(firstRoot) && sr.equals(secondRoot);
}
