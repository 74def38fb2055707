/**
 * Issue 5, parts 1–3 and 6: durable acknowledgement with group commit, crash
 * recovery of a WARC tail, `verify`, `reindex`, and same-second captures.
 */

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import sqlite3 from 'sqlite3';
import t from 'tap';
import { IndexDb } from '../../archive/store/index/index-db.js';
import { verify } from '../../archive/store/upkeep/maintenance.js';
import { WarcWriter } from '../../archive/store/warcs/warc-writer.js';
import { captureRecord, putCapture, request, startArchive, TWO_ARCHIVES } from '../helpers/archive.js';
import { runCli, warcBytes, warcRecords, writeConfig } from './helpers.js';

function sql(file: string, statement: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const db = new sqlite3.Database(file, (err) => {
      if (err) return reject(err);
      db.run(statement, (e) => db.close(() => (e ? reject(e) : resolve())));
    });
  });
}

function idOf(uriM: string, base: string): string {
  return uriM.replace(/\/memento\/(\d{14})\//, '/memento/$1id_/').replace(/^http:\/\/[^/]+/, base);
}

const dated = (target: string, body: string | Buffer, date = 'Mon, 05 Jan 2026 10:00:00 GMT', extra: [string, string][] = []) =>
  captureRecord({ target, date, body, requestHeaders: extra, responseHeaders: [['Content-Type', 'text/plain']] });

t.test('group commit: 64 concurrent PUTs share fsyncs and transactions; every acknowledged capture is readable', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const bodies = Array.from({ length: 64 }, () => randomBytes(10_000));
  const answers = await Promise.all(bodies.map((b, i) => putCapture(a, `http://www.example.org/g${i}`, dated(`/g${i}`, b))));
  t.same(
    answers.map((r) => r.status),
    bodies.map(() => 201),
    'every PUT answered 201',
  );
  const s = a.store.stats;
  t.equal(s.written, 64);
  t.ok(s.batches < 64, `fewer batches (${s.batches}) than PUTs (64)`);
  t.ok(s.transactions <= s.batches, `one index transaction per batch at most (${s.transactions})`);
  t.ok(s.fsyncs < 64, `fewer WARC fsyncs (${s.fsyncs}) than PUTs`);
  for (const [i, r] of answers.entries()) {
    const m = await request(idOf(String(r.headers.location), a.url));
    if (!m.body.equals(bodies[i])) t.fail(`capture ${i} is not served byte-identical`);
  }
  t.equal(await a.store.index.count(), 64, '64 index rows');
});

t.test('a PUT is answered only after the WARC fsync and the index commit', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const events: string[] = [];
  let openSync!: () => void;
  const syncGate = new Promise<void>((r) => (openSync = r));
  const realSync = WarcWriter.prototype.sync;
  WarcWriter.prototype.sync = async function (this: WarcWriter) {
    events.push('sync called');
    await syncGate;
    await realSync.call(this);
    events.push('synced');
  };
  t.teardown(() => {
    WarcWriter.prototype.sync = realSync;
  });
  const realInsert = a.store.index.insertMany.bind(a.store.index);
  a.store.index.insertMany = async (rows) => {
    events.push('commit');
    await realInsert(rows);
    events.push('committed');
  };
  const put = putCapture(a, 'http://www.example.org/d', dated('/d', 'durable')).then((r) => {
    events.push(`answered ${r.status}`);
    return r;
  });
  while (!events.includes('sync called')) await new Promise((r) => setImmediate(r));
  // Give the server every chance to answer early: nothing may happen while fsync is blocked.
  for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
  t.same(events, ['sync called'], 'no answer and no commit while the fsync has not returned');
  openSync();
  const r = await put;
  t.equal(r.status, 201);
  t.same(events, ['sync called', 'synced', 'commit', 'committed', 'answered 201'], 'fsync, then commit, then the answer');
});

t.test('a batch whose index commit fails is answered 500 and leaves no record behind; the next PUT works', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const ok1 = await putCapture(a, 'http://www.example.org/f1', dated('/f1', 'first'));
  t.equal(ok1.status, 201);
  const realInsert = a.store.index.insertMany.bind(a.store.index);
  a.store.index.insertMany = async () => {
    throw new Error('disk I/O error (simulated)');
  };
  const bad = await putCapture(a, 'http://www.example.org/f2', dated('/f2', 'second'));
  // Two identical captures in one batch: the second is a duplicate of the first, which is lost.
  const twin = dated('/f4', 'twin', 'Tue, 06 Jan 2026 10:00:00 GMT');
  const twins = await Promise.allSettled([a.store.ingest(Readable.from([twin]), new Date()), a.store.ingest(Readable.from([twin]), new Date())]);
  a.store.index.insertMany = realInsert;
  t.equal(bad.status, 500, 'not acknowledged');
  t.same(
    twins.map((r) => r.status),
    ['rejected', 'rejected'],
    'a duplicate of a capture whose batch failed is not acknowledged either',
  );
  const responses = (await warcRecords(a.dataDir, 'current')).filter((r) => r.type === 'response');
  t.same(
    responses.map((r) => r.target),
    ['http://www.example.org/f1'],
    'the unacknowledged records were taken out of the WARC file',
  );
  const ok3 = await putCapture(a, 'http://www.example.org/f3', dated('/f3', 'third'));
  t.equal(ok3.status, 201, 'the next PUT is stored');
  const v = await verify(a.store.index, a.store.warcsDir);
  t.ok(v.ok, 'verify: ' + v.problems.join('; '));
  t.equal(v.rows, 2);
});

t.test('recovery on open: a partial tail is truncated, complete unindexed pairs are indexed, each action is logged', async (t) => {
  const a = await startArchive();
  const dataDir = a.dataDir;
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const bodies = ['one', 'two', 'three'].map((s) => s.repeat(1000));
  for (const [i, b] of bodies.entries()) t.equal((await putCapture(a, '', dated(`/p${i}`, b))).status, 201);
  await a.close(true);
  const dir = path.join(dataDir, 'warcs', 'current');
  const file = path.join(dir, readdirSync(dir)[0]);
  const full = readFileSync(file);
  const cleanSize = full.length;

  const reopen = async () => {
    const lines: string[] = [];
    const { ArchiveStore } = await import('../../archive/store/store.js');
    const store = await ArchiveStore.open(a.config, { log: (l) => lines.push(l) });
    return { store, lines };
  };

  // 1. The last capture's index row is gone (the crash came before its commit), and half of
  //    another copy of a record follows it (a write cut short).
  await sql(path.join(dataDir, 'index.sqlite3'), `DELETE FROM memento WHERE uri_r = 'http://www.example.org/p2'`);
  appendFileSync(file, full.subarray(full.length - 800, full.length - 300));
  let { store, lines } = await reopen();
  t.equal(await store.index.count(), 3, 'the complete unacknowledged pair is indexed again');
  t.match(lines.join('\n'), /indexed 1 complete capture/, 'logged: indexed');
  t.match(lines.join('\n'), new RegExp(`truncated 500 bytes at offset ${cleanSize}`), 'logged: the partial tail truncated');
  t.equal(statSync(file).size, cleanSize, 'the file is back to its last complete record');
  t.ok((await verify(store.index, store.warcsDir)).ok, 'verify passes');
  await store.close();

  // 2. Garbage after the last record.
  appendFileSync(file, randomBytes(3000));
  ({ store, lines } = await reopen());
  t.equal(statSync(file).size, cleanSize, 'garbage after the last record is truncated');
  t.match(lines.join('\n'), /truncated 3000 bytes/);
  await store.close();

  // 3. A new file begun just before a crash, its warcinfo cut short.
  writeFileSync(path.join(dir, 'current-20260105100000-99999-abcdef.warc.gz'), full.subarray(0, 100));
  ({ store, lines } = await reopen());
  t.match(lines.join('\n'), /current-20260105100000-99999-abcdef\.warc\.gz: removed/, 'the file with only a partial warcinfo is removed');
  t.same(readdirSync(dir).length, 1);
  await store.close();

  // 4. A clean data folder: recovery does nothing and says nothing.
  ({ store, lines } = await reopen());
  t.same(lines, [], 'nothing to recover, nothing logged');
  t.equal(await store.index.count(), 3);

  // 5. Damage in a file before the last indexed record is no crash tail: recovery leaves it; verify reports it.
  const more = await store.ingest(Readable.from([dated('/p3', 'four')]), new Date());
  t.ok(more.created);
  await store.close();
  t.equal(readdirSync(dir).length, 2, 'a newer file');
  appendFileSync(file, randomBytes(3000));
  ({ store, lines } = await reopen());
  t.same(lines, [], 'recovery reads only after the last indexed record');
  t.equal(statSync(file).size, cleanSize + 3000, 'not truncated');
  const v = await verify(store.index, store.warcsDir);
  t.notOk(v.ok, 'verify reports it');
  await store.close();

  // 6. Without its index, a start indexes every complete capture of every file; damage in a
  //    file that is not the newest is logged and left.
  for (const f of ['index.sqlite3', 'index.sqlite3-wal', 'index.sqlite3-shm']) rmSync(path.join(dataDir, f), { force: true });
  ({ store, lines } = await reopen());
  t.equal(await store.index.count(), 4, 'all four captures indexed again');
  t.match(lines.join('\n'), /damaged record at offset \d+: .*not the newest file, left as it is \(run memento-archive verify\)/);
  t.equal(statSync(file).size, cleanSize + 3000, 'still not truncated');
  await store.close();
});

t.test('verify finds a damaged record and an index row that points nowhere; the command exits 1', async (t) => {
  const { dir, config, dataDir } = writeConfig();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const a = await startArchive(TWO_ARCHIVES, { dataDir });
  for (let i = 0; i < 3; i++) t.equal((await putCapture(a, '', dated(`/v${i}`, randomBytes(5000)))).status, 201);
  await a.close(true);
  const ok = await runCli(['verify', '--config', config]);
  t.equal(ok.code, 0, ok.stdout + ok.stderr);
  t.match(ok.stdout, /verify: OK: 3 index rows, 7 WARC records in 1 files/);

  const wdir = path.join(dataDir, 'warcs', 'current');
  const file = path.join(wdir, readdirSync(wdir)[0]);
  const bytes = readFileSync(file);
  const index = await IndexDb.open(path.join(dataDir, 'index.sqlite3'));
  const row = (await index.page('current', 'org,example,www)/v1', -Infinity, 1))[0];
  await index.close();
  bytes[row.warc_offset + Math.floor(row.warc_length / 2)] ^= 0xff;
  writeFileSync(file, bytes);
  await sql(path.join(dataDir, 'index.sqlite3'), `UPDATE memento SET warc_offset = warc_offset + 1 WHERE uri_r = 'http://www.example.org/v2'`);
  const bad = await runCli(['verify', '--config', config]);
  t.equal(bad.code, 1, 'exit code 1');
  t.match(bad.stdout, /verify: FAILED/);
  t.match(bad.stdout, new RegExp(`problem: current/\\S+: corrupt record at offset ${row.warc_offset}: `), 'the damaged record is named');
  t.match(
    bad.stdout,
    /problem: .*index row \d+ \(http:\/\/www\.example\.org\/v2\) points at no complete response or revisit record/,
    'the row that points nowhere is named',
  );
});

t.test('reindex rebuilds the same index from the WARC files alone (TimeMaps, Mementos, a refused same-second capture, client IPs)', async (t) => {
  const { dir, config, dataDir } = writeConfig('warc_max_bytes: 20000\n');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const yaml = readFileSync(config, 'utf8')
    .replace(/^listen:.*$/m, '')
    .replace(/^data_dir:.*$/m, '');
  let a = await startArchive(yaml, { dataDir });
  const urls: string[] = [];
  for (let i = 0; i < 12; i++) {
    const url = `http://www.example.org/r${i % 4}`;
    urls.push(url);
    const date = i % 2 ? `Mon, 0${1 + (i % 5)} Jan 2026 10:00:00 GMT` : `Mon, 0${1 + (i % 5)} May 2025 10:00:00 GMT`;
    const r = await putCapture(a, '', dated(`/r${i % 4}`, randomBytes(4000 + i), date, [['X-Client-IP', `192.0.2.${i}`]]));
    t.equal(r.status, 201);
  }
  // Same second, different bodies: the first holds the URI-M, the second is refused (nothing written).
  t.equal((await putCapture(a, '', dated('/same', 'first body', 'Tue, 06 Jan 2026 12:00:00 GMT'))).status, 201);
  t.equal((await putCapture(a, '', dated('/same', 'second body', 'Tue, 06 Jan 2026 12:00:00 GMT'))).status, 409);
  // A duplicate (nothing written).
  t.equal((await putCapture(a, '', dated('/same', 'first body', 'Tue, 06 Jan 2026 18:00:00 GMT'))).status, 200);
  const ask = async (base: string) => {
    const out: string[] = [];
    for (const u of [...new Set(urls), 'http://www.example.org/same']) {
      for (const id of ['2025', 'current']) {
        const tm = await request(`${base}/${id}/timemap/link/${u}`);
        out.push(`${tm.status} ${tm.text.replaceAll(base, 'BASE')}`);
      }
      const m = await request(`${base}/current/memento/20260106120000id_/${u}`);
      out.push(`${m.status} ${m.status === 200 ? m.body.toString('base64') : m.text.replaceAll(base, 'BASE')}`);
    }
    return out;
  };
  const before = await ask(a.url);
  const rowsBefore = await a.store.index.dump();
  t.ok(readdirSync(path.join(dataDir, 'warcs', 'current')).length > 1, 'several WARC files (warc_max_bytes)');
  await a.close(true);

  rmSync(path.join(dataDir, 'index.sqlite3'));
  const r = await runCli(['reindex', '--config', config]);
  t.equal(r.code, 0, r.stdout + r.stderr);
  t.match(r.stdout, /reindex: 13 mementos from \d+ WARC records/);
  t.notMatch(r.stderr, /\[/, 'no progress bar when stderr is not a terminal');

  a = await startArchive(yaml, { dataDir });
  t.teardown(() => a.close(true));
  t.same(await a.store.index.dump(), rowsBefore, 'the same index rows (URI-R, datetime, status, type, digest, WARC position, client IP)');
  t.same(await ask(a.url), before, 'the same TimeMaps and Mementos');
  const same = await request(`${a.url}/current/memento/20260106120000id_/http://www.example.org/same`);
  t.equal(same.text, 'first body', 'same second: the capture stored first is served');
});

t.test('reindex refuses to run under a live daemon', async (t) => {
  const { dir, config, dataDir } = writeConfig();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const a = await startArchive(TWO_ARCHIVES, { dataDir });
  t.teardown(() => a.close(true));
  writeFileSync(path.join(dataDir, 'daemon.pid'), `${process.pid}\n`);
  const r = await runCli(['reindex', '--config', config]);
  t.equal(r.code, 1);
  t.match(r.stderr, new RegExp(`a daemon \\(pid ${process.pid}\\) is running on .*; stop it before reindex`));
});

t.test('same-second captures: the stored one stays; a different one is 409 and writes nothing; verify finds every record indexed', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const date = 'Tue, 06 Jan 2026 12:00:00 GMT';
  const first = await putCapture(a, '', dated('/s', 'first version', date));
  const second = await putCapture(a, '', dated('/s', 'second version', date));
  t.equal(first.status, 201);
  t.equal(second.status, 409, 'a different capture in the same second is refused');
  t.match(second.text, String(first.headers.location), '… naming the stored URI-M');
  const m = await request(idOf(String(first.headers.location), a.url));
  t.equal(m.text, 'first version', 'the URI-M serves the capture stored first');
  const tm = await request(`${a.url}/current/timemap/link/http://www.example.org/s`);
  t.equal(tm.text.match(/rel="[^"]*memento[^"]*"/g)?.length, 1, 'the TimeMap lists one memento');
  const responses = (await warcRecords(a.dataDir, 'current')).filter((r) => r.type === 'response');
  t.same(
    responses.map((r) => r.block.toString().split('\r\n\r\n')[1]),
    ['first version'],
    'one response record in the WARC file',
  );
  const again = await putCapture(a, '', dated('/s', 'first version', date));
  t.equal(again.status, 200, 'the first version again, same second: a duplicate');
  t.equal(again.headers.location, first.headers.location);
  const v = await verify(a.store.index, a.store.warcsDir);
  t.ok(v.ok);
  t.equal(v.unindexed, 0, 'no response record left out of the index');
  t.equal((await warcBytes(a.dataDir)) > 0, true);
});

t.test(
  'reindex on a terminal shows a progress bar (run under script(1) for a pseudo-terminal)',
  { skip: !existsSync('/usr/bin/script') && 'no script(1) here' },
  async (t) => {
    const { dir, config, dataDir } = writeConfig();
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const a = await startArchive(TWO_ARCHIVES, { dataDir });
    for (let i = 0; i < 3; i++) t.equal((await putCapture(a, '', dated(`/tty${i}`, randomBytes(3000)))).status, 201);
    await a.close(true);
    const bin = path.resolve('bin/memento-archive.js');
    const r = await new Promise<{ code: number | null; out: string }>((resolve, reject) => {
      const p = spawn(
        '/usr/bin/script',
        ['-qec', `${JSON.stringify(process.execPath)} ${JSON.stringify(bin)} reindex --config ${JSON.stringify(config)}`, '/dev/null'],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let out = '';
      p.stdout.on('data', (d) => (out += d));
      p.stderr.on('data', (d) => (out += d));
      p.on('error', reject);
      p.on('close', (code) => resolve({ code, out }));
    });
    t.equal(r.code, 0, r.out);
    t.match(r.out, /reindex \[\u2588+\] 100% \| [\d.]+\/[\d.]+ MiB/, 'a cli-progress bar, at 100% when done');
    t.match(r.out, /reindex: 3 mementos from 7 WARC records in 1 files/);
  },
);
