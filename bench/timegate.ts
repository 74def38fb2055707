/**
 * TimeGate at scale (issues 6 and 14).
 *
 * - Throughput: `GET /bench/timegate/<URI-R>` on an archive of 1M mementos
 *   over 100k URI-Rs (10 each, 30 days apart), each request a random URI-R
 *   and, half of the time, a random `Accept-Datetime` in its span; 50
 *   connections. Each wrk run draws its 20,000 requests anew (about 18,000
 *   different URI-Rs), so most of them miss the read cache: this row
 *   measures mostly index lookups. Baseline: a bare Node http server
 *   answering a constant 302 (Location + one-line body), same load, in the
 *   same rounds. Target ≥ 0.5×.
 * - A hot set: the same on the same process, the requests drawn from 500
 *   of the URI-Rs only, whose answers all stay in the read cache.
 * - The throughput again on a process with the index cache off
 *   (`index_cache_bytes: 0`: every request an index query), against the
 *   bare 302 measured anew beside it.
 * - Latency: the same requests on one connection (closed loop, so mean
 *   latency = 1 / req/s), at 1M mementos against an archive of 1k mementos
 *   (100 URI-Rs × 10) of the same shape, both with the index cache off (with
 *   it, the 1k archive's answers all come from memory and the row would
 *   compare the cache with the index). Target ≤ 1.3×. The seeded mementos
 *   have no text (bulk rows), so a daemon's text indexer would spend the
 *   whole bench catching up on them (about 1,800 mementos/s with the 1M
 *   archive, 3.7× its latency: bench/results.md, 2026-11-29, issue 36):
 *   the two index-cache-off daemons run with bench/text-index-off.mjs,
 *   which stops the walk, as in an archive at rest whose mementos have
 *   their text. The daemons of the first rounds still walk.
 * - With each throughput figure, the CPU time the server process used per
 *   request (from /proc): a figure the other processes on the machine
 *   disturb less than req/s.
 *
 * Every answer must be a 302. The archives run `bin/memento-archive.js
 * serve --quiet` in child processes; the load generator, wrk, in its own
 * (lib.ts `load`).
 *
 * With `--baseline-dir <checkout>` (bench/run.ts), that checkout's daemon
 * on a copy of the 1M-memento data is one more arm of the first rounds,
 * beside this checkout's: one more row, this checkout's req/s over the
 * other's (the median of the rounds' ratios). `BENCH_ROUNDS` and
 * `BENCH_SECONDS` change the rounds (5) and their length (3 s).
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import { formatHttpDate } from '#shared/http-date.js';
import {
  alternate,
  baselineDir,
  type BenchRow,
  bareServer,
  cacheLookups,
  type Child,
  cpuSecondsOf,
  dataRoot,
  fmt,
  lcg,
  load,
  median,
  note,
  repo,
  startArchiveProcess,
  startBaselineArchive,
  writeArchiveConfig,
} from './lib.js';
import { type Seeded, STEP, seedBulk, T0 } from './seed.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const CONNECTIONS = 50;
/** Loaded into the index-cache-off daemons: their text indexers never walk (see the module comment). */
const TEXT_INDEX_OFF = path.join(repo, 'bench', 'text-index-off.mjs');

/** bench/run.ts: this bench measures the `--baseline-dir` checkout too. */
export const usesBaselineDir = true;

/** The TimeGate requests of a seeded archive: a random URI-R, and every other one a random `Accept-Datetime` in its span (also bench/postgres-s3.ts). */
export function requests(seed: Seeded) {
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

/** The URI-Rs of the hot-set row: few enough that all their answers stay in the default read cache. */
export const HOT_URIS = 500;

/** Runs the TimeGate benchmarks; returns their rows. */
export async function run(): Promise<BenchRow[]> {
  const big = await seedBulk('tg-1m', { uris: 100_000, perUri: 10 });
  const small = await seedBulk('tg-1k', { uris: 100, perUri: 10 });
  const started: Child[] = [];
  const configs = path.join(dataRoot, `tg-nocache-${process.pid}`);
  const start = async (name: string, configFile: string, nodeArgs: string[] = []) => {
    const c = await startArchiveProcess(name, configFile, nodeArgs);
    started.push(c);
    return c;
  };
  try {
    const bare = await bareServer('302');
    started.push(bare);
    // The other checkout's daemon, on a copy made before this checkout's daemon opens the data.
    const other = baselineDir();
    const ab = other ? await startBaselineArchive('archive-tg-1m-baseline', path.join(big.dir, 'data')) : null;
    if (ab) started.push(ab);
    const a1m = await start('archive-tg-1m', big.configFile);
    const r1m = requests(big);
    const hot = requests({ ...big, uris: big.uris.slice(0, HOT_URIS) });
    const r1k = requests(small);
    // Each run with the server's CPU time per request, µs (user + system, /proc/<pid>/stat), and the
    // share of index lookups the read cache answered (its /metrics; the bare server has none).
    const many =
      (server: Child, r: ReturnType<typeof requests>, c = CONNECTIONS, d = SECONDS) =>
      async () => {
        const before = cpuSecondsOf(server.pid);
        const cache = server === bare ? undefined : await cacheLookups(server.url);
        const got = await load({ url: server.url, connections: c, duration: d, path: r.path, headers: r.headers, expect: [302] });
        const cpuUs = ((cpuSecondsOf(server.pid) - before) / got.total) * 1e6;
        const after = cache && (await cacheLookups(server.url));
        const asked = after && after.hits + after.misses - cache.hits - cache.misses;
        return { ...got, cpuUs, hitRate: asked ? (after.hits - cache.hits) / asked : undefined };
      };
    note('timegate: warm-up');
    await many(bare, r1m, CONNECTIONS, 1)();
    await many(a1m, r1m, CONNECTIONS, 2)();
    if (ab) await many(ab, r1m, CONNECTIONS, 2)();
    // The hot set twice: the read cache keeps an answer the second time its URL misses.
    await many(a1m, hot, CONNECTIONS, 2)();
    await many(a1m, hot, CONNECTIONS, 2)();
    note(`timegate: ${ROUNDS} rounds × ${ab ? 4 : 3} arms × ${SECONDS} s`);
    const on = await alternate(ROUNDS, { bare: many(bare, r1m), tg1m: many(a1m, r1m), ...(ab ? { ab: many(ab, r1m) } : {}), hot: many(a1m, hot) });
    if (ab) {
      await ab.stop();
      started.splice(started.indexOf(ab), 1);
    }
    // The index cache off: other processes on the same data (one daemon per data folder at a time).
    await a1m.stop();
    started.splice(started.indexOf(a1m), 1);
    // Their text indexers do not walk (text-index-off.mjs): the seeded mementos have no text, and the 1M archive's catch-up
    // (~1,800 mementos/s, some nine minutes) would run through every round, as in no archive at rest (bench/results.md, 2026-11-29).
    const cold = (name: string, dir: string, data: string) =>
      start(name, writeArchiveConfig(path.join(configs, dir), data, 'index_cache_bytes: 0\n'), ['--import', TEXT_INDEX_OFF]);
    const cold1m = await cold('archive-tg-1m-nocache', '1m', path.join(big.dir, 'data'));
    const cold1k = await cold('archive-tg-1k-nocache', '1k', path.join(small.dir, 'data'));
    await many(cold1m, r1m, CONNECTIONS, 2)();
    await many(cold1k, r1k, CONNECTIONS, 1)();
    note(`timegate: index cache off, ${ROUNDS} rounds × 4 arms × ${SECONDS} s`);
    const off = await alternate(ROUNDS, {
      bare: many(bare, r1m),
      cold: many(cold1m, r1m),
      lat1k: many(cold1k, r1k, 1),
      lat1m: many(cold1m, r1m, 1),
    });
    const rps = (xs: { rps: number }[]) => median(xs.map((r) => r.rps));
    const cpu = (xs: { cpuUs: number; hitRate?: number }[]) => {
      const hits = xs.filter((r) => r.hitRate !== undefined).map((r) => r.hitRate!);
      return `CPU ${fmt(median(xs.map((r) => r.cpuUs)), 0)} µs/req${hits.length ? `, ${fmt(100 * median(hits), 0)}% index cache hits` : ''}`;
    };
    const lat = (xs: { rps: number }[]) => median(xs.map((r) => 1000 / r.rps));
    type Arm = { rps: number; cpuUs: number; hitRate?: number }[];
    const row = (name: string, arm: Arm, bareArm: Arm, target: string): BenchRow => ({
      name,
      figure: `${fmt(rps(arm))} req/s (${cpu(arm)})`,
      baseline: `${fmt(rps(bareArm))} req/s (bare Node 302, ${cpu(bareArm)})`,
      ratio: rps(arm) / rps(bareArm),
      target,
    });
    const l1m = lat(off.lat1m);
    const l1k = lat(off.lat1k);
    const name = `${fmt(big.mementos)} mementos over ${fmt(big.uris.length)} URI-Rs, ${CONNECTIONS} connections`;
    if (on.ab)
      note(`timegate A/B, req/s by round: this checkout ${on.tg1m.map((r) => fmt(r.rps)).join(', ')}; ${other}: ${on.ab.map((r) => fmt(r.rps)).join(', ')}`);
    const abRows: BenchRow[] = on.ab
      ? [
          {
            name: `TimeGate req/s, ${name}: this checkout / ${other} (--baseline-dir, a copy of the same data, alternated; median of the rounds' ratios)`,
            figure: `${fmt(rps(on.tg1m))} req/s (${cpu(on.tg1m)})`,
            baseline: `${fmt(rps(on.ab))} req/s (${cpu(on.ab)})`,
            ratio: median(on.tg1m.map((r, i) => r.rps / on.ab[i].rps)),
            target: 'report',
          },
        ]
      : [];
    return [
      row(`TimeGate req/s, ${name}`, on.tg1m, on.bare, '≥ 0.5×'),
      ...abRows,
      row(`TimeGate req/s, ${name}: a hot set (requests for ${fmt(HOT_URIS)} of the URI-Rs, all answers in the read cache)`, on.hot, on.bare, 'report'),
      row(`TimeGate req/s, ${name}, index cache off (every request an index query; text indexer's walk off)`, off.cold, off.bare, 'report'),
      {
        name: `TimeGate latency at ${fmt(big.mementos)} mementos (1 connection, mean; index cache off, so both ask the index; text indexer's walk off in both)`,
        figure: `${fmt(l1m, 3)} ms`,
        baseline: `${fmt(l1k, 3)} ms at ${fmt(small.mementos)} mementos`,
        ratio: l1m / l1k,
        target: '≤ 1.3×',
      },
    ];
  } finally {
    for (const c of started.reverse()) await c.stop();
    rmSync(configs, { recursive: true, force: true });
  }
}
