/**
 * A WACZ package from `memento-archive wacz` replayed by ReplayWeb.page in
 * Chromium, as someone given the package would open it: a page on
 * 127.0.0.1 (a secure context, so its service worker runs) loads
 * ReplayWeb.page's ui.js (from node_modules/replaywebpage), whose
 * service worker (sw.js) reads the package by range requests. The
 * replayed page shows the captured text in the captured stylesheet's
 * colour, at the time asked for, a revisit included. Chromium resolves
 * no host but 127.0.0.1 (nothing is fetched from the internet).
 * Screenshot: test-output/screenshots/wacz-replay-*.png.
 */
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { Frame, Page } from 'puppeteer-core';
import serveStatic from 'serve-static';
import t from 'tap';
import { captureRecord, putCapture, startArchive, TWO_ARCHIVES } from '../helpers/archive.js';
import { launchBrowser, SCREENSHOT_DIR } from '../helpers/browser.js';
import { repo } from '../helpers/daemons.js';
import { runCli, writeConfig } from '../archive/helpers.js';

const day = (d: number) => `${['Tue', 'Wed', 'Thu'][d - 20]}, ${d} Mar 2001 20:35:00 GMT`;
const page = (text: string, cls: string) =>
  `<!doctype html><html><head><title>${text}</title><link rel="stylesheet" href="/style.css"></head><body><h1 class="${cls}">${text}</h1></body></html>`;

/** The frame ReplayWeb.page shows the replayed page in (inside its shadow DOM), once it shows `url`'s memento. */
async function replayFrame(p: Page, url: string): Promise<Frame> {
  for (;;) {
    const f = p.frames().find((x) => x.url().includes('mp_/' + url));
    if (f) return f;
    await p.waitForFrame((x) => x.url().includes('mp_/' + url), { timeout: 60_000 });
  }
}

t.test('ReplayWeb.page replays the package: the captured text and colour at each time, a revisit too', async (t) => {
  const c = writeConfig();
  t.teardown(() => rm(c.dir, { recursive: true, force: true }));
  const a = await startArchive(TWO_ARCHIVES, { dataDir: c.dataDir });
  const css = (colour: string, d: number) =>
    captureRecord({
      target: '/style.css',
      date: day(d),
      responseHeaders: [['Content-Type', 'text/css']],
      body: `h1.big { color: ${colour}; font-size: 48px }`,
    });
  for (const rec of [
    captureRecord({ target: '/', date: day(20), body: page('First words', 'big') }),
    css('rgb(0, 128, 0)', 20),
    captureRecord({ target: '/', date: day(21), body: page('Second words', 'big') }),
    css('rgb(0, 0, 255)', 21),
    captureRecord({ target: '/', date: day(22), body: page('Second words', 'big') }), // the same a day later: a revisit
  ])
    t.equal((await putCapture(a, '', rec)).status, 201);
  await a.close(true);

  const site = await mkdtemp(path.join(os.tmpdir(), 'wacz-replay-'));
  t.teardown(() => rm(site, { recursive: true, force: true }));
  const r = await runCli(['wacz', '--config', c.config, '-o', path.join(site, 'site.wacz')]);
  t.equal(r.code, 0, r.stderr);
  await mkdir(path.join(site, 'replay'));
  await copyFile(path.join(repo, 'node_modules/replaywebpage/ui.js'), path.join(site, 'ui.js'));
  await copyFile(path.join(repo, 'node_modules/replaywebpage/sw.js'), path.join(site, 'replay', 'sw.js'));
  const embed = (ts: string) =>
    `<!doctype html><html><head><script src="/ui.js"></script></head><body style="margin:0">` +
    `<replay-web-page source="/site.wacz" url="http://www.example.org/" ts="${ts}" embed="replayonly" style="display:block;height:700px"></replay-web-page></body></html>`;
  for (const ts of ['20010320203500', '20010322203500']) await writeFile(path.join(site, `${ts}.html`), embed(ts));

  const files = serveStatic(site, { acceptRanges: true });
  const server = http.createServer((req, res) => files(req, res, () => ((res.statusCode = 404), res.end('not found'))));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;

  const browser = await launchBrowser(['--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1']);
  t.teardown(() => browser.close());
  for (const [ts, text, colour, what] of [
    ['20010320203500', 'First words', 'rgb(0, 128, 0)', 'the first capture'],
    ['20010322203500', 'Second words', 'rgb(0, 0, 255)', 'the revisit, with its original’s body'],
  ]) {
    // Opened again once if ReplayWeb.page shows nothing within a minute, as a reader would reload: on a loaded machine its
    // service worker's first start can stall the page (seen once in a CI run whose other browser tests ran at the same time).
    let p: Page | undefined;
    let frame: Frame | undefined;
    for (let attempt = 1; !frame; attempt++) {
      p = await browser.newPage();
      try {
        await p.goto(`${origin}/${ts}.html`, { waitUntil: 'load' });
        const f = await replayFrame(p, 'http://www.example.org/');
        await f.waitForFunction((want: string) => document.querySelector('h1')?.textContent === want, { timeout: 60_000 }, text);
        await f.waitForFunction((want: string) => getComputedStyle(document.querySelector('h1')!).color === want, { timeout: 60_000 }, colour);
        frame = f;
      } catch (err) {
        await p.screenshot({ path: path.join(SCREENSHOT_DIR, `wacz-replay-${ts}-attempt-${attempt}.png`) }).catch(() => undefined);
        await p.close();
        if (attempt >= 2 || (err as Error).name !== 'TimeoutError') throw err;
        t.comment(`${what}: nothing shown within a minute, opened again`);
      }
    }
    t.equal(await frame.evaluate(() => document.querySelector('h1')!.textContent), text, `${what}: the captured text`);
    t.equal(await frame.evaluate(() => getComputedStyle(document.querySelector('h1')!).color), colour, `${what}: the stylesheet captured then`);
    await p!.screenshot({ path: path.join(SCREENSHOT_DIR, `wacz-replay-${ts}.png`) });
    await p!.close();
  }
});
