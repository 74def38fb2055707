/**
 * The replay's fallback for root-relative requests that reach the
 * archive's origin (archive/http/fallback.ts): `GET /api/items.json` from
 * a replayed page (its `Referer` a Memento address) is sent to the Memento
 * of that path on the page's site at the page's time; any other request
 * that matches no route is 404 as before, and the archive's own routes
 * answer as ever.
 */
import t from 'tap';
import { refererTarget } from '../../../archive/http/fallback.js';
import { seed, ts14 } from '../../conformance/helpers.js';
import { request, startArchive } from '../../helpers/archive.js';
import { rawConnection } from '../../helpers/raw-connection.js';

const PAGE_DATE = 'Tue, 20 Mar 2001 20:35:00 GMT';
const PAGE = 'http://www.example.org:8080/app/page.html?x=1';
const ITEMS = 'http://www.example.org:8080/api/items.json?page=2';

const a = await startArchive();
t.teardown(() => a.close());
await seed(a, PAGE, PAGE_DATE, { responseHeaders: [['Content-Type', 'text/html']], body: '<html><body>app</body></html>' });
await seed(a, ITEMS, PAGE_DATE, { responseHeaders: [['Content-Type', 'application/json']], body: '[1,2]' });
const ts = ts14(PAGE_DATE);
const referer = `${a.url}/2025/memento/${ts}/${PAGE}`;

t.test('a root-relative request from a replayed page: 302 to the Memento of that path on its site at its time, CORS open', async (t) => {
  const hop = await request(`${a.url}/api/items.json?page=2`, { headers: { referer } });
  t.equal(hop.status, 302);
  t.equal(hop.headers.location, `${a.url}/2025/memento/${ts}/${ITEMS}`);
  t.equal(hop.headers['access-control-allow-origin'], '*', 'a sandboxed page (opaque origin) may follow it for a CORS fetch');
  t.equal(hop.headers.vary, 'referer');
  const items = await request(hop.headers.location as string);
  t.equal(items.status, 200);
  t.equal(items.text, '[1,2]', 'the stored list');
  const head = await request(`${a.url}/api/items.json?page=2`, { method: 'HEAD', headers: { referer } });
  t.equal(head.status, 302, 'HEAD as GET');
  t.equal(head.headers.location, hop.headers.location);
  // From a Memento at another modifier or a timestamp prefix: the replay form at that time.
  const fromRaw = await request(`${a.url}/img/a.png`, { headers: { referer: `${a.url}/current/memento/2001id_/${PAGE}` } });
  t.equal(fromRaw.headers.location, `${a.url}/current/memento/2001/http://www.example.org:8080/img/a.png`);
});

t.test('other requests that match no route: 404 as before, and the archive routes answer as ever', async (t) => {
  const none = await request(`${a.url}/api/items.json`);
  t.equal(none.status, 404, 'no Referer');
  t.equal(none.text, 'nothing here: GET /api/items.json is not an address of this archive\n');
  t.equal(none.headers.vary, 'referer', 'a 404 that a Referer would change says so');
  for (const [what, ref] of [
    ['a page outside the archive', 'http://www.example.org/page.html'],
    ['a page for people', `${a.url}/web/2001/${PAGE}`],
    ['an archive not here', `${a.url}/elsewhere/memento/${ts}/${PAGE}`],
    ['another host', `http://127.0.0.2:1/2025/memento/${ts}/${PAGE}`],
    ['a malformed timestamp', `${a.url}/2025/memento/2001-03/${PAGE}`],
    ['not an http(s) URL after it', `${a.url}/2025/memento/${ts}/ftp://www.example.org/`],
  ])
    t.equal((await request(`${a.url}/api/items.json`, { headers: { referer: ref } })).status, 404, `Referer from ${what}`);
  const post = await request(`${a.url}/api/items.json`, { method: 'POST', headers: { referer }, body: 'x' });
  t.equal(post.status, 404, 'only GET and HEAD');
  const route = await request(`${a.url}/web/`, { headers: { referer } });
  t.equal(route.status, 200, "the archive's own pages are not sent into the replay");
  const cdx = await request(`${a.url}/cdx?url=${encodeURIComponent(PAGE)}`, { headers: { referer } });
  t.equal(cdx.status, 200, 'nor its APIs');
  const stat = await request(`${a.url}/_static/none.js`, { headers: { referer } });
  t.equal(stat.status, 404, 'nor a static path it does not have');
});

t.test('refererTarget: the site of the URI-R, the path as requested; nothing for what is not a path', async (t) => {
  const base = 'https://archive.example/wa';
  const is = (id: string) => id === 'a';
  const ref = `${base}/a/memento/20010320203500/https://user@site.example:8443/dir/page?q#f`;
  t.equal(refererTarget(base, '/x/y?z=1', ref, is), `${base}/a/memento/20010320203500/https://site.example:8443/x/y?z=1`);
  t.equal(refererTarget(base, '//evil.example/x', ref, is), undefined, 'a network-path reference is not a path');
  t.equal(refererTarget(base, '*', ref, is), undefined);
  t.equal(refererTarget(base, '/x', 'https://archive.example/a/memento/20010320203500/https://site.example/', is), undefined, 'outside the base path');
  t.equal(refererTarget(base, '/x', undefined, is), undefined);
});

t.test('a request target with raw non-ASCII bytes: the redirect names it percent-encoded, or it is refused; never a 500', async (t) => {
  const bytes = Buffer.concat([
    Buffer.from('GET /caf'),
    Buffer.from([0xc3, 0xa9]),
    Buffer.from(`/x HTTP/1.1\r\nHost: ${new URL(a.url).host}\r\nReferer: ${referer}\r\nConnection: close\r\n\r\n`),
  ]);
  const c = await rawConnection(t, a.port, bytes);
  await c.closed;
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(c.received())?.[1]);
  t.ok(status === 302 || status === 400, `answered ${status}`);
  if (status === 302) t.match(c.received(), `\r\nLocation: ${a.url}/2025/memento/${ts}/http://www.example.org:8080/caf%C3%A9/x\r\n`);
});
