/**
 * VisiblePages.urlsUnder (the `/web/` prefix list) under access rules that
 * hide URLs by date: a run of hidden URLs costs a query each, so one call
 * examines at most URLS_EXAMINED_PER_SHOWN × pageSize URLs of the index,
 * and past them answers what it has with a cursor from which every shown
 * URL after the run is still reached; a cursor among hidden URLs is sealed
 * (archive/read/cursor.ts), so that it spells no part of a hidden urlkey.
 * The index is a SQLite IndexDb (a temp file), its calls counted through a
 * wrapper. The cursor's two shapes on their own.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { AccessRules } from '../../../archive/read/access-rules.js';
import { CURSOR_EXPIRED, CursorSeal, isSealed, MAX_SEALED_LENGTH } from '../../../archive/read/cursor.js';
import { URLS_EXAMINED_PER_SHOWN, VisiblePages } from '../../../archive/read/pages.js';
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

/** What `fn` threw: its status and message (`undefined` when it threw nothing). */
async function thrown(fn: () => unknown): Promise<{ status?: number; message: string } | undefined> {
  try {
    await fn();
    return undefined;
  } catch (err) {
    return { status: (err as { status?: number }).status, message: (err as Error).message };
  }
}

t.test('cursor: a urlkey as it is; a sealed one opaque, opened only for its list, unaltered, under its key', async (t) => {
  const list = 'prefix com,example)/';
  const seal = new CursorSeal();
  const key = 'com,example)/h/036';
  t.equal(seal.open(key, list), key, 'a urlkey is its own cursor');
  t.equal(seal.open('~a,b)/x', list), '~a,b)/x', 'a urlkey that begins with ~ (a host may) is still read as it is: it holds a )');
  t.notOk(isSealed('~a,b)/x'));
  t.notOk(isSealed(key));
  const sealed = seal.seal(key, list);
  t.ok(isSealed(sealed), 'sealed');
  t.match(sealed, /^~[A-Za-z0-9_-]+$/, '~ and base64url: no `,`, `)` or `/` of a urlkey');
  t.notMatch(sealed, /example|036/, 'no piece of the urlkey in it');
  t.equal(sealed.length, 209, 'a urlkey under 128 bytes: 209 characters, whatever its length');
  t.equal(seal.seal('com,example)/h/036/and/a/longer/path', list).length, 209, 'the same length for a longer urlkey under 128 bytes');
  t.not(seal.seal(key, list), sealed, 'a fresh IV each time');
  t.equal(seal.open(sealed, list), key, 'opened: the urlkey');
  const long = `com,example)/${'x'.repeat(300)}`;
  t.equal(seal.open(seal.seal(long, list), list), long, 'a long urlkey too');

  const refused = async (cursor: string, why: string, k?: CursorSeal) => {
    const err = await thrown(() => (k ?? seal).open(cursor, list));
    t.same(err, { status: 400, message: CURSOR_EXPIRED }, `400 with the one-line reason: ${why}`);
  };
  const body = sealed.slice(1);
  const flipped = body.slice(0, 40) + (body[40] === 'A' ? 'B' : 'A') + body.slice(41);
  await refused(`~${flipped}`, 'one character changed');
  await refused(sealed.slice(0, -1), 'cut short');
  await refused(`${sealed}AAAA`, 'lengthened');
  await refused('~', 'empty');
  await refused('~not base64!', 'not base64url');
  await refused('~' + 'A'.repeat(MAX_SEALED_LENGTH), 'longer than MAX_SEALED_LENGTH');
  await refused(seal.seal(key, 'prefix com,other)/'), 'made for another list');
  await refused(sealed, 'opened under another key (another daemon: before a restart)', new CursorSeal());
  t.equal(CURSOR_EXPIRED.includes('\n'), false, 'one line');
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
  const seal = new CursorSeal();
  const pages = new VisiblePages(index, rules, seal);

  const seen: string[] = [];
  const cursors: string[] = [];
  let after = '';
  let at = '';
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
    const key = seal.open(next!, 'prefix com,example)/');
    t.ok(key > at, 'the cursor moves on');
    t.same(
      hidden.filter((h) => next!.includes(h)),
      [],
      `call ${requests}: the cursor spells no hidden path`,
    );
    if (isSealed(next!)) t.notMatch(next!, /[,)/]|example/, `call ${requests}: a sealed cursor holds nothing of a urlkey`);
    else t.notOk(key.includes('/h/'), `call ${requests}: a cursor as it is only for a shown URL`);
    cursors.push(isSealed(next!) ? `sealed ${key.slice('com,example)/'.length)}` : next!.slice('com,example)/'.length));
    after = next!;
    at = key;
    if (requests > 50) break;
  }
  t.same(seen, [...shownBefore, ...shownAfter], 'every shown URL once, in order; none hidden');
  t.equal(seen.length, shownBefore.length + shownAfter.length);
  t.same(
    cursors,
    ['sealed h/036', 'sealed h/076', 'sealed h/116', 'z09'],
    'each call cut short after its budget of URLs examined (3 shown and 37 hidden, then 40 hidden twice): ' +
      'sealed, and it opens to the last hidden URL examined; a full page of shown URLs: its last, as it is',
  );
  t.equal(requests, 5, 'the hidden run (3 budgets) is stepped over in 4 calls; the last 2 URLs on a fifth page');

  // A sealed cursor altered, or from another list: 400, and the index is not asked.
  const sealed = (await pages.urlsUnder('com,example)/', false, '', pageSize)).next!;
  t.ok(isSealed(sealed));
  calls.list = calls.spans = 0;
  const tampered = sealed.slice(0, 20) + (sealed[20] === 'A' ? 'B' : 'A') + sealed.slice(21);
  t.same(await thrown(() => pages.urlsUnder('com,example)/', false, tampered, pageSize)), { status: 400, message: CURSOR_EXPIRED }, 'altered: 400');
  t.same(await thrown(() => pages.urlsUnder('com,example)/h/', false, sealed, pageSize)), { status: 400, message: CURSOR_EXPIRED }, 'another prefix: 400');
  t.same(await thrown(() => pages.urlsUnder('com,example)/', true, sealed, pageSize)), { status: 400, message: CURSOR_EXPIRED }, 'the domain list: 400');
  t.same([calls.list, calls.spans], [0, 0], 'no query of the index for a cursor refused');

  // Without hidden URLs in the way the page is as before: pageSize shown, its cursor the last shown.
  calls.list = calls.spans = 0;
  const tail = await pages.urlsUnder('com,example)/', false, 'com,example)/h/999', pageSize);
  t.same(
    [tail.page.length, tail.more, tail.next, calls.spans, calls.list],
    [pageSize, true, 'com,example)/z09', 0, 1],
    'a page of shown URLs: full, its cursor the last it shows, one list query',
  );
});
