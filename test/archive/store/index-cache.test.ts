/**
 * The index's read cache (archive/store/index-cache.ts) on its own and in
 * front of a real index: answers equal to the index's at every instant,
 * an answer asked before a commit and returned after it never kept,
 * every commit dropping what it changed, the byte bound held.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sqlite3 from 'sqlite3';
import t, { type Test } from 'tap';
import { IndexCache } from '../../../archive/store/index-cache.js';
import { IndexDb, type MementoRef, type MementoRow, type Neighbourhood, type NewMementoRow } from '../../../archive/store/index-db.js';

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
});

/** Two indexes over one file: one with a cache, one without (what SQLite says). */
async function indexes(t: Test, cacheBytes = 1024 * 1024): Promise<{ cached: IndexDb; plain: IndexDb }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'index-cache-'));
  const cached = await IndexDb.open(path.join(dir, 'index.sqlite3'), { cacheBytes });
  const plain = await IndexDb.open(path.join(dir, 'index.sqlite3'));
  t.teardown(async () => {
    await cached.close();
    await plain.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { cached, plain };
}

/**
 * A neighbourhood as navigation sees it (datetime and URI-R of each memento;
 * with `whole`, every column but the id of the one at or before). A cached
 * answer may carry more than a lookup asked for (a whole row where a
 * reference was asked): that is not a difference.
 */
function strip(n: Neighbourhood | undefined, whole = false) {
  if (!n) return n;
  const ref = (r: MementoRef) => ({ datetime: r.datetime, uri_r: r.uri_r });
  const full = ({ id: _id, ...rest }: MementoRef) => rest;
  return { first: ref(n.first), last: ref(n.last), atOrBefore: n.atOrBefore.map((r, i) => (whole && i === 0 ? full(r) : ref(r))), after: n.after.map(ref) };
}

t.test('answers from the cache equal the index at every instant, whole rows included, and repeat lookups ask nothing', async (t) => {
  const { cached, plain } = await indexes(t);
  await cached.insertMany([10, 20, 30, 40, 50].map((d) => row('a', 'k', d)));
  const instants = [0, 10, 15, 20, 29, 30, 35, 50, 60, Number.MAX_SAFE_INTEGER];
  for (const pass of [1, 2])
    for (const at of instants)
      for (const whole of [false, true])
        t.same(
          strip(await cached.neighbourhood('a', 'k', at, whole)),
          strip(await plain.neighbourhood('a', 'k', at, whole)),
          `pass ${pass}, at ${at}, whole ${whole}`,
        );
  const misses = cached.cache.stats.misses;
  for (const at of [0, 10, 35, 60]) await cached.neighbourhood('a', 'k', at, true);
  t.equal(cached.cache.stats.misses, misses, 'instants inside known intervals: no index query');
  t.equal(await cached.neighbourhood('a', 'none', 5), undefined, 'a URL without mementos');
  t.equal(await cached.neighbourhood('b', 'k', 5), undefined, 'another archive');
  t.same(await cached.spans('k'), [{ archive_id: 'a', first: 10, last: 50, n: 5 }]);
  t.same(await cached.spans('k'), [{ archive_id: 'a', first: 10, last: 50, n: 5 }], 'spans again (cached)');
});

t.test('a commit drops what it changed: a new memento, a new archive, a same-second replacement', async (t) => {
  const { cached } = await indexes(t);
  await cached.insertMany([row('a', 'k', 10), row('a', 'other', 10)]);
  // Each asked twice: an answer is kept the second time its URL misses.
  for (let i = 0; i < 2; i++) {
    t.equal((await cached.neighbourhood('a', 'k', 100))?.last.datetime, 10);
    t.equal((await cached.neighbourhood('b', 'k', 100))?.last.datetime, undefined);
    t.equal((await cached.neighbourhood('a', 'other', 100))?.last.datetime, 10);
    t.same((await cached.spans('k')).length, 1);
  }
  const invalidated = cached.cache.stats.invalidated;
  await cached.insertMany([row('a', 'k', 20), row('b', 'k', 30)]);
  t.ok(cached.cache.stats.invalidated > invalidated, 'entries dropped');
  t.equal((await cached.neighbourhood('a', 'k', 100))?.last.datetime, 20, 'the new memento is the last');
  t.equal((await cached.neighbourhood('b', 'k', 100))?.last.datetime, 30, 'the archive that had none has one');
  t.same((await cached.spans('k')).map((s) => s.archive_id).sort(), ['a', 'b'], 'spans name both archives');
  const hits = cached.cache.stats.hits;
  t.equal((await cached.neighbourhood('a', 'other', 100))?.last.datetime, 10);
  t.equal(cached.cache.stats.hits, hits + 1, 'an urlkey the commit did not write stays cached');
  // Same second, another record: the row of (k, a, 20) now points at file g.
  for (let i = 0; i < 2; i++) t.equal(((await cached.neighbourhood('a', 'k', 20, true))?.atOrBefore[0] as MementoRow | undefined)?.warc_file, 'f');
  await cached.insertMany([row('a', 'k', 20, 'g')]);
  t.equal(((await cached.neighbourhood('a', 'k', 20, true))?.atOrBefore[0] as MementoRow | undefined)?.warc_file, 'g', 'the replacing record');
});

t.test('an answer asked before a commit and returned after it goes to its caller but is not kept', async (t) => {
  const cache = new IndexCache(1024 * 1024);
  const old: Neighbourhood = {
    first: { id: 1, datetime: 10, uri_r: 'u' },
    last: { id: 1, datetime: 10, uri_r: 'u' },
    atOrBefore: [{ id: 1, datetime: 10, uri_r: 'u' }],
    after: [],
  };
  const fresh: Neighbourhood = { ...old, last: { id: 2, datetime: 20, uri_r: 'u' }, atOrBefore: [{ id: 2, datetime: 20, uri_r: 'u' }] };
  // Each URL has missed once already (the doorkeeper keeps an answer from the second miss on).
  for (const k of ['k', 'x', 'y']) await cache.neighbourhood('a', k, 1, false, async () => undefined);
  await cache.spans('k', async () => []);
  t.equal(cache.size, 0, 'nothing kept at the first miss');
  let answer!: (n: Neighbourhood) => void;
  const inFlight = cache.neighbourhood('a', 'k', 100, false, () => new Promise((r) => (answer = r)));
  // The commit lands while the lookup is out.
  cache.indexed([{ archive_id: 'a', urlkey: 'k' }]);
  answer(old);
  t.equal(await inFlight, old, 'the request that asked before the commit gets what it asked for');
  t.equal(cache.stats.discarded, 1, 'not kept');
  let asked = 0;
  const next = await cache.neighbourhood('a', 'k', 100, false, async () => (asked++, fresh));
  t.equal(asked, 1, 'the next read asks the index');
  t.equal(next, fresh);
  t.equal(await cache.neighbourhood('a', 'k', 100, false, async () => (asked++, old)), fresh, 'and that answer is kept');
  t.equal(asked, 1);
  // Two lookups in flight over one commit, one of another urlkey: only that one is kept.
  let a1!: (n: Neighbourhood) => void;
  let a2!: (n: Neighbourhood) => void;
  const p1 = cache.neighbourhood('a', 'x', 100, false, () => new Promise((r) => (a1 = r)));
  const p2 = cache.neighbourhood('a', 'y', 100, false, () => new Promise((r) => (a2 = r)));
  cache.indexed([{ archive_id: 'a', urlkey: 'x' }]);
  a1(old);
  a2(old);
  await Promise.all([p1, p2]);
  t.equal(cache.stats.discarded, 2, 'x not kept');
  t.equal(await cache.neighbourhood('a', 'y', 100, false, async () => fresh), old, 'y kept');
  // Spans follow the same rule.
  let s!: (v: { archive_id: string; first: number; last: number; n: number }[]) => void;
  const ps = cache.spans('k', () => new Promise((r) => (s = r)));
  cache.indexed([{ archive_id: 'b', urlkey: 'k' }]);
  s([]);
  await ps;
  t.same(
    await cache.spans('k', async () => [{ archive_id: 'b', first: 1, last: 1, n: 1 }]),
    [{ archive_id: 'b', first: 1, last: 1, n: 1 }],
    'stale spans not kept',
  );
});

t.test('in front of a real index: a lookup computed before a commit and delivered after it is not kept', async (t) => {
  const { cached } = await indexes(t);
  await cached.insertMany([row('a', 'k', 10)]);
  await cached.neighbourhood('a', 'k', 5); // the URL's first miss (the doorkeeper keeps answers from the second on)
  // Hold the answers of the read connection's queries back (as a busy event loop or thread pool can),
  // once SQLite has computed them: the lookup's rows are those of before the commit.
  const realAll = sqlite3.Statement.prototype.all;
  let held: (() => void) | undefined;
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  sqlite3.Statement.prototype.all = function (this: sqlite3.Statement, ...args: unknown[]) {
    const cb = args.pop() as (...r: unknown[]) => void;
    return realAll.call(this, ...args, (...r: unknown[]) => {
      held = () => cb(...r);
      void gate.then(held);
    });
  } as typeof realAll;
  t.teardown(() => {
    sqlite3.Statement.prototype.all = realAll;
  });
  const before = cached.neighbourhood('a', 'k', 100);
  while (!held) await new Promise((r) => setImmediate(r));
  sqlite3.Statement.prototype.all = realAll;
  await cached.insertMany([row('a', 'k', 20)]);
  open();
  t.equal((await before)?.last.datetime, 10, 'the lookup asked before the commit answers as of before it');
  t.equal((await cached.neighbourhood('a', 'k', 100))?.last.datetime, 20, 'the next lookup sees the commit (the old answer was not kept)');
  t.equal(cached.cache.stats.discarded, 1);
});

t.test('an answer is kept the second time its URL misses, not the first', async (t) => {
  const cache = new IndexCache(1024 * 1024);
  let asked = 0;
  const load = async () => (asked++, undefined);
  await cache.neighbourhood('a', 'once', 1, false, load);
  t.equal(cache.size, 0, 'first miss: not kept');
  await cache.neighbourhood('a', 'once', 1, false, load);
  t.equal(cache.size, 1, 'second miss: kept');
  await cache.neighbourhood('a', 'once', 1, false, load);
  t.equal(asked, 2, 'third: a hit');
  // A sweep that never asks twice keeps nothing.
  for (let i = 0; i < 1000; i++) await cache.neighbourhood('a', `sweep${i}`, 1, false, load);
  t.equal(cache.size, 1, 'a sweep over URLs asked once each keeps nothing');
});

t.test('a failed lookup keeps nothing and leaves no generation behind', async (t) => {
  const cache = new IndexCache(1024 * 1024);
  await t.rejects(
    cache.neighbourhood('a', 'k', 1, false, async () => Promise.reject(new Error('disk I/O error'))),
    /disk I\/O/,
  );
  t.equal(cache.size, 0);
  t.equal((cache as unknown as { generations: Map<string, unknown> }).generations.size, 0);
});

t.test('the cache holds no more than its bytes, whatever is asked', async (t) => {
  const max = 256 * 1024;
  const { cached, plain } = await indexes(t, max);
  const rows: NewMementoRow[] = [];
  for (let u = 0; u < 400; u++) for (const d of [10, 20, 30]) rows.push(row('a', `host${u}.example,${'x'.repeat(u % 50)})/`, d));
  await cached.insertMany(rows);
  const wrong: string[] = [];
  let over = 0;
  for (let u = 0; u < 400; u++) {
    const k = rows[u * 3].urlkey;
    for (const at of [5, 15, 25, 100]) {
      const whole = u % 2 === 0;
      const [got, want] = [strip(await cached.neighbourhood('a', k, at, whole), whole), strip(await plain.neighbourhood('a', k, at, whole), whole)];
      if (JSON.stringify(got) !== JSON.stringify(want)) wrong.push(`${k} at ${at}`);
      over = Math.max(over, cached.cache.bytes);
    }
  }
  t.same(wrong, [], 'every answer as the index gives it');
  t.ok(over <= max, `at most ${over} bytes held at any time`);
  t.ok(cached.cache.bytes <= max, `${cached.cache.bytes} bytes ≤ ${max}`);
  t.ok(cached.cache.size > 10 && cached.cache.size < 400, `${cached.cache.size} entries: some kept, most evicted`);
  const none = new IndexCache(0);
  let asked = 0;
  for (let i = 0; i < 3; i++) await none.neighbourhood('a', 'k', 1, false, async () => (asked++, undefined));
  t.equal(asked, 3, 'index_cache_bytes 0: every lookup asks the index');
  t.equal(none.bytes, 0);
});
