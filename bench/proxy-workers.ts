/**
 * The capture proxy's scaling with `workers:` (node:cluster): the proxy
 * with `workers: 2` against the same proxy with `workers: 1`, same
 * content server, same run.
 *
 * Processes, each its own: a content server (bare Node http, the constant
 * 10 KB page of bench/lib.ts `bareServer('10k')`), the capture proxy
 * (`bin/capture-proxy.js`) twice, on two configs that differ only in
 * `workers:` and their spool folder (one vhost with `EnableArchiving: Off`:
 * the proxy's own work, no archive on the cores; JSON request log to a
 * file), and wrk (bench/wrk.ts), 50 connections, 2 threads, 100 paths. The
 * two proxies alternate in each round (order reversed every other round);
 * the row is the median ratio of their req/s, with the CPU time per
 * request of each proxy's whole process tree (primary and workers,
 * /proc/<pid>/stat).
 *
 * On a machine of 2 cores, wrk and the content server take their share of
 * the same cores: the ratio says what a second worker gains when the
 * cores are already shared, not what 8 or 32 cores would give (see
 * docs/benchmarks.md).
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { alternate, type BenchRow, bareServer, type Child, dataRoot, fmt, load, median, note, repo, spawnServer, treeCpuSecondsOf } from './lib.js';

const ROUNDS = Number(process.env.PROXY_WORKERS_ROUNDS) || 5;
const SECONDS = 3;
const CONNECTIONS = 50;
const PATHS = 100;

/** Writes a proxy config with `workers` workers in `dir` (vhost: `off.bench` on `upstream`, archiving Off). */
function proxyConfig(dir: string, upstream: string, workers: number): string {
  mkdirSync(path.join(dir, 'vhosts'), { recursive: true });
  writeFileSync(
    path.join(dir, 'vhosts', 'bench.yaml'),
    `- server_name: off.bench\n  upstream: ${upstream}\n  EnableArchiving: Off\n  ArchiveHost: 127.0.0.1\n  ArchivePort: 9\n`,
  );
  const file = path.join(dir, 'proxy.yaml');
  writeFileSync(file, `listen: 127.0.0.1:0\nvhosts: vhosts/\nspool: spool/\nworkers: ${workers}\n`);
  return file;
}

/** Runs the bench; returns its rows. */
export async function run(): Promise<BenchRow[]> {
  const dir = path.join(dataRoot, `proxy-workers-${process.pid}`);
  const started: Child[] = [];
  try {
    const content = await bareServer('10k');
    started.push(content);
    const proxies: Record<string, Child> = {};
    for (const w of [1, 2]) {
      const config = proxyConfig(path.join(dir, `w${w}`), content.url, w);
      proxies[`w${w}`] = await spawnServer(`capture-proxy-workers-${w}`, [path.join(repo, 'bin', 'capture-proxy.js'), '--config', config]);
      started.push(proxies[`w${w}`]);
    }
    let n = 0;
    const pages = () => `/page/${n++ % PATHS}.html`;
    const arm =
      (server: Child, seconds = SECONDS) =>
      async () => {
        const before = treeCpuSecondsOf(server.pid);
        const r = await load({ url: server.url, connections: CONNECTIONS, duration: seconds, path: pages, headers: { host: 'off.bench' }, expect: [200] });
        return { ...r, cpuUs: ((treeCpuSecondsOf(server.pid) - before) / r.total) * 1e6 };
      };
    note('proxy-workers: warm-up');
    for (const s of Object.values(proxies)) await arm(s, 2)();
    note(`proxy-workers: ${ROUNDS} rounds × 2 arms × ${SECONDS} s`);
    const res = await alternate(ROUNDS, { w1: arm(proxies.w1), w2: arm(proxies.w2) });
    const rps = (k: 'w1' | 'w2') => median(res[k].map((r) => r.rps));
    const cpu = (k: 'w1' | 'w2') => median(res[k].map((r) => r.cpuUs));
    return [
      {
        name: `proxy, capture Off, workers: 2 / workers: 1, 10 KB page, ${CONNECTIONS} connections, wrk and the content server on the same 2 cores`,
        figure: `${fmt(rps('w2'))} req/s, ${fmt(cpu('w2'), 0)} µs CPU/request (all processes of the proxy)`,
        baseline: `${fmt(rps('w1'))} req/s, ${fmt(cpu('w1'), 0)} µs CPU/request (workers: 1)`,
        ratio: median(res.w2.map((r, i) => r.rps / res.w1[i].rps)),
        target: 'report',
      },
    ];
  } finally {
    for (const c of started.reverse()) await c.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
