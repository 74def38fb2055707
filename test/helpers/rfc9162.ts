/**
 * An auditor's checker of the archive's log, written from RFC 9162 §2.1
 * alone and sharing no code with the archive (nothing here imports from
 * archive/), so that a mistake in the archive's Merkle code is not
 * repeated here: leaf and node hashes (§2.1.1), the verification of an
 * inclusion proof (§2.1.3.2) and of a consistency proof (§2.1.4.2), the
 * Merkle Tree Hash and the two proofs as the RFC defines them recursively
 * (§2.1.1, §2.1.3.1, §2.1.4.1; slow, for building expected values in
 * tests), and the Ed25519 signature of a signed tree head checked with
 * node:crypto from its `public_key` alone.
 */
import { createHash, createPublicKey, verify } from 'node:crypto';

/** SHA-256 of the concatenation of `parts`. */
function sha256(...parts: Uint8Array[]): Buffer {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
}

/** RFC 9162 §2.1.1: the hash of a leaf, `SHA-256(0x00 ‖ leaf)`. */
export function leafHash(leaf: Uint8Array | string): Buffer {
  return sha256(Buffer.from([0]), typeof leaf === 'string' ? Buffer.from(leaf, 'utf8') : leaf);
}

/** RFC 9162 §2.1.1: the hash of an inner node, `SHA-256(0x01 ‖ left ‖ right)`. */
export function nodeHash(left: Uint8Array, right: Uint8Array): Buffer {
  return sha256(Buffer.from([1]), left, right);
}

/** The largest power of two smaller than `n` (n > 1): the `k` of RFC 9162 §2.1.1. */
function split(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** RFC 9162 §2.1.1 MTH(D[n]) over the leaves (bytes) by its recursive definition; the empty tree's is SHA-256 of nothing. */
export function mth(leaves: readonly Uint8Array[]): Buffer {
  if (leaves.length === 0) return sha256();
  if (leaves.length === 1) return leafHash(leaves[0]);
  const k = split(leaves.length);
  return nodeHash(mth(leaves.slice(0, k)), mth(leaves.slice(k)));
}

/** MTH as above, over leaf hashes already made (a log's stored `leaf_hash` column): nodes by §2.1.1, the empty tree's SHA-256 of nothing. */
export function mthOfHashes(hashes: readonly Uint8Array[]): Buffer {
  if (hashes.length === 0) return sha256();
  if (hashes.length === 1) return Buffer.from(hashes[0]);
  const k = split(hashes.length);
  return nodeHash(mthOfHashes(hashes.slice(0, k)), mthOfHashes(hashes.slice(k)));
}

/** RFC 9162 §2.1.3.1 PATH(m, D[n]): the inclusion path of leaf `m` (0-based), by the recursive definition. */
export function path(m: number, leaves: readonly Uint8Array[]): Buffer[] {
  const n = leaves.length;
  if (n <= 1) return [];
  const k = split(n);
  if (m < k) return [...path(m, leaves.slice(0, k)), mth(leaves.slice(k))];
  return [...path(m - k, leaves.slice(k)), mth(leaves.slice(0, k))];
}

/** RFC 9162 §2.1.4.1 PROOF(m, D[n]) = SUBPROOF(m, D[n], true), by the recursive definition (0 < m ≤ n). */
export function proof(m: number, leaves: readonly Uint8Array[]): Buffer[] {
  const sub = (m: number, d: readonly Uint8Array[], b: boolean): Buffer[] => {
    const n = d.length;
    if (m === n) return b ? [] : [mth(d)];
    const k = split(n);
    if (m <= k) return [...sub(m, d.slice(0, k), b), mth(d.slice(k))];
    return [...sub(m - k, d.slice(k), false), mth(d.slice(0, k))];
  };
  return sub(m, leaves, true);
}

const odd = (x: number) => x % 2 === 1;
const half = (x: number) => Math.floor(x / 2);

/**
 * RFC 9162 §2.1.3.2: true when `inclusionPath` proves that the leaf whose
 * hash is `hash` is leaf `leafIndex` (0-based) of the tree of `treeSize`
 * leaves whose root hash is `rootHash`.
 */
export function verifyInclusion(hash: Uint8Array, leafIndex: number, treeSize: number, inclusionPath: readonly Uint8Array[], rootHash: Uint8Array): boolean {
  // 1. leaf_index must be less than tree_size.
  if (!(leafIndex >= 0 && leafIndex < treeSize)) return false;
  // 2. fn = leaf_index, sn = tree_size - 1.  3. r = hash.
  let fn = leafIndex;
  let sn = treeSize - 1;
  let r: Buffer = Buffer.from(hash);
  // 4. Each p of the path.
  for (const p of inclusionPath) {
    // a. sn = 0 with path entries left: fail.
    if (sn === 0) return false;
    // b. LSB(fn) set, or fn = sn: p is on the left.
    if (odd(fn) || fn === sn) {
      r = nodeHash(p, r);
      // ii. Then, unless LSB(fn) was set, shift both until LSB(fn) is set or fn is 0.
      if (!odd(fn)) while (!odd(fn) && fn !== 0) [fn, sn] = [half(fn), half(sn)];
    } else {
      // Otherwise p is on the right.
      r = nodeHash(r, p);
    }
    // c. Shift both once.
    [fn, sn] = [half(fn), half(sn)];
  }
  // 5. sn must be 0, and r the root.
  return sn === 0 && r.equals(Buffer.from(rootHash));
}

/** The inclusion proof of an archive's `/proof` answer (and a WACZ package's `proofs/proofs.jsonl` line), as JSON. */
export interface ProofJson {
  leaf_index: number;
  tree_size: number;
  /** base64 */
  audit_path: string[];
  sth: { root_hash: string };
}

/** {@link verifyInclusion} of the leaf `leaf` (its bytes, or UTF-8 text) with the index, size, path and signed root of the proof `p`. */
export function proofProves(leaf: Uint8Array | string, p: ProofJson): boolean {
  return verifyInclusion(
    leafHash(leaf),
    p.leaf_index,
    p.tree_size,
    p.audit_path.map((h) => Buffer.from(h, 'base64')),
    Buffer.from(p.sth.root_hash, 'base64'),
  );
}

/**
 * RFC 9162 §2.1.4.2: true when `consistencyPath` proves that the tree of
 * `first` leaves with root `firstHash` is a prefix of the tree of `second`
 * leaves with root `secondHash` (0 < first ≤ second; for first = second the
 * path is empty and the roots equal).
 */
export function verifyConsistency(
  first: number,
  second: number,
  firstHash: Uint8Array,
  secondHash: Uint8Array,
  consistencyPath: readonly Uint8Array[],
): boolean {
  if (!(first > 0 && first <= second)) return false;
  if (first === second) return consistencyPath.length === 0 && Buffer.from(firstHash).equals(Buffer.from(secondHash));
  // 1. An empty path: fail.
  if (consistencyPath.length === 0) return false;
  // 2. first an exact power of 2: first_hash goes in front.
  const c = isPowerOfTwo(first) ? [firstHash, ...consistencyPath] : [...consistencyPath];
  // 3. fn = first - 1, sn = second - 1.
  let fn = first - 1;
  let sn = second - 1;
  // 4. While LSB(fn) is set, shift both.
  while (odd(fn)) [fn, sn] = [half(fn), half(sn)];
  // 5. fr = sr = the first value.
  let fr: Buffer = Buffer.from(c[0]);
  let sr: Buffer = Buffer.from(c[0]);
  // 6. Each later value.
  for (const v of c.slice(1)) {
    // a. sn = 0 with values left: fail.
    if (sn === 0) return false;
    // b. LSB(fn) set, or fn = sn: v is on the left of both.
    if (odd(fn) || fn === sn) {
      fr = nodeHash(v, fr);
      sr = nodeHash(v, sr);
      // ii. Then, unless LSB(fn) was set, shift both until LSB(fn) is set or fn is 0.
      if (!odd(fn)) while (!odd(fn) && fn !== 0) [fn, sn] = [half(fn), half(sn)];
    } else {
      // Otherwise v is on the right of the second tree only.
      sr = nodeHash(sr, v);
    }
    // c. Shift both once.
    [fn, sn] = [half(fn), half(sn)];
  }
  // 7. fr is first_hash, sr is second_hash, sn is 0.
  return fr.equals(Buffer.from(firstHash)) && sr.equals(Buffer.from(secondHash)) && sn === 0;
}

/** True when `n` (a positive integer) is an exact power of 2. */
function isPowerOfTwo(n: number): boolean {
  while (n > 1 && n % 2 === 0) n /= 2;
  return n === 1;
}

/** A signed tree head as `GET /<id>/log` gives it. */
export interface Sth {
  /** The log's origin; `null` (or absent) for a head signed before heads named their log. */
  origin?: string | null;
  tree_size: number;
  /** base64 */
  root_hash: string;
  /** ms since the epoch */
  timestamp: number;
  /** base64 Ed25519 */
  signature: string;
  /** base64 SPKI DER */
  public_key: string;
}

/** The bytes an STH's signature covers: UTF-8 of `<origin>\n<tree_size>\n<root_hash base64>\n<timestamp>` (without an origin, the three lines after it). */
export function sthSigned(sth: Sth): Buffer {
  const text = `${sth.tree_size}\n${sth.root_hash}\n${sth.timestamp}`;
  return Buffer.from(sth.origin == null ? text : `${sth.origin}\n${text}`, 'utf8');
}

/** True when `sth.signature` is the Ed25519 signature of {@link sthSigned} by the key `publicKey` (base64 SPKI DER; default the STH's own). */
export function verifySth(sth: Sth, publicKey = sth.public_key): boolean {
  const key = createPublicKey({ key: Buffer.from(publicKey, 'base64'), format: 'der', type: 'spki' });
  if (key.asymmetricKeyType !== 'ed25519') return false;
  return verify(null, sthSigned(sth), key, Buffer.from(sth.signature, 'base64'));
}
