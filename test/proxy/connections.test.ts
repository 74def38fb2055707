/**
 * The proxy's file descriptors under clients that misbehave: refused
 * connections (400, 408) are destroyed, not left half-open for as long as
 * the client likes; a head that does not arrive within `headers_timeout`
 * is answered 408; `max_connections` bounds the connections open at once.
 * The proxy runs as its command (bin/capture-proxy.js) and its open
 * descriptors are counted in /proc/<pid>/fd.
 */

import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import t, { type Test } from 'tap';
import { type Daemon, startDaemon } from '../helpers/daemons.js';
import { get, startUpstream, tempDir, vhostYaml, waitFor } from './helpers.js';

/** Open file descriptors of process `pid`. */
function fdCount(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

/** This process's soft limit of open files (its children inherit it), from /proc/self/limits. */
function openFilesLimit(): number {
  const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
  return !m || m[1] === 'unlimited' ? Infinity : Number(m[1]);
}

/** The capture proxy command on a temp config: `proxyYaml` added to `listen`, `vhosts`, `spool`; one vhost a.example → `upstream`. */
async function startProxyCommand(t: Test, upstream: string, proxyYaml: string): Promise<Daemon> {
  const dir = await tempDir(t);
  await mkdir(path.join(dir, 'vhosts'));
  await writeFile(path.join(dir, 'proxy.yaml'), `listen: 127.0.0.1:0\nvhosts: vhosts/\nspool: spool/\n${proxyYaml}`);
  await writeFile(path.join(dir, 'vhosts', 'a.yaml'), vhostYaml({ server_name: 'a.example', upstream, EnableArchiving: 'Off' }));
  const proxy = await startDaemon('capture-proxy.js', ['--config', path.join(dir, 'proxy.yaml')]);
  t.teardown(() => proxy.stop());
  return proxy;
}

/**
 * A client that never closes its side: it sends `bytes` (nothing for an
 * empty string), half-closes when `halfClose`, and stays open after the
 * proxy's FIN (`allowHalfOpen`). `answered` resolves with what it got once
 * the proxy closed its side (or reset the connection).
 */
async function stubbornClient(port: number, bytes: string, halfClose: boolean): Promise<{ socket: net.Socket; answered: Promise<string> }> {
  const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  let text = '';
  socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
  const answered = new Promise<string>((resolve) => {
    socket.once('end', () => resolve(text));
    socket.once('error', () => resolve(text));
    socket.once('close', () => resolve(text));
  });
  await once(socket, 'connect');
  if (bytes) socket.write(bytes);
  if (halfClose) socket.end();
  return { socket, answered };
}

t.test('2,000 slow, silent, malformed and half-closed clients that never close leave the proxy with the descriptors it started with', async (t) => {
  // The test holds 2,000 sockets, and so does the proxy until it refuses them.
  if (openFilesLimit() < 4500) {
    t.plan(0, `skipped: needs ulimit -n of 4500 or more (it is ${openFilesLimit()})`);
    return;
  }
  const site = await startUpstream(t, (_req, res) => res.end('site'));
  const proxy = await startProxyCommand(t, site.url, 'headers_timeout: 1\n');
  const port = Number(new URL(proxy.url).port);
  const pid = proxy.proc.pid!;
  t.equal((await get(proxy.url, '/', 'a.example')).body.toString(), 'site', 'serving');
  const start = fdCount(pid);

  const kinds = [
    { what: 'malformed request', bytes: '\x01\x02 this is not HTTP\r\n\r\n', halfClose: false, status: 400 },
    { what: 'head sent in part, then silence', bytes: 'GET / HTTP/1.1\r\nHost: a.exa', halfClose: false, status: 408 },
    { what: 'connected, sent nothing', bytes: '', halfClose: false, status: 408 },
    { what: 'head sent in part, then half-closed', bytes: 'GET / HTTP/1.1\r\nHost: a.exa', halfClose: true, status: 400 },
  ];
  const clients: { kind: (typeof kinds)[number]; socket: net.Socket; answered: Promise<string> }[] = [];
  t.teardown(() => clients.forEach((c) => c.socket.destroy()));
  for (let i = 0; i < 2000; i++) {
    const kind = kinds[i % kinds.length];
    clients.push({ kind, ...(await stubbornClient(port, kind.bytes, kind.halfClose)) });
  }
  const answers = await Promise.all(clients.map((c) => c.answered));
  for (const kind of kinds) {
    const got = answers.filter((_a, i) => clients[i].kind === kind);
    const right = got.filter((a) => a.startsWith(`HTTP/1.1 ${kind.status} `)).length;
    t.equal(right, got.length, `${kind.what}: ${kind.status} for all ${got.length}`);
  }
  const open = clients.filter((c) => !c.kind.halfClose && !c.socket.destroyed).length;
  t.equal(open, 1500, 'the 1,500 clients that did not half-close still hold their connections open');
  // Every client has its answer: the descriptors come back within 10 s, or the test fails with the count.
  let now = fdCount(pid);
  await waitFor('the descriptors to come back', () => (now = fdCount(pid)) <= start, 10_000).catch(() => {});
  t.ok(now <= start, `descriptors: ${start} before, ${now} after, with the 2,000 clients still connected`);
  t.equal((await get(proxy.url, '/', 'a.example')).body.toString(), 'site', 'still serving');
});

t.test('max_connections: a connection past the bound is closed on accept; 50 keep-alive clients are served as before', async (t) => {
  const site = await startUpstream(t, (_req, res) => res.end('site'));
  const proxy = await startProxyCommand(t, site.url, 'max_connections: 50\n');
  const port = Number(new URL(proxy.url).port);
  const pid = proxy.proc.pid!;

  // 50 keep-alive connections, three requests each on the same connection.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 50 });
  t.teardown(() => agent.destroy());
  const sockets = new Set<net.Socket>();
  const fetch = () =>
    new Promise<string>((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port, path: '/', agent, headers: { Host: 'a.example' } }, (res) => {
        sockets.add(req.socket!);
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve(`${res.statusCode} ${body}`));
      });
      req.on('error', reject);
    });
  for (let round = 0; round < 3; round++) {
    const bodies = await Promise.all(Array.from({ length: 50 }, fetch));
    t.same(new Set(bodies), new Set(['200 site']), `round ${round + 1}: 50 requests answered`);
  }
  t.equal(sockets.size, 50, 'on 50 keep-alive connections');
  const held = fdCount(pid);

  // The 51st connection is accepted and closed at once, with nothing written.
  const extra = await stubbornClient(port, 'GET / HTTP/1.1\r\nHost: a.example\r\n\r\n', false);
  t.teardown(() => extra.socket.destroy());
  t.equal(await extra.answered, '', 'a connection past max_connections is closed without an answer');
  t.ok(fdCount(pid) <= held, 'and holds no descriptor');

  agent.destroy();
  await waitFor('the proxy to see the keep-alive connections closed', () => fdCount(pid) <= held - 50, 10_000);
  t.equal((await get(proxy.url, '/', 'a.example')).body.toString(), 'site', 'below the bound again: served');
});
