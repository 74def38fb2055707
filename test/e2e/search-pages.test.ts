/**
 * The search and phrase-history pages in Chromium, at a phone's and a
 * desktop's width: what a person sees (hits with their marked words, the
 * date counts, the periods with their "what changed" link), that stored
 * markup stays text, that the pages fetch nothing outside the archive,
 * that nothing overflows the phone's width, and that a search whose time
 * ran out says so. Screenshots in
 * test-output/screenshots/search-*.png (gitignored) for a person to look at.
 */
import path from 'node:path';
import t from 'tap';
import { launchBrowser, SCREENSHOT_DIR } from '../helpers/browser.js';
import { startArchive } from '../helpers/archive.js';
import { VisibleSearch } from '../../archive/read/search.js';
import { load, PHRASE, RULES } from '../archive/search/helpers.js';

const WIDTHS = [
  { name: 'phone', viewport: { width: 390, height: 844, deviceScaleFactor: 1, isMobile: true, hasTouch: true } },
  { name: 'desktop', viewport: { width: 1280, height: 900, deviceScaleFactor: 1 } },
];

t.test('search and history pages at phone and desktop widths', async (t) => {
  const a = await startArchive(RULES);
  t.teardown(() => a.close());
  await load(a);
  const browser = await launchBrowser();
  t.teardown(() => browser.close());
  const tab = await browser.newPage();
  const outside: string[] = [];
  const dialogs: string[] = [];
  tab.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  await tab.setRequestInterception(true);
  tab.on('request', (r) => {
    const u = r.url();
    if (u.startsWith(a.url + '/') || u.startsWith('data:')) void r.continue();
    else {
      outside.push(u);
      void r.abort();
    }
  });
  const q = encodeURIComponent;
  for (const w of WIDTHS) {
    await tab.setViewport(w.viewport);
    await tab.goto(`${a.url}/search?q=${q('never sell')}&url=${q('http://www.example.org/*')}`, { waitUntil: 'networkidle0' });
    const main = await tab.$eval('main', (el) => (el as HTMLElement).innerText);
    t.match(main, /3 mementos/, `${w.name}: the count`);
    t.match(main, /2025\s+2/, `${w.name}: the year 2025 with 2`);
    t.equal(await tab.$$eval('ol.hits mark', (els) => els.length >= 3), true, `${w.name}: matched words marked`);
    t.equal(await tab.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), true, `${w.name}: nothing wider than the screen`);
    await tab.screenshot({ path: path.join(SCREENSHOT_DIR, `search-${w.name}.png`), fullPage: true });

    await tab.goto(`${a.url}/search?q=${q('markup words')}`, { waitUntil: 'networkidle0' });
    t.match(
      await tab.$eval('.snippet', (el) => (el as HTMLElement).innerText),
      /<script>alert\(1\)<\/script> markup words/,
      `${w.name}: stored markup shown as text`,
    );

    // From the search page to the history of the phrase, by its link.
    await tab.goto(`${a.url}/search?q=${q(`"${PHRASE}"`)}&url=${q('http://www.example.org/terms')}`, { waitUntil: 'networkidle0' });
    await Promise.all([tab.waitForNavigation({ waitUntil: 'networkidle0' }), tab.click('a.history-link')]);
    const history = await tab.$eval('main', (el) => (el as HTMLElement).innerText);
    t.match(history, /15 Jan 2025|Jan 15, 2025|2025-01-15/, `${w.name}: first said`);
    t.match(history, /still there/, `${w.name}: the period still open`);
    t.equal(await tab.$$eval('a.diff', (els) => els.length), 1, `${w.name}: one "what changed" link`);
    t.equal(await tab.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), true, `${w.name}: nothing wider than the screen`);
    await tab.screenshot({ path: path.join(SCREENSHOT_DIR, `history-${w.name}.png`), fullPage: true });
  }

  // A search whose time ran out (a search with no time: its first statement runs, then it stops) says so on the page.
  (a.app.visible as unknown as { search: VisibleSearch }).search = new VisibleSearch(a.store.index, (k, d) => a.app.visible.shows(k, d), {
    rows: 100,
    examined: 100,
    ms: 0,
    statementRows: 1,
    firstWindow: 1,
  });
  for (const w of WIDTHS) {
    await tab.setViewport(w.viewport);
    await tab.goto(`${a.url}/search?q=never`, { waitUntil: 'networkidle0' });
    t.match(
      await tab.$eval('p.count', (el) => (el as HTMLElement).innerText),
      /or more\.\s*The search stopped after 1\.5 s, before the oldest mementos/,
      `${w.name}: the cut said`,
    );
    t.match(
      await tab.$eval('main', (el) => (el as HTMLElement).innerText),
      /None found among the mementos the search read/,
      `${w.name}: not "no memento holds"`,
    );
    t.equal(await tab.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), true, `${w.name}: nothing wider than the screen`);
    await tab.screenshot({ path: path.join(SCREENSHOT_DIR, `search-cut-${w.name}.png`), fullPage: true });
  }
  t.same(outside, [], 'nothing fetched outside the archive');
  t.same(dialogs, [], 'no script of a stored page ran');
});
