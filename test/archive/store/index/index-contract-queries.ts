/**
 * The index contract's cases of the named queries (archive/store/index/:
 * the index's `pages`, `panel` and `keys`), asked directly, with the
 * datetimes the access rules show of one URL (`within`) and with the rules
 * over the whole index (AccessRules `shownRules`). Part of the suite of
 * index-contract.ts, run on SQLite and on PostgreSQL. Not a test file
 * itself (tap runs `*.test.ts` only).
 */
import type { Test } from 'tap';
import { AccessRules } from '../../../../archive/read/access-rules.js';
import type { NewMementoRow } from '../../../../archive/store/index/index-db.js';
import type { MementoIndex } from '../../../../archive/store/index/memento-index.js';

/** What the cases need of index-contract.ts: its case runner and fixtures. */
export interface Fixtures {
  withIndex: (name: string, fn: (t: Test, index: MementoIndex) => Promise<void>) => void;
  rows: NewMementoRow[];
  row: (urlkey: string, datetime: number, over?: Partial<NewMementoRow>) => NewMementoRow;
  T0: number;
  DAY: number;
}

export function namedQueryCases({ withIndex, rows, row, T0, DAY }: Fixtures): void {
  /** What the rules show of `com,example)/`: from T0 + 10 days on. */
  const LATE = [[T0 + 10 * DAY, Infinity]] as const;

  withIndex('pages: the queries of one URL, over every memento and over the datetimes the rules show', async (t, index) => {
    await index.insertMany(rows);
    const key = 'com,example)/';
    t.same(await index.pages.months(key), [
      { month: '2026-03', n: 2, first: T0, last: T0 + DAY },
      { month: '2026-04', n: 1, first: T0 + 40 * DAY, last: T0 + 40 * DAY },
      { month: '2027-04', n: 1, first: T0 + 400 * DAY, last: T0 + 400 * DAY },
    ]);
    t.same(
      await index.pages.months(key, LATE),
      [
        { month: '2026-04', n: 1, first: T0 + 40 * DAY, last: T0 + 40 * DAY },
        { month: '2027-04', n: 1, first: T0 + 400 * DAY, last: T0 + 400 * DAY },
      ],
      'the hidden March captures are in no month',
    );
    t.same(await index.pages.months(key, []), [], 'nothing shown: no month');
    t.same(await index.pages.months('com,none)/'), []);
    const [y2026, y2027] = [Date.UTC(2026, 0, 1) / 1000, Date.UTC(2027, 0, 1) / 1000];
    t.same(
      [...(await index.pages.days(key, y2026, y2027))],
      [
        ['03-01', 1],
        ['03-02', 1],
        ['04-10', 1],
      ],
    );
    t.same([...(await index.pages.days(key, y2026, y2027, LATE))], [['04-10', 1]]);
    t.same(
      (await index.pages.between(key, T0, T0 + 41 * DAY, 10)).map((c) => c.datetime),
      [T0, T0 + DAY, T0 + 40 * DAY],
    );
    t.same(
      (await index.pages.between(key, T0, T0 + 41 * DAY, 2)).map((c) => c.datetime),
      [T0, T0 + DAY],
      'at most limit, oldest first',
    );
    t.same(
      await index.pages.between(key, T0, T0 + 41 * DAY, 10, LATE),
      [
        {
          archive_id: 'a',
          urlkey: key,
          uri_r: 'http://example.com/',
          datetime: T0 + 40 * DAY,
          status: 200,
          mime: 'text/html',
          digest: `sha256:${key}-${T0 + 40 * DAY}`,
        },
      ],
      'a capture without its WARC location',
    );
    t.equal(await index.pages.before(key, T0 + 40 * DAY), T0 + DAY);
    t.equal(await index.pages.before(key, T0 + 40 * DAY, LATE), undefined, 'the one before is hidden');
    t.equal(await index.pages.before(key, T0 + 41 * DAY, LATE), T0 + 40 * DAY);
    const around = await index.pages.around(key, T0 + 30 * DAY);
    t.same(
      around && [around.first.datetime, around.last.datetime, around.atOrBefore.map((c) => c.datetime), around.after.map((c) => c.datetime)],
      [T0, T0 + 400 * DAY, [T0 + DAY, T0], [T0 + 40 * DAY, T0 + 400 * DAY]],
      'two on each side: newest first before, oldest first after',
    );
    t.equal(around?.last.archive_id, 'b', 'one timeline of every archive');
    const late = await index.pages.around(key, T0 + 30 * DAY, LATE);
    t.same(late && [late.first.datetime, late.last.datetime, late.atOrBefore.map((c) => c.datetime), late.after.map((c) => c.datetime)], [
      T0 + 40 * DAY,
      T0 + 400 * DAY,
      [],
      [T0 + 40 * DAY, T0 + 400 * DAY],
    ]);
    t.equal(await index.pages.around(key, T0, []), undefined, 'nothing shown: none');
    t.equal(await index.pages.hasUriR(key, 'http://example.com/'), true);
    t.equal(await index.pages.hasUriR(key, 'https://example.com/'), false, 'the scheme counts');
    t.equal(await index.pages.hasUriR(key, 'http://example.com/', [[T0, T0 + 1]]), true);
    t.equal(await index.pages.hasUriR(key, 'http://example.com/', [[T0 + 1, T0 + DAY]]), false, 'none in the spans shown');
  });

  withIndex('pages: URL lists under a prefix and of a domain, keyset paging', async (t, index) => {
    await index.insertMany([...rows, row('com,example:8080)/p', T0), row('com,examples)/', T0), row('com,example-cdn)/', T0)]);
    t.same(
      (await index.pages.under('com,example)/', '', 2)).map((u) => [u.urlkey, u.uri_r, u.n, u.first, u.last]),
      [
        ['com,example)/', 'http://example.com/', 4, T0, T0 + 400 * DAY],
        ['com,example)/B', 'http://example.com/B', 1, T0 + 3 * DAY, T0 + 3 * DAY],
      ],
    );
    t.same(
      (await index.pages.ofDomain('com,example', '', 10)).map((u) => u.urlkey),
      ['com,example)/', 'com,example)/B', 'com,example)/a', 'com,example,www)/', 'com,example:8080)/p'],
      'the host, its subdomains and ports; not com,examples nor com,example-cdn',
    );
    t.same(
      (await index.pages.ofDomain('com,example', 'com,example)/a', 1)).map((u) => u.urlkey),
      ['com,example,www)/'],
    );
  });

  withIndex('pages: sites, recent captures and the count over the rules of the whole index agree with the verdict of each memento', async (t, index) => {
    await index.insertMany(rows);
    const access = new AccessRules([
      { url: 'http://example.com/*', action: 'block' },
      { url: 'http://example.com/a', action: 'allow' },
      { url: 'http://example.com/', action: 'allow', after: T0 + 10 * DAY },
      { url: 'http://other.org/*', action: 'exclude' },
    ]);
    const now = T0 + 1000 * DAY;
    const shown = access.shownRules(now);
    t.equal(shown.length, 4, 'one entry per rule');
    t.same(
      shown.slice(0, 2),
      [
        { key: 'com,example)/a', prefix: false, from: -Infinity, until: Infinity, shown: true },
        { key: 'com,example)/', prefix: false, from: T0 + 10 * DAY, until: Infinity, shown: true },
      ],
      'the most specific first',
    );
    t.equal(await index.pages.count(), rows.length);
    t.equal(await index.pages.count(shown), 4);
    t.same(await index.pages.sites(10), [
      { surtHost: 'com,example', urls: 3, captures: 6, last: T0 + 400 * DAY },
      { surtHost: 'com,example,www', urls: 1, captures: 1, last: T0 + 5 * DAY },
      { surtHost: 'org,other', urls: 1, captures: 1, last: T0 + 6 * DAY },
    ]);
    t.same(
      await index.pages.sites(10, shown),
      [
        { surtHost: 'com,example', urls: 2, captures: 3, last: T0 + 400 * DAY },
        { surtHost: 'com,example,www', urls: 1, captures: 1, last: T0 + 5 * DAY },
      ],
      'hidden captures in no count; a site of hidden captures only not listed',
    );
    t.same(
      (await index.pages.sites(1, shown)).map((s) => s.surtHost),
      ['com,example'],
      'at most limit',
    );
    const recent = await index.pages.recent(100, shown);
    const byVerdict = [...rows].reverse().filter((r) => access.verdict(r.urlkey, r.datetime, now) === 'allow');
    t.same(
      recent.map((c) => [c.urlkey, c.datetime]),
      byVerdict.map((r) => [r.urlkey, r.datetime]),
      'the rows the verdict shows, newest row first',
    );
    t.equal(recent.length, 4);
    t.same(
      (await index.pages.recent(2)).map((c) => c.urlkey),
      ['org,other)/', 'com,example,www)/'],
    );
    t.same(access.shownRules(now).length, 4, 'asked again: the same rules');
    t.same(new AccessRules([{ url: 'http://example.com/*', action: 'allow' }]).shownRules(now), [], 'rules that hide nothing: none listed');
  });

  withIndex('panel: the capture nearest to t of each urlkey, and what lies between it and the page, in one statement', async (t, index) => {
    const same = (dt: number) => row('com,same)/', dt, { digest: 'sha256:same' });
    await index.insertMany([...rows, same(T0), same(T0 + 1), same(T0 + 2), same(T0 + 3)]);
    const keys = ['com,example)/', 'com,example)/a', 'com,none)/', 'com,example,www)/'];
    const sorted = async (...args: Parameters<MementoIndex['panel']['capturesAt']>) => (await index.panel.capturesAt(...args)).sort((a, b) => a.i - b.i);
    t.same(await sorted(keys, T0 + 30 * DAY, T0 + 30 * DAY, 100), [
      { i: 0, archive_id: 'a', uri_r: 'http://example.com/', datetime: T0 + 40 * DAY, changed: false, more: false },
      { i: 1, archive_id: 'a', uri_r: 'http://example.com/a', datetime: T0 + 2 * DAY, changed: false, more: false },
      { i: 3, archive_id: 'a', uri_r: 'https://www.example.com/', datetime: T0 + 5 * DAY, changed: false, more: false },
    ]);
    t.match(
      await sorted(['com,example)/'], T0, T0 + 400 * DAY + 1, 100),
      [{ i: 0, datetime: T0, changed: true, more: false }],
      'another digest in between: changed',
    );
    t.match(await sorted(['com,example)/'], T0, T0 + 400 * DAY + 1, 1), [{ datetime: T0, changed: true, more: true }], 'more in between than compared');
    t.match(await sorted(['com,same)/'], T0, T0 + 10, 2), [{ datetime: T0, changed: false, more: true }], 'the first compared are the same: not known');
    t.match(await sorted(['com,same)/'], T0, T0 + 10, 3), [{ datetime: T0, changed: false, more: false }]);
    t.match(
      await sorted(['com,example)/'], T0 + 30 * DAY, T0 + 30 * DAY, 100, [[T0, T0 + 10 * DAY]]),
      [{ i: 0, datetime: T0 + DAY }],
      'only the captures shown: the nearer one is hidden',
    );
    t.match(
      await sorted(['com,example)/'], T0 + 500 * DAY, T0, 100, [[T0 + 100 * DAY, Infinity]]),
      [{ datetime: T0 + 400 * DAY, changed: false, more: false }],
      'the hidden ones between are not compared',
    );
    t.same(await sorted(['com,example)/'], T0, T0, 100, []), [], 'nothing shown: none');
    t.same(await sorted([], T0, T0, 100), []);
  });

  withIndex('keys: stored urlkeys under prefixes (batched), the row ids of a purge selection', async (t, index) => {
    await index.insertMany(rows);
    t.same(await index.keys.under(['com,example)/', 'org,', 'org,']), ['com,example)/', 'com,example)/B', 'com,example)/a', 'org,other)/']);
    const many = Array.from({ length: 150 }, (_, i) => `net,z${i})/`);
    t.same(await index.keys.under([...many, 'com,example)/a']), ['com,example)/a'], 'more prefixes than one statement takes');
    t.same(await index.keys.under([]), []);
    const datetimes = async (ids: number[]) => (await Promise.all(ids.map((id) => index.byId(id)))).map((r) => `${r?.urlkey} ${r!.datetime - T0}`).sort();
    t.same(
      await datetimes(await index.keys.rowIds({ key: 'com,example)/', prefix: false })),
      [0, DAY, 40 * DAY, 400 * DAY].map((d) => `com,example)/ ${d}`).sort(),
    );
    t.same(
      await datetimes(await index.keys.rowIds({ key: 'com,example)/', prefix: true }, { after: T0 + DAY, before: T0 + 400 * DAY })),
      [`com,example)/ ${DAY}`, `com,example)/ ${40 * DAY}`, `com,example)/B ${3 * DAY}`, `com,example)/a ${2 * DAY}`].sort(),
      'after is inclusive, before exclusive',
    );
  });
}
