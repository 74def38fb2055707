/**
 * The replay banner's "Verify this capture" as a person sees it, in
 * Chromium at a desktop (1024 px) and a phone (390 px) width: opened, it
 * links to the inclusion proof and the WARC record (which download as JSON
 * and WARC) and to the archive's check of the capture, a page that says
 * in one line what was checked (the capture's leaf, the signed tree it is
 * in, its record digest), then step by step in plain words, who checked
 * (the archive itself) and the key's fingerprint; for a capture whose
 * stored record was changed, a red "does not match" naming what differs;
 * for a revisit, the capture whose body it shows. A stored
 * page that draws a look-alike "verified" box (and posts messages to the
 * banner page) changes nothing of it: the banner is the archive's page,
 * the memento is in its sandboxed frame. Screenshots:
 * test-output/screenshots/verify-*.png.
 */
import path from 'node:path';
import type { Browser, Page } from 'puppeteer-core';
import t, { type Test } from 'tap';
import { rmSync } from 'node:fs';
import { captureRecord, putCapture, request, startArchive, TWO_ARCHIVES } from '../helpers/archive.js';
import { forge, rewriteRecord, rowOf, sha, sql } from '../helpers/tamper.js';
import { launchBrowser, SCREENSHOT_DIR } from '../helpers/browser.js';

const SITE = 'http://shop.example.org';
const DATE = 'Tue, 06 Jan 2026 09:00:00 GMT';
const TS = '20260106090000';
const LATER = 'Thu, 08 Jan 2026 09:00:00 GMT';
const LATER_TS = '20260108090000';
/** A stored page that pretends to be the archive's check, and tells the banner page another memento. */
const FAKE = `<!DOCTYPE html><html><head><title>Offers</title></head><body>
<details class="verify" open><summary>Verify this capture: verified</summary><p class="checked ok">Leaf 999 of the log of archive current, included in the tree of 1000 entries signed 2030-01-01 00:00:00 UTC; record digest sha256:${'0'.repeat(64)}</p></details>
<h1>Winter offers</h1>
<script>parent.postMessage('<p class="checked ok">Leaf 999</p>', '*');
parent.postMessage({ line: 'Leaf 999 of the log', ok: true }, '*');</script>
</body></html>`;

const first = await startArchive();
for (const [p, body, date] of [
  ['/offers.html', FAKE, DATE],
  ['/index.html', '<h1>Shop</h1>', DATE],
  ['/other.html', '<h1>Other</h1>', DATE],
  ['/terms.html', '<h1>Terms</h1><p>Returns within 30 days.</p>', DATE],
  ['/index.html', '<h1>Shop</h1>', LATER],
]) {
  const r = await putCapture(first, SITE + p, captureRecord({ host: 'shop.example.org', target: p, date, body }));
  if (r.status !== 201) throw new Error(`PUT ${p}: ${r.status} ${r.text}`);
}
// Someone with write access to the data folder changes the stored terms (WARC digests and the row's digest recomputed).
await first.close(true);
const terms = await rowOf(first.dataDir, `${SITE}/terms.html`, DATE);
const forged = await rewriteRecord(first.dataDir, terms, (r) => forge(r, {}, (b) => Buffer.from(b.toString('latin1').replace('30 days', '90 days'), 'latin1')));
const block = forged.subarray(forged.indexOf('\r\n\r\n') + 4, forged.length - 4);
await sql(first.dataDir, 'UPDATE memento SET digest = ? WHERE id = ?', [sha(block.subarray(block.indexOf('\r\n\r\n') + 4)), terms.id]);
const a = await startArchive(TWO_ARCHIVES, { dataDir: first.dataDir });
let browser: Browser | undefined;
t.teardown(async () => {
  await browser?.close();
  await a.close();
  rmSync(first.dataDir, { recursive: true, force: true });
});

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
    t.equal(await page.$eval('.verdict .headline', (e) => (e as HTMLElement).innerText.trim()), '✔ Matches the archive’s signed log');
    const steps = await page.$$eval('.steps li', (els) => els.map((e) => [e.className, (e as HTMLElement).innerText.trim()]));
    t.same(
      steps.map(([c]) => c),
      ['ok', 'ok', 'ok', 'info'],
      'record, inclusion, signature held; how it came in',
    );
    t.match(steps[0][1], /The capture’s WARC record, as stored and served, was read and hashed/);
    t.match(steps[3][1], /It came in as a capture PUT/);
    t.match(await page.$eval('.who', (e) => (e as HTMLElement).innerText), /This is the archive checking itself/);
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

t.test(
  'a changed record: a red "does not match" a reader cannot miss, at desktop and phone width; a revisit names the capture whose body it shows',
  async (t) => {
    for (const width of [1024, 390] as const) {
      const page = await tab(t, width);
      await page.goto(`${a.url}/web/verify/current/${TS}/${SITE}/terms.html`, { waitUntil: 'networkidle0' });
      t.equal(await page.$eval('.verdict .headline', (e) => (e as HTMLElement).innerText.trim()), '✘ Does not match');
      const colour = await page.$eval('.verdict', (e) => getComputedStyle(e).backgroundColor);
      t.equal(colour, 'rgb(253, 224, 224)', 'the verdict box is red');
      const failed = await page.$$eval('.steps li.failed', (els) => els.map((e) => (e as HTMLElement).innerText));
      t.equal(failed.length, 1, 'one step failed');
      t.match(failed[0], /The capture’s WARC record as stored does NOT match its log entry: .*what differs: the digest of the record’s bytes/);
      t.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), `${width} px: no sideways scrolling`);
      await page.screenshot({ path: path.join(SCREENSHOT_DIR, `verify-page-changed-${width}.png`), fullPage: true });
    }
    const page = await tab(t, 1024);
    await page.goto(`${a.url}/web/verify/current/${LATER_TS}/${SITE}/index.html`, { waitUntil: 'networkidle0' });
    const steps = await page.$$eval('.steps li', (els) => els.map((e) => [e.className, (e as HTMLElement).innerText.trim()]));
    t.same(
      steps.map(([c]) => c),
      ['ok', 'ok', 'ok', 'ok', 'info'],
    );
    t.match(
      steps[1][1],
      new RegExp(
        `This capture is a revisit \\(the page was the same as before\\): it shows the body of the capture of ${SITE}/index.html at ${TS}, whose record <urn:uuid:[^>]+> and body digest sha256:[0-9a-f]{64} \\(read now\\) are the ones its log entry names`,
      ),
    );
    await page.screenshot({ path: path.join(SCREENSHOT_DIR, 'verify-page-revisit-1024.png'), fullPage: true });
  },
);

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
