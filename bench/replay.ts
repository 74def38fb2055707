/**
 * Archival replay: what rewriting every URL of a page into the archive
 * costs (the default Memento, `/<id>/memento/<14 digits>/<URI-R>`, against
 * the stored bytes, `/<id>/memento/<14 digits>id_/<URI-R>`).
 *
 * - Throughput: an archive of {@link PAGES} URI-Rs, one 30 KB HTML memento
 *   each (bench/pages.ts replayPage: a stylesheet link, scripts, ~150
 *   links of every form, 20 images with and without `srcset`, `style`
 *   attributes and a `<style>` block with `url()`s; seeded through the
 *   real ingest path, bench/seed.ts seedReplayPages). wrk GETs the replay
 *   URI-M of a random page, {@link CONNECTIONS} connections; the baseline
 *   is the id_ URI-M of the same pages on the same process, alternated
 *   with it in each round. Measured twice, on two archive processes one
 *   after the other (one data folder: the daemon locks it): as deployed
 *   (`replay_cache_bytes` default, 32 MiB: every page fits, so after the
 *   warm-up each replay is a cache hit) and with the caches off
 *   (`replay_cache_bytes: 0` and `index_cache_bytes: 0`, since whole
 *   answers are kept with the index cache's neighbourhoods: each request
 *   asks the index, reads, parses and rewrites the page). Target ≥ 0.5× for both. The figures also give p99 and the
 *   archive's CPU time per request (from /proc/<pid>/stat), which is where
 *   the rewrite's cost shows on a machine whose 2 cores are shared.
 * - Memory: one 50 MiB HTML page (bench/pages.ts bigPage, streamed into
 *   ingest), replayed (rewritten as it streams) by a plain node:http client
 *   that counts bytes and archive URLs and keeps nothing, while the
 *   archive's RSS is sampled every 10 ms. The page's text is indexed when
 *   it is seeded (bench/seed.ts seedBigPage), as the daemon's indexer does
 *   after a capture, so that no process here starts the `text` thread to
 *   index it at its start. Each measurement runs on a fresh
 *   archive process; its baseline is that process's idle RSS just before
 *   (about 115 MiB here, some 48 MiB of it the node binary and libraries,
 *   file-backed; the figure says how much the GET added).
 *   Rows: one replay GET (target peak < 150 MiB), one id_ GET of the same
 *   page, and three replay GETs at once (report).
 */
import { mkdirSync, rmSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { toTimestamp14 } from '#shared/http-date.js';
import {
  alternate,
  type BenchRow,
  type Child,
  cpuSecondsOf,
  dataRoot,
  fmt,
  lcg,
  load,
  type LoadResult,
  median,
  note,
  sampleRss,
  startArchiveProcess,
  writeArchiveConfig,
} from './lib.js';
import { type Seeded, seedBigPage, seedReplayPages, T0 } from './seed.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const CONNECTIONS = 50;
/** Distinct URI-Rs (one memento each) the throughput arms cycle over. */
const PAGES = 300;
const PAGE_BYTES = 30 * 1024;
const BIG_BYTES = 50 * 2 ** 20;
const MiB = 2 ** 20;

/** Runs the replay benchmarks; returns their rows. */
export async function run(): Promise<BenchRow[]> {
  return [...(await throughputRows()), ...(await memoryRows())];
}

// ---- throughput -----------------------------------------------------------------

/** URI-M path of seeded page `i`: the replay (`raw` false) or the stored bytes (`id_`). */
function uriM(seed: Seeded, i: number, raw: boolean): string {
  return `/bench/memento/${toTimestamp14(seed.datetimes(i)[0])}${raw ? 'id_' : ''}/${seed.uris[i]}`;
}

/**
 * GETs page 0 in both forms and checks that the replay is what it should
 * be (200, HTML, every URL an archive address) and the id_ one the stored
 * page; returns how many archive URLs the replay holds and its size.
 * @throws when not
 */
async function checkForms(archive: Child, seed: Seeded): Promise<{ urls: number; bytes: number }> {
  const [replay, raw] = await Promise.all([uriM(seed, 0, false), uriM(seed, 0, true)].map((p) => fetch(archive.url + p)));
  const [text, stored] = await Promise.all([replay.text(), raw.text()]);
  const prefix = `${archive.url}/bench/memento/${toTimestamp14(seed.datetimes(0)[0])}/`;
  const urls = text.split(prefix).length - 1;
  if (replay.status !== 200 || raw.status !== 200 || Buffer.byteLength(stored) !== PAGE_BYTES || urls < 150 || stored.includes(prefix)) {
    throw new Error(
      `replay: unexpected answers for page 0: replay ${replay.status} (${urls} archive URLs), id_ ${raw.status} (${Buffer.byteLength(stored)} bytes)`,
    );
  }
  return { urls, bytes: Buffer.byteLength(text) };
}

/** One wrk run and the archive's CPU time per request in it, µs. */
type Measured = LoadResult & { cpuUs: number };

/** Replay vs id_ on one archive process (`configFile`): warm-up, then {@link ROUNDS} alternated rounds. */
async function measureForms(name: string, configFile: string, seed: Seeded): Promise<{ replay: Measured[]; raw: Measured[]; urls: number; bytes: number }> {
  const archive = await startArchiveProcess(name, configFile);
  try {
    const checked = await checkForms(archive, seed);
    // A fixed pseudo-random order of pages (LCG), the same for both arms.
    const rnd = lcg(4242);
    const next = () => Math.floor(rnd() * seed.uris.length);
    // Each run with the archive's CPU time per request, µs (user + system, /proc/<pid>/stat).
    const arm =
      (raw: boolean, d = SECONDS) =>
      async (): Promise<Measured> => {
        const before = cpuSecondsOf(archive.pid);
        const r = await load({ url: archive.url, connections: CONNECTIONS, duration: d, path: () => uriM(seed, next(), raw), expect: [200] });
        return { ...r, cpuUs: ((cpuSecondsOf(archive.pid) - before) / r.total) * 1e6 };
      };
    note(`replay (${name}): warm-up`);
    await arm(false, 2)();
    await arm(true, 1)();
    note(`replay (${name}): ${ROUNDS} rounds × 2 arms × ${SECONDS} s`);
    const res = await alternate(ROUNDS, { replay: arm(false), raw: arm(true) });
    return { replay: res.replay, raw: res.raw, ...checked };
  } finally {
    await archive.stop();
  }
}

/** The throughput rows: replay vs id_ with the replay cache on (default) and off. */
async function throughputRows(): Promise<BenchRow[]> {
  const seed = await seedReplayPages(`replay-${PAGES}`, { uris: PAGES, bytes: PAGE_BYTES });
  const dir = path.join(dataRoot, `replay-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  try {
    const noCache = writeArchiveConfig(path.join(dir, 'no-cache'), path.join(seed.dir, 'data'), 'replay_cache_bytes: 0\nindex_cache_bytes: 0\n');
    const arms = [
      { name: 'archive-replay-cache', configFile: seed.configFile, what: 'replay cache on (default, 32 MiB: every page a hit after the warm-up)' },
      {
        name: 'archive-replay-nocache',
        configFile: noCache,
        what: 'replay and index caches off (replay_cache_bytes: 0, index_cache_bytes: 0: every page rewritten, no whole answer kept)',
      },
    ];
    const rows: BenchRow[] = [];
    for (const a of arms) {
      const r = await measureForms(a.name, a.configFile, seed);
      const rps = (xs: Measured[]) => median(xs.map((v) => v.rps));
      const more = (xs: Measured[]) => `p99 ${fmt(median(xs.map((v) => v.p99)), 1)} ms, archive CPU ${fmt(median(xs.map((v) => v.cpuUs)), 0)} µs/req`;
      rows.push({
        name: `Replay GET of a 30 KB HTML page (${r.urls} URLs rewritten, ${fmt(r.bytes / 1024, 1)} KB out), ${PAGES} pages, ${CONNECTIONS} connections, ${a.what}`,
        figure: `${fmt(rps(r.replay))} req/s (${more(r.replay)})`,
        baseline: `${fmt(rps(r.raw))} req/s (${more(r.raw)}): id_ GET of the same pages, same process`,
        ratio: rps(r.replay) / rps(r.raw),
        target: '≥ 0.5×',
      });
    }
    return rows;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---- memory ---------------------------------------------------------------------

interface Got {
  status: number;
  bytes: number;
  /** Occurrences of `needle` in the body. */
  hits: number;
  ms: number;
}

/** GETs `url` with a plain node:http client: counts the body's bytes and `needle`s, keeps nothing. @throws after 10 minutes */
function getCounting(url: string, needle: string): Promise<Got> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = http.get(url, { agent: false }, (res) => {
      let bytes = 0;
      let hits = 0;
      let tail = '';
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        const text = tail + chunk.toString('latin1');
        for (let i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + 1)) hits++;
        tail = text.slice(-(needle.length - 1));
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes, hits, ms: performance.now() - started }));
      res.on('error', reject);
    });
    req.setTimeout(600_000, () => req.destroy(new Error(`GET ${url}: no answer within 10 minutes`)));
    req.on('error', reject);
  });
}

/**
 * `concurrent` GETs of `urlPath` at once on a fresh archive process
 * (`configFile`): its idle RSS (1 s after it listens) and peak RSS while
 * they run, bytes; each GET's answer.
 */
async function peakWhile(
  name: string,
  configFile: string,
  urlPath: string,
  concurrent: number,
  needle: string,
): Promise<{ idle: number; peak: number; got: Got[] }> {
  const archive = await startArchiveProcess(name, configFile);
  try {
    await new Promise((r) => setTimeout(r, 1000));
    const idle = archive.rss();
    const sampler = sampleRss(archive.pid, 10);
    let peak = 0;
    const got = await Promise.all(Array.from({ length: concurrent }, () => getCounting(archive.url + urlPath, needle))).finally(() => (peak = sampler.stop()));
    return { idle, peak, got };
  } finally {
    await archive.stop();
  }
}

/** The memory rows: peak RSS replaying the 50 MiB page once, serving it raw once, and replaying it three times at once. */
async function memoryRows(): Promise<BenchRow[]> {
  const big = await seedBigPage('replay-50m', BIG_BYTES);
  const ts = toTimestamp14(T0);
  const needle = `/bench/memento/${ts}/`;
  const cases = [
    { key: 'replay', path: `/bench/memento/${ts}/${big.uri}`, n: 1 },
    { key: 'raw', path: `/bench/memento/${ts}id_/${big.uri}`, n: 1 },
    { key: 'replay3', path: `/bench/memento/${ts}/${big.uri}`, n: 3 },
  ] as const;
  const out: Record<string, { idle: number; peak: number; got: Got[] }> = {};
  for (const c of cases) {
    note(`replay: ${c.n} × GET of the ${fmt(big.bodyBytes / MiB, 0)} MiB page (${c.key === 'raw' ? 'id_' : 'replay'}), RSS sampled`);
    const r = await peakWhile(`archive-replay-big-${c.key}`, big.configFile, c.path, c.n, needle);
    for (const g of r.got) {
      const ok = g.status === 200 && (c.key === 'raw' ? g.bytes === big.bodyBytes && g.hits === 0 : g.bytes > 50e6 && g.hits > 100_000);
      if (!ok) throw new Error(`replay: ${c.key} GET of the big page answered ${g.status}, ${g.bytes} bytes, ${g.hits} archive URLs`);
    }
    out[c.key] = r;
  }
  const mib = (b: number) => `${fmt(b / MiB, 1)} MiB`;
  const took = (g: Got[]) => `${fmt(g[0].bytes / 1e6, 1)} MB in ${fmt(Math.max(...g.map((x) => x.ms)) / 1000, 2)} s`;
  const row = (key: string, name: string, target: string): BenchRow => ({
    name,
    figure: `${mib(out[key].peak)} (+${mib(out[key].peak - out[key].idle)}; ${out[key].got.length > 1 ? `${out[key].got.length} × ` : ''}${took(out[key].got)})`,
    baseline: `${mib(out[key].idle)} (the same process idle)`,
    ratio: out[key].peak / out[key].idle,
    target,
  });
  const urls = out.replay.got[0].hits;
  return [
    row('replay', `Peak RSS while replaying a ${fmt(big.bodyBytes / MiB, 0)} MiB HTML page (1 GET, rewritten as it streams: ${fmt(urls)} URLs)`, '< 150 MiB'),
    row('raw', `Peak RSS while serving the same page as stored (id_, 1 GET)`, 'report'),
    row('replay3', `Peak RSS while replaying the same page to 3 clients at once`, 'report'),
  ];
}
