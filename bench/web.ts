/**
 * The query answers over one URI-R with 100k captures (issue 13): the CDX
 * server API and the calendar page for people.
 *
 * An archive holding one URI-R with 100,000 mementos (bench/seed.ts
 * seedOneUri, the TimeMap bench's data). Each answer is read to its end by a
 * plain node:http client in this process that counts bytes and lines and
 * keeps nothing (the archive runs in its own process): `GET
 * /cdx?url=<URI-R>` (every capture, one line each: 100,000 lines checked)
 * and `GET /web/*\/<URI-R>` with `Accept: text/html` (the calendar). One
 * cold request, then 5 more; the figure is the median time to the full
 * body of the 5, the cold one is the baseline column (with, for /cdx, the
 * archive's RSS growth, sampled every 10 ms). Targets: /cdx < 1 s, /web/
 * < 200 ms. An answer with another status than 200 is reported as such.
 */
import http from 'node:http';
import { type BenchRow, type Child, fmt, median, note, sampleRss, startArchiveProcess } from './lib.js';
import { seedOneUri } from './seed.js';

const CAPTURES = 100_000;
const RUNS = 5;

interface Fetched {
  status: number;
  ms: number;
  bytes: number;
  lines: number;
  rssGrowth: number;
}

/** GETs `path` of `child`, streams the body (nothing kept), samples the child's RSS meanwhile. */
function fetchAll(child: Child, path: string, headers: Record<string, string> = {}): Promise<Fetched> {
  return new Promise((resolve, reject) => {
    const before = child.rss();
    const sampler = sampleRss(child.pid);
    const started = performance.now();
    const u = new URL(child.url);
    const req = http.get({ host: u.hostname, port: u.port, path, headers, agent: false }, (res) => {
      let bytes = 0;
      let lines = 0;
      res.on('data', (b: Buffer) => {
        bytes += b.length;
        for (let i = b.indexOf(10); i >= 0; i = b.indexOf(10, i + 1)) lines++;
      });
      res.on('end', () => resolve({ status: res.statusCode!, ms: performance.now() - started, bytes, lines, rssGrowth: sampler.stop() - before }));
      res.on('error', (e) => {
        sampler.stop();
        reject(e);
      });
    });
    req.on('error', (e) => {
      sampler.stop();
      reject(e);
    });
  });
}

/** One cold request and {@link RUNS} warm ones. */
async function measure(child: Child, path: string, headers?: Record<string, string>): Promise<{ cold: Fetched; warm: Fetched[] }> {
  const cold = await fetchAll(child, path, headers);
  const warm: Fetched[] = [];
  for (let i = 0; i < RUNS; i++) warm.push(await fetchAll(child, path, headers));
  return { cold, warm };
}

/** Runs the CDX and calendar benchmark; returns its two rows. */
export async function run(): Promise<BenchRow[]> {
  const seed = await seedOneUri('timemap-100k', CAPTURES);
  const archive = await startArchiveProcess('archive-web', seed.configFile);
  try {
    const rows: BenchRow[] = [];

    note(`cdx: 1 cold + ${RUNS} runs`);
    const cdx = await measure(archive, `/cdx?url=${encodeURIComponent(seed.uri)}`);
    const wrong = [cdx.cold, ...cdx.warm].find((f) => f.status !== 200 || f.lines !== CAPTURES);
    if (wrong) throw new Error(`/cdx answered ${wrong.status} with ${wrong.lines} lines, not 200 with ${CAPTURES}`);
    const growth = Math.max(cdx.cold.rssGrowth, ...cdx.warm.map((f) => f.rssGrowth)) / 2 ** 20;
    rows.push({
      name: `CDX server API (/cdx?url=) of one URI-R with ${fmt(CAPTURES)} captures: full body (${fmt(CAPTURES)} lines, ${(cdx.cold.bytes / 2 ** 20).toFixed(1)} MiB)`,
      figure: `${fmt(median(cdx.warm.map((f) => f.ms)) / 1000, 3)} s`,
      baseline: `cold: ${fmt(cdx.cold.ms / 1000, 3)} s; archive RSS growth ≤ ${fmt(growth, 1)} MiB`,
      ratio: null,
      target: '< 1 s',
    });

    note(`web calendar: 1 cold + ${RUNS} runs`);
    const web = await measure(archive, `/web/*/${seed.uri}`, { accept: 'text/html' });
    const statuses = [...new Set([web.cold, ...web.warm].map((f) => f.status))];
    const name = `Calendar page (/web/*/<URL>, Accept: text/html) of one URI-R with ${fmt(CAPTURES)} captures: full body`;
    if (statuses.length === 1 && statuses[0] === 200) {
      rows.push({
        name: `${name} (${(web.cold.bytes / 1024).toFixed(0)} KiB)`,
        figure: `${fmt(median(web.warm.map((f) => f.ms)), 1)} ms`,
        baseline: `cold: ${fmt(web.cold.ms, 1)} ms`,
        ratio: null,
        target: '< 200 ms',
      });
    } else {
      rows.push({
        name,
        figure: `answered ${statuses.join(', ')} (in ${fmt(median(web.warm.map((f) => f.ms)), 1)} ms)`,
        baseline: `cold: ${fmt(web.cold.ms, 1)} ms`,
        ratio: null,
        target: '< 200 ms',
        met: false,
      });
    }
    return rows;
  } finally {
    await archive.stop();
  }
}
