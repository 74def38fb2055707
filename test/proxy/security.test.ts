/**
 * The proxy's side of the security issue, one test per defect (numbered as
 * in the issue): a client must not choose the host its capture is filed
 * under (1); refused captures neither reach the archive nor pile up in the
 * spool (2); a client that goes away takes its upstream connection with it
 * (3); X-Forwarded-* and X-Client-IP, in every CGI spelling, are the
 * proxy's word, never the client's (5, 7); the URI-R is the URL the
 * content server was asked for (6); garbage on a connection never lands
 * inside a response (8); pages personalised by a session cookie are
 * private (9). Raw sockets where the attack needs bytes a client library
 * would not send.
 */

import { once } from 'node:events';
import { readdir, stat, writeFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import t, { type Test } from 'tap';
import type { CaptureOutcome } from '../../proxy/capture/capture.js';
import { loadVhostFile } from '../../proxy/config/vhost-file.js';
import type { RunningProxy } from '../../proxy/server.js';
import { cgiName } from '#shared/http-head.js';
import { repo } from '../helpers/daemons.js';
import {
  freePort,
  get,
  listen,
  rawConnection,
  rawRequest,
  recordRequestHead,
  startFakeArchive,
  startRealArchive,
  startTestProxy,
  startUpstream,
  tempDir,
  vhostYaml,
  waitFor,
} from './helpers.js';

const DATE = 'Tue, 20 Mar 2001 20:35:00 GMT';

/** A content server: `/future` sends a Date two days ahead of now (the archive refuses it), anything else echoes its target. */
function site(req: http.IncomingMessage, res: http.ServerResponse) {
  res.sendDate = false;
  if (req.url === '/future') {
    res.writeHead(200, ['Date', new Date(Date.now() + 2 * 86_400_000).toUTCString(), 'Content-Type', 'text/plain']);
    return void res.end('from the future');
  }
  res.writeHead(200, ['Date', DATE, 'Content-Type', 'text/plain']);
  res.end(`page ${req.url}`);
}

/** Sends one request and resolves with its response and its request log entry (written once its capture settled). */
async function logged(proxy: RunningProxy, send: () => Promise<unknown>): Promise<Record<string, unknown>> {
  const entry = once(proxy.events, 'request');
  await send();
  return ((await entry) as [Record<string, unknown>])[0];
}

/** Collects the proxy's capture outcomes. */
function outcomesOf(proxy: RunningProxy): CaptureOutcome[] {
  const out: CaptureOutcome[] = [];
  proxy.events.on('capture', (o: CaptureOutcome) => out.push(o));
  return out;
}

t.test("defect 1: a Host that is not one of the vhost's names never becomes the URI-R's host (a default vhost serves it, captures nothing)", async (t) => {
  const upstream = await startUpstream(t, site);
  const archive = await startFakeArchive(t);
  // As the shipped sample: localhost, alias 127.0.0.1, default: true.
  const { proxy, dir } = await startTestProxy(t, {
    'sample.yaml': vhostYaml({ server_name: 'localhost', server_aliases: '[127.0.0.1]', default: true, upstream: upstream.url, ArchivePort: archive.port }),
  });
  const port = proxy.address.port;
  for (const [host, reason] of [
    ['www.victim.example', 'unknown-host'],
    [`[::1]:${port}`, 'unknown-host'],
    [`www.victim.example:${port}`, 'unknown-host'],
    ['localhost:1', 'unknown-port'],
  ]) {
    let r!: Awaited<ReturnType<typeof get>>;
    const entry = await logged(proxy, async () => (r = await get(proxy.url, '/news.html', host)));
    t.equal(r.status, 200, `Host ${host}: served`);
    t.equal(r.body.toString(), 'page /news.html');
    t.equal(entry.capture, `no: ${reason}`, `Host ${host}: not captured (${reason})`);
    t.equal(r.headers.link, undefined, `Host ${host}: no TimeGate announced for a URI-R that is not the site's`);
  }
  t.same(archive.puts, [], 'nothing reached the archive');

  // A vhost file rejected for a typo: its host falls through to the default vhost, still not captured.
  const victim = path.join(dir, 'victim.yaml');
  await writeFile(victim, `server_name: www.victim.example\nupstream: ${upstream.url}\nEnableArchivng: On\n`);
  t.equal(proxy.vhosts.loadFile(victim).ok, false, 'the file with a typo is rejected');
  const entry = await logged(proxy, () => get(proxy.url, '/news.html', 'www.victim.example'));
  t.equal(entry.capture, 'no: unknown-host', 'its host is served by the default vhost, not captured');
  t.same(archive.puts, [], 'still nothing at the archive');

  // The vhost's own names are captured, with the port the proxy listens on, or none.
  await logged(proxy, () => get(proxy.url, '/news.html', `127.0.0.1:${port}`));
  await logged(proxy, () => get(proxy.url, '/news.html', 'LocalHost'));
  t.same(
    archive.puts.map((p) => p.url),
    [`/put/http://127.0.0.1:${port}/news.html`, '/put/http://localhost/news.html'],
    'captured under the names the vhost serves',
  );
  t.match(recordRequestHead(archive.puts[1].body), /^GET \/news\.html HTTP\/1\.1\r\nHost: localhost\r\n/, 'the record names the host it is filed under');
});

t.test('defect 1: UseCanonicalName On files every alias under server_name; the shipped sample vhost sets it', async (t) => {
  const upstream = await startUpstream(t, site);
  const archive = await startFakeArchive(t);
  const { proxy } = await startTestProxy(t, {
    'sample.yaml': vhostYaml({
      server_name: 'localhost',
      server_aliases: '[127.0.0.1]',
      UseCanonicalName: 'On',
      upstream: upstream.url,
      ArchivePort: archive.port,
    }),
  });
  const port = proxy.address.port;
  let r!: Awaited<ReturnType<typeof get>>;
  await logged(proxy, async () => (r = await get(proxy.url, '/x', `127.0.0.1:${port}`)));
  await logged(proxy, () => get(proxy.url, '/x', `LOCALHOST:${port}`));
  t.same(
    archive.puts.map((p) => p.url),
    [`/put/http://localhost:${port}/x`, `/put/http://localhost:${port}/x`],
    'both names share one history',
  );
  t.match(recordRequestHead(archive.puts[0].body), new RegExp(`^GET /x HTTP/1\\.1\\r\\nHost: localhost:${port}\\r\\n`), 'the record says Host: server_name');
  t.equal(r.headers.link, `<http://127.0.0.1:${archive.port}/tg/http://localhost:${port}/x>; rel="timegate"`, 'the TimeGate of the canonical URI-R');

  const [sample] = loadVhostFile(path.join(repo, 'conf/vhosts/sample.yaml'));
  t.match(sample, { serverName: 'localhost', aliases: ['127.0.0.1'], useCanonicalName: true }, 'conf/vhosts/sample.yaml: UseCanonicalName On');
});

t.test('defect 2: a capture the archive would refuse is never sent: proxied, not captured, logged with the reason, counted', async (t) => {
  const upstream = await startUpstream(t, site);
  const archive = await startFakeArchive(t);
  const { proxy } = await startTestProxy(t, { 'a.yaml': vhostYaml({ server_name: 'a.example', upstream: upstream.url, ArchivePort: archive.port }) });
  let r!: Awaited<ReturnType<typeof get>>;
  const entry = await logged(proxy, async () => (r = await get(proxy.url, '/future', 'a.example')));
  t.equal(r.status, 200);
  t.equal(r.body.toString(), 'from the future', 'the client is served');
  t.match(entry, { capture: 'no: refused', reason: /Date .* more than a day after/ }, 'logged as refused, with the reason');
  t.same(archive.puts, [], 'no PUT');
  t.equal(proxy.spool.depth, 0, 'nothing spooled');
  t.equal(await proxy.metrics.value('capture_proxy_captures_refused_total'), 1, 'counted');
});

t.test('defect 2: 20 requests with two Host lines and a 1 MB body leave nothing in spool/rejected/', async (t) => {
  const body = Buffer.alloc(1024 * 1024, 'x');
  const upstream = await startUpstream(t, (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': body.length });
    res.end(body);
  });
  const port = await freePort();
  const archive = await startRealArchive(port, await tempDir(t, 'archive-data-'));
  t.teardown(() => archive.close());
  const { proxy } = await startTestProxy(
    t,
    { 'a.yaml': vhostYaml({ server_name: 'site.example', upstream: upstream.url, ArchivePort: port }) },
    { spool: { retryMinMs: 20 } },
  );
  const outcomes = outcomesOf(proxy);
  for (let i = 0; i < 20; i++) {
    const r = await rawRequest(`${proxy.url}/big`, 'GET', [
      ['Host', 'site.example'],
      ['Host', 'other.example'],
      ['Connection', 'close'],
    ]);
    t.equal(r.body.length, body.length, `request ${i}: the client got the whole body`);
  }
  await waitFor('20 captures settled', () => outcomes.length === 20 && proxy.capturesInFlight === 0);
  t.same(
    outcomes.map((o) => `${o.outcome} ${o.uriR}`),
    Array.from({ length: 20 }, (_, i) => `${i === 0 ? 'stored' : 'unchanged'} http://site.example/big`),
    'each taken under the Host the content server was given (the first), with one Host line: stored, then the same (200)',
  );
  const rejected = await readdir(path.join(proxy.spool.dir, 'rejected')).catch(() => []);
  t.same(rejected, [], 'spool/rejected/ holds nothing');
  t.equal(proxy.spool.bytes, 0, 'the spool holds nothing');
});

/** An archive stub that answers every PUT with `status(url)` once it has read the whole body. */
async function answeringArchive(t: Test, status: (url: string) => number): Promise<{ port: number; urls: string[] }> {
  const urls: string[] = [];
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      urls.push(req.url!);
      const s = status(req.url!);
      res.writeHead(s, { 'Content-Type': 'text/plain' });
      res.end(s === 422 ? 'no time-span archive holds this datetime\n' : 'stored\n');
    });
  });
  return { port: await listen(t, server), urls };
}

t.test('defect 2: what the archive still refuses for good goes to rejected/, within spool_max_bytes, oldest dropped first and logged', async (t) => {
  const body = 'y'.repeat(100_000);
  const upstream = await startUpstream(t, (_req, res) => res.end(body));
  const archive = await answeringArchive(t, () => 422);
  const maxBytes = 350_000;
  const { proxy, logs } = await startTestProxy(
    t,
    { 'a.yaml': vhostYaml({ server_name: 'site.example', upstream: upstream.url, ArchivePort: archive.port }) },
    { spool: { maxBytes, retryMinMs: 20 } },
  );
  const outcomes = outcomesOf(proxy);
  for (let n = 0; n < 8; n++) await logged(proxy, () => get(proxy.url, `/p/${n}`, 'site.example'));
  t.same(
    outcomes.map((o) => `${o.outcome} ${o.live} ${o.archiveStatus}`),
    Array.from({ length: 8 }, () => 'rejected failed 422'),
    'each refused live with 422 and kept in rejected/ at once (no re-send)',
  );
  t.equal(archive.urls.length, 8, 'one PUT each: a refusal for good is not retried');
  const dir = path.join(proxy.spool.dir, 'rejected');
  const files = (await readdir(dir)).sort();
  const sizes = await Promise.all(files.map(async (f) => (await stat(path.join(dir, f))).size));
  const total = sizes.reduce((a, b) => a + b, 0);
  t.ok(total <= maxBytes, `rejected/ holds ${total} bytes ≤ spool_max_bytes ${maxBytes}`);
  t.ok(files.length >= 2 && files.length < 8, `the newest ${files.length} kept`);
  t.ok(proxy.spool.bytes <= maxBytes, `the spool counts them: ${proxy.spool.bytes} bytes`);
  const dropped = logs.filter((e) => /rejected capture deleted/.test(String(e.msg)));
  t.equal(dropped.length, 8 - files.length, 'each rejected capture deleted to make room is logged');
  t.equal(await proxy.metrics.value('capture_proxy_captures_dropped_total', { reason: 'rejected' }), 8, 'counted as lost');
});

t.test("defect 2: a permanent refusal does not put the archive's queue into back-off for the captures behind it", async (t) => {
  const upstream = await startUpstream(t, site);
  const archive = await answeringArchive(t, (url) => (url.endsWith('/bad') ? 422 : 201));
  const { proxy } = await startTestProxy(
    t,
    { 'a.yaml': vhostYaml({ server_name: 'site.example', upstream: upstream.url, ArchivePort: archive.port }) },
    { spool: { retryMinMs: 60_000 } },
  );
  const outcomes = outcomesOf(proxy);
  await logged(proxy, () => get(proxy.url, '/bad', 'site.example'));
  await logged(proxy, () => get(proxy.url, '/good', 'site.example'));
  t.match(outcomes, [
    { uriR: 'http://site.example/bad', outcome: 'rejected', archiveStatus: 422 },
    { uriR: 'http://site.example/good', outcome: 'stored', live: 'stored' },
  ]);
  t.equal(proxy.spool.depth, 0, 'nothing waits in the spool');
});

t.test('defect 3: clients that go away mid-response take their upstream connections with them, before upstream_timeout', async (t) => {
  const upstream = await startUpstream(t, (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.write('first bytes;'); // and never the rest
  });
  let open = 0;
  let peak = 0;
  upstream.server.on('connection', (s) => {
    peak = Math.max(peak, ++open);
    s.once('close', () => open--);
  });
  const archive = await startFakeArchive(t);
  const { proxy } = await startTestProxy(
    t,
    { 'a.yaml': vhostYaml({ server_name: 'localhost', upstream: upstream.url, ArchivePort: archive.port }) },
    { upstreamTimeoutMs: 600_000 },
  );
  const outcomes = outcomesOf(proxy);
  const clients = await Promise.all(
    Array.from({ length: 30 }, async () => {
      const c = await rawConnection(t, proxy.address.port, 'GET /hold HTTP/1.1\r\nHost: localhost\r\n\r\n');
      await c.until(/first bytes;/);
      return c;
    }),
  );
  t.equal(peak, 30, '30 upstream connections while the 30 responses stream');
  for (const c of clients) c.socket.destroy();
  await waitFor('the upstream connections closed', () => open === 0, 5000);
  t.equal(open, 0, 'every upstream connection closed once its client went away');
  await waitFor('30 captures settled', () => outcomes.length === 30, 5000);
  t.ok(
    outcomes.every((o) => o.outcome === 'aborted'),
    'each capture is aborted',
  );
});

t.test('defect 5: client-sent X-Forwarded-Host, -Proto, -Port and Forwarded (any CGI spelling) reach neither the upstream nor the capture', async (t) => {
  const upstream = await startUpstream(t, site);
  const archive = await startFakeArchive(t);
  const { proxy } = await startTestProxy(t, { 'a.yaml': vhostYaml({ server_name: 'a.example', upstream: upstream.url, ArchivePort: archive.port }) });
  await logged(proxy, () =>
    get(proxy.url, '/page', 'a.example', [
      ['X-Forwarded-Host', 'www.victim.example'],
      ['X_Forwarded_Host', 'www.victim2.example'],
      ['X-Forwarded-Proto', 'https'],
      ['x-forwarded_proto', 'https'],
      ['X-Forwarded-Port', '443'],
      ['X_FORWARDED_PORT', '444'],
      ['X-Forwarded-For', '192.0.2.9'],
      ['X_Forwarded_For', '6.6.6.6'],
      ['Forwarded', 'for=6.6.6.7;host=www.victim3.example;proto=https'],
    ]),
  );
  const seen = upstream.seen[0].headers;
  t.equal(seen['x-forwarded-host'], 'a.example', 'X-Forwarded-Host: the Host the proxy served');
  t.equal(seen['x-forwarded-proto'], 'http', 'X-Forwarded-Proto: the client connection');
  t.equal(seen['x-forwarded-port'], '80');
  t.equal(seen['x-forwarded-for'], '192.0.2.9,127.0.0.1', 'X-Forwarded-For: the client address appended to the list it sent');
  const spellings = Object.keys(seen).filter((k) => /^HTTP_X_FORWARDED_/.test(cgiName(k)));
  t.same(spellings.sort(), ['x-forwarded-for', 'x-forwarded-host', 'x-forwarded-port', 'x-forwarded-proto'], 'no other spelling reaches the upstream');
  t.notMatch(JSON.stringify(seen), /victim|6\.6\.6\.6|444|https/, 'none of the client-sent values');
  const head = recordRequestHead(archive.puts[0].body);
  t.notMatch(head, /^X[-_]Forwarded[-_](Host|Proto|Port):/im, 'the capture has none of them');
  t.notMatch(head, /X_Forwarded_For/i, 'nor another spelling of X-Forwarded-For');
  t.equal(seen.forwarded, undefined, 'Forwarded (RFC 7239) does not reach the upstream');
  t.notMatch(head, /^Forwarded:/im, 'nor the capture');
  t.equal(archive.puts[0].url, '/put/http://a.example/page', 'filed under http://, as the client connection was');
});

t.test('defect 6: a target with a backslash or dot-segments reaches the upstream exactly as sent and is not captured', async (t) => {
  const upstream = await startUpstream(t, site);
  const archive = await startFakeArchive(t);
  const { proxy } = await startTestProxy(t, { 'a.yaml': vhostYaml({ server_name: 'a.test', upstream: upstream.url, ArchivePort: archive.port }) });
  const send = async (target: string) => {
    let text = '';
    const entry = await logged(proxy, async () => {
      const c = await rawConnection(t, proxy.address.port, `GET ${target} HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n`);
      await c.closed;
      text = c.received();
    });
    return { text, entry, asked: upstream.seen[upstream.seen.length - 1].url };
  };
  const poison = await send('/POISON\\..\\index.html');
  t.equal(poison.asked, '/POISON\\..\\index.html', 'the upstream was asked for the target as sent');
  t.match(poison.text, /^HTTP\/1\.1 200 /);
  t.match(poison.entry, { capture: 'no: refused', reason: /backslash/ });
  const dots = await send('/a/../index.html');
  t.equal(dots.asked, '/a/../index.html');
  t.match(dots.entry, { capture: 'no: refused', reason: /dot-segment/ });
  const slashes = await send('/a//b?c=//d');
  t.equal(slashes.asked, '/a//b?c=//d', 'double slashes are not merged on the way');
  t.equal(slashes.entry.capture, 'stored');
  t.same(
    archive.puts.map((p) => p.url),
    ['/put/http://a.test/a//b?c=//d'],
    'only the exact URL is archived',
  );
});

t.test('defect 7: X-Client_IP (underscore) and every other CGI spelling of X-Client-IP reach neither the upstream nor the capture', async (t) => {
  const upstream = await startUpstream(t, site);
  const archive = await startFakeArchive(t);
  const { proxy } = await startTestProxy(t, {
    'a.yaml': vhostYaml({ server_name: 'a.example', upstream: upstream.url, ArchivePort: archive.port, EnableIP: 'On' }),
  });
  await logged(proxy, () =>
    get(proxy.url, '/page', 'a.example', [
      ['X-Client_IP', '6.6.6.6'],
      ['x_client_ip', '6.6.6.7'],
      ['X-CLIENT-IP', '6.6.6.8'],
    ]),
  );
  const seen = upstream.seen[0].headers;
  t.same(
    Object.keys(seen).filter((k) => cgiName(k) === 'HTTP_X_CLIENT_IP'),
    [],
    'the upstream gets no spelling of X-Client-IP',
  );
  const head = recordRequestHead(archive.puts[0].body);
  t.notMatch(head, /6\.6\.6/, 'the capture has none of the spoofed values');
  t.match(head, /\r\nX-Client-IP: 127\.0\.0\.1\r\n$/, 'only the X-Client-IP the proxy adds (EnableIP On)');
});

t.test('defect 8: garbage on a keep-alive connection while a response streams closes the connection, never a 400 inside the body', async (t) => {
  let release: (() => void) | undefined;
  const upstream = await startUpstream(t, (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.write('chunk-one;');
    release = () => res.end('chunk-two');
  });
  t.teardown(() => release?.());
  const { proxy, logs } = await startTestProxy(t, { 'a.yaml': vhostYaml({ server_name: 'localhost', upstream: upstream.url, EnableArchiving: 'Off' }) });
  const entry = once(proxy.events, 'request');
  const c = await rawConnection(t, proxy.address.port, 'GET /stream HTTP/1.1\r\nHost: localhost\r\n\r\n');
  await c.until(/chunk-one;/);
  c.socket.write('\x01\x02 this is not HTTP\r\n\r\n');
  await Promise.race([c.closed, c.until(/HTTP\/1\.1 400/)]);
  release?.();
  t.notMatch(c.received(), /HTTP\/1\.1 400/, 'no 400 written into the response in flight');
  await c.closed;
  t.pass('the connection is closed');
  t.match(
    ((await entry) as [Record<string, unknown>])[0],
    { target: '/stream', status: 200, aborted: true },
    'the request in flight is logged with its real status',
  );
  t.ok(
    logs.some((e) => /malformed request/.test(String(e.msg)) && /response was in flight/.test(String(e.answer))),
    'the malformed request is logged',
  );
});

t.test('defect 9: a request with a common session cookie is private by default: not captured', async (t) => {
  const upstream = await startUpstream(t, site);
  const archive = await startFakeArchive(t);
  const { proxy } = await startTestProxy(t, { 'a.yaml': vhostYaml({ server_name: 'a.example', upstream: upstream.url, ArchivePort: archive.port }) });
  const capture = async (cookie: string) => (await logged(proxy, () => get(proxy.url, '/page', 'a.example', [['Cookie', cookie]]))).capture;
  for (const cookie of [
    'PHPSESSID=abc123',
    'theme=dark; JSESSIONID=0AB1',
    'ASPSESSIONIDQQGGRRTT=KJHKJ; lang=en',
    'ASP.NET_SessionId=x',
    '.ASPXAUTH=F00',
    'wordpress_logged_in_5c0ffee=admin%7C1',
    '_myapp_session=BAh7',
    'laravel_session=eyJ',
    'sessionid=dj4ngo',
    'connect.sid=s%3Aabc',
    'CFID=1; CFTOKEN=2',
  ]) {
    t.equal(await capture(cookie), 'no: private', `private: ${cookie}`);
  }
  t.equal(await capture('theme=dark; lang=en'), 'stored', 'other cookies do not make a request private');
  t.equal(archive.puts.length, 1, 'the archive got the one public request only');
});

t.test('defect 9: PrivateCookies names the session cookies (a trailing * is a prefix); ArchivePrivate On captures them, values removed', async (t) => {
  const upstream = await startUpstream(t, site);
  const archive = await startFakeArchive(t);
  const { proxy } = await startTestProxy(t, {
    'b.yaml': vhostYaml({ server_name: 'b.example', upstream: upstream.url, ArchivePort: archive.port, PrivateCookies: 'mysid other*' }),
    'c.yaml': vhostYaml({ server_name: 'c.example', upstream: upstream.url, ArchivePort: archive.port, ArchivePrivate: 'On' }),
  });
  const capture = async (host: string, cookie: string) => (await logged(proxy, () => get(proxy.url, '/page', host, [['Cookie', cookie]]))).capture;
  t.equal(await capture('b.example', 'PHPSESSID=abc'), 'stored', 'PrivateCookies replaces the default list');
  t.equal(await capture('b.example', 'mysid=1'), 'no: private');
  t.equal(await capture('b.example', 'otherwise=1'), 'no: private', 'a trailing * is a name prefix');
  t.equal(await capture('c.example', 'PHPSESSID=abc'), 'stored', 'ArchivePrivate On captures it');
  t.match(recordRequestHead(archive.puts[archive.puts.length - 1].body), /\r\nCookie: PHPSESSID=\r\n/, 'with the cookie value removed');
});
