/**
 * Memento GET of a 10 KB page (issue 6).
 *
 * An archive of 1,000 URI-Rs, one 10 KB HTML memento each, stored through
 * the real ingest path (bench/seed.ts seedIngest). Each request GETs the
 * URI-M of a random one (`/bench/memento/<14 digits>/<URI-R>`), the
 * default Memento: since the archival replay, the replay form (the page
 * has no URLs to rewrite, so it is tokenized and gets the replay script;
 * with the default `replay_cache_bytes` all 1,000 replayed pages stay in
 * memory after their first request), Memento headers; 50 connections,
 * every answer a 200. bench/replay.ts measures pages full of URLs. Baseline:
 * a bare Node http server sending a constant 10 KB page, same load. Target
 * ≥ 0.5×. A second row reports the raw Memento (`id_`, the stored bytes).
 */
import { toTimestamp14 } from '../shared/http-date.js';
import { alternate, type BenchRow, bareServer, type Child, fmt, lcg, load, median, note, startArchiveProcess } from './lib.js';
import { seedIngest } from './seed.js';

const ROUNDS = 5;
const SECONDS = 3;
const CONNECTIONS = 50;

/** Runs the Memento GET benchmark; returns its rows. */
export async function run(): Promise<BenchRow[]> {
  const seed = await seedIngest('memento-1k', { uris: 1000 });
  const started: Child[] = [];
  try {
    const bare = await bareServer('10k');
    started.push(bare);
    const archive = await startArchiveProcess('archive-memento', seed.configFile);
    started.push(archive);
    const rnd = lcg(4242);
    const uriM = (raw: boolean) => () => {
      const i = Math.floor(rnd() * seed.uris.length);
      return `/bench/memento/${toTimestamp14(seed.datetimes(i)[0])}${raw ? 'id_' : ''}/${seed.uris[i]}`;
    };
    const arm =
      (url: string, path: () => string, d = SECONDS) =>
      () =>
        load({ url, connections: CONNECTIONS, duration: d, path, expect: [200] });
    note('memento: warm-up');
    await arm(bare.url, () => '/', 1)();
    await arm(archive.url, uriM(false), 2)();
    await arm(archive.url, uriM(true), 1)();
    note(`memento: ${ROUNDS} rounds × 3 arms × ${SECONDS} s`);
    const res = await alternate(ROUNDS, {
      bare: arm(bare.url, () => '/'),
      memento: arm(archive.url, uriM(false)),
      raw: arm(archive.url, uriM(true)),
    });
    const rps = (k: keyof typeof res) => median(res[k].map((r) => r.rps));
    const base = rps('bare');
    const m = rps('memento');
    const raw = rps('raw');
    return [
      {
        name: `Memento GET of a 10 KB HTML page (default: archival replay, no URLs in the page, replay cache on), ${CONNECTIONS} connections`,
        figure: `${fmt(m)} req/s`,
        baseline: `${fmt(base)} req/s (bare Node, 10 KB)`,
        ratio: m / base,
        target: '≥ 0.5×',
      },
      {
        name: `Memento GET of a 10 KB page, raw (id_), ${CONNECTIONS} connections`,
        figure: `${fmt(raw)} req/s`,
        baseline: `${fmt(base)} req/s (bare Node, 10 KB)`,
        ratio: raw / base,
        target: 'report',
      },
    ];
  } finally {
    for (const c of started.reverse()) await c.stop();
  }
}
