/**
 * The client of conditional PUTs (proxy/capture/conditional-client.ts)
 * against small TCP servers that answer exactly as each test needs: the
 * exchange (100 Continue, then the body; a 412 before it, then the last
 * chunk), the framings of an answer (Content-Length, chunked, to the
 * close), when a connection is kept and when not, the bound on
 * connections, timeouts, cutting a PUT, a connection the archive drops as
 * it is reused, and answers that are not HTTP.
 */
import net from 'node:net';
import t, { type Test } from 'tap';
import { ArchiveConnections, type ConditionalRequest } from '../../proxy/capture/conditional-client.js';
import { listen, waitFor } from './helpers.js';

/** What a test's server does on a request's head (`body` undefined) and on its whole body (`null`: ended empty). */
type Script = (socket: net.Socket, request: number, body?: string | null) => void;

/** A TCP server reading chunked PUTs and answering as `script` says; counts connections and keeps the heads. */
async function server(t: Test, script: Script) {
  const seen = { connections: 0, open: 0, mostOpen: 0, requests: 0, heads: [] as string[], bodies: [] as (string | null)[] };
  const srv = net.createServer((socket) => {
    seen.connections++;
    seen.mostOpen = Math.max(seen.mostOpen, ++seen.open);
    socket.on('close', () => seen.open--);
    socket.on('error', () => {});
    let buf = '';
    let inBody = false;
    let n = 0;
    socket.on('data', (d: Buffer) => {
      buf += d.toString('latin1');
      for (;;) {
        if (!inBody) {
          const end = buf.indexOf('\r\n\r\n');
          if (end < 0) return;
          seen.heads.push(buf.slice(0, end));
          buf = buf.slice(end + 4);
          inBody = true;
          n = ++seen.requests;
          script(socket, n);
          continue;
        }
        const last = buf.indexOf('0\r\n\r\n');
        if (last < 0) return;
        const chunk = buf.slice(0, last);
        buf = buf.slice(last + 5);
        inBody = false;
        const body = chunk === '' ? null : chunk.slice(chunk.indexOf('\r\n') + 2, -2);
        seen.bodies.push(body);
        script(socket, n, body);
      }
    });
  });
  const port = await listen(t, srv);
  return { port, seen };
}

const request = (port: number, over: Partial<ConditionalRequest> = {}): ConditionalRequest => ({
  target: { host: '127.0.0.1', port, path: '/put/http://www.example.org/' },
  headers: [['If-None-Match', '"tag"']],
  body: [Buffer.from('record '), Buffer.from('bytes')],
  timeoutMs: 5000,
  continueWaitMs: 5000,
  ...over,
});

function client(t: Test, max = 4): ArchiveConnections {
  const c = new ArchiveConnections(max);
  t.teardown(() => c.destroy());
  return c;
}

const CONTINUE = 'HTTP/1.1 100 Continue\r\n\r\n';

t.test('100 Continue, the body as one chunk, a chunked 201; then a 412 before the body, on the same connection', async (t) => {
  const { port, seen } = await server(t, (s, n, body) => {
    if (n === 1 && body === undefined) s.write(CONTINUE);
    else if (n === 1) s.write('HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nstor\r\n3;x=1\r\ned\n\r\n0\r\nX-Trailer: 1\r\n\r\n');
    else if (body === undefined) s.write('HTTP/1.1 412 Precondition Failed\r\nContent-Length: 10\r\nKeep-Alive: timeout=5\r\n\r\nunchanged\n');
  });
  const c = client(t);
  t.same(await c.put(request(port)).answer, { status: 201, firstLine: 'stored', bodySent: true }, 'a chunked answer, read whole');
  t.same(await c.put(request(port)).answer, { status: 412, firstLine: 'unchanged', bodySent: true }, '412, and the request ended');
  await waitFor('the last chunk of the second request', () => seen.bodies.length === 2);
  t.same(seen.bodies, ['record bytes', null], 'the body once, as one chunk; the second request ended with its empty last chunk');
  t.equal(seen.connections, 1, 'both on one connection');
  t.match(
    seen.heads[0],
    /^PUT \/put\/http:\/\/www\.example\.org\/ HTTP\/1\.1\r\nHost: 127\.0\.0\.1:\d+\r\nIf-None-Match: "tag"\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue$/,
  );
});

t.test('an early answer other than 412: the body is not sent and the connection is not used again', async (t) => {
  const { port, seen } = await server(t, (s, n, body) => {
    if (n === 1) s.write('HTTP/1.1 401 Unauthorized\r\nContent-Length: 3\r\n\r\nno\n');
    else if (body === undefined) s.write('HTTP/1.1 412 Precondition Failed\r\nContent-Length: 0\r\n\r\n');
  });
  const c = client(t);
  t.same(await c.put(request(port)).answer, { status: 401, firstLine: 'no', bodySent: false });
  t.same(await c.put(request(port)).answer, { status: 412, firstLine: '', bodySent: true });
  t.equal(seen.connections, 2, 'the second PUT on a new connection');
  await waitFor('the last chunk of the second request', () => seen.bodies.length === 1);
  t.same(seen.bodies, [null], 'no body for the first, none but the last chunk for the second');
});

t.test('an HTTP/1.0 answer without a length is read to the close; Connection: close is honoured', async (t) => {
  const { port, seen } = await server(t, (s, n, body) => {
    if (body === undefined) return void s.write(CONTINUE);
    if (n === 1) s.end('HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nclose-delimited\n');
    else s.write('HTTP/1.1 201 Created\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n');
  });
  const c = client(t);
  t.same(await c.put(request(port)).answer, { status: 200, firstLine: 'close-delimited', bodySent: true });
  t.same(await c.put(request(port)).answer, { status: 201, firstLine: 'ok', bodySent: true });
  t.same(await c.put(request(port)).answer, { status: 201, firstLine: 'ok', bodySent: true });
  t.equal(seen.connections, 3, 'a new connection after each');
});

t.test('no 100 Continue and no answer: the body goes after continueWaitMs', async (t) => {
  const { port } = await server(t, (s, _n, body) => {
    if (body !== undefined) s.write('HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n');
  });
  const started = performance.now();
  t.same(await client(t).put(request(port, { continueWaitMs: 100 })).answer, { status: 201, firstLine: '', bodySent: true });
  t.ok(performance.now() - started >= 95, 'after the wait');
});

t.test('at most maxPerArchive connections; PUTs beyond wait for one', async (t) => {
  const { port, seen } = await server(t, (s, _n, body) => {
    if (body === undefined) setTimeout(() => s.write('HTTP/1.1 412 Precondition Failed\r\nContent-Length: 0\r\n\r\n'), 20);
  });
  const c = client(t, 2);
  const answers = await Promise.all(Array.from({ length: 7 }, () => c.put(request(port)).answer));
  t.ok(
    answers.every((a) => 'status' in a && a.status === 412),
    'all 7 answered',
  );
  t.equal(seen.mostOpen, 2, 'never more than 2 connections open');
  t.equal(seen.connections, 2);
});

t.test('a silent archive: the PUT fails after timeoutMs; a cut PUT fails at once and closes its connection', async (t) => {
  const { port, seen } = await server(t, () => {});
  const c = client(t);
  t.match(await c.put(request(port, { timeoutMs: 100 })).answer, { error: /sent nothing for 100 ms/ });
  const put = c.put(request(port));
  await new Promise<void>((resolve) => setImmediate(resolve));
  put.cancel('the client went away');
  t.same(await put.answer, { error: 'the client went away' });
  t.equal(seen.connections, 2);
});

t.test('a reused connection the archive drops: sent once more on a new one', async (t) => {
  const { port, seen } = await server(t, (s, n, body) => {
    if (n === 1 && body === undefined) s.write('HTTP/1.1 412 Precondition Failed\r\nContent-Length: 0\r\n\r\n');
    else if (n === 2) s.destroy();
    else if (body === undefined) s.write('HTTP/1.1 412 Precondition Failed\r\nContent-Length: 0\r\n\r\n');
  });
  const c = client(t);
  t.match(await c.put(request(port)).answer, { status: 412 });
  t.match(await c.put(request(port)).answer, { status: 412 }, 'answered on the second try');
  t.equal(seen.connections, 2);
  t.equal(seen.requests, 3);
});

t.test('a connection refused, an answer that is not HTTP, a target that cannot be sent', async (t) => {
  const refused = await new Promise<number>((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
  const c = client(t);
  t.match(await c.put(request(refused)).answer, { error: /ECONNREFUSED/ });
  const { port } = await server(t, (s) => s.write('garbage\r\n\r\n'));
  t.match(await c.put(request(port)).answer, { error: /not HTTP\/1\.1: status line "garbage"/ });
  t.throws(() => c.put(request(port, { target: { host: '127.0.0.1', port, path: '/put/a b' } })), TypeError);
});

t.test('Keep-Alive: timeout=1: an archive that keeps idle connections a second or less gets a new one each time', async (t) => {
  const { port, seen } = await server(t, (s, _n, body) => {
    if (body === undefined) s.write('HTTP/1.1 412 Precondition Failed\r\nContent-Length: 0\r\nKeep-Alive: timeout=1\r\n\r\n');
  });
  const c = client(t);
  for (let i = 0; i < 3; i++) t.match(await c.put(request(port)).answer, { status: 412 });
  t.equal(seen.connections, 3);
});

t.test('a PUT that finds every connection busy for timeoutMs fails; the one holding it goes on', async (t) => {
  const { port } = await server(t, () => {});
  const c = client(t, 1);
  const holding = c.put(request(port));
  t.match(await c.put(request(port, { timeoutMs: 100 })).answer, { error: /no connection to the archive came free within 100 ms/ });
  holding.cancel('done');
  t.same(await holding.answer, { error: 'done' });
});
