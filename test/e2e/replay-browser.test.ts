/**
 * Archival replay as a person sees it, in a real browser (issue 12, point
 * 5): Chromium visits 24 pages of the Apache manual (Debian's apache2-doc)
 * and the 3 pages of the sample site through the capture proxy and
 * screenshots them. Then every stylesheet and two images of the site
 * change, the content server stops, and Chromium opens each page's memento
 * through the redirector (`/tg/<URL>`). For every page:
 *
 * (a) no request leaves the archive's origin (puppeteer sees every request
 *     the page makes, and Chromium reports every fetch its
 *     Content-Security-Policy refused: both must be none);
 * (b) the memento's screenshot matches the live one (pixelmatch; the
 *     percentage of differing pixels per page is printed and kept in
 *     `test-output/screenshots/replay.json`);
 * (c) the links in the memento lead to mementos of the same time: each
 *     is an archive address at the page's own datetime, and following
 *     one to another visited page lands on that page's memento, captured
 *     in the same visit.
 *
 * Screenshots (live, memento, difference) are in test-output/screenshots/.
 */
import { appendFile, cp, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Browser, BrowserContext, HTTPRequest, Page } from 'puppeteer-core';
import t from 'tap';
import { startStaticServer } from '../../bin/sample-site.js';
import { comparePng, launchBrowser, SCREENSHOT_DIR } from '../helpers/browser.js';
import { type Daemon, repo, startDaemon } from '../helpers/daemons.js';
import { apacheManual } from '../helpers/real-site.js';

/** The manual pages visited (paths under /manual/en/). */
const MANUAL_PAGES = [
  'index.html',
  'install.html',
  'invoking.html',
  'stopping.html',
  'configuring.html',
  'sections.html',
  'caching.html',
  'server-wide.html',
  'logs.html',
  'urlmapping.html',
  'vhosts/index.html',
  'howto/index.html',
  'howto/htaccess.html',
  'howto/cgi.html',
  'howto/ssi.html',
  'mod/index.html',
  'mod/mod_alias.html',
  'mod/mod_rewrite.html',
  'misc/index.html',
  'ssl/index.html',
  'rewrite/index.html',
  'glossary.html',
  'programs/index.html',
  'bind.html',
].map((p) => `/manual/en/${p}`);
const SAMPLE_PAGES = ['/', '/news.html', '/about/'];

/** The window, and the screenshot: the first 1024×1600 CSS pixels of the page. */
const CLIP = { x: 0, y: 0, width: 1024, height: 1600 };

/** What a page looked like live. */
interface LivePage {
  path: string;
  url: string;
  title: string;
  shot: Buffer;
}

/** What the replay of a page did. */
interface Replayed {
  path: string;
  percent: number;
  outside: string[];
  refused: string[];
  badLinks: string[];
  followed?: string;
}

const name = (p: string) =>
  p
    .replace(/^\//, '')
    .replace(/\/$/, '/index')
    .replace(/[^\w.-]+/g, '_') || 'index';

async function screenshot(page: Page): Promise<Buffer> {
  await page.evaluate(() => document.fonts.ready.then(() => undefined));
  return Buffer.from(await page.screenshot({ clip: CLIP }));
}

/** A fresh browser context whose requests outside 127.0.0.1 are refused and counted (nothing leaves the machine). */
async function contextWithGuard(browser: Browser, allowed: (url: URL) => boolean): Promise<{ ctx: BrowserContext; newPage: () => Promise<Page> }> {
  const ctx = await browser.createBrowserContext();
  return {
    ctx,
    newPage: async () => {
      const page = await ctx.newPage();
      await page.setViewport({ width: CLIP.width, height: CLIP.height });
      await page.setRequestInterception(true);
      page.on('request', (req: HTTPRequest) => {
        const u = new URL(req.url());
        if (u.protocol === 'data:' || u.protocol === 'blob:' || allowed(u)) void req.continue();
        else void req.abort('blockedbyclient');
      });
      return page;
    },
  };
}

/** Polls the redirector until it knows `url` (the proxy uploads a capture after its client got the answer). */
async function waitForMemento(archive: string, url: string, deadline: number): Promise<void> {
  for (;;) {
    const res = await fetch(`${archive}/tg/${url}`, { method: 'HEAD', redirect: 'manual' });
    if (res.status === 302) return;
    if (Date.now() > deadline) throw new Error(`no memento of ${url} in the archive (redirector ${res.status})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

t.test('issue 12 point 5: mementos of the Apache manual and the sample site in Chromium, content server stopped, stylesheets changed', async (t) => {
  const manual = apacheManual();
  const work = await mkdtemp(path.join(os.tmpdir(), 'e2e-replay-'));
  t.teardown(() => rm(work, { recursive: true, force: true }));
  await mkdir(SCREENSHOT_DIR, { recursive: true });

  // The content: the sample site at /, the manual under /manual/.
  const root = path.join(work, 'site');
  await cp(path.join(repo, 'conf', 'sample-site'), root, { recursive: true });
  for (const d of ['en', 'images', 'style']) await cp(path.join(manual, d), path.join(root, 'manual', d), { recursive: true });
  const site = await startStaticServer(root);
  let siteUp = true;
  t.teardown(() => (siteUp ? site.close() : undefined));

  await writeFile(path.join(work, 'archive.yaml'), `listen: 127.0.0.1:0\ndata_dir: data\narchives:\n  - id: manual\n`);
  const archive: Daemon = await startDaemon('memento-archive.js', ['serve', '--config', path.join(work, 'archive.yaml'), '--quiet']);
  t.teardown(() => archive.stop());
  const archivePort = new URL(archive.url).port;
  await mkdir(path.join(work, 'vhosts'));
  await writeFile(path.join(work, 'proxy.yaml'), `listen: 127.0.0.1:0\nvhosts: vhosts/\nspool: spool\n`);
  await writeFile(
    path.join(work, 'vhosts', 'site.yaml'),
    `server_name: 127.0.0.1\nupstream: ${site.url}\nEnableArchiving: On\nArchiveHost: 127.0.0.1\nArchivePort: ${archivePort}\nArchivePath: /put/\n`,
  );
  const proxy: Daemon = await startDaemon('capture-proxy.js', ['--config', path.join(work, 'proxy.yaml')]);
  t.teardown(() => proxy.stop());

  const browser = await launchBrowser();
  t.teardown(() => browser.close());
  const local = (u: URL) => u.hostname === '127.0.0.1';

  // 1. Live, through the proxy: every page screenshot, every URL it loaded captured.
  const live: LivePage[] = [];
  const loaded = new Set<string>();
  const visitStart = Math.floor(Date.now() / 1000);
  const liveCtx = await contextWithGuard(browser, local);
  const livePage = await liveCtx.newPage();
  livePage.on('response', (res) => {
    if (res.url().startsWith(proxy.url) && res.status() < 400) loaded.add(res.url());
  });
  for (const p of [...MANUAL_PAGES, ...SAMPLE_PAGES]) {
    const url = `${proxy.url}${p}`;
    // The manual and the sample site load everything from their markup: "load" is when all of it is in.
    const res = await livePage.goto(url, { waitUntil: 'load' });
    t.equal(res?.status(), 200, `live ${p}`);
    const shot = await screenshot(livePage);
    await writeFile(path.join(SCREENSHOT_DIR, `${name(p)}.live.png`), shot);
    live.push({ path: p, url, title: await livePage.title(), shot });
  }
  await liveCtx.ctx.close();
  const visitEnd = Math.ceil(Date.now() / 1000);
  const deadline = Date.now() + 60_000;
  for (const url of loaded) await waitForMemento(archive.url, url, deadline);
  t.ok(loaded.size > live.length, `${loaded.size} URLs captured (pages, stylesheets, scripts, images)`);

  // 2. The site changes (every stylesheet, two images), then goes away.
  const stylesheets = [
    path.join(root, 'style.css'),
    ...(await readdir(path.join(root, 'manual/style/css'))).map((f) => path.join(root, 'manual/style/css', f)),
  ];
  for (const css of stylesheets.filter((f) => f.endsWith('.css')))
    await appendFile(css, '\nbody { background: #ff00cc !important; color: #00ff00 !important; font-family: monospace !important; }\n');
  await writeFile(
    path.join(root, 'logo.svg'),
    '<svg xmlns="http://www.w3.org/2000/svg" width="48" height="48"><rect width="48" height="48" fill="#f0c"/></svg>',
  );
  await cp(path.join(root, 'manual/images/left.gif'), path.join(root, 'manual/images/feather.png'));
  await site.close();
  siteUp = false;

  // 3. Each page's memento through the redirector.
  const archiveOrigin = new URL(archive.url).origin;
  const titles = new Map(live.map((l) => [l.url, l.title]));
  const results: Replayed[] = [];
  const outside: string[] = [];
  const replayCtx = await contextWithGuard(browser, (u) => {
    if (u.origin === archiveOrigin) return true;
    outside.push(u.href);
    return false;
  });
  const page = await replayCtx.newPage();
  const refused: string[] = [];
  page.on('console', (m) => {
    if (/Content Security Policy/.test(m.text())) refused.push(m.text().slice(0, 200));
  });
  for (const l of live) {
    outside.length = 0;
    refused.length = 0;
    const res = await page.goto(`${archive.url}/tg/${l.url}`, { waitUntil: 'networkidle0' });
    t.equal(res?.status(), 200, `memento of ${l.path}`);
    const uriM = page.url();
    const ts = /\/manual\/memento\/(\d{14})\//.exec(uriM)?.[1];
    t.ok(ts, `${l.path}: the redirector led to a URI-M (${uriM})`);
    const shot = await screenshot(page);
    await writeFile(path.join(SCREENSHOT_DIR, `${name(l.path)}.memento.png`), shot);
    const diff = comparePng(l.shot, shot, path.join(SCREENSHOT_DIR, `${name(l.path)}.diff.png`));
    // (c) every http(s) link is an archive address at the page's own datetime.
    const hrefs = await page.$$eval('a[href], area[href]', (as) => as.map((a) => (a as HTMLAnchorElement).href));
    const prefix = `${archive.url}/manual/memento/${ts}/`;
    const badLinks = hrefs.filter((h) => /^https?:/.test(h) && !h.startsWith(prefix));
    results.push({ path: l.path, percent: diff.percent, outside: [...outside], refused: [...refused], badLinks });
  }

  const report = results.map((r) => `${r.percent.toFixed(3).padStart(7)} %  ${r.path}`).join('\n');
  t.comment(`pixels differing, memento vs live (content server stopped, stylesheets changed):\n${report}`);
  await writeFile(path.join(SCREENSHOT_DIR, 'replay.json'), JSON.stringify(results, null, 2));
  const manualResults = results.filter((r) => r.path.startsWith('/manual/'));
  const sorted = manualResults.map((r) => r.percent).sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)];
  t.ok(manualResults.length >= 20, `${manualResults.length} manual pages`);
  t.ok(median <= 1, `median difference on the manual ${median.toFixed(3)} % (≤ 1 %)`);
  for (const r of results) {
    t.ok(r.percent <= 5, `${r.path}: ${r.percent.toFixed(3)} % of pixels differ (≤ 5 %)`);
    t.same(r.outside, [], `${r.path}: (a) no request outside the archive's origin`);
    t.same(r.refused, [], `${r.path}: (a) no fetch refused by the policy (the rewriter saw every URL)`);
    t.same(r.badLinks, [], `${r.path}: (c) every link is an archive address at the page's datetime`);
  }
  // (c) following a link lands on the memento of that page from the same visit.
  const uriROf = (uriM: string) => uriM.replace(/^.*?\/manual\/memento\/\d{14}\//, '').replace(/#.*$/, '');
  const followed = new Set<string>();
  for (const r of results.filter((_, i) => i % 3 === 0)) {
    await page.goto(`${archive.url}/tg/${proxy.url}${r.path}`, { waitUntil: 'networkidle0' });
    const targets = await page.$$eval('a[href]', (as) => as.map((a) => (a as HTMLAnchorElement).href));
    // A link to another visited page, one not followed yet if there is one.
    const visited = targets.filter((h) => titles.has(uriROf(h)) && uriROf(h) !== `${proxy.url}${r.path}`);
    const next = visited.find((h) => !followed.has(uriROf(h))) ?? visited[0];
    if (!next) continue;
    followed.add(uriROf(next));
    const res = await page.goto(next, { waitUntil: 'networkidle0' }).catch((err: Error) => {
      t.fail(`${r.path} → ${next}: ${err.message}`);
      return null;
    });
    if (!res) continue;
    const uriR = uriROf(next);
    const at = Date.parse(res.headers()['memento-datetime'] ?? '') / 1000;
    t.equal(res.status(), 200, `${r.path} → ${uriR}: a memento`);
    t.ok(at >= visitStart && at <= visitEnd, `${r.path} → ${uriR}: captured in the same visit (${res.headers()['memento-datetime']})`);
    t.equal(await page.title(), titles.get(uriR), `${r.path} → ${uriR}: the page it names`);
    r.followed = uriR;
  }

  await replayCtx.ctx.close();
  t.ok(results.filter((r) => r.followed).length >= 5, 'links followed from at least 5 pages');
});
