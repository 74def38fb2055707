/**
 * The pages a reader sees when a comparison is over its budget
 * (archive/web/diff.ts), in Chromium: two captures too different to
 * compare line by line (15,000 lines each, all different) say so and
 * link both captures; a changed line too different to mark word by word
 * (one line of ~36 KB each) is shown whole, and the page says why.
 * Screenshots: test-output/screenshots/web-diff-*.png.
 */
import path from 'node:path';
import t from 'tap';
import { captureRecord, putCapture, startArchive } from '../helpers/archive.js';
import { launchBrowser, SCREENSHOT_DIR } from '../helpers/browser.js';

const HOST = 'budget.example';

function words(prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `${prefix}${i * 7919}`);
}

const a = await startArchive();
t.teardown(() => a.close());
const browser = await launchBrowser();
t.teardown(() => browser.close());

async function put(target: string, date: string, body: string): Promise<void> {
  const r = await putCapture(
    a,
    `http://${HOST}${target}`,
    captureRecord({ host: HOST, target, date, body, responseHeaders: [['Content-Type', 'text/plain; charset=utf-8']] }),
  );
  if (r.status !== 201) throw new Error(`PUT ${target}: ${r.status} ${r.text}`);
}

/** Opens `address` in a tab: the page's visible text, and which requests left the archive; a screenshot as `name`. */
async function look(address: string, name: string): Promise<{ text: string; outside: string[]; links: string[] }> {
  const tab = await browser.newPage();
  const outside: string[] = [];
  await tab.setRequestInterception(true);
  tab.on('request', (r) => {
    if (r.url().startsWith(a.url + '/') || r.url().startsWith('data:')) void r.continue();
    else {
      outside.push(r.url());
      void r.abort();
    }
  });
  const res = await tab.goto(address, { waitUntil: 'load' });
  if (res?.status() !== 200) throw new Error(`${address}: ${res?.status()}`);
  await tab.screenshot({ path: path.join(SCREENSHOT_DIR, name), fullPage: false });
  const text = await tab.evaluate(() => document.body.innerText);
  const links = await tab.$$eval('main a', (as) => as.map((x) => `${x.textContent} ${x.getAttribute('href')}`));
  await tab.close();
  return { text, outside, links };
}

t.test('too different to compare line by line: the page says so in words and links the two captures', async (t) => {
  await put('/lines', 'Mon, 05 Jan 2026 10:00:00 GMT', words('old', 15_000).join('\n'));
  await put('/lines', 'Tue, 06 Jan 2026 10:00:00 GMT', words('new', 15_000).join('\n'));
  const page = await look(`${a.url}/web/diff/20260105100000/20260106100000/http://${HOST}/lines`, 'web-diff-too-different.png');
  t.match(page.text, /What changed on http:\/\/budget\.example\/lines/);
  t.match(
    page.text,
    /The texts are too different to compare line by line within what one page may cost \(1,000 lines removed or added, 1\.5 s of work\)\. Open the two captures above to see each as it was\./,
  );
  t.ok(
    page.links.some((l) => l.startsWith('View this capture') && l.includes('/web/20260105100000/')),
    'the older capture is a link',
  );
  t.ok(
    page.links.some((l) => l.startsWith('View this capture') && l.includes('/web/20260106100000/')),
    'the newer capture is a link',
  );
  t.same(page.outside, [], 'nothing fetched from outside the archive');
});

t.test('a changed line too different to mark word by word: shown whole, and the page says so', async (t) => {
  await put('/words', 'Mon, 05 Jan 2026 10:00:00 GMT', `Title\n${words('alpha', 4500).join(' ')}\nThe end`);
  await put('/words', 'Tue, 06 Jan 2026 10:00:00 GMT', `Title\n${words('beta', 4500).join(' ')}\nThe end`);
  const page = await look(`${a.url}/web/diff/20260105100000/20260106100000/http://${HOST}/words`, 'web-diff-whole-lines.png');
  t.match(page.text, /\+1 line added, −1 line removed\./);
  t.match(page.text, /2 changed lines are too different to show word by word: shown whole below\./);
  t.match(page.text, /Removed:\s*alpha0 alpha7919/, 'the older line, whole, read as removed');
  t.match(page.text, /Added:\s*beta0 beta7919/, 'the newer line, whole, read as added');
  t.same(page.outside, [], 'nothing fetched from outside the archive');
});
