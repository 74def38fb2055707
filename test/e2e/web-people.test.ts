/**
 * What a new user meets on the archive's pages, in Chromium at a desktop
 * (1024 px) and a phone (390 px) width: error answers at the archive's
 * addresses are pages for a browser and one line for a client; a link
 * inside the replay frame that leads to an error moves the banner page to
 * what the archive says of that URL; a diff asked in reverse order still
 * names the older capture "Older"; international URLs read as Unicode;
 * list tables fit a phone; `/favicon.ico` is served. Screenshots go to
 * test-output/screenshots/people-*.png (gitignored) for a person to look at.
 */
import { mkdirSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { Browser, Page } from 'puppeteer-core';
import t, { type Test } from 'tap';
import { captureRecord, putCapture, request, startArchive, type TestArchive, TWO_ARCHIVES } from '../helpers/archive.js';
import { launchBrowser, SCREENSHOT_DIR } from '../helpers/browser.js';

const HOST = 'shop.example.org';
const SITE = `http://${HOST}`;
const OLD = 'Thu, 20 Mar 2025 10:00:00 GMT';
const NEW = 'Tue, 06 Jan 2026 09:00:00 GMT';
const IDN_HOST = 'xn--bcher-kva.example';
const IDN_PATH = '/b%C3%BCcher/%E6%97%A5%E6%9C%AC';
const IDN_URL = `http://${IDN_HOST}${IDN_PATH}`;
/** A path whose UTF-8 holds a right-to-left override (U+202E): shown still encoded. */
const RLO_URL = `http://${IDN_HOST}/%E2%80%AEfdp.exe`;
const LONG_URL = `${SITE}/a-rather-long-folder-name/another-folder/and-a-file-name-that-goes-on-and-on-for-a-while.html`;
/** What Chromium sends when it navigates. */
const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';

const CONFIG = `${TWO_ARCHIVES}access:
  - url: ${SITE}/secret.html
    action: block
`;

function news(i: number): string {
  const items = ['Opening hours changed', 'New bread in stock', 'Winter sale'].slice(0, i + 2);
  return `<!DOCTYPE html><html><head><meta charset="utf-8"><title>News</title></head>
<body><h1>Bakery news</h1><ul>${items.map((x) => `<li>${x}</li>`).join('')}</ul>
<p><a id="never" href="/never.html">A page never captured</a> <a id="secret" href="/secret.html">A withheld page</a></p></body></html>`;
}

async function seed(a: TestArchive): Promise<void> {
  const put = async (uriR: string, host: string, target: string, date: string, body: string) => {
    const r = await putCapture(a, uriR, captureRecord({ host, target, date, body }));
    if (r.status !== 201 && r.status !== 200) throw new Error(`PUT ${uriR}: ${r.status} ${r.text}`);
  };
  for (const [i, date] of [OLD, NEW].entries()) {
    await put(`${SITE}/news.html`, HOST, '/news.html', date, news(i));
    await put(`${SITE}/secret.html`, HOST, '/secret.html', date, '<p>secret</p>');
  }
  await put(IDN_URL, IDN_HOST, IDN_PATH, NEW, '<h1>Bücher</h1>');
  await put(RLO_URL, IDN_HOST, '/%E2%80%AEfdp.exe', NEW, '<h1>rlo</h1>');
  await put(LONG_URL, HOST, new URL(LONG_URL).pathname, NEW, '<h1>long</h1>');
}

const a = await startArchive(CONFIG);
let browser: Browser | undefined;
// The browser first: its kept-alive connections close with it, and the daemon then closes at once.
t.teardown(async () => {
  await browser?.close();
  await a.close();
});
await seed(a);
mkdirSync(SCREENSHOT_DIR, { recursive: true });

/** A tab of the shared Chromium at `width` (1024: desktop, 390: phone) that records CSP refusals and any request leaving the archive. */
async function tab(t: Test, width: 1024 | 390): Promise<{ tab: Page; problems: string[] }> {
  browser ??= await launchBrowser();
  const page = await browser.newPage();
  t.teardown(() => page.close());
  await page.setViewport(width === 390 ? { width, height: 844, deviceScaleFactor: 1, isMobile: true, hasTouch: true } : { width, height: 768 });
  const problems: string[] = [];
  page.on('console', (m) => {
    if (/Content Security Policy/.test(m.text())) problems.push('CSP: ' + m.text());
  });
  await page.setRequestInterception(true);
  page.on('request', (r) => {
    const u = r.url();
    if (u.startsWith(a.url + '/') || u.startsWith('data:') || u === 'about:blank') void r.continue();
    else {
      problems.push(u);
      void r.abort();
    }
  });
  return { tab: page, problems };
}

const shot = (page: Page, name: string, fullPage = false) => page.screenshot({ path: path.join(SCREENSHOT_DIR, `people-${name}.png`), fullPage });
const text = (page: Page, sel: string) => page.$eval(sel, (e) => (e as HTMLElement).innerText.trim());
const fitsWidth = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);

/** The headers of an answer that are not about its body (what a page and a line must share). */
function headHeaders(h: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(h))
    if (!/^(content-type|content-length|content-security-policy|x-content-type-options|vary|date|connection|keep-alive)$/.test(k)) out[k] = v;
  return out;
}

t.test('an error answer: a page for a browser, the one line for a client, same status and headers', async (t) => {
  const never = `${SITE}/never.html`;
  const cases: [string, string, number][] = [
    ['/tg/ of a URL never captured', `/tg/${never}`, 404],
    ['/tg/ with a malformed Accept-Datetime', `/tg/${SITE}/news.html`, 400],
    ['a Memento of a URL never captured', `/2025/memento/20250320100000/${never}`, 404],
    ['a Memento the access rules block', `/2025/memento/20250320100000/${SITE}/secret.html`, 451],
    ['the index TimeMap of a URL never captured', `/tg/timemap/${never}`, 404],
    ['an address of nothing', '/nothing/here', 404],
    ["a malformed percent-encoding (fastify's router)", '/tg/http://a.example/%E0%A4%A', 400],
  ];
  for (const [name, target, status] of cases) {
    const extra: Record<string, string> = status === 400 ? { 'accept-datetime': 'yesterday' } : {};
    const line = await request(a.url + target, { headers: { ...extra } });
    const linkFormat = await request(a.url + target, { headers: { ...extra, accept: 'application/link-format, text/html' } });
    const page = await request(a.url + target, { headers: { ...extra, accept: BROWSER_ACCEPT } });
    t.equal(line.status, status, `${name}: ${status} to a client`);
    t.match(line.headers['content-type'], /^text\/plain/, `${name}: text to a client`);
    t.equal(line.text.split('\n').length, 2, `${name}: one line to a client`);
    t.notMatch(String(line.headers.vary ?? ''), /\baccept\b(?!-)/i, `${name}: no Vary: Accept on the line`);
    t.equal(linkFormat.text, line.text, `${name}: a Memento client naming link-format gets the line too`);
    t.equal(page.status, status, `${name}: the same status to a browser`);
    t.match(page.headers['content-type'], /^text\/html; charset=utf-8/, `${name}: a page to a browser`);
    const vary = String(page.headers.vary ?? '')
      .toLowerCase()
      .split(/\s*,\s*/);
    t.ok(vary.includes('accept'), `${name}: Vary names Accept (${page.headers.vary})`);
    for (const v of String(line.headers.vary ?? '')
      .toLowerCase()
      .split(/\s*,\s*/)
      .filter(Boolean))
      t.ok(vary.includes(v), `${name}: and still ${v}`);
    t.same(headHeaders(page.headers), headHeaders(line.headers), `${name}: every other header as for the client`);
    t.notOk(page.headers['memento-datetime'], `${name}: no Memento-Datetime`);
    t.match(page.headers['content-security-policy'], /script-src 'nonce-[\w-]+';/, `${name}: scripts by nonce only`);
    t.notMatch(page.headers['content-security-policy'], /script-src[^;]*'self'/, `${name}: never by 'self'`);
    t.equal(page.headers['x-content-type-options'], 'nosniff');
    const reason = line.text.trim().replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
    if (!target.includes('/memento/') || status !== 404) t.ok(page.text.includes(reason), `${name}: the page gives the same reason`);
    t.match(page.text, /<link rel="stylesheet" href="[^"]+\/_static\/web\.css" nonce=/, `${name}: in the look of the /web/ pages`);
    // An error at a Memento address may show in the banner page's frame: it loads the replay shim, which tells the banner.
    t.equal(/\/_static\/replay\.js" nonce=/.test(page.text), target.includes('/memento/'), `${name}: the replay shim only at a Memento address`);
  }
  t.match(
    (await request(`${a.url}/2025/memento/20250320100000/${never}`, { headers: { accept: BROWSER_ACCEPT } })).text,
    /<h1>Not archived<\/h1>/,
    'a Memento never captured: the "Not archived" page',
  );
  const headHtml = await request(`${a.url}/tg/${never}`, { method: 'HEAD', headers: { accept: BROWSER_ACCEPT } });
  t.equal(headHtml.status, 404, 'HEAD: the same status');
  t.equal(headHtml.body.length, 0, 'HEAD: no body');
});

t.test('the error pages in Chromium, at desktop and phone width', async (t) => {
  for (const width of [1024, 390] as const) {
    const { tab: page, problems } = await tab(t, width);
    const r = await page.goto(`${a.url}/tg/${SITE}/never.html`, { waitUntil: 'networkidle0' });
    t.equal(r?.status(), 404);
    t.equal(await text(page, 'h1'), 'Not found', `${width} px: a heading`);
    t.match(await text(page, '.reason'), /no memento of http:\/\/shop\.example\.org\/never\.html/, `${width} px: the reason`);
    t.equal(await page.$eval('header.site', (e) => getComputedStyle(e).backgroundColor), 'rgb(18, 58, 99)', `${width} px: the pages' stylesheet applies`);
    t.ok(await page.$('header.site form.search input[name=q]'), `${width} px: with the search box`);
    t.ok(await fitsWidth(page), `${width} px: no sideways scrolling`);
    await shot(page, `error-404-${width}`);
    const blocked = await page.goto(`${a.url}/2025/memento/20250320100000/${SITE}/secret.html`, { waitUntil: 'networkidle0' });
    t.equal(blocked?.status(), 451);
    t.equal(await text(page, 'h1'), 'Withheld', `${width} px: a 451 page`);
    await shot(page, `error-451-${width}`);
    t.same(problems, [], `${width} px: nothing left the archive; no CSP refusal`);
  }
});

t.test('a link in the frame that leads to an error: the banner page moves to what the archive says of it', async (t) => {
  for (const width of [1024, 390] as const) {
    const { tab: page, problems } = await tab(t, width);
    for (const [link, heading, status] of [
      ['#never', 'Not archived', 'never.html'],
      ['#secret', 'Withheld', 'secret.html'],
    ] as const) {
      await page.goto(`${a.url}/web/20260106090000/${SITE}/news.html`, { waitUntil: 'networkidle0' });
      const frame = page.frames().find((f) => f.parentFrame() !== null);
      if (!frame) throw new Error('no memento frame');
      t.match(await text(page, '#banner'), /Captured 6 January 2026, 09:00:00 UTC/, `${width} px: the banner of the capture`);
      await frame.click(link);
      await page.waitForFunction((end: string) => location.pathname.endsWith(end), { timeout: 10_000 }, `/${status}`);
      t.equal(page.url(), `${a.url}/web/20260106090000/${SITE}/${status}`, `${width} px ${link}: the address bar names the URL followed`);
      await page.waitForSelector('h1');
      t.equal(await text(page, 'h1'), heading, `${width} px ${link}: the page says "${heading}"`);
      t.equal(await page.$('#banner'), null, `${width} px ${link}: no banner claims the capture shown before`);
      t.notMatch(await page.$eval('body', (e) => e.innerText), /Captured 6 January 2026/, `${width} px ${link}: the previous capture is not named`);
      await shot(page, `frame-error-${status.replace('.html', '')}-${width}`);
    }
    t.same(problems, [], `${width} px: nothing left the archive; no CSP refusal`);
  }
});

t.test('with replay_origin: the frame, on the second host name, leads the banner page into the "Not archived" page too', async (t) => {
  const probe = http.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as { port: number }).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  // One daemon, two origins for the browser: 127.0.0.1 for the pages, localhost for the mementos.
  const main = `http://127.0.0.1:${port}`;
  const replay = `http://localhost:${port}`;
  const b = await startArchive(`listen: 127.0.0.1:${port}\nbase_url: ${main}\nreplay_origin: ${replay}\n${TWO_ARCHIVES}`);
  // Chromium's connections go with its browser context, closed first: the daemon then closes at once.
  browser ??= await launchBrowser();
  const context = await browser.createBrowserContext();
  t.teardown(async () => {
    await context.close();
    await b.close();
  });
  const r = await putCapture(b, `${SITE}/news.html`, captureRecord({ host: HOST, target: '/news.html', date: NEW, body: news(1) }));
  t.equal(r.status, 201);
  // Over HTTP with the replay origin's Host: a Memento address gets the page (styled from the main origin), the pages' addresses the line.
  const onReplay = { host: `localhost:${port}`, accept: BROWSER_ACCEPT };
  const never = await request(`${main}/current/memento/20260106090000/${SITE}/never.html`, { headers: onReplay });
  t.equal(never.status, 404);
  t.match(never.text, new RegExp(`<link rel="stylesheet" href="${main}/_static/web\\.css"`), "the page's stylesheet from the main origin");
  t.match(never.text, new RegExp(`<script src="${replay}/_static/replay\\.js"`), 'the replay shim from the replay origin, as a memento loads it');
  t.match(
    never.headers['content-security-policy'],
    new RegExp(`form-action ${main}; .*frame-ancestors ${main}$`),
    'framed only by the pages; its search goes to them',
  );
  const web = await request(`${main}/web/`, { headers: onReplay });
  t.same([web.status, /^text\/plain/.test(String(web.headers['content-type']))], [404, true], 'the pages on the replay origin: still the one line');

  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (m) => {
    if (/Content Security Policy/.test(m.text())) problems.push('CSP: ' + m.text());
  });
  await page.setRequestInterception(true);
  page.on('request', (q) => {
    const u = q.url();
    if (u.startsWith(main + '/') || u.startsWith(replay + '/') || u === 'about:blank') void q.continue();
    else {
      problems.push(u);
      void q.abort();
    }
  });
  await page.goto(`${main}/web/20260106090000/${SITE}/news.html`, { waitUntil: 'networkidle0' });
  const frame = await page.waitForFrame((f) => f.url().startsWith(`${replay}/current/memento/20260106090000if_/`));
  await frame.waitForSelector('#never');
  await frame.click('#never');
  await page.waitForFunction(() => location.pathname.endsWith('/never.html'), { timeout: 10_000 });
  t.equal(page.url(), `${main}/web/20260106090000/${SITE}/never.html`, 'the banner page moves to the URL followed, on the main origin');
  await page.waitForSelector('h1');
  t.equal(await text(page, 'h1'), 'Not archived');
  t.equal(await page.$('#banner'), null, 'no banner of the capture shown before');
  await shot(page, 'replay-origin-never-1024');
  t.same(problems, [], 'nothing left the archive; no CSP refusal');
});

t.test('a diff asked newer first: the older capture is still "Older", and the changes go from it to the newer', async (t) => {
  const { tab: page, problems } = await tab(t, 1024);
  const versions = () => page.$$eval('.version h2', (els) => els.map((e) => (e as HTMLElement).innerText));
  await page.goto(`${a.url}/web/diff/20250320/20260106/${SITE}/news.html`, { waitUntil: 'networkidle0' });
  const forward = { versions: await versions(), verdict: await text(page, '.verdict') };
  await page.goto(`${a.url}/web/diff/20260106/20250320/${SITE}/news.html`, { waitUntil: 'networkidle0' });
  const reversed = { versions: await versions(), verdict: await text(page, '.verdict') };
  t.same(reversed.versions, ['Older: 20 March 2025, 10:00:00 UTC', 'Newer: 6 January 2026, 09:00:00 UTC'], 'the labels follow the dates');
  t.same(reversed, forward, 'the same page as asked oldest first');
  t.match(reversed.verdict, /^\+1 line added, −0 lines removed/, 'the newer capture added an item');
  t.same(await page.$$eval('.inline-diff ins', (els) => els.map((e) => e.textContent)), ['Winter sale'], 'the added item is marked as added');
  await shot(page, 'diff-reversed-1024');
  const phone = await tab(t, 390);
  await phone.tab.goto(`${a.url}/web/diff/20260106/20250320/${SITE}/news.html`, { waitUntil: 'networkidle0' });
  t.ok(await fitsWidth(phone.tab), '390 px: no sideways scrolling');
  await shot(phone.tab, 'diff-reversed-390');
  t.same([...problems, ...phone.problems], [], 'nothing left the archive; no CSP refusal');
});

t.test('international URLs read as Unicode; links keep the stored address', async (t) => {
  const { tab: page, problems } = await tab(t, 1024);
  await page.goto(`${a.url}/web/20260106090000/${IDN_URL}`, { waitUntil: 'networkidle0' });
  const shown = await page.$eval('#banner .what .url', (e) => ({ text: e.textContent, title: e.getAttribute('title') }));
  t.same(shown, { text: 'http://bücher.example/bücher/日本', title: IDN_URL }, 'the banner: host in Unicode, path decoded; the stored address on hover');
  t.equal(await page.$eval('#banner a[rel=noreferrer]', (e) => e.getAttribute('href')), IDN_URL, 'the live link is the stored address');
  t.match(await page.title(), /^http:\/\/bücher\.example\/bücher\/日本 — 6 January 2026/, 'the tab title reads as Unicode');
  t.match(
    await page.$eval('#memento-frame', (e) => e.getAttribute('src')),
    new RegExp(`/memento/20260106090000if_/${IDN_URL.replace(/[.%]/g, '\\$&')}$`),
    'the frame is the stored address (at the time asked for)',
  );
  await shot(page, 'idn-replay-1024');
  await page.goto(`${a.url}/web/*/${IDN_URL}`, { waitUntil: 'networkidle0' });
  t.equal(await text(page, 'h1'), 'Captures of http://bücher.example/bücher/日本', 'the calendar heading');
  await page.goto(`${a.url}/web/*/${IDN_HOST}/*`, { waitUntil: 'networkidle0' });
  const listed = await page.$$eval('main td.url a', (els) => els.map((e) => [e.textContent, e.getAttribute('href')!.replace(/^.*\/web\/\*\//, '')]));
  t.same(
    listed,
    [
      ['http://bücher.example/%E2%80%AEfdp.exe', RLO_URL],
      ['http://bücher.example/bücher/日本', IDN_URL],
    ],
    'the prefix listing: readable text, stored links; a right-to-left override stays encoded',
  );
  await shot(page, 'idn-prefix-1024');
  await page.goto(`${a.url}/web/`, { waitUntil: 'networkidle0' });
  t.ok(
    (await page.$$eval('#sites-h + .scroll td.url a', (els) => els.map((e) => e.textContent))).includes('bücher.example'),
    'the home page names the site in Unicode',
  );
  const phone = await tab(t, 390);
  await phone.tab.goto(`${a.url}/web/*/${IDN_HOST}/*`, { waitUntil: 'networkidle0' });
  t.ok(await fitsWidth(phone.tab), '390 px: no sideways scrolling');
  await shot(phone.tab, 'idn-prefix-390');
  t.same([...problems, ...phone.problems], [], 'nothing left the archive; no CSP refusal');
});

t.test('list tables fit a phone: every cell inside the screen, no table scrolls sideways', async (t) => {
  const pages: [string, string][] = [
    ['home', '/web/'],
    ['prefix', `/web/*/${HOST}/*`],
    ['calendar-day', `/web/20260106*/${SITE}/news.html`],
  ];
  for (const width of [390, 1024] as const) {
    const { tab: page, problems } = await tab(t, width);
    for (const [name, url] of pages) {
      await page.goto(a.url + url, { waitUntil: 'networkidle0' });
      const m = await page.evaluate(() => ({
        viewport: window.innerWidth,
        page: document.documentElement.scrollWidth,
        wrappers: [...document.querySelectorAll('.scroll')].map((e) => ({ scroll: e.scrollWidth, client: e.clientWidth })),
        rightmost: Math.max(...[...document.querySelectorAll('table.list tbody td')].map((e) => e.getBoundingClientRect().right)),
        headers: getComputedStyle(document.querySelector('table.list thead')!).position,
      }));
      t.ok(m.page <= m.viewport, `${name} at ${width} px: the page fits (${m.page} px)`);
      t.ok(
        m.wrappers.every((w) => w.scroll <= w.client),
        `${name} at ${width} px: no table scrolls sideways (${JSON.stringify(m.wrappers)})`,
      );
      t.ok(m.rightmost <= m.viewport, `${name} at ${width} px: every cell inside the screen (rightmost edge ${Math.round(m.rightmost)} px)`);
      if (width === 1024) t.not(m.headers, 'absolute', `${name} at ${width} px: a table with its column headers`);
      await shot(page, `table-${name}-${width}`, true);
    }
    if (width === 390) {
      await page.goto(a.url + `/web/*/${HOST}/*`, { waitUntil: 'networkidle0' });
      const labels = await page.$$eval('table.list tbody tr:first-child td', (els) => els.map((e) => getComputedStyle(e, '::before').content));
      t.same(labels, ['"URL"', '"Captures"', '"First"', '"Last"'], '390 px: each cell is labelled with its column');
    }
    t.same(problems, [], `${width} px: nothing left the archive; no CSP refusal`);
  }
});

t.test("/favicon.ico: the archive's icon", async (t) => {
  const r = await request(`${a.url}/favicon.ico`);
  t.equal(r.status, 200);
  t.equal(r.headers['content-type'], 'image/x-icon');
  t.same([...r.body.subarray(0, 4)], [0, 0, 1, 0], 'an ICO file');
  t.ok(
    r.body
      .subarray(6 + 16 * r.body.readUInt16LE(4))
      .subarray(1, 4)
      .toString('latin1') === 'PNG',
    'holding PNG images',
  );
  const { tab: page, problems } = await tab(t, 1024);
  await page.goto(`${a.url}/web/`, { waitUntil: 'networkidle0' });
  const href = await page.$eval('link[rel=icon]', (e) => (e as HTMLLinkElement).href);
  t.equal(href, `${a.url}/favicon.ico`, 'the pages name it');
  const icon = await page.goto(href);
  t.equal(icon?.status(), 200, 'Chromium loads it');
  t.same(problems, [], 'nothing left the archive; no CSP refusal');
});
