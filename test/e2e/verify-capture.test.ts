/**
 * The replay banner's "Verify this capture" as a person sees it, in
 * Chromium at a desktop (1024 px) and a phone (390 px) width: opened, it
 * links to the inclusion proof and the WARC record (which download as JSON
 * and WARC) and to the archive's check of the capture, a page that says
 * in one line what was checked (the capture's leaf, the signed tree it is
 * in, its record digest). A stored
 * page that draws a look-alike "verified" box (and posts messages to the
 * banner page) changes nothing of it: the banner is the archive's page,
 * the memento is in its sandboxed frame. Screenshots:
 * test-output/screenshots/verify-*.png.
 */
import path from 'node:path';
import type { Browser, Page } from 'puppeteer-core';
import t, { type Test } from 'tap';
import { captureRecord, putCapture, request, startArchive } from '../helpers/archive.js';
import { launchBrowser, SCREENSHOT_DIR } from '../helpers/browser.js';

const SITE = 'http://shop.example.org';
const DATE = 'Tue, 06 Jan 2026 09:00:00 GMT';
const TS = '20260106090000';
/** A stored page that pretends to be the archive's check, and tells the banner page another memento. */
const FAKE = `<!DOCTYPE html><html><head><title>Offers</title></head><body>
<details class="verify" open><summary>Verify this capture: verified</summary><p class="checked ok">Leaf 999 of the log of archive current, included in the tree of 1000 entries signed 2030-01-01 00:00:00 UTC; record digest sha256:${'0'.repeat(64)}</p></details>
<h1>Winter offers</h1>
<script>parent.postMessage('<p class="checked ok">Leaf 999</p>', '*');
parent.postMessage({ line: 'Leaf 999 of the log', ok: true }, '*');</script>
</body></html>`;

const a = await startArchive();
let browser: Browser | undefined;
t.teardown(async () => {
  await browser?.close();
  await a.close();
});
for (const [p, body] of [
  ['/offers.html', FAKE],
  ['/index.html', '<h1>Shop</h1>'],
  ['/other.html', '<h1>Other</h1>'],
]) {
  const r = await putCapture(a, SITE + p, captureRecord({ host: 'shop.example.org', target: p, date: DATE, body }));
  if (r.status !== 201) throw new Error(`PUT ${p}: ${r.status} ${r.text}`);
}

async function tab(t: Test, width: 1024 | 390): Promise<Page> {
  browser ??= await launchBrowser();
  const page = await browser.newPage();
  t.teardown(() => page.close());
  await page.setViewport(width === 390 ? { width, height: 844, deviceScaleFactor: 1, isMobile: true, hasTouch: true } : { width, height: 768 });
  return page;
}

const LINE = new RegExp(
  `^Leaf (\\d+) of the log of archive current, included in the tree of (\\d+) entr(y|ies) signed \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC; record digest sha256:[0-9a-f]{64}$`,
);

t.test('"Verify this capture": the links of the banner, the archive’s check on its page, and the two downloads, at desktop and phone width', async (t) => {
  for (const width of [1024, 390] as const) {
    const page = await tab(t, width);
    await page.goto(`${a.url}/web/${TS}/${SITE}/index.html`, { waitUntil: 'networkidle0' });
    await page.click('#verify summary');
    const proof = await page.$eval('#verify a[href*="/proof/"]', (e) => (e as HTMLAnchorElement).href);
    const record = await page.$eval('#verify a[href*="/record/"]', (e) => (e as HTMLAnchorElement).href);
    t.equal(proof, `${a.url}/current/proof/${TS}/${SITE}/index.html`);
    t.equal(record, `${a.url}/current/record/${TS}/${SITE}/index.html`);
    t.equal(await page.$eval('#verify a[href*="/record/"]', (e) => (e as HTMLElement).innerText), 'WARC response record', 'labelled for what it gives');
    await page.screenshot({ path: path.join(SCREENSHOT_DIR, `verify-banner-${width}.png`) });
    await Promise.all([page.waitForNavigation({ waitUntil: 'networkidle0' }), page.click('#verify a[href*="/web/verify/"]')]);
    t.equal(page.url(), `${a.url}/web/verify/current/${TS}/${SITE}/index.html`, `${width} px: the check’s page`);
    t.equal(await page.$eval('h1', (e) => (e as HTMLElement).innerText), 'Verify this capture');
    const line = await page.$eval('.checked .line', (e) => (e as HTMLElement).innerText.trim());
    t.match(line, LINE, `${width} px: ${line}`);
    t.ok(await page.$('.checked.ok'), 'the check held');
    t.equal(await page.$eval('main a[href*="/proof/"]', (e) => (e as HTMLAnchorElement).href), proof, 'the same downloads');
    const p = await request(proof);
    t.equal(p.status, 200);
    const json = JSON.parse(p.text);
    t.equal(line.match(LINE)![1], String(json.leaf_index), 'the line names the proof’s leaf');
    t.ok(line.endsWith(json.leaf.digest), 'and its digest');
    t.equal((await request(record)).headers['content-type'], 'application/warc');
    t.match(
      await page.$eval('main a[href*="/record/"]', (e) => (e.parentElement as HTMLElement).innerText),
      /^WARC response record: .* The request record beside it, which holds what the visitor sent, is not published\.$/,
    );
    t.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), `${width} px: no sideways scrolling`);
    await page.screenshot({ path: path.join(SCREENSHOT_DIR, `verify-page-${width}.png`), fullPage: true });
  }
  const missing = await request(`${a.url}/web/verify/current/20260106090001/${SITE}/index.html`, { headers: { accept: 'text/html' } });
  t.equal(missing.status, 404, 'not a stored timestamp: 404');
});

t.test('a stored page that draws its own "verified" box and posts messages changes nothing of the archive’s', async (t) => {
  const page = await tab(t, 1024);
  await page.goto(`${a.url}/web/${TS}/${SITE}/offers.html`, { waitUntil: 'networkidle0' });
  await page.click('#verify summary');
  t.equal(new URL(page.url()).pathname, `/web/${TS}/${SITE}/offers.html`, 'the banner page stays on its capture');
  t.equal(await page.$$eval('.checked', (els) => els.length), 0, 'no line of the stored page in the banner page: it is in the frame');
  const frame = page.frames().find((f) => f.parentFrame() !== null)!;
  t.match(await frame.$eval('.checked', (e) => (e as HTMLElement).innerText), /Leaf 999/, 'the look-alike is inside the sandboxed frame');
  await page.screenshot({ path: path.join(SCREENSHOT_DIR, 'verify-hostile-page.png') });
  await Promise.all([page.waitForNavigation({ waitUntil: 'networkidle0' }), page.click('#verify a[href*="/web/verify/"]')]);
  t.equal(new URL(page.url()).pathname, `/web/verify/current/${TS}/${SITE}/offers.html`, 'the banner’s link names its own capture');
  const line = await page.$eval('.checked .line', (e) => (e as HTMLElement).innerText.trim());
  t.match(line, LINE, 'the archive’s own line');
  t.notMatch(line, /Leaf 999/);
});
