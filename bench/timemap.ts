/**
 * TimeMap of one URI-R with 100k mementos (issue 6).
 *
 * An archive holding one URI-R with 100,000 mementos (bench/seed.ts
 * seedOneUri). `GET /bench/timemap/link/<URI-R>` is read to its end by a
 * plain node:http client that counts bytes and links and keeps nothing;
 * the archive's RSS (/proc/<pid>/status, sampled every 10 ms) is compared
 * with its RSS just before the request. One cold request, then 5 more; the
 * figure is the median time to the full body of the 5, the RSS growth the
 * largest of all 6 (the cold one included). The JSON TimeMap is measured
 * the same way, with the same targets. Targets: full body < 1 s, RSS growth < 50 MiB.
 */
import http from 'node:http';
import { type BenchRow, type Child, fmt, median, note, sampleRss, startArchiveProcess } from './lib.js';
import { seedOneUri } from './seed.js';

const MEMENTOS = 100_000;
const RUNS = 5;

interface Fetched {
  ms: number;
  bytes: number;
  /** link-format: `rel="…memento"` links; JSON: `"uri":` entries. */
  mementos: number;
  rssGrowth: number;
}

/** GETs `url`, streams the body (nothing kept), samples `child`'s RSS meanwhile. */
function fetchTimemap(child: Child, url: string, json: boolean): Promise<Fetched> {
  return new Promise((resolve, reject) => {
    const before = child.rss();
    const sampler = sampleRss(child.pid);
    const started = performance.now();
    const u = new URL(url.replace(/^(http:\/\/[^/]+).*$/, '$1'));
    const req = http.get({ host: u.hostname, port: u.port, path: url.slice(u.origin.length), agent: false }, (res) => {
      if (res.statusCode !== 200) {
        sampler.stop();
        res.resume();
        reject(new Error(`TimeMap GET answered ${res.statusCode}`));
        return;
      }
      let bytes = 0;
      let mementos = 0;
      let tail = '';
      const needle = json ? '"uri":' : 'memento"';
      res.setEncoding('utf8');
      res.on('data', (s: string) => {
        bytes += Buffer.byteLength(s);
        const text = tail + s;
        for (let i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + 1)) mementos++;
        tail = text.slice(-needle.length + 1);
      });
      res.on('end', () => {
        const ms = performance.now() - started;
        resolve({ ms, bytes, mementos, rssGrowth: sampler.stop() - before });
      });
      res.on('error', reject);
    });
    req.on('error', (e) => {
      sampler.stop();
      reject(e);
    });
  });
}

/** Runs the TimeMap benchmark; returns its rows. */
export async function run(): Promise<BenchRow[]> {
  const seed = await seedOneUri('timemap-100k', MEMENTOS);
  const archive = await startArchiveProcess('archive-timemap', seed.configFile);
  try {
    const rows: BenchRow[] = [];
    for (const kind of ['link', 'json'] as const) {
      const url = `${archive.url}/bench/timemap/${kind}/${seed.uri}`;
      note(`timemap ${kind}: 1 cold + ${RUNS} runs`);
      const all: Fetched[] = [];
      for (let i = 0; i <= RUNS; i++) all.push(await fetchTimemap(archive, url, kind === 'json'));
      // JSON lists first and last again before the list.
      const want = kind === 'json' ? MEMENTOS + 2 : MEMENTOS;
      const wrong = all.find((f) => f.mementos !== want);
      if (wrong) throw new Error(`TimeMap (${kind}) listed ${wrong.mementos} mementos, not ${want}`);
      const ms = median(all.slice(1).map((f) => f.ms));
      const growth = Math.max(...all.map((f) => f.rssGrowth)) / 2 ** 20;
      const mib = (all[0].bytes / 2 ** 20).toFixed(1);
      rows.push({
        name: `TimeMap (${kind === 'link' ? 'link-format' : 'JSON'}) of one URI-R with ${fmt(MEMENTOS)} mementos: full body (${mib} MiB)`,
        figure: `${fmt(ms / 1000, 3)} s`,
        baseline: `cold: ${fmt(all[0].ms / 1000, 3)} s`,
        ratio: null,
        target: '< 1 s',
      });
      rows.push({
        name: `TimeMap (${kind === 'link' ? 'link-format' : 'JSON'}), ${fmt(MEMENTOS)} mementos: archive RSS growth (largest of ${RUNS + 1})`,
        figure: `${fmt(growth, 1)} MiB`,
        baseline: `RSS before: ${fmt(archive.rss() / 2 ** 20, 0)} MiB`,
        ratio: null,
        target: '< 50 MiB',
      });
    }
    return rows;
  } finally {
    await archive.stop();
  }
}
