/**
 * The read cache (archive/store/read-cache.ts) on its own and in front of
 * a real index: views that answer as the index's own queries do at every
 * instant, a view loaded across a write never kept, a write dropping the
 * URL's view with every answer kept with it, the byte bound held, a URL
 * with more mementos than a view holds asked of the index.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { IndexDb, type MementoRef, type MementoRow, type Neighbourhood, type NewMementoRow } from '../../../archive/store/index/index-db.js';
import { MAX_VIEW_MEMENTOS, ReadCache, type ViewRow } from '../../../archive/store/read-cache.js';

const row = (archive: string, urlkey: string, datetime: number, file = 'f'): NewMementoRow => ({
  archive_id: archive,
  urlkey,
  uri_r: `http://${urlkey}/`,
  datetime,
  status: 200,
  mime: 'text/html',
  digest: 'sha256:' + datetime,
  warc_file: file,
  warc_offset: datetime,
  warc_length: 1,
  client_ip: null,
  refers_to: null,
});

/** An index with a read cache of `cacheBytes`; the rows it writes are told to the cache, as the store does. */
async function index(t: Test, cacheBytes = 1024 * 1024): Promise<{ db: IndexDb; write: (rows: NewMementoRow[]) => Promise<void> }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'read-cache-'));
  const db = await IndexDb.open(path.join(dir, 'index.sqlite3'), { cacheBytes });
  t.teardown(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const write = async (rows: NewMementoRow[]) => {
    await db.insertMany(rows);
    db.cache.written(rows.map((r) => r.urlkey));
  };
  return { db, write };
}

/** A neighbourhood as navigation sees it: datetime and URI-R of each memento; with `whole`, every column but the id of the one at or before. */
function strip(n: Neighbourhood | undefined, whole = false) {
  if (!n) return n;
  const ref = (r: MementoRef) => ({ datetime: r.datetime, uri_r: r.uri_r });
  const full = ({ id: _id, ...rest }: MementoRef) => rest;
  return { first: ref(n.first), last: ref(n.last), atOrBefore: n.atOrBefore.map((r, i) => (whole && i === 0 ? full(r) : ref(r))), after: n.after.map(ref) };
}

const ALL: [number, number][] = [[-Infinity, Infinity]];

t.test('a view answers as the index query does at every instant, whole rows and spans included, and a repeat asks nothing', async (t) => {
  const { db, write } = await index(t);
  await write([10, 20, 30, 40, 50].map((d) => row('a', 'k', d)));
  await write([5, 60].map((d) => row('b', 'k', d)));
  await write([{ ...row('a', 'k', 45), uri_r: 'https://K/' }]);
  const instants = [0, 10, 15, 20, 29, 30, 35, 45, 50, 60, Number.MAX_SAFE_INTEGER];
  for (const pass of [1, 2])
    for (const archive of ['a', 'b'])
      for (const at of instants)
        for (const whole of [false, true])
          t.same(
            strip(await db.neighbourhood(archive, 'k', at, whole), whole),
            strip(await db.neighbourhoodWithin(archive, 'k', at, ALL, whole), whole),
            `pass ${pass}, archive ${archive}, at ${at}${whole ? ', whole' : ''}`,
          );
  t.equal(db.cache.stats.misses, 1, 'one load for the URL');
  t.same(
    (await db.spans('k')).sort((x, y) => x.archive_id.localeCompare(y.archive_id)),
    [
      { archive_id: 'a', first: 10, last: 50, n: 6 },
      { archive_id: 'b', first: 5, last: 60, n: 2 },
    ],
    'spans from the view',
  );
  t.equal(await db.neighbourhood('c', 'k', 5), undefined, 'an archive without mementos of it');
  t.equal(await db.neighbourhood('a', 'none', 5), undefined, 'a URL without mementos');
  t.same(await db.spans('none'), [], 'and no spans');
});

t.test('a write drops the URL view and every answer kept with it; other URLs stay', async (t) => {
  const { db, write } = await index(t);
  await write([row('a', 'k', 10), row('a', 'other', 10)]);
  const n = (await db.neighbourhood('a', 'k', 100))!;
  const bytes = db.cache.bytes;
  db.cache.keep(n.view, 'answer', 'the 302 of before', 100);
  t.equal(db.cache.answer(n.view, 'answer'), undefined, 'an answer made once is not kept (the doorkeeper)');
  db.cache.keep(n.view, 'answer', 'the 302 of before', 100);
  t.ok(db.cache.bytes >= bytes + 100, `made twice, it is kept and its bytes count (${bytes} → ${db.cache.bytes})`);
  t.equal(db.cache.answer(n.view, 'answer'), 'the 302 of before', 'an answer kept with the view');
  t.equal(db.cache.answer((await db.neighbourhood('a', 'k', 100))!.view, 'answer'), 'the 302 of before', 'found again through the next read');
  await db.neighbourhood('a', 'other', 100);
  await write([row('a', 'k', 20)]);
  const after = (await db.neighbourhood('a', 'k', 100))!;
  t.equal(after.last.datetime, 20, 'the new memento is the last');
  t.equal(db.cache.answer(after.view, 'answer'), undefined, 'the answer kept before the write is gone');
  for (let i = 0; i < 2; i++) db.cache.keep(n.view, 'late', 'made from the old view', 100);
  t.equal(db.cache.answer(after.view, 'late'), undefined, 'an answer made from a dropped view is not kept');
  const misses = db.cache.stats.misses;
  await db.neighbourhood('a', 'other', 100);
  t.equal(db.cache.stats.misses, misses, 'a URL the write did not name stays cached');
  db.cache.clear();
  await db.neighbourhood('a', 'other', 100);
  t.equal(db.cache.stats.misses, misses + 1, 'clear drops everything');
});

t.test('a view loaded while a write of its URL commits goes to its reader but is not kept', async (t) => {
  const cache = new ReadCache(1024 * 1024);
  const old: ViewRow[] = [{ archive_id: 'a', id: 1, datetime: 10, uri_r: 'http://k/' }];
  const fresh: ViewRow[] = [...old, { archive_id: 'a', id: 2, datetime: 20, uri_r: 'http://k/' }];
  let answer!: (rows: ViewRow[]) => void;
  const inFlight = cache.view('k', () => new Promise((r) => (answer = r)));
  cache.written(['k']);
  answer(old);
  t.equal((await inFlight).timeline('a')?.length, 1, 'the reader that asked before the write gets what the index said then');
  t.equal(cache.stats.discarded, 1, 'not kept');
  let loads = 0;
  t.equal((await cache.view('k', async () => (loads++, fresh))).timeline('a')?.length, 2, 'the next read loads again');
  t.equal((await cache.view('k', async () => (loads++, old))).timeline('a')?.length, 2, 'and that view is kept');
  t.equal(loads, 1);
  // A write of another URL does not spoil a load in flight.
  let other!: (rows: ViewRow[]) => void;
  const y = cache.view('y', () => new Promise((r) => (other = r)));
  cache.written(['x']);
  other(old);
  await y;
  t.equal(cache.size, 2, 'y kept');
  // Nor does a failed load leave anything behind.
  await t.rejects(
    cache.view('z', () => Promise.reject(new Error('disk I/O error'))),
    /disk I\/O error/,
  );
  t.equal(cache.size, 2);
});

t.test('the cache stays within its bytes, counting the answers kept; 0 keeps nothing', async (t) => {
  const max = 20_000;
  const cache = new ReadCache(max);
  let over = 0;
  for (let i = 0; i < 300; i++) {
    const v = await cache.view(`url${i}`, async () => [{ archive_id: 'a', id: i, datetime: i, uri_r: `http://url${i}.example/` }]);
    for (let k = 0; k < 2; k++) cache.keep(v, 'a', 'x', 1000);
    over = Math.max(over, cache.bytes);
  }
  t.ok(over <= max, `${over} bytes ≤ ${max}`);
  t.ok(cache.size > 5 && cache.size < 100, `${cache.size} URLs kept`);
  const none = new ReadCache(0);
  let loads = 0;
  for (let i = 0; i < 3; i++) await none.view('k', async () => (loads++, []));
  t.equal(loads, 3, 'off: every read loads');
  t.equal(none.bytes, 0);
});

t.test(`a URL with more than ${MAX_VIEW_MEMENTOS} mementos is asked of the index, and answers the same`, async (t) => {
  const { db, write } = await index(t);
  const n = MAX_VIEW_MEMENTOS + 5;
  await write(Array.from({ length: n }, (_, i) => row('a', 'busy', 100 + i)));
  await write([row('a', 'quiet', 1)]);
  for (const at of [0, 100, 2000, 100 + n, Number.MAX_SAFE_INTEGER])
    t.same(strip(await db.neighbourhood('a', 'busy', at, true), true), strip(await db.neighbourhoodWithin('a', 'busy', at, ALL, true), true), `at ${at}`);
  t.same(await db.spans('busy'), [{ archive_id: 'a', first: 100, last: 100 + n - 1, n }]);
  t.equal(((await db.neighbourhood('a', 'quiet', 5, true))?.atOrBefore[0] as MementoRow).warc_file, 'f', 'a URL beside it in the same batch');
  const v = await db.view('busy');
  t.notOk(v.complete, 'its view holds no timeline');
});
