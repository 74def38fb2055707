/**
 * Two ways a client could get around what the proxy captures, tried with
 * raw requests against the real proxy, in front of a content server that
 * decodes `%2F` and `%5C` as Python's http.server and many CGI
 * applications do, and filing into the real archive over HTTP:
 * - `Excluded: /assets` and `GET /assets%2fhljs.css` (the site serves
 *   `/assets/hljs.css`): served, never captured (the archive would refuse
 *   it from any writer);
 * - a GET with a body (the site answers what the body asked for): served,
 *   never captured, so that nobody can file that answer as the plain URL's
 *   memento.
 * docs/capture-proxy.md "What the proxy captures, and why".
 */
import { once } from 'node:events';
import http from 'node:http';
import type { Test } from 'tap';
import t from 'tap';
import type { RunningProxy } from '../../proxy/server.js';
import { request, startArchive } from '../helpers/archive.js';
import { rawConnection, startTestProxy, startUpstream, vhostYaml } from './helpers.js';

const DATE = 'Tue, 20 Mar 2001 20:35:00 GMT';
const FILES: Record<string, string> = {
  '/index.html': '<html><head><title>home</title></head><body>home</body></html>',
  '/assets/hljs.css': '.hljs{color:#333}',
  '/other.html': '<html><body>other</body></html>',
};

/**
 * The content server: a file server that, as Python's http.server does,
 * decodes the path (`%2F` is `/`; `\` is a separator too, as on Windows
 * servers) and merges `//`; a request with a body gets an answer made from
 * it (as a CGI application that reads its parameters from the body).
 */
function decodingSite(req: http.IncomingMessage, res: http.ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    res.sendDate = false;
    const body = Buffer.concat(chunks).toString();
    const file = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname)
      .replace(/\\/g, '/')
      .replace(/\/{2,}/g, '/');
    if (FILES[file] === undefined) {
      res.writeHead(404, ['Date', DATE, 'Content-Type', 'text/plain']);
      return void res.end('not found');
    }
    res.writeHead(200, ['Date', DATE, 'Content-Type', file.endsWith('.css') ? 'text/css' : 'text/html']);
    res.end(body ? `<html><body>PLANTED ${body}</body></html>` : FILES[file]);
  });
}

/** Sends `bytes` on a connection of its own; resolves with what came back and the request's log entry (written once its capture settled). */
async function exchange(t: Test, proxy: RunningProxy, bytes: string) {
  const entry = once(proxy.events, 'request');
  const c = await rawConnection(t, proxy.address.port, bytes);
  await c.closed;
  return { text: c.received(), entry: ((await entry) as [Record<string, unknown>])[0] };
}

t.test('an encoded slash or backslash past Excluded, and a GET with a body: served as the site answers, never captured', async (t) => {
  const archive = await startArchive();
  t.teardown(() => archive.close());
  const site = await startUpstream(t, decodingSite);
  const { proxy } = await startTestProxy(t, {
    'a.yaml': vhostYaml({ server_name: 'a.test', upstream: site.url, ArchivePort: archive.port, Excluded: '/assets' }),
  });
  const get = (target: string, extra = '', body = '') => `GET ${target} HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n${extra}\r\n${body}`;

  // First a GET with a body: had it been captured, its answer would be the memento of /index.html for that second.
  for (const [what, extra, body] of [
    ['Content-Length: 7', 'Content-Length: 7\r\n', 'x=PLANT'],
    ['Transfer-Encoding: chunked', 'Transfer-Encoding: chunked\r\n', '7\r\nx=PLANT\r\n0\r\n\r\n'],
  ]) {
    const r = await exchange(t, proxy, get('/index.html', extra, body));
    t.match(r.text, /^HTTP\/1\.1 200 OK\r\n[\s\S]*PLANTED x=PLANT/, `GET with ${what}: the body reached the site, its answer reached the client`);
    t.match(r.entry, { status: 200, capture: 'no: body' }, `GET with ${what}: not captured`);
  }
  const home = await exchange(t, proxy, get('/index.html'));
  t.match(home.entry, { status: 200, capture: 'stored' }, 'a plain GET is captured');
  const excluded = await exchange(t, proxy, get('/assets/hljs.css'));
  t.match(excluded.entry, { status: 200, capture: 'no: excluded' });

  for (const target of ['/assets%2fhljs.css', '/assets%2Fhljs.css', '/assets%5Chljs.css', '/assets%5c%2fhljs.css', 'http://a.test/assets%2Fhljs.css']) {
    const r = await exchange(t, proxy, get(target));
    t.match(r.text, /^HTTP\/1\.1 200 OK\r\n/, `${target}: served`);
    t.ok(r.text.includes(FILES['/assets/hljs.css']), `${target}: the site served /assets/hljs.css`);
    t.notMatch(r.text, /rel="timegate"/i, `${target}: no TimeGate is announced`);
    t.match(
      r.entry,
      { capture: 'no: refused', reason: /^request target has an encoded (slash|backslash) \(%(2f|5c)\) in its path/i },
      `${target}: not captured`,
    );
    t.equal(site.seen[site.seen.length - 1].url, target.replace('http://a.test', ''), `${target}: the site was asked for the target as sent`);
  }

  const empty = await exchange(t, proxy, get('/other.html', 'Content-Length: 0\r\n'));
  t.match(empty.entry, { capture: 'stored' }, 'Content-Length: 0 is no body: captured');

  // What the archive holds: the two plain GETs, nothing else.
  const cdx = await request(`${archive.url}/cdx?url=${encodeURIComponent('http://a.test/*')}`);
  t.same(
    cdx.text
      .trim()
      .split('\n')
      .map((l) => l.split(' ')[2]),
    ['http://a.test/index.html', 'http://a.test/other.html'],
    '/cdx lists the two plain captures only',
  );
  for (const uri of ['http://a.test/assets/hljs.css', 'http://a.test/assets%2fhljs.css', 'http://a.test/assets%5Chljs.css']) {
    t.equal((await request(`${archive.url}/tg/${uri}`)).status, 404, `${uri}: no memento`);
  }
  const memento = await request(`${archive.url}/2025/memento/20010320203500id_/http://a.test/index.html`);
  t.equal(memento.status, 200);
  t.equal(memento.text, FILES['/index.html'], 'the memento of /index.html is the page, not what a body asked for');
  t.equal(await proxy.metrics.value('capture_proxy_captures_refused_total'), 5, 'the encoded-slash targets are counted as refused');
});
