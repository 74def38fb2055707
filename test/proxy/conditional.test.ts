/**
 * Cheaper captures (issue 14) against the real archive: kept-alive
 * connections to the archive, conditional captures (a page that has not
 * changed is answered 412 without its body being sent), and the local
 * unchanged cache. What a user of the archive sees must not change:
 * nothing lost, nothing stored twice — with two proxies writing the same
 * URI-R in turn, with the archive restarting in the middle, with the
 * cache on.
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import t, { type Test } from 'tap';
import type { CaptureOutcome } from '../../proxy/capture/capture.js';
import type { RunningProxy } from '../../proxy/server.js';
import { startArchive, type TestArchive, TWO_ARCHIVES } from '../helpers/archive.js';
import { freePort, get, listen, startTestProxy, startUpstream, tempDir, vhostYaml, waitFor } from './helpers.js';

const PAGES: Record<string, string> = { A: '<html><body>version A</body></html>', B: '<html><body>version B</body></html>' };
const DIGEST = Object.fromEntries(Object.entries(PAGES).map(([k, v]) => ['sha256:' + createHash('sha256').update(v).digest('hex'), k]));

/**
 * A content server whose one page is `state.page` (A or B), each answer
 * dated one second after the one before (so that every capture has its
 * own Memento-Datetime, in the past).
 */
async function site(t: Test) {
  const state = { page: 'A', n: 0 };
  const start = Math.floor(Date.now() / 1000) - 600;
  const upstream = await startUpstream(t, (_req, res) => {
    const date = new Date((start + state.n++) * 1000).toUTCString();
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', Date: date });
    res.end(PAGES[state.page]);
  });
  return { upstream, state };
}

/**
 * A proxy in front of `upstream` whose vhost `localhost` captures into the archive on `archivePort`
 * (`questions: false`: one conditional PUT per capture, no POST of questions first).
 */
async function proxyFor(t: Test, upstream: string, archivePort: number, settings: Record<string, string> = {}, questions = true) {
  const { proxy, logs } = await startTestProxy(
    t,
    { 'a.yaml': vhostYaml({ server_name: 'localhost', upstream, ArchivePort: archivePort, ...settings }) },
    { spool: { retryMinMs: 50, retryMaxMs: 100 }, captureQuestions: questions },
  );
  return { proxy, logs };
}

/** GET / through `proxy` and its capture's outcome. */
async function visit(proxy: RunningProxy): Promise<CaptureOutcome> {
  const outcome = once(proxy.events, 'capture').then(([o]) => o as CaptureOutcome);
  const r = await get(proxy.url, '/', 'localhost');
  if (r.status !== 200) throw new Error(`GET / answered ${r.status}`);
  return outcome;
}

/** The mementos of http://localhost/, oldest first, as the pages they hold (A or B). */
async function history(a: TestArchive): Promise<string[]> {
  const rows: { digest: string }[] = [];
  for (const id of ['2025', 'current']) rows.push(...(await a.store.index.page(id, 'localhost)/', -Infinity, 1000)));
  return rows.map((r) => DIGEST[r.digest] ?? '?');
}

/** Counts the connections the archive accepts, the PUTs and the POSTs of questions it gets. */
function countAt(a: TestArchive) {
  const seen = { connections: 0, puts: 0, posts: 0 };
  a.app.server.on('connection', () => seen.connections++);
  a.app.server.on('request', (req: http.IncomingMessage) => {
    if (req.method === 'PUT') seen.puts++;
    if (req.method === 'POST') seen.posts++;
  });
  return seen;
}

t.test('a page that does not change: one memento, every later capture 412 with no body sent, on one kept-alive connection', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const seen = countAt(a);
  const { upstream } = await site(t);
  const { proxy, logs } = await proxyFor(t, upstream.url, a.port, {}, false);
  t.match(await visit(proxy), { outcome: 'stored', live: 'stored', archiveStatus: 201 }, 'the first capture is stored');
  for (let i = 0; i < 19; i++) {
    const o = await visit(proxy);
    if (o.outcome !== 'unchanged') t.fail(`capture ${i + 2}: ${JSON.stringify(o)}`);
  }
  t.pass('the next 19 captures: unchanged');
  t.same(await history(a), ['A'], 'one memento');
  t.equal(seen.puts, 20, 'each capture was asked about (one PUT each)');
  t.equal(seen.connections, 1, 'all 20 PUTs on one connection');
  t.equal(await proxy.metrics.value('capture_proxy_captures_unchanged_total', { via: 'archive' }), 19, 'counted as unchanged');
  t.equal(await proxy.metrics.value('capture_proxy_captures_sent_total', { via: 'live' }), 1, 'one sent');
  t.equal(await proxy.metrics.value('capture_proxy_captures_dropped_total'), 0, 'none lost');
  await waitFor('the last request line', () => logs.filter((e) => e.type === 'request').length === 20);
  t.equal(logs.filter((e) => e.type === 'request' && e.capture === 'unchanged').length, 19, 'the request log says capture: "unchanged"');
  t.equal(a.store.stats.written, 1, 'the archive wrote one capture');
});

t.test('with questions (the default): a page that does not change is asked about in a POST, never PUT again', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const seen = countAt(a);
  const { upstream } = await site(t);
  const { proxy, logs } = await proxyFor(t, upstream.url, a.port);
  t.match(await visit(proxy), { outcome: 'stored', live: 'stored', archiveStatus: 201 }, 'the first capture: asked (new), then stored');
  for (let i = 0; i < 9; i++) {
    const o = await visit(proxy);
    if (o.outcome !== 'unchanged' || o.live !== 'unchanged') t.fail(`capture ${i + 2}: ${JSON.stringify(o)}`);
  }
  t.pass('the next 9 captures: unchanged');
  t.same(await history(a), ['A'], 'one memento');
  t.equal(seen.puts, 1, 'one PUT: the first capture');
  t.equal(seen.posts, 10, 'every capture asked about (one at a time here: each its own POST)');
  t.equal(seen.connections, 1, 'all on one kept-alive connection');
  t.equal(await proxy.metrics.value('capture_proxy_captures_unchanged_total', { via: 'archive' }), 9, 'counted as unchanged');
  await waitFor('the last request line', () => logs.filter((e) => e.type === 'request').length === 10);
  t.equal(logs.filter((e) => e.type === 'request' && e.capture === 'unchanged').length, 9, 'the request log says capture: "unchanged"');
  t.equal(a.store.stats.written, 1, 'the archive wrote one capture');
});

t.test('an archive that does not know the POST of questions (404): every capture is PUT, and it is not asked again', async (t) => {
  const methods: string[] = [];
  const archive = http.createServer((req, res) => {
    methods.push(req.method!);
    req.resume();
    req.on('end', () => {
      res.writeHead(req.method === 'PUT' ? 201 : 404, { 'Content-Type': 'text/plain', 'Content-Length': 3 });
      res.end('ok\n');
    });
  });
  const port = await listen(t, archive);
  const { upstream } = await site(t);
  const { proxy } = await proxyFor(t, upstream.url, port);
  for (let i = 0; i < 3; i++) t.match(await visit(proxy), { outcome: 'stored', live: 'stored', archiveStatus: 201 }, `capture ${i + 1} stored`);
  t.same(methods, ['POST', 'PUT', 'PUT', 'PUT'], 'asked once; then PUT without asking');
  t.equal(proxy.spool.depth, 0, 'nothing spooled');
});

for (const questions of [true, false]) {
  const how = questions ? 'asking first (the default)' : 'one conditional PUT each';
  t.test(`two proxies in front of one site, each capturing in turn: A → B → A is three mementos, nothing stored twice (${how})`, async (t) => {
    const a = await startArchive();
    t.teardown(() => a.close());
    const { upstream, state } = await site(t);
    const one = (await proxyFor(t, upstream.url, a.port, {}, questions)).proxy;
    const two = (await proxyFor(t, upstream.url, a.port, {}, questions)).proxy;
    const steps: [RunningProxy, string, CaptureOutcome['outcome']][] = [
      [one, 'A', 'stored'],
      [two, 'A', 'unchanged'],
      [two, 'B', 'stored'],
      [one, 'B', 'unchanged'],
      [one, 'A', 'stored'],
      [two, 'A', 'unchanged'],
      [two, 'B', 'stored'],
    ];
    for (const [i, [proxy, page, want]] of steps.entries()) {
      state.page = page;
      const o = await visit(proxy);
      t.equal(o.outcome, want, `step ${i + 1}: proxy ${proxy === one ? 1 : 2} sees ${page}: ${want}`);
    }
    t.same(await history(a), ['A', 'B', 'A', 'B'], 'every change is a memento, no page twice in a row');
  });

  t.test(`the archive restarts in the middle: nothing lost, nothing stored twice (${how})`, async (t) => {
    const port = await freePort();
    const dataDir = path.join(await tempDir(t, 'archive-restart-'), 'data');
    const yaml = `listen: 127.0.0.1:${port}\n` + TWO_ARCHIVES;
    let a = await startArchive(yaml, { dataDir });
    t.teardown(() => a.close());
    const { upstream, state } = await site(t);
    const { proxy } = await proxyFor(t, upstream.url, port, {}, questions);

    t.equal((await visit(proxy)).outcome, 'stored', 'A stored');
    t.equal((await visit(proxy)).outcome, 'unchanged', 'A again: unchanged (the connection is kept open)');
    await a.close();
    t.match(await visit(proxy), { outcome: 'spooled', live: 'failed' }, 'archive gone: A is spooled');
    state.page = 'B';
    t.equal((await visit(proxy)).outcome, 'spooled', 'B is spooled');
    a = await startArchive(yaml, { dataDir });
    await waitFor('the spool sent', () => proxy.spool.depth === 0);
    t.equal((await visit(proxy)).outcome, 'unchanged', 'B again, live: unchanged (the re-sent B is there)');
    state.page = 'A';
    t.equal((await visit(proxy)).outcome, 'stored', 'A: stored');
    t.equal((await visit(proxy)).outcome, 'unchanged', 'A again: unchanged');
    t.same(await history(a), ['A', 'B', 'A'], 'A, B, A: the re-sent A was a duplicate, B stored once');
    t.equal(await proxy.metrics.value('capture_proxy_captures_dropped_total'), 0, 'none lost');
    t.equal(await proxy.metrics.value('capture_proxy_captures_sent_total', { via: 'spool' }), 2, 'both spooled captures re-sent');
  });
}

t.test('ArchiveUnchangedCache On: no PUT for what the archive acknowledged last; a capture it did not acknowledge clears it', async (t) => {
  const port = await freePort();
  const dataDir = path.join(await tempDir(t, 'archive-cache-'), 'data');
  const yaml = `listen: 127.0.0.1:${port}\n` + TWO_ARCHIVES;
  let a = await startArchive(yaml, { dataDir });
  t.teardown(() => a.close());
  let seen = countAt(a);
  const { upstream, state } = await site(t);
  const { proxy } = await proxyFor(t, upstream.url, port, { ArchiveUnchangedCache: 'On' });

  t.equal((await visit(proxy)).outcome, 'stored', 'A stored');
  t.match(await visit(proxy), { outcome: 'unchanged', live: 'cached' }, 'A again: unchanged, from the cache');
  t.equal(seen.puts, 1, 'no PUT for it');
  state.page = 'B';
  t.equal((await visit(proxy)).outcome, 'stored', 'B stored');
  state.page = 'A';
  t.equal((await visit(proxy)).outcome, 'stored', 'A stored again: the cache only remembers the last acknowledged');
  t.equal(seen.puts, 3);

  await a.close();
  state.page = 'B';
  t.equal((await visit(proxy)).outcome, 'spooled', 'B while the archive is away: spooled (not acknowledged)');
  a = await startArchive(yaml, { dataDir });
  seen = countAt(a);
  await waitFor('the spool sent', () => proxy.spool.depth === 0);
  state.page = 'A';
  t.match(await visit(proxy), { outcome: 'stored', live: 'stored' }, 'A after it: asked, not taken from the cache, and stored');
  t.equal(seen.puts, 2, 'the re-send and the live PUT');
  t.same(await history(a), ['A', 'B', 'A', 'B', 'A'], 'every change a memento');
  t.equal(await proxy.metrics.value('capture_proxy_captures_unchanged_total', { via: 'cache' }), 1);
});

t.test('a kept-alive connection the archive drops as it is reused: the conditional PUT is sent once more on a new one', async (t) => {
  // An archive that serves one request per connection and then, without saying so, drops the connection when the next comes.
  const served = new WeakSet<net.Socket>();
  let connections = 0;
  const archive = http.createServer((req, res) => {
    if (served.has(req.socket)) return void req.socket.destroy();
    served.add(req.socket);
    req.resume();
    req.on('end', () => {
      res.writeHead(201, { 'Content-Type': 'text/plain' });
      res.end('stored\n');
    });
  });
  archive.on('connection', () => connections++);
  const port = await listen(t, archive);
  const { upstream } = await site(t);
  const { proxy } = await proxyFor(t, upstream.url, port, {}, false);
  t.equal((await visit(proxy)).outcome, 'stored', 'first capture, first connection');
  t.match(await visit(proxy), { outcome: 'stored', live: 'stored' }, 'second capture: its reused connection was dropped; sent again, stored');
  t.equal(connections, 2, 'on a second connection');
  t.equal(proxy.spool.depth, 0, 'nothing spooled');
});

t.test('an archive that ignores Expect (never answers 100 Continue): the body goes after a second, and is stored', async (t) => {
  // A bare TCP server speaking just enough HTTP/1.1: it waits for the whole chunked body, then answers 201.
  let heads = '';
  const archive = net.createServer((socket) => {
    let text = '';
    socket.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      if (!text.includes('\r\n0\r\n\r\n')) return;
      heads += text.slice(0, text.indexOf('\r\n\r\n'));
      text = '';
      socket.write('HTTP/1.1 201 Created\r\nContent-Type: text/plain\r\nContent-Length: 7\r\n\r\nstored\n');
    });
  });
  const port = await listen(t, archive);
  const { upstream } = await site(t);
  const { proxy } = await proxyFor(t, upstream.url, port, {}, false);
  const startedAt = performance.now();
  t.match(await visit(proxy), { outcome: 'stored', live: 'stored', archiveStatus: 201 });
  const waited = performance.now() - startedAt;
  t.ok(waited >= 900, `the body was sent after about a second without an answer (${Math.round(waited)} ms)`);
  t.match(heads, /\r\nexpect: 100-continue(?:\r\n|$)/i, 'it was a conditional PUT');
});

t.test('a held body that arrives in several pieces: its digest is the archive’s, so the next capture is unchanged', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const seen = countAt(a);
  const pieces = ['<html><body>', 'x'.repeat(3000), '</body></html>'];
  const start = Math.floor(Date.now() / 1000) - 600;
  let n = 0;
  const upstream = await startUpstream(t, (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html', Date: new Date((start + n++) * 1000).toUTCString() });
    // Each piece its own chunk on the wire, a few ms apart (so that the proxy reads them as separate chunks).
    let i = 0;
    const next = () => (i < pieces.length ? (res.write(pieces[i++]), setTimeout(next, 10)) : res.end());
    next();
  });
  const { proxy } = await proxyFor(t, upstream.url, a.port);
  t.match(await visit(proxy), { outcome: 'stored', live: 'stored' }, 'the first capture is stored');
  t.match(await visit(proxy), { outcome: 'unchanged', live: 'unchanged' }, 'the second is unchanged: the same digest on both sides');
  t.equal(seen.puts, 1, 'one PUT');
  const [row] = await a.store.index.page('current', 'localhost)/', -Infinity, 10);
  t.equal(row.digest, 'sha256:' + createHash('sha256').update(pieces.join('')).digest('hex'), 'the digest of the whole body');
});
