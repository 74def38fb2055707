/**
 * The index contract (archive/store/index/memento-index.ts) as one suite of
 * cases, run against each index by its own test file: the SQLite index
 * (index-contract.test.ts, the fast suite) and the PostgreSQL one
 * (index-contract-postgres.test.ts, the slow suite: it starts a throwaway
 * server). Each case asserts answers the daemon relies on: writes and the
 * dedup lookups, the read path and its navigation, TimeMap pages, spans,
 * the queries of the pages for people and of the CDX API (access rules
 * included), upkeep queries, and revisits' `refers_to`. Not a test file
 * itself (tap runs `*.test.ts` only).
 */
import type { Test } from 'tap';
import { AccessRules } from '../../../../archive/read/access-rules.js';
import { cdxBody, cdxRows } from '../../../../archive/cdx/answer.js';
import { parseCdxQuery } from '../../../../archive/cdx/query.js';
import type { NewMementoRow } from '../../../../archive/store/index/index-db.js';
import type { MementoIndex } from '../../../../archive/store/index/memento-index.js';
import { namedQueryCases } from './index-contract-queries.js';
import { VisibleIndex } from '../../../../archive/read/visible-index.js';
import { instant } from '../../../../archive/read/nearest.js';

/** 2026-03-01T00:00:00Z, epoch s. */
const T0 = Date.UTC(2026, 2, 1) / 1000;
const DAY = 86400;

const row = (urlkey: string, datetime: number, over: Partial<NewMementoRow> = {}): NewMementoRow => ({
  archive_id: 'a',
  urlkey,
  uri_r: 'http://' + urlkey.replace(/^com,(\w+)\)/, '$1.com'),
  datetime,
  status: 200,
  mime: 'text/html',
  digest: `sha256:${urlkey}-${datetime}`,
  warc_file: 'a-0.warc.gz',
  warc_offset: datetime - T0,
  warc_length: 10,
  client_ip: '127.0.0.1',
  refers_to: null,
  ...over,
});

/** The rows most cases read: two URLs of example.com in archive `a`, one in `b`, one of a subdomain, one whose path sorts differently in byte order and in English. */
export const ROWS: NewMementoRow[] = [
  row('com,example)/', T0),
  row('com,example)/', T0 + DAY),
  row('com,example)/', T0 + 40 * DAY),
  row('com,example)/', T0 + 400 * DAY, { archive_id: 'b', warc_file: 'b-0.warc.gz' }),
  row('com,example)/a', T0 + 2 * DAY),
  row('com,example)/B', T0 + 3 * DAY, { uri_r: 'http://example.com/B' }),
  row('com,example,www)/', T0 + 5 * DAY, { uri_r: 'https://www.example.com/' }),
  row('org,other)/', T0 + 6 * DAY, { status: 404, mime: '', uri_r: 'http://other.org/' }),
];

/** The HTTP status of the error `p` rejects with (0: it resolves). */
const statusOf = (p: Promise<unknown>) =>
  p.then(
    () => 0,
    (err: { status?: number }) => err.status ?? -1,
  );

/** An index opened and closed by each case. */
type Open = () => Promise<MementoIndex>;

export function contract(t: Test, open: Open): void {
  const withIndex = (name: string, fn: (t: Test, index: MementoIndex) => Promise<void>) =>
    t.test(name, async (t) => {
      const index = await open();
      t.teardown(() => index.close());
      await fn(t, index);
    });

  withIndex('insertMany commits rows in one transaction; a row of an existing key replaces it, the later of two in one batch wins', async (t, index) => {
    await index.insertMany(ROWS);
    t.equal(await index.count(), ROWS.length);
    t.equal(index.commits, 1);
    await index.insertMany([row('com,example)/', T0, { status: 500 }), row('com,example)/', T0, { status: 301, mime: 'text/plain' })]);
    t.equal(await index.count(), ROWS.length, 'no new row');
    const [got] = await index.page('a', 'com,example)/', T0 - 1, 1);
    t.match(got, { datetime: T0, status: 301, mime: 'text/plain', client_ip: '127.0.0.1', refers_to: null });
    t.same(await index.byId(got.id), got, 'byId gives the whole row');
    t.equal(await index.byId(got.id + 1000), undefined);
    await index.insertMany([]);
    t.equal(index.commits, 2, 'an empty batch commits nothing');
    // A failing batch writes nothing of itself.
    await t.rejects(index.insertMany([row('com,x)/', T0), { ...row('com,y)/', T0), status: null as unknown as number }]));
    t.equal(await index.count(), ROWS.length, 'all or nothing');
  });

  withIndex('insertNew (ingest) commits rows of keys not in the index in one transaction and leaves none out', async (t, index) => {
    t.same(await index.insertNew(ROWS), [], 'none left out');
    t.equal(await index.count(), ROWS.length);
    t.equal(index.commits, 1);
    t.same(await index.insertNew([]), []);
    t.equal(index.commits, 1, 'an empty batch commits nothing');
  });

  withIndex('atOrBeforeMany: the latest memento at or before t in any archive, whether it is the newest, in order, over 300 pairs', async (t, index) => {
    await index.insertMany([...ROWS, row('com,example)/', T0 + DAY, { archive_id: 'b' })]);
    const pairs = [
      { urlkey: 'com,example)/', t: T0 + DAY + 10 },
      { urlkey: 'com,example)/', t: T0 - 1 },
      { urlkey: 'com,example)/', t: T0 + 500 * DAY },
      { urlkey: 'com,none)/', t: T0 },
      ...Array.from({ length: 301 }, (_, i) => ({ urlkey: 'com,example)/a', t: T0 + i * DAY })),
    ];
    const got = await index.atOrBeforeMany(pairs);
    t.equal(got.length, pairs.length);
    t.match(got[0], { row: { datetime: T0 + DAY, archive_id: 'b' }, isNewest: false }, 'of two at one second, the later row');
    t.same(got[1], { row: undefined, isNewest: false });
    t.match(got[2], { row: { datetime: T0 + 400 * DAY, archive_id: 'b' }, isNewest: true });
    t.same(got[3], { row: undefined, isNewest: true }, 'no memento at all');
    t.same(
      got.slice(4).map((g) => g.row?.datetime ?? null),
      pairs.slice(4).map((p) => (p.t >= T0 + 2 * DAY ? T0 + 2 * DAY : null)),
      'the 301 pairs past the first 300 answered too',
    );
  });

  withIndex('neighbourhood, page, mementoPages and spans; a URL beyond the read cache view asked of the index', async (t, index) => {
    await index.insertMany(ROWS);
    const big = Array.from({ length: 4100 }, (_, i) => row('com,big)/', T0 + i));
    await index.insertMany(big);
    const n = await index.neighbourhood('a', 'com,example)/', T0 + DAY + 5, true);
    t.match(n, {
      first: { datetime: T0 },
      last: { datetime: T0 + 40 * DAY },
      atOrBefore: [{ datetime: T0 + DAY, digest: `sha256:com,example)/-${T0 + DAY}`, warc_length: 10 }, { datetime: T0 }],
      after: [{ datetime: T0 + 40 * DAY }],
    });
    t.equal(await index.neighbourhood('c', 'com,example)/', T0), undefined, 'no memento in that archive');
    for (const [i, within] of [
      await index.neighbourhood('a', 'com,big)/', T0 + 2000),
      await index.neighbourhoodWithin('a', 'com,big)/', T0 + 2000, [[-Infinity, Infinity]]),
    ].entries()) {
      t.same(
        [within?.first.datetime, within?.last.datetime, within?.atOrBefore.map((r) => r.datetime), within?.after.map((r) => r.datetime)],
        [T0, T0 + 4099, [T0 + 2000, T0 + 1999], [T0 + 2001, T0 + 2002]],
        i ? 'neighbourhoodWithin' : 'neighbourhood of a URL with more mementos than a view holds',
      );
    }
    t.same(
      (await index.page('a', 'com,example)/', T0, 5)).map((r) => r.datetime),
      [T0 + DAY, T0 + 40 * DAY],
    );
    const pages: number[] = [];
    for await (const p of index.mementoPages('a', 'com,big)/')) pages.push(p.length);
    t.same(pages, [1000, 1000, 1000, 1000, 100], 'TimeMap pages of 1000');
    const one: unknown[] = [];
    for await (const p of index.mementoPages('b', 'com,example)/')) one.push(...p);
    t.same(one, [{ datetime: T0 + 400 * DAY, uri_r: 'http://example.com/' }]);
    const bySpan = (s: { archive_id: string }[]) => [...s].sort((x, y) => x.archive_id.localeCompare(y.archive_id));
    t.same(bySpan(await index.spans('com,example)/')), [
      { archive_id: 'a', first: T0, last: T0 + 40 * DAY, n: 3 },
      { archive_id: 'b', first: T0 + 400 * DAY, last: T0 + 400 * DAY, n: 1 },
    ]);
    t.same(await index.spans('com,big)/'), [{ archive_id: 'a', first: T0, last: T0 + 4099, n: 4100 }]);
    t.same(await index.spans('com,none)/'), []);
  });

  withIndex('hidden ranges: neighbourhoodWithin, spansWithin and anyWithin count only the mementos in the ranges', async (t, index) => {
    await index.insertMany(ROWS);
    const ranges = [[T0 + DAY, T0 + 2 * DAY] as const, [T0 + 300 * DAY, Infinity] as const];
    const n = await index.neighbourhoodWithin('a', 'com,example)/', T0 + 40 * DAY, ranges);
    t.match(n, { first: { datetime: T0 + DAY }, last: { datetime: T0 + DAY }, atOrBefore: [{ datetime: T0 + DAY }], after: [] });
    t.equal(await index.neighbourhoodWithin('a', 'com,example)/', T0, []), undefined);
    t.same(
      (await index.spansWithin('com,example)/', ranges)).sort((x, y) => x.archive_id.localeCompare(y.archive_id)),
      [
        { archive_id: 'a', first: T0 + DAY, last: T0 + DAY, n: 1 },
        { archive_id: 'b', first: T0 + 400 * DAY, last: T0 + 400 * DAY, n: 1 },
      ],
    );
    t.equal(await index.anyWithin('com,example)/', [[T0 + 2, T0 + 3]]), false);
    t.equal(await index.anyWithin('com,example)/', [[T0 + 300 * DAY, Infinity]]), true);
    t.equal(await index.anyWithin('com,example)/', [[T0 + 300 * DAY, Infinity]], 'a'), false);
    t.equal(await index.anyWithin('com,example)/', []), false);
  });

  withIndex(
    'the queries of the pages for people: calendar, days, captures, nearest, URLs under a prefix and of a domain, sites, recent, counts',
    async (t, index) => {
      await index.insertMany(ROWS);
      const pages = new VisibleIndex(index, new AccessRules([])).pages;
      t.same(await pages.calendar('com,example)/'), {
        total: 4,
        first: T0,
        last: T0 + 400 * DAY,
        years: [
          { year: 2026, n: 3, months: [0, 0, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0] },
          { year: 2027, n: 1, months: [0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0] },
        ],
      });
      t.same(
        [...(await pages.daysOfYear('com,example)/', 2026))],
        [
          ['03-01', 1],
          ['03-02', 1],
          ['04-10', 1],
        ].sort(),
      );
      const between = await pages.capturesBetween('com,example)/', T0 + DAY, T0 + 41 * DAY);
      t.same([between.captures.map((c) => c.datetime), between.before], [[T0 + DAY, T0 + 40 * DAY], T0]);
      const near = await pages.nearest('com,example)/', instant(T0 + 30 * DAY));
      t.same(
        [near?.memento.datetime, near?.prev?.datetime, near?.next?.datetime, near?.first.datetime, near?.last.datetime],
        [T0 + 40 * DAY, T0 + DAY, T0 + 400 * DAY, T0, T0 + 400 * DAY],
      );
      t.equal(await pages.hasCaptureOf('com,example,www)/', 'https://www.example.com/'), true);
      t.equal(await pages.hasCaptureOf('com,example,www)/', 'http://www.example.com/'), false);
      const under = (await pages.urlsUnder('com,example)/', false, '', 10)).page;
      t.same(
        under.map((u) => [u.urlkey, u.n, u.first, u.last]),
        [
          ['com,example)/', 4, T0, T0 + 400 * DAY],
          ['com,example)/B', 1, T0 + 3 * DAY, T0 + 3 * DAY],
          ['com,example)/a', 1, T0 + 2 * DAY, T0 + 2 * DAY],
        ],
        'byte order of urlkeys (B before a)',
      );
      t.same(
        (await pages.urlsUnder('com,example)/', false, 'com,example)/B', 1)).page.map((u) => u.urlkey),
        ['com,example)/a'],
        'keyset paging',
      );
      t.same(
        (await pages.urlsUnder('com,example)/', true, '', 10)).page.map((u) => u.urlkey),
        ['com,example)/', 'com,example)/B', 'com,example)/a', 'com,example,www)/'],
      );
      t.same(await pages.sites(10), [
        { host: 'example.com', urls: 3, captures: 6, last: T0 + 400 * DAY },
        { host: 'www.example.com', urls: 1, captures: 1, last: T0 + 5 * DAY },
        { host: 'other.org', urls: 1, captures: 1, last: T0 + 6 * DAY },
      ]);
      t.same(
        (await pages.recent(2)).map((c) => c.urlkey),
        ['org,other)/', 'com,example,www)/'],
        'newest row first',
      );
      t.equal(await pages.count(), ROWS.length);
      // The access rules over the whole index (archive/read/access-rules.ts shownRules): example.com/ hidden before T0 + 10 days, org,other excluded.
      const rules = new AccessRules([
        { url: 'http://example.com/', action: 'exclude', before: T0 + 10 * DAY },
        { url: 'http://other.org/*', action: 'exclude' },
      ]);
      const shown = new VisibleIndex(index, rules).pages;
      t.equal(await shown.count(), ROWS.length - 3);
      t.same(
        (await shown.sites(10)).map((s) => [s.host, s.captures]),
        [
          ['example.com', 4],
          ['www.example.com', 1],
        ],
      );
    },
  );

  withIndex(
    'two mementos at one second (two archives): the panel (nearestMany) and the /web/ pages pick the higher row id, as nearest does',
    async (t, index) => {
      // Two URLs, each stored at T0 in archives a and b (one second can hold one memento per archive); the row
      // stored second has the higher id: b's for the first URL, a's for the second (so neither archive order decides).
      const tie = 'com,tie)/';
      const tie2 = 'com,tie)/x';
      const at = (urlkey: string, archive_id: string, datetime: number) =>
        row(urlkey, datetime, { archive_id, warc_file: `${archive_id}-0.warc.gz`, digest: `sha256:${urlkey}-${archive_id}-${datetime}` });
      await index.insertMany([at(tie, 'a', T0), at(tie2, 'b', T0)]);
      await index.insertMany([at(tie, 'b', T0), at(tie2, 'a', T0), at(tie, 'a', T0 + DAY), at(tie2, 'b', T0 + DAY)]);
      const id = async (archive: string, urlkey: string) => (await index.rowAt(archive, urlkey, T0))!.id;
      t.ok((await id('b', tie)) > (await id('a', tie)), 'b stored later: the higher id of the first URL');
      t.ok((await id('a', tie2)) > (await id('b', tie2)), 'a stored later: the higher id of the second URL');
      const higher: Record<string, string> = { [tie]: 'b', [tie2]: 'a' };
      const archives = ['a', 'b'].map((a) => ({ id: a, from: -Infinity, until: Infinity }));
      const visible = new VisibleIndex(index, new AccessRules([]), archives);
      // Inside the second asked (T0), nearer after it (T0 - 5: the two at T0 come after), nearer before it (T0 + 5).
      for (const [when, t1] of [
        ['the second asked', T0],
        ['after the time asked', T0 - 5],
        ['before the time asked', T0 + 5],
      ] as const) {
        const many = await visible.nearestMany([tie, tie2], t1, t1, 10, 10);
        for (const [i, urlkey] of [tie, tie2].entries()) {
          const chosen = await visible.nearest(urlkey, instant(t1));
          t.equal(chosen?.archiveId, higher[urlkey], `${when}: nearest (select, then nearer by id) picks the higher id of ${urlkey}`);
          t.match(chosen?.selection.memento, { id: await id(higher[urlkey], urlkey), datetime: T0 });
          t.match(many.found.get(i), { archive_id: higher[urlkey], datetime: T0 }, `${when}: the panel picks the same memento of ${urlkey}`);
          t.match(
            (await visible.pages.nearest(urlkey, instant(t1)))?.memento,
            { archive_id: higher[urlkey], datetime: T0 },
            `${when}: the /web/ pages (select over the index's around) pick the same memento of ${urlkey}`,
          );
        }
      }
    },
  );

  withIndex('CDX walks: text and JSON lines, reverse, closest, prefix ranges with a NUL end, access rules, resume', async (t, index) => {
    await index.insertMany(ROWS);
    const body = async (qs: string, shown: Parameters<typeof cdxRows>[3] = {}) => {
      const q = parseCdxQuery(new URLSearchParams(qs));
      let out = '';
      for await (const s of cdxBody(cdxRows(index, q, [], shown), q)) out += s;
      return out;
    };
    t.equal(
      await body('url=example.com/&fl=urlkey,timestamp,mime,status,filename,archive&limit=2'),
      'com,example)/ 20260301000000 text/html 200 a-0.warc.gz a\ncom,example)/ 20260302000000 text/html 200 a-0.warc.gz a\n',
    );
    t.equal(
      await body('url=other.org/&output=json&fl=timestamp,url,mime,length'),
      '{"timestamp":"20260307000000","url":"http://other.org/","mime":"-","length":"10"}\n',
      'compact JSON, every value a string, - for an empty media type',
    );
    t.equal(
      await body('url=example.com/&matchType=prefix&fl=urlkey,timestamp&sort=reverse'),
      [
        'com,example)/a 20260303000000',
        'com,example)/B 20260304000000',
        'com,example)/ 20270405000000',
        'com,example)/ 20260410000000',
        'com,example)/ 20260302000000',
        'com,example)/ 20260301000000',
        '',
      ].join('\n'),
    );
    t.equal(
      await body('url=example.com/&fl=timestamp&closest=20260315000000&sort=closest&limit=3'),
      '20260302000000\n20260301000000\n20260410000000\n',
      'nearest first',
    );
    // A range ending just after a urlkey (`key + "\0"`, as a query over many urlkeys less the hidden ones is walked).
    const q = parseCdxQuery(new URLSearchParams('url=example.com/&matchType=prefix&fl=urlkey'));
    const lines: string[] = [];
    for await (const p of cdxRows(index, { ...q, ranges: [{ from: 'com,example)/', to: 'com,example)/B\0' }] })) lines.push(p.row.line!);
    t.same(lines, ['com,example)/', 'com,example)/', 'com,example)/', 'com,example)/', 'com,example)/B']);
    const rules = new AccessRules([{ url: 'http://example.com/', action: 'exclude' }]);
    t.equal(
      await body('url=example.com/&matchType=prefix&fl=urlkey', { shown: rules.shownRules() }),
      'com,example)/B\ncom,example)/a\n',
      'rows the rules hide are not read',
    );
    t.equal(await body('url=example.com/&fl=timestamp', { within: [[T0 + 1, T0 + 41 * DAY]] }), '20260302000000\n20260410000000\n');
    const first = await body('url=example.com/&matchType=prefix&fl=urlkey,timestamp&limit=2&showResumeKey=true');
    const key = first.trim().split('\n').pop()!;
    t.equal(
      await body(`url=example.com/&matchType=prefix&fl=urlkey,timestamp&limit=2&resumeKey=${encodeURIComponent(key)}`),
      'com,example)/ 20260410000000\ncom,example)/ 20270405000000\n',
    );
  });

  withIndex(
    'revisits: refers_to round trip through every read, rowAt, revisitOriginal; upkeep queries (fileEnds, rowsOfFile, files, dump, allMementos)',
    async (t, index) => {
      await index.insertMany(ROWS);
      const [orig] = await index.page('a', 'com,example)/', T0 - 1, 1);
      await index.insertMany([
        row('com,example)/', T0 + 50 * DAY, { digest: orig.digest, warc_offset: 5000, refers_to: orig.id }),
        row('com,example)/a', T0 + 51 * DAY, { refers_to: orig.id }),
      ]);
      const revisit = (await index.page('a', 'com,example)/', T0 + 49 * DAY, 1))[0];
      t.equal(revisit.refers_to, orig.id);
      t.equal((await index.byId(revisit.id))?.refers_to, orig.id);
      t.equal((await index.atOrBeforeMany([{ urlkey: 'com,example)/', t: T0 + 60 * DAY }]))[0].row?.refers_to, orig.id);
      t.equal(
        (await index.neighbourhood('a', 'com,example)/', T0 + 50 * DAY, true))?.atOrBefore[0] &&
          ((await index.neighbourhood('a', 'com,example)/', T0 + 50 * DAY, true))!.atOrBefore[0] as { refers_to?: number }).refers_to,
        orig.id,
      );
      t.same(await index.rowAt('a', 'com,example)/', T0 + 50 * DAY), revisit, 'rowAt: by its key');
      t.equal(await index.rowAt('b', 'com,example)/', T0 + 50 * DAY), undefined);
      t.equal(await index.revisitOriginal({ urlkey: 'com,example)/', datetime: T0 }, revisit), orig.id, 'the original the record names');
      t.equal(
        await index.revisitOriginal({ urlkey: 'com,example)/', datetime: T0 + 50 * DAY }, revisit),
        orig.id,
        'a revisit is never an original: found by digest',
      );
      t.equal(await index.revisitOriginal(null, { urlkey: 'com,example)/', datetime: T0 + 60 * DAY, digest: 'sha256:none' }), undefined);
      const dump = await index.dump();
      t.same(
        dump.filter((d) => d.refers_to !== null).map((d) => [d.urlkey, d.datetime, d.refers_to]),
        [
          ['com,example)/', T0 + 50 * DAY, `a ${T0} http://example.com/`],
          ['com,example)/a', T0 + 51 * DAY, `a ${T0} http://example.com/`],
        ],
        'dump names the original',
      );
      t.same(
        dump.map((d) => `${d.archive_id} ${d.urlkey} ${d.datetime}`),
        dump.map((d) => `${d.archive_id} ${d.urlkey} ${d.datetime}`).sort((x, y) => (Buffer.from(x) < Buffer.from(y) ? -1 : 1)),
        'dump is in archive, urlkey (byte order), datetime order',
      );
      t.same((await index.fileEnds('a')).sort(), [{ warc_file: 'a-0.warc.gz', end: 51 * DAY + 10 }], 'the end of the last record of each file');
      t.same(
        (await index.files()).sort((x, y) => x.warc_file.localeCompare(y.warc_file)),
        [
          { warc_file: 'a-0.warc.gz', n: 9 },
          { warc_file: 'b-0.warc.gz', n: 1 },
        ],
      );
      const ofFile = await index.rowsOfFile('b-0.warc.gz');
      t.same(
        ofFile.map((r) => [r.urlkey, r.datetime]),
        [['com,example)/', T0 + 400 * DAY]],
      );
      const all: number[] = [];
      for await (const r of index.allMementos(undefined, 3)) all.push(r.id);
      t.equal(all.length, 10);
      t.same(
        all,
        [...all].sort((x, y) => x - y),
        'by row id',
      );
      const ofB: string[] = [];
      for await (const r of index.allMementos('b')) ofB.push(r.archive_id);
      t.same(ofB, ['b']);
      await index.ping();
    },
  );

  withIndex('rewriteRows (purge): deletes and moves rows in one transaction, all or nothing; compact keeps the rows left', async (t, index) => {
    await index.insertMany(ROWS);
    const rows = await index.rowsOfFile('a-0.warc.gz');
    const [gone, moved, ...rest] = rows;
    const { deleted } = await index.rewriteRows({ drop: [gone.id, 999_999], move: [{ id: moved.id, warc_file: 'a-1.warc.gz', warc_offset: 7 }], at: 0 });
    t.equal(deleted, 1, 'rows deleted (an id that is not there counts nothing)');
    t.equal(await index.byId(gone.id), undefined);
    t.match(await index.byId(moved.id), { warc_file: 'a-1.warc.gz', warc_offset: 7, urlkey: moved.urlkey, datetime: moved.datetime });
    t.same(
      (await index.rowsOfFile('a-0.warc.gz')).map((r) => r.id),
      rest.map((r) => r.id),
    );
    // A failure (a move that breaks a NOT NULL) leaves the deletes of the same call undone.
    await t.rejects(index.rewriteRows({ drop: [rest[0].id], move: [{ id: rest[1].id, warc_file: null as unknown as string, warc_offset: 0 }], at: 0 }));
    t.ok(await index.byId(rest[0].id), 'all or nothing');
    await index.compact();
    t.equal(await index.count(), ROWS.length - 1);
  });

  withIndex(
    'feeds: new mementos only, numbered oldest first, pages from the oldest, the previous of the same URL, the rules applied, a bounded range',
    async (t, index) => {
      await index.insertMany(ROWS);
      const first = (await index.rowAt('a', 'com,example)/', T0))!;
      // A revisit of example.com/ at T0 + 2 days: no entry; the entry after it still compares with T0 + 1 day.
      await index.insertMany([row('com,example)/', T0 + 2 * DAY, { refers_to: first.id, digest: first.digest })]);
      const feeds = new VisibleIndex(index, new AccessRules([])).feeds;
      const one = await feeds.document('com,example)/', false, undefined);
      t.equal(one.total, 4, 'four new mementos of example.com/, the revisit left out');
      t.same(
        one.entries.map((e) => [e.n, e.archive_id, e.datetime, e.prev]),
        [
          [4, 'b', T0 + 400 * DAY, T0 + 40 * DAY],
          [3, 'a', T0 + 40 * DAY, T0 + DAY],
          [2, 'a', T0 + DAY, T0],
          [1, 'a', T0, null],
        ],
        'newest first, across archives, each with the datetime of the entry before it',
      );
      const small = { pageSize: 3 };
      t.same(
        (await feeds.document('com,example)/', false, undefined, small)).entries.map((e) => e.n),
        [4, 3, 2],
        'the subscription: the newest page',
      );
      t.same(
        (await feeds.document('com,example)/', false, 1, small)).entries.map((e) => e.n),
        [3, 2, 1],
        'archive page 1: the oldest three',
      );
      t.equal(await statusOf(feeds.document('com,example)/', false, 2, small)), 404, 'page 2 is not full');
      const prefix = await feeds.document('com,example)/', true, undefined);
      t.same(
        prefix.entries.map((e) => [e.urlkey, e.datetime, e.prev]),
        [
          ['com,example)/', T0 + 400 * DAY, T0 + 40 * DAY],
          ['com,example)/', T0 + 40 * DAY, T0 + DAY],
          ['com,example)/B', T0 + 3 * DAY, null],
          ['com,example)/a', T0 + 2 * DAY, null],
          ['com,example)/', T0 + DAY, T0],
          ['com,example)/', T0, null],
        ],
        'a prefix: every URL under it, newest first; the previous entry is of the same URL',
      );
      t.same(
        (await feeds.document('com,example)/', true, undefined, { pageSize: 2 })).entries.map((e) => [e.n, e.urlkey, e.prev]),
        [
          [6, 'com,example)/', T0 + 40 * DAY],
          [5, 'com,example)/', T0 + DAY],
        ],
        'a page of a prefix: the entry before its oldest of a URL is sought off the page',
      );
      t.same(
        (await feeds.document('com,example)/', true, 2, { pageSize: 2 })).entries.map((e) => [e.n, e.prev]),
        [
          [4, null],
          [3, null],
        ],
      );
      // The rules: example.com/a excluded, example.com/ hidden before T0 + 10 days.
      const rules = new AccessRules([
        { url: 'http://example.com/a', action: 'exclude' },
        { url: 'http://example.com/', action: 'exclude', before: T0 + 10 * DAY },
      ]);
      const hidden = new VisibleIndex(index, rules).feeds;
      t.same(
        (await hidden.document('com,example)/', true, undefined)).entries.map((e) => [e.urlkey, e.datetime, e.prev]),
        [
          ['com,example)/', T0 + 400 * DAY, T0 + 40 * DAY],
          ['com,example)/', T0 + 40 * DAY, null],
          ['com,example)/B', T0 + 3 * DAY, null],
        ],
        'hidden mementos are in no entry, no number and no previous',
      );
      t.equal((await hidden.document('com,example)/a', false, undefined)).total, 0, 'an excluded URL: no entry');
      t.equal((await hidden.document('com,example)/', false, undefined, { examine: 2 })).total, 2, 'hidden rows are not examined (no 400 of their number)');
      t.same(
        (await hidden.document('com,example)/', false, undefined)).entries.map((e) => e.prev),
        [T0 + 40 * DAY, null],
      );
      // The budget: a range of more rows than a feed examines is refused (the revisit counts as a row examined).
      t.equal((await feeds.document('com,example)/', false, undefined, { examine: 5 })).total, 4);
      t.equal(await statusOf(feeds.document('com,example)/', false, undefined, { examine: 4 })), 400);
      t.equal(await statusOf(feeds.document('com,example)/', true, undefined, { examine: 6 })), 400);
    },
  );

  namedQueryCases({ withIndex, rows: ROWS, row, T0, DAY });
}
