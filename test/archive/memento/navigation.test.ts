import t from 'tap';
import { type KnownMemento, linksAcross, mementoLinks, uris } from '../../../archive/memento/navigation.js';
import { instant, nearer, nearerToPeriod, type Selection, select, timestampPeriod } from '../../../archive/read/nearest.js';
import type { MementoRef, Neighbourhood } from '../../../archive/store/index/index-db.js';
import { formatLinkHeader } from '#shared/link.js';

const URI_R = 'http://a.example.org/x?y=1';
const BASE = 'http://arxiv.example.net';
const m = (id: number, iso: string): MementoRef => ({ id, datetime: Date.parse(iso) / 1000, uri_r: URI_R });

// Four captures, a day apart at 12:00 UTC.
const A = m(11, '2001-03-20T12:00:00Z');
const B = m(12, '2001-03-21T12:00:00Z');
const C = m(13, '2001-03-22T12:00:00Z');
const D = m(14, '2001-03-23T12:00:00Z');
const ALL = [A, B, C, D];
const at = (iso: string) => Date.parse(iso) / 1000;

/** The neighbourhood the index returns for instant `t` (see Neighbourhood in archive/store/index/index-db.ts). */
function around(t: number, rows: MementoRef[] = ALL): Neighbourhood {
  return {
    first: rows[0],
    last: rows[rows.length - 1],
    atOrBefore: rows
      .filter((r) => r.datetime <= t)
      .reverse()
      .slice(0, 2),
    after: rows.filter((r) => r.datetime > t).slice(0, 2),
  };
}

const ids = (s: Selection) => ({ memento: s.memento.id, first: s.first.id, last: s.last.id, prev: s.prev?.id, next: s.next?.id });

t.test('RFC 7089 §4.1.1: select picks the memento closest in time, with its neighbours', async (t) => {
  const cases: [string, ReturnType<typeof ids>, string][] = [
    ['2001-03-21T12:00:00Z', { memento: 12, first: 11, last: 14, prev: 11, next: 13 }, 'exactly at a capture'],
    ['2001-03-21T13:00:00Z', { memento: 12, first: 11, last: 14, prev: 11, next: 13 }, 'an hour after B: B'],
    ['2001-03-22T11:00:00Z', { memento: 13, first: 11, last: 14, prev: 12, next: 14 }, 'an hour before C: C'],
    ['2001-03-21T23:59:59Z', { memento: 12, first: 11, last: 14, prev: 11, next: 13 }, 'one second before the midpoint: the earlier'],
    ['2001-03-22T00:00:01Z', { memento: 13, first: 11, last: 14, prev: 12, next: 14 }, 'one second after the midpoint: the later'],
  ];
  for (const [iso, want, rule] of cases) t.same(ids(select(around(at(iso)), instant(at(iso)))), want, `${iso}: ${rule}`);
});

t.test('select: a tie goes to the earlier memento (the state the resource was in at t)', async (t) => {
  const mid = at('2001-03-22T00:00:00Z'); // B + 12 h = C - 12 h
  t.same(ids(select(around(mid), instant(mid))), { memento: 12, first: 11, last: 14, prev: 11, next: 13 });
});

t.test('select: before the first memento → the first; after the last → the last', async (t) => {
  const before = at('1999-01-01T00:00:00Z');
  t.same(ids(select(around(before), instant(before))), { memento: 11, first: 11, last: 14, prev: undefined, next: 12 });
  const after = at('2030-01-01T00:00:00Z');
  t.same(ids(select(around(after), instant(after))), { memento: 14, first: 11, last: 14, prev: 13, next: undefined });
});

t.test('select: a single capture is chosen for any instant', async (t) => {
  for (const iso of ['1999-01-01T00:00:00Z', '2001-03-20T12:00:00Z', '2030-01-01T00:00:00Z']) {
    t.same(ids(select(around(at(iso), [A]), instant(at(iso)))), { memento: 11, first: 11, last: 11, prev: undefined, next: undefined }, iso);
  }
});

t.test('timestampPeriod: 1-14 digits as the period they begin; digits beyond now name now', async (t) => {
  const now = at('2026-11-26T10:00:00Z');
  const cases: [string, string, string][] = [
    ['2024', '2024-01-01T00:00:00Z', '2024-12-31T23:59:59Z'],
    ['202402', '2024-02-01T00:00:00Z', '2024-02-29T23:59:59Z'],
    ['2024031', '2024-03-10T00:00:00Z', '2024-03-19T23:59:59Z'],
    ['20240320203500', '2024-03-20T20:35:00Z', '2024-03-20T20:35:00Z'],
    ['2', '2000-01-01T00:00:00Z', '2999-12-31T23:59:59Z'],
    ['19', '1900-01-01T00:00:00Z', '1999-12-31T23:59:59Z'],
    ['2026', '2026-01-01T00:00:00Z', '2026-12-31T23:59:59Z'],
  ];
  for (const [ts, start, end] of cases) t.same(timestampPeriod(ts, now), { start: at(start), end: at(end) }, ts);
  for (const ts of ['99999999999999', '3', '2099', '20261127', '20261301']) t.same(timestampPeriod(ts, now), { start: now, end: now }, `${ts}: now`);
  for (const ts of ['', 'x', '202413', '20250230', '20251301', '202603320000', '123456789012345']) t.equal(timestampPeriod(ts, now), undefined, ts);
});

t.test('select and nearerToPeriod over a period: its last memento, else the nearest to it', async (t) => {
  const day = { start: at('2001-03-21T00:00:00Z'), end: at('2001-03-21T23:59:59Z') };
  t.same(ids(select(around(day.end), day)).memento, 12, 'the one capture of the day, though C is nearer to its end');
  const week = { start: at('2001-03-19T00:00:00Z'), end: at('2001-03-25T23:59:59Z') };
  t.same(ids(select(around(week.end), week)).memento, 14, 'the last capture of the week');
  const empty = { start: at('2001-03-24T00:00:00Z'), end: at('2001-03-31T23:59:59Z') };
  t.same(ids(select(around(empty.end), empty)).memento, 14, 'none in the period: the nearest to it');
  t.ok(nearerToPeriod(B.datetime, A.datetime, week), 'of two inside, the later');
  t.ok(nearerToPeriod(A.datetime, D.datetime, { start: B.datetime, end: C.datetime }), 'of two outside at the same distance, the earlier');
  t.notOk(nearerToPeriod(D.datetime, A.datetime, { start: B.datetime, end: C.datetime }));
});

const link = (row: MementoRef, rel: string, modifier = '') => ({
  uri: `${BASE}/2001/memento/${new Date(row.datetime * 1000).toISOString().replace(/\D/g, '').slice(0, 14)}${modifier}/${URI_R}`,
  rel,
  datetime: new Date(row.datetime * 1000).toUTCString(),
});

t.test('RFC 7089 §2.2.1: one link per URI-M, relations combined first, prev, next, last, then memento; oldest first', async (t) => {
  const cases: [string, ReturnType<typeof link>[], string][] = [
    ['2001-03-21T12:00:00Z', [link(A, 'first prev memento'), link(B, 'memento'), link(C, 'next memento'), link(D, 'last memento')], 'B of four'],
    ['2001-03-20T12:00:00Z', [link(A, 'first memento'), link(B, 'next memento'), link(D, 'last memento')], 'the first'],
    ['2001-03-22T12:00:00Z', [link(A, 'first memento'), link(B, 'prev memento'), link(C, 'memento'), link(D, 'next last memento')], 'C of four'],
    ['2030-01-01T00:00:00Z', [link(A, 'first memento'), link(C, 'prev memento'), link(D, 'last memento')], 'after the last'],
  ];
  for (const [iso, want, name] of cases) t.same(mementoLinks(BASE, '2001', select(around(at(iso)), instant(at(iso)))), want, name);
});

t.test('RFC 7089 §2.2.1: a single capture is one link, rel="first last memento"', async (t) => {
  const s = select(around(at('2001-03-20T12:00:00Z'), [A]), instant(at('2001-03-20T12:00:00Z')));
  t.same(mementoLinks(BASE, '2001', s), [link(A, 'first last memento')]);
  t.equal(
    formatLinkHeader(mementoLinks(BASE, '2001', s)),
    `<${BASE}/2001/memento/20010320120000/${URI_R}>; rel="first last memento"; datetime="Tue, 20 Mar 2001 12:00:00 GMT"`,
    'as a Link header (RFC 7089 §2.2.1 shape, IMF-fixdate datetime)',
  );
});

t.test('RFC 7089 §2.2.1: two captures, the later selected: rel="first prev memento" and "last memento"', async (t) => {
  const s = select(around(at('2001-03-21T12:00:00Z'), [A, B]), instant(at('2001-03-21T12:00:00Z')));
  t.same(mementoLinks(BASE, '2001', s), [link(A, 'first prev memento'), link(B, 'last memento')]);
});

t.test('mementoLinks: every URI-M is of the form asked for (id_ raw, ol_ original links)', async (t) => {
  const s = select(around(at('2001-03-20T12:00:00Z'), [A, B]), instant(at('2001-03-20T12:00:00Z')));
  t.same(mementoLinks(BASE, '2001', s, 'raw'), [link(A, 'first memento', 'id_'), link(B, 'next last memento', 'id_')]);
  t.same(mementoLinks(BASE, '2001', s, 'links'), [link(A, 'first memento', 'ol_'), link(B, 'next last memento', 'ol_')]);
});

t.test('linksAcross (the redirector): first/prev/next/last over the mementos of several archives, shaped as mementoLinks', async (t) => {
  const k = (archive: string, iso: string): KnownMemento => ({ uri: `${BASE}/${archive}/memento/${iso.slice(0, 4)}/${URI_R}`, datetime: at(iso) });
  // Archive "old" holds 1995 and 1996, "mid" 2005 and 2007, "new" 2026: the redirector knows each one's first and last.
  const [o95, o96, m05, m07, n26] = [
    k('old', '1995-01-01T00:00:00Z'),
    k('old', '1996-01-01T00:00:00Z'),
    k('mid', '2005-01-01T00:00:00Z'),
    k('mid', '2007-01-01T00:00:00Z'),
    k('new', '2026-01-01T00:00:00Z'),
  ];
  const rels = (chosen: KnownMemento, known: KnownMemento[], detail?: 'all' | 'ends' | 'chosen') =>
    linksAcross(chosen, known, detail).map((l) => [l.uri, l.rel]);
  t.same(
    rels(m05, [m05, m07, o95, o96, n26]),
    [
      [o95.uri, 'first memento'],
      [o96.uri, 'prev memento'],
      [m05.uri, 'memento'],
      [m07.uri, 'next memento'],
      [n26.uri, 'last memento'],
    ],
    'the chosen archive’s first memento: prev is the last of the archive before it',
  );
  t.same(
    rels(m07, [m05, m07, o95, o96, n26]),
    [
      [o95.uri, 'first memento'],
      [m05.uri, 'prev memento'],
      [m07.uri, 'memento'],
      [n26.uri, 'next last memento'],
    ],
    'next is the first of the archive after it; relations combined on one URI-M',
  );
  t.same(
    rels(n26, [n26, o95, m07]),
    [
      [o95.uri, 'first memento'],
      [m07.uri, 'prev memento'],
      [n26.uri, 'last memento'],
    ],
    'the newest',
  );
  t.same(rels(m05, [m05]), [[m05.uri, 'first last memento']], 'one memento known: as mementoLinks has it');
  t.same(
    rels(m05, [o95, m07, n26], 'ends'),
    [
      [o95.uri, 'first memento'],
      [m05.uri, 'memento'],
      [n26.uri, 'last memento'],
    ],
    'ends: no prev/next',
  );
  t.same(rels(m05, [o95, m07, n26], 'chosen'), [[m05.uri, 'memento']], 'chosen only');
  t.equal(linksAcross(m05, [o95])[0].datetime, 'Sun, 01 Jan 1995 00:00:00 GMT', 'datetime as IMF-fixdate');
});

t.test('uris: the archive URL space, absolute under base', async (t) => {
  const row = { datetime: at('2001-03-20T20:35:00Z'), uri_r: URI_R };
  t.equal(uris.memento(BASE, '2001', row), `${BASE}/2001/memento/20010320203500/${URI_R}`);
  t.equal(uris.memento(BASE, '2001', row, 'raw'), `${BASE}/2001/memento/20010320203500id_/${URI_R}`);
  t.equal(uris.memento(BASE, '2001', row, 'links'), `${BASE}/2001/memento/20010320203500ol_/${URI_R}`);
  t.equal(uris.timegate(BASE, '2001', URI_R), `${BASE}/2001/timegate/${URI_R}`);
  t.equal(uris.timemap(BASE, '2001', URI_R), `${BASE}/2001/timemap/link/${URI_R}`);
  t.equal(uris.timemapJson(BASE, '2001', URI_R), `${BASE}/2001/timemap/json/${URI_R}`);
  t.equal(uris.timebundle(BASE, '2001', URI_R), `${BASE}/2001/timebundle/${URI_R}`);
  t.equal(uris.redirector(BASE, URI_R), `${BASE}/tg/${URI_R}`);
  t.equal(uris.indexTimemap(BASE, URI_R), `${BASE}/tg/timemap/${URI_R}`);
});

t.test('the one nearest rule: of two mementos at one second (two archives), the higher row id', async (t) => {
  const p = instant(1000);
  t.ok(nearer({ id: 7, datetime: 990 }, { id: 3, datetime: 990 }, p), 'same second: the higher id');
  t.notOk(nearer({ id: 3, datetime: 990 }, { id: 7, datetime: 990 }, p));
  t.ok(nearer({ id: 1, datetime: 990 }, { id: 9, datetime: 1010 }, p), 'same distance: the earlier, whatever the ids');
  t.ok(nearer({ id: 1, datetime: 1001 }, { id: 9, datetime: 980 }, p), 'the smaller distance');
  t.notOk(nearer({ id: 5, datetime: 990 }, { id: 5, datetime: 990 }, p), 'not nearer than itself');
});
