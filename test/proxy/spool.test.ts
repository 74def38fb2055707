/**
 * The durable spool, as a sysadmin relies on it: the archive goes away
 * during a load and comes back, and every capture arrives, none twice as a
 * new memento; a PUT cut half-way is re-sent whole; spooled captures are
 * re-sent in order with growing waits; a kill -9 loses nothing that was
 * spooled; the bound is kept; the ArchiveToken goes with every PUT.
 */

import { once } from 'node:events';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import t from 'tap';
import type { CaptureOutcome } from '../../proxy/capture/capture.js';
import { exactUrlkey } from '#shared/uri.js';
import { startDaemon } from '../helpers/daemons.js';
import { freePort, get, listen, startRealArchive, startTestProxy, startUpstream, tempDir, vhostYaml, waitFor } from './helpers.js';

/** Mementos of each `http://<host>/p/<n>`, n < `count`, as the archive's index has them. */
async function mementosPerPage(
  archive: { store: { index: { spans(urlkey: string): Promise<{ n: number }[]> } } },
  host: string,
  count: number,
): Promise<number[]> {
  return Promise.all(
    Array.from({ length: count }, async (_, n) => {
      const spans = await archive.store.index.spans(exactUrlkey(`http://${host}/p/${n}`));
      return spans.reduce((a, s) => a + s.n, 0);
    }),
  );
}

/** A content server whose every page is different: `/p/<n>` → `page <n>`. */
function pages(req: http.IncomingMessage, res: http.ServerResponse) {
  const body = `<html><body>page ${req.url}</body></html>`;
  res.writeHead(200, { 'Content-Type': 'text/html', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

/** GETs `/p/<from>` … `/p/<to - 1>` through the proxy, `concurrency` at a time; every answer must be the page. */
async function load(_t: unknown, proxyUrl: string, host: string, from: number, to: number, concurrency = 6): Promise<number> {
  let next = from;
  let failed = 0;
  const worker = async () => {
    while (next < to) {
      const n = next++;
      const r = await get(proxyUrl, `/p/${n}`, host).catch(() => null);
      if (r?.status !== 200 || r.body.toString() !== `<html><body>page /p/${n}</body></html>`) failed++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return failed;
}

t.test('the archive goes down during a load and comes back: every capture arrives, none twice as a new memento', async (t) => {
  const port = await freePort();
  const dataDir = await tempDir(t, 'archive-data-');
  let archive = await startRealArchive(port, dataDir);
  t.teardown(() => archive.close());
  let archiveGone: Promise<void> | undefined;
  const upstream = await startUpstream(t, (req, res) => {
    // The archive goes away while request 30 is being answered, in the middle of the load.
    if (req.url === '/p/30') {
      archiveGone = archive.close();
      return void archiveGone.then(() => pages(req, res));
    }
    pages(req, res);
  });
  const { proxy } = await startTestProxy(
    t,
    { 'a.yaml': vhostYaml({ server_name: 'site.example', upstream: upstream.url, ArchivePort: port }) },
    { spool: { retryMinMs: 50, retryMaxMs: 400 } },
  );
  const outcomes: CaptureOutcome[] = [];
  proxy.events.on('capture', (o: CaptureOutcome) => outcomes.push(o));

  t.equal(await load(t, proxy.url, 'site.example', 0, 20), 0, 'archive up: 20 requests, none failed');
  await waitFor('20 captures settled', () => outcomes.length === 20);
  t.ok(
    outcomes.every((o) => o.outcome === 'stored'),
    'all stored live',
  );

  t.equal(await load(t, proxy.url, 'site.example', 20, 100), 0, 'archive going down mid-load: 80 requests, none failed for the client');
  t.ok(archiveGone, 'the archive went away during the load');
  await waitFor('100 captures settled', () => outcomes.length === 100 && proxy.capturesInFlight === 0);
  const spooled = outcomes.filter((o) => o.outcome === 'spooled').length;
  t.ok(spooled > 0, `${spooled} captures went to the spool`);
  t.same(
    outcomes.filter((o) => o.outcome !== 'stored' && o.outcome !== 'spooled'),
    [],
    'none dropped or cut',
  );
  t.equal(proxy.spool.depth, spooled, 'all of them wait in the spool');
  t.equal(await proxy.metrics.value('capture_proxy_spool_depth'), spooled, 'spool depth metric');

  archive = await startRealArchive(port, dataDir);
  await waitFor('the spool drained', () => proxy.spool.depth === 0, 60_000);
  t.equal(await proxy.metrics.value('capture_proxy_captures_sent_total', { via: 'spool' }), spooled, 'every spooled capture re-sent once');
  const counts = await mementosPerPage(archive, 'site.example', 100);
  t.same(
    counts.filter((c) => c !== 1),
    [],
    'each of the 100 pages has exactly one memento',
  );
  t.equal(counts.length, 100);
});

t.test('a PUT cut half-way is re-sent whole', async (t) => {
  const big = Buffer.alloc(1024 * 1024, 'b');
  const upstream = await startUpstream(t, (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/octet-stream', Date: 'Tue, 20 Mar 2001 20:35:00 GMT' });
    for (let i = 0; i < 16; i++) res.write(big.subarray(i * 65536, (i + 1) * 65536));
    res.end();
  });
  const received: { complete: boolean; body: Buffer; headers: http.IncomingHttpHeaders }[] = [];
  let first = true;
  const archive = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    let n = 0;
    const cut = first;
    first = false;
    req.on('data', (c: Buffer) => {
      chunks.push(c);
      n += c.length;
      if (cut && n > 256 * 1024) req.socket.destroy(); // the archive dies half-way through the body
    });
    req.on('error', () => {});
    req.on('close', () => {
      if (!req.complete) received.push({ complete: false, body: Buffer.concat(chunks), headers: req.headers });
    });
    req.on('end', () => {
      received.push({ complete: true, body: Buffer.concat(chunks), headers: req.headers });
      res.writeHead(201);
      res.end('stored\n');
    });
  });
  const port = await listen(t, archive);
  const { proxy } = await startTestProxy(
    t,
    { 'a.yaml': vhostYaml({ server_name: 'site.example', upstream: upstream.url, ArchivePort: port }) },
    { spool: { retryMinMs: 20 } },
  );
  const outcome = once(proxy.events, 'capture');
  const r = await get(proxy.url, '/big', 'site.example');
  t.ok(r.body.equals(big), 'the client got the whole 1 MiB');
  t.match((await outcome)[0], { outcome: 'spooled', live: 'failed' });
  await waitFor('the re-send', () => received.some((p) => p.complete));
  t.equal(received[0].complete, false, 'the first PUT was cut');
  const resent = received.find((p) => p.complete)!;
  const head = resent.body.subarray(0, resent.body.indexOf('\r\n\r\nHTTP/1.1 200 OK\r\n') + 4).toString('latin1');
  t.match(head, /^GET \/big HTTP\/1\.1\r\nHost: site\.example\r\n/, 'the re-send starts with the request head');
  t.ok(resent.body.subarray(resent.body.length - big.length).equals(big), 'and ends with the whole body');
  t.ok(resent.body.subarray(0, received[0].body.length).equals(received[0].body), 'the same bytes as the cut PUT, from the start');
  t.equal(resent.headers['content-length'], String(resent.body.length), 'sent with Content-Length');
  await waitFor('the spool is empty again', () => proxy.spool.depth === 0);
  t.equal(received.filter((p) => p.complete).length, 1, 'one whole PUT');
});

t.test('spooled captures are re-sent in order, with growing waits; a 4xx goes to rejected/; ArchiveToken on every PUT', async (t) => {
  const upstream = await startUpstream(t, pages);
  const attempts: { url: string; at: number; auth?: string }[] = [];
  let failuresLeft = 4;
  const archive = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      attempts.push({ url: req.url!, at: performance.now(), auth: req.headers.authorization });
      if (req.url!.endsWith('/p/2')) {
        res.writeHead(400);
        return void res.end('malformed capture record: test\n');
      }
      if (failuresLeft-- > 0) {
        res.writeHead(503);
        return void res.end('busy\n');
      }
      res.writeHead(201);
      res.end('stored\n');
    });
  });
  const port = await listen(t, archive);
  const { proxy, logs } = await startTestProxy(
    t,
    { 'a.yaml': vhostYaml({ server_name: 'site.example', upstream: upstream.url, ArchivePort: port, ArchiveToken: 'tok-123' }) },
    { spool: { retryMinMs: 40, retryMaxMs: 1000, paused: true } },
  );
  // The first live PUT gets 503: the queue backs off, the next captures skip the live PUT.
  for (let n = 0; n < 5; n++) {
    const settled = once(proxy.events, 'capture');
    t.equal((await get(proxy.url, `/p/${n}`, 'site.example')).status, 200);
    t.match((await settled)[0], { outcome: 'spooled', live: n === 0 ? 'failed' : 'skipped' }, `/p/${n} spooled`);
  }
  t.equal(attempts.length, 1, 'one live PUT tried');
  proxy.spool.resume();
  await waitFor('the spool drained', () => proxy.spool.depth === 0);
  const urls = attempts.map((a) => a.url.replace(/^\/put\/http:\/\/site\.example/, ''));
  t.same(urls, ['/p/0', '/p/0', '/p/0', '/p/0', '/p/0', '/p/1', '/p/2', '/p/3', '/p/4'], 'the head of the queue until it goes, then the rest in order');
  const gaps = attempts.slice(1, 5).map((a, i) => a.at - attempts[i].at);
  for (const [i, g] of gaps.entries()) t.ok(g >= 40 * 2 ** i - 5, `wait ${i + 1}: ${Math.round(g)} ms ≥ ${40 * 2 ** i} ms (doubling)`);
  t.ok(
    attempts.every((a) => a.auth === 'Bearer tok-123'),
    'Authorization: Bearer <ArchiveToken> on live PUTs and re-sends',
  );
  const rejected = await readdir(path.join(proxy.spool.dir, 'rejected'));
  t.equal(rejected.length, 1, 'the capture the archive refused with 400 is kept in rejected/');
  t.ok(
    logs.some((e) => e.level === 'error' && /refused a spooled capture/.test(e.msg) && e.uriR === 'http://site.example/p/2'),
    'and logged',
  );
  t.equal(await proxy.metrics.value('capture_proxy_captures_dropped_total', { reason: 'rejected' }), 1);
  t.equal(await proxy.metrics.value('capture_proxy_put_failures_total'), 5, '4 × 503 and one 400 counted as PUT failures');
});

t.test(
  'a 409 (the archive keeps another capture of that URI-R and second) is final: dropped, logged and counted, never re-sent nor kept, live or from the spool',
  async (t) => {
    const upstream = await startUpstream(t, pages);
    const attempts: string[] = [];
    let down = false;
    const archive = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const page = req.url!.replace(/^\/put\/http:\/\/site\.example/, '');
        attempts.push(page);
        if (down) {
          res.writeHead(503);
          return void res.end('busy\n');
        }
        if (page.startsWith('/p/c')) {
          res.writeHead(409);
          return void res.end(
            `conflict: a different capture of this URI-R is stored at the same second, http://archive/current/memento/20260101000000/http://site.example${page}; nothing stored\n`,
          );
        }
        res.writeHead(201);
        res.end('stored\n');
      });
    });
    const port = await listen(t, archive);
    const { proxy, logs } = await startTestProxy(
      t,
      { 'a.yaml': vhostYaml({ server_name: 'site.example', upstream: upstream.url, ArchivePort: port }) },
      { spool: { retryMinMs: 40, retryMaxMs: 1000, paused: true } },
    );
    const capture = async (page: string) => {
      const settled = once(proxy.events, 'capture');
      t.equal((await get(proxy.url, page, 'site.example')).status, 200, `${page} served`);
      return (await settled)[0] as CaptureOutcome;
    };
    // Live: the 409 ends the capture; the archive is up, the next capture goes live.
    t.match(await capture('/p/c1'), { outcome: 'conflict', live: 'failed', archiveStatus: 409 }, 'live 409: outcome conflict');
    t.match(await capture('/p/1'), { outcome: 'stored', live: 'stored' }, 'the next capture goes live: the archive is not backing off');
    t.equal(proxy.spool.depth, 0, 'nothing spooled');
    // From the spool: the archive down, then back with a 409 for one of the queued captures.
    down = true;
    t.match(await capture('/p/2'), { outcome: 'spooled', live: 'failed' });
    t.match(await capture('/p/c3'), { outcome: 'spooled', live: 'skipped' });
    down = false;
    proxy.spool.resume();
    await waitFor('the spool drained', () => proxy.spool.depth === 0);
    t.same(attempts, ['/p/c1', '/p/1', '/p/2', '/p/2', '/p/c3'], 'each 409 was answered to one PUT only: never re-sent');
    t.same(await readdir(path.join(proxy.spool.dir, 'rejected')).catch(() => []), [], 'nothing kept in rejected/');
    t.equal(await proxy.metrics.value('capture_proxy_captures_conflict_total', { via: 'live' }), 1, 'counted: live');
    t.equal(await proxy.metrics.value('capture_proxy_captures_conflict_total', { via: 'spool' }), 1, 'counted: spool');
    t.equal(await proxy.metrics.value('capture_proxy_captures_dropped_total', { reason: 'rejected' }), 0, 'not counted as rejected');
    t.equal(await proxy.metrics.value('capture_proxy_put_failures_total'), 1, 'only the 503 is a PUT failure');
    for (const [page, via] of [
      ['/p/c1', /^the archive holds another capture of this URI-R at that second; this one is dropped$/],
      ['/p/c3', /^the archive holds another capture of this URI-R at that second; the spooled one is dropped$/],
    ] as const) {
      // The spool's line is logged once its file is gone (after the depth drops): wait for it.
      const logged = () =>
        logs.some((e) => e.level === 'warn' && via.test(String(e.msg)) && e.uriR === `http://site.example${page}` && /409/.test(String(e.reason)));
      await waitFor(`${page} logged`, logged, 10_000).catch(() => undefined);
      t.ok(logged(), `${page}: logged (warn) with the archive's line`);
    }
  },
);

t.test('a full spool refuses new captures (logged, counted); what is queued stays', async (t) => {
  const upstream = await startUpstream(t, (req, res) => res.end(req.url === '/big' ? 'x'.repeat(5000) : 'small'));
  const down = await freePort();
  const { proxy, logs } = await startTestProxy(
    t,
    { 'a.yaml': vhostYaml({ server_name: 'site.example', upstream: upstream.url, ArchivePort: down }) },
    { spool: { maxBytes: 3000, paused: true } },
  );
  let settled = once(proxy.events, 'capture');
  await get(proxy.url, '/small', 'site.example');
  t.match((await settled)[0], { outcome: 'spooled' });
  settled = once(proxy.events, 'capture');
  const r = await get(proxy.url, '/big', 'site.example');
  t.equal(r.body.length, 5000, 'the client is served in full');
  t.match((await settled)[0], { outcome: 'dropped', reason: /spool-full/ });
  t.equal(proxy.spool.depth, 1, 'the first capture is still queued');
  t.ok(proxy.spool.bytes <= 3000, `the spool holds ${proxy.spool.bytes} bytes ≤ 3000`);
  t.equal(await proxy.metrics.value('capture_proxy_captures_dropped_total', { reason: 'spool-full' }), 1);
  t.ok(
    logs.some((e) => e.level === 'error' && /capture lost/.test(e.msg) && e.uriR === 'http://site.example/big'),
    'logged',
  );
});

t.test('kill -9: captures in the spool are sent on the next start', async (t) => {
  const port = await freePort();
  const upstream = await startUpstream(t, pages);
  const dir = await tempDir(t);
  await mkdir(path.join(dir, 'vhosts'));
  await writeFile(path.join(dir, 'proxy.yaml'), 'listen: 127.0.0.1:0\nvhosts: vhosts/\nspool: spool/\nspool_retry_min: 0.05\nspool_retry_max: 0.2\n');
  await writeFile(path.join(dir, 'vhosts', 'a.yaml'), vhostYaml({ server_name: 'site.example', upstream: upstream.url, ArchivePort: port }));
  const first = await startDaemon('capture-proxy.js', ['--config', path.join(dir, 'proxy.yaml')]);
  t.teardown(() => first.stop());
  t.equal(await load(t, first.url, 'site.example', 0, 5, 1), 0, '5 requests served with the archive down');
  const queueDir = path.join(dir, 'spool', `127.0.0.1_${port}`);
  await waitFor('5 captures in the spool', async () => (await readdir(queueDir).catch(() => [])).filter((f) => f.endsWith('.capture')).length === 5);
  const exited = once(first.proc, 'exit');
  first.proc.kill('SIGKILL');
  await exited;

  const dataDir = await tempDir(t, 'archive-data-');
  const archive = await startRealArchive(port, dataDir);
  t.teardown(() => archive.close());
  const second = await startDaemon('capture-proxy.js', ['--config', path.join(dir, 'proxy.yaml')]);
  t.teardown(() => second.stop());
  await waitFor('5 mementos', async () => (await mementosPerPage(archive, 'site.example', 5)).every((n) => n === 1));
  t.same(await mementosPerPage(archive, 'site.example', 5), [1, 1, 1, 1, 1], 'the 5 captures are in the archive, once each');
  await waitFor('the spool is empty', async () => (await readdir(queueDir)).length === 0);
  t.pass('the 5 spooled captures arrived after the restart');
  t.match(second.output(), /"msg":"spool: captures waiting from an earlier run; re-sending them"/);
});
