/**
 * TimeGate at scale (issue 6).
 *
 * - Throughput: `GET /bench/timegate/<URI-R>` on an archive of 1M mementos
 *   over 100k URI-Rs (10 each, 30 days apart), each request a random URI-R
 *   and, half of the time, a random `Accept-Datetime` in its span; 50
 *   connections. Baseline: a bare Node http server answering a constant 302
 *   (Location + one-line body), same load. Target ≥ 0.5×.
 * - Latency: the same requests on one connection (closed loop, so mean
 *   latency = 1 / req/s), at 1M mementos against an archive of 1k mementos
 *   (100 URI-Rs × 10) of the same shape. Target ≤ 1.3×.
 * - The throughput again with the index's read cache off
 *   (`index_cache_bytes: 0`: every request an index query), against the
 *   bare 302 measured anew beside it. wrk cycles through 20,000 requests
 *   drawn in advance, which all fit the default cache: after the first
 *   pass the first row measures cache hits, this one the index.
 * - With each throughput figure, the CPU time the server process used per
 *   request (from /proc): a figure the other processes on the machine
 *   disturb less than req/s.
 *
 * Every answer must be a 302. The archives run `bin/memento-archive.js
 * serve --quiet` in child processes; the load generator, wrk, in its own
 * (lib.ts `load`).
 */
import path from 'node:path';
import { formatHttpDate } from '../shared/http-date.js';
import {
  alternate,
  type BenchRow,
  bareServer,
  type Child,
  cpuSecondsOf,
  dataRoot,
  fmt,
  lcg,
  load,
  median,
  note,
  startArchiveProcess,
  writeArchiveConfig,
} from './lib.js';
import { type Seeded, STEP, seedBulk, T0 } from './seed.js';

const ROUNDS = 5;
const SECONDS = 3;
const CONNECTIONS = 50;

function requests(seed: Seeded) {
  let i = 0;
  // A fixed pseudo-random sequence, the same in every run; each wrk run draws 20,000 requests anew from it.
  const rnd = lcg(12345);
  const n = seed.uris.length;
  const perUri = seed.datetimes(0).length;
  return {
    path: () => `/bench/timegate/${seed.uris[Math.floor(rnd() * n)]}`,
    headers: (): Record<string, string> => (i++ % 2 ? { 'accept-datetime': formatHttpDate(T0 + Math.floor(rnd() * perUri * STEP)) } : {}),
  };
}

/** Runs the TimeGate benchmarks; returns their rows. */
export async function run(): Promise<BenchRow[]> {
  const big = await seedBulk('tg-1m', { uris: 100_000, perUri: 10 });
  const small = await seedBulk('tg-1k', { uris: 100, perUri: 10 });
  const started: Child[] = [];
  try {
    const bare = await bareServer('302');
    started.push(bare);
    const a1m = await startArchiveProcess('archive-tg-1m', big.configFile);
    started.push(a1m);
    const a1k = await startArchiveProcess('archive-tg-1k', small.configFile);
    started.push(a1k);
    const r1m = requests(big);
    const r1k = requests(small);
    // Each run with the server's CPU time per request, µs (user + system, /proc/<pid>/stat).
    const many =
      (server: Child, r: ReturnType<typeof requests>, c = CONNECTIONS, d = SECONDS) =>
      async () => {
        const before = cpuSecondsOf(server.pid);
        const got = await load({ url: server.url, connections: c, duration: d, path: r.path, headers: r.headers, expect: [302] });
        return { ...got, cpuUs: ((cpuSecondsOf(server.pid) - before) / got.total) * 1e6 };
      };
    note('timegate: warm-up');
    await many(bare, r1m, CONNECTIONS, 1)();
    await many(a1m, r1m, CONNECTIONS, 2)();
    await many(a1k, r1k, CONNECTIONS, 2)();
    note(`timegate: ${ROUNDS} rounds × 4 arms × ${SECONDS} s`);
    const res = await alternate(ROUNDS, {
      bare: many(bare, r1m),
      tg1m: many(a1m, r1m),
      lat1k: many(a1k, r1k, 1),
      lat1m: many(a1m, r1m, 1),
    });
    // The index cache off: another process on the same data (one daemon per data folder at a time).
    await a1m.stop();
    started.splice(started.indexOf(a1m), 1);
    const noCache = writeArchiveConfig(path.join(dataRoot, `tg-nocache-${process.pid}`), path.join(big.dir, 'data'), 'index_cache_bytes: 0\n');
    const cold = await startArchiveProcess('archive-tg-1m-nocache', noCache);
    started.push(cold);
    await many(cold, r1m, CONNECTIONS, 2)();
    note(`timegate: index cache off, ${ROUNDS} rounds × 2 arms × ${SECONDS} s`);
    const off = await alternate(ROUNDS, { bare: many(bare, r1m), cold: many(cold, r1m) });
    const rps = (xs: { rps: number }[]) => median(xs.map((r) => r.rps));
    const cpu = (xs: { cpuUs: number }[]) => `CPU ${fmt(median(xs.map((r) => r.cpuUs)), 0)} µs/req`;
    const lat = (xs: { rps: number }[]) => median(xs.map((r) => 1000 / r.rps));
    const tg = rps(res.tg1m);
    const base = rps(res.bare);
    const l1m = lat(res.lat1m);
    const l1k = lat(res.lat1k);
    const name = `${fmt(big.mementos)} mementos over ${fmt(big.uris.length)} URI-Rs, ${CONNECTIONS} connections`;
    return [
      {
        name: `TimeGate req/s, ${name}`,
        figure: `${fmt(tg)} req/s (${cpu(res.tg1m)})`,
        baseline: `${fmt(base)} req/s (bare Node 302, ${cpu(res.bare)})`,
        ratio: tg / base,
        target: '≥ 0.5×',
      },
      {
        name: `TimeGate req/s, ${name}, index cache off (every request an index query)`,
        figure: `${fmt(rps(off.cold))} req/s (${cpu(off.cold)})`,
        baseline: `${fmt(rps(off.bare))} req/s (bare Node 302, ${cpu(off.bare)})`,
        ratio: rps(off.cold) / rps(off.bare),
        target: 'report',
      },
      {
        name: `TimeGate latency at ${fmt(big.mementos)} mementos (1 connection, mean)`,
        figure: `${fmt(l1m, 3)} ms`,
        baseline: `${fmt(l1k, 3)} ms at ${fmt(small.mementos)} mementos`,
        ratio: l1m / l1k,
        target: '≤ 1.3×',
      },
    ];
  } finally {
    for (const c of started.reverse()) await c.stop();
  }
}
