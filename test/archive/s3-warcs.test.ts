/**
 * WARC files in an S3-compatible bucket (`storage.warcs: s3://…`,
 * docs/scale-out.md): each batch of the write queue is one object under
 * `<prefix><replica>/`, uploaded before the PUT is answered; a large
 * capture is streamed into an object of its own; records are read back by
 * byte range; verify and reindex list and scan the bucket. Against s3rver
 * in this process.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DeleteObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { WARCParser } from 'warcio';
import t from 'tap';
import { until } from '../helpers/until.js';
import { runPurge } from '../../archive/commands/purge.js';
import { validateArchiveConfig } from '../../archive/config.js';
import { reindex, verify } from '../../archive/store/upkeep/maintenance.js';
import { parseYamlText } from '#shared/config.js';
import { IndexDb } from '../../archive/store/index/index-db.js';
import { S3WarcStore } from '../../archive/store/warcs/s3-warcs.js';
import { captureRecord, putCapture, request, startArchive, type TestArchive, TWO_ARCHIVES } from '../helpers/archive.js';
import { startDaemon } from '../helpers/daemons.js';
import { startS3, type TestS3 } from '../helpers/s3.js';
import { writeConfig } from './helpers.js';

const JAN1 = 'Thu, 01 Jan 2026 00:00:00 GMT';
const JAN2 = 'Fri, 02 Jan 2026 00:00:00 GMT';

/** Every object key under `prefix`. */
async function keys(s3: TestS3, prefix: string): Promise<string[]> {
  const r = await s3.client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: prefix }));
  return (r.Contents ?? []).map((o) => o.Key!).sort();
}

/** An archive whose WARC files are under `s3://warcs/<prefix>`, written as `replica`. */
function startS3Archive(s3: TestS3, prefix = 'archive/', replica = 'r1'): Promise<TestArchive> {
  return startArchive(TWO_ARCHIVES + s3.storageYaml(prefix, replica));
}

/** The WARC records of an object (read with warcio, as any WARC tool would): type and target URI. */
async function objectRecords(s3: TestS3, key: string) {
  const out: { type: string; target: string }[] = [];
  for await (const rec of new WARCParser([await s3.get(key)])) {
    await rec.readFully(false);
    out.push({ type: rec.warcType ?? '', target: rec.warcTargetURI ?? '' });
  }
  return out;
}

t.test('S3: a small and a 24 MiB capture are stored as objects, read back byte for byte (id_), listed in the TimeMap; nothing in warcs/', async (t) => {
  const s3 = await startS3();
  t.teardown(() => s3.close());
  const a = await startS3Archive(s3);
  t.teardown(() => a.close());

  const small = await putCapture(a, 'http://www.example.org/small', captureRecord({ target: '/small', date: JAN1, body: 'small page' }));
  t.equal(small.status, 201, 'small capture stored');
  const bigBody = randomBytes(24 * 1024 * 1024);
  const big = await putCapture(
    a,
    'http://www.example.org/big',
    captureRecord({ target: '/big', date: JAN1, body: bigBody, responseHeaders: [['Content-Type', 'application/octet-stream']] }),
  );
  t.equal(big.status, 201, 'big capture stored');

  const objects = await keys(s3, 'archive/');
  t.equal(objects.length, 2, 'two objects: the small capture’s batch, the big capture’s own');
  for (const k of objects)
    t.match(k, /^archive\/r1\/current-\d{14}-\d{5}-[0-9a-f]{16}\.warc\.gz$/, `${k}: <prefix><replica>/<archive>-<time>-<serial>-<random>.warc.gz`);
  const types = await objectRecords(s3, objects[0]);
  t.same(
    types.map((r) => r.type),
    ['warcinfo', 'response', 'request'],
    'an object is a WARC file: warcinfo, then the record pair',
  );
  t.same(readdirSync(path.join(a.dataDir, 'warcs')), [], 'no WARC file in the data folder');

  const rawSmall = await request(`${a.url}/current/memento/20260101000000id_/http://www.example.org/small`);
  t.equal(rawSmall.status, 200);
  t.equal(rawSmall.text, 'small page', 'small body read back');
  const rawBig = await request(`${a.url}/current/memento/20260101000000id_/http://www.example.org/big`);
  t.equal(rawBig.status, 200);
  t.ok(rawBig.body.equals(bigBody), 'big body read back byte for byte (a streamed ranged GET)');

  const row = (await a.store.index.dump()).find((r) => r.uri_r === 'http://www.example.org/big')!;
  t.ok(objects.includes(`archive/${row.warc_file}`), 'warc_file is the object key after the prefix');

  const tm = await request(`${a.url}/current/timemap/link/http://www.example.org/small`);
  t.equal(tm.status, 200);
  t.match(tm.text, '/current/memento/20260101000000/http://www.example.org/small', 'TimeMap lists the memento');
  // The full-text indexer reads the small page's record from the bucket (a ranged GET of its raw bytes).
  await until(async () => (await a.app.textIndexer.drained(), (await a.store.index.text!.count()) >= 1), 20_000, 'the small page’s text is stored');
  t.equal(a.app.textIndexer.stats.failed, 0, 'the text indexer read its record from the bucket');

  const v = await verify(a.store.index, a.store.warcs);
  t.ok(v.ok, `verify passes on the bucket: ${v.problems.join('; ')}`);
  t.equal(v.rows, 2);
  t.equal(v.files, 2);
});

t.test('S3: an upload that fails (the server stopped) answers 503 and leaves no index row', async (t) => {
  const s3 = await startS3();
  t.teardown(() => s3.close());
  const a = await startS3Archive(s3);
  t.teardown(() => a.close());
  t.equal((await putCapture(a, '', captureRecord({ target: '/one', date: JAN1 }))).status, 201);
  await s3.stop();
  const r = await putCapture(a, '', captureRecord({ target: '/two', date: JAN1 }));
  t.equal(r.status, 503, 'not acknowledged');
  t.match(r.text, `the WARC store s3://${s3.bucket}/archive/ did not take the capture`, 'the answer names the store');
  t.equal(r.headers['retry-after'], '5');
  t.same(
    (await a.store.index.dump()).map((x) => x.uri_r),
    ['http://www.example.org/one'],
    'only the acknowledged capture has an index row',
  );
  const read = await request(`${a.url}/current/memento/20260101000000id_/http://www.example.org/one`);
  t.equal(read.status, 503, 'a read the store cannot answer: 503');
  const big = await putCapture(a, '', captureRecord({ target: '/big', date: JAN1, body: randomBytes(3 * 1024 * 1024) }));
  t.equal(big.status, 503, 'a streamed capture whose upload fails: 503 too');
  const huge = await putCapture(a, '', captureRecord({ target: '/huge', date: JAN1, body: randomBytes(20 * 1024 * 1024) }));
  t.equal(huge.status, 503, 'one of several upload parts: 503, and the write queue goes on');
  t.equal(await a.store.index.count(), 1, 'still one row');
});

t.test('S3: verify fails on a changed byte and lists an orphan object; reindex from the bucket gives the same rows', async (t) => {
  const s3 = await startS3();
  t.teardown(() => s3.close());
  const a = await startS3Archive(s3);
  t.teardown(() => a.close());
  for (const p of ['a', 'b', 'c']) t.equal((await putCapture(a, '', captureRecord({ target: `/${p}`, date: JAN1, body: `page ${p}` }))).status, 201);
  const rows = await a.store.index.dump();
  const objects = await keys(s3, 'archive/');
  t.equal(objects.length, 3, 'one object per batch (the PUTs came one after another)');

  // An object whose records no row names: a batch uploaded by a replica killed before its index commit.
  const orphan = 'archive/r2/current-20260101000000-00000-abcdef.warc.gz';
  await s3.put(orphan, await s3.get(objects[0]));
  let v = await verify(a.store.index, a.store.warcs);
  t.ok(v.ok, 'an orphan is not a problem');
  t.same(v.orphans, ['r2/current-20260101000000-00000-abcdef.warc.gz'], 'verify lists the orphan');

  const fresh = mkdtempSync(path.join(os.tmpdir(), 's3-reindex-'));
  t.teardown(() => rmSync(fresh, { recursive: true, force: true }));
  await s3.client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: orphan }));
  const store = new S3WarcStore(a.config.warcStore!);
  t.teardown(() => store.close());
  const rep = await reindex(path.join(fresh, 'index.sqlite3'), store);
  t.same(rep.skipped, []);
  const again = await IndexDb.open(path.join(fresh, 'index.sqlite3'));
  t.same(await again.dump(), rows, 'reindex from the bucket: the same rows (URI-R, datetime, digest, WARC object, offset, length)');
  await again.close();

  const victim = objects[1];
  const bytes = await s3.get(victim);
  bytes[bytes.length - 20] ^= 0xff;
  await s3.put(victim, bytes);
  v = await verify(a.store.index, a.store.warcs);
  t.notOk(v.ok, 'verify fails after one changed byte');
  t.match(v.problems.join('\n'), victim.slice('archive/'.length), 'the problem names the object');
});

t.test('S3: a revisit record in one object, its original read from another', async (t) => {
  const s3 = await startS3();
  t.teardown(() => s3.close());
  const a = await startS3Archive(s3);
  t.teardown(() => a.close());
  const served = (date: string) =>
    captureRecord({
      target: '/r',
      date,
      body: 'the same page',
      responseHeaders: [
        ['Content-Type', 'text/html'],
        ['X-Served', date],
      ],
    });
  t.equal((await putCapture(a, '', served(JAN1))).status, 201, 'original');
  t.equal((await putCapture(a, '', served(JAN2))).status, 201, 'a day later: a revisit');
  const [orig, rev] = (await a.store.index.dump()).sort((x, y) => x.datetime - y.datetime);
  t.not(rev.warc_file, orig.warc_file, 'the revisit record is in another object');
  t.same(
    (await objectRecords(s3, `archive/${rev.warc_file}`)).map((r) => r.type),
    ['warcinfo', 'revisit', 'request'],
    'its object holds a revisit record pair',
  );
  const m = await request(`${a.url}/current/memento/20260102000000id_/http://www.example.org/r`);
  t.equal(m.status, 200);
  t.equal(m.text, 'the same page', "the revisit's body: its original's payload");
  t.equal(m.headers['x-archive-orig-x-served'], JAN2, 'its headers: as served at the revisit');
  const v = await verify(a.store.index, a.store.warcs);
  t.ok(v.ok, `verify passes: ${v.problems.join('; ')}`);
});

t.test('S3 settings: storage.warcs checked, replica defaults to <host name>-<port>; purge erases from a bucket (the object replaced)', async (t) => {
  const conf = (storage: string) =>
    validateArchiveConfig(parseYamlText(`listen: 127.0.0.1:8090\ndata_dir: /tmp/none\narchives:\n  - id: a\nstorage:\n${storage}`, '/tmp/none/archive.yaml'));
  const c = conf('  warcs: s3://my-bucket/some/prefix\n  s3:\n    endpoint: http://127.0.0.1:9000/\n    force_path_style: true\n');
  t.same(c.warcStore, {
    bucket: 'my-bucket',
    prefix: 'some/prefix/',
    endpoint: 'http://127.0.0.1:9000',
    region: 'us-east-1',
    forcePathStyle: true,
    replica: `${os
      .hostname()
      .replace(/[^A-Za-z0-9._-]/g, '_')
      .slice(0, 50)}-8090`,
  });
  t.equal(conf('  warcs: folder\n').warcStore, undefined, 'folder: the default');
  t.throws(() => conf('  warcs: http://bucket/\n'), /storage\.warcs must be folder or a URL like s3:\/\/bucket\/prefix\/, not "http:\/\/bucket\/"/);
  t.throws(() => conf('  warcs: s3://b/\n'), /storage\.warcs must be/, 'a bucket name of one letter');
  t.throws(() => conf('  replica: a/b\n'), /storage\.replica must be 1 to 64 letters/);

  const s3 = await startS3();
  t.teardown(() => s3.close());
  const a = await startS3Archive(s3);
  let open = true;
  t.teardown(() => (open ? a.close() : undefined));
  t.equal((await putCapture(a, '', captureRecord({ target: '/x', date: JAN1 }))).status, 201);
  t.equal((await putCapture(a, '', captureRecord({ target: '/y', date: JAN1, body: 'page y' }))).status, 201);
  const before = await keys(s3, 'archive/');
  await t.rejects(
    runPurge(a.config, { url: 'http://www.example.org/x' }),
    { status: 1, message: /; stop it before purge$/ },
    'purge while the daemon holds the data folder: an operator error, exit status 1',
  );
  t.same(await keys(s3, 'archive/'), before, 'nothing erased');
  await a.close(true);
  open = false;
  t.teardown(() => rmSync(a.dataDir, { recursive: true, force: true }));
  t.equal(await runPurge(a.config, { url: 'http://www.example.org/x' }), 0, 'purge: exit status 0');
  const after = await keys(s3, 'archive/');
  t.equal(after.length, before.length - 1, "/x's object (nothing but its warcinfo left) is deleted");
  t.same(
    (await objectRecords(s3, after[0])).map((r) => r.target),
    ['', 'http://www.example.org/y', 'http://www.example.org/y'],
    "/y's object stays",
  );
});

t.test('S3: captures acknowledged by a daemon killed with SIGKILL, its data folder lost, are all in the bucket: reindexed and read by another', async (t) => {
  const s3 = await startS3();
  t.teardown(() => s3.close());
  const { dir, config } = writeConfig(s3.storageYaml('archive/', 'killed'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const d = await startDaemon('memento-archive.js', ['--config', config]);
  t.teardown(() => d.stop());
  const bodies = ['one', 'two', 'three'].map((n) => `page ${n} `.repeat(50));
  const answers = await Promise.all(bodies.map((b, i) => putCapture(d, '', captureRecord({ target: `/k${i}`, date: JAN1, body: b }))));
  t.same(
    answers.map((x) => x.status),
    [201, 201, 201],
    'acknowledged',
  );
  const exited = new Promise((r) => d.proc.once('exit', r));
  d.proc.kill('SIGKILL');
  await exited;
  rmSync(dir, { recursive: true, force: true });

  // Another replica: its own (empty) data folder, an index rebuilt from the bucket.
  const other = mkdtempSync(path.join(os.tmpdir(), 's3-other-'));
  const store = new S3WarcStore({ bucket: s3.bucket, prefix: 'archive/', endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, replica: 'other' });
  t.teardown(() => store.close());
  const rep = await reindex(path.join(other, 'index.sqlite3'), store);
  t.equal(rep.rows, 3, 'three mementos in the bucket');
  const b = await startArchive(TWO_ARCHIVES + s3.storageYaml('archive/', 'other'), { dataDir: other });
  t.teardown(async () => {
    await b.close();
    rmSync(other, { recursive: true, force: true });
  });
  for (const [i, body] of bodies.entries()) {
    const m = await request(`${b.url}/current/memento/20260101000000id_/http://www.example.org/k${i}`);
    t.equal(m.text, body, `/k${i} read back by the other daemon`);
  }
});
