/**
 * A page replayed at a time T shows the page as it was served at T, in
 * Chromium, captured through the capture proxy with the origin's Date
 * headers:
 *
 * - 1 January: page.html (H) and style.css (C1, body red);
 * - 1 February: style.css changes (C2, body blue); page.html is H again
 *   (a revisit);
 * - 1 March: both as on 1 February (two revisits).
 *
 * Then `/web/<T>/page.html` for 15 January, 15 February and 15 March: the
 * banner names the capture of the page nearest to T (1 January, the
 * 1 February revisit, the 1 March revisit), the frame replays it at T and
 * the page's computed body colour, read inside the frame, is C1's, C2's,
 * C2's; the banner page stays where it is (the frame at `<T>if_` is the
 * page already shown); its "About this capture" panel lists style.css
 * with the capture the frame shows. Screenshots (closed and open panel):
 * test-output/screenshots/reader-time-*.png (gitignored).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { request, startArchive } from '../helpers/archive.js';
import { launchBrowser, SCREENSHOT_DIR } from '../helpers/browser.js';
import { type Daemon, startDaemon } from '../helpers/daemons.js';

const H =
  '<!DOCTYPE html><html><head><title>Page</title><link rel="stylesheet" href="/style.css"></head><body><h1>The page</h1><p>Same words every month.</p></body></html>';
const C1 = 'body { color: rgb(255, 0, 0); }\n';
const C2 = 'body { color: rgb(0, 0, 255); }\n';
const RED = 'rgb(255, 0, 0)';
const BLUE = 'rgb(0, 0, 255)';

/** What the origin serves now, and the Date it says it serves it at. */
const origin = { date: 'Wed, 01 Jan 2025 12:00:00 GMT', css: C1 };
const server = http.createServer((req, res) => {
  const body = req.url === '/page.html' ? H : req.url === '/style.css' ? origin.css : undefined;
  if (body === undefined) {
    res.writeHead(404, { date: origin.date, 'content-type': 'text/plain' }).end('no\n');
    return;
  }
  res.writeHead(200, { date: origin.date, 'content-type': req.url === '/page.html' ? 'text/html; charset=utf-8' : 'text/css' });
  res.end(body);
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
const originUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

const archive = await startArchive('archives:\n  - id: site\n');
t.teardown(() => archive.close());
const work = await mkdtemp(path.join(os.tmpdir(), 'e2e-reader-time-'));
t.teardown(() => rm(work, { recursive: true, force: true }));
await mkdir(path.join(work, 'vhosts'));
await writeFile(path.join(work, 'proxy.yaml'), `listen: 127.0.0.1:0\nvhosts: vhosts/\nspool: spool\n`);
await writeFile(
  path.join(work, 'vhosts', 'site.yaml'),
  `server_name: 127.0.0.1\nupstream: ${originUrl}\nEnableArchiving: On\nArchiveHost: 127.0.0.1\nArchivePort: ${archive.port}\nArchivePath: /put/\n`,
);
const proxy: Daemon = await startDaemon('capture-proxy.js', ['--config', path.join(work, 'proxy.yaml')]);
t.teardown(() => proxy.stop());
const PAGE = `${proxy.url}/page.html`;
const CSS = `${proxy.url}/style.css`;

/** Waits until the archive holds a memento of `uriR` at `ts` (the proxy uploads after its client has the answer). */
async function stored(uriR: string, ts: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const res = await request(`${archive.url}/site/memento/${ts}id_/${uriR}`, { method: 'HEAD' });
    if (res.status === 200) return;
    if (Date.now() > deadline) throw new Error(`no memento of ${uriR} at ${ts} (${res.status}): ${proxy.output().slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** One visit through the proxy on the origin's `date`: the page, then its stylesheet. */
async function visit(date: string, css: string, ts: string): Promise<void> {
  origin.date = date;
  origin.css = css;
  for (const u of [PAGE, CSS]) {
    const res = await request(u);
    if (res.status !== 200) throw new Error(`${u} through the proxy: ${res.status}`);
  }
  await stored(PAGE, ts);
  await stored(CSS, ts);
}

t.test('15 January → H with C1, 15 February → H with C2, 15 March → H with C2, in Chromium', async (t) => {
  await visit('Wed, 01 Jan 2025 12:00:00 GMT', C1, '20250101120000');
  await visit('Sat, 01 Feb 2025 12:00:00 GMT', C2, '20250201120000');
  await visit('Sat, 01 Mar 2025 12:00:00 GMT', C2, '20250301120000');
  const timemap = await request(`${archive.url}/site/timemap/link/${PAGE}`);
  t.equal((timemap.text.match(/rel="[^"]*memento"/g) ?? []).length, 3, 'the page has three mementos: the capture and two revisits');

  const browser = await launchBrowser();
  t.teardown(() => browser.close());
  await mkdir(SCREENSHOT_DIR, { recursive: true });
  const cases: [label: string, ts: string, pageTs: string, cssTs: string, color: string][] = [
    ['15-jan', '20250115000000', '20250101120000', '20250101120000', RED],
    ['15-feb', '20250215000000', '20250201120000', '20250201120000', BLUE],
    ['15-mar', '20250315000000', '20250301120000', '20250301120000', BLUE],
  ];
  for (const [label, ts, pageTs, cssTs, color] of cases) {
    const tab = await browser.newPage();
    const outside: string[] = [];
    await tab.setRequestInterception(true);
    tab.on('request', (r) => {
      if (r.url().startsWith(archive.url + '/') || r.url() === 'about:blank') void r.continue();
      else {
        outside.push(r.url());
        void r.abort();
      }
    });
    const address = `${archive.url}/web/${ts}/${PAGE}`;
    const frameUrl = `${archive.url}/site/memento/${ts}if_/${PAGE}`;
    // The frame's own navigation, as the browser reports it (the page's load may come before the frame has a URL).
    const framed = tab.waitForFrame((f) => f.name() === 'memento' && f.url() !== '' && f.url() !== 'about:blank', { timeout: 60_000 });
    const res = await tab.goto(address, { waitUntil: 'networkidle0' });
    t.equal(res?.status(), 200, `${label}: the banner page`);
    const frame = await framed;
    t.equal(frame.url(), frameUrl, `${label}: the frame replays at the reader's time`);
    await frame.waitForFunction(() => document.readyState === 'complete');
    const bodyColor = await frame.evaluate(() => getComputedStyle(document.body).color);
    t.equal(bodyColor, color, `${label}: the body colour of the stylesheet served at T`);
    t.equal(tab.url(), address, `${label}: the banner page stays at the reader's time`);
    const when = await tab.$eval('.banner .when .ts', (e) => e.textContent);
    t.equal(when, pageTs, `${label}: the banner names the capture of the page nearest to T`);
    const row = await tab.$$eval('#coherence tbody tr', (rows) =>
      rows.map((r) => [...r.querySelectorAll('td')].map((c) => (c.textContent ?? '').replace(/\s+/g, ' ').trim())),
    );
    const cssTime = `${cssTs.slice(0, 4)}-${cssTs.slice(4, 6)}-${cssTs.slice(6, 8)} ${cssTs.slice(8, 10)}:${cssTs.slice(10, 12)}`;
    t.same(row, [[CSS, 'stylesheet', cssTime, 'same second']], `${label}: the panel lists style.css with its capture time`);
    t.same(outside, [], `${label}: nothing left the archive`);
    await tab.screenshot({ path: path.join(SCREENSHOT_DIR, `reader-time-${label}.png`) });
    // The panel opened (a <details>: no script), for a person to look at.
    await tab.click('#coherence summary');
    t.ok(await tab.$eval('#coherence', (d) => (d as HTMLDetailsElement).open), `${label}: the panel opens`);
    await tab.screenshot({ path: path.join(SCREENSHOT_DIR, `reader-time-${label}-panel.png`) });
    await tab.close();
  }
});
