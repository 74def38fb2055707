/**
 * Conformance: the TimeGate of one archive (RFC 7089 §4.2.1, pattern 2.1:
 * URI-R <> URI-G, 302-style negotiation), issue point 1.
 */
import t from 'tap';
import { request, startArchive } from '../helpers/archive.js';
import { byRel, epoch, headMatchesGet, links, noMementoHeaders, seed, ts14 } from './helpers.js';

const R = 'http://www.example.org/news/page.html?id=7';
const ONE = 'http://www.example.org/once';
// Four captures; the first has a one-digit day and hour (zero-padding of IMF-fixdate).
const D = ['Mon, 05 Mar 2001 09:07:03 GMT', 'Tue, 20 Mar 2001 20:35:00 GMT', 'Fri, 01 Jun 2001 00:00:00 GMT', 'Sat, 01 Sep 2001 12:00:00 GMT'];

const a = await startArchive();
t.teardown(() => a.close());
for (const d of D) await seed(a, R, d);
await seed(a, ONE, 'Wed, 04 Jul 2001 04:04:04 GMT');

const tg = `${a.url}/2025/timegate/${R}`;
const m = (d: string, raw = false) => `${a.url}/2025/memento/${ts14(d)}${raw ? 'id_' : ''}/${R}`;

t.test('RFC 7089 §4.2.1: TimeGate answers 302 with Location of the best URI-M, Vary: accept-datetime, text/plain body, no Memento-Datetime', async (t) => {
  const res = await request(tg, { headers: { 'accept-datetime': D[1] } });
  t.equal(res.status, 302);
  t.equal(res.headers.location, m(D[1]));
  t.equal(res.headers.vary, 'accept-datetime, prefer', 'Vary names accept-datetime (and prefer: this TimeGate negotiates Prefer, Prefer rule 5)');
  t.notOk(res.headers['memento-datetime'], 'a TimeGate is not a Memento: no Memento-Datetime');
  t.equal(res.headers['content-type'], 'text/plain; charset=UTF-8');
  t.equal(res.text, m(D[1]) + '\n');
  t.equal(res.headers['content-length'], String(res.body.length));
  t.notOk(res.headers['preference-applied'], 'no Prefer, no Preference-Applied at the TimeGate');
});

t.test(
  'RFC 7089 §4.2.1 + §2.2: TimeGate Link is exactly original, timemap (link-format), timebundle and the memento links with first/prev/next/last and quoted IMF-fixdate datetime',
  async (t) => {
    const res = await request(tg, { headers: { 'accept-datetime': D[1] } });
    const base = a.url;
    t.equal(
      res.headers.link,
      [
        `<${R}>; rel="original"`,
        `<${base}/2025/timemap/link/${R}>; rel="timemap"; type="application/link-format"`,
        `<${base}/2025/timebundle/${R}>; rel="timebundle"`,
        `<${m(D[0])}>; rel="first prev memento"; datetime="Mon, 05 Mar 2001 09:07:03 GMT"`,
        `<${m(D[1])}>; rel="memento"; datetime="Tue, 20 Mar 2001 20:35:00 GMT"`,
        `<${m(D[2])}>; rel="next memento"; datetime="Fri, 01 Jun 2001 00:00:00 GMT"`,
        `<${m(D[3])}>; rel="last memento"; datetime="Sat, 01 Sep 2001 12:00:00 GMT"`,
      ].join(', '),
    );
  },
);

t.test('RFC 7089 §2.2: prev and next move with the selection (third of four: first, prev, next-and-last)', async (t) => {
  const res = await request(tg, { headers: { 'accept-datetime': D[2] } });
  t.equal(res.headers.location, m(D[2]));
  const l = links(res.headers.link);
  t.equal(byRel(l, 'first memento')[0]?.uri, m(D[0]));
  t.equal(byRel(l, 'prev memento')[0]?.uri, m(D[1]));
  t.equal(byRel(l, 'memento')[0]?.uri, m(D[2]));
  t.equal(byRel(l, 'next last memento')[0]?.uri, m(D[3]));
  t.equal(l.filter((x) => x.rel.includes('memento')).length, 4, 'one link per URI-M');
});

t.test('RFC 7089 §2.2: a single capture is one link with rel="first last memento"', async (t) => {
  const res = await request(`${a.url}/2025/timegate/${ONE}`);
  t.equal(res.status, 302);
  const mem = links(res.headers.link).filter((l) => l.rel.includes('memento'));
  t.equal(mem.length, 1);
  t.equal(mem[0].rel, 'first last memento');
  t.equal(mem[0].datetime, 'Wed, 04 Jul 2001 04:04:04 GMT');
  t.match(res.headers.link as string, /rel="first last memento"; datetime="Wed, 04 Jul 2001 04:04:04 GMT"/);
});

t.test('RFC 7089 §4.2.1: without Accept-Datetime the TimeGate redirects to the most recent Memento', async (t) => {
  const res = await request(tg);
  t.equal(res.status, 302);
  t.equal(res.headers.location, m(D[3]));
  t.equal(byRel(links(res.headers.link), 'last memento')[0]?.uri, m(D[3]), 'the selected memento is the last (no next)');
});

t.test('RFC 7089 §4.5.3: Accept-Datetime before the first Memento gives the first; after the last gives the last', async (t) => {
  const before = await request(tg, { headers: { 'accept-datetime': 'Thu, 01 Jan 1970 00:00:00 GMT' } });
  t.equal(before.status, 302);
  t.equal(before.headers.location, m(D[0]));
  t.equal(byRel(links(before.headers.link), 'first memento')[0]?.uri, m(D[0]));
  t.notOk(
    links(before.headers.link).some((l) => l.rel.split(' ').includes('prev')),
    'no prev before the first',
  );
  const after = await request(tg, { headers: { 'accept-datetime': 'Fri, 31 Dec 2100 23:59:59 GMT' } });
  t.equal(after.headers.location, m(D[3]));
});

t.test('RFC 7089 §4.2.1: between two Mementos the nearest in time is chosen; a tie goes to the earlier', async (t) => {
  const near2 = await request(tg, { headers: { 'accept-datetime': 'Wed, 21 Mar 2001 00:00:00 GMT' } });
  t.equal(near2.headers.location, m(D[1]));
  const near3 = await request(tg, { headers: { 'accept-datetime': 'Thu, 31 May 2001 00:00:00 GMT' } });
  t.equal(near3.headers.location, m(D[2]));
  const mid = (epoch(D[1]) + epoch(D[2])) / 2;
  const tie = new Date(mid * 1000).toUTCString();
  const res = await request(tg, { headers: { 'accept-datetime': tie } });
  t.equal(res.headers.location, m(D[1]), `tie at ${tie}`);
});

t.test('RFC 7231 §7.1.1.1: Accept-Datetime in the obsolete RFC 850 and asctime forms is understood', async (t) => {
  const rfc850 = await request(tg, { headers: { 'accept-datetime': 'Tuesday, 20-Mar-01 20:35:00 GMT' } });
  t.equal(rfc850.headers.location, m(D[1]));
  const asctime = await request(tg, { headers: { 'accept-datetime': 'Mon Mar  5 09:07:03 2001' } });
  t.equal(asctime.headers.location, m(D[0]));
});

t.test('RFC 7089 §4.5.3: an unparsable Accept-Datetime is 400 with Vary and the original link, and no Location', async (t) => {
  for (const bad of ['yesterday', '2001-03-20T20:35:00Z', 'Tue, 20 Mar 2001 20:35:00 CET', 'Tue, 31 Feb 2001 20:35:00 GMT']) {
    const res = await request(tg, { headers: { 'accept-datetime': bad } });
    t.equal(res.status, 400, bad);
    t.equal(res.headers.vary, 'accept-datetime');
    t.equal(res.headers.link, `<${R}>; rel="original"`);
    t.notOk(res.headers.location);
    t.notOk(res.headers['memento-datetime']);
    t.match(res.text, /^Accept-Datetime is not an HTTP date/);
  }
});

t.test('docs/url-space.md (errors) + RFC 7089 §4.2.1: a URI-R without mementos is 404 with no Memento headers', async (t) => {
  for (const url of [`${a.url}/2025/timegate/http://www.example.org/never`, `${a.url}/current/timegate/${R}`]) {
    const res = await request(url, { headers: { 'accept-datetime': D[1] } });
    t.equal(res.status, 404, url);
    noMementoHeaders(t, res, url);
    t.notOk(res.headers.location);
    t.equal(res.headers['content-type'], 'text/plain; charset=UTF-8');
    t.match(res.text, /^no memento of /);
  }
  const unknownArchive = await request(`${a.url}/nosuch/timegate/${R}`);
  t.equal(unknownArchive.status, 404);
  t.match(unknownArchive.text, /no archive named "nosuch"/);
});

t.test('RFC 9110 §9.3.2: HEAD at a TimeGate answers exactly as GET without the body', async (t) => {
  await headMatchesGet(t, tg, { 'accept-datetime': D[2] });
  await headMatchesGet(t, tg);
  await headMatchesGet(t, tg, { 'accept-datetime': 'garbage' });
  await headMatchesGet(t, `${a.url}/2025/timegate/http://www.example.org/never`);
});

t.test('RFC 9110 §15.5.6: POST, PUT, DELETE, PATCH at a TimeGate are 405 with Allow: GET, HEAD', async (t) => {
  for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
    const res = await request(tg, { method, body: 'x' });
    t.equal(res.status, 405, method);
    t.equal(res.headers.allow, 'GET, HEAD');
    t.match(res.text, new RegExp(`^${method} is not allowed here`));
    noMementoHeaders(t, res, method);
  }
});

t.test('docs/url-space.md: the URI-R in a TimeGate address keeps its query, and host case / default port do not matter', async (t) => {
  const res = await request(`${a.url}/2025/timegate/http://WWW.Example.ORG:80/news/page.html?id=7`, { headers: { 'accept-datetime': D[0] } });
  t.equal(res.status, 302);
  t.equal(res.headers.location, m(D[0]));
  const other = await request(`${a.url}/2025/timegate/http://www.example.org/news/page.html?id=8`);
  t.equal(other.status, 404, 'a different query is a different URI-R');
});
