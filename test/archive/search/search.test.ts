/**
 * Full-text search and phrase history (`GET /search`, `GET /history`,
 * docs/http-api.md): a terms page that changed over time (the phrase
 * appears, is served again as a revisit, disappears, reappears), pages
 * with scripts, styles and comments, an excluded page, stored markup in
 * text; what the JSON and HTML answers hold, the date window, paging,
 * facets, bad and hostile queries (purge and reindex: search-upkeep.test.ts).
 */
import t from 'tap';
import { parseFeed } from '@rowanmanning/feed-parser';
import { request, startArchive } from '../../helpers/archive.js';
import { json, load, PHRASE, RULES } from './helpers.js';

const q = (s: string) => encodeURIComponent(s);

t.test('search: words, phrases, prefixes; only visible text and title; revisits and hidden pages are no hits', async (t) => {
  const a = await startArchive(RULES);
  t.teardown(() => a.close());
  await load(a);

  const r = await json(a, `/search?q=${q('never sell')}&output=json`);
  t.equal(r.status, 200);
  t.match(r.type, /^application\/json/);
  t.equal(r.body.total, 3, 'terms (Jan 2025, Mar 2026) and about: not the revisit, not the excluded page');
  t.same(
    r.body.hits.map((h: { uri_r: string; datetime: string }) => [h.uri_r, h.datetime]),
    [
      ['http://www.example.org/terms', '20260315100000'],
      ['http://www.example.org/about', '20250120100000'],
      ['http://www.example.org/terms', '20250115100000'],
    ],
    'newest first',
  );
  const hit = r.body.hits[0];
  t.same(Object.keys(hit).sort(), ['datetime', 'snippet', 'title', 'uri_m', 'uri_r']);
  t.equal(hit.title, 'Terms of service');
  t.match(hit.snippet, /we never sell your data/i);
  t.equal(hit.uri_m, `${a.url}/current/memento/20260315100000/http://www.example.org/terms`);
  t.equal((await request(hit.uri_m)).status, 200, 'the URI-M answers');
  t.same(r.body.facets.year, { 2025: 2, 2026: 1 });
  t.same(r.body.facets.month, { '2025-01': 2, '2026-03': 1 });

  t.equal((await json(a, `/search?q=${q(`"${PHRASE}"`)}&output=json`)).body.total, 3, 'a phrase');
  t.equal((await json(a, `/search?q=${q('"sell never"')}&output=json`)).body.total, 0, 'a phrase is in order');
  t.equal((await json(a, `/search?q=${q('NEVER Sell')}&output=json`)).body.total, 3, 'case-insensitive');
  t.equal((await json(a, `/search?q=${q('never founder')}&output=json`)).body.total, 1, 'every word must match');
  t.equal((await json(a, `/search?q=${q('sell*')}&output=json`)).body.total, 4, 'a prefix: sell and sellotape');
  t.equal((await json(a, `/search?q=service&output=json`)).body.total, 3, 'the title is indexed (terms V1 twice, V2 once)');
  for (const hidden of ['zebra', 'scripted', 'zebrastyle', 'giraffe', 'binary', 'hidden'])
    t.equal((await json(a, `/search?q=${hidden}&output=json`)).body.total, 0, `${hidden}: not visible text of a shown memento`);
  t.equal((await json(a, `/search?q=sellotape&type=text/plain&output=json`)).body.total, 1, 'plain text, type=');
  t.equal((await json(a, `/search?q=sellotape&type=text/html&output=json`)).body.total, 0);
});

t.test('search: from/to as whole periods, url=, paging past the end, HTML escapes stored text', async (t) => {
  const a = await startArchive(RULES);
  t.teardown(() => a.close());
  await load(a);
  const total = (p: string) => json(a, `/search?q=never&output=json${p}`).then((r) => r.body.total);
  t.equal(await total('&from=2025&to=2025'), 2, 'the year 2025, inclusive');
  t.equal(await total('&from=2026'), 1);
  t.equal(await total('&to=202501'), 2, 'up to the end of January 2025');
  t.equal(await total('&from=20250115100000&to=20250115100000'), 1, 'one second');
  t.equal(await total('&from=2025011510&to=2025011510'), 1, 'one hour');
  t.equal(await total(`&url=${q('http://www.example.org/terms')}`), 2);
  t.equal(await total(`&url=${q('http://www.example.org/*')}`), 3);
  t.equal(await total(`&url=${q('http://www.example.org/excluded/*')}`), 0);

  const past = await json(a, `/search?q=never&output=json&page=9`);
  t.equal(past.status, 200, 'a page past the end');
  t.same(past.body.hits, []);
  t.equal(past.body.total, 3, 'the same total');

  const html = await request(`${a.url}/search?q=${q('markup words')}`, { headers: { accept: 'text/html' } });
  t.equal(html.status, 200);
  t.match(html.headers['content-type'], /^text\/html/);
  t.notMatch(html.text, /<script>alert/, 'stored markup is never markup of the page');
  t.match(html.text, /&lt;script&gt;alert\(1\)&lt;\/script&gt; <mark>markup<\/mark> <mark>words<\/mark>/, 'escaped, matched words marked');
  t.match(html.text, /Markup &lt;b&gt;/, 'the title escaped');
  t.match(html.text, /href="[^"]*\/web\/20250120110000\/http:\/\/www\.example\.org\/markup"/, 'a link to the memento’s /web/ page');
  const terms = await request(`${a.url}/search?q=never`);
  t.match(terms.text, /href="[^"]*\/search\?q=never&amp;from=2025&amp;to=2025"/, 'a year facet');
  t.match(terms.text, /href="[^"]*\/search\?q=never&amp;from=202603&amp;to=202603"/, 'a month facet');
});

t.test('search: bad and hostile queries are one-line 400s, never a 5xx', async (t) => {
  const a = await startArchive(RULES);
  t.teardown(() => a.close());
  await load(a);
  const bad = [
    'AND OR (',
    '"unclosed',
    'NOT',
    'a NEAR b',
    'x*y',
    '*',
    'a*',
    '',
    '((((',
    '---',
    'x'.repeat(400),
    Array.from({ length: 20 }, (_, i) => `w${i}`).join(' '),
  ];
  for (const b of bad) {
    const r = await request(`${a.url}/search?q=${q(b)}&output=json`);
    t.equal(r.status, 400, `q=${b.slice(0, 30)}: 400`);
    t.match(r.text, /^[^\n]+\n?$/, 'one line');
  }
  for (const p of ['from=2025x', 'to=202513', 'page=0', 'page=x', 'type=nope', 'output=xml', 'url=ftp%3A%2F%2Fx%2F', 'q=a&q=b'])
    t.equal((await request(`${a.url}/search?q=never&${p}`)).status, 400, p);
  // Odd but valid input: answered, never a 5xx.
  for (const odd of [
    '"" never',
    'ünïcödé',
    '日本語',
    'e-mail',
    "don't",
    '\u0001never\u0002',
    'NEAR/2',
    'never -sell',
    '"a" "b" "c"',
    '^never',
    'never:',
    'title:secret',
  ])
    t.ok((await request(`${a.url}/search?q=${q(odd)}&output=json`)).status < 500, `q=${odd}: not a 5xx`);
  t.equal((await json(a, `/search?q=${q('e-mail')}&output=json`)).status, 200);
});

t.test('history: appear, revisit, disappear, reappear give two periods; hidden pages are absent', async (t) => {
  const a = await startArchive(RULES);
  t.teardown(() => a.close());
  await load(a);
  const r = await json(a, `/history?q=${q(`"${PHRASE}"`)}&url=${q('http://www.example.org/*')}&output=json`);
  t.equal(r.status, 200);
  const m = (arch: string, ts: string, p: string) => ({ uri_m: `${a.url}/${arch}/memento/${ts}/http://www.example.org${p}`, datetime: ts });
  t.same(r.body.urls, [
    {
      uri_r: 'http://www.example.org/about',
      periods: [{ from: m('2025', '20250120100000', '/about'), until: m('2025', '20250120100000', '/about'), gone: null }],
    },
    {
      uri_r: 'http://www.example.org/terms',
      periods: [
        { from: m('2025', '20250115100000', '/terms'), until: m('2025', '20250215100000', '/terms'), gone: m('2025', '20250715100000', '/terms') },
        { from: m('current', '20260315100000', '/terms'), until: m('current', '20260315100000', '/terms'), gone: null },
      ],
    },
  ]);
  const html = await request(`${a.url}/history?q=${q(`"${PHRASE}"`)}&url=${q('http://www.example.org/terms')}`);
  t.equal(html.status, 200);
  t.match(html.text, /href="[^"]*\/web\/diff\/20250215100000\/20250715100000\/http:\/\/www\.example\.org\/terms"/, 'the diff link of the disappearance');
  t.match(html.text, /still there/);
  t.equal((await request(`${a.url}/history?q=never`)).status, 400, 'url= is required');
  t.equal((await request(`${a.url}/history?q=${q('AND OR (')}&url=http://www.example.org/`)).status, 400);
});

t.test('search as an Atom feed (output=atom): the same hits, read by a feed parser, with a next page when there is one', async (t) => {
  const a = await startArchive(RULES);
  t.teardown(() => a.close());
  await load(a);
  const asJson = await json(a, `/search?q=never&output=json`);
  const r = await request(`${a.url}/search?q=never&output=atom`);
  t.equal(r.status, 200);
  t.match(String(r.headers['content-type']), /^application\/atom\+xml/);
  const feed = parseFeed(r.text);
  t.equal(feed.meta.type, 'atom', 'an Atom feed');
  t.same(
    feed.items.map((i) => i.id),
    asJson.body.hits.map((h: { uri_m: string }) => h.uri_m),
    'one entry per hit, in the same order, its id the URI-M',
  );
  t.same(
    feed.items.map((i) => i.updated?.toISOString().replace(/\D/g, '').slice(0, 14)),
    asJson.body.hits.map((h: { datetime: string }) => h.datetime),
    'updated: each Memento-Datetime',
  );
  t.ok(
    feed.items.every((i) => i.url?.startsWith(`${a.url}/web/`)),
    'each links its /web/ page',
  );
  t.equal(feed.title, 'Search: never');
  t.notMatch(r.text, /rel="next"/, 'one page: no next page');
  t.equal((await request(`${a.url}/search?q=nothingmatchesthis&output=atom`)).status, 200, 'no hits: an empty feed');
  t.equal((await request(`${a.url}/search?q=never&output=rss`)).status, 400, 'another output: 400');
});
