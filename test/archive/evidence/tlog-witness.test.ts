/**
 * Two archives and a witness on loopback (docs/evidence.md "Witnesses"):
 * the real `memento-archive witness` and a local RFC 3161 authority
 * (`openssl ts`). Each archive's checkpoints are published only with the
 * witness's cosignature and a time-stamp token; a receipt checks offline
 * with `verify-receipt` (log key, witness key, the authority's CA, the
 * WARC record) and its token with `openssl ts -verify`. Then archive A's
 * log is cut back (database rows, the WARC tail and the anchor file all
 * gone, as a replica without the anchor would see it): the witness
 * refuses the smaller checkpoint, none is published, `verify` finds the
 * cut from the witness's checkpoint, and archive B goes on as before.
 */
import { execFile } from 'node:child_process';
import { createHash, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import sqlite3 from 'sqlite3';
import t from 'tap';
import { exactUrlkey } from '#shared/uri.js';
import { logVerifierKey } from '../../../archive/evidence/checkpoint.js';
import { formatVerifierKey } from '../../../archive/evidence/signed-note.js';
import { partsOf } from '../../conformance/helpers.js';
import { captureRecord, putCapture, request, startArchive, type TestArchive } from '../../helpers/archive.js';
import * as c2sp from '../../helpers/c2sp-verifier.js';
import { startTsa } from '../../helpers/tsa.js';
import { startWitness } from '../../helpers/witness.js';
import { runCli } from '../helpers.js';

const run = promisify(execFile);

/** Polls `check` until it gives a value; fails after `ms`. */
async function until<T>(what: string, check: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The published checkpoint of `archive` once it has `size` entries. */
const published = (a: TestArchive, archive: string, size: number) =>
  until(`${archive} checkpoint of ${size}`, async () => {
    const r = await request(`${a.url}/${archive}/tlog/checkpoint`);
    return r.status === 200 && r.text.split('\n')[1] === String(size) ? r.text : undefined;
  });

/** A data folder with a signing key made beforehand, so that the witness can be told the log's key before the archive starts. */
function keyedFolder(root: string, name: string): { dataDir: string; keyPem: string } {
  const dataDir = path.join(root, name);
  mkdirSync(dataDir, { recursive: true });
  const keyPem = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  writeFileSync(path.join(dataDir, 'log-signing-key.pem'), keyPem, { mode: 0o600 });
  return { dataDir, keyPem };
}

/** The log's verifier key (signed-note vkey) of `origin` for the PEM private key `keyPem`. */
const vkeyOf = (origin: string, keyPem: string) =>
  formatVerifierKey(logVerifierKey(origin, { publicKeyDer: createPublicKey(keyPem).export({ type: 'spki', format: 'der' }) }));

t.test('two archives, one witness, one time-stamping authority; a cut-back log is refused by the witness and found by verify', async (t) => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'tlog-witness-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const tsa = await startTsa();
  t.teardown(() => tsa.close());
  const A = keyedFolder(root, 'a');
  const B = keyedFolder(root, 'b');
  const logs = [
    ...['2025', 'current'].map((id) => ({ origin: `a.archive.test/${id}`, key: vkeyOf(`a.archive.test/${id}`, A.keyPem) })),
    ...['2025', 'current'].map((id) => ({ origin: `b.archive.test/${id}`, key: vkeyOf(`b.archive.test/${id}`, B.keyPem) })),
  ];
  const witness = await startWitness({ logs, quiet: true });
  t.teardown(() => witness.stop());
  const yaml = (host: string) => `base_url: http://${host}
witnesses:
  - name: ${witness.endpoint.name}
    url: ${witness.url}
    key: "${witness.vkey}"
witness_quorum: 1
tsa_url: ${tsa.url}
archives:
  - id: "2025"
    until: 2026-01-01T00:00:00Z
  - id: current
    from: 2026-01-01T00:00:00Z
`;
  // A's config as a file too, for the verify command.
  const configA = path.join(root, 'a.yaml');
  writeFileSync(configA, `listen: 127.0.0.1:0\ndata_dir: a\n${yaml('a.archive.test')}`, { mode: 0o600 });
  let a = await startArchive(yaml('a.archive.test'), { dataDir: A.dataDir });
  const b = await startArchive(yaml('b.archive.test'), { dataDir: B.dataDir });
  t.teardown(() => b.close(true));
  const put = (x: TestArchive, i: number) => {
    const u = `http://www.example.org/w${i}`;
    return putCapture(x, u, captureRecord({ ...partsOf(u), date: `Mon, 01 Jan 2001 00:00:0${i} GMT`, body: `w${i}` }));
  };
  for (let i = 0; i < 3; i++) t.equal((await put(a, i)).status, 201);
  for (let i = 0; i < 2; i++) t.equal((await put(b, i)).status, 201);
  const noteA = await published(a, '2025', 3);
  await published(b, '2025', 2);
  t.match(noteA, new RegExp(`\\n— ${witness.endpoint.name} `), "A's checkpoint carries the witness's cosignature");

  // The token, checked with openssl alone: over the checkpoint's note text, by the authority the CA vouches for.
  const tsr = await request(`${a.url}/2025/tlog/checkpoint.tsr`);
  t.equal(tsr.status, 200);
  writeFileSync(path.join(root, 'cp.tsr'), tsr.body);
  writeFileSync(path.join(root, 'note.txt'), noteA.slice(0, noteA.indexOf('\n\n') + 1));
  const ossl = await run('openssl', ['ts', '-verify', '-data', path.join(root, 'note.txt'), '-in', path.join(root, 'cp.tsr'), '-CAfile', tsa.caFile]);
  t.match(ossl.stdout, /Verification: OK/, 'openssl ts -verify: OK');

  // The independent verifier (test/helpers/c2sp-verifier.ts, from the specs alone): the signed note and the witness's cosignature,
  // the tiles, the entry bundle, the receipt offline, the RFC 3161 tokens.
  const logVk = c2sp.parseVkey(logs[0].key);
  const wVk = c2sp.parseVkey(witness.vkey);
  const cp = c2sp.verifyCheckpoint(noteA, logVk, [wVk], 'a.archive.test/2025');
  t.same(
    cp.cosigners.map((c) => c.name),
    [witness.endpoint.name],
    'c2sp-verifier: the checkpoint, signed by the log and cosigned by the witness',
  );
  t.same(await c2sp.rootFromTiles(`${a.url}/2025/tlog`, 3), cp.rootHash, 'c2sp-verifier: tiles → root');
  t.equal((await c2sp.fetchEntryBundle(`${a.url}/2025/tlog`, 0, 3)).filter((e) => !e.erased).length, 3, 'c2sp-verifier: entry bundle → leaf hashes');
  const noteText = Buffer.from(noteA.slice(0, noteA.indexOf('\n\n') + 1));
  t.ok((await c2sp.verifyTimestampToken(tsr.body, noteText, tsa.caPem)).time instanceof Date, 'c2sp-verifier: the RFC 3161 token');

  // A receipt, checked offline: the log's key, the witness's, the authority's CA, and the WARC record.
  const ts = '20010101000002';
  const u = 'http://www.example.org/w2';
  const receipt = await request(`${a.url}/2025/receipt/${ts}/${u}`);
  t.equal(receipt.status, 200);
  writeFileSync(path.join(root, 'w2.tlog-proof'), receipt.body);
  const offline = c2sp.verifyReceipt(receipt.text, logVk, { witnessKeys: [wVk], origin: 'a.archive.test/2025' });
  t.equal(offline.index, 2, 'c2sp-verifier: the receipt offline, with its cosignature');
  // Its time-stamp line (signature type 0xff: key ID over the name, 0x0A, 0xFF and the identifier): the DER response after the key ID.
  const line = c2sp
    .splitNote(receipt.text.slice(receipt.text.indexOf('\n\n') + 2))
    .lines.find((l) =>
      l.keyId.equals(createHash('sha256').update(`${l.name}\n`).update(Buffer.of(0xff)).update('rfc3161-timestamp-response').digest().subarray(0, 4)),
    )!;
  t.ok((await c2sp.verifyTimestampToken(line.signature, noteText, tsa.caPem)).time, "c2sp-verifier: the receipt's RFC 3161 token");
  writeFileSync(path.join(root, 'w2.warc'), (await request(`${a.url}/2025/record/${ts}/${u}`)).body);
  const args = ['verify-receipt', path.join(root, 'w2.tlog-proof'), '--key', logs[0].key, '--witness', witness.vkey, '--tsa-ca', tsa.caFile];
  const ok = await runCli([...args, '--record', path.join(root, 'w2.warc')]);
  t.equal(ok.code, 0, ok.stderr);
  t.match(ok.stdout, /: OK\n/);
  t.match(ok.stdout, `entry 2 of the log a.archive.test/2025`);
  t.match(ok.stdout, `witnesses: ${witness.endpoint.name} (1 needed)`);
  t.match(ok.stdout, /time-stamp: \d{4}-.* chained to --tsa-ca/);
  t.match(ok.stdout, /record: .* is the record the entry names/);
  const changed = receipt.body
    .toString()
    .replace(/^extra (.+)$/m, (_l, b64: string) => `extra ${Buffer.from(Buffer.from(b64, 'base64').toString().replace('w2', 'w9')).toString('base64')}`);
  writeFileSync(path.join(root, 'bad.tlog-proof'), changed);
  const bad = await runCli([...args.slice(0, 1), path.join(root, 'bad.tlog-proof'), ...args.slice(2)]);
  t.equal(bad.code, 1, 'a receipt of another entry text fails');
  t.match(bad.stderr, /FAILED: the inclusion proof does not take entry 2 to the checkpoint's root/);

  // verify, beside the running daemon: the checkpoints, their tokens, the anchor and the witness's checkpoint hold.
  const fine = await runCli(['verify', '--config', configA]);
  t.equal(fine.code, 0, fine.stdout);
  t.match(fine.stdout, /verify: OK: .* (\d+) published checkpoints \(\1 time-stamped\), 2 anchor\(s\), 2 witness checkpoint\(s\);/);
  // verify-receipt: a receipt checked with another log's key, and without arguments.
  const wrongKey = await runCli(['verify-receipt', path.join(root, 'w2.tlog-proof'), '--key', logs[2].key]);
  t.equal(wrongKey.code, 1);
  t.match(
    wrongKey.stderr,
    /^memento-archive: verify-receipt: .*w2\.tlog-proof: FAILED: its checkpoint: the checkpoint names the log a\.archive\.test\/2025, not b\.archive\.test\/2025\n$/,
  );
  const noFile = await runCli(['verify-receipt']);
  t.equal(noFile.code, 2);
  t.equal(noFile.stderr.trim().split('\n').length, 1, 'one line');

  // The cut: A stopped; its newest mementos and entries, their records, its checkpoints and its anchor gone.
  const kept = (await a.store.index.rowAt('2025', exactUrlkey('http://www.example.org/w1'), Date.parse('2001-01-01T00:00:01Z') / 1000))!;
  await a.close(true);
  const db = new sqlite3.Database(path.join(A.dataDir, 'index.sqlite3'));
  await new Promise<void>((resolve, reject) =>
    db.exec(
      `DELETE FROM memento WHERE archive_id = '2025' AND datetime >= ${kept.datetime};
       DELETE FROM log_leaf WHERE archive_id = '2025' AND leaf_index >= 1;
       DELETE FROM log_node WHERE archive_id = '2025';
       DELETE FROM log_head WHERE archive_id = '2025' AND tree_size > 1;
       DELETE FROM log_checkpoint WHERE archive_id = '2025';`,
      (err) => (err ? reject(err) : resolve()),
    ),
  );
  await new Promise<void>((r) => db.close(() => r()));
  truncateSync(path.join(A.dataDir, 'warcs', kept.warc_file), kept.warc_offset);
  rmSync(path.join(A.dataDir, 'log-signing-key.pem.checkpoints'), { recursive: true, force: true });
  a = await startArchive(yaml('a.archive.test'), { dataDir: A.dataDir });
  t.teardown(() => a.close(true));
  t.equal((await put(a, 5)).status, 201, 'a capture on the cut log (entry 1, another one)');
  const problem = await until('the witness refusing', async () => a.app.tlog.publisher.problems().find((p) => p.includes('larger than the log')));
  // The publisher may offer the cut log's head before the new capture (size 1) or after it (size 2): the witness refuses both.
  t.match(
    problem,
    new RegExp(`witness ${witness.endpoint.name.replace(/[.]/g, '\\.')} has cosigned a tree of 3 entries, larger than the log's [12]: the log was cut back`),
  );
  t.equal((await request(`${a.url}/2025/tlog/checkpoint`)).status, 404, 'no checkpoint of the cut log is published');
  t.equal((await request(`${a.url}/2025/receipt/20010101000005/http://www.example.org/w5`)).status, 404, 'and no receipt');

  const v = await runCli(['verify', '--config', configA]);
  t.equal(v.code, 1, 'verify fails');
  t.match(v.stdout, `problem: log 2025: the checkpoint witness ${witness.endpoint.name} last cosigned has 3 entries, the log 2: the log was cut back`);

  // B, witnessed by the same witness, goes on.
  t.equal((await put(b, 2)).status, 201);
  t.match(await published(b, '2025', 3), new RegExp(`\\n— ${witness.endpoint.name} `));
});
