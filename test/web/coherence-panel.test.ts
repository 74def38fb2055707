/**
 * The banner's "About this capture" panel (archive/web/coherence.ts): the
 * replayed page's embedded resources, each with the capture the replay
 * shows at the reader's time, how far it is from the page's
 * Memento-Datetime, and marks (captured after the page, changed in
 * between, not archived); a one-line summary; a hidden resource reads as
 * one never captured; nothing of the stored page is put in as markup;
 * bounded to the first 100 resources.
 */
import t from 'tap';
import { panelSummary, type PanelEntry } from '../../archive/web/coherence.js';
import { captureRecord, putCapture, request, startArchive, TWO_ARCHIVES } from '../helpers/archive.js';

const SITE = 'http://www.example.org';
const PAGE = `${SITE}/page.html`;
const HTML = { accept: 'text/html' };
/** The page's Memento-Datetime, 10 June 2025 12:00 UTC. */
const D0 = 'Tue, 10 Jun 2025 12:00:00 GMT';

const PAGE_HTML = `<!DOCTYPE html><html><head><title>PWNED</title>
<link rel="stylesheet" href="/style.css"><link rel="next" href="/next.html">
<style>@import "/more.css"; body { background: url('/body.png') }</style>
<script>alert('pwned')</script>
</head><body>
<img src="/logo.png" srcset="/logo2x.png 2x">
<script src="/app.js"></script>
<div style="background:url(/bg.png)">x</div>
<img src="/never.png"><img src="/hidden.png">
<img src="/q.png?a=1&amp;b=<i>x</i>"><img src="/dated.png">
<a href="/link.html">a link, not embedded</a>
</body></html>`;

const a = await startArchive(`${TWO_ARCHIVES}access:
  - url: ${SITE}/hidden.png
    action: exclude
  - url: ${SITE}/dated.png
    action: exclude
    before: 2025-06-11
`);
t.teardown(() => a.close());

async function put(path: string, date: string, body: string, type: string): Promise<void> {
  const r = await putCapture(a, SITE + path, captureRecord({ host: 'www.example.org', target: path, date, body, responseHeaders: [['Content-Type', type]] }));
  if (r.status !== 201) throw new Error(`PUT ${path}: ${r.status} ${r.text}`);
}
await put('/page.html', D0, PAGE_HTML, 'text/html; charset=utf-8');
await put('/style.css', 'Fri, 13 Jun 2025 12:00:00 GMT', 'body { color: red }', 'text/css');
await put('/logo.png', 'Tue, 10 Jun 2025 10:00:00 GMT', 'PNG', 'image/png');
await put('/app.js', 'Sat, 31 May 2025 12:00:00 GMT', 'var v = 1;', 'text/javascript');
await put('/app.js', 'Sun, 08 Jun 2025 12:00:00 GMT', 'var v = 2;', 'text/javascript');
await put('/bg.png', D0, 'PNG', 'image/png');
await put('/hidden.png', D0, 'PNG', 'image/png');
await put('/dated.png', D0, 'PNG', 'image/png');
await put('/dated.png', 'Sun, 15 Jun 2025 12:00:00 GMT', 'PNG 2', 'image/png');
await put('/big.html', D0, `<html><body>${Array.from({ length: 150 }, (_, i) => `<img src="/i${i}.png">`).join('')}</body></html>`, 'text/html');
await put('/photo.png', D0, 'PNG', 'image/png');

/** The rows of the panel's table: class, and each cell's text (tags removed). */
function rows(html: string): { cls: string; cells: string[]; raw: string }[] {
  const table = /<table class="list resources">([\s\S]*?)<\/table>/.exec(html)?.[1] ?? '';
  return [...table.matchAll(/<tr class="([^"]*)">([\s\S]*?)<\/tr>/g)].map((m) => ({
    cls: m[1],
    raw: m[2],
    cells: [...m[2].matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((c) =>
      c[1]
        .replace(/<[^>]+>/g, '')
        .replace(/\s+/g, ' ')
        .trim(),
    ),
  }));
}

t.test('the panel at the reader’s time: each resource’s capture, its distance from the page, the marks, the summary', async (t) => {
  // 1 June: the page's only capture is 10 June; its resources as captured nearest to 1 June.
  const res = await request(`${a.url}/web/20250601120000/${PAGE}`, { headers: HTML });
  t.equal(res.status, 200);
  t.match(res.text, /<details class="coherence" id="coherence">/, 'a <details> element: it works without the script');
  const summary = /<span class="summary">([^<]*)<\/span>/.exec(res.text)?.[1];
  t.equal(
    summary,
    '11 resources: 2 within a day of the page, 1 captured 10 days before, 2 captured up to 5 days after, 6 not archived; 1 changed between its capture and the page’s',
  );
  const r = rows(res.text);
  t.same(
    r.map((x) => [x.cells[0], x.cells[1]]),
    [
      [`${SITE}/style.css`, 'stylesheet'],
      [`${SITE}/more.css`, 'style'],
      [`${SITE}/body.png`, 'style'],
      [`${SITE}/logo.png`, 'img'],
      [`${SITE}/logo2x.png`, 'img'],
      [`${SITE}/app.js`, 'script'],
      [`${SITE}/bg.png`, 'style'],
      [`${SITE}/never.png`, 'img'],
      [`${SITE}/hidden.png`, 'img'],
      [`${SITE}/q.png?a=1&amp;b=%3Ci%3Ex%3C/i%3E`, 'img'],
      [`${SITE}/dated.png`, 'img'],
    ],
    'every embedded resource, in page order, links and inline scripts left out',
  );
  const byUrl = new Map(r.map((x) => [x.cells[0], x]));
  const style = byUrl.get(`${SITE}/style.css`)!;
  t.equal(style.cells[2], '2025-06-13 12:00');
  t.equal(style.cells[3], '3 days after captured after the page');
  t.match(style.raw, `href="${a.url}/web/20250613120000/${SITE}/style.css"`, 'a link to the capture shown');
  const app = byUrl.get(`${SITE}/app.js`)!;
  t.equal(app.cells[2], '2025-05-31 12:00', 'the capture nearest to 1 June');
  t.equal(app.cells[3], '10 days before changed in between', 'another payload was captured on 8 June');
  t.equal(byUrl.get(`${SITE}/logo.png`)!.cells[3], '2 hours before');
  t.equal(byUrl.get(`${SITE}/bg.png`)!.cells[3], 'same second');
  const never = byUrl.get(`${SITE}/never.png`)!;
  const hidden = byUrl.get(`${SITE}/hidden.png`)!;
  t.same(never.cells.slice(1), ['img', 'not archived', ''], 'never captured: not archived');
  t.same(hidden.cells.slice(1), never.cells.slice(1), 'an excluded resource reads as one never captured');
  t.equal(hidden.raw.replaceAll('hidden', 'never'), never.raw, 'the same markup');
  t.equal(hidden.cls, 'missing');
  const dated = byUrl.get(`${SITE}/dated.png`)!;
  t.same(dated.cells.slice(2), ['2025-06-15 12:00', '5 days after captured after the page'], 'a capture the rules hide is passed over for a shown one');

  // At the page's own time, app.js is the 8 June capture: nothing changed in between.
  const own = await request(`${a.url}/web/20250610120000/${PAGE}`, { headers: HTML });
  const app2 = rows(own.text).find((x) => x.cells[0] === `${SITE}/app.js`)!;
  t.same(app2.cells.slice(2), ['2025-06-08 12:00', '2 days before']);
});

t.test('a hostile page: nothing of it is markup in the banner page', async (t) => {
  const res = await request(`${a.url}/web/20250610120000/${PAGE}`, { headers: HTML });
  t.notMatch(res.text, /alert\('pwned'\)/, 'its script is nowhere');
  t.notMatch(res.text, /<i>x<\/i>/, 'its markup is nowhere');
  t.notMatch(res.text, /PWNED/, 'nor its title');
  t.match(res.text, `title="${SITE}/q.png?a=1&amp;b=%3Ci%3Ex%3C/i%3E"`, 'a URL from the page, escaped');
  t.match(res.headers['content-security-policy'], /script-src 'nonce-/, 'the page’s own CSP');
});

t.test('bounded: the first 100 resources; no panel for a page that is not HTML', async (t) => {
  const big = await request(`${a.url}/web/20250610120000/${SITE}/big.html`, { headers: HTML });
  t.equal(big.status, 200);
  t.equal(rows(big.text).length, 100);
  t.match(big.text, /<span class="summary">100 resources \(the first found\): 100 not archived<\/span>/);
  t.match(big.text, /Only the first 100 resources/);
  const photo = await request(`${a.url}/web/20250610120000/${SITE}/photo.png`, { headers: HTML });
  t.equal(photo.status, 200);
  t.notMatch(photo.text, /class="coherence"/);
});

t.test('a page whose resources take longer to list than a page may: shown without the list, saying why; /healthz answered meanwhile', async (t) => {
  // A srcset of 690,000 image candidates (2 MB): a URL parsed for each, seconds of work in the panel's thread,
  // stopped at its deadline.
  const b = await startArchive();
  t.teardown(() => b.close());
  const body = `<img srcset="${'a ,'.repeat(690_000)}">`;
  const r = await putCapture(b, `${SITE}/slow.html`, captureRecord({ host: 'www.example.org', target: '/slow.html', date: D0, body }));
  t.equal(r.status, 201);
  const order: string[] = [];
  const page = request(`${b.url}/web/20250610120000/${SITE}/slow.html`, { headers: HTML }).then((x) => (order.push('page'), x));
  const running = () => (b.app as { work?: { panel: { running: number } } }).work?.panel.running ?? 0;
  for (const end = performance.now() + 120_000; !(running() > 0 || order.includes('page'));) {
    if (performance.now() > end) throw new Error('the panel never ran');
    await new Promise((res) => setImmediate(res));
  }
  const health = await request(`${b.url}/healthz`);
  order.push('healthz');
  const res = await page;
  t.equal(health.status, 200);
  t.same(order, ['healthz', 'page'], '/healthz answered while the page’s resources were read');
  t.equal(res.status, 200, 'the replay page is served');
  t.match(res.text, /<span class="summary">Embedded resources not listed<\/span>/);
  t.match(res.text, /The resources the page embeds are not listed: the page takes longer to read for them than one page may take\./);
  const m = (await request(`${b.url}/metrics`)).text;
  t.match(m, /^memento_archive_work_total\{pool="panel",outcome="deadline"\} 1$/m, 'stopped at its deadline');
  const again = await request(`${b.url}/web/20250610120000/${SITE}/slow.html`, { headers: HTML });
  t.match(again.text, /Embedded resources not listed/, 'shown the same way again');
  t.match((await request(`${b.url}/metrics`)).text, /^memento_archive_work_total\{pool="panel",outcome="deadline"\} 1$/m, 'without reading the page again');
});

t.test('at most 8 index statements: resources under 10 differently dated rules are listed up to the one needing a 9th', async (t) => {
  const rules = Array.from({ length: 10 }, (_, i) => `  - url: ${SITE}/r${i}.png\n    action: exclude\n    before: 2020-01-${String(i + 10)}\n`).join('');
  const b = await startArchive(`${TWO_ARCHIVES}access:\n${rules}`);
  t.teardown(() => b.close());
  const body = `<html><body><img src="/open.png">${Array.from({ length: 10 }, (_, i) => `<img src="/r${i}.png">`).join('')}</body></html>`;
  const r = await putCapture(b, `${SITE}/many.html`, captureRecord({ host: 'www.example.org', target: '/many.html', date: D0, body }));
  t.equal(r.status, 201);
  const res = await request(`${b.url}/web/20250610120000/${SITE}/many.html`, { headers: HTML });
  t.equal(res.status, 200);
  t.same(
    rows(res.text).map((x) => x.cells[0]),
    [`${SITE}/open.png`, ...Array.from({ length: 7 }, (_, i) => `${SITE}/r${i}.png`)],
    'the open resource (one statement) and the first 7 ruled ones (one each)',
  );
  t.match(res.text, /Only the first 8 resources/);
});

t.test('the summary counts every resource the rows mark "captured after the page", however soon after', async (t) => {
  const at = (delta: number | undefined, changed = false): PanelEntry => ({
    url: 'http://www.example.org/r',
    kind: 'img',
    changed,
    ...(delta === undefined ? {} : { capture: { archiveId: 'current', uriR: 'http://www.example.org/r', datetime: 1000 + delta }, delta }),
  });
  t.equal(panelSummary([at(0), at(-3600), at(7200)]), '3 resources: 2 within a day of the page, 1 captured 2 hours after');
  t.equal(panelSummary([at(60), at(3 * 86400)]), '2 resources: 2 captured up to 3 days after');
  t.equal(
    panelSummary([at(-86400), at(-2 * 86400, true), at(undefined)]),
    '3 resources: 1 within a day of the page, 1 captured 2 days before, 1 not archived; 1 changed between its capture and the page’s',
  );
});

t.test('changed in between: at most the first 100 captures in between are compared; past them the panel says "at least 101"', async (t) => {
  const b = await startArchive(`${TWO_ARCHIVES}revisit_interval: 0\n`);
  t.teardown(() => b.close());
  const putB = async (path: string, at: number, body: string, type = 'image/png') => {
    const date = new Date(at * 1000).toUTCString();
    const r = await putCapture(b, SITE + path, captureRecord({ host: 'www.example.org', target: path, date, body, responseHeaders: [['Content-Type', type]] }));
    if (r.status !== 201) throw new Error(`PUT ${path}: ${r.status} ${r.text}`);
  };
  const june1 = Date.UTC(2025, 5, 1) / 1000;
  await putB('/between.html', Date.UTC(2025, 5, 10, 12) / 1000, '<html><body><img src="/steady.png"><img src="/late.png"></body></html>', 'text/html');
  // steady.png: captured on 1 June, then 101 times more, identical, before the page's time; late.png changes once.
  for (let i = 0; i <= 101; i++) await putB('/steady.png', june1 + i * 60, 'PNG');
  await putB('/late.png', june1, 'PNG');
  await putB('/late.png', june1 + 60, 'PNG 2');
  await putB('/late.png', june1 + 120, 'PNG');
  const res = await request(`${b.url}/web/20250601000000/${SITE}/between.html`, { headers: HTML });
  t.equal(res.status, 200);
  const byUrl = new Map(rows(res.text).map((x) => [x.cells[0], x]));
  t.equal(
    byUrl.get(`${SITE}/steady.png`)?.cells[3],
    '9 days 12 hours before at least 101 captures in between; the first 100 unchanged',
    'not compared past the first 100',
  );
  t.equal(byUrl.get(`${SITE}/late.png`)?.cells[3], '9 days 12 hours before changed in between');
  t.match(
    res.text,
    /<span class="summary">2 resources: 2 captured up to 9 days 12 hours before; 1 changed between its capture and the page’s; 1 with more than 100 captures in between, not compared further<\/span>/,
  );
});
