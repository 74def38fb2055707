/**
 * The evidence log's storage (archive/evidence/log.ts) in both indexes:
 * entries commit with their rows (one transaction), leaf indexes follow
 * one another with no gap or repeat when two writers (two daemons on one
 * PostgreSQL database) append at once, the stored nodes give the root a
 * naive MTH gives, a tree head of a size is kept once; on SQLite, crash
 * recovery logs a record whose commit never happened, and `reindex` keeps
 * the log and adds no second entry for a memento already in it.
 */
import { createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import path from 'node:path';
import sqlite3 from 'sqlite3';
import t from 'tap';
import { captureLeafText } from '../../../archive/evidence/leaf.js';
import { toTimestamp14 as ts14 } from '#shared/http-date.js';
import { type LogStore, type NewLeaf, rootOf } from '../../../archive/evidence/log.js';
import { PgIndex } from '../../../archive/store/index/index-pg.js';
import { reindex } from '../../../archive/store/upkeep/maintenance.js';
import type { MementoIndex } from '../../../archive/store/index/memento-index.js';
import { partsOf } from '../../conformance/helpers.js';
import { mthOfHashes as mth } from '../../helpers/rfc9162.js';
import { captureRecord, putCapture, startArchive } from '../../helpers/archive.js';
import { indexRowOf } from '../../helpers/index-rows.js';
import { startPostgres } from '../../helpers/postgres.js';

const sha = (...parts: Buffer[]) => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
};

/** `n` made-up rows of archive `a` (from second `t0` on) with their capture entries. */
function batch(a: string, t0: number, n: number, tag: string) {
  const rows = Array.from({ length: n }, (_, i) => indexRowOf(a, `http://www.example.org/${tag}/${i}`, t0 + i));
  const leaves: NewLeaf[] = rows.map((r, i) => ({
    archive_id: a,
    kind: 'capture',
    text: captureLeafText({
      uri: r.uri_r,
      datetime: ts14(r.datetime),
      record_id: `<urn:uuid:${tag}-${i}>`,
      digest: 'sha256:' + sha(Buffer.from(`${tag}${i}`)).toString('hex'),
      via: 'put',
    }),
    urlkey: r.urlkey,
    datetime: r.datetime,
  }));
  return { rows, leaves };
}

/** Every entry of `a`, by leaf index. */
async function entries(log: LogStore, a: string) {
  return log.leaves(a, 0, 1_000_000);
}

t.test('PostgreSQL: two daemons append at once; one gap-free log per archive; heads kept once per size', async (t) => {
  const pg = await startPostgres();
  t.teardown(() => pg.stop());
  const url = await pg.database('log_store');
  const one = await PgIndex.open(url);
  const two = await PgIndex.open(url);
  t.teardown(async () => {
    await one.close();
    await two.close();
  });
  const jobs: Promise<void>[] = [];
  for (let i = 0; i < 20; i++) {
    const idx: MementoIndex = i % 2 ? one : two;
    const b = batch('2025', 1_000_000 + i * 100, 1 + (i % 7), `w${i}`);
    jobs.push(idx.insertMany(b.rows, { leaves: b.leaves }));
  }
  const other = batch('current', 2_000_000, 5, 'c');
  jobs.push(one.insertMany(other.rows, { leaves: other.leaves }));
  await Promise.all(jobs);
  const all = await entries(one.log, '2025');
  const n = Array.from({ length: 20 }, (_, i) => 1 + (i % 7)).reduce((x, y) => x + y, 0);
  t.same(
    all.map((l) => l.leaf_index),
    Array.from({ length: n }, (_, i) => i),
    `${n} entries, indexes 0…${n - 1}`,
  );
  t.equal(await one.count(), n + 5, 'every row committed with its entry');
  for (const l of all) if (!l.leaf_hash.equals(sha(Buffer.of(0), Buffer.from(l.leaf_text!)))) t.fail(`leaf ${l.leaf_index}`);
  for (const size of [1, 2, 3, 7, 8, 9, n])
    t.same(await rootOf(two.log, '2025', size), mth(all.slice(0, size).map((l) => l.leaf_hash)), `root of ${size} from the stored nodes`);
  t.equal((await entries(two.log, 'current')).length, 5, 'another archive has its own log');
  t.same((await one.log.archives()).sort(), ['2025', 'current']);
  const head = {
    archive_id: '2025',
    tree_size: n,
    root_hash: await rootOf(one.log, '2025', n),
    timestamp: 1,
    signature: Buffer.alloc(64),
    origin: 'a.example/2025',
  };
  await one.log.addHead(head);
  await two.log.addHead({ ...head, timestamp: 2 });
  t.equal((await two.log.head('2025'))?.timestamp, 1, 'the first head stored of a size stays');
  // What the C2SP routes read: tiles' hashes, bundles' entries, published checkpoints (tlog-http.test.ts has them on SQLite).
  t.same(
    await two.log.levelHashes('2025', 0, 3, 8),
    all.slice(3, 11).map((l) => l.leaf_hash),
    'leaf hashes 3…10 as one range',
  );
  t.same(
    await two.log.levelHashes('2025', 2, 1, 2),
    [mth(all.slice(4, 8).map((l) => l.leaf_hash)), mth(all.slice(8, 12).map((l) => l.leaf_hash))],
    'nodes of level 2',
  );
  await t.rejects(two.log.levelHashes('2025', 0, n - 2, 3), /lacks nodes of level 0/, 'beyond the log: refused');
  t.same(
    await two.log.bundleEntries('2025', 5, 3),
    all.slice(5, 8).map((l) => ({ leaf_index: l.leaf_index, leaf_text: l.leaf_text, urlkey: l.urlkey, datetime: l.datetime })),
  );
  const cp = { archive_id: '2025', tree_size: n, note: 'a.example/2025\n…\n', tsr: Buffer.from('tsr'), published: 5 };
  await one.log.addCheckpoint(cp);
  await two.log.addCheckpoint({ ...cp, note: 'other', tsr: null });
  t.same(await two.log.checkpoint('2025'), cp, 'the first checkpoint stored of a size stays');
  t.same(await two.log.checkpoints('2025', 0, 10), [cp]);
  const leaf = await one.log.leafOf('2025', other.rows[0].urlkey, other.rows[0].datetime);
  t.equal(leaf, undefined, "an archive's entry is not found in another archive");
  t.equal((await one.log.leafOf('current', other.rows[0].urlkey, other.rows[0].datetime))?.leaf_index, 0);
});

t.test('SQLite: recovery logs a record never committed; reindex keeps the log and logs nothing twice', async (t) => {
  const a = await startArchive();
  for (let i = 0; i < 3; i++) {
    const u = `http://www.example.org/r${i}`;
    t.equal((await putCapture(a, u, captureRecord({ ...partsOf(u), date: `Mon, 0${i + 1} Jan 2001 00:00:00 GMT`, body: `r${i}` }))).status, 201);
  }
  await a.close(true);
  t.teardown(() => rmSync(a.dataDir, { recursive: true, force: true }));
  const file = path.join(a.dataDir, 'index.sqlite3');
  const exec = async (sql: string) => {
    const db = new sqlite3.Database(file);
    await new Promise<void>((resolve, reject) => db.exec(sql, (err) => (err ? reject(err) : resolve())));
    await new Promise<void>((r) => db.close(() => r()));
  };
  const read = async () => {
    const db = new sqlite3.Database(file);
    const rows = await new Promise<{ leaf_index: number; leaf_text: string; leaf_hash: Buffer }[]>((resolve, reject) =>
      db.all('SELECT leaf_index, leaf_text, leaf_hash FROM log_leaf ORDER BY leaf_index', (err, r: never[]) => (err ? reject(err) : resolve(r))),
    );
    await new Promise<void>((r) => db.close(() => r()));
    return rows;
  };
  const before = await read();
  t.equal(before.length, 3);
  // As if the daemon had died between the fsync of the last capture's records and its commit.
  // (Entry 2 completed no node of the tree: nothing else to take back.)
  await exec(`DELETE FROM memento WHERE uri_r = 'http://www.example.org/r2'; DELETE FROM log_leaf WHERE leaf_index = 2;`);
  const b = await startArchive(undefined, { dataDir: a.dataDir });
  t.equal(b.store.recovery?.indexed, 1, 'recovery indexed the record');
  await b.close(true);
  const recovered = await read();
  t.same(
    recovered.map((l) => l.leaf_text),
    before.map((l) => l.leaf_text),
    'its entry is back, the same text (record id and block digest read from the WARC record)',
  );
  const report = await reindex(file, path.join(a.dataDir, 'warcs'));
  t.equal(report.rows, 3);
  t.same(await read(), recovered, 'reindex kept the log as it was, no entry twice');
});
