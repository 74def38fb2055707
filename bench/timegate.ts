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
 *
 * Every answer must be a 302. The archives run `bin/memento-archive.js
 * serve --quiet` in child processes; the load generator, wrk, in its own
 * (lib.ts `load`).
 */
import { formatHttpDate } from '../shared/http-date.js';
import { alternate, type BenchRow, bareServer, type Child, fmt, load, median, note, startArchiveProcess } from './lib.js';
import { type Seeded, STEP, seedBulk, T0 } from './seed.js';

const ROUNDS = 5;
const SECONDS = 3;
const CONNECTIONS = 50;

function requests(seed: Seeded) {
  let i = 0;
  // A fixed pseudo-random sequence (LCG), the same for every arm and run.
  let x = 12345;
  const rnd = () => {
    x = (x * 1103515245 + 12345) >>> 0;
    return x / 2 ** 32;
  };
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
    const many =
      (url: string, r: ReturnType<typeof requests>, c = CONNECTIONS, d = SECONDS) =>
      () =>
        load({ url, connections: c, duration: d, path: r.path, headers: r.headers, expect: [302] });
    note('timegate: warm-up');
    await many(bare.url, r1m, CONNECTIONS, 1)();
    await many(a1m.url, r1m, CONNECTIONS, 2)();
    await many(a1k.url, r1k, CONNECTIONS, 2)();
    note(`timegate: ${ROUNDS} rounds × 4 arms × ${SECONDS} s`);
    const res = await alternate(ROUNDS, {
      bare: many(bare.url, r1m),
      tg1m: many(a1m.url, r1m),
      lat1k: many(a1k.url, r1k, 1),
      lat1m: many(a1m.url, r1m, 1),
    });
    const rps = (k: keyof typeof res) => median(res[k].map((r) => r.rps));
    const lat = (k: keyof typeof res) => median(res[k].map((r) => 1000 / r.rps));
    const tg = rps('tg1m');
    const base = rps('bare');
    const l1m = lat('lat1m');
    const l1k = lat('lat1k');
    return [
      {
        name: `TimeGate req/s, ${fmt(big.mementos)} mementos over ${fmt(big.uris.length)} URI-Rs, ${CONNECTIONS} connections`,
        figure: `${fmt(tg)} req/s`,
        baseline: `${fmt(base)} req/s (bare Node 302)`,
        ratio: tg / base,
        target: '≥ 0.5×',
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
