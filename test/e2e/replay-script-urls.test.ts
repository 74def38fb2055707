/**
 * Pages whose scripts build URLs, replayed in Chromium: a stored page whose
 * list comes from `fetch('/api/items.json')` (with credentials, as an API
 * call of a single-page site often is), whose pictures are made by
 * script (`img.src = '/img/' + id + '.png'`, `setAttribute('src', …)`,
 * an absolute URL of the site, a `srcset`, `new URL(path, location.href)`), which asks for a text with
 * `XMLHttpRequest` (`withCredentials`) and moves on with `history.pushState`. The replay shim
 * (archive/replay/static/replay.js) maps each of those URLs into the
 * archive at the page's time; a root-relative request that still reaches
 * the archive is sent there through its `Referer` (archive/http/fallback.ts).
 *
 * The site's server only counts: the captures are PUT into the archive,
 * and the site gets no request during the replay. Every request the
 * browser makes is counted by how it ended: answered from the archive
 * (2xx from the archive's origin), refused (by the Content-Security-Policy
 * or elsewhere), or other (a 404); the share answered is printed.
 */
import http from 'node:http';
import type { HTTPRequest } from 'puppeteer-core';
import { PNG } from 'pngjs';
import t from 'tap';
import { ts14 } from '../conformance/helpers.js';
import { captureRecord, putCapture, startArchive } from '../helpers/archive.js';
import { launchBrowser } from '../helpers/browser.js';

const PAGE_DATE = 'Tue, 20 Mar 2001 20:35:00 GMT';
/** The list and pictures were captured a few seconds after the page: the archive redirects to them. */
const LATER = 'Tue, 20 Mar 2001 20:35:04 GMT';

/** A small opaque PNG of one colour. */
function png(width: number, height: number, rgb: [number, number, number]): Buffer {
  const p = new PNG({ width, height });
  for (let i = 0; i < width * height; i++) p.data.set([...rgb, 255], i * 4);
  return PNG.sync.write(p);
}

t.test('a page that builds its URLs in script replays from the archive alone: fetch, XHR, script-made images, pushState', async (t) => {
  const siteHits: string[] = [];
  const site = http.createServer((req, res) => {
    siteHits.push(req.url ?? '');
    res.statusCode = 503;
    res.end('the live site is not to be asked');
  });
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => site.close(() => resolve())));
  const live = `http://127.0.0.1:${(site.address() as { port: number }).port}`;
  const host = new URL(live).host;

  const a = await startArchive();
  t.teardown(() => a.close());
  const page = `<!DOCTYPE html><html><head><meta charset="utf-8"><title>items</title></head><body>
<ul id="list"></ul><p id="about"></p><img id="logo" alt="logo">
<script>
var SITE = ${JSON.stringify(live)};
var pending = 0;
function started() { pending++; }
function ended() { if (--pending === 0) document.title = 'done'; }
function picture(img) {
  started();
  img.onload = img.onerror = ended;
}
started();
fetch('/api/items.json', { credentials: 'include' })
  .then(function (r) { return r.json(); })
  .then(function (items) {
    var list = document.getElementById('list');
    items.forEach(function (it, i) {
      var li = document.createElement('li');
      li.textContent = it.name;
      var img = document.createElement('img');
      picture(img);
      if (i === 0) img.src = '/img/' + it.id + '.png';
      else img.setAttribute('src', '/img/' + it.id + '.png');
      li.appendChild(img);
      list.appendChild(li);
    });
  })
  .catch(function (e) { document.getElementById('list').textContent = 'failed: ' + e; })
  .then(ended);
var logo = document.getElementById('logo');
picture(logo);
logo.src = SITE + '/img/logo.png';
var wide = new Image();
picture(wide);
wide.srcset = '/img/1.png 1x, /img/2.png 2x';
document.body.appendChild(wide);
var built = new Image();
picture(built);
built.src = new URL('/img/3.png', location.href).href;
document.body.appendChild(built);
started();
var x = new XMLHttpRequest();
x.open('GET', 'about.txt');
x.withCredentials = true;
x.onload = function () { document.getElementById('about').textContent = x.status + ' ' + x.responseText; ended(); };
x.onerror = function () { document.getElementById('about').textContent = 'failed'; ended(); };
x.send();
try { history.pushState({ view: 'all' }, '', '/app/?view=all'); } catch (e) { document.body.setAttribute('data-push', e.name); }
</script></body></html>`;
  const captures: [string, string, string, Buffer | string][] = [
    ['/app/', PAGE_DATE, 'text/html; charset=utf-8', page],
    [
      '/api/items.json',
      LATER,
      'application/json',
      JSON.stringify([
        { id: 1, name: 'first' },
        { id: 2, name: 'second' },
      ]),
    ],
    ['/app/about.txt', LATER, 'text/plain', 'about the items'],
    ['/img/1.png', LATER, 'image/png', png(4, 3, [200, 0, 0])],
    ['/img/2.png', LATER, 'image/png', png(5, 3, [0, 200, 0])],
    ['/img/logo.png', LATER, 'image/png', png(6, 3, [0, 0, 200])],
    ['/img/3.png', LATER, 'image/png', png(7, 3, [200, 200, 0])],
  ];
  for (const [target, date, type, body] of captures) {
    const put = await putCapture(a, `${live}${target}`, captureRecord({ host, target, date, responseHeaders: [['Content-Type', type]], body }));
    t.equal(put.status, 201, `captured ${target}`);
  }

  const browser = await launchBrowser();
  t.teardown(() => browser.close());
  const tab = await browser.newPage();
  const archiveOrigin = new URL(a.url).origin;
  // Every request, by the first URL of its redirect chain, with how it ended.
  const ended = new Map<string, string>();
  const outcome = (req: HTTPRequest, how: string) => {
    const first = req.redirectChain()[0] ?? req;
    // Not the page's request: the browser's own for its tab icon.
    if (!/^https?:/.test(first.url()) || new URL(first.url()).pathname === '/favicon.ico') return;
    ended.set(`${first.method()} ${first.url()}`, how);
  };
  tab.on('requestfinished', (req) => {
    const res = req.response();
    const fromArchive = new URL(req.url()).origin === archiveOrigin && res !== null && res.status() >= 200 && res.status() < 300;
    outcome(req, fromArchive ? 'archive' : `other ${res?.status()} ${req.url()}`);
  });
  tab.on('requestfailed', (req) => outcome(req, `refused ${req.failure()?.errorText} ${req.url()}`));
  const refused: string[] = [];
  tab.on('console', (m) => {
    if (/Content Security Policy/.test(m.text())) refused.push(m.text().slice(0, 300));
  });

  const ts = ts14(PAGE_DATE);
  const uriM = `${a.url}/2025/memento/${ts}/${live}/app/`;
  const res = await tab.goto(uriM, { waitUntil: 'load' });
  t.equal(res?.status(), 200, 'the memento of the page');
  await tab.waitForFunction(() => document.title === 'done');
  const seen = await tab.evaluate(() => ({
    items: Array.from(document.querySelectorAll('#list li'), (li) => li.textContent),
    widths: Array.from(document.querySelectorAll('img'), (img) => [img.getAttribute('src') ?? img.getAttribute('srcset'), img.naturalWidth] as const),
    about: document.getElementById('about')!.textContent,
    href: location.href,
    push: document.body.getAttribute('data-push'),
  }));
  // Nothing is left in flight (the page loaded, every picture and the XHR ended).
  await tab.waitForNetworkIdle({ idleTime: 100 });

  // Refusals that puppeteer did not see as requests count as requests too.
  const refusedOnly = refused.filter((m) => ![...ended.keys()].some((k) => m.includes(k.slice(k.indexOf(' ') + 1))));
  const total = ended.size + refusedOnly.length;
  const answered = [...ended.values()].filter((v) => v === 'archive').length;
  const share = (100 * answered) / total;
  const notAnswered = [...ended.values()].filter((v) => v !== 'archive').concat(refusedOnly.map((m) => `refused (console) ${m}`));
  t.comment(`requests answered from the archive: ${answered} of ${total} (${share.toFixed(1)} %)`);
  if (notAnswered.length) t.comment(`not answered from the archive:\n${notAnswered.join('\n')}`);

  t.same(seen.items, ['first', 'second'], 'the list loaded with fetch() is on the page');
  t.same(
    seen.widths.map(([, w]) => w),
    [4, 5, 6, 4, 7],
    'every script-made picture came from the archive (1.png 4 px, 2.png 5 px, logo 6 px, the srcset 1x candidate 4 px, 3.png 7 px)',
  );
  t.equal(seen.about, '200 about the items', 'the XMLHttpRequest was answered from the archive');
  t.equal(seen.push, null, 'pushState did not throw');
  t.equal(seen.href, `${a.url}/2025/memento/${ts}/${live}/app/?view=all`, 'pushState moved the address within the archive, at the page time');
  const memento = new RegExp(`^${a.url}/(2025|current)/memento/\\d{14}/${live}/`);
  t.same(
    [...ended.keys()].filter((k) => !memento.test(k.slice(k.indexOf(' ') + 1)) && !k.endsWith('/_static/replay.js')),
    [],
    'every request named a Memento from the start (the shim mapped it; no root-relative request needed the fallback)',
  );
  t.same(siteHits, [], 'the live site got no request');
  t.same(refused, [], 'the policy refused nothing (every URL was mapped into the archive)');
  t.ok(total >= 8, `${total} requests counted`);
  t.equal(share, 100, 'every request was answered from the archive');
});

t.test('the mapping rules, read back from a replayed page with a base element: what is mapped, against what, and what is left alone', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const live = 'http://site.example:8080';
  const uriR = `${live}/app/page.html?x=1`;
  const inputs = [
    '/api/items.json',
    'img/1.png',
    '../up.png?a=1#frag',
    '//cdn.example/lib.js',
    'https://other.example/x',
    '#top',
    '',
    'data:image/png;base64,AAAA',
    'blob:null/123',
    'javascript:void(0)',
    'mailto:someone@example.org',
  ];
  const page = `<!DOCTYPE html><html><head><base href="/deep/dir/"><title>rules</title></head><body><script>
var inputs = ${JSON.stringify(inputs)};
var out = inputs.map(function (u) { var el = document.createElement('a'); el.href = u; return el.getAttribute('href'); });
var viaAttr = document.createElement('img'); viaAttr.setAttribute('SRC', '/by/attribute.png');
out.push(viaAttr.getAttribute('src'));
var set = document.createElement('img'); set.srcset = '/s1.png 1x,/s2.png 2x, data:x 3x';
out.push(set.getAttribute('srcset'));
var archived = document.createElement('a'); archived.href = document.baseURI + 'kept.html';
out.push(archived.getAttribute('href') === document.baseURI + 'kept.html');
var fromLocation = document.createElement('a'); fromLocation.href = new URL('/from/location', location.href).href;
out.push(fromLocation.getAttribute('href'));
history.replaceState(null, '', 'moved.html');
out.push(location.href);
document.title = JSON.stringify(out);
</script></body></html>`;
  const put = await putCapture(a, uriR, captureRecord({ host: 'site.example:8080', target: '/app/page.html?x=1', date: PAGE_DATE, body: page }));
  t.equal(put.status, 201);
  const browser = await launchBrowser();
  t.teardown(() => browser.close());
  const tab = await browser.newPage();
  // Nothing the page names is loaded: only the page and the script are asked for.
  await tab.setRequestInterception(true);
  tab.on('request', (req) => void (req.url().startsWith(a.url) ? req.continue() : req.abort('blockedbyclient')));
  const ts = ts14(PAGE_DATE);
  await tab.goto(`${a.url}/2025/memento/${ts}/${uriR}`, { waitUntil: 'load' });
  await tab.waitForFunction(() => document.title.startsWith('['));
  const out = JSON.parse(await tab.title()) as unknown[];
  const m = (u: string) => `${a.url}/2025/memento/${ts}/${u}`;
  t.same(
    out.slice(0, inputs.length),
    [
      m(`${live}/api/items.json`),
      m(`${live}/deep/dir/img/1.png`),
      m(`${live}/deep/up.png?a=1#frag`),
      m('http://cdn.example/lib.js'),
      m('https://other.example/x'),
      '#top',
      '',
      'data:image/png;base64,AAAA',
      'blob:null/123',
      'javascript:void(0)',
      'mailto:someone@example.org',
    ],
    'root-relative, relative (against the base element), network-path and absolute URLs mapped; fragments, empty and other schemes left alone',
  );
  t.equal(out[inputs.length], m(`${live}/by/attribute.png`), 'setAttribute, whatever the case of the name');
  t.equal(out[inputs.length + 1], `${m(`${live}/s1.png`)} 1x,${m(`${live}/s2.png`)} 2x, data:x 3x`, 'each srcset candidate, descriptors kept');
  t.equal(out[inputs.length + 2], true, 'an archive address is left alone');
  t.equal(out[inputs.length + 3], m(`${live}/from/location`), "a path resolved against the archive address is read as the site's");
  t.equal(out[inputs.length + 4], m(`${live}/deep/dir/moved.html`), 'replaceState resolves against the base element, within the archive');
});
