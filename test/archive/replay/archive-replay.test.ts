/**
 * Archival replay through the archive's HTTP side: temporal coherence (an
 * embedded URL at the page's datetime lands on the nearest memento in any
 * archive, CORS open), the "not archived" answers, the replay script's
 * static route, and the replay cache seen from outside.
 */
import t from 'tap';
import { partsOf, seed, ts14 } from '../../conformance/helpers.js';
import { captureRecord, putCapture, request, startArchive } from '../../helpers/archive.js';

const PAGE_DATE = 'Tue, 20 Mar 2001 20:35:00 GMT'; // archive "2025"
const CSS_DATE = 'Mon, 02 Feb 2026 10:00:00 GMT'; // archive "current"
const PAGE = 'http://www.example.org/news.html';
const CSS = 'http://www.example.org/style.css';

const a = await startArchive();
t.teardown(() => a.close());
await seed(a, PAGE, PAGE_DATE, {
  responseHeaders: [['Content-Type', 'text/html']],
  body: '<html><head><link rel="stylesheet" href="style.css"></head><body><a href="never.html">n</a></body></html>',
});
await seed(a, CSS, CSS_DATE, { responseHeaders: [['Content-Type', 'text/css']], body: 'body { background: url(bg.png) }' });

t.test('temporal coherence: an embedded URL at the page datetime redirects (302) to the nearest memento in any archive, CORS open', async (t) => {
  const page = await request(`${a.url}/2025/memento/${ts14(PAGE_DATE)}/${PAGE}`);
  const cssAtPageTime = `${a.url}/2025/memento/${ts14(PAGE_DATE)}/${CSS}`;
  t.match(page.text, `<link rel="stylesheet" href="${cssAtPageTime}">`, 'the page names its stylesheet at its own datetime');
  const hop = await request(cssAtPageTime);
  t.equal(hop.status, 302);
  t.equal(hop.headers.location, `${a.url}/current/memento/${ts14(CSS_DATE)}/${CSS}`, 'to the only memento, in the other archive');
  t.equal(hop.headers['access-control-allow-origin'], '*', 'a sandboxed page (opaque origin) may follow it for a CORS fetch');
  const css = await request(hop.headers.location as string);
  t.equal(css.status, 200);
  t.equal(
    css.text,
    `body { background: url("${a.url}/current/memento/${ts14(CSS_DATE)}/http://www.example.org/bg.png") }`,
    'the stylesheet replayed at its own datetime',
  );
  t.equal(css.headers['access-control-allow-origin'], '*');
  const raw = await request(`${a.url}/2025/memento/${ts14(PAGE_DATE)}id_/${CSS}`);
  t.equal(raw.headers.location, `${a.url}/current/memento/${ts14(CSS_DATE)}id_/${CSS}`, 'an id_ address stays id_');
  const ol = await request(`${a.url}/current/memento/2001ol_/${CSS}`);
  t.equal(ol.headers.location, `${a.url}/current/memento/${ts14(CSS_DATE)}ol_/${CSS}`, 'an ol_ timestamp prefix stays ol_');
});

t.test('a URL never captured is 404: for a browser the "Not archived" page that says so and links the live URL; for others one line', async (t) => {
  const url = `${a.url}/2025/memento/${ts14(PAGE_DATE)}/http://www.example.org/never.html?a=1&b=<2>`;
  const browser = await request(url, { headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
  t.equal(browser.status, 404);
  t.equal(browser.headers['content-type'], 'text/html; charset=utf-8');
  t.match(browser.text, '<h1>Not archived</h1>');
  t.match(browser.text, '<a href="http://www.example.org/never.html?a=1&amp;b=%3C2%3E" rel="noreferrer">', 'a link to the live URL, escaped');
  t.match(
    browser.headers['content-security-policy'],
    /^default-src 'none'; script-src 'nonce-[\w-]+'; style-src 'nonce-[\w-]+';/,
    "the page runs and loads only the archive's own script and stylesheet, by a nonce",
  );
  t.notMatch(browser.headers['content-security-policy'], /script-src[^;]*'self'|unsafe-inline/, "never by 'self' or inline");
  t.equal(browser.headers.vary, 'accept', 'its body depends on Accept');
  t.notOk(browser.headers['memento-datetime'], 'not a Memento');
  const script = await request(url, { headers: { accept: '*/*' } });
  t.equal(script.status, 404);
  t.equal(script.text, 'no memento of http://www.example.org/never.html?a=1&b=%3C2%3E in any archive\n');
  t.equal(script.headers['access-control-allow-origin'], '*', 'a CORS fetch sees the 404 as a 404');
});

t.test('GET /_static/replay.js: the replay script, cacheable, with a strong ETag; 304 when unchanged; other static paths 404', async (t) => {
  const res = await request(`${a.url}/_static/replay.js`);
  t.equal(res.status, 200);
  t.equal(res.headers['content-type'], 'text/javascript; charset=utf-8');
  t.match(res.text, 'localStorage');
  t.equal(res.headers['content-length'], String(res.body.length));
  t.equal(res.headers['cache-control'], 'public, max-age=86400');
  t.equal(res.headers['access-control-allow-origin'], '*');
  t.match(res.headers.etag, /^"[\w-]{22}"$/);
  const again = await request(`${a.url}/_static/replay.js`, { headers: { 'if-none-match': res.headers.etag as string } });
  t.equal(again.status, 304);
  t.equal(again.body.length, 0);
  const head = await request(`${a.url}/_static/replay.js`, { method: 'HEAD' });
  t.same([head.status, head.headers['content-length'], head.body.length], [200, String(res.body.length), 0]);
  t.equal((await request(`${a.url}/_static/other.js`)).status, 404);
  t.equal((await request(`${a.url}/_static/replay.js`, { method: 'POST' })).status, 405);
});

t.test('a replayed page asked for twice is the same answer (the second from the replay cache)', async (t) => {
  const url = `${a.url}/2025/memento/${ts14(PAGE_DATE)}/${PAGE}`;
  const first = await request(url);
  const second = await request(url);
  t.same({ ...second.headers, date: 0 }, { ...first.headers, date: 0 });
  t.same(second.body, first.body);
  t.ok(a.app.reader.replayCache.bytes > 0, 'the cache holds it');
});

t.test('a page with a charset: the replay keeps its bytes and reads its URLs in it', async (t) => {
  const uriR = 'http://www.example.org/latin.html';
  const body = Buffer.from('<html><head><title>\xe9t\xe9</title></head><body><a href="caf\xe9.html">caf\xe9</a></body></html>', 'latin1');
  const res = await putCapture(
    a,
    uriR,
    captureRecord({ ...partsOf(uriR), date: PAGE_DATE, responseHeaders: [['Content-Type', 'text/html; charset=iso-8859-1']], body }),
  );
  t.equal(res.status, 201);
  const m = await request(`${a.url}/2025/memento/${ts14(PAGE_DATE)}/${uriR}`);
  t.equal(m.headers['content-type'], 'text/html; charset=iso-8859-1');
  const text = m.body.toString('latin1');
  t.match(text, '<title>\xe9t\xe9</title>', 'other bytes as stored');
  t.match(text, `<a href="${a.url}/2025/memento/${ts14(PAGE_DATE)}/http://www.example.org/caf%C3%A9.html">caf\xe9</a>`);
});
