/**
 * The Merkle tree functions (archive/evidence/merkle.ts) against a naive
 * recursive transcription of RFC 9162 §2.1 (MTH, PATH, PROOF) for every
 * tree size 1..70 and every leaf index / first size; the proof checkers
 * (RFC 9162 §2.1.3.2, §2.1.4.2) accept every naive proof and refuse
 * each changed one.
 */
import { createHash } from 'node:crypto';
import t from 'tap';
import {
  appendLeaves,
  consistencyProof,
  EMPTY_ROOT,
  frontier,
  inclusionPath,
  leafHash,
  nodeHash,
  type NodeKey,
  type NodeReader,
  treeRoot,
  verifyConsistency,
  verifyInclusion,
} from '../../../archive/evidence/merkle.js';

const sha = (...parts: Buffer[]) => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
};

// RFC 9162 §2.1.1, literally.
function mth(d: Buffer[]): Buffer {
  if (d.length === 0) return sha();
  if (d.length === 1) return sha(Buffer.of(0), d[0]);
  let k = 1;
  while (k * 2 < d.length) k *= 2;
  return sha(Buffer.of(1), mth(d.slice(0, k)), mth(d.slice(k)));
}
// §2.1.3.1
function path(m: number, d: Buffer[]): Buffer[] {
  if (d.length === 1) return [];
  let k = 1;
  while (k * 2 < d.length) k *= 2;
  return m < k ? [...path(m, d.slice(0, k)), mth(d.slice(k))] : [...path(m - k, d.slice(k)), mth(d.slice(0, k))];
}
// §2.1.4.1
function subproof(m: number, d: Buffer[], b: boolean): Buffer[] {
  if (m === d.length) return b ? [] : [mth(d)];
  let k = 1;
  while (k * 2 < d.length) k *= 2;
  return m <= k ? [...subproof(m, d.slice(0, k), b), mth(d.slice(k))] : [...subproof(m - k, d.slice(k), false), mth(d.slice(0, k))];
}

const MAX = 70;
const leaves = Array.from({ length: MAX }, (_, i) => Buffer.from(`leaf ${i}\n`));
/** Every perfect subtree of the 70 leaves, computed naively, as a store would hold them; counts the reads. */
let reads = 0;
const read: NodeReader = async (keys: NodeKey[]) => {
  reads += keys.length;
  return keys.map(({ level, index }) => {
    const from = index * 2 ** level;
    const to = from + 2 ** level;
    if (to > MAX) throw new Error(`no node ${level}/${index}`);
    return mth(leaves.slice(from, to));
  });
};
const b64 = (l: Buffer[]) => l.map((b) => b.toString('base64'));

t.test('hashes as RFC 9162 §2.1.1 defines them', async (t) => {
  t.equal(EMPTY_ROOT.toString('hex'), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  t.same(leafHash(leaves[0]), sha(Buffer.of(0), leaves[0]));
  t.same(nodeHash(leaves[0], leaves[1]), sha(Buffer.of(1), leaves[0], leaves[1]));
  t.same(await treeRoot(0, read), EMPTY_ROOT);
});

t.test('root, inclusion path and consistency proof equal the naive ones for every size 1..70', async (t) => {
  let worst = 0;
  for (let n = 1; n <= MAX; n++) {
    const d = leaves.slice(0, n);
    reads = 0;
    t.same(await treeRoot(n, read), mth(d), `root ${n}`);
    for (let m = 0; m < n; m++) {
      reads = 0;
      const got = await inclusionPath(m, n, read);
      worst = Math.max(worst, reads);
      if (b64(got).join() !== b64(path(m, d)).join()) t.fail(`PATH(${m}, D[${n}])`);
    }
    for (let m = 1; m <= n; m++) {
      reads = 0;
      const got = await consistencyProof(m, n, read);
      worst = Math.max(worst, reads);
      if (b64(got).join() !== b64(subproof(m, d, true)).join()) t.fail(`PROOF(${m}, D[${n}])`);
    }
  }
  t.ok(worst <= 2 * Math.ceil(Math.log2(MAX)) + 2, `at most ~2·log2(n) stored hashes read per proof (worst ${worst})`);
});

t.test('appending computes exactly the perfect subtrees and the root, from the frontier alone', async (t) => {
  // Append in uneven batches; every node made must equal the naive subtree hash.
  let n = 0;
  for (const batch of [1, 2, 3, 5, 8, 1, 13, 21, 16]) {
    const front = await read(frontier(n));
    const added = leaves.slice(n, n + batch).map((l) => mth([l]));
    const { nodes, root } = appendLeaves(n, front, added);
    n += batch;
    t.same(root, mth(leaves.slice(0, n)), `root after ${n}`);
    for (const node of nodes) t.same(node.hash, (await read([node]))[0], `node ${node.level}/${node.index}`);
    // Nodes of level ≥ 1 ending in (n - batch, n]: one per trailing zero bit of each new end.
    let expected = 0;
    for (let e = n - batch + 1; e <= n; e++) for (let l = 1; e % 2 ** l === 0; l++) expected++;
    t.equal(nodes.length, expected, `${expected} new nodes at ${n}`);
  }
  t.same(appendLeaves(0, [], []).root, EMPTY_ROOT);
});

t.test('bad sizes are a RangeError', async (t) => {
  await t.rejects(inclusionPath(3, 3, read), RangeError);
  await t.rejects(consistencyProof(0, 3, read), RangeError);
  await t.rejects(consistencyProof(4, 3, read), RangeError);
  await t.rejects(treeRoot(-1, read), RangeError);
});

t.test('the proof checkers accept every proof of sizes 1..40 and refuse changed ones', async (t) => {
  const N = 40;
  const roots = Array.from({ length: N + 1 }, (_, n) => mth(leaves.slice(0, n)));
  let refusals = 0;
  for (let n = 1; n <= N; n++) {
    const d = leaves.slice(0, n);
    for (let m = 0; m < n; m++) {
      const p = path(m, d);
      const leaf = mth([d[m]]);
      if (!verifyInclusion(leaf, m, n, p, roots[n])) t.fail(`inclusion ${m} in ${n}`);
      const bad = [
        verifyInclusion(mth([d[(m + 1) % n]]), m, n, p, roots[n]) && n > 1,
        n > 1 && verifyInclusion(leaf, (m + 1) % n, n, p, roots[n]),
        verifyInclusion(leaf, m, n, [...p, roots[1]], roots[n]),
        p.length > 0 && verifyInclusion(leaf, m, n, p.slice(1), roots[n]),
        p.length > 0 && verifyInclusion(leaf, m, n, [mth([Buffer.from('other')]), ...p.slice(1)], roots[n]),
      ];
      if (bad.some(Boolean)) t.fail(`a changed inclusion proof of ${m} in ${n} passed: ${bad}`);
      refusals += bad.length;
    }
    for (let m = 0; m <= n; m++) {
      const p = m === 0 ? [] : subproof(m, d, true);
      if (!verifyConsistency(m, n, roots[m], roots[n], p)) t.fail(`consistency ${m} → ${n}`);
      const other = mth([Buffer.from('other')]);
      const bad = [
        m > 0 && verifyConsistency(m, n, other, roots[n], p),
        m > 0 && verifyConsistency(m, n, roots[m], other, p),
        m > 0 && m < n && verifyConsistency(m, n, roots[m], roots[n], [...p, other]),
        p.length > 0 && verifyConsistency(m, n, roots[m], roots[n], p.slice(0, -1)),
        p.length > 0 && verifyConsistency(m, n, roots[m], roots[n], [other, ...p.slice(1)]),
        m === 0 && verifyConsistency(0, n, roots[0], roots[n], [roots[n]]),
      ];
      if (bad.some(Boolean)) t.fail(`a changed consistency proof ${m} → ${n} passed: ${bad}`);
      refusals += bad.length;
    }
  }
  t.ok(refusals > 5000, `${refusals} changed proofs refused`);
  t.notOk(verifyConsistency(3, 2, roots[3], roots[2], []), 'first > second');
  t.notOk(verifyInclusion(roots[1], 0, 0, [], roots[0]), 'no leaf in an empty tree');
  t.notOk(verifyConsistency(1.5, 3, roots[1], roots[3], []), 'a size that is not whole');
  t.notOk(verifyConsistency(1, 3, roots[1].subarray(1), roots[3], subproof(1, leaves.slice(0, 3), true)), 'a hash of 31 bytes');
});
