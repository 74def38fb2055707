/**
 * Revisits read back from the WARC files (docs/storage.md "Revisits"):
 * crash recovery of a revisit in the WARC tail, `reindex` of an archive
 * with revisits (the same rows as ingest wrote, an original in another
 * archive's files included), and `verify` (revisit records accepted; a
 * revisit whose original is missing fails).
 */
import { appendFileSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import sqlite3 from 'sqlite3';
import t from 'tap';
import { IndexDb } from '../../archive/store/index/index-db.js';
import { verify } from '../../archive/store/upkeep/maintenance.js';
import { ArchiveStore } from '../../archive/store/store.js';
import { encodeRevisit } from '../../archive/store/warcs/warc-writer.js';
import { captureRecord, NEW_SORTS_BEFORE_OLD, putCapture, request, startArchive } from '../helpers/archive.js';
import { until } from '../helpers/until.js';
import { runCli, writeConfig } from './helpers.js';

const BODY = '<html><body>unchanged for days</body></html>';
const served = (target: string, date: string, body = BODY) =>
  captureRecord({ target, date, body, responseHeaders: [['Content-Type', 'text/html']], requestHeaders: [['X-Client-IP', '192.0.2.9']] });

function sql(file: string, statement: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const db = new sqlite3.Database(file, (err) => {
      if (err) return reject(err);
      db.run(statement, (e) => db.close(() => (e ? reject(e) : resolve())));
    });
  });
}

t.test('recovery: a revisit pair in the WARC tail, written but never indexed, is indexed with its original; without an index, both are', async (t) => {
  const a = await startArchive();
  const dataDir = a.dataDir;
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  t.equal((await putCapture(a, '', served('/p', 'Thu, 01 Jan 2026 00:00:00 GMT'))).status, 201);
  t.equal((await putCapture(a, '', served('/p', 'Fri, 02 Jan 2026 00:00:00 GMT'))).status, 201, 'a revisit');
  const rowsBefore = await a.store.index.dump();
  await a.close(true);
  const indexFile = path.join(dataDir, 'index.sqlite3');

  // The crash came after the revisit's fsync, before its index commit.
  await sql(indexFile, 'DELETE FROM memento WHERE refers_to IS NOT NULL');
  let lines: string[] = [];
  let store = await ArchiveStore.open(a.config, { log: (l) => lines.push(l) });
  t.match(lines.join('\n'), /indexed 1 complete capture/, 'logged');
  t.same(await store.index.dump(), rowsBefore, 'the revisit row is back, referring to the original');
  t.ok((await verify(store.index, store.warcsDir)).ok, 'verify passes');
  await store.close();

  for (const f of ['index.sqlite3', 'index.sqlite3-wal', 'index.sqlite3-shm']) rmSync(path.join(dataDir, f), { force: true });
  lines = [];
  store = await ArchiveStore.open(a.config, { log: (l) => lines.push(l) });
  t.match(lines.join('\n'), /indexed 2 complete capture/);
  t.same(await store.index.dump(), rowsBefore, 'from the WARC file alone: the same two rows');
  await store.close();
});

t.test('reindex: an archive with revisits (one across archives, one of a revisit) gives the same rows and the same answers', async (t) => {
  const { dir, config, dataDir } = writeConfig();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  let a = await startArchive(NEW_SORTS_BEFORE_OLD, { dataDir });
  const puts: [string, string, number][] = [
    ['/x', 'Wed, 31 Dec 2025 00:00:00 GMT', 201], // "old"
    ['/y', 'Wed, 31 Dec 2025 00:00:00 GMT', 201],
    ['/x', 'Thu, 01 Jan 2026 00:00:00 GMT', 201], // a revisit in "new" of the response in "old"
    ['/x', 'Thu, 01 Jan 2026 06:00:00 GMT', 200], // a duplicate of the revisit
    ['/x', 'Fri, 02 Jan 2026 00:00:00 GMT', 201], // a revisit after a revisit
    ['/y', 'Sat, 03 Jan 2026 00:00:00 GMT', 201],
  ];
  for (const [target, date, status] of puts) t.equal((await putCapture(a, '', served(target, date))).status, status, `${target} ${date}`);
  t.equal((await putCapture(a, '', served('/y', 'Sun, 04 Jan 2026 00:00:00 GMT', 'changed'))).status, 201, 'a changed page: a response');
  t.equal(a.store.stats.revisits, 3);
  const ask = async (base: string) => {
    const out: string[] = [];
    for (const u of ['http://www.example.org/x', 'http://www.example.org/y']) {
      for (const id of ['old', 'new']) out.push((await request(`${base}/${id}/timemap/link/${u}`)).text.replaceAll(base, 'BASE'));
      for (const ts of ['20260101000000', '20260102000000', '20260103000000']) {
        const m = await request(`${base}/new/memento/${ts}id_/${u}`);
        out.push(`${m.status} ${m.headers['memento-datetime']} ${m.headers['x-archive-orig-date']} ${m.text.replaceAll(base, 'BASE')}`);
      }
    }
    return out;
  };
  const before = await ask(a.url);
  const rowsBefore = await a.store.index.dump();
  t.equal(rowsBefore.filter((r) => r.refers_to !== null).length, 3);
  t.same(
    rowsBefore.filter((r) => r.refers_to !== null).map((r) => r.refers_to),
    ['old 1767139200 http://www.example.org/x', 'old 1767139200 http://www.example.org/x', 'old 1767139200 http://www.example.org/y'],
    'each revisit names its response (never a revisit), across archives',
  );
  // The size and root of the checkpoint of "new"'s whole log (4 entries), which a daemon running for a second or more publishes
  // (the origin names the listening port): the log reindex rebuilds must have the same entries in the same order, or the
  // anchor beside the key stops the restart ("the log was rewritten").
  const checkpoint = async (base: string) => {
    let text = '';
    await until(
      async () => {
        const c = await request(`${base}/new/tlog/checkpoint`);
        text = c.status === 200 ? c.text.split('\n').slice(1, 3).join('\n') : '';
        return text.split('\n')[0] === '4';
      },
      20_000,
      'a checkpoint of size 4 of new',
    );
    return text;
  };
  const published = await checkpoint(a.url);
  await a.close(true);

  rmSync(path.join(dataDir, 'index.sqlite3'));
  const r = await runCli(['reindex', '--config', config]);
  t.equal(r.code, 0, r.stdout + r.stderr);
  t.match(r.stdout, /reindex: 6 mementos/);
  a = await startArchive(NEW_SORTS_BEFORE_OLD, { dataDir });
  t.teardown(() => a.close(true));
  t.same(await a.store.index.dump(), rowsBefore, 'the same index rows, revisits and what they refer to included');
  t.same(await ask(a.url), before, 'the same TimeMaps and Mementos');
  t.equal(await checkpoint(a.url), published, 'the same log: its checkpoint of 4 entries has the root published before');
  const v = await runCli(['verify', '--config', config]);
  t.equal(v.code, 0, v.stdout + v.stderr);
});

t.test('verify: a revisit whose original is missing fails; reindex leaves out a revisit that names no stored response', async (t) => {
  const { dir, config, dataDir } = writeConfig();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const a = await startArchive(NEW_SORTS_BEFORE_OLD, { dataDir });
  t.equal((await putCapture(a, '', served('/z', 'Thu, 01 Jan 2026 00:00:00 GMT'))).status, 201);
  t.equal((await putCapture(a, '', served('/z', 'Fri, 02 Jan 2026 00:00:00 GMT'))).status, 201);
  await a.close(true);
  const ok = await runCli(['verify', '--config', config]);
  t.equal(ok.code, 0, ok.stdout + ok.stderr);
  t.match(ok.stdout, /verify: OK: 2 index rows, 5 WARC records/, "the revisit record is accepted (its payload digest is its original's)");

  // A revisit naming a capture that was never stored, appended to the file (as another tool might write it).
  const wdir = path.join(dataDir, 'warcs', 'new');
  const file = path.join(wdir, readdirSync(wdir)[0]);
  const sizeBefore = readFileSync(file).length;
  const orphan = encodeRevisit(
    {
      uriR: 'http://www.example.org/orphan',
      datetime: new Date('2026-01-03T00:00:00Z'),
      requestHead: Buffer.from('GET /orphan HTTP/1.1\r\nHost: www.example.org\r\n\r\n'),
      responseHead: Buffer.from('HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n'),
      payloadDigest: 'sha256:' + '0'.repeat(64),
      original: { uriR: 'http://www.example.org/never', datetime: new Date('2026-01-01T00:00:00Z') },
    },
    6,
  );
  appendFileSync(file, Buffer.concat([orphan.response, orphan.request]));
  const re = await runCli(['reindex', '--config', config]);
  t.equal(re.code, 0, re.stdout + re.stderr);
  t.match(re.stdout + re.stderr, new RegExp(`:${sizeBefore}: revisit record of http://www\\.example\\.org/orphan names no stored response`), 'reported');
  t.match(re.stdout, /reindex: 2 mementos/, 'no row for it');

  // The original's row goes (as a purge by hand might leave it): the revisit refers to nothing.
  await sql(path.join(dataDir, 'index.sqlite3'), 'DELETE FROM memento WHERE refers_to IS NULL');
  const index = await IndexDb.open(path.join(dataDir, 'index.sqlite3'));
  const v = await verify(index, path.join(dataDir, 'warcs'));
  await index.close();
  t.notOk(v.ok, 'verify fails');
  t.match(v.problems.join('\n'), /revisit of row \d+, which is missing from the index/);
  const bad = await runCli(['verify', '--config', config]);
  t.equal(bad.code, 1);
});
