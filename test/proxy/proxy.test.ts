/**
 * What a client of the proxy sees: the content server's answer with the
 * TimeGate Link added, 421 for an unknown Host (or the default vhost), 502
 * when the content server is down, X-Forwarded-* at the content server.
 */

import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import type { CaptureOutcome } from '../../proxy/capture/capture.js';
import { freePort, get, startFakeArchive, startTestProxy, startUpstream, tempDir, vhostYaml } from './helpers.js';

const execFileP = promisify(execFile);

const noArchive = { EnableArchiving: 'Off' };

t.test('proxies to the vhost upstream and appends the TimeGate Link', async (t) => {
  const site = await startUpstream(t, (req, res) => {
    if (req.url === '/with-link') {
      res.setHeader('Link', '<http://a.example/next>; rel="next"');
      res.appendHeader('Link', '<http://a.example/style.css>; rel="preload"');
    }
    res.setHeader('Content-Type', 'text/plain');
    res.setHeader('X-Site', 'yes');
    res.end(`hello from ${req.url}`);
  });
  const archive = await startFakeArchive(t);
  const { proxy } = await startTestProxy(t, {
    'a.yaml': vhostYaml({
      server_name: 'a.example',
      server_aliases: '[alias.example]',
      upstream: site.url,
      ArchiveTimeGate: 'tg.example:8090/tg/',
      ArchivePort: archive.port,
    }),
  });

  const r = await get(proxy.url, '/page?x=1', 'a.example');
  t.equal(r.status, 200);
  t.equal(r.body.toString(), 'hello from /page?x=1', 'body from the content server, target unchanged');
  t.equal(r.headers['x-site'], 'yes', 'content server headers pass');
  t.equal(r.headers.link, '<http://tg.example:8090/tg/http://a.example/page?x=1>; rel="timegate"', 'Link to the TimeGate of the URI-R');

  const l = await get(proxy.url, '/with-link', 'a.example');
  t.equal(
    l.headers.link,
    '<http://a.example/next>; rel="next", <http://a.example/style.css>; rel="preload", <http://tg.example:8090/tg/http://a.example/with-link>; rel="timegate"',
    'timegate link after the Links the content server sent',
  );

  const a = await get(proxy.url, '/x', `ALIAS.Example:${proxy.address.port}`);
  t.equal(a.status, 200, 'an alias matches, case-insensitively, port ignored');
  t.equal(
    a.headers.link,
    `<http://tg.example:8090/tg/http://alias.example:${proxy.address.port}/x>; rel="timegate"`,
    'URI-R keeps the port the client used (the one the proxy listens on)',
  );

  const semi = await get(proxy.url, '/p;v=1?a=1,2', 'a.example');
  t.equal(
    semi.headers.link,
    '<http://tg.example:8090/tg/http://a.example/p%3Bv=1?a=1%2C2>; rel="timegate"',
    '"," and ";" of the URI-R percent-encoded, as in every Link of the archive (parsers split at them)',
  );

  const h = await get(proxy.url, '/head', 'a.example', [], 'HEAD');
  t.equal(h.status, 200);
  t.equal(h.body.length, 0);
  t.match(h.headers.link, /rel="timegate"/, 'HEAD answers carry the Link too');
});

t.test('a URL asked again gets the Link of its own Host name and port, and of the vhost as reloaded', async (t) => {
  // The proxy keeps the routing (URI-R, Link) of the recent targets of each vhost: what it keeps must be keyed by all
  // that makes the URI-R, and a reloaded vhost must not answer with the old one's.
  const site = await startUpstream(t, (_req, res) => res.end('ok'));
  const archive = await startFakeArchive(t);
  const yaml = (tg: string) =>
    vhostYaml({
      server_name: 'a.example',
      server_aliases: '[b.example]',
      upstream: site.url,
      UseCanonicalName: 'Off',
      ArchiveTimeGate: tg,
      ArchivePort: archive.port,
    });
  const { proxy, dir } = await startTestProxy(t, { 'a.yaml': yaml('old.example/tg/') });
  const port = proxy.address.port;
  const link = async (host: string, target = '/same?q=1') => (await get(proxy.url, target, host)).headers.link;
  for (let i = 0; i < 2; i++) {
    t.equal(await link('a.example'), '<http://old.example/tg/http://a.example/same?q=1>; rel="timegate"', `a.example, time ${i + 1}`);
    t.equal(await link('B.example'), '<http://old.example/tg/http://b.example/same?q=1>; rel="timegate"', `b.example, time ${i + 1}`);
    t.equal(await link(`a.example:${port}`), `<http://old.example/tg/http://a.example:${port}/same?q=1>; rel="timegate"`, `with the port, time ${i + 1}`);
    t.equal(await link(`a.example:${port + 1}`), undefined, `another port: not announced, time ${i + 1}`);
  }
  t.equal(await link('a.example', '/same?q=2'), '<http://old.example/tg/http://a.example/same?q=2>; rel="timegate"', 'another query');
  await writeFile(path.join(dir, 'a.yaml'), yaml('new.example/tg/'));
  t.match(proxy.vhosts.reload(), [{ ok: true }]);
  t.equal(await link('a.example'), '<http://new.example/tg/http://a.example/same?q=1>; rel="timegate"', 'the reloaded vhost’s TimeGate');
});

t.test('an https archive is announced as such; a vhost with EnableArchiving Off announces no TimeGate', async (t) => {
  const site = await startUpstream(t, (_req, res) => res.end('ok'));
  const archive = await startFakeArchive(t);
  const { proxy } = await startTestProxy(t, {
    'a.yaml': vhostYaml({ server_name: 'a.example', upstream: site.url, ArchiveTimeGate: 'https://Archive.example.org/tg/', ArchivePort: archive.port }),
    'b.yaml': vhostYaml({
      server_name: 'b.example',
      upstream: site.url,
      ArchiveTimeGate: 'HTTPS://archive.example.org:8443/memento/tg/',
      ArchivePort: archive.port,
    }),
    'c.yaml': vhostYaml({ server_name: 'c.example', upstream: site.url, ArchiveTimeGate: 'http://archive.example.org/tg/', ArchivePort: archive.port }),
    'off.yaml': vhostYaml({ server_name: 'off.example', upstream: site.url, ...noArchive }),
  });
  t.equal((await get(proxy.url, '/p?q=1', 'a.example')).headers.link, '<https://archive.example.org/tg/http://a.example/p?q=1>; rel="timegate"');
  t.equal((await get(proxy.url, '/p', 'b.example')).headers.link, '<https://archive.example.org:8443/memento/tg/http://b.example/p>; rel="timegate"');
  t.equal((await get(proxy.url, '/p', 'c.example')).headers.link, '<http://archive.example.org/tg/http://c.example/p>; rel="timegate"');
  const off = await get(proxy.url, '/p', 'off.example');
  t.equal(off.status, 200);
  t.equal(off.headers.link, undefined, 'EnableArchiving Off: no Link');
  const passed = await startUpstream(t, (_req, res) => {
    res.setHeader('Link', '<http://off.example/next>; rel="next"');
    res.end('ok');
  });
  const { proxy: p2 } = await startTestProxy(t, { 'off.yaml': vhostYaml({ server_name: 'off.example', upstream: passed.url, ...noArchive }) });
  t.equal((await get(p2.url, '/p', 'off.example')).headers.link, '<http://off.example/next>; rel="next"', "the content server's own Link passes alone");
});

t.test('sends X-Forwarded-For, -Proto and -Host to the content server, Host kept', async (t) => {
  const site = await startUpstream(t, (_req, res) => res.end('ok'));
  const { proxy } = await startTestProxy(t, { 'a.yaml': vhostYaml({ server_name: 'a.example', upstream: site.url, ...noArchive }) });
  await get(proxy.url, '/', 'a.example:8080');
  await get(proxy.url, '/', 'a.example', [['X-Forwarded-For', '192.0.2.9']]);
  const [first, second] = site.seen;
  t.equal(first.headers.host, 'a.example:8080', 'Host as the client sent it');
  t.equal(first.headers['x-forwarded-for'], '127.0.0.1');
  t.equal(first.headers['x-forwarded-proto'], 'http');
  t.equal(first.headers['x-forwarded-host'], 'a.example:8080');
  t.equal(second.headers['x-forwarded-for'], '192.0.2.9,127.0.0.1', 'the client address appended to the chain');
});

t.test('unknown Host: 421 with one text line; the default vhost takes it when there is one', async (t) => {
  const site = await startUpstream(t, (_req, res) => res.end('default site'));
  const { proxy, logs } = await startTestProxy(t, { 'a.yaml': vhostYaml({ server_name: 'a.example', upstream: site.url, ...noArchive }) });
  const r = await get(proxy.url, '/', 'other.example');
  t.equal(r.status, 421);
  t.equal(r.headers['content-type'], 'text/plain; charset=utf-8');
  t.equal(r.body.toString(), '421 Misdirected Request: no virtual host here serves "other.example"\n');
  t.equal(r.headers.link, undefined, "no TimeGate Link on the proxy's own answers");
  t.equal(site.seen.length, 0, 'nothing reached the content server');
  t.ok(
    logs.some((e) => e.type === 'request' && e.status === 421 && e.host === 'other.example'),
    'logged',
  );

  const { proxy: p2 } = await startTestProxy(t, {
    'a.yaml': vhostYaml({ server_name: 'a.example', upstream: 'http://127.0.0.1:1', ...noArchive }),
    'b.yaml': vhostYaml({ server_name: 'b.example', default: true, upstream: site.url, ...noArchive }),
  });
  const d = await get(p2.url, '/x', 'other.example');
  t.equal(d.status, 200);
  t.equal(d.body.toString(), 'default site');
  t.equal(d.headers.link, undefined, 'no URI-R from a Host the vhost does not serve: nothing announced (nor captured)');
});

t.test('content server down: 502 with a short body; the proxy keeps serving', async (t) => {
  const down = await freePort();
  const site = await startUpstream(t, (_req, res) => res.end('up'));
  const { proxy, logs } = await startTestProxy(t, {
    'down.yaml': vhostYaml({ server_name: 'down.example', upstream: `http://127.0.0.1:${down}` }),
    'up.yaml': vhostYaml({ server_name: 'up.example', upstream: site.url, ...noArchive }),
  });
  for (let i = 0; i < 3; i++) {
    const r = await get(proxy.url, '/', 'down.example');
    t.equal(r.status, 502);
    t.equal(r.body.toString(), '502 Bad Gateway: the content server could not be reached or failed before answering\n');
  }
  const entry = logs.find((e) => e.type === 'request' && e.status === 502);
  t.match(entry, { level: 'warn', error: /ECONNREFUSED/, capture: 'no: no-response' }, 'the log says why');
  const ok = await get(proxy.url, '/', 'up.example');
  t.equal(ok.status, 200);
  t.equal(ok.body.toString(), 'up');
});

t.test('content server silent past the timeout: 504', async (t) => {
  const site = await startUpstream(t, () => {
    /* never answers */
  });
  const { proxy } = await startTestProxy(
    t,
    { 'a.yaml': vhostYaml({ server_name: 'a.example', upstream: site.url, ...noArchive }) },
    { upstreamTimeoutMs: 200 },
  );
  const r = await get(proxy.url, '/', 'a.example');
  t.equal(r.status, 504);
  t.equal(r.body.toString(), '504 Gateway Timeout: the content server did not answer in time\n');
});

t.test('WebSocket upgrades pass through both ways, and are not captured', async (t) => {
  const site = await startUpstream(t, (_req, res) => res.end('plain'));
  site.server.on('upgrade', (req: http.IncomingMessage, socket: net.Socket) => {
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nX-Seen-Forwarded-For: ${req.headers['x-forwarded-for']}\r\n\r\n`,
    );
    socket.on('data', (d: Buffer) => socket.write(Buffer.concat([Buffer.from('echo:'), d])));
    socket.on('end', () => socket.end());
    socket.on('error', () => {});
  });
  const archive = await startFakeArchive(t);
  const { proxy, logs } = await startTestProxy(t, { 'a.yaml': vhostYaml({ server_name: 'a.example', upstream: site.url, ArchivePort: archive.port }) });
  const req = http.request({
    host: '127.0.0.1',
    port: proxy.address.port,
    path: '/chat',
    headers: { Host: 'a.example', Connection: 'Upgrade', Upgrade: 'websocket' },
    agent: false,
  });
  req.end();
  const [res, socket] = (await once(req, 'upgrade')) as [http.IncomingMessage, net.Socket];
  t.equal(res.statusCode, 101, 'the client gets 101 Switching Protocols');
  t.equal(res.headers['x-seen-forwarded-for'], '127.0.0.1', 'the content server got X-Forwarded-For');
  socket.write('hello');
  const [echo] = (await once(socket, 'data')) as [Buffer];
  t.equal(echo.toString(), 'echo:hello', 'bytes pass both ways');
  const logged = once(proxy.events, 'request');
  socket.destroy();
  const [entry] = (await logged) as [Record<string, unknown>];
  t.match(entry, { status: 101, vhost: 'a.example', upgrade: 'websocket', capture: 'no: websocket' }, 'one log line for the upgraded connection');
  t.equal(archive.puts.length, 0, 'nothing sent to the archive');
  t.ok(logs.some((e) => e.type === 'request' && e.upgrade === 'websocket'));
});

t.test('a client too slow to send its request gets 408; the proxy keeps serving', async (t) => {
  const site = await startUpstream(t, (_req, res) => res.end('ok'));
  const { proxy } = await startTestProxy(t, { 'a.yaml': vhostYaml({ server_name: 'a.example', upstream: site.url, ...noArchive }) }, { requestTimeoutMs: 300 });
  const socket = net.connect(proxy.address.port, '127.0.0.1');
  await once(socket, 'connect');
  socket.write('GET / HTTP/1.1\r\nHost: a.example\r\n'); // and never the blank line
  let answer = '';
  socket.on('data', (d: Buffer) => (answer += d.toString()));
  await once(socket, 'close');
  t.match(answer, /^HTTP\/1\.1 408 Request Timeout\r\n[\s\S]*\r\n\r\n408 Request Timeout: the request did not arrive in time\n$/, '408 with a one-line body');
  t.equal(site.seen.length, 0, 'nothing reached the content server');
  t.equal((await get(proxy.url, '/', 'a.example')).body.toString(), 'ok', 'the proxy keeps serving');
});

t.test('TLS listener: HTTPS to the client, X-Forwarded-Proto https upstream and in the capture, https URI-R', async (t) => {
  const dir = await tempDir(t);
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  await execFileP('openssl', [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    key,
    '-out',
    cert,
    '-days',
    '1',
    '-subj',
    '/CN=localhost',
    '-addext',
    'subjectAltName=DNS:localhost,IP:127.0.0.1',
  ]);
  const site = await startUpstream(t, (req, res) => {
    res.setHeader('Date', 'Tue, 20 Mar 2001 20:35:00 GMT');
    res.end(`proto ${req.headers['x-forwarded-proto']}`);
  });
  const archive = await startFakeArchive(t);
  const { proxy } = await startTestProxy(
    t,
    { 'a.yaml': vhostYaml({ server_name: 'localhost', upstream: site.url, ArchivePort: archive.port }) },
    {},
    { tls: { cert, key } },
  );
  t.match(proxy.url, /^https:\/\/127\.0\.0\.1:\d+$/);
  const captured = once(proxy.events, 'capture');
  const ca = await readFile(cert);
  const r = await new Promise<{ status: number; body: string; link: string }>((resolve, reject) => {
    const req = https.request(
      { host: '127.0.0.1', port: proxy.address.port, path: '/secure', servername: 'localhost', ca, headers: { Host: 'localhost' }, agent: false },
      (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body, link: String(res.headers.link) }));
      },
    );
    req.on('error', reject);
    req.end();
  });
  t.equal(r.status, 200);
  t.equal(r.body, 'proto https', 'the content server is told the client used https');
  t.equal(r.link, `<http://127.0.0.1:${archive.port}/tg/https://localhost/secure>; rel="timegate"`, 'the URI-R is https://');
  const [o] = (await captured) as [CaptureOutcome];
  t.match(o, { outcome: 'stored', uriR: 'https://localhost/secure' });
  t.match(
    archive.puts[0].body.toString('latin1'),
    /^GET \/secure HTTP\/1\.1\r\nHost: localhost\r\nConnection: close\r\nX-Forwarded-Proto: https\r\n\r\n/,
    'the capture says https (X-Forwarded-Proto)',
  );
});

t.test('/metrics on the admin port (Prometheus text)', async (t) => {
  const site = await startUpstream(t, (_req, res) => res.end('ok'));
  const archive = await startFakeArchive(t);
  const { proxy } = await startTestProxy(
    t,
    { 'a.yaml': vhostYaml({ server_name: 'a.example', upstream: site.url, ArchivePort: archive.port }) },
    {},
    { adminListen: { host: '127.0.0.1', port: 0 } },
  );
  t.match(proxy.adminUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
  const captured = once(proxy.events, 'capture');
  await get(proxy.url, '/', 'a.example');
  await captured;
  await get(proxy.url, '/', 'nobody.example');
  const m = await get(proxy.adminUrl!, '/metrics', 'admin');
  t.equal(m.status, 200);
  t.match(m.headers['content-type'], /^text\/plain; version=0\.0\.4/);
  const text = m.body.toString();
  for (const line of [
    'capture_proxy_requests_total{vhost="a.example",status="200"} 1',
    'capture_proxy_requests_total{vhost="-",status="421"} 1',
    'capture_proxy_captures_sent_total{via="live"} 1',
    'capture_proxy_captures_sent_total{via="spool"} 0',
    'capture_proxy_captures_spooled_total 0',
    'capture_proxy_put_failures_total{via="live"} 0',
    'capture_proxy_spool_depth 0',
    'capture_proxy_reloads_total{result="ok"} 0',
  ]) {
    t.ok(text.split('\n').includes(line), line);
  }
  t.match(text, /^process_resident_memory_bytes \d+/m, 'process metrics too');
  t.equal((await get(proxy.adminUrl!, '/healthz', 'admin')).body.toString(), '200 ok\n');
  t.equal((await get(proxy.adminUrl!, '/nothing', 'admin')).status, 404);
});
