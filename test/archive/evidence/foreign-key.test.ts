/**
 * One log, one key (archive/evidence/tree-heads.ts): a daemon that finds
 * the newest head of its log signed with another key (another replica,
 * given another `signing_key_file`, signed first) stops signing that log,
 * serves none of its heads beside its own public key (503 with the
 * reason), and `/healthz` says 503 with the same reason. The other
 * replica is played by a head written into the log with another key.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { openSigningKey } from '../../../archive/evidence/signing-key.js';
import { foreignKeyProblem, headSignatureOk, TreeHeadSigner } from '../../../archive/evidence/tree-heads.js';
import { IndexDb } from '../../../archive/store/index/index-db.js';
import { captureRecord, putCapture, request, startArchive } from '../../helpers/archive.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'foreign-key-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const otherKey = openSigningKey(path.join(dir, 'other.pem'));

t.test('a head of the log signed with another key: no head served (503 with the reason), /healthz 503, no head signed after it', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  t.equal((await putCapture(a, '', captureRecord({ target: '/one', date: 'Thu, 01 Jan 2026 00:00:00 GMT' }))).status, 201);
  const own = await request(`${a.url}/current/log`);
  t.equal(own.status, 200, 'the head this daemon signed');
  const ownHead = JSON.parse(own.text) as { tree_size: number; public_key: string };
  t.equal(ownHead.public_key, a.app.treeHeads.key.publicKeyBase64);

  // Another replica of the archive, with another key, signs a newer head.
  const log = a.store.index.log;
  await log.addHead({
    archive_id: 'current',
    tree_size: 1000,
    root_hash: Buffer.alloc(32, 7),
    timestamp: Date.now(),
    signature: otherKey.sign('another replica'),
    origin: null,
  });
  const reason =
    "the evidence log of archive current has a tree head (size 1000) signed with another key than this daemon's signing_key_file: it neither signs nor serves that log; give every daemon of the archive the same signing_key_file and restart this one";

  const newest = await request(`${a.url}/current/log`);
  t.equal(newest.status, 503, '/log: no head beside a public key that did not sign it');
  t.equal(newest.text, reason + '\n');
  t.equal((await request(`${a.url}/current/log?tree_size=1000`)).status, 503, 'nor that head by its size');
  t.equal((await request(`${a.url}/current/log?tree_size=${ownHead.tree_size}`)).status, 200, 'a head this key signed is still served');
  t.equal((await request(`${a.url}/current/proof/20260101000000/http://www.example.org/one`)).status, 503, 'no proof in a head of another key');

  const end = performance.now() + 10_000;
  let health = await request(`${a.url}/healthz`);
  while (health.status === 200 && performance.now() < end) health = await request(`${a.url}/healthz`);
  t.equal(health.status, 503, '/healthz: 503');
  t.equal(health.text, `index: ok\nwarcs: ok\nlog: ${reason}\n`);

  const before = (await log.heads('current')).length;
  t.equal((await putCapture(a, '', captureRecord({ target: '/two', date: 'Thu, 01 Jan 2026 00:00:01 GMT' }))).status, 201, 'captures are still taken');
  await t.rejects(a.app.treeHeads.newest('current'), { status: 503, message: reason }, 'asked for a head: none signed');
  t.equal((await log.heads('current')).length, before, 'no head signed after the foreign one');
  t.equal(a.app.treeHeads.problem, reason);
});

t.test('two signers on one log, one key each: the first to sign keeps the log; the other refuses to sign or serve, and says why', async (t) => {
  const index = await IndexDb.open(path.join(dir, 'index.sqlite3'));
  t.teardown(() => index.close());
  const first = new TreeHeadSigner(index.log, openSigningKey(path.join(dir, 'first.pem')), ['current']);
  const second = new TreeHeadSigner(index.log, otherKey, ['current']);
  // Both start on an empty log: neither is refused.
  await first.checkKey('first.pem');
  await second.checkKey('other.pem');
  const head = await first.newest('current');
  t.ok(headSignatureOk(head, first.key.publicKeyDer), 'the first signs the empty log');
  t.equal(first.problem, undefined);
  await t.rejects(second.newest('current'), { status: 503, message: /signed with another key than this daemon's signing_key_file/ });
  t.match(second.problem, /^the evidence log of archive current has a tree head \(size 0\) signed with another key/);
  t.equal((await index.log.heads('current')).length, 1, 'the second signed nothing');
  t.equal(foreignKeyProblem('current', head, first.key), undefined);
  await t.rejects(
    second.checkKey('other.pem'),
    { message: /^other\.pem: the evidence log of archive current was signed with another key/ },
    'at a restart, it would not start',
  );
});
