import t from 'tap';
import type { Holdings } from '../../../archive/memento/choice.js';
import {
  indexTimemapHead,
  jsonTimemap,
  LINK_FORMAT,
  linkFormat,
  type TimemapEntry,
  timemapHead,
  timemapMementoLinks,
} from '../../../archive/memento/timemap.js';
import type { ArchiveSpan } from '../../../archive/spans.js';
import { formatLink, type Link, parseLinks } from '#shared/link.js';

const BASE = 'http://arxiv.example.net';
const URI_R = 'http://a.example.org/x?y=1';
const at = (iso: string) => Date.parse(iso) / 1000;
const T1 = at('2001-03-20T20:35:00Z');
const T2 = at('2001-03-21T08:00:00Z');
const T3 = at('2001-03-22T12:30:15Z');

/** Rows of a TimeMap, oldest first. */
function rows(list: number[], uriR = URI_R): TimemapEntry[] {
  return list.map((datetime) => ({ datetime, uri_r: uriR }));
}
/** `list` as the index hands it on: an async generator of pages of up to `size` (1,000, as the index reads them). */
async function* paged<T>(list: T[], size = 1000): AsyncGenerator<T[]> {
  for (let i = 0; i < list.length; i += size) yield list.slice(i, i + size);
}
async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

t.test('RFC 7089 §5.1: a TimeMap starts with original, self (type, from, until) and timegate', async (t) => {
  t.same(timemapHead(BASE, '2001', URI_R, { first: T1, last: T3 }), [
    { uri: URI_R, rel: 'original' },
    {
      uri: `${BASE}/2001/timemap/link/${URI_R}`,
      rel: 'self',
      type: 'application/link-format',
      from: 'Tue, 20 Mar 2001 20:35:00 GMT',
      until: 'Thu, 22 Mar 2001 12:30:15 GMT',
    },
    { uri: `${BASE}/2001/timegate/${URI_R}`, rel: 'timegate' },
  ]);
  t.equal(LINK_FORMAT, 'application/link-format');
});

t.test('RFC 7089 §5.1: memento links oldest first, with datetime; the first and last also carry first/last', async (t) => {
  const m = (ts: string, rel: string, datetime: string): Link => ({ uri: `${BASE}/2001/memento/${ts}/${URI_R}`, rel, datetime });
  t.same(timemapMementoLinks(rows([T1, T2, T3]), BASE, '2001', { first: T1, last: T3 }), [
    m('20010320203500', 'first memento', 'Tue, 20 Mar 2001 20:35:00 GMT'),
    m('20010321080000', 'memento', 'Wed, 21 Mar 2001 08:00:00 GMT'),
    m('20010322123015', 'last memento', 'Thu, 22 Mar 2001 12:30:15 GMT'),
  ]);
  t.same(
    timemapMementoLinks(rows([T2]), BASE, '2001', { first: T2, last: T2 }),
    [m('20010321080000', 'first last memento', 'Wed, 21 Mar 2001 08:00:00 GMT')],
    'one memento: rel="first last memento" (RFC 7089 §2.2.1)',
  );
  const asCaptured = timemapMementoLinks(rows([T1], 'https://A.example.org/x'), BASE, '2001', { first: T1, last: T1 });
  t.equal(asCaptured[0].uri, `${BASE}/2001/memento/20010320203500/https://A.example.org/x`, 'each URI-M names the URI-R as captured');
});

t.test('RFC 6690 §2: link-format is links separated by "," and a line end, the head first, ending with a line end', async (t) => {
  const head = timemapHead(BASE, '2001', URI_R, { first: T1, last: T2 });
  const mementos = timemapMementoLinks(rows([T1, T2]), BASE, '2001', { first: T1, last: T2 });
  const text = (await collect(linkFormat(head, paged(mementos)))).join('');
  t.equal(
    text,
    [
      `<${URI_R}>; rel="original",`,
      `<${BASE}/2001/timemap/link/${URI_R}>; rel="self"; type="application/link-format"; from="Tue, 20 Mar 2001 20:35:00 GMT"; until="Wed, 21 Mar 2001 08:00:00 GMT",`,
      `<${BASE}/2001/timegate/${URI_R}>; rel="timegate",`,
      `<${BASE}/2001/memento/20010320203500/${URI_R}>; rel="first memento"; datetime="Tue, 20 Mar 2001 20:35:00 GMT",`,
      `<${BASE}/2001/memento/20010321080000/${URI_R}>; rel="last memento"; datetime="Wed, 21 Mar 2001 08:00:00 GMT"`,
      '',
    ].join('\n'),
  );
  t.same(parseLinks(text), [...head, ...mementos], 'the document parses back to the same links');
  t.equal((await collect(linkFormat(head, paged([])))).join(''), head.map(formatLink).join(',\n') + '\n', 'no mementos: the head alone, with its line end');
});

t.test('linkFormat: a long TimeMap comes in several chunks whose concatenation is the same document', async (t) => {
  const n = 5000;
  const times = Array.from({ length: n }, (_, i) => T1 + i * 3600);
  const span = { first: times[0], last: times[n - 1] };
  const head = timemapHead(BASE, '2001', URI_R, span);
  const links = timemapMementoLinks(rows(times), BASE, '2001', span);
  const chunks = await collect(linkFormat(head, paged(links, 100)));
  t.ok(chunks.length > 10, `several chunks (${chunks.length}), so the TimeMap streams`);
  t.ok(
    chunks.every((c) => c.length > 0),
    'no empty chunk',
  );
  const text = chunks.join('');
  t.equal(text, [...head, ...links].map(formatLink).join(',\n') + '\n', 'the concatenation is the one-piece document');
  t.equal(parseLinks(text).length, n + 3, 'every link is there once');
  t.notOk(/,\n,|\n\n/.test(text), 'no empty link between chunks');
});

t.test('jsonTimemap: the mementoweb.org timemap-json shape, ISO 8601 UTC datetimes without milliseconds', async (t) => {
  const doc = JSON.parse((await collect(jsonTimemap(paged(rows([T1, T2, T3])), BASE, '2001', URI_R))).join(''));
  const m = (iso: string, ts: string) => ({ datetime: iso, uri: `${BASE}/2001/memento/${ts}/${URI_R}` });
  t.same(doc, {
    original_uri: URI_R,
    timegate_uri: `${BASE}/2001/timegate/${URI_R}`,
    timemap_uri: { link_format: `${BASE}/2001/timemap/link/${URI_R}`, json_format: `${BASE}/2001/timemap/json/${URI_R}` },
    mementos: {
      list: [m('2001-03-20T20:35:00Z', '20010320203500'), m('2001-03-21T08:00:00Z', '20010321080000'), m('2001-03-22T12:30:15Z', '20010322123015')],
      first: m('2001-03-20T20:35:00Z', '20010320203500'),
      last: m('2001-03-22T12:30:15Z', '20010322123015'),
    },
  });
});

t.test('jsonTimemap: no mementos gives an empty list and first/last null', async (t) => {
  const doc = JSON.parse((await collect(jsonTimemap(paged(rows([])), BASE, '2001', URI_R))).join(''));
  t.same(doc.mementos, { list: [], first: null, last: null });
  t.equal(doc.original_uri, URI_R);
});

t.test('jsonTimemap: a long TimeMap comes in chunks that concatenate to valid JSON with every memento', async (t) => {
  const n = 3000;
  const times = Array.from({ length: n }, (_, i) => T1 + i * 61);
  const chunks = await collect(jsonTimemap(paged(rows(times), 700), BASE, '2001', URI_R));
  t.ok(chunks.length > 1, `several chunks (${chunks.length})`);
  const doc = JSON.parse(chunks.join(''));
  t.equal(doc.mementos.list.length, n);
  t.same(doc.mementos.first, doc.mementos.list[0]);
  t.same(doc.mementos.last, doc.mementos.list[n - 1]);
  t.ok(
    doc.mementos.list.every((x: { datetime: string }) => /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/.test(x.datetime)),
    'every datetime is YYYY-MM-DDThh:mm:ssZ',
  );
});

// Index TimeMap (docs/url-space.md: every archive's TimeMap with from/until, docs/architecture.md "Archives and time spans").
const LOCAL_OLD: ArchiveSpan = { id: 'old', from: -Infinity, until: at('2005-01-01T00:00:00Z') };
const REMOTE: ArchiveSpan = {
  id: 'far',
  from: at('2005-01-01T00:00:00Z'),
  until: at('2010-01-01T00:00:00Z'),
  timegate: 'http://other.example/far/timegate/',
  timemap: 'http://other.example/far/timemap/link/',
};
const LOCAL_MID: ArchiveSpan = { id: 'mid', from: at('2010-01-01T00:00:00Z'), until: at('2015-01-01T00:00:00Z') };
const REMOTE_NEW: ArchiveSpan = {
  id: 'next',
  from: at('2015-01-01T00:00:00Z'),
  until: Infinity,
  timegate: 'http://third.example/next/timegate/',
  timemap: 'http://third.example/next/timemap/link/',
};
const ALL = [LOCAL_OLD, REMOTE, LOCAL_MID, REMOTE_NEW];
const timemapOf = (a: ArchiveSpan) => (a.timemap ? a.timemap + URI_R : `${BASE}/${a.id}/timemap/link/${URI_R}`);

t.test('indexTimemapHead: original, self over the known spans, the redirector as timegate, one timemap link per archive that may have it', async (t) => {
  const holdings: Holdings = new Map([
    ['old', { state: 'yes', first: T1, last: T2 }],
    ['far', { state: 'yes' }], // a remote TimeMap without from/until in its self link
    ['mid', { state: 'no' }],
    ['next', { state: 'yes', first: at('2016-05-01T10:00:00Z'), last: at('2017-01-02T03:04:05Z') }],
  ]);
  t.same(indexTimemapHead(BASE, URI_R, ALL, holdings, timemapOf), [
    { uri: URI_R, rel: 'original' },
    {
      uri: `${BASE}/tg/timemap/${URI_R}`,
      rel: 'self',
      type: LINK_FORMAT,
      from: 'Tue, 20 Mar 2001 20:35:00 GMT',
      until: 'Mon, 02 Jan 2017 03:04:05 GMT',
    },
    { uri: `${BASE}/tg/${URI_R}`, rel: 'timegate' },
    {
      uri: `${BASE}/old/timemap/link/${URI_R}`,
      rel: 'timemap',
      type: LINK_FORMAT,
      from: 'Tue, 20 Mar 2001 20:35:00 GMT',
      until: 'Wed, 21 Mar 2001 08:00:00 GMT',
    },
    {
      uri: `http://other.example/far/timemap/link/${URI_R}`,
      rel: 'timemap',
      type: LINK_FORMAT,
      from: 'Sat, 01 Jan 2005 00:00:00 GMT',
      until: 'Fri, 01 Jan 2010 00:00:00 GMT',
    },
    {
      uri: `http://third.example/next/timemap/link/${URI_R}`,
      rel: 'timemap',
      type: LINK_FORMAT,
      from: 'Sun, 01 May 2016 10:00:00 GMT',
      until: 'Mon, 02 Jan 2017 03:04:05 GMT',
    },
  ]);
});

t.test('indexTimemapHead: an archive that did not answer is listed with its configured span, open ends left out', async (t) => {
  const holdings: Holdings = new Map([
    ['mid', { state: 'yes', first: T3, last: T3 }],
    ['next', { state: 'unknown' }],
  ]);
  const links = indexTimemapHead(BASE, URI_R, ALL, holdings, timemapOf);
  t.same(
    links[1],
    { uri: `${BASE}/tg/timemap/${URI_R}`, rel: 'self', type: LINK_FORMAT, from: formatHttp(T3), until: formatHttp(T3) },
    'self: the known span only',
  );
  t.same(links.slice(3), [
    { uri: `${BASE}/mid/timemap/link/${URI_R}`, rel: 'timemap', type: LINK_FORMAT, from: formatHttp(T3), until: formatHttp(T3) },
    { uri: `http://third.example/next/timemap/link/${URI_R}`, rel: 'timemap', type: LINK_FORMAT, from: 'Thu, 01 Jan 2015 00:00:00 GMT' },
  ]);
});

t.test('indexTimemapHead: no holding with first/last known: self has no from/until', async (t) => {
  const links = indexTimemapHead(BASE, URI_R, ALL, new Map([['next', { state: 'unknown' }]]), timemapOf);
  t.same(links[1], { uri: `${BASE}/tg/timemap/${URI_R}`, rel: 'self', type: LINK_FORMAT });
  t.equal(links.length, 4, 'original, self, timegate and the one timemap');
  const none = indexTimemapHead(BASE, URI_R, ALL, new Map(), timemapOf);
  t.same(
    none.map((l) => l.rel),
    ['original', 'self', 'timegate'],
    'no holdings: no timemap link',
  );
});

t.test('indexTimemapHead: timemapOf names each archive’s TimeMap, in the order of the archives', async (t) => {
  const asked: string[] = [];
  const holdings: Holdings = new Map([
    ['next', { state: 'yes' }],
    ['old', { state: 'yes', first: T1, last: T1 }],
  ]);
  const links = indexTimemapHead(BASE, URI_R, ALL, holdings, (a) => {
    asked.push(a.id);
    return `urn:tm:${a.id}`;
  });
  t.same(
    links.filter((l) => l.rel === 'timemap').map((l) => l.uri),
    ['urn:tm:old', 'urn:tm:next'],
    'oldest first, whatever the order of the holdings',
  );
  t.same(asked.sort(), ['next', 'old'], 'asked for the listed archives only');
});

function formatHttp(s: number): string {
  return new Date(s * 1000).toUTCString();
}
