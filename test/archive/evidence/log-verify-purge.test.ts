/**
 * `verify` checks the evidence log against the WARC files and the signing
 * key and names what does not match; `purge` is recorded in the log as
 * purge entries (the tree only grows; the purged memento's proof is 404
 * like the memento; the purge entry is in the tree and names the removed
 * entry by its leaf hash).
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import { purgeSelection, purgeTarget } from '../../../archive/commands/purge.js';
import { FolderWarcStore } from '../../../archive/store/warcs/warc-store.js';
import { openSigningKey } from '../../../archive/evidence/signing-key.js';
import { IndexDb } from '../../../archive/store/index/index-db.js';
import { verify } from '../../../archive/store/upkeep/maintenance.js';
import { purge, type PurgeSelection } from '../../../archive/store/upkeep/purge.js';
import { partsOf, ts14 } from '../../conformance/helpers.js';
import { mthOfHashes as mth } from '../../helpers/rfc9162.js';
import { captureRecord, putCapture, request, startArchive, type TestArchive, TWO_ARCHIVES } from '../../helpers/archive.js';
import { sql } from '../../helpers/tamper.js';

const DATES = ['Mon, 01 Jan 2001 00:00:00 GMT', 'Tue, 02 Jan 2001 00:00:00 GMT', 'Wed, 03 Jan 2001 00:00:00 GMT'];
const URIS = ['http://www.example.org/one', 'http://www.example.org/two', 'http://www.example.org/three'];

const sha = (...parts: Buffer[]) => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
};

/** Polls `/log` until the newest signed head has `size` entries (the signer looks once a second). */
async function headOfSize(a: TestArchive, size: number): Promise<{ tree_size: number; root_hash: string }> {
  for (;;) {
    const h = JSON.parse((await request(`${a.url}/2025/log`)).text) as { tree_size: number; root_hash: string };
    if (h.tree_size === size) return h;
    if (h.tree_size > size) throw new Error(`tree size ${h.tree_size} > ${size}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** `verify` of a stopped archive's data folder, with its signing key. */
async function verifyFolder(a: TestArchive) {
  const index = await IndexDb.open(path.join(a.dataDir, 'index.sqlite3'));
  try {
    return await verify(index, path.join(a.dataDir, 'warcs'), { publicKeyDer: openSigningKey(a.config.signingKeyFile).publicKeyDer });
  } finally {
    await index.close();
  }
}

async function threeCaptures(t: Test): Promise<TestArchive> {
  const a = await startArchive();
  for (const [i, u] of URIS.entries()) t.equal((await putCapture(a, u, captureRecord({ ...partsOf(u), date: DATES[i], body: `body ${i}` }))).status, 201);
  await headOfSize(a, 3);
  return a;
}

t.test('verify passes on an untouched archive and names the record and entry when one byte of a WARC file changes', async (t) => {
  const a = await threeCaptures(t);
  await a.close(true);
  t.teardown(() => rmSync(a.dataDir, { recursive: true, force: true }));
  const ok = await verifyFolder(a);
  t.same(ok.problems, []);
  t.ok(ok.ok);
  t.match(ok.log, { entries: 3 }, 'three entries checked');
  t.ok(ok.log.heads >= 1 && ok.log.nodes === 1, 'heads, and the one stored node of a tree of 3 (level 1)');

  // One byte in the middle of the second capture's response record (inside its gzip member).
  const dir = path.join(a.dataDir, 'warcs', '2025');
  const file = path.join(dir, readdirSync(dir)[0]);
  const bytes = readFileSync(file);
  const [row] = await sql(a.dataDir, 'SELECT warc_offset, warc_length FROM memento WHERE uri_r = ?', [URIS[1]]);
  const at = Number(row.warc_offset) + Math.floor(Number(row.warc_length) / 2);
  const flipped = Buffer.from(bytes);
  flipped[at] ^= 0x01;
  writeFileSync(file, flipped);
  const bad = await verifyFolder(a);
  t.notOk(bad.ok, 'verify fails');
  t.ok(
    bad.problems.some((p) => p.includes(`corrupt record at offset ${row.warc_offset}`)),
    `the damaged record is named by file and offset: ${bad.problems.join(' | ')}`,
  );
  t.ok(
    bad.problems.some((p) =>
      /^log 2025 entry 1 \(http:\/\/www\.example\.org\/two 20010102000000, record <urn:uuid:[0-9a-f-]+>\) names no complete WARC record/.test(p),
    ),
    'the log entry of that capture is named',
  );
  writeFileSync(file, bytes);

  // The log itself changed: an entry's text, then a head's signature.
  await sql(a.dataDir, "UPDATE log_leaf SET leaf_text = replace(leaf_text, 'one', 'uno') WHERE leaf_index = 0");
  const edited = await verifyFolder(a);
  t.ok(edited.problems.some((p) => p.startsWith('log 2025 entry 0 (http://www.example.org/one 20010101000000) does not match its WARC record at 2025/')));
  t.ok(edited.problems.some((p) => p === 'log 2025 entry 0: its leaf hash is not SHA-256(0x00 ‖ its text)'));
  await sql(a.dataDir, "UPDATE log_leaf SET leaf_text = replace(leaf_text, 'uno', 'one') WHERE leaf_index = 0");
  await sql(a.dataDir, 'UPDATE log_head SET timestamp = timestamp + 1 WHERE tree_size = 3');
  const resigned = await verifyFolder(a);
  t.same(resigned.problems, ["log 2025 signed tree head of size 3: its signature does not verify with the archive's signing key"]);
  await sql(a.dataDir, 'UPDATE log_node SET hash = zeroblob(32) WHERE level = 1');
  const node = await verifyFolder(a);
  t.ok(node.problems.includes('log 2025 node 1/0 (entries 0…1) is not the hash of its children'), node.problems.join(' | '));

  // A removal without a purge entry (the row and the entry's text deleted by hand): not silent either.
  await sql(a.dataDir, 'UPDATE log_leaf SET leaf_text = NULL, urlkey = NULL, datetime = NULL WHERE leaf_index = 2');
  await sql(a.dataDir, "DELETE FROM memento WHERE uri_r = 'http://www.example.org/three'");
  const silent = await verifyFolder(a);
  t.ok(
    silent.problems.includes('log 2025 entry 2: its text is erased, but no purge entry names it (a removal the log does not record)'),
    silent.problems.join(' | '),
  );
});

t.test('purge appends a purge entry per removed capture entry; the tree only grows; the purged proof is 404', async (t) => {
  const a = await threeCaptures(t);
  const before = await headOfSize(a, 3);
  const proof = JSON.parse((await request(`${a.url}/2025/proof/${ts14(DATES[1])}/${URIS[1]}`)).text) as { leaf_index: number; leaf: Record<string, string> };
  const removedText = `${proof.leaf.uri}\n${proof.leaf.datetime}\n${proof.leaf.record_id}\n${proof.leaf.digest}\nvia ${proof.leaf.via}`;
  await a.close(true);
  const report = await purge(purgeTarget(a.config, new FolderWarcStore(path.join(a.dataDir, 'warcs'))), purgeSelection({ url: URIS[1] }) as PurgeSelection);
  t.equal(report.logEntries, 1, 'one purge entry');
  const leaves = await sql(a.dataDir, 'SELECT leaf_index, leaf_hash, kind, leaf_text, urlkey FROM log_leaf ORDER BY leaf_index');
  t.equal(leaves.length, 4);
  const removed = leaves[proof.leaf_index];
  t.equal(removed.leaf_text, null, 'the removed entry has lost its text');
  t.equal(removed.urlkey, null, 'and its key');
  t.same(removed.leaf_hash, sha(Buffer.of(0), Buffer.from(removedText)), 'but keeps its leaf hash');
  const entry = leaves[3];
  t.equal(entry.kind, 'purge');
  t.match(
    entry.leaf_text,
    new RegExp(`^purge\\n\\d{14}\\n${proof.leaf_index}\\n${(removed.leaf_hash as Buffer).toString('base64').replace(/[+/]/g, '\\$&')}$`),
  );
  t.same(entry.leaf_hash, sha(Buffer.of(0), Buffer.from(entry.leaf_text as string)));
  const hashes = leaves.map((l) => l.leaf_hash as Buffer);
  t.equal(mth(hashes.slice(0, 3)).toString('base64'), before.root_hash, 'the first three entries still make the old root');

  t.teardown(() => rmSync(a.dataDir, { recursive: true, force: true }));
  const b = await startArchive(TWO_ARCHIVES, { dataDir: a.dataDir });
  const after = await headOfSize(b, 4);
  t.equal(after.root_hash, mth(hashes).toString('base64'), 'the new head covers the purge entry');
  const c = JSON.parse((await request(`${b.url}/2025/log/consistency?first=3&second=4`)).text) as { proof: string[] };
  t.ok(c.proof.length > 0, 'a consistency proof from the old tree to the new one');
  const gone = await request(`${b.url}/2025/proof/${ts14(DATES[1])}/${URIS[1]}`);
  t.equal(gone.status, 404, 'the purged memento has no proof');
  t.equal((await request(`${b.url}/2025/memento/${ts14(DATES[1])}id_/${URIS[1]}`)).status, 404, 'like the memento');
  t.equal((await request(`${b.url}/2025/proof/${ts14(DATES[0])}/${URIS[0]}`)).status, 200, 'the others are still proved');
  await b.close(true);
  const v = await verifyFolder(b);
  t.same(v.problems, [], 'verify passes after the purge');
});
