/**
 * What arrives at the archive: one plain PUT per captured exchange, on a
 * kept-alive connection, at ArchivePath + URI-R, whose body is the
 * request as received, the response head without hop-by-hop headers, and
 * the body bytes exactly as the client got them; a small body held and
 * sent whole with Content-Length, a large one streamed (chunked) as it
 * arrives. What is not captured, and that the client never suffers for
 * the archive.
 */

import { once } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import { gzipSync } from 'node:zlib';
import t, { type Test } from 'tap';
import type { CaptureOutcome } from '../../proxy/capture/capture.js';
import type { RunningProxy } from '../../proxy/server.js';
import { freePort, get, listen, type ReceivedPut, rawRequest, startFakeArchive, startTestProxy, startUpstream, vhostYaml } from './helpers.js';

const DATE = 'Tue, 20 Mar 2001 20:35:00 GMT';
const GZIPPED = gzipSync(Buffer.from('<html><body>' + 'compressed '.repeat(500) + '</body></html>'));

/** The content server of these tests; headers in a fixed order, Date fixed, bodies in several chunks. */
function site(req: http.IncomingMessage, res: http.ServerResponse) {
  res.sendDate = false;
  const [p] = (req.url ?? '/').split('?');
  switch (p) {
    case '/chunked':
      res.writeHead(200, ['Date', DATE, 'content-type', 'text/html', 'X-Dup', '1', 'X-Dup', '2']);
      res.write('<p>hello, ');
      res.write('world</p>');
      res.end();
      return;
    case '/gzip':
      res.writeHead(200, 'Fine', ['Date', DATE, 'Content-Type', 'text/html', 'Content-Encoding', 'gzip', 'Vary', 'Accept-Encoding']);
      res.write(GZIPPED.subarray(0, 100));
      res.write(GZIPPED.subarray(100));
      res.end();
      return;
    case '/length':
      res.writeHead(200, ['Date', DATE, 'Content-Length', '5']);
      res.end('fixed');
      return;
    case '/redirect':
      res.writeHead(301, ['Date', DATE, 'Location', '/chunked']);
      res.end();
      return;
    case '/404':
      res.writeHead(404, ['Date', DATE]);
      res.end('not here');
      return;
    case '/206':
      res.writeHead(206, ['Date', DATE, 'Content-Range', 'bytes 0-1/10']);
      res.end('ab');
      return;
    case '/304':
      res.writeHead(304, ['Date', DATE]);
      res.end();
      return;
    default:
      res.writeHead(200, ['Date', DATE, 'Content-Type', 'text/plain']);
      res.end(`page ${req.method} ${req.url}`);
  }
}

/** The next `'capture'` event of the proxy. */
function nextCapture(proxy: RunningProxy): Promise<CaptureOutcome> {
  return once(proxy.events, 'capture').then(([o]) => o as CaptureOutcome);
}

/** The next PUT the fake archive finishes receiving. */
function nextPut(archive: { events: NodeJS.EventEmitter }): Promise<ReceivedPut> {
  return once(archive.events, 'put').then(([p]) => p as ReceivedPut);
}

async function setup(t: Test, settings: Record<string, string | number | boolean> = {}) {
  const upstream = await startUpstream(t, site);
  const archive = await startFakeArchive(t);
  const { proxy, logs } = await startTestProxy(t, {
    'a.yaml': vhostYaml({ server_name: 'localhost', upstream: upstream.url, ArchivePort: archive.port, ...settings }),
  });
  const host = `localhost:${proxy.address.port}`;
  return { upstream, archive, proxy, logs, host };
}

t.test('a captured GET: one plain PUT with Content-Length and the exact capture record', async (t) => {
  const { archive, proxy, host } = await setup(t, { EnableIP: 'On' });
  const stored = nextCapture(proxy);
  const r = await get(proxy.url, '/chunked?x=1', host, [
    ['User-Agent', 'test/1.0'],
    ['X-Client-IP', '6.6.6.6'],
    ['Accept', '*/*'],
  ]);
  t.equal(r.status, 200);
  t.equal(r.body.toString(), '<p>hello, world</p>');
  t.match(await stored, { outcome: 'stored', archiveStatus: 201, bodyBytes: 19, uriR: `http://${host}/chunked?x=1` });

  t.equal(archive.puts.length, 1, 'one PUT');
  const put = archive.puts[0];
  t.equal(put.method, 'PUT');
  t.equal(put.url, `/put/http://${host}/chunked?x=1`, 'at ArchivePath + URI-R');
  t.equal(put.headers['transfer-encoding'], undefined, 'held whole: not chunked');
  t.equal(put.headers['content-length'], String(put.body.length), 'Content-Length: the whole record');
  t.not(put.headers.connection, 'close', 'on a connection kept open (HTTP/1.1: no Connection: close)');
  t.equal(put.headers.expect, undefined, 'no Expect');
  t.equal(put.headers['if-none-match'], undefined, 'no condition: the archive decides');
  t.equal(put.headers.host, `127.0.0.1:${archive.port}`);
  t.ok(put.complete);
  t.equal(
    put.body.toString('latin1'),
    `GET /chunked?x=1 HTTP/1.1\r\n` +
      `Host: ${host}\r\n` +
      `User-Agent: test/1.0\r\n` +
      `Accept: */*\r\n` +
      `Connection: close\r\n` +
      `X-Client-IP: 127.0.0.1\r\n` +
      `\r\n` +
      `HTTP/1.1 200 OK\r\n` +
      `Date: ${DATE}\r\n` +
      `content-type: text/html\r\n` +
      `X-Dup: 1\r\n` +
      `X-Dup: 2\r\n` +
      `\r\n` +
      `<p>hello, world</p>`,
    "request as received (the client's X-Client-IP replaced by the socket address), response head without Transfer-Encoding/Connection/Keep-Alive, body dechunked",
  );
});

t.test('held captures that wait for a connection to the archive arrive whole: Content-Length, the record in order', async (t) => {
  const upstream = await startUpstream(t, site);
  const archive = await startFakeArchive(t);
  // One connection to the archive: the PUTs of requests made at once wait for it, their records written before a socket is theirs.
  const { proxy } = await startTestProxy(
    t,
    { 'a.yaml': vhostYaml({ server_name: 'localhost', upstream: upstream.url, ArchivePort: archive.port }) },
    {},
    { archiveConnections: 1 },
  );
  const host = `localhost:${proxy.address.port}`;
  const n = 4;
  const outcomes: CaptureOutcome[] = [];
  const done = new Promise<void>((resolve) =>
    proxy.events.on('capture', (o: CaptureOutcome) => {
      if (outcomes.push(o) === n) resolve();
    }),
  );
  const answers = await Promise.all(Array.from({ length: n }, (_, i) => get(proxy.url, `/chunked?n=${i}`, host)));
  for (const r of answers) t.equal(r.body.toString(), '<p>hello, world</p>');
  await done;
  for (const o of outcomes) t.match(o, { outcome: 'stored', archiveStatus: 201, bodyBytes: 19 });
  t.equal(archive.puts.length, n, 'one PUT per capture');
  for (const put of archive.puts) {
    t.ok(put.complete);
    t.equal(put.headers['transfer-encoding'], undefined, 'held whole: not chunked');
    t.equal(put.headers['content-length'], String(put.body.length), 'Content-Length: the whole record');
    const i = /\/chunked\?n=(\d)/.exec(put.url)![1];
    const text = put.body.toString('latin1');
    t.match(text, new RegExp(`^GET /chunked\\?n=${i} HTTP/1\\.1\\r\\n`), 'the request first');
    t.ok(text.endsWith('\r\n\r\n<p>hello, world</p>'), 'the response head, then the body as the client got it');
  }
});

t.test('EnableIP Off: no X-Client-IP, and a spoofed one is dropped', async (t) => {
  const { archive, proxy, host } = await setup(t, { EnableIP: 'Off' });
  const stored = nextCapture(proxy);
  await get(proxy.url, '/length', host, [
    ['X-Client-IP', '6.6.6.6'],
    ['x-forwarded-proto', 'https'],
  ]);
  await stored;
  t.equal(
    archive.puts[0].body.toString('latin1'),
    `GET /length HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\nHTTP/1.1 200 OK\r\nDate: ${DATE}\r\nContent-Length: 5\r\n\r\nfixed`,
    'client-sent X-Client-IP and X-Forwarded-Proto are not in the record; a Content-Length body is stored as is',
  );
});

t.test('gzip: the stored body is the compressed bytes the client got', async (t) => {
  const { archive, proxy, host } = await setup(t);
  const stored = nextCapture(proxy);
  const r = await get(proxy.url, '/gzip', host, [['Accept-Encoding', 'gzip']]);
  await stored;
  t.equal(r.headers['content-encoding'], 'gzip');
  t.ok(r.body.equals(GZIPPED), 'the client got the gzip bytes');
  const body = archive.puts[0].body;
  const head =
    `GET /gzip HTTP/1.1\r\nHost: ${host}\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n` +
    `HTTP/1.1 200 Fine\r\nDate: ${DATE}\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\nVary: Accept-Encoding\r\n\r\n`;
  t.equal(body.subarray(0, head.length).toString('latin1'), head, 'heads, reason phrase kept, Content-Encoding kept');
  t.ok(body.subarray(head.length).equals(r.body), "stored body identical to the client's bytes");
});

t.test('a redirect is captured', async (t) => {
  const { archive, proxy, host } = await setup(t);
  const stored = nextCapture(proxy);
  const r = await get(proxy.url, '/redirect', host);
  t.equal(r.status, 301);
  t.equal((await stored).outcome, 'stored');
  t.match(
    archive.puts[0].body.toString(),
    /^GET \/redirect HTTP\/1\.1\r\n[\s\S]*\r\n\r\nHTTP\/1\.1 301 Moved Permanently\r\nDate: [^\r]+\r\nLocation: \/chunked\r\n\r\n$/,
  );
});

t.test('not captured: 404, 206, 304, HEAD, POST, Accept-Datetime, an excluded path', async (t) => {
  const { archive, proxy, host, logs } = await setup(t, { Excluded: '/private /search' });
  let captures = 0;
  proxy.events.on('capture', () => captures++);
  const cases: [string, string, [string, string][], number, string][] = [
    ['404', '/404', [], 404, 'status'],
    ['206', '/206', [['Range', 'bytes=0-1']], 206, 'status'],
    ['304', '/304', [['If-None-Match', '"x"']], 304, 'status'],
    ['HEAD', '/page', [], 200, 'method'],
    ['POST', '/page', [['Content-Length', '0']], 200, 'method'],
    ['Accept-Datetime', '/page', [['Accept-Datetime', DATE]], 200, 'accept-datetime'],
    ['excluded', '/private/x.html', [], 200, 'excluded'],
    ['excluded query', '/search?q=secret', [], 200, 'excluded'],
  ];
  for (const [what, p, headers, status, reason] of cases) {
    const method = what === 'HEAD' || what === 'POST' ? what : 'GET';
    const r = await get(proxy.url, p, host, headers, method);
    t.equal(r.status, status, `${what}: the client gets ${status}`);
    const entry = logs.filter((e) => e.type === 'request').at(-1);
    t.equal(entry?.capture, `no: ${reason}`, `${what}: not captured (${reason})`);
  }
  // A captured request after them: once it is stored, any PUT of the ones above would have arrived too.
  const stored = nextCapture(proxy);
  await get(proxy.url, '/searchx', host);
  t.equal((await stored).uriR, `http://${host}/searchx`, '/searchx is not under /search');
  t.equal(captures, 1, 'one capture started');
  t.same(
    archive.puts.map((p) => p.url),
    [`/put/http://${host}/searchx`],
    'the archive got only that one',
  );
});

t.test('EnableArchiving Off: nothing goes to the archive, and no TimeGate is announced', async (t) => {
  const { archive, proxy, host, logs } = await setup(t, { EnableArchiving: 'Off' });
  const r = await get(proxy.url, '/chunked', host);
  t.equal(r.status, 200);
  t.equal(r.headers.link, undefined, 'no Link: the vhost is not archived');
  t.equal(logs.find((e) => e.type === 'request')?.capture, 'no: archiving-off');
  t.equal(archive.puts.length, 0);
});

t.test('archive down: the client still gets 200 with the same body; the capture is spooled and logged', async (t) => {
  const downPort = await freePort();
  const upstream = await startUpstream(t, site);
  const { proxy, logs } = await startTestProxy(t, { 'a.yaml': vhostYaml({ server_name: 'localhost', upstream: upstream.url, ArchivePort: downPort }) });
  const host = `localhost:${proxy.address.port}`;
  const done = nextCapture(proxy);
  const r = await get(proxy.url, '/gzip', host);
  t.equal(r.status, 200);
  t.ok(r.body.equals(GZIPPED), 'identical body');
  const outcome = await done;
  t.match(outcome, { outcome: 'spooled', live: 'failed', reason: /ECONNREFUSED/ });
  t.equal(proxy.spool.depth, 1, 'one capture waits in the spool');
  t.ok(
    logs.some((e) => e.level === 'warn' && /spooled/.test(e.msg) && e.uriR === `http://${host}/gzip`),
    'logged',
  );
  const again = await get(proxy.url, '/chunked', host);
  t.equal(again.body.toString(), '<p>hello, world</p>', 'the proxy keeps serving');
});

t.test('an archive slower than the client: the capture is abandoned, the client is not slowed', async (t) => {
  const big = Buffer.alloc(32 * 1024 * 1024, 'x');
  const upstream = await startUpstream(t, (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
    res.end(big);
  });
  // An archive that accepts the connection and never reads.
  const sockets = new Set<net.Socket>();
  const stuck = net.createServer((s) => {
    sockets.add(s);
    s.pause();
  });
  const port = await listen(t, stuck);
  t.teardown(() => {
    for (const s of sockets) s.destroy();
  });
  const { proxy } = await startTestProxy(
    t,
    { 'a.yaml': vhostYaml({ server_name: 'localhost', upstream: upstream.url, ArchivePort: port }) },
    { maxCaptureBufferBytes: 1024 * 1024 },
  );
  const done = nextCapture(proxy);
  const r = await get(proxy.url, '/big', `localhost:${proxy.address.port}`);
  t.equal(r.status, 200);
  t.ok(r.body.equals(big), 'the client got all 32 MiB');
  t.match(await done, { outcome: 'spooled', live: 'overflow' }, 'the live PUT was cut; the whole capture went to the spool');
});

t.test('a body larger than held_max_bytes streams as it arrives, chunked', async (t) => {
  let release!: () => void;
  const upstream = await startUpstream(t, (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/plain', Date: DATE });
    res.write('x'.repeat(2000));
    release = () => res.end('the end');
  });
  t.teardown(() => release?.());
  const archive = await startFakeArchive(t);
  const { proxy } = await startTestProxy(
    t,
    { 'a.yaml': vhostYaml({ server_name: 'localhost', upstream: upstream.url, ArchivePort: archive.port }) },
    {},
    { heldMaxBytes: 1000 },
  );
  const putStarted = once(archive.events, 'start');
  const response = get(proxy.url, '/big', `localhost:${proxy.address.port}`);
  const [started] = (await putStarted) as [http.IncomingMessage];
  t.equal(started.headers['transfer-encoding'], 'chunked', 'past the bound: streamed (chunked) before the response ends');
  const stored = nextCapture(proxy);
  release();
  t.equal((await response).status, 200);
  t.equal((await stored).outcome, 'stored');
  t.equal(archive.puts[0].body.subarray(-2007).toString(), 'x'.repeat(2000) + 'the end', 'the held part, then the rest');
});

t.test('a Content-Length over held_max_bytes: not held, the PUT streams from the first byte', async (t) => {
  let release!: () => void;
  const upstream = await startUpstream(t, (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/plain', Date: DATE, 'Content-Length': '2000' });
    res.write('first bytes;');
    release = () => res.end('y'.repeat(2000 - 'first bytes;'.length));
  });
  t.teardown(() => release?.());
  const archive = await startFakeArchive(t);
  const { proxy } = await startTestProxy(
    t,
    { 'a.yaml': vhostYaml({ server_name: 'localhost', upstream: upstream.url, ArchivePort: archive.port }) },
    {},
    { heldMaxBytes: 1000 },
  );
  const putStarted = once(archive.events, 'start');
  const response = get(proxy.url, '/known', `localhost:${proxy.address.port}`);
  const [started] = (await putStarted) as [http.IncomingMessage];
  t.equal(started.headers['transfer-encoding'], 'chunked', 'streamed, started with 12 of 2000 bytes');
  const stored = nextCapture(proxy);
  release();
  t.equal((await response).status, 200);
  t.equal((await stored).outcome, 'stored');
});

t.test('the client goes away mid-body of a held capture: nothing is sent at all', async (t) => {
  let release!: () => void;
  const upstream = await startUpstream(t, (req, res) => {
    if (req.url === '/ok') return void res.end('ok');
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.write('first part;');
    release = () => res.end('second part');
  });
  t.teardown(() => release?.());
  const archive = await startFakeArchive(t);
  const { proxy } = await startTestProxy(t, { 'a.yaml': vhostYaml({ server_name: 'localhost', upstream: upstream.url, ArchivePort: archive.port }) });
  const outcome = nextCapture(proxy);
  const req = http.request({ host: '127.0.0.1', port: proxy.address.port, path: '/slow', agent: false, headers: { Host: 'localhost' } });
  req.on('error', () => {});
  req.end();
  const [res] = (await once(req, 'response')) as [http.IncomingMessage];
  await once(res, 'data');
  req.destroy();
  t.match(await outcome, { outcome: 'aborted', live: 'skipped', reason: /client closed/ });
  const stored = nextCapture(proxy);
  await get(proxy.url, '/ok', 'localhost');
  t.equal((await stored).outcome, 'stored');
  t.same(
    archive.puts.map((p) => p.url),
    ['/put/http://localhost/ok'],
    'the archive never heard of /slow',
  );
});

t.test('the client goes away mid-body: the PUT is cut, so the archive stores nothing', async (t) => {
  let release!: () => void;
  const upstream = await startUpstream(t, (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.write('first part;');
    release = () => res.end('second part');
  });
  t.teardown(() => release?.());
  const archive = await startFakeArchive(t);
  // A bound below the first part: the PUT streams while the response does.
  const { proxy, logs } = await startTestProxy(
    t,
    { 'a.yaml': vhostYaml({ server_name: 'localhost', upstream: upstream.url, ArchivePort: archive.port }) },
    {},
    { heldMaxBytes: 5 },
  );
  const putStarted = once(archive.events, 'start');
  const putDone = nextPut(archive);
  const outcome = nextCapture(proxy);
  const requestDone = once(proxy.events, 'request');
  const req = http.request({ host: '127.0.0.1', port: proxy.address.port, path: '/slow', agent: false, headers: { Host: 'localhost' } });
  req.on('error', () => {});
  req.end();
  const [res] = (await once(req, 'response')) as [http.IncomingMessage];
  t.equal(res.statusCode, 200);
  await once(res, 'data');
  await putStarted; // the archive has the heads and the first body bytes
  req.destroy();
  const put = await putDone;
  t.equal(put.complete, false, 'the archive saw a cut body');
  t.match(put.body.toString(), /first part;$/);
  t.match(await outcome, { outcome: 'aborted', reason: /client closed/ });
  await requestDone;
  t.ok(
    logs.some((e) => e.type === 'request' && e.aborted === true),
    'the request line says the client went away',
  );
});

t.test('the content server breaks off mid-body: the client connection and the PUT are cut', async (t) => {
  const upstream = await startUpstream(t, (req, res) => {
    if (req.url === '/ok') return void res.end('ok');
    res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': '100' });
    res.write('only ten b', () => res.socket?.destroy());
  });
  const archive = await startFakeArchive(t);
  const { proxy } = await startTestProxy(t, { 'a.yaml': vhostYaml({ server_name: 'localhost', upstream: upstream.url, ArchivePort: archive.port }) });
  const outcome = nextCapture(proxy);
  const clientError = await get(proxy.url, '/x', `localhost:${proxy.address.port}`).then(
    () => 'complete',
    (err: Error) => err.message,
  );
  t.not(clientError, 'complete', `the client sees the response break off (${clientError})`);
  t.match(await outcome, { outcome: 'aborted', reason: /content server broke off/ });
  const stored = nextCapture(proxy);
  const again = await rawRequest(`${proxy.url}/ok`, 'GET', [
    ['Host', 'localhost'],
    ['Connection', 'close'],
  ]);
  t.equal(again.status, 200, 'the proxy keeps serving');
  t.equal((await stored).outcome, 'stored');
  t.same(
    archive.puts.filter((p) => p.complete).map((p) => p.url),
    ['/put/http://localhost/ok'],
    'the archive got a complete PUT for /ok only',
  );
});
