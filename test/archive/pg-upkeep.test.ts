/**
 * The upkeep commands on the shared setup: an archive whose index is in
 * PostgreSQL (a throwaway server) and whose WARC files are in a bucket
 * (s3rver). `verify`, `cdxj`, `reindex`, `import` and `purge` run on it
 * as on one host; `purge` replaces the bucket's objects, and a purge
 * stopped at either side of its index commit is finished by the next one.
 * A PostgreSQL index that cannot be reached is one line and exit status 1.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import t from 'tap';
import { WARCRecord, WARCSerializer } from 'warcio';
import { PgIndex } from '../../archive/store/index/index-pg.js';
import { PURGE_MARKER_OBJECT } from '../../archive/store/upkeep/purge-objects.js';
import { ts14 } from '../conformance/helpers.js';
import { captureRecord, putCapture, request, startArchive, type TestArchive, TWO_ARCHIVES } from '../helpers/archive.js';
import { startPostgres } from '../helpers/postgres.js';
import { startS3, type TestS3 } from '../helpers/s3.js';
import { runCli, writeConfig } from './helpers.js';

const URI = 'http://www.example.org/page';
const DATES = ['Mon, 01 Jan 2001 00:00:00 GMT', 'Fri, 01 Jun 2001 12:00:00 GMT', 'Thu, 01 Jan 2026 10:00:00 GMT'];
const REVISIT = 'Sun, 03 Jun 2001 12:00:00 GMT';
const page = (date: string) => `<html><body>secret page of ${date}</body></html>`;

/** Three captures of /page (both archives), a revisit of the second, and /other. */
async function feed(a: TestArchive): Promise<number[]> {
  const out: number[] = [];
  const put = async (target: string, date: string, body: string) =>
    out.push((await putCapture(a, `http://www.example.org${target}`, captureRecord({ target, date, body }))).status);
  for (const d of DATES) await put('/page', d, page(d));
  await put('/page', REVISIT, page(DATES[1]));
  await put('/other', DATES[0], 'other page');
  return out;
}

/** Object keys under `prefix`. */
async function keys(s3: TestS3, prefix: string): Promise<string[]> {
  const r = await s3.client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: prefix }));
  return (r.Contents ?? []).map((o) => o.Key!).sort();
}

/** Every object under `prefix` inflated (each is gzip members one after another), as one text. */
async function everything(s3: TestS3, prefix: string): Promise<string> {
  let text = '';
  for (const k of await keys(s3, prefix)) if (k.endsWith('.warc.gz')) text += zlib.gunzipSync(await s3.get(k)).toString('latin1');
  return text;
}

/** The database's rows, as the index dumps them (ids left out). */
async function dump(url: string) {
  const index = await PgIndex.open(url);
  try {
    return await index.dump();
  } finally {
    await index.close();
  }
}

t.test('verify, cdxj, reindex, import and purge on a PostgreSQL index with WARC files in a bucket', async (t) => {
  const server = await startPostgres();
  t.teardown(() => server.stop());
  const db = await server.database('archive');
  const s3 = await startS3();
  t.teardown(() => s3.close());
  const storage = `storage:\n  index: ${db}\n${s3.storageYaml('shared/', 'web1').replace(/^storage:\n/, '')}`;
  const { dir, config, dataDir } = writeConfig(storage);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(dataDir);
  const a = await startArchive(storage + TWO_ARCHIVES, { dataDir });
  t.same(await feed(a), [201, 201, 201, 201, 201], 'new, new, new, revisit, new');
  await a.close();

  // A one-host archive with the same captures: the CDXJ to compare with.
  const lite = await startArchive();
  await feed(lite);
  await lite.close(true);
  t.teardown(() => rmSync(lite.dataDir, { recursive: true, force: true }));
  const liteConfig = path.join(lite.dataDir, 'archive.yaml');
  writeFileSync(liteConfig, `listen: 127.0.0.1:0\ndata_dir: ${JSON.stringify(lite.dataDir)}\n${TWO_ARCHIVES}`);

  const v = await runCli(['verify', '--config', config]);
  t.equal(v.code, 0, v.stdout + v.stderr);
  t.match(v.stdout, /^verify: OK: 5 index rows, 15 WARC records in 5 files/m);

  // Where a record is differs (an object per batch, gzip members of other sizes); what it is does not.
  const noFile = (cdxj: string) => cdxj.replace(/"(length|offset|filename)":"[^"]*"/g, '"$1":"…"');
  const cdxj = await runCli(['cdxj', '--config', config]);
  t.equal(cdxj.code, 0, cdxj.stderr);
  t.equal(cdxj.stderr, 'cdxj: 5 lines\n');
  t.equal(
    noFile(cdxj.stdout),
    noFile((await runCli(['cdxj', '--config', liteConfig])).stdout),
    'the same CDXJ as the one-host archive, but for where the records are',
  );
  t.match(cdxj.stdout, /"filename":"web1\/2025-\d{14}-\d+-[0-9a-f]+\.warc\.gz"/, 'the object names');

  const rows = await dump(db);
  const re = await runCli(['reindex', '--config', config]);
  t.equal(re.code, 0, re.stderr);
  t.equal(re.stdout, 'reindex: 5 mementos from 15 WARC records in 5 files (the old index had 5 rows)\n');
  t.same(await dump(db), rows, 'reindex: the same rows, revisit included (its original by archive, datetime, URI-R)');
  t.same(
    readdirSync(dataDir).filter((f) => f.includes('sqlite')),
    [],
    'no SQLite file left in the data folder',
  );

  // import: the WARC file of a one-host archive, into the shared setup.
  const other = await startArchive();
  t.equal((await putCapture(other, '', captureRecord({ target: '/imported', date: DATES[2], body: 'imported page' }))).status, 201);
  await other.close(true);
  t.teardown(() => rmSync(other.dataDir, { recursive: true, force: true }));
  const [file] = readdirSync(path.join(other.dataDir, 'warcs', 'current')).map((f) => path.join(other.dataDir, 'warcs', 'current', f));
  const imp = await runCli(['import', '--config', config, file]);
  t.equal(imp.code, 0, imp.stdout + imp.stderr);
  t.match(imp.stdout, /^import: 1 file, 3 WARC records .*: 1 new memento, 0 revisit mementos, 0 duplicates/m);
  t.equal((await dump(db)).filter((r) => r.uri_r === 'http://www.example.org/imported').length, 1, 'its row is in the database');
  t.equal((await keys(s3, 'shared/web1/')).length, 6, 'its records in a new object');

  // purge /page: its three captures and the revisit go from the objects and the database.
  const p = await runCli(['purge', '--config', config, '--url', URI]);
  t.equal(p.code, 0, p.stderr);
  t.match(p.stdout, /^purge: erased 4 capture\(s\) \(8 WARC record\(s\), \d+ index row\(s\)\) from \d+ WARC file\(s\)/m);
  t.notOk((await everything(s3, 'shared/')).includes('secret page'), 'no object holds a body of /page');
  t.same(await keys(s3, `shared/${PURGE_MARKER_OBJECT}`), [], 'no marker left');
  t.notOk(
    (await dump(db)).some((r) => r.uri_r === URI),
    'no row of /page',
  );
  const after = await runCli(['verify', '--config', config]);
  t.equal(after.code, 0, after.stdout);
  t.match(after.stdout, /^verify: OK: 2 index rows/m);
  const b = await startArchive(storage + TWO_ARCHIVES, { dataDir });
  t.teardown(() => b.close());
  t.equal((await request(`${b.url}/2025/timemap/link/${URI}`)).status, 404, '/page: no TimeMap');
  t.equal((await request(`${b.url}/2025/memento/${ts14(DATES[0])}id_/http://www.example.org/other`)).text, 'other page', '/other: served as before');
  t.equal((await request(`${b.url}/current/memento/${ts14(DATES[2])}id_/http://www.example.org/imported`)).text, 'imported page', '/imported: served');

  // import through the running daemon: a lone revisit record (another crawler's, naming only the payload digest)
  // resolves against the PostgreSQL index to /other's memento, and becomes a revisit memento with its body.
  const day = '2001-01-05T00:00:00Z';
  const revisit = WARCRecord.create(
    {
      url: 'http://www.example.org/other',
      date: day,
      type: 'revisit',
      warcVersion: 'WARC/1.1',
      statusline: 'HTTP/1.1 200 OK',
      httpHeaders: { 'Content-Type': 'text/html; charset=utf-8', Date: new Date(day).toUTCString() },
      warcHeaders: { 'WARC-Payload-Digest': 'sha256:' + createHash('sha256').update('other page').digest('hex') },
    },
    (async function* () {})(),
  );
  const lone = path.join(dir, 'revisit.warc.gz');
  writeFileSync(lone, await WARCSerializer.serialize(revisit, { gzip: true }));
  const via = await runCli(['import', '--config', config, '--daemon', b.url, lone]);
  t.equal(via.code, 0, via.stdout + via.stderr);
  t.match(via.stdout, /: 0 new mementos, 1 revisit memento, 0 duplicates, 1 revisit record resolved, .*; through the running daemon at /m);
  t.equal((await request(`${b.url}/2025/memento/20010105000000id_/http://www.example.org/other`)).text, 'other page', "the revisit serves its original's body");
});

t.test('purge in a bucket stopped before or after its index commit: the next purge finishes it', async (t) => {
  const server = await startPostgres();
  t.teardown(() => server.stop());
  const db = await server.database('archive');
  const s3 = await startS3();
  t.teardown(() => s3.close());
  const storage = `storage:\n  index: ${db}\n${s3.storageYaml('p/', 'web1').replace(/^storage:\n/, '')}`;
  const { dir, config, dataDir } = writeConfig(storage);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(dataDir);
  const a = await startArchive(storage + TWO_ARCHIVES, { dataDir });
  await feed(a);
  await a.close();
  const objects = (await keys(s3, 'p/web1/')).map((k) => k.slice('p/'.length));
  t.equal(objects.length, 5);

  // Stopped after uploading a replacement, before the commit: the index still names the old object; the replacement goes.
  const replacement = objects[0].replace(/-[0-9a-f]+\.warc\.gz$/, '-abcdef.warc.gz');
  await s3.put(`p/${replacement}`, await s3.get(`p/${objects[0]}`));
  await s3.put(`p/${PURGE_MARKER_OBJECT}`, Buffer.from(JSON.stringify({ objects: [{ old: objects[0], new: replacement }] })));
  let r = await runCli(['purge', '--config', config, '--url', 'http://www.example.org/nothing']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /a previous purge did not finish; its index change was not committed: its new objects are deleted \(1\)/);
  t.same(
    (await keys(s3, 'p/')).map((k) => k.slice(2)),
    objects,
    'the replacement and the marker are deleted, the old object stays',
  );

  // Stopped after the commit: no row names the old object (here: a copy of one); it goes.
  const stale = objects[1].replace(/-[0-9a-f]+\.warc\.gz$/, '-fedcba.warc.gz');
  await s3.put(`p/${stale}`, await s3.get(`p/${objects[1]}`));
  await s3.put(`p/${PURGE_MARKER_OBJECT}`, Buffer.from(JSON.stringify({ objects: [{ old: stale, new: objects[1] }] })));
  r = await runCli(['purge', '--config', config, '--url', 'http://www.example.org/nothing']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /its index change was committed: the old objects are deleted \(1\)/);
  t.same(
    (await keys(s3, 'p/')).map((k) => k.slice(2)),
    objects,
    'the old object and the marker are deleted',
  );
  const v = await runCli(['verify', '--config', config]);
  t.equal(v.code, 0, v.stdout);
});

t.test('with a PostgreSQL index that cannot be reached, the commands say so in one line (exit 1)', async (t) => {
  const { dir, config, dataDir } = writeConfig('storage:\n  index: postgres://archive:secret@127.0.0.1:1/archive\n');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(dataDir);
  const warc = path.join(dir, 'empty.warc');
  writeFileSync(warc, '');
  for (const command of [['verify'], ['reindex'], ['cdxj'], ['purge', '--url', 'http://example.org/'], ['import', warc]]) {
    const r = await runCli([...command, '--config', config]);
    t.equal(r.code, 1, `${command[0]}: exit status 1`);
    t.match(
      r.stderr,
      /^memento-archive: (purge: )?the index database postgres:\/\/archive:\*\*\*@127\.0\.0\.1:1\/archive: connect ECONNREFUSED[^\n]*\n$/,
      `${command[0]}: one line`,
    );
  }
});
