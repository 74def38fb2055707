/**
 * Conformance: TimeMaps (RFC 7089 §5) — link-format, the mementoweb.org
 * timemap-json shape, the index TimeMap over all archives, and a TimeMap of
 * thousands of mementos read from the index page by page; issue point 5.
 */

import http from 'node:http';
import t from 'tap';
import { captureRecord, putCapture, request, startArchive } from '../helpers/archive.js';
import { formatHttpDate, headMatchesGet, links, noMementoHeaders, partsOf, seed, ts14 } from './helpers.js';

const R = 'http://www.example.org/tm?a=1&b=2';
const D = ['Mon, 05 Mar 2001 09:07:03 GMT', 'Tue, 20 Mar 2001 20:35:00 GMT', 'Fri, 01 Jun 2001 00:00:00 GMT'];
const NOW = ['Wed, 07 Jan 2026 10:00:00 GMT', 'Thu, 08 Jan 2026 10:00:00 GMT'];
const MANY = 'http://www.example.org/busy';
const N = 3000;

const a = await startArchive();
t.teardown(() => a.close());
for (const d of [...D, ...NOW]) await seed(a, R, d);
const iso = (d: string) => new Date(d).toISOString().replace(/\.000Z$/, 'Z');
const m = (archive: string, d: string, uriR = R) => `${a.url}/${archive}/memento/${ts14(d)}/${uriR}`;

t.test(
  'RFC 7089 §5 + RFC 6690: the link-format TimeMap is exactly original, self (type, from, until), timegate and each memento with its datetime, first and last marked',
  async (t) => {
    const res = await request(`${a.url}/2025/timemap/link/${R}`);
    t.equal(res.status, 200);
    t.equal(res.headers['content-type'], 'application/link-format');
    t.notOk(res.headers['memento-datetime']);
    t.equal(
      res.text,
      [
        `<${R}>; rel="original"`,
        `<${a.url}/2025/timemap/link/${R}>; rel="self"; type="application/link-format"; from="${D[0]}"; until="${D[2]}"`,
        `<${a.url}/2025/timegate/${R}>; rel="timegate"`,
        `<${m('2025', D[0])}>; rel="first memento"; datetime="${D[0]}"`,
        `<${m('2025', D[1])}>; rel="memento"; datetime="${D[1]}"`,
        `<${m('2025', D[2])}>; rel="last memento"; datetime="${D[2]}"`,
      ].join(',\n') + '\n',
    );
    const parsed = links(res.text);
    t.equal(parsed.length, 6, 'it parses as link-format');
    t.same(
      parsed.filter((l) => l.rel.includes('memento')).map((l) => l.datetime),
      D,
    );
  },
);

t.test('RFC 7089 §5: a TimeMap with one memento marks it first last memento', async (t) => {
  const one = 'http://www.example.org/single';
  await seed(a, one, D[1]);
  const res = await request(`${a.url}/2025/timemap/link/${one}`);
  const mem = links(res.text).filter((l) => l.rel.includes('memento'));
  t.same(
    mem.map((l) => l.rel),
    ['first last memento'],
  );
  t.match(res.text, /rel="self"; type="application\/link-format"; from="Tue, 20 Mar 2001 20:35:00 GMT"; until="Tue, 20 Mar 2001 20:35:00 GMT"/);
});

t.test(
  'docs/url-space.md (mementoweb.org timemap-json): original_uri, timegate_uri, timemap_uri {link_format, json_format}, mementos {first, last, list[{datetime, uri}]}',
  async (t) => {
    const res = await request(`${a.url}/2025/timemap/json/${R}`);
    t.equal(res.status, 200);
    t.equal(res.headers['content-type'], 'application/json');
    t.same(JSON.parse(res.text), {
      original_uri: R,
      timegate_uri: `${a.url}/2025/timegate/${R}`,
      timemap_uri: { link_format: `${a.url}/2025/timemap/link/${R}`, json_format: `${a.url}/2025/timemap/json/${R}` },
      mementos: {
        first: { datetime: iso(D[0]), uri: m('2025', D[0]) },
        last: { datetime: iso(D[2]), uri: m('2025', D[2]) },
        list: D.map((d) => ({ datetime: iso(d), uri: m('2025', d) })),
      },
    });
    t.equal(iso(D[0]), '2001-03-05T09:07:03Z');
  },
);

t.test(
  "RFC 7089 §5 (TimeMap index, docs/url-space.md): /tg/timemap lists each archive's TimeMap with from/until, then the mementos with one first and one last",
  async (t) => {
    const res = await request(`${a.url}/tg/timemap/${R}`);
    t.equal(res.status, 200);
    t.equal(res.headers['content-type'], 'application/link-format');
    t.equal(
      res.text,
      [
        `<${R}>; rel="original"`,
        `<${a.url}/tg/timemap/${R}>; rel="self"; type="application/link-format"; from="${D[0]}"; until="${NOW[1]}"`,
        `<${a.url}/tg/${R}>; rel="timegate"`,
        `<${a.url}/2025/timemap/link/${R}>; rel="timemap"; type="application/link-format"; from="${D[0]}"; until="${D[2]}"`,
        `<${a.url}/current/timemap/link/${R}>; rel="timemap"; type="application/link-format"; from="${NOW[0]}"; until="${NOW[1]}"`,
        `<${m('2025', D[0])}>; rel="first memento"; datetime="${D[0]}"`,
        `<${m('2025', D[1])}>; rel="memento"; datetime="${D[1]}"`,
        `<${m('2025', D[2])}>; rel="memento"; datetime="${D[2]}"`,
        `<${m('current', NOW[0])}>; rel="memento"; datetime="${NOW[0]}"`,
        `<${m('current', NOW[1])}>; rel="last memento"; datetime="${NOW[1]}"`,
      ].join(',\n') + '\n',
    );
    // Each listed TimeMap answers, and their mementos are the index's.
    const listed = links(res.text).filter((l) => l.rel === 'timemap');
    const fromEach: string[] = [];
    for (const l of listed) {
      const tm = await request(l.uri);
      t.equal(tm.status, 200, l.uri);
      fromEach.push(
        ...links(tm.text)
          .filter((x) => x.rel.includes('memento'))
          .map((x) => x.uri),
      );
    }
    t.same(
      fromEach,
      links(res.text)
        .filter((x) => x.rel.includes('memento'))
        .map((x) => x.uri),
    );
  },
);

t.test('RFC 7089 §5: an unknown URI-R has no TimeMap: 404 with no Memento headers (link, json, index, timebundle)', async (t) => {
  const never = 'http://www.example.org/never';
  for (const url of [
    `${a.url}/2025/timemap/link/${never}`,
    `${a.url}/2025/timemap/json/${never}`,
    `${a.url}/tg/timemap/${never}`,
    `${a.url}/current/timemap/link/http://www.example.org/single`,
    `${a.url}/2025/timebundle/${never}`,
  ]) {
    const res = await request(url);
    t.equal(res.status, 404, url);
    noMementoHeaders(t, res, url);
    t.equal(res.headers['content-type'], 'text/plain; charset=UTF-8');
    t.match(res.text, /^no memento of /);
  }
});

t.test('RFC 9110 §9.3.2 and §15.5.6: HEAD of a TimeMap answers as GET without the body; POST is 405 with Allow', async (t) => {
  for (const url of [
    `${a.url}/2025/timemap/link/${R}`,
    `${a.url}/2025/timemap/json/${R}`,
    `${a.url}/tg/timemap/${R}`,
    `${a.url}/2025/timemap/link/http://www.example.org/never`,
  ]) {
    await headMatchesGet(t, url);
    const post = await request(url, { method: 'POST', body: 'x' });
    t.equal(post.status, 405);
    t.equal(post.headers.allow, 'GET, HEAD');
  }
});

t.test(`RFC 7089 §5, streamed: a TimeMap of ${N} mementos lists every one once, in order, first and last marked; the JSON TimeMap too`, async (t) => {
  const start = Date.UTC(2005, 0, 1) / 1000;
  const dates = Array.from({ length: N }, (_, i) => formatHttpDate(start + i * 3607));
  let next = 0;
  const worker = async () => {
    while (next < N) {
      const i = next++;
      const res = await putCapture(
        a,
        MANY,
        captureRecord({ ...partsOf(MANY), date: dates[i], responseHeaders: [['Content-Type', 'text/plain']], body: `version ${i}` }),
      );
      if (res.status !== 201) throw new Error(`${i}: ${res.status} ${res.text}`);
    }
  };
  await Promise.all(Array.from({ length: 24 }, worker));

  // Read the link-format TimeMap as it streams; it comes in more than one chunk.
  const { chunks, text } = await new Promise<{ chunks: number; text: string }>((resolve, reject) => {
    http
      .get(`${a.url}/2025/timemap/link/${MANY}`, (res) => {
        t.equal(res.statusCode, 200);
        t.equal(res.headers['transfer-encoding'], 'chunked', 'streamed, not buffered to a Content-Length');
        let n = 0,
          s = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          n++;
          s += c;
        });
        res.on('end', () => resolve({ chunks: n, text: s }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
  t.ok(chunks > 1, `${chunks} chunks`);
  const mem = links(text).filter((l) => l.rel.includes('memento'));
  t.equal(mem.length, N, 'every memento');
  t.same(
    mem.map((l) => l.datetime),
    dates,
    'once each, oldest first',
  );
  t.same(
    mem.map((l) => l.uri),
    dates.map((d) => m('2025', d, MANY)),
  );
  t.equal(mem[0].rel, 'first memento');
  t.equal(mem[N - 1].rel, 'last memento');
  t.equal(mem.filter((l) => l.rel !== 'memento').length, 2, 'only the first and the last are marked');
  t.equal(links(text).find((l) => l.rel === 'self')?.until, dates[N - 1]);

  const json = JSON.parse((await request(`${a.url}/2025/timemap/json/${MANY}`)).text);
  t.equal(json.mementos.list.length, N);
  t.same(
    json.mementos.list.map((x: { datetime: string }) => x.datetime),
    dates.map(iso),
  );
  t.same(json.mementos.first, { datetime: iso(dates[0]), uri: m('2025', dates[0], MANY) });
  t.same(json.mementos.last, { datetime: iso(dates[N - 1]), uri: m('2025', dates[N - 1], MANY) });

  // The TimeGate still navigates inside it.
  const g = await request(`${a.url}/2025/timegate/${MANY}`, { headers: { 'accept-datetime': dates[1500] } });
  t.equal(g.headers.location, m('2025', dates[1500], MANY));
  const rels = links(g.headers.link)
    .filter((l) => l.rel.includes('memento'))
    .map((l) => `${l.rel}@${l.datetime}`);
  t.same(rels, [
    `first memento@${dates[0]}`,
    `prev memento@${dates[1499]}`,
    `memento@${dates[1500]}`,
    `next memento@${dates[1501]}`,
    `last memento@${dates[N - 1]}`,
  ]);
});
