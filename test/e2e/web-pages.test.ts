/**
 * The pages for people (`/web/`) as a person uses them, in Chromium: type
 * a URL at `/` → calendar → a day → a capture → replay with its banner →
 * next → navigation inside the frame moves the banner → compare with
 * previous; a prefix listing; the same with the keyboard alone; a phone-width
 * screen. Every request the browser makes is watched: none may leave the
 * archive (any other is aborted and fails the test). Screenshots go to
 * test-output/screenshots/web-*.png (gitignored) for a person to look at.
 */
import path from 'node:path';
import type { Page } from 'puppeteer-core';
import t, { type Test } from 'tap';
import { captureRecord, putCapture, startArchive, type TestArchive } from '../helpers/archive.js';
import { launchBrowser, SCREENSHOT_DIR } from '../helpers/browser.js';

const HOST = 'shop.example.org';
const SITE = `http://${HOST}`;

/** The captures: news.html five times over two archives' spans (2025, current), its stylesheet, an about page. */
const NEWS_DATES = [
  'Thu, 20 Mar 2025 10:00:00 GMT',
  'Fri, 21 Mar 2025 11:00:00 GMT',
  'Fri, 21 Mar 2025 15:30:00 GMT',
  'Mon, 05 Jan 2026 10:00:00 GMT',
  'Tue, 06 Jan 2026 09:00:00 GMT',
];

function newsPage(i: number): string {
  const items = ['Opening hours changed', 'New bread in stock', 'Closed on Sunday', 'Winter sale', 'New baker'].slice(0, i + 1);
  return `<!DOCTYPE html><html><head><meta charset="utf-8"><title>Bakery news ${i + 1}</title><link rel="stylesheet" href="/style.css"></head>
<body><h1>Bakery news</h1><p class="edition">Edition ${i + 1}</p><ul>${items.map((x) => `<li>${x}</li>`).join('')}</ul>
<p><a id="about" href="/about.html">About us</a></p></body></html>`;
}

async function seed(a: TestArchive): Promise<void> {
  for (const [i, date] of NEWS_DATES.entries()) {
    const put = async (target: string, body: string, type: string) => {
      const r = await putCapture(a, SITE + target, captureRecord({ host: HOST, target, date, body, responseHeaders: [['Content-Type', type]] }));
      if (r.status !== 201 && r.status !== 200) throw new Error(`PUT ${target}: ${r.status} ${r.text}`);
    };
    await put('/news.html', newsPage(i), 'text/html; charset=utf-8');
    await put('/style.css', `body{font-family:sans-serif;background:${i < 3 ? '#fff8e7' : '#e7f3ff'};margin:2em} h1{color:#7a3b00}`, 'text/css');
    await put(
      '/about.html',
      `<!DOCTYPE html><html><head><title>About</title><link rel="stylesheet" href="/style.css"></head><body><h1>About us ${i + 1}</h1><p><a href="/news.html">News</a></p></body></html>`,
      'text/html',
    );
  }
}

/** A tab that aborts and records every request outside the archive, and every refusal of a page's Content-Security-Policy. */
async function watchedTab(browser: Awaited<ReturnType<typeof launchBrowser>>, archiveUrl: string, outside: string[]): Promise<Page> {
  const tab = await browser.newPage();
  tab.on('console', (m) => {
    if (/Content Security Policy/.test(m.text())) outside.push('CSP: ' + m.text());
  });
  await tab.setRequestInterception(true);
  tab.on('request', (r) => {
    const u = r.url();
    if (u.startsWith(archiveUrl + '/') || u.startsWith('data:') || u === 'about:blank') void r.continue();
    else {
      outside.push(u);
      void r.abort();
    }
  });
  return tab;
}

/** A seeded archive and a watched tab in a new Chromium, both closed at the end of `t`. */
async function seededTab(t: Test): Promise<{ a: TestArchive; tab: Page; outside: string[] }> {
  const a = await startArchive();
  t.teardown(() => a.close());
  await seed(a);
  const browser = await launchBrowser();
  t.teardown(() => browser.close());
  const outside: string[] = [];
  return { a, tab: await watchedTab(browser, a.url, outside), outside };
}

const shot = (tab: Page, name: string) => tab.screenshot({ path: path.join(SCREENSHOT_DIR, `web-${name}.png`), fullPage: false });

/** The text of the banner of the replay page. */
const bannerText = (tab: Page) => tab.$eval('#banner', (el) => (el as HTMLElement).innerText);

t.test('the search → calendar → replay → next → compare flow, in Chromium', async (t) => {
  const { a, tab, outside } = await seededTab(t);

  // `/` → the home page, with the site and the latest captures.
  await tab.goto(`${a.url}/`, { waitUntil: 'networkidle0' });
  t.equal(tab.url(), `${a.url}/web/`, '/ redirects to /web/');
  const home = await tab.$eval('main', (el) => (el as HTMLElement).innerText);
  // The stylesheet: stored on 20 March, served again unchanged 25 hours later (a revisit, revisit_interval 1d) and 4 hours
  // after that (within the day: nothing stored), changed in January: 3 captures.
  t.match(home, /shop\.example\.org\s+3\s+13\s/, 'the archived site with its URL count and capture count (the stylesheet: 2 versions, 1 revisit)');
  t.match(home, /Latest captures/);
  t.equal(await tab.evaluate(() => document.activeElement?.id), 'q', 'the search box has the focus');
  await shot(tab, 'home');

  // Type a URL without a scheme; Enter.
  await tab.type('#q', `${HOST}/news.html`);
  await Promise.all([tab.waitForNavigation({ waitUntil: 'networkidle0' }), tab.keyboard.press('Enter')]);
  t.equal(tab.url(), `${a.url}/web/*/${SITE}/news.html`, 'the search lands on the calendar of the URL');
  t.match(await tab.$eval('.stats', (el) => (el as HTMLElement).innerText), /^5 captures between 20 March 2025, 10:00:00 UTC and 6 January 2026, 09:00:00 UTC/);
  const years = await tab.$$eval('.years a', (els) => els.map((e) => e.getAttribute('aria-label')));
  t.same(years, ['2025: 3 captures', '2026: 2 captures'], 'a histogram entry per year with its count');
  t.equal(await tab.$eval('.years a[aria-current]', (e) => e.getAttribute('aria-label')), '2026: 2 captures', 'the year of the last capture is shown');
  const bars = await tab.$$eval('.years li:first-child .bars span', (els) => els.map((e) => Math.round(e.getBoundingClientRect().height)));
  t.same(
    bars.map((h) => h > 0),
    [false, false, true, false, false, false, false, false, false, false, false, false],
    '2025: one bar, for March',
  );
  const days2026 = await tab.$$eval('td.has a', (els) => els.map((e) => e.getAttribute('aria-label')));
  t.same(days2026, ['5 January 2026: 1 capture', '6 January 2026: 1 capture'], 'the days with captures and their counts');
  t.match(await tab.$eval('time', (e) => e.title), /^Your time: /, 'a date shows the local time on hover');
  await shot(tab, 'calendar');

  // Year 2025, then the day with two captures, then its second capture.
  await Promise.all([tab.waitForNavigation(), tab.click('.years a[aria-label^="2025"]')]);
  const march21 = 'td.has a[aria-label="21 March 2025: 2 captures"]';
  t.ok(await tab.$(march21), 'the calendar of 2025 counts 2 captures on 21 March');
  await Promise.all([tab.waitForNavigation(), tab.click(march21)]);
  const rows = await tab.$$eval('.day-list tbody tr', (trs) => trs.map((tr) => (tr as HTMLElement).innerText.replace(/\s+/g, ' ').trim()));
  t.same(rows, ['11:00:00 200 text/html 2025 Compare with previous', '15:30:00 200 text/html 2025 Compare with previous'], "the day's captures");
  await shot(tab, 'calendar-day');
  await Promise.all([tab.waitForNavigation({ waitUntil: 'networkidle0' }), tab.click('.day-list tbody tr:nth-child(2) a.capture')]);
  t.equal(tab.url(), `${a.url}/web/20250321153000/${SITE}/news.html`);
  let banner = await bannerText(tab);
  t.match(banner, /Captured 21 March 2025, 15:30:00 UTC\s*20250321153000/, 'the banner: datetime in words and as 14 digits');
  t.match(banner, /exactly the time asked for/);
  const frame = async () => {
    const f = tab.frames().find((x) => x.parentFrame() !== null);
    if (!f) throw new Error('no memento frame');
    return f;
  };
  t.equal(await (await frame()).$eval('.edition', (e) => e.textContent), 'Edition 3', 'the frame shows the capture of 15:30');
  t.equal(
    await (await frame()).evaluate(() => getComputedStyle(document.body).backgroundColor),
    'rgb(255, 248, 231)',
    "the frame's stylesheet is the archive's, from the same time",
  );
  await shot(tab, 'replay');

  // Next: the first capture of 2026 (the other archive).
  await Promise.all([tab.waitForNavigation({ waitUntil: 'networkidle0' }), tab.click('#banner a[data-nav="next"]')]);
  t.equal(tab.url(), `${a.url}/web/20260105100000/${SITE}/news.html`);
  banner = await bannerText(tab);
  t.match(banner, /Captured 5 January 2026, 10:00:00 UTC/);
  t.equal(await (await frame()).$eval('.edition', (e) => e.textContent), 'Edition 4');

  // A link inside the memento: the frame moves to the about page of the same time; the banner follows.
  await (await frame()).click('#about');
  await tab.waitForFunction(() => location.pathname.endsWith('/about.html'), { timeout: 10_000 });
  t.equal(tab.url(), `${a.url}/web/20260105100000/${SITE}/about.html`, 'the address bar names the capture in the frame');
  banner = await bannerText(tab);
  t.match(banner, new RegExp(`${SITE}/about.html`), 'the banner names the page now in the frame');
  t.match(banner, /Captured 5 January 2026, 10:00:00 UTC/);
  t.equal(await tab.title(), `${SITE}/about.html — 5 January 2026, 10:00:00 UTC`);
  t.equal(await (await frame()).$eval('h1', (e) => e.textContent), 'About us 4');

  // Back to the news page of 6 January 2026 and compare with the previous capture.
  await tab.goto(`${a.url}/web/20260106/${SITE}/news.html`, { waitUntil: 'networkidle0' });
  t.match(
    await bannerText(tab),
    /Captured 6 January 2026, 09:00:00 UTC\s*20260106090000\s*9 hours after the time asked for/,
    'the distance from the asked time',
  );
  await Promise.all([tab.waitForNavigation(), tab.click('#banner a[href*="/web/diff/"]')]);
  t.equal(tab.url(), `${a.url}/web/diff/20260105100000/20260106090000/${SITE}/news.html`);
  // Title and edition changed (a line each), one item added.
  t.match(await tab.$eval('.verdict', (e) => (e as HTMLElement).innerText), /\+3 lines added, −2 lines removed/);
  t.same(
    await tab.$$eval('.inline-diff ins', (els) => els.map((e) => e.textContent)),
    ['5', '5', 'New baker'],
    'the changed words and the added line are marked',
  );
  t.same(await tab.$$eval('.inline-diff del', (els) => els.map((e) => e.textContent)), ['4', '4'], 'the removed words are marked');
  const inserted = await tab.$$eval('.inline-diff .line-ins', (els) => els.map((e) => (e as HTMLElement).innerText));
  t.ok(
    inserted.some((l) => /New baker/.test(l)),
    'the added item is marked as added',
  );
  await shot(tab, 'diff');

  // A prefix listing.
  await tab.goto(`${a.url}/web/*/${HOST}/*`, { waitUntil: 'networkidle0' });
  const listed = await tab.$$eval('main tbody tr', (trs) => trs.map((tr) => (tr as HTMLElement).innerText.split('\t').slice(0, 2).join(' ')));
  t.same(listed, [`${SITE}/about.html 5`, `${SITE}/news.html 5`, `${SITE}/style.css 3`], 'every URL under the prefix with its count');
  await shot(tab, 'prefix');

  t.same(outside, [], 'no request left the archive; no CSP refusal');
});

t.test('keyboard only: search, calendar, a capture', async (t) => {
  const { a, tab, outside } = await seededTab(t);
  await tab.goto(`${a.url}/web/`, { waitUntil: 'networkidle0' });
  await tab.keyboard.type(`${HOST}/news.html`);
  await Promise.all([tab.waitForNavigation(), tab.keyboard.press('Enter')]);
  // Tab until a day with captures has the focus; its focus ring is visible.
  let label: string | null = null;
  for (let i = 0; i < 80 && !label; i++) {
    await tab.keyboard.press('Tab');
    label = await tab.evaluate(() => (document.activeElement?.closest('td.has') ? document.activeElement.getAttribute('aria-label') : null));
  }
  t.equal(label, '5 January 2026: 1 capture', 'Tab reaches the first day with captures');
  t.not(await tab.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle), 'none', 'the focused link shows a focus ring');
  await shot(tab, 'keyboard-focus');
  await Promise.all([tab.waitForNavigation(), tab.keyboard.press('Enter')]);
  t.match(tab.url(), /\/web\/20260105\*\//, 'Enter opens the day');
  let onCapture = false;
  for (let i = 0; i < 120 && !onCapture; i++) {
    await tab.keyboard.press('Tab');
    onCapture = await tab.evaluate(() => !!document.activeElement?.matches('a.capture'));
  }
  t.ok(onCapture, "Tab reaches the day's capture");
  await Promise.all([tab.waitForNavigation(), tab.keyboard.press('Enter')]);
  t.equal(tab.url(), `${a.url}/web/20260105100000/${SITE}/news.html`, 'Enter opens the replay');
  t.same(outside, [], 'no request left the archive; no CSP refusal');
});

t.test('a phone-width screen: no page scrolls sideways', async (t) => {
  const { a, tab, outside } = await seededTab(t);
  await tab.setViewport({ width: 390, height: 844, deviceScaleFactor: 1, isMobile: true, hasTouch: true });
  for (const [name, url] of [
    ['home', '/web/'],
    ['calendar', `/web/20250321*/${SITE}/news.html`],
    ['replay', `/web/20250321/${SITE}/news.html`],
    ['diff', `/web/diff/20250320/20260106/${SITE}/news.html`],
    ['prefix', `/web/*/${HOST}/*`],
  ]) {
    await tab.goto(a.url + url, { waitUntil: 'networkidle0' });
    const { scroll, width } = await tab.evaluate(() => ({ scroll: document.documentElement.scrollWidth, width: window.innerWidth }));
    t.ok(scroll <= width, `${name}: fits ${width} px (content ${scroll} px)`);
    await shot(tab, `phone-${name}`);
  }
  t.same(outside, [], 'no request left the archive; no CSP refusal');
});
