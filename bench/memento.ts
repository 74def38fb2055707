/**
 * Memento GET of a 10 KB page (issues 6 and 14).
 *
 * An archive of 1,000 URI-Rs, one 10 KB HTML memento each, stored through
 * the real ingest path (bench/seed.ts seedIngest). Each request GETs the
 * URI-M of a random one (`/bench/memento/<14 digits>/<URI-R>`); 50
 * connections, every answer a 200. Baseline: a bare Node http server
 * sending a constant 10 KB page, same load, in the same rounds.
 *
 * - The default Memento: the archival replay (the page has no URLs to
 *   rewrite, so it is tokenized and gets the replay script; with the
 *   default `replay_cache_bytes` all 1,000 replayed pages stay in memory
 *   after their first request), Memento headers. Target ≥ 0.5×.
 *   bench/replay.ts measures pages full of URLs.
 * - The raw Memento (`id_`, the stored bytes) against serve-static (the
 *   npm package, on a bare Node http server) serving the same 1,000 pages
 *   as files, a random one per request: the same bytes from a static file
 *   server. Target ≥ 0.5×. With the default read cache all 1,000 answers
 *   (10 MiB) fit: after the first requests it reads neither the index nor
 *   a WARC file.
 * - The raw Memento again on a process with the read caches off
 *   (`index_cache_bytes: 0`, `record_cache_bytes: 0`: an index query, a
 *   positioned read and a gunzip per request), against the bare server
 *   measured anew beside it: what the caches save.
 * - With each figure, the CPU time the server process used per request
 *   (from /proc).
 *
 * With `--baseline-dir <checkout>` (bench/run.ts), that checkout's daemon
 * on a copy of the same data takes the default and raw requests in the
 * same rounds as this checkout's: two more rows, this checkout's req/s
 * over the other's (the median of the rounds' ratios). `BENCH_ROUNDS` and
 * `BENCH_SECONDS` change the rounds (5) and their length (3 s).
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { toTimestamp14 } from '#shared/http-date.js';
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
  page10k,
  spawnServer,
  startArchiveProcess,
  startBaselineArchive,
  writeArchiveConfig,
} from './lib.js';
import { seedIngest } from './seed.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const CONNECTIONS = 50;

/** bench/run.ts: this bench measures the `--baseline-dir` checkout too. */
export const usesBaselineDir = true;

/** A run's req/s, the server's CPU µs per request, and the share of records the record cache answered (archives only). */
interface Measured {
  rps: number;
  cpuUs: number;
  hitRate?: number;
}

/** Runs the Memento GET benchmark; returns its rows. */
export async function run(): Promise<BenchRow[]> {
  const seed = await seedIngest('memento-1k', { uris: 1000 });
  const started: Child[] = [];
  try {
    const bare = await bareServer('10k');
    started.push(bare);
    // The same pages as files, served by serve-static: the baseline of the raw Memento.
    const staticDir = path.join(dataRoot, `memento-static-${process.pid}`);
    mkdirSync(staticDir, { recursive: true });
    for (let i = 0; i < seed.uris.length; i++) writeFileSync(path.join(staticDir, `${i}.html`), page10k(i));
    const files = await spawnServer('serve-static', [
      '-e',
      `const http = require('node:http'); const serveStatic = require('serve-static');
       const serve = serveStatic(${JSON.stringify(staticDir)});
       const server = http.createServer((req, res) => serve(req, res, () => { res.statusCode = 404; res.end(); }));
       server.keepAliveTimeout = 60000;
       server.listen(0, '127.0.0.1', () => console.log('serve-static listening on http://127.0.0.1:' + server.address().port));
       process.on('SIGTERM', () => process.exit(0));`,
    ]);
    started.push(files);
    const rndFile = lcg(4242);
    const file = () => `/${Math.floor(rndFile() * seed.uris.length)}.html`;
    // The other checkout's daemon, on a copy made before this checkout's daemon opens the data.
    const other = baselineDir();
    const ab = other ? await startBaselineArchive('archive-memento-baseline', path.join(seed.dir, 'data')) : null;
    if (ab) started.push(ab);
    const archive = await startArchiveProcess('archive-memento', seed.configFile);
    started.push(archive);
    const rnd = lcg(4242);
    const uriM = (raw: boolean) => () => {
      const i = Math.floor(rnd() * seed.uris.length);
      return `/bench/memento/${toTimestamp14(seed.datetimes(i)[0])}${raw ? 'id_' : ''}/${seed.uris[i]}`;
    };
    // Each run with the server's CPU time per request, µs (user + system, /proc/<pid>/stat).
    const arm =
      (server: Child, path: () => string, d = SECONDS) =>
      async (): Promise<Measured> => {
        const before = cpuSecondsOf(server.pid);
        const cache = server === bare ? undefined : await cacheLookups(server.url, 'record');
        const got = await load({ url: server.url, connections: CONNECTIONS, duration: d, path, expect: [200] });
        const cpuUs = ((cpuSecondsOf(server.pid) - before) / got.total) * 1e6;
        const after = cache && (await cacheLookups(server.url, 'record'));
        const asked = after && after.hits + after.misses - cache.hits - cache.misses;
        return { rps: got.rps, cpuUs, hitRate: asked ? (after.hits - cache.hits) / asked : undefined };
      };
    note('memento: warm-up');
    await arm(bare, () => '/', 1)();
    await arm(files, file, 1)();
    await arm(archive, uriM(false), 2)();
    await arm(archive, uriM(true), 1)();
    if (ab) {
      await arm(ab, uriM(false), 2)();
      await arm(ab, uriM(true), 1)();
    }
    note(`memento: ${ROUNDS} rounds × ${ab ? 6 : 4} arms × ${SECONDS} s`);
    const res = await alternate(ROUNDS, {
      bare: arm(bare, () => '/'),
      files: arm(files, file),
      memento: arm(archive, uriM(false)),
      ...(ab ? { abMemento: arm(ab, uriM(false)) } : {}),
      raw: arm(archive, uriM(true)),
      ...(ab ? { abRaw: arm(ab, uriM(true)) } : {}),
    });
    if (ab) {
      await ab.stop();
      started.splice(started.indexOf(ab), 1);
    }
    // The read caches off: another process on the same data (one daemon per data folder at a time).
    await archive.stop();
    started.splice(started.indexOf(archive), 1);
    const noCache = writeArchiveConfig(
      path.join(dataRoot, `memento-nocache-${process.pid}`),
      path.join(seed.dir, 'data'),
      'index_cache_bytes: 0\nrecord_cache_bytes: 0\n',
    );
    const cold = await startArchiveProcess('archive-memento-nocache', noCache);
    started.push(cold);
    await arm(cold, uriM(true), 1)();
    note(`memento: read caches off, ${ROUNDS} rounds × 2 arms × ${SECONDS} s`);
    const off = await alternate(ROUNDS, { files: arm(files, file), raw: arm(cold, uriM(true)) });
    const rps = (xs: Measured[]) => median(xs.map((r) => r.rps));
    const cpu = (xs: Measured[]) => {
      const hits = xs.filter((r) => r.hitRate !== undefined).map((r) => r.hitRate!);
      return `CPU ${fmt(median(xs.map((r) => r.cpuUs)), 0)} µs/req${hits.length ? `, ${fmt(100 * median(hits), 0)}% record cache hits` : ''}`;
    };
    const baseline = (xs: Measured[]) => `${fmt(rps(xs))} req/s (bare Node, 10 KB, ${cpu(xs)})`;
    const staticBaseline = (xs: Measured[]) => `${fmt(rps(xs))} req/s (serve-static, the same 1,000 pages as files, ${cpu(xs)})`;
    const abRow = (what: string, mine: Measured[], theirs: Measured[]): BenchRow => {
      note(
        `memento A/B ${what}, req/s by round: this checkout ${mine.map((r) => fmt(r.rps)).join(', ')}; ${other}: ${theirs.map((r) => fmt(r.rps)).join(', ')}`,
      );
      return {
        name: `Memento GET of a 10 KB page, ${what}: this checkout / ${other} (--baseline-dir, a copy of the same data, alternated; median of the rounds' ratios)`,
        figure: `${fmt(rps(mine))} req/s (${cpu(mine)})`,
        baseline: `${fmt(rps(theirs))} req/s (${cpu(theirs)})`,
        ratio: median(mine.map((r, i) => r.rps / theirs[i].rps)),
        target: 'report',
      };
    };
    const abRows = res.abMemento ? [abRow('default (archival replay)', res.memento, res.abMemento), abRow('raw (id_)', res.raw, res.abRaw)] : [];
    return [
      {
        name: `Memento GET of a 10 KB HTML page (default: archival replay, no URLs in the page, replay cache on), ${CONNECTIONS} connections`,
        figure: `${fmt(rps(res.memento))} req/s (${cpu(res.memento)})`,
        baseline: baseline(res.bare),
        ratio: rps(res.memento) / rps(res.bare),
        target: '≥ 0.5×',
      },
      {
        name: `Memento GET of a 10 KB page, raw (id_), ${CONNECTIONS} connections`,
        figure: `${fmt(rps(res.raw))} req/s (${cpu(res.raw)})`,
        baseline: staticBaseline(res.files),
        ratio: rps(res.raw) / rps(res.files),
        target: '≥ 0.5×',
      },
      {
        name: `Memento GET of a 10 KB page, raw (id_), read caches off (an index query, a read and a gunzip per request), ${CONNECTIONS} connections`,
        figure: `${fmt(rps(off.raw))} req/s (${cpu(off.raw)})`,
        baseline: staticBaseline(off.files),
        ratio: rps(off.raw) / rps(off.files),
        target: 'report',
      },
      ...abRows,
    ];
  } finally {
    for (const c of started.reverse()) await c.stop();
    rmSync(path.join(dataRoot, `memento-nocache-${process.pid}`), { recursive: true, force: true });
    rmSync(path.join(dataRoot, `memento-static-${process.pid}`), { recursive: true, force: true });
  }
}
