/**
 * VisiblePages.urlsUnder (the `/web/` prefix list) under access rules that
 * hide URLs by date: a run of hidden URLs costs a query each, so one call
 * examines at most URLS_EXAMINED_PER_SHOWN × pageSize URLs of the index,
 * and past them answers what it has with a cursor from which every shown
 * URL after the run is still reached. The index is a SQLite IndexDb (a
 * temp file), its calls counted through a wrapper. keyBetween, the
 * cursor's spelling, on its own.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { AccessRules } from '../../../archive/read/access-rules.js';
import { keyBetween, URLS_EXAMINED_PER_SHOWN, VisiblePages } from '../../../archive/read/pages.js';
import { IndexDb, type NewMementoRow } from '../../../archive/store/index/index-db.js';
import type { MementoIndex } from '../../../archive/store/index/memento-index.js';

/** 2026-03-01T00:00:00Z, epoch s. */
const T0 = Date.UTC(2026, 2, 1) / 1000;
const DAY = 86400;

const row = (p: string, datetime = T0): NewMementoRow => ({
  archive_id: 'a',
  urlkey: `com,example)/${p}`,
  uri_r: `http://example.com/${p}`,
  datetime,
  status: 200,
  mime: 'text/html',
  digest: `sha256:${p}-${datetime}`,
  warc_file: 'a-0.warc.gz',
  warc_offset: 0,
  warc_length: 10,
  client_ip: null,
  refers_to: null,
});

/** The index with its prefix-list and span queries counted. */
function counted(index: MementoIndex): { index: MementoIndex; calls: { list: number; spans: number } } {
  const calls = { list: 0, spans: 0 };
  const pages = new Proxy(index.pages, {
    get(target, key) {
      const v = Reflect.get(target, key, target) as unknown;
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        if (key === 'under' || key === 'ofDomain') calls.list++;
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  const wrapped = new Proxy(index, {
    get(target, key) {
      if (key === 'pages') return pages;
      const v = Reflect.get(target, key, target) as unknown;
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        if (key === 'spansWithin') calls.spans++;
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { index: wrapped, calls };
}

t.test('keyBetween: a string between two urlkeys, short when it can be', async (t) => {
  const cases: [string, string, string][] = [
    ['a/c1', 'a/x', 'a/d'],
    ['a/c1', 'a/d2', 'a/d'],
    ['a/c1', 'a/d', 'a/c2'],
    ['a/c', 'a/d', 'a/c'],
    ['a/c', 'a/c/x', 'a/c'],
    ['a/c~~', 'a/d', 'a/c~~'],
    ['com,example)/h/036', 'com,example)/h/037', 'com,example)/h/036'],
    ['com,example)/h/099', 'com,example)/z0', 'com,example)/i'],
  ];
  for (const [low, high, want] of cases) {
    const s = keyBetween(low, high);
    t.equal(s, want, `${low} .. ${high}`);
    t.ok(low <= s && s < high, `${low} <= ${s} < ${high}`);
  }
});

t.test('urlsUnder: a bounded number of URLs examined per call; the shown URLs after a hidden run reached from its cursor', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pages-budget-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const db = await IndexDb.open(path.join(dir, 'index.sqlite3'), { cacheBytes: 1 << 20 });
  t.teardown(() => db.close());
  const pageSize = 10;
  const budget = URLS_EXAMINED_PER_SHOWN * pageSize;
  const hiddenRun = 3 * budget;
  const shownBefore = ['a0', 'a1', 'a2'];
  const hidden = Array.from({ length: hiddenRun }, (_, i) => `h/${String(i).padStart(3, '0')}`);
  const shownAfter = Array.from({ length: 12 }, (_, i) => `z${String(i).padStart(2, '0')}`);
  // Every URL under h/ is captured at T0 and hidden by date (captures before T0 + 1 day): each costs a query.
  await db.insertMany([...shownBefore, ...hidden, ...shownAfter].map((p) => row(p)));
  const rules = new AccessRules([{ url: 'http://example.com/h/*', action: 'exclude', before: T0 + DAY }]);
  const { index, calls } = counted(db);
  const pages = new VisiblePages(index, rules);

  const seen: string[] = [];
  const cursors: string[] = [];
  let after = '';
  let requests = 0;
  for (;;) {
    calls.list = calls.spans = 0;
    const { page, more, next } = await pages.urlsUnder('com,example)/', false, after, pageSize);
    requests++;
    t.ok(calls.spans <= budget, `call ${requests}: at most ${budget} span queries (${calls.spans})`);
    t.ok(
      calls.list <= Math.ceil(budget / (pageSize + 1)) + 1,
      `call ${requests}: at most ${Math.ceil(budget / (pageSize + 1)) + 1} list queries (${calls.list})`,
    );
    t.ok(page.length <= pageSize);
    seen.push(...page.map((u) => u.urlkey.slice('com,example)/'.length)));
    if (!more) {
      t.equal(next, undefined, 'the last page: no cursor');
      break;
    }
    t.type(next, 'string', 'more: a cursor');
    t.ok(next! > after, 'the cursor moves on');
    cursors.push(next!);
    after = next!;
    if (requests > 50) break;
  }
  t.same(seen, [...shownBefore, ...shownAfter], 'every shown URL once, in order; none hidden');
  t.equal(seen.length, shownBefore.length + shownAfter.length);
  t.same(
    cursors.map((c) => c.slice('com,example)/'.length)),
    ['h/036', 'h/076', 'h/116', 'z09'],
    'each call cut short after its budget of URLs examined (3 shown and 37 hidden, then 40 hidden twice); ' +
      'a cursor between two hidden keys that differ in their last character spells the earlier whole',
  );
  t.equal(requests, 5, 'the hidden run (3 budgets) is stepped over in 4 calls; the last 2 URLs on a fifth page');

  // Without hidden URLs in the way the page is as before: pageSize shown, its cursor the last shown.
  calls.list = calls.spans = 0;
  const tail = await pages.urlsUnder('com,example)/', false, 'com,example)/h/999', pageSize);
  t.same(
    [tail.page.length, tail.more, tail.next, calls.spans, calls.list],
    [pageSize, true, 'com,example)/z09', 0, 1],
    'a page of shown URLs: full, its cursor the last it shows, one list query',
  );
});
