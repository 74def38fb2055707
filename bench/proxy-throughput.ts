/**
 * Capture proxy throughput and p99 latency (issue 6).
 *
 * Processes: a content server (bare Node http, a constant 10 KB HTML page
 * on every path), the archive daemon (`bin/memento-archive.js serve
 * --quiet`, a fresh data folder), a sink (drains each PUT, answers 201)
 * and the capture proxy (`bin/capture-proxy.js`, its JSON log going to a
 * file) — each its own process — and the load generator, wrk, in its own
 * process too (lib.ts `load`), all on the machine's 2 cores. One proxy serves three vhosts on the same content
 * server, picked by `Host`: `on.bench` (EnableArchiving On, to the
 * archive), `off.bench` (Off) and `sink.bench` (On, to the sink). Requests
 * cycle over 100 paths, 50 connections, keep-alive; every answer must be a
 * 200. The pages do not change, so after the first capture of each path the
 * archive deduplicates (a busy transactional archive's common case): each
 * capture still costs a PUT, its parsing, digest and index lookup.
 *
 * Arms, alternated in each round: the content server directly; the proxy
 * with capture off; capture on; capture on into the sink (each as fast as
 * answers come); and capture off and on from one connection, where p99
 * shows what a capture adds to a client's own wait rather than queueing
 * at saturation (at 50 connections p99 is mostly time spent queueing). Rows: capture on vs off
 * (req/s ≥ 0.95×; p99 on one connection ≤ 1.1×; p99 at full load,
 * report), capture off vs direct (report; beat
 * plain http-proxy's 0.22× measured here), capture into the sink vs off
 * (report: the proxy's own share of the capture cost), and the CPU time
 * each process used per request (from /proc/<pid>/stat), which says where
 * a capture's cost goes on a machine where all of them share 2 cores.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  alternate,
  type BenchRow,
  bareServer,
  type Child,
  cpuSecondsOf,
  dataRoot,
  fmt,
  load,
  median,
  note,
  repo,
  spawnServer,
  startArchiveProcess,
  writeArchiveConfig,
} from './lib.js';

const ROUNDS = 5;
const SECONDS = 3;
const CONNECTIONS = 50;
const PATHS = 100;
/** Seconds of the latency arms on one connection (a client's own wait, not queueing behind 49 others). */
const ONE_SECONDS = 2;

/** Runs the proxy benchmarks; returns their rows. */
export async function run(): Promise<BenchRow[]> {
  const dir = path.join(dataRoot, `proxy-throughput-${process.pid}`);
  mkdirSync(path.join(dir, 'vhosts'), { recursive: true });
  const started: Child[] = [];
  try {
    const content = await bareServer('10k');
    started.push(content);
    const sink = await bareServer('sink');
    started.push(sink);
    const archive = await startArchiveProcess('archive-proxy', writeArchiveConfig(dir, path.join(dir, 'archive-data')));
    started.push(archive);
    const port = (u: string) => new URL(u).port;
    writeFileSync(
      path.join(dir, 'vhosts', 'bench.yaml'),
      [
        `- server_name: on.bench\n  upstream: ${content.url}\n  EnableArchiving: On\n  ArchiveHost: 127.0.0.1\n  ArchivePort: ${port(archive.url)}\n  ArchivePath: /put/\n`,
        `- server_name: off.bench\n  upstream: ${content.url}\n  EnableArchiving: Off\n  ArchivePort: ${port(archive.url)}\n`,
        `- server_name: sink.bench\n  upstream: ${content.url}\n  EnableArchiving: On\n  ArchiveHost: 127.0.0.1\n  ArchivePort: ${port(sink.url)}\n  ArchivePath: /put/\n`,
      ].join(''),
    );
    writeFileSync(path.join(dir, 'proxy.yaml'), `listen: 127.0.0.1:0\nvhosts: vhosts/\nspool: spool/\n`);
    const proxy = await spawnServer('capture-proxy', [path.join(repo, 'bin', 'capture-proxy.js'), '--config', path.join(dir, 'proxy.yaml')]);
    started.push(proxy);

    let n = 0;
    const paths = () => `/page/${n++ % PATHS}.html`;
    // CPU used per request by each server process, µs (user + system, from /proc).
    const procs = { proxy, archive, sink, content };
    const arm =
      (url: string, host: string | null, d = SECONDS, connections = CONNECTIONS) =>
      async () => {
        const before = Object.fromEntries(Object.entries(procs).map(([k, c]) => [k, cpuSecondsOf(c.pid)]));
        const r = await load({ url, connections, duration: d, path: paths, headers: host ? { host } : {}, expect: [200] });
        const cpu = Object.fromEntries(Object.entries(procs).map(([k, c]) => [k, ((cpuSecondsOf(c.pid) - before[k]) / r.total) * 1e6]));
        return { ...r, cpu };
      };
    note('proxy: warm-up');
    await arm(content.url, null, 1)();
    for (const h of ['off.bench', 'on.bench', 'sink.bench']) await arm(proxy.url, h, 2)();
    note(`proxy: ${ROUNDS} rounds × (4 arms × ${SECONDS} s + 2 arms × ${ONE_SECONDS} s on 1 connection)`);
    const res = await alternate(ROUNDS, {
      direct: arm(content.url, null),
      off: arm(proxy.url, 'off.bench'),
      on: arm(proxy.url, 'on.bench'),
      sink: arm(proxy.url, 'sink.bench'),
      offOne: arm(proxy.url, 'off.bench', ONE_SECONDS, 1),
      onOne: arm(proxy.url, 'on.bench', ONE_SECONDS, 1),
    });
    const rps = (k: keyof typeof res) => median(res[k].map((r) => r.rps));
    const p99 = (k: keyof typeof res) => median(res[k].map((r) => r.p99));
    const p50 = (k: keyof typeof res) => median(res[k].map((r) => r.p50));
    const [direct, off, on, toSink] = [rps('direct'), rps('off'), rps('on'), rps('sink')];
    const [p99off, p99on] = [p99('off'), p99('on')];
    const [p99offOne, p99onOne] = [p99('offOne'), p99('onOne')];
    const cpu = (k: keyof typeof res, p: keyof typeof procs) => median(res[k].map((r) => r.cpu[p]));
    const us = (v: number) => `${fmt(v, 0)} µs`;
    return [
      {
        name: `proxy throughput, 10 KB pages, ${CONNECTIONS} connections, capture on`,
        figure: `${fmt(on)} req/s`,
        baseline: `${fmt(off)} req/s (capture off)`,
        ratio: on / off,
        target: '≥ 0.95×',
      },
      {
        name: 'proxy p99 latency, 1 connection, capture on',
        figure: `${fmt(p99onOne, 2)} ms (p50 ${fmt(p50('onOne'), 2)} ms)`,
        baseline: `${fmt(p99offOne, 2)} ms (p50 ${fmt(p50('offOne'), 2)} ms), capture off`,
        ratio: p99onOne / p99offOne,
        target: '≤ 1.1×',
      },
      {
        name: `proxy p99 latency at full load (${CONNECTIONS} connections), capture on`,
        figure: `${fmt(p99on, 1)} ms`,
        baseline: `${fmt(p99off, 1)} ms (capture off)`,
        ratio: p99on / p99off,
        target: 'report',
      },
      {
        name: 'proxy throughput, capture off',
        figure: `${fmt(off)} req/s`,
        baseline: `${fmt(direct)} req/s (content server directly)`,
        ratio: off / direct,
        target: '> 0.22×',
      },
      {
        name: 'proxy throughput, capture on into a sink (no archive work)',
        figure: `${fmt(toSink)} req/s`,
        baseline: `${fmt(off)} req/s (capture off)`,
        ratio: toSink / off,
        target: 'report',
      },
      {
        name: 'CPU per request, capture on (proxy + archive)',
        figure: `proxy ${us(cpu('on', 'proxy'))}, archive ${us(cpu('on', 'archive'))}`,
        baseline: `capture off: proxy ${us(cpu('off', 'proxy'))}; into sink: proxy ${us(cpu('sink', 'proxy'))}, sink ${us(cpu('sink', 'sink'))}`,
        ratio: (cpu('on', 'proxy') + cpu('on', 'archive')) / cpu('off', 'proxy'),
        target: 'report',
      },
    ];
  } finally {
    for (const c of started.reverse()) await c.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
