/**
 * What the replay's sandbox and fetch policy do to a stored page, in
 * Chromium: a URL a script builds (which the rewriter cannot see) is
 * mapped into the archive by the replay shim, and one the shim does not
 * see either (a CSS `url()` set from script) fails instead of reaching the
 * live site; storage and cookies work in memory;
 * the page's clock is its Memento-Datetime; the page cannot read the
 * archive's cookies. The "live site" here is a trap server on 127.0.0.1
 * that counts every request it gets.
 */
import http from 'node:http';
import t from 'tap';
import { ts14 } from '../conformance/helpers.js';
import { captureRecord, putCapture, startArchive } from '../helpers/archive.js';
import { launchBrowser } from '../helpers/browser.js';

const DATE = 'Tue, 20 Mar 2001 20:35:00 GMT';

t.test('a replayed page: script-built URLs go to the archive or are refused, never live; storage, cookies and clock as at capture', async (t) => {
  const hits: string[] = [];
  const trap = http.createServer((req, res) => {
    hits.push(req.url ?? '');
    res.end('live');
  });
  await new Promise<void>((resolve) => trap.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => trap.close(() => resolve())));
  const live = `http://127.0.0.1:${(trap.address() as { port: number }).port}`;

  const a = await startArchive();
  t.teardown(() => a.close());
  const uriR = `${live}/app.html`;
  const page = `<!DOCTYPE html><html><head><title>app</title></head><body><p id="out">…</p><script>
var host = ${JSON.stringify(live)};
var out = [];
try { localStorage.setItem('k', 'stored'); out.push(localStorage.getItem('k')); } catch (e) { out.push('storage:' + e.name); }
try { sessionStorage.setItem('s', '1'); out.push(sessionStorage.length); } catch (e) { out.push('session:' + e.name); }
try { document.cookie = 'c=1'; out.push(document.cookie); } catch (e) { out.push('cookie:' + e.name); }
out.push(new Date().getUTCFullYear(), new Date(Date.now()).getUTCMonth() + 1, Date().indexOf('2001') >= 0, new Date(0).getTime(), new Date() instanceof Date);
var img = new Image(); img.src = host + '/built-' + 'image.png'; document.body.appendChild(img);
document.body.style.backgroundImage = 'url(' + host + '/built-background.png)';
fetch(host + '/built-fetch').then(function (r) { out.push('fetched ' + r.status + ' ' + r.url); }, function () { out.push('fetch refused'); }).then(function () {
  document.getElementById('out').textContent = out.join('|');
  document.title = 'done';
});
</script></body></html>`;
  const put = await putCapture(
    a,
    uriR,
    captureRecord({ host: new URL(live).host, target: '/app.html', date: DATE, responseHeaders: [['Content-Type', 'text/html']], body: page }),
  );
  t.equal(put.status, 201);

  const browser = await launchBrowser();
  t.teardown(() => browser.close());
  const tab = await browser.newPage();
  const refused: string[] = [];
  tab.on('console', (m) => {
    if (/Content Security Policy/.test(m.text())) refused.push(m.text());
  });
  const requested: string[] = [];
  tab.on('request', (req) => void requested.push(req.url()));
  // A cookie of the archive's own origin, which the stored page must not see.
  await tab.setCookie({ name: 'archive_session', value: 'secret', url: a.url });
  await tab.goto(`${a.url}/2025/memento/${ts14(DATE)}/${uriR}`, { waitUntil: 'networkidle0' });
  await tab.waitForFunction(() => document.title === 'done');
  const text = await tab.$eval('#out', (e) => e.textContent);
  const inArchive = (u: string) => `${a.url}/2025/memento/${ts14(DATE)}/${live}${u}`;
  t.equal(
    text,
    `stored|1|c=1|2001|3|true|0|true|fetched 404 ${inArchive('/built-fetch')}`,
    'in-memory storage and cookies, the clock at the Memento-Datetime, the fetch answered by the archive (never captured: 404)',
  );
  t.notMatch(text, /archive_session/, "the archive's cookie is not the page's");
  t.same(hits, [], 'the live site got no request');
  t.ok(requested.includes(inArchive('/built-image.png')), 'the script-built image URL was asked of the archive');
  t.ok(
    refused.some((m) => m.includes('/built-background.png')),
    'a script-built URL the shim does not map (a CSS url() set from script) was refused by the policy',
  );
  t.equal(refused.length, 1, 'nothing else was refused');
});
