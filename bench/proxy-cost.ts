/**
 * The capture proxy's own cost per request: the proxy with capture Off
 * against a bare http-proxy (a keep-alive agent to the content server,
 * nothing else) on the same content server.
 *
 * Processes, each its own: a content server (bare Node http, the constant
 * 10 KB page of bench/lib.ts `bareServer('10k')`), a bare http-proxy
 * (`http.createServer` + `httpProxy.web`, `keepAlive` agent, no other
 * option), the capture proxy (`bin/capture-proxy.js`, one vhost with
 * `EnableArchiving: Off`, its JSON request log going to a file as a
 * user's would), and wrk (bench/wrk.ts), 50 connections, 2 threads, 100
 * paths. The two proxies alternate in each round (order reversed every
 * other round); the row is the median ratio of their req/s, with the CPU
 * time each proxy process used per request (/proc/<pid>/stat: less
 * disturbed by the other processes on the machine than req/s).
 *
 * `PROXY_COST_AB=<path of another checkout>[,<another>…]` adds an arm for
 * each: the capture proxy of that checkout (same config), for a same-run
 * A/B of a change.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { alternate, type BenchRow, bareServer, type Child, cpuSecondsOf, dataRoot, fmt, load, median, note, repo, spawnServer } from './lib.js';

/** Rounds (`PROXY_COST_ROUNDS` to change: the ratio of a small change needs more than the table's 5 on a busy machine). */
const ROUNDS = Number(process.env.PROXY_COST_ROUNDS) || 5;
const SECONDS = 3;
const CONNECTIONS = 50;
const PATHS = 100;

/** A bare http-proxy in its own process, in front of `upstream`: the baseline of the proxy's own cost. */
function bareHttpProxy(upstream: string): Promise<Child> {
  const code = `
    const http = require('node:http');
    const httpProxy = require('http-proxy');
    const agent = new http.Agent({ keepAlive: true });
    const proxy = httpProxy.createProxyServer({ target: ${JSON.stringify(upstream)}, agent });
    proxy.on('error', (err, req, res) => { res.statusCode = 502; res.end(); });
    const server = http.createServer((req, res) => proxy.web(req, res));
    server.listen(0, '127.0.0.1', () => console.log('bare-http-proxy listening on http://127.0.0.1:' + server.address().port));
    process.on('SIGTERM', () => process.exit(0));
  `;
  return spawnServer('bare-http-proxy', ['-e', code]);
}

/** Starts `bin/capture-proxy.js` of checkout `root` on the config in `dir`. */
function captureProxy(name: string, root: string, dir: string): Promise<Child> {
  return spawnServer(name, [path.join(root, 'bin', 'capture-proxy.js'), '--config', path.join(dir, 'proxy.yaml')]);
}

/** Runs the bench; returns its rows. */
export async function run(): Promise<BenchRow[]> {
  const dir = path.join(dataRoot, `proxy-cost-${process.pid}`);
  mkdirSync(path.join(dir, 'vhosts'), { recursive: true });
  const started: Child[] = [];
  try {
    const content = await bareServer('10k');
    started.push(content);
    writeFileSync(
      path.join(dir, 'vhosts', 'bench.yaml'),
      `- server_name: off.bench\n  upstream: ${content.url}\n  EnableArchiving: Off\n  ArchiveHost: 127.0.0.1\n  ArchivePort: 9\n`,
    );
    writeFileSync(path.join(dir, 'proxy.yaml'), `listen: 127.0.0.1:0\nvhosts: vhosts/\nspool: spool/\n`);
    const bare = await bareHttpProxy(content.url);
    started.push(bare);
    const proxy = await captureProxy('capture-proxy', repo, dir);
    started.push(proxy);
    const others = (process.env.PROXY_COST_AB ?? '').split(',').filter(Boolean);
    const abs: Child[] = [];
    for (const [i, other] of others.entries()) {
      abs.push(await captureProxy(`capture-proxy-ab${i}`, path.resolve(other), dir));
      started.push(abs[i]);
    }

    let n = 0;
    const pages = () => `/page/${n++ % PATHS}.html`;
    const arm =
      (server: Child, seconds = SECONDS) =>
      async () => {
        const before = cpuSecondsOf(server.pid);
        const r = await load({ url: server.url, connections: CONNECTIONS, duration: seconds, path: pages, headers: { host: 'off.bench' }, expect: [200] });
        return { ...r, cpuUs: ((cpuSecondsOf(server.pid) - before) / r.total) * 1e6 };
      };
    note('proxy-cost: warm-up');
    for (const s of [bare, proxy, ...abs]) await arm(s, 2)();
    note(`proxy-cost: ${ROUNDS} rounds × ${2 + abs.length} arms × ${SECONDS} s`);
    const arms: Record<string, ReturnType<typeof arm>> = { bare: arm(bare), off: arm(proxy) };
    for (const [i, ab] of abs.entries()) arms[`ab${i}`] = arm(ab);
    const res = await alternate(ROUNDS, arms);
    const rps = (k: string) => median(res[k].map((r) => r.rps));
    const cpu = (k: string) => median(res[k].map((r) => r.cpuUs));
    const ratio = median(res.off.map((r, i) => r.rps / res.bare[i].rps));
    const us = (v: number) => `${fmt(v, 0)} µs CPU/request`;
    const rows: BenchRow[] = [
      {
        name: `proxy, capture Off / bare http-proxy (keep-alive agent) on the same upstream, 10 KB page, ${CONNECTIONS} connections`,
        figure: `${fmt(rps('off'))} req/s, ${us(cpu('off'))}`,
        baseline: `${fmt(rps('bare'))} req/s, ${us(cpu('bare'))} (bare http-proxy)`,
        ratio,
        target: '≥ 0.9×',
      },
    ];
    for (const [i, other] of others.entries()) {
      const k = `ab${i}`;
      rows.push({
        name: `proxy, capture Off, this checkout / ${other}`,
        figure: `${fmt(rps('off'))} req/s, ${us(cpu('off'))}`,
        baseline: `${fmt(rps(k))} req/s, ${us(cpu(k))}`,
        ratio: median(res.off.map((r, j) => r.rps / res[k][j].rps)),
        target: 'report',
      });
    }
    return rows;
  } finally {
    for (const c of started.reverse()) await c.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
