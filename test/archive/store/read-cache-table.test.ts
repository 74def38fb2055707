/**
 * The read cache's table of every URL's mementos (archive/store/read-cache.ts
 * `ViewTable`), loaded when the index is opened: a URL the index held at
 * start is answered without an index query, as the index answers it; a
 * write of the URL drops it from the table, so the next read sees the new
 * memento; a table larger than its share of `index_cache_bytes` is not
 * loaded.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { IndexDb, type NewMementoRow } from '../../../archive/store/index-db.js';

const row = (archive: string, urlkey: string, datetime: number, uri_r = `http://${urlkey}/`): NewMementoRow => ({
  archive_id: archive,
  urlkey,
  uri_r,
  datetime,
  status: 200,
  mime: 'text/html',
  digest: 'sha256:' + datetime,
  warc_file: 'f',
  warc_offset: datetime,
  warc_length: 1,
  client_ip: null,
});

const ALL: [number, number][] = [[-Infinity, Infinity]];

/** An index file holding `rows`, closed; opened again by the returned function with a read cache of `cacheBytes`. */
async function seeded(t: Test, rows: NewMementoRow[]): Promise<(cacheBytes: number) => Promise<IndexDb>> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'read-cache-table-'));
  const file = path.join(dir, 'index.sqlite3');
  const first = await IndexDb.open(file);
  await first.insertMany(rows);
  await first.close();
  const open: IndexDb[] = [];
  t.teardown(async () => {
    for (const db of open) await db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return async (cacheBytes) => {
    const db = await IndexDb.open(file, { cacheBytes });
    open.push(db);
    return db;
  };
}

const ROWS = [
  ...[10, 20, 30].map((d) => row('a', 'com,example)/x', d)),
  ...[5, 25].map((d) => row('b', 'com,example)/x', d)),
  ...[1, 2].map((d) => row('a', 'com,example)/y', d)),
  row('a', 'com,example)/z', 7),
  row('a', 'com,example)/z', 8, 'https://example.com/z'),
  ...[3, 4].map((d) => row('a', 'org,example)/é', d, 'http://example.org/%C3%A9')),
];

t.test('a URL the index held at start is answered from the table, as the index answers it, with no index query', async (t) => {
  const db = await (await seeded(t, ROWS))(1024 * 1024);
  for (const [archive, urlkey] of [
    ['a', 'com,example)/x'],
    ['b', 'com,example)/x'],
    ['a', 'com,example)/y'],
    ['a', 'org,example)/é'],
  ]) {
    for (const at of [0, 5, 15, 25, 99]) {
      const n = await db.neighbourhood(archive, urlkey, at);
      const q = await db.neighbourhoodWithin(archive, urlkey, at, ALL);
      const strip = (x: typeof n) => x && { first: x.first, last: x.last, atOrBefore: x.atOrBefore, after: x.after };
      t.same(strip(n), strip(q), `${archive} ${urlkey} at ${at}`);
    }
  }
  t.equal(db.cache.stats.misses, 0, 'no view was loaded from the index');
  t.same(await db.spans('com,example)/x'), await db.spansWithin('com,example)/x', ALL));
  // Two URI-Rs as captured: left out of the table, asked of the index.
  await db.neighbourhood('a', 'com,example)/z', 99);
  t.equal(db.cache.stats.misses, 1, 'a URL captured under two URI-Rs is asked of the index');
  await db.neighbourhood('a', 'com,example)/never', 99);
  t.equal(db.cache.stats.misses, 2, 'a URL the index does not hold is asked of the index');
});

t.test('a write of a URL drops it from the table: the next read sees the new memento', async (t) => {
  const db = await (await seeded(t, ROWS))(1024 * 1024);
  t.equal((await db.neighbourhood('a', 'com,example)/y', 99))?.last.datetime, 2);
  await db.insertMany([row('a', 'com,example)/y', 50)]);
  db.cache.written(['com,example)/y']);
  t.equal((await db.neighbourhood('a', 'com,example)/y', 99))?.last.datetime, 50, 'the new memento is the last');
  t.equal(db.cache.stats.misses, 1, 'asked of the index once');
  // Out of the view cache too (clear drops the views and the table): still the index's answer.
  db.cache.clear();
  t.equal((await db.neighbourhood('a', 'com,example)/y', 99))?.last.datetime, 50);
});

t.test('a table larger than three quarters of index_cache_bytes is not loaded; none with the cache off', async (t) => {
  const open = await seeded(t, ROWS);
  const small = await open(200);
  await small.neighbourhood('a', 'com,example)/x', 99);
  t.equal(small.cache.stats.misses, 1, 'asked of the index');
  const off = await open(0);
  t.equal(off.cache.bytes, 0);
  await off.neighbourhood('a', 'com,example)/x', 99);
  t.equal(off.cache.stats.misses, 1);
});
