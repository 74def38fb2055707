/**
 * The auditor's RFC 9162 checker (test/helpers/rfc9162.ts) against trees
 * built by hand: known hashes, every inclusion and consistency proof of
 * the trees of 1 to 8 leaves accepted, and every proof with one byte, one
 * hash or one index changed refused; an STH signature checked from its
 * public key alone.
 */
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import t from 'tap';
import { leafHash, mth, nodeHash, path, proof, type Sth, sthSigned, verifyConsistency, verifyInclusion, verifySth } from '../../helpers/rfc9162.js';

const sha = (...parts: (string | Buffer)[]) => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
};
const leaves = Array.from({ length: 8 }, (_, i) => Buffer.from(`leaf ${i}`));
const L = leaves.map((l) => sha(Buffer.from([0]), l));
const N = (a: Buffer, b: Buffer) => sha(Buffer.from([1]), a, b);
/** The roots of the trees of 1..8 leaves, written out by hand from RFC 9162 §2.1.1 (k = largest power of 2 below n). */
const ROOTS: Record<number, Buffer> = {
  1: L[0],
  2: N(L[0], L[1]),
  3: N(N(L[0], L[1]), L[2]),
  4: N(N(L[0], L[1]), N(L[2], L[3])),
  5: N(N(N(L[0], L[1]), N(L[2], L[3])), L[4]),
  6: N(N(N(L[0], L[1]), N(L[2], L[3])), N(L[4], L[5])),
  7: N(N(N(L[0], L[1]), N(L[2], L[3])), N(N(L[4], L[5]), L[6])),
  8: N(N(N(L[0], L[1]), N(L[2], L[3])), N(N(L[4], L[5]), N(L[6], L[7]))),
};

t.test('hashes: leaf, node, the empty tree, and the roots of 1..8 leaves', async (t) => {
  t.equal(leafHash('').toString('hex'), '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d', 'SHA-256(0x00)');
  t.equal(mth([]).toString('hex'), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855', 'the empty tree: SHA-256 of nothing');
  t.same(nodeHash(L[0], L[1]), N(L[0], L[1]));
  for (let n = 1; n <= 8; n++) t.same(mth(leaves.slice(0, n)), ROOTS[n], `MTH of ${n} leaves`);
  // A path written by hand: leaf 2 of 7 is [L3, N(L0,L1), N(N(L4,L5),L6)].
  t.same(path(2, leaves.slice(0, 7)), [L[3], N(L[0], L[1]), N(N(L[4], L[5]), L[6])]);
  // A consistency proof by hand: 3 → 7 is [L2, L3, N(L0,L1), N(N(L4,L5),L6)].
  t.same(proof(3, leaves.slice(0, 7)), [L[2], L[3], N(L[0], L[1]), N(N(L[4], L[5]), L[6])]);
});

t.test('inclusion: every leaf of every tree of 1..8 leaves; a change anywhere is refused', async (t) => {
  let checked = 0;
  for (let n = 1; n <= 8; n++) {
    for (let m = 0; m < n; m++) {
      const p = path(m, leaves.slice(0, n));
      t.ok(verifyInclusion(L[m], m, n, p, ROOTS[n]), `leaf ${m} of ${n}`);
      checked++;
      t.notOk(verifyInclusion(L[(m + 1) % 8], m, n, p, ROOTS[n]), 'another leaf');
      if (n > 1) t.notOk(verifyInclusion(L[m], (m + 1) % n, n, p, ROOTS[n]), 'another index');
      // (The same path may also fit a larger size with the same root, e.g. leaf 0 of 3 as of 4: the signed tree head binds size to root.)
      if (n > 1) t.notOk(verifyInclusion(L[m], m, 2 * n, p, ROOTS[n]), 'twice the size');
      t.notOk(verifyInclusion(L[m], m, n, p, ROOTS[n === 8 ? 7 : n + 1]), 'another root');
      for (let i = 0; i < p.length; i++) {
        const bad = p.map((x) => Buffer.from(x));
        bad[i][0] ^= 1;
        t.notOk(verifyInclusion(L[m], m, n, bad, ROOTS[n]), `path entry ${i} changed`);
      }
      t.notOk(verifyInclusion(L[m], m, n, [...p, L[0]], ROOTS[n]), 'a hash too many');
      if (p.length) t.notOk(verifyInclusion(L[m], m, n, p.slice(1), ROOTS[n]), 'a hash too few');
    }
  }
  t.notOk(verifyInclusion(L[0], 0, 0, [], mth([])), 'no leaf in an empty tree');
  t.equal(checked, 36);
});

t.test('consistency: every pair of trees of 1..8 leaves; a change anywhere is refused', async (t) => {
  for (let n = 1; n <= 8; n++) {
    for (let m = 1; m <= n; m++) {
      const p = proof(m, leaves.slice(0, n));
      t.ok(verifyConsistency(m, n, ROOTS[m], ROOTS[n], p), `${m} → ${n}`);
      if (m === n) {
        t.equal(p.length, 0);
        t.notOk(verifyConsistency(m, n, ROOTS[m], ROOTS[m === 1 ? 2 : 1], p), 'the same size, another root');
        continue;
      }
      t.notOk(verifyConsistency(m, n, ROOTS[m === 1 ? 2 : 1], ROOTS[n], p), 'another first root');
      t.notOk(verifyConsistency(m, n, ROOTS[m], ROOTS[n - 1], p), 'another second root');
      if (m + 1 < n) t.notOk(verifyConsistency(m + 1, n, ROOTS[m + 1], ROOTS[n], p), 'another first size');
      for (let i = 0; i < p.length; i++) {
        const bad = p.map((x) => Buffer.from(x));
        bad[i][31] ^= 0x80;
        t.notOk(verifyConsistency(m, n, ROOTS[m], ROOTS[n], bad), `proof entry ${i} changed`);
      }
      t.notOk(verifyConsistency(m, n, ROOTS[m], ROOTS[n], []), 'an empty proof');
    }
  }
  t.notOk(verifyConsistency(0, 3, mth([]), ROOTS[3], []), 'first = 0 is not proved here');
  t.notOk(verifyConsistency(4, 3, ROOTS[4], ROOTS[3], []), 'first > second');
});

t.test('an STH: its Ed25519 signature over tree_size, root_hash and timestamp, from its public key alone', async (t) => {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const unsigned = { tree_size: 5, root_hash: ROOTS[5].toString('base64'), timestamp: 1_795_000_000_123 };
  const signature = sign(null, Buffer.from(`5\n${unsigned.root_hash}\n1795000000123`), privateKey).toString('base64');
  const sth: Sth = { ...unsigned, signature, public_key: publicKey.export({ format: 'der', type: 'spki' }).toString('base64') };
  t.equal(sthSigned(sth).toString(), `5\n${sth.root_hash}\n1795000000123`);
  t.ok(verifySth(sth));
  t.notOk(verifySth({ ...sth, tree_size: 6 }), 'another size');
  t.notOk(verifySth({ ...sth, timestamp: sth.timestamp + 1 }), 'another time');
  t.notOk(verifySth({ ...sth, root_hash: ROOTS[4].toString('base64') }), 'another root');
  const other = generateKeyPairSync('ed25519').publicKey.export({ format: 'der', type: 'spki' }).toString('base64');
  t.notOk(verifySth(sth, other), 'another key');
  const named: Sth = { ...unsigned, origin: 'archive.example.org/current', public_key: sth.public_key, signature: '' };
  named.signature = sign(null, Buffer.from(`archive.example.org/current\n5\n${unsigned.root_hash}\n1795000000123`), privateKey).toString('base64');
  t.equal(sthSigned(named).toString(), `archive.example.org/current\n5\n${sth.root_hash}\n1795000000123`, 'a head naming its log signs its origin first');
  t.ok(verifySth(named));
  t.notOk(verifySth({ ...named, origin: 'archive.example.org/2025' }), "another log's origin");
});
