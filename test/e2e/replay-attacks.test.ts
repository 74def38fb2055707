/**
 * Stored pages never act as the archive, in Chromium: a stored page is
 * hostile input, replayed under the banner page `/web/<ts>/<url>`. Each
 * test stores an attack, opens its replay, and then reads what a person's
 * browser did: the requests it made (every one is watched), where the tab
 * is, what the banner shows against what the frame shows, and whether the
 * archive origin's cookie and localStorage canaries reached anything a
 * stored page controls. The "outside" is a trap server on 127.0.0.1 that
 * records every request it gets.
 *
 * The attacks: a postMessage to the banner with a `../` address naming a
 * stored page whose `.banner-inner` holds a `srcdoc` iframe that loads
 * another memento as a script and a meta refresh; a message claiming to
 * be another URL on another day; `top.location`, `window.open(_top)`, a
 * `target=_top` link and meta refreshes (one hidden behind an entity) out
 * of the archive; a `<script src>` at a memento put into an archive page.
 * Then the same replay with `replay_origin`: mementos framed from a second
 * host name, which serves none of the archive's pages.
 */
import http from 'node:http';
import type { Browser, Page } from 'puppeteer-core';
import t, { type Test } from 'tap';
import { ts14 } from '../conformance/helpers.js';
import { captureRecord, putCapture, request, startArchive, type TestArchive, TWO_ARCHIVES } from '../helpers/archive.js';
import { launchBrowser } from '../helpers/browser.js';

const EVIL = 'http://evil.example';
const BANK = 'http://bank.example';
const D2025 = 'Thu, 20 Mar 2025 10:00:00 GMT';
const D2026 = 'Mon, 05 Jan 2026 10:00:00 GMT';
/** The archive holding captures of 2025 (TWO_ARCHIVES). */
const ID = '2025';
const COOKIE = 'canary-cookie-7f3a';
const STORAGE = 'canary-storage-91bc';

/** A trap server on 127.0.0.1 standing for the live web: every request it gets is recorded. */
async function trapServer(t: Test): Promise<{ url: string; hits: string[] }> {
  const hits: string[] = [];
  const trap = http.createServer((req, res) => {
    hits.push(req.url ?? '');
    res.setHeader('content-type', 'text/html');
    res.end('<h1>outside</h1>');
  });
  await new Promise<void>((resolve) => trap.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => trap.close(() => resolve())));
  return { url: `http://127.0.0.1:${(trap.address() as { port: number }).port}`, hits };
}

/** Stores `body` as the capture of `uriR` at `date`. */
async function store(a: TestArchive, uriR: string, body: string, date = D2025, type = 'text/html; charset=utf-8'): Promise<void> {
  const u = new URL(uriR);
  const r = await putCapture(a, uriR, captureRecord({ host: u.host, target: u.pathname + u.search, date, body, responseHeaders: [['Content-Type', type]] }));
  if (r.status !== 201) throw new Error(`PUT ${uriR}: ${r.status} ${r.text}`);
}

/**
 * The script every attack uses once it runs on a page: it sends the origin
 * it runs in and that origin's cookie and localStorage to `/pwned` (a
 * request the test sees) and marks the top page. In a memento's sandbox it
 * runs too, harmless: its origin is opaque ("null").
 */
const PAYLOAD = `(function () {
  var c = ''; var l = '';
  try { c = document.cookie; } catch (e) { c = 'cookie:' + e.name; }
  try { l = localStorage.getItem('canary'); } catch (e) { l = 'storage:' + e.name; }
  new Image().src = '/pwned?o=' + encodeURIComponent(self.origin) + '&c=' + encodeURIComponent(c) + '&l=' + encodeURIComponent(l);
  try { top.document.title = 'PWNED'; } catch (e) {}
})();`;

/** A Chromium tab that records every request and CSP refusal; the archive origin's canaries set. */
async function watchedTab(t: Test, a: TestArchive): Promise<{ tab: Page; requests: string[]; refused: string[]; browser: Browser }> {
  const browser = await launchBrowser();
  t.teardown(() => browser.close());
  const tab = await browser.newPage();
  const requests: string[] = [];
  const refused: string[] = [];
  tab.on('request', (r) => requests.push(r.url()));
  tab.on('console', (m) => {
    if (/Content Security Policy/.test(m.text())) refused.push(m.text());
  });
  await tab.setCookie({ name: 'archive_session', value: COOKIE, url: a.url });
  await tab.goto(`${a.url}/web/`, { waitUntil: 'networkidle0' });
  await tab.evaluate((v) => localStorage.setItem('canary', v), STORAGE);
  return { tab, requests, refused, browser };
}

/** What no stored page may have done: run script on the archive's origin (its canaries leaked, the top page marked). */
async function nothingRanAsTheArchive(t: Test, tab: Page, requests: string[]): Promise<void> {
  t.same(
    requests.filter((u) => u.includes('/pwned') && new URL(u).searchParams.get('o') !== 'null'),
    [],
    'no script of a stored page ran outside an opaque origin (no /pwned request from another)',
  );
  t.same(
    requests.filter((u) => u.includes(COOKIE) || u.includes(STORAGE)),
    [],
    "the archive origin's cookie and localStorage canaries went nowhere",
  );
  t.not(await tab.title(), 'PWNED', 'the top page was not touched');
}

/** The text of the `h1` of the page in the replay page's frame, once it is there. */
async function frameText(tab: Page): Promise<string | null | undefined> {
  const frame = await (await tab.$('#memento-frame'))?.contentFrame();
  return (await frame?.waitForSelector('h1'))?.evaluate((e) => e.textContent);
}

t.test('a postMessage with a ../ address: no memento markup, srcdoc or script reaches the banner page', async (t) => {
  const trap = await trapServer(t);
  const a = await startArchive();
  t.teardown(() => a.close());
  const ts = ts14(D2025);
  await store(a, `${EVIL}/payload.js`, PAYLOAD, D2025, 'text/javascript');
  // A stored page shaped like the banner: an iframe whose srcdoc loads the payload memento as a script, and a refresh out
  // (a minute away: this test is about where the banner's markup comes from; the refreshes are the third test's, and one
  // that fired during the checks below would move the tab under them on a slow machine).
  const script = `${a.url}/${ID}/memento/${ts}id_/${EVIL}/payload.js`;
  await store(
    a,
    `${EVIL}/fake.html`,
    `<!DOCTYPE html><html><body><div class="banner-inner"><p>FAKE BANNER</p>` +
      `<iframe srcdoc="&lt;script src=&quot;${script}&quot;&gt;&lt;/script&gt;"></iframe>` +
      `<meta http-equiv="refresh" content="60; url=${trap.url}/refresh-from-banner"></div></body></html>`,
  );
  // The attack: the frame posts an address whose dots climb out of /web/_banner/<ts>/ to the raw form of fake.html.
  const climb = `${a.url}/${ID}/memento/${ts}/x/../../../../${ID}/memento/${ts}id_/${EVIL}/fake.html`;
  await store(
    a,
    `${EVIL}/attack.html`,
    `<!DOCTYPE html><html><head><title>attack</title></head><body><h1>Attack</h1><script>
// After the replay shim's own message (at DOMContentLoaded), so that the banner page takes this one last.
addEventListener('load', function () { parent.postMessage({ type: 'memento-archive:load', href: ${JSON.stringify(climb)}, title: 'x' }, '*'); });
</script></body></html>`,
  );
  const { tab, requests } = await watchedTab(t, a);
  // Either way, the browser asks for fake.html next (a fetch of the banner page, or the frame of the page it goes to).
  const fakeAsked = new Promise<void>((resolve) => tab.on('request', (r) => r.url().endsWith('/fake.html') && resolve()));
  await tab.goto(`${a.url}/web/${ts}/${EVIL}/attack.html`, { waitUntil: 'networkidle0' });
  await fakeAsked;
  await tab.waitForNetworkIdle({ idleTime: 1000 });
  t.ok(
    requests.some((u) => u.endsWith('/attack.html')),
    'the attack page was loaded in its frame',
  );
  await nothingRanAsTheArchive(t, tab, requests);
  t.notMatch(await tab.$eval('#banner', (e) => (e as HTMLElement).innerText), /FAKE BANNER/, "no stored page's markup is in the banner");
  t.equal(await tab.$$eval('iframe[srcdoc]', (els) => els.length), 0, 'no srcdoc iframe in the banner page');
  t.same(
    requests.filter((u) => u.includes('/_banner/')),
    [],
    'the banner page fetched nothing the message named',
  );
  // The address, once the browser has resolved its dots, names a memento of this archive: only a page to go to, in its frame.
  t.equal(tab.url(), `${a.url}/web/${ts}/${EVIL}/fake.html`, 'the tab went to the replay page of the address');
  t.match(await tab.$eval('#banner .url', (e) => e.textContent), `${EVIL}/fake.html`, 'whose banner the archive rendered');
  t.same(trap.hits, [], 'nothing reached the outside');
  t.match(tab.url(), new RegExp(`^${a.url}/web/`), 'the tab is still on the archive');
});

t.test('a message claiming another URL and day: the banner shows what the frame shows', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const ts = ts14(D2025);
  await store(a, `${BANK}/`, '<!DOCTYPE html><html><head><title>bank</title></head><body><h1>Bank 2026</h1></body></html>', D2026);
  await store(a, `${BANK}/`, '<!DOCTYPE html><html><head><title>bank</title></head><body><h1>Bank 2025</h1></body></html>', D2025);
  // The attack page claims to be the bank's page of 2026 (a real memento), and stays what it is.
  const claim = `${a.url}/current/memento/${ts14(D2026)}/${BANK}/`;
  await store(
    a,
    `${EVIL}/spoof.html`,
    `<!DOCTYPE html><html><head><title>spoof</title></head><body><h1>Spoof</h1><script>
addEventListener('load', function () { parent.postMessage({ type: 'memento-archive:load', href: ${JSON.stringify(claim)}, title: 'Bank' }, '*'); });
</script></body></html>`,
  );
  const { tab, requests } = await watchedTab(t, a);
  await tab.goto(`${a.url}/web/${ts}/${EVIL}/spoof.html`, { waitUntil: 'networkidle0' });
  // Whatever the banner page does with the claim, it ends with the address bar naming the bank's page.
  await tab.waitForFunction(() => location.pathname.includes('bank.example'));
  await tab.waitForNetworkIdle();
  const banner = await tab.$eval('#banner .url', (e) => e.textContent);
  const when = await tab.$eval('#banner .ts', (e) => e.textContent);
  const shown = await frameText(tab);
  t.same(
    { banner, when, shown },
    { banner: `${BANK}/`, when: ts14(D2026), shown: 'Bank 2026' },
    "the banner names the bank's 2026 page only with that page in the frame",
  );
  t.equal(tab.url(), `${a.url}/web/${ts14(D2026)}/${BANK}/`);
  await nothingRanAsTheArchive(t, tab, requests);
});

t.test('top navigation and refreshes out of the archive: the tab stays, the frame stays in the archive', async (t) => {
  const trap = await trapServer(t);
  const a = await startArchive();
  t.teardown(() => a.close());
  const ts = ts14(D2025);
  await store(
    a,
    `${EVIL}/move.html`,
    `<!DOCTYPE html><html><head><title>move</title>
<meta http-equiv="&#82;efresh" content="0; url=${trap.url}/entity-refresh">
</head><body><h1>Move</h1><a id="top" href="${trap.url}/top-link" target="_top">x</a><script>
try { top.location = ${JSON.stringify(`${trap.url}/top-location`)}; } catch (e) {}
try { window.open(${JSON.stringify(`${trap.url}/open-top`)}, '_top'); } catch (e) {}
try { document.getElementById('top').click(); } catch (e) {}
</script></body></html>`,
  );
  await store(
    a,
    `${EVIL}/refresh.html`,
    `<!DOCTYPE html><html><head><title>refresh</title><meta http-equiv="refresh" content="0; url=javascript:top.location='${trap.url}/js-refresh'"></head><body><h1>Refresh</h1></body></html>`,
  );
  const { tab, requests } = await watchedTab(t, a);
  for (const page of ['move.html', 'refresh.html']) {
    await tab.goto(`${a.url}/web/${ts}/${EVIL}/${page}`, { waitUntil: 'networkidle0' });
    await tab.waitForNetworkIdle({ idleTime: 1500 });
    t.match(tab.url(), new RegExp(`^${a.url}/web/`), `${page}: the tab is still on the archive`);
  }
  t.same(trap.hits, [], 'the outside got no request: not from the top, not from the frame');
  t.same(
    requests.filter((u) => u.startsWith(trap.url)),
    [],
    'the browser asked the outside for nothing',
  );
  await nothingRanAsTheArchive(t, tab, requests);
});

t.test('an archive page loads no memento as a script: its policy allows only its own, by nonce', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const ts = ts14(D2025);
  await store(a, `${EVIL}/payload.js`, PAYLOAD, D2025, 'text/javascript');
  await store(a, `${EVIL}/page.html`, '<!DOCTYPE html><html><body><h1>Page</h1></body></html>');
  const { tab, requests, refused } = await watchedTab(t, a);
  await tab.goto(`${a.url}/web/${ts}/${EVIL}/page.html`, { waitUntil: 'networkidle0' });
  const csp = (await request(`${a.url}/web/${ts}/${EVIL}/page.html`)).headers['content-security-policy'] as string;
  t.match(csp, /script-src 'nonce-[A-Za-z0-9_-]{22}';/, 'scripts by nonce');
  t.notMatch(csp, /script-src[^;]*'self'/, "no 'self' in script-src");
  t.match(csp, new RegExp(`frame-src ${a.url};`), 'frames only from where mementos are served');
  t.match(csp, /frame-ancestors 'none'/, 'framed by no one');
  // Whatever way stored markup might get into the page: a script element naming a memento.
  for (const form of ['id_', '']) {
    await tab.evaluate((src) => {
      const s = document.createElement('script');
      s.src = src;
      document.body.appendChild(s);
    }, `${a.url}/${ID}/memento/${ts}${form}/${EVIL}/payload.js`);
  }
  await tab.waitForNetworkIdle();
  t.equal(refused.filter((m) => /payload\.js/.test(m)).length, 2, "the page's policy refused both scripts");
  await nothingRanAsTheArchive(t, tab, requests);
  // The script of the page itself runs: the reader's local time on hover.
  t.match(await tab.$eval('time', (e) => e.title), /^Your time: /, "the page's own script ran");
});

t.test("a stored form's frame-ancestors is the archive's pages; a replayed page's own iframes still show", async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const ts = ts14(D2025);
  await store(a, `${EVIL}/outer.html`, '<!DOCTYPE html><html><body><h1>Outer</h1><iframe src="/inner.html"></iframe></body></html>');
  await store(a, `${EVIL}/inner.html`, '<!DOCTYPE html><html><body><h1>Inner</h1></body></html>');
  for (const form of ['id_', 'ol_']) {
    const r = await request(`${a.url}/${ID}/memento/${ts}${form}/${EVIL}/inner.html`);
    t.match(r.headers['content-security-policy'], new RegExp(`; frame-ancestors ${a.url}$`), `form "${form}": framed only from ${a.url}`);
  }
  const { tab, requests } = await watchedTab(t, a);
  await tab.goto(`${a.url}/web/${ts}/${EVIL}/outer.html`, { waitUntil: 'networkidle0' });
  const inner = await tab.waitForFrame((f) => f.url().endsWith('/inner.html'));
  const h1 = await inner.waitForSelector('h1');
  t.equal(await h1?.evaluate((e) => e.textContent), 'Inner', "a replayed page's own iframe (a memento in a memento) shows");
  await nothingRanAsTheArchive(t, tab, requests);
});

/** A port free on 127.0.0.1 now (replay_origin names the port before the daemon listens). */
async function freePort(): Promise<number> {
  const probe = http.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as { port: number }).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

t.test('replay_origin: mementos framed from a second host name, which serves none of the pages', async (t) => {
  const port = await freePort();
  // One daemon, two origins for the browser: 127.0.0.1 for the pages, localhost for the mementos.
  const main = `http://127.0.0.1:${port}`;
  const replay = `http://localhost:${port}`;
  const a = await startArchive(`listen: 127.0.0.1:${port}\nbase_url: ${main}\nreplay_origin: ${replay}\n${TWO_ARCHIVES}`);
  t.teardown(() => a.close());
  const ts = ts14(D2025);
  await store(a, `${EVIL}/payload.js`, PAYLOAD, D2025, 'text/javascript');
  await store(
    a,
    `${EVIL}/news.html`,
    `<!DOCTYPE html><html><head><title>news</title><link rel="stylesheet" href="/s.css"></head><body><h1>News</h1><a id="about" href="/about.html">About</a>` +
      `<script src="/payload.js"></script></body></html>`,
  );
  await store(a, `${EVIL}/about.html`, '<!DOCTYPE html><html><head><title>about</title></head><body><h1>About</h1></body></html>');
  await store(a, `${EVIL}/s.css`, 'h1{color:rgb(1, 2, 3)}', D2025, 'text/css');

  // Over HTTP, with the Host a browser sends to each origin.
  const onReplay = { host: `localhost:${port}`, accept: 'text/html' };
  const page = await request(`${main}/web/${ts}/${EVIL}/news.html`);
  t.match(page.headers['content-security-policy'], new RegExp(`frame-src ${replay};`), "the page frames only the replay origin's mementos");
  t.match(
    page.text,
    new RegExp(`<iframe id="memento-frame" name="memento" src="${replay}/${ID}/memento/${ts}if_/${EVIL}/news.html"`),
    'its frame is on the replay origin',
  );
  for (const path of ['/', '/web/', `/web/${ts}/${EVIL}/news.html`, '/_static/web.js', '/_static/web.css']) {
    const r = await request(`${main}${path}`, { headers: onReplay });
    t.same([r.status, r.text], [404, `${replay} serves mementos only; the archive's pages are at ${main}/web/\n`], `${path} on the replay origin: 404`);
  }
  t.equal((await request(`${main}/_static/replay.js`, { headers: onReplay })).status, 200, 'the replay shim is served there');
  const memento = await request(`${main}/${ID}/memento/${ts}/${EVIL}/news.html`, { headers: onReplay });
  t.match(memento.text, new RegExp(`href="${replay}/${ID}/memento/${ts}/${EVIL}/about.html"`), "a memento's links stay on the replay origin");
  const raw = await request(`${main}/${ID}/memento/${ts}id_/${EVIL}/news.html`, { headers: onReplay });
  t.match(
    raw.headers['content-security-policy'],
    new RegExp(`^sandbox; default-src 'none'; .*; frame-ancestors ${main}$`),
    "framed only by the main origin's pages, sandboxed (no script, no fetch) still",
  );

  // In Chromium.
  const { tab, requests } = await watchedTab(t, a);
  await tab.goto(`${main}/web/${ts}/${EVIL}/news.html`, { waitUntil: 'networkidle0' });
  const frame = await tab.waitForFrame((f) => f.url() === `${replay}/${ID}/memento/${ts}if_/${EVIL}/news.html`);
  await frame.waitForSelector('#about');
  t.equal(await frame.evaluate(() => location.href), `${replay}/${ID}/memento/${ts}if_/${EVIL}/news.html`, 'the frame is on the replay origin');
  t.equal(await frame.$eval('h1', (e) => getComputedStyle(e).color), 'rgb(1, 2, 3)', 'with its stylesheet, from there');
  t.equal(await frame.evaluate(() => self.origin), 'null', 'and sandboxed there too');
  // A link in the frame: the banner page follows it.
  await frame.click('#about');
  await tab.waitForFunction(() => location.pathname.endsWith('/about.html'));
  await tab.waitForNetworkIdle();
  t.equal(tab.url(), `${main}/web/${ts}/${EVIL}/about.html`, 'the page of the capture now in the frame');
  t.equal(await tab.$eval('#banner .url', (e) => e.textContent), `${EVIL}/about.html`);
  t.equal(await frameText(tab), 'About');
  t.same(
    requests.filter((u) => !u.startsWith(main + '/') && !u.startsWith(replay + '/')),
    [],
    'the browser asked only the two origins of the archive',
  );
  t.ok(
    // Its root-relative `/pwned` mapped by the replay shim to the Memento of that path on its site.
    requests.some((u) => u.startsWith(`${replay}/${ID}/memento/${ts}/${EVIL}/pwned?o=null`)),
    "the stored script ran only in the sandbox, on the replay origin's opaque side",
  );
  await nothingRanAsTheArchive(t, tab, requests);
});
