/**
 * `workers: 2` as a user runs it (bin/capture-proxy.js): both workers
 * serve the one listener; every request through it is captured exactly
 * once (one PUT per request, none twice, none lost); the admin server's
 * `/metrics` shows each worker's series under its `worker` label; an edit
 * of a vhost file reaches both workers; a worker killed is replaced;
 * SIGTERM stops the primary and both workers, leaving no process behind. And the captures a worker that
 * no longer runs left in its spool are moved to worker 1's and sent.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import t, { type Test } from 'tap';
import { metaLine, spoolFileName } from '../../proxy/spool/file.js';
import { type Daemon, repo, startDaemon } from '../helpers/daemons.js';
import { get, startFakeArchive, startUpstream, tempDir, vhostYaml, waitFor } from './helpers.js';

/** True while a process with this pid exists. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The pids of the processes whose command line names `arg` (here: a test's own config file). */
function runningWith(arg: string): number[] {
  const pids: number[] = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      if (readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0').includes(arg)) pids.push(Number(p));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** GET `url` (admin server) and its body as text. */
async function text(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      })
      .on('error', reject);
  });
}

/** The sum of a metric's series with these labels, from Prometheus text. */
function sumOf(metrics: string, name: string, labels: Record<string, string>): number {
  let sum = 0;
  for (const line of metrics.split('\n')) {
    if (!line.startsWith(name + '{')) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/** A folder with proxy.yaml (`workers: 2`, admin server, everything on port 0) and `vhosts/site.yaml`. */
async function proxyFolder(dir: string, site: string): Promise<{ config: string; vhostFile: string }> {
  await mkdir(path.join(dir, 'vhosts'));
  const vhostFile = path.join(dir, 'vhosts', 'site.yaml');
  await writeFile(vhostFile, site, { mode: 0o600 });
  const config = path.join(dir, 'proxy.yaml');
  await writeFile(config, 'listen: 127.0.0.1:0\nvhosts: vhosts/\nspool: spool/\nadmin_listen: 127.0.0.1:0\nworkers: 2\n');
  return { config, vhostFile };
}

/** Starts the proxy of `config`; its pids (primary, then the workers) and admin URL from its log. */
async function startWorkers(t: Test, config: string): Promise<{ daemon: Daemon; pids: number[]; admin: string }> {
  const daemon = await startDaemon('capture-proxy.js', ['--config', config]);
  t.teardown(() => daemon.stop());
  await waitFor('the admin server line', () => /"admin server listening","url":"([^"]+)"/.test(daemon.output()));
  const admin = /"admin server listening","url":"([^"]+)"/.exec(daemon.output())![1];
  const workerPids = JSON.parse(/"workers listening","workers":2,"pids":(\[[^\]]*\])/.exec(daemon.output())![1]) as number[];
  return { daemon, pids: [daemon.proc.pid!, ...workerPids], admin };
}

t.test('workers: 2 — each request captured once, metrics per worker, a vhost edit reaches both, a dead worker replaced, SIGTERM leaves nothing', async (t) => {
  const upstream = await startUpstream(t, (req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html' });
    res.end(`<p>${req.url}</p>`);
  });
  const archive = await startFakeArchive(t);
  const dir = await tempDir(t, 'workers-');
  const site = (extra: Record<string, string> = {}) =>
    vhostYaml({ server_name: 'localhost', upstream: upstream.url, ArchivePort: archive.port, ArchiveUnchangedCache: 'Off', ...extra });
  const { config, vhostFile } = await proxyFolder(dir, site());
  const { daemon, pids, admin } = await startWorkers(t, config);
  t.equal(pids.length, 3, 'a primary and two workers');
  const port = new URL(daemon.url).port;

  // Each request on a connection of its own: node:cluster hands connections to the workers in turn.
  const N = 40;
  for (let i = 0; i < N; i++) t.equal((await get(daemon.url, `/p/${i}`, `localhost:${port}`)).status, 200);
  await waitFor(`${N} PUTs`, () => archive.puts.length >= N);
  // Every request's log line comes once its capture settled: wait for all of them, then count the PUTs.
  await waitFor(`${N} request lines`, () => (daemon.output().match(/"msg":"request"/g) ?? []).length >= N);
  const perPath = new Map<string, number>();
  for (const p of archive.puts) perPath.set(p.url, (perPath.get(p.url) ?? 0) + 1);
  t.equal(archive.puts.length, N, 'one PUT per request');
  t.same(
    [...perPath.values()].filter((n) => n !== 1),
    [],
    'no URI-R PUT twice',
  );
  t.equal(perPath.size, N, 'every request captured');

  const metrics = (await text(`${admin}/metrics`)).body;
  const served = [1, 2].map((k) => sumOf(metrics, 'capture_proxy_requests_total', { worker: String(k), status: '200' }));
  t.equal(served[0] + served[1], N, 'the admin server counts every request once');
  t.ok(served[0] > 0 && served[1] > 0, `both workers served (${served.join(' + ')})`);
  t.equal(sumOf(metrics, 'capture_proxy_captures_sent_total', { via: 'live' }), N, 'captures sent, over both workers');
  t.same(await text(`${admin}/healthz`), { status: 200, body: '200 ok\n' });

  // A vhost file edit: a new name, served by both workers once each has read the file again.
  await writeFile(vhostFile, site({ server_aliases: '[other.test]' }));
  await waitFor('both workers reloaded', async () => {
    const m = (await text(`${admin}/metrics`)).body;
    return [1, 2].every((k) => sumOf(m, 'capture_proxy_reloads_total', { worker: String(k), result: 'ok' }) >= 1);
  });
  const statuses: number[] = [];
  for (let i = 0; i < 6; i++) statuses.push((await get(daemon.url, `/q/${i}`, `other.test:${port}`)).status);
  t.same(statuses, [200, 200, 200, 200, 200, 200], 'the new name served on every connection (both workers)');

  // A worker that dies is replaced (same number), and the proxy serves on.
  process.kill(pids[2], 'SIGKILL');
  await waitFor('worker 2 replaced', () => /"worker listening again","worker":2,"pid":\d+/.test(daemon.output()));
  pids.push(Number(/"worker listening again","worker":2,"pid":(\d+)/.exec(daemon.output())![1]));
  t.match(daemon.output(), /"msg":"worker exited; starting another in its place","worker":2/);
  const after: number[] = [];
  for (let i = 0; i < 4; i++) after.push((await get(daemon.url, `/r/${i}`, `localhost:${port}`)).status);
  t.same(after, [200, 200, 200, 200], 'served after the restart');

  // SIGTERM: the primary stops both workers and exits 0; no process is left.
  daemon.proc.kill('SIGTERM');
  const code = await new Promise<number | null>((resolve) => daemon.proc.once('exit', (c) => resolve(c)));
  t.equal(code, 0, 'exit status 0');
  await waitFor('every worker gone', () => pids.every((pid) => !alive(pid)), 10_000);
  t.match(daemon.output(), /"msg":"stopped","spoolDepth":0,"worker":1/);
  t.match(daemon.output(), /"msg":"stopped","spoolDepth":0,"worker":2/);
  t.notOk(alive(pids[2]), 'the worker killed stays gone');
  t.same(runningWith(config), [], 'no process of this config left');
});

t.test('the captures of a worker that no longer runs are moved to worker 1 and sent, in their order', async (t) => {
  const archive = await startFakeArchive(t);
  const dir = await tempDir(t, 'workers-');
  const site = vhostYaml({ server_name: 'localhost', upstream: 'http://127.0.0.1:9', ArchivePort: archive.port });
  const { config } = await proxyFolder(dir, site);
  // Left by an earlier run with 3 workers: two captures in worker 3's queue.
  const queue = path.join(dir, 'spool', 'worker-3', `127.0.0.1_${archive.port}`);
  await mkdir(queue, { recursive: true });
  for (const [seq, uriR] of [
    [7, 'http://localhost/first'],
    [9, 'http://localhost/second'],
  ] as const) {
    const meta = { host: '127.0.0.1', port: archive.port, path: `/${uriR}`, uriR, vhost: 'localhost', capturedAt: new Date().toISOString() };
    const record = 'GET /x HTTP/1.1\r\n\r\n';
    await writeFile(path.join(queue, spoolFileName(seq)), Buffer.concat([metaLine(meta), Buffer.from(record)]));
  }
  const { daemon } = await startWorkers(t, config);
  await waitFor('2 PUTs from the spool', () => archive.puts.length >= 2);
  t.same(
    archive.puts.map((p) => p.url),
    ['/http://localhost/first', '/http://localhost/second'],
    'sent once each, in order',
  );
  t.same(await readdir(path.join(dir, 'spool')).then((l) => l.filter((f) => f.startsWith('worker-'))), ['worker-2'], 'worker-3/ removed');
  t.match(daemon.output(), /captures of worker-3, a worker that no longer runs, moved to worker 1's spool/);
  await daemon.stop();
});

t.test('a worker that cannot start stops the others: one line on stderr, the exit status, nothing left running', async (t) => {
  const dir = await tempDir(t, 'workers-');
  const { config } = await proxyFolder(dir, vhostYaml({ server_name: 'localhost', upstream: 'http://127.0.0.1:9', ArchivePort: 9 }));
  // Worker 2's spool folder cannot be made: a file is in the way.
  await mkdir(path.join(dir, 'spool'));
  await writeFile(path.join(dir, 'spool', 'worker-2'), 'not a folder');
  const proc = spawn(process.execPath, [path.join(repo, 'bin', 'capture-proxy.js'), '--config', config], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((resolve) => proc.once('exit', (c) => resolve(c)));
  t.equal(code, 1, 'exit status 1');
  t.match(out, /capture-proxy: .*worker-2/, 'the reason, naming the folder');
  t.notMatch(out, /listening on/, 'never said it listens');
  const pids = [...out.matchAll(/"pid":(\d+)/g)].map((m) => Number(m[1]));
  t.ok(
    pids.every((pid) => !alive(pid)),
    'no worker left',
  );
});
