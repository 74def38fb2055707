/**
 * The independent verifier (test/helpers/c2sp-verifier.ts) on its own,
 * against data made here from the specs: the signed-note spec's example,
 * a tree of up to 70,000 leaves served as C2SP tiles and entry bundles by
 * a small server in this file, a tlog-proof receipt, a real witness's
 * cosignature and a real TSA's token. It accepts what is right and refuses
 * each change, so that it can judge the archive's routes.
 */
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { readFileSync, writeFileSync } from 'node:fs';
import t, { type Test } from 'tap';
import { checkpointText, cosignatureLine, formatVerifierKey, noteSignerOf, signNote, verifierKeyOf } from '../../../archive/evidence/signed-note.js';
import { requestTimestamp } from '../../../archive/evidence/timestamp.js';
import { addCheckpoint } from '../../../archive/evidence/witness-client.js';
import {
  fetchEntryBundle,
  leafHashesFromTiles,
  parseVkey,
  readEntryBundle,
  rootFromTiles,
  tileIndexPath,
  tilePathFor,
  verifyCheckpoint,
  verifyNote,
  verifyReceipt,
  verifyTimestampToken,
} from '../../helpers/c2sp-verifier.js';
import { repo } from '../../helpers/daemons.js';
import { leafHash, mth, mthOfHashes, path as inclusionPath } from '../../helpers/rfc9162.js';
import { startTsa } from '../../helpers/tsa.js';
import { startWitness } from '../../helpers/witness.js';

const run = promisify(execFile);

t.test('signed notes: the signed-note spec example, unknown keys ignored, a changed byte refused', async (t) => {
  const vkey = parseVkey('example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k');
  const note =
    'This is an example message.\n\n— example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n';
  t.same(verifyNote(note, [vkey]), { text: 'This is an example message.\n', verified: [{ name: 'example.com/foo' }] });
  t.throws(() => verifyNote(note.replace('example message', 'example massage'), [vkey]), /signature of example\.com\/foo does not verify/);
  const other = verifierKeyOf('example.com/foo', generateKeyPairSync('ed25519').privateKey);
  t.throws(() => verifyNote(note, [parseVkey(formatVerifierKey(other))]), /no signature by a known key/, 'same name, other key ID: ignored');
  t.throws(() => parseVkey('example.com/foo+530d903b+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k'), /key ID 530d903b is not 530d903a/);
});

/** Leaf texts of a log; entry 2 erased in the bundles served. */
const leaves = Array.from({ length: 70_000 }, (_, i) => Buffer.from(`https://example.org/${i}\n20260101000000\n<urn:uuid:${i}>\nsha256:${i}`));
const leafHashes = leaves.map((l) => leafHash(l));

/** The hashes of level `l` (each the hash of 256^l leaves), as far as the leaves fill them. */
const levels: Buffer[][] = [leafHashes];
for (let l = 1; levels[l - 1].length >= 256; l++)
  levels.push(Array.from({ length: Math.floor(levels[l - 1].length / 256) }, (_, j) => mthOfHashes(levels[l - 1].slice(j * 256, j * 256 + 256))));

/** A C2SP tiles server over `leaves` (any tree size up to 70,000); `fetched` lists the paths asked for. */
async function tileServer(t: Test): Promise<{ url: string; fetched: string[] }> {
  const fetched: string[] = [];
  const server = createServer((req, res) => {
    const p = (req.url ?? '').slice(1);
    fetched.push(p);
    const m = /^tile\/(\d+|entries)\/((?:x\d{3}\/)*\d{3})(?:\.p\/(\d+))?$/.exec(p);
    const n = m ? Number(m[2].replace(/x|\//g, '')) : NaN;
    const width = m?.[3] ? Number(m[3]) : 256;
    const source = m?.[1] === 'entries' ? leafHashes : levels[Number(m?.[1])];
    if (!m || !source || n * 256 + width > source.length || width < 1 || width > 256) {
      res.writeHead(404).end();
      return;
    }
    const slice = Array.from({ length: width }, (_, i) => n * 256 + i);
    const body =
      m[1] === 'entries'
        ? Buffer.concat(slice.flatMap((j) => (j === 2 ? [Buffer.alloc(2)] : [Buffer.from([leaves[j].length >> 8, leaves[j].length & 255]), leaves[j]])))
        : Buffer.concat(slice.map((j) => source[j]));
    res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(body);
  });
  server.keepAliveTimeout = 60_000; // the test computes roots between fetches, seconds on a busy machine
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, fetched };
}

t.test('tile paths as tlog-tiles writes them', async (t) => {
  t.equal(tileIndexPath(1234067), 'x001/x234/067');
  t.equal(tileIndexPath(0), '000');
  t.equal(tileIndexPath(1000), 'x001/000');
  t.equal(tilePathFor(0, 273, 70_000), 'tile/0/273.p/112');
  t.equal(tilePathFor(1, 1, 70_000), 'tile/1/001.p/17');
  t.equal(tilePathFor(2, 0, 70_000), 'tile/2/000.p/1');
  t.equal(tilePathFor(1, 0, 70_000), 'tile/1/000');
  t.equal(tilePathFor(0, 274, 70_000), undefined, 'beyond the tree');
  t.equal(tilePathFor(1, 0, 256), 'tile/1/000.p/1', 'a tree of 256: a partial level-1 tile of width 1');
  t.equal(tilePathFor('entries', 1, 300), 'tile/entries/001.p/44');
});

t.test('tiles → the root of every tree size, and the leaf hashes of all level-0 tiles', async (t) => {
  const s = await tileServer(t);
  for (const size of [1, 2, 5, 255, 256, 257, 511, 515, 4096, 65_536, 65_536 + 257, 70_000]) {
    s.fetched.length = 0;
    t.same(await rootFromTiles(s.url, size), mth(leaves.slice(0, size)), `root of ${size}`);
    if (size === 70_000) t.same(s.fetched.sort(), ['tile/0/273.p/112', 'tile/1/001.p/17', 'tile/2/000.p/1'], 'the tiles the spec lists as partial');
  }
  t.same(await leafHashesFromTiles(s.url, 515, mth(leaves.slice(0, 515))), leafHashes.slice(0, 515));
  await t.rejects(leafHashesFromTiles(s.url, 515, mth(leaves.slice(0, 514))), /do not hash to the root of size 515/);
  await t.rejects(rootFromTiles(`${s.url}nothing/`, 5), /GET tile\/0\/000\.p\/5: 404/);
});

t.test('an entry bundle → leaf hashes; an erased entry takes the tile hash; a changed entry is refused', async (t) => {
  const s = await tileServer(t);
  const bundle = await fetchEntryBundle(s.url, 0, 10);
  t.equal(bundle.length, 10);
  t.same(
    bundle.map((b) => b.leafHash),
    leafHashes.slice(0, 10),
  );
  t.same(
    bundle.map((b) => b.erased),
    [false, false, true, false, false, false, false, false, false, false],
  );
  t.same(bundle[3].entry, leaves[3]);
  const tile = leafHashes.slice(0, 3);
  const entry = (b: Buffer) => Buffer.concat([Buffer.from([b.length >> 8, b.length & 255]), b]);
  t.throws(() => readEntryBundle(Buffer.concat([entry(leaves[0]), entry(leaves[1]), entry(Buffer.from('changed'))]), tile), /entry 2 does not hash/);
  t.throws(() => readEntryBundle(Buffer.concat([entry(leaves[0]), entry(leaves[1])]), tile), /2 entries, the tile 3/);
  t.throws(() => readEntryBundle(Buffer.concat([entry(leaves[0]), entry(leaves[1]), entry(leaves[2]), entry(leaves[3])]), tile), /more entries than/);
  t.throws(() => readEntryBundle(Buffer.concat([entry(leaves[0]), Buffer.from([0, 9, 1])]), tile), /9 bytes announced/);
});

t.test('a tlog-proof receipt verifies offline, and each changed part is refused', async (t) => {
  const logKey = generateKeyPairSync('ed25519').privateKey;
  const log = noteSignerOf('archive.test/current', logKey);
  const witness = noteSignerOf('witness.test/w1', generateKeyPairSync('ed25519').privateKey);
  const logVkey = parseVkey(formatVerifierKey(verifierKeyOf(log.name, logKey)));
  const witnessVkey = parseVkey(formatVerifierKey(verifierKeyOf(witness.name, witness.privateKey, 0x04)));
  const d = leaves.slice(0, 11);
  const text = checkpointText({ origin: log.name, treeSize: 11, rootHash: mth(d) });
  const note = signNote(text, log) + cosignatureLine(text, witness, 1_800_000_000);
  const receipt = (index: number, extra = d[index], proof = inclusionPath(index, d), n = note) =>
    `c2sp.org/tlog-proof@v1\nextra ${extra.toString('base64')}\nindex ${index}\n${proof.map((h) => `${h.toString('base64')}\n`).join('')}\n${n}`;
  for (const i of [0, 7, 10]) {
    const r = verifyReceipt(receipt(i), logVkey, { witnessKeys: [witnessVkey], origin: log.name });
    t.same([r.index, r.size, r.extra, r.cosigners], [i, 11, d[i], [{ name: witness.name, time: 1_800_000_000 }]], `entry ${i}`);
  }
  t.same(verifyReceipt(receipt(7), logVkey, { leaf: d[7] }).cosigners, [], 'witnesses not asked for: none reported');
  const changed = (s: string, a: string, b: string) => s.replace(a, b);
  const proof7 = inclusionPath(7, d);
  const bad: [string, () => unknown, RegExp][] = [
    ['another index', () => verifyReceipt(receipt(7).replace('index 7', 'index 6'), logVkey), /inclusion proof of entry 6/],
    ['another leaf', () => verifyReceipt(receipt(7), logVkey, { leaf: d[6] }), /inclusion proof of entry 7/],
    ['changed extra', () => verifyReceipt(receipt(7, d[6]), logVkey), /inclusion proof/],
    ['a proof hash changed', () => verifyReceipt(receipt(7, d[7], [proof7[0], d[0].subarray(0, 32), ...proof7.slice(2)]), logVkey), /inclusion proof/],
    ['a proof hash left out', () => verifyReceipt(receipt(7, d[7], proof7.slice(1)), logVkey), /inclusion proof/],
    [
      'another root in the checkpoint',
      () => verifyReceipt(changed(receipt(7), mth(d).toString('base64'), mth(d.slice(0, 10)).toString('base64')), logVkey),
      /does not verify/,
    ],
    ['another log key', () => verifyReceipt(receipt(7), witnessVkey), /witness\.test\/w1 is not a log key/],
    ['another origin', () => verifyReceipt(receipt(7), logVkey, { origin: 'archive.test/2025' }), /not archive\.test\/2025/],
    [
      'a forged cosignature',
      () =>
        verifyReceipt(receipt(7, d[7], proof7, signNote(text, log) + cosignatureLine(text, witness, 1).replace(/^(\S+ \S+ \S{40})\S{4}/, '$1AAAA')), logVkey, {
          witnessKeys: [witnessVkey],
        }),
      /cosignature of witness\.test\/w1 does not verify/,
    ],
    ['not a tlog-proof', () => verifyReceipt(receipt(7).replace('@v1', '@v2'), logVkey), /not a c2sp\.org\/tlog-proof@v1/],
  ];
  for (const [what, f, reason] of bad) t.throws(f, reason, what);
});

t.test("a real witness's cosignature over a checkpoint verifies here", async (t) => {
  const logKey = generateKeyPairSync('ed25519').privateKey;
  const log = noteSignerOf('archive.test/current', logKey);
  const w = await startWitness({ logs: [{ origin: log.name, key: formatVerifierKey(verifierKeyOf(log.name, logKey)) }], quiet: true });
  t.teardown(() => w.stop());
  const note = signNote(checkpointText({ origin: log.name, treeSize: 5, rootHash: mth(leaves.slice(0, 5)) }), log);
  const cosigned = note + (await addCheckpoint(w.endpoint, { oldSize: 0, proof: [], note })).join('');
  const r = verifyCheckpoint(cosigned, parseVkey(formatVerifierKey(verifierKeyOf(log.name, logKey))), [parseVkey(w.vkey)], log.name);
  t.equal(r.size, 5);
  t.equal(r.cosigners[0].name, 'witness.test/w1');
  t.ok(Math.abs(r.cosigners[0].time! - Date.now() / 1000) < 60, 'timestamped now');
});

t.test('an RFC 3161 token checks with openssl against its CA, not over other data or another CA', async (t) => {
  const tsa = await startTsa();
  t.teardown(() => tsa.close());
  const other = await startTsa({ caName: 'Another CA' });
  t.teardown(() => other.close());
  const data = Buffer.from('archive.test/current\n5\nAAAA\n');
  // A query made by openssl itself, and one made by the archive's client.
  const f = (n: string) => path.join(tsa.dir, n);
  writeFileSync(f('d'), data);
  await run('openssl', ['ts', '-query', '-data', f('d'), '-sha256', '-cert', '-out', f('q.tsq')]);
  const res = await fetch(tsa.url, { method: 'POST', headers: { 'content-type': 'application/timestamp-query' }, body: readFileSync(f('q.tsq')) });
  const byOpenssl = Buffer.from(await res.arrayBuffer());
  const byArchive = await requestTimestamp(tsa.url, data);
  for (const tsr of [byOpenssl, byArchive]) {
    const r = await verifyTimestampToken(tsr, data, tsa.caPem);
    t.ok(Math.abs(r.time.getTime() - Date.now()) < 60_000, `time ${r.time.toISOString()}`);
    t.match(r.serial, /^0x[0-9A-F]+$/);
    await t.rejects(verifyTimestampToken(tsr, Buffer.from('other'), tsa.caPem), /^openssl ts -verify: message imprint mismatch$/);
    await t.rejects(
      verifyTimestampToken(tsr, data, other.caPem),
      /^openssl ts -verify: certificate verify error: Verify error:self-signed certificate in certificate chain$/,
    );
  }
});

t.test('the verifier shares no code with the archive: it imports node modules only', async (t) => {
  const source = readFileSync(path.join(repo, 'test/helpers/c2sp-verifier.ts'), 'utf8');
  const imports = [...source.matchAll(/^import .* from '([^']+)';$/gm)].map((m) => m[1]);
  t.same(
    imports.filter((i) => !i.startsWith('node:')),
    [],
    `imports: ${imports.join(', ')}`,
  );
});
