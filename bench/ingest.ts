/**
 * Capture ingest with durable acknowledgement (issue 5; targets from issue 6).
 *
 * 1. Captures/s: unique 10 KB captures (request head + response head +
 *    {@link page10k} body, each with its own URI-R) PUT over HTTP to a real
 *    archive daemon (`bin/memento-archive.js`, its own process), at 1 and at
 *    32 concurrent PUTs, keep-alive connections, sent by wrk in its own
 *    process (each request's body made from a template with a serial). Every 201 means the WARC
 *    records were fsynced and the index row committed. Baseline, measured in
 *    the same run and alternated with it: a bare Node server that reads the
 *    same PUT bodies and answers 201, storing nothing (what HTTP alone costs).
 *    Target: ≥ 5,000 captures/s at 32 concurrent (issue 14; 3,000 before).
 *    The daemon has revisits on at the default interval
 *    (`revisit_interval: 1d`, written out): a new capture is never a
 *    revisit, so these figures do not depend on it.
 * 1b. Revisits/s (issue 24): identical 10 KB captures of URI-Rs already
 *    stored (1,000 per wrk thread, seeded before the rounds, outside the
 *    timing), each PUT dated exactly a day after that URI-R's last
 *    memento, so that each is a revisit: a WARC request + revisit record
 *    pair (no body), fsynced, and an index row, answered 201. 32 concurrent
 *    PUTs on the same daemon, in the same rounds as the 32-concurrent new
 *    captures and the same bare baseline (the arms go revisit, new, sink,
 *    gzip-level-1 daemon, reversed every other round). Every answer must be
 *    a 201, and the daemon's `/metrics` count the revisits.
 * 2. One 1 GiB capture, streamed (chunked) into the daemon until its 201,
 *    against piping the same 1 GiB through zlib gzip into a file (+ fsync) in
 *    a child process: the ratio is the daemon's throughput over gzip's, and
 *    the daemon's peak RSS while it ingests, on a fresh daemon (its idle RSS
 *    shown). Targets: ≥ 0.5× and RSS < 150 MiB. The RSS of the daemon that
 *    took the 10 KB runs is reported beside it: its caches (the newest
 *    memento per URL, SQLite's pages) hold what those runs taught them.
 *
 * `node --import tsx bench/ingest.ts` runs it alone; `npm run bench -- ingest`
 * runs it in the table.
 */

import { mkdirSync, rmSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import {
  alternate,
  type BenchRow,
  bareServer,
  capturesByResult,
  type Child,
  cpuSecondsOf,
  dataRoot,
  fmt,
  formatTable,
  load,
  median,
  note,
  page10k,
  rssOf,
  sampleRss,
  spawnServer,
  startArchiveProcess,
  writeArchiveConfig,
} from './lib.js';
import { keyedDate, keyedDays, keyedKey, SERIAL_DIGITS, wrkThreads } from './wrk.js';

export type { BenchRow };

const SECONDS = Number(process.env.INGEST_SECONDS ?? 4);
const ROUNDS = Number(process.env.INGEST_ROUNDS ?? 3);
const BIG = Number(process.env.INGEST_BIG_BYTES ?? 2 ** 30);
/** The archive's `revisit_interval` in this bench: the default, written out. */
const REVISIT_INTERVAL = '1d';
/** URI-Rs per wrk thread that the revisit arm captures again and again. */
const REVISIT_KEYS = 1000;
/** Concurrent PUTs of the revisit arm. */
const REVISIT_CONCURRENCY = 32;
/**
 * Budget: CPU µs (user + system, all threads of the daemon) per new 10 KB
 * capture at 32 concurrent PUTs; a run above it shows the row as missed.
 * Set from the measurements in bench/results.md (2026-11-28).
 */
const CPU_BUDGET_US = 1100;

/**
 * The template of a unique capture record of 10,240 body bytes for wrk
 * (bench/wrk.ts `bodyTemplate`): its `{n}`, in the URI-R and in the body's
 * first line, becomes a serial unique within the bench run, so that every
 * PUT is a new capture of its own URI-R.
 */
function capture10kTemplate(): string {
  const base = page10k(0).toString('latin1');
  const tag = '<!-- capture {n} -->\n';
  const tagBytes = tag.length - '{n}'.length + SERIAL_DIGITS;
  const body = tag + base.slice(0, base.length - tagBytes);
  const length = base.length;
  return (
    `GET /bench/page/{n}.html HTTP/1.1\r\nHost: www.example.org\r\nUser-Agent: bench\r\nX-Client-IP: 192.0.2.1\r\n\r\n` +
    `HTTP/1.1 200 OK\r\nDate: ${new Date().toUTCString()}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: ${length}\r\n\r\n` +
    body
  );
}

/**
 * The template of an identical capture of a stored URI-R for wrk's keyed
 * runs (bench/wrk.ts `keyed`): `{k}` in the URI-R names the URI-R (wrk
 * thread and key), `{date}` is its Date (a day after the key's capture
 * before); the body is {@link page10k} as it is, the same in every PUT.
 */
function revisit10kTemplate(): string {
  const body = page10k(0).toString('latin1');
  return (
    `GET /bench/revisit/{k}.html HTTP/1.1\r\nHost: www.example.org\r\nUser-Agent: bench\r\nX-Client-IP: 192.0.2.1\r\n\r\n` +
    `HTTP/1.1 200 OK\r\nDate: {date}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: ${body.length}\r\n\r\n` +
    body
  );
}

/**
 * Stores the first memento of every URI-R of the revisit arm: for each wrk
 * thread of a run on `connections` connections and each of `keys` keys,
 * the {@link revisit10kTemplate} capture dated `start + key` s (what
 * request `key` of a keyed run starting at `start` would send),
 * `connections` PUTs at a time. Returns the `start` of the first keyed
 * run: a day later.
 * @throws when a PUT is not answered 201
 */
async function seedRevisits(archive: Child, connections: number, keys: number, start: number): Promise<number> {
  const template = revisit10kTemplate();
  const todo: string[] = [];
  for (let t = 0; t < wrkThreads(connections); t++)
    for (let k = 0; k < keys; k++)
      todo.push(template.replace('{k}', keyedKey(t, k)).replace('{date}', new Date(keyedDate({ keys, start }, k) * 1000).toUTCString()));
  const worker = async () => {
    for (let body = todo.pop(); body !== undefined; body = todo.pop()) {
      const res = await fetch(`${archive.url}/put/bench`, { method: 'PUT', body: Buffer.from(body, 'latin1') });
      if (res.status !== 201) throw new Error(`seeding the revisit arm: a PUT answered ${res.status}: ${await res.text()}`);
    }
  };
  await Promise.all(Array.from({ length: connections }, worker));
  return start + 86_400;
}

/**
 * The archive's group-commit counters from its `/metrics` (sums and counts
 * of captures per batch and fsync seconds per batch); empty for a server
 * without them (the sink).
 */
async function batchCounters(server: Child): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  const res = await fetch(server.url + '/metrics').catch(() => null);
  if (!res?.ok) return out;
  for (const m of (await res.text()).matchAll(/^memento_archive_(batch_captures|fsync_seconds)_(sum|count) (\S+)$/gm)) out[`${m[1]}_${m[2]}`] = Number(m[3]);
  return out;
}

/**
 * PUTs new captures from `concurrency` keep-alive connections (wrk, its own
 * process) for `seconds` (with `keyed`: identical captures of the revisit
 * arm's URI-Rs, {@link revisit10kTemplate}, starting at `keyed.start`); returns acknowledged captures per second, the
 * server's CPU per capture (µs, user + system of all its threads), and for
 * the archive the mean captures per batch and fsync milliseconds per batch,
 * and the PUTs answered.
 * @throws on any answer but 201.
 */
async function putLoad(
  server: Child,
  concurrency: number,
  seconds: number,
  keyed?: { keys: number; start: number },
): Promise<{ rps: number; cpuUs: number; mainCpuUs: number; batch: number; fsyncMs: number; total: number }> {
  const counters = await batchCounters(server);
  const before = cpuSecondsOf(server.pid);
  const mainBefore = cpuSecondsOf(server.pid, server.pid);
  const r = await load({
    url: server.url,
    connections: concurrency,
    duration: seconds,
    path: '/put/bench',
    method: 'PUT',
    bodyTemplate: keyed ? revisit10kTemplate() : capture10kTemplate(),
    keyed,
    expect: [201],
  });
  const cpuUs = ((cpuSecondsOf(server.pid) - before) / r.total) * 1e6;
  const mainCpuUs = ((cpuSecondsOf(server.pid, server.pid) - mainBefore) / r.total) * 1e6;
  const after = await batchCounters(server);
  const d = (k: string) => (after[k] ?? 0) - (counters[k] ?? 0);
  const batches = d('batch_captures_count');
  return {
    rps: r.rps,
    cpuUs,
    mainCpuUs,
    batch: batches ? d('batch_captures_sum') / batches : 0,
    fsyncMs: batches ? (d('fsync_seconds_sum') / batches) * 1000 : 0,
    total: r.total,
  };
}

/** 1 MiB of HTML-like text with varying numbers (compresses about as much as a web page). */
function textChunk(): Buffer {
  let s = '';
  let i = 0;
  let x = 12345;
  while (s.length < 1024 * 1024) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    s += `<tr><td>${i++}</td><td class="v${x % 97}">${x.toString(36)} ${(x >>> 7).toString(16)}</td><td>row ${x % 1000} of the ledger</td></tr>\n`;
  }
  return Buffer.from(s.slice(0, 1024 * 1024));
}

/** `total` bytes of {@link textChunk} repeated. */
function* bigBody(total: number): Generator<Buffer> {
  const c = textChunk();
  for (let left = total; left > 0; left -= c.length) yield left >= c.length ? c : c.subarray(0, left);
}

/** Streams one capture of `BIG` body bytes to the archive; returns seconds until its 201 and the daemon's peak RSS. */
async function bigCapture(archive: Child): Promise<{ seconds: number; rss: number }> {
  const head =
    `GET /bench/big.bin HTTP/1.1\r\nHost: www.example.org\r\n\r\n` +
    `HTTP/1.1 200 OK\r\nDate: ${new Date().toUTCString()}\r\nContent-Type: text/html\r\nContent-Length: ${BIG}\r\n\r\n`;
  const u = new URL(archive.url);
  const rss = sampleRss(archive.pid, 20);
  const started = Date.now();
  await new Promise<void>((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, method: 'PUT', path: '/put/big', headers: { 'transfer-encoding': 'chunked' } }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => (res.statusCode === 201 || res.statusCode === 200 ? resolve() : reject(new Error(`big PUT answered ${res.statusCode}: ${text}`))));
    });
    req.on('error', reject);
    Readable.from(
      (function* () {
        yield Buffer.from(head, 'latin1');
        yield* bigBody(BIG);
      })(),
    ).pipe(req);
  });
  return { seconds: (Date.now() - started) / 1000, rss: rss.stop() };
}

/** The baseline: the same bytes through zlib gzip into a file, fsynced, in a child process. */
async function gzipBaseline(dir: string): Promise<{ seconds: number; rss: number }> {
  const out = path.join(dir, 'baseline.gz');
  const code = `
    const fs = require('node:fs'), zlib = require('node:zlib'), { pipeline } = require('node:stream/promises'), { Readable } = require('node:stream');
    ${textChunk.toString()}
    ${bigBody.toString()}
    const http = require('node:http');
    // Wait for the go, so that the bench samples RSS from the start.
    const server = http.createServer(async (req, res) => {
      const started = Date.now();
      const ws = fs.createWriteStream(${JSON.stringify(out)});
      await pipeline(Readable.from(bigBody(${BIG})), zlib.createGzip(), ws);
      const fd = fs.openSync(${JSON.stringify(out)}, 'r+'); fs.fsyncSync(fd); fs.closeSync(fd);
      res.end(String((Date.now() - started) / 1000));
    });
    server.listen(0, '127.0.0.1', () => console.log('gzip-baseline listening on http://127.0.0.1:' + server.address().port));
    process.on('SIGTERM', () => process.exit(0));
  `;
  const child = await spawnServer('gzip-baseline', ['-e', code]);
  try {
    const rss = sampleRss(child.pid, 20);
    const seconds = await new Promise<number>((resolve, reject) => {
      http
        .get(child.url + '/', (res) => {
          let t = '';
          res.on('data', (c) => (t += c));
          res.on('end', () => resolve(Number(t)));
        })
        .on('error', reject);
    });
    return { seconds, rss: rss.stop() };
  } finally {
    await child.stop();
    rmSync(out, { force: true });
  }
}

/** Runs the ingest benchmarks; rows for the bench table. */
export async function run(): Promise<BenchRow[]> {
  const dir = path.join(dataRoot, `ingest-${process.pid}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const rows: BenchRow[] = [];
  let archive = await startArchiveProcess('ingest-archive', writeArchiveConfig(dir, path.join(dir, 'data'), `revisit_interval: ${REVISIT_INTERVAL}\n`));
  // The same daemon with the fastest gzip level (warc_gzip_level: 1): the same runs, so that both have the same history.
  const fast = await startArchiveProcess(
    'ingest-archive-gzip1',
    writeArchiveConfig(path.join(dir, 'gzip1'), path.join(dir, 'gzip1', 'data'), 'warc_gzip_level: 1\n'),
  );
  const sink = await bareServer('sink');
  // INGEST_AB=<another checkout>: its daemon, same config, as one more arm (a same-run A/B of a change).
  const abRoot = process.env.INGEST_AB;
  const ab = abRoot
    ? await spawnServer('ingest-archive-ab', [
        path.join(abRoot, 'bin', 'memento-archive.js'),
        'serve',
        '--quiet',
        '--config',
        writeArchiveConfig(path.join(dir, 'ab'), path.join(dir, 'ab', 'data'), `revisit_interval: ${REVISIT_INTERVAL}\n`),
      ])
    : null;
  try {
    // The revisit arm's URI-Rs, stored once (2001-01-01 on: no other capture of the bench is near them), outside the timing.
    note(`ingest: seeding ${fmt(wrkThreads(REVISIT_CONCURRENCY) * REVISIT_KEYS)} URI-Rs for the revisit arm`);
    const keyed = { keys: REVISIT_KEYS, start: await seedRevisits(archive, REVISIT_CONCURRENCY, REVISIT_KEYS, Date.UTC(2001, 0, 1) / 1000) };
    const resultsBefore = await capturesByResult(archive.url);
    for (const conc of [1, 32]) {
      note(`ingest: 10 KB captures, ${conc} concurrent, ${ROUNDS} rounds of ${SECONDS} s per arm`);
      const revisitArm = async () => {
        const x = await putLoad(archive, REVISIT_CONCURRENCY, SECONDS, keyed);
        keyed.start += keyedDays(keyed.keys, x.total) * 86_400;
        return x;
      };
      const r = await alternate(ROUNDS, {
        // Revisits (at 32) on the same daemon as the new captures, just before them.
        ...(conc === REVISIT_CONCURRENCY ? { revisit: revisitArm } : {}),
        // The sink between the two daemons (and the order reversed each round): neither runs while the other's writes are flushed.
        archive: () => putLoad(archive, conc, SECONDS),
        sink: () => putLoad(sink, conc, SECONDS),
        fast: () => putLoad(fast, conc, SECONDS),
        ...(ab ? { ab: () => putLoad(ab, conc, SECONDS) } : {}),
      });
      const a = median(r.archive.map((x) => x.rps)),
        s = median(r.sink.map((x) => x.rps));
      const cpu = (xs: { cpuUs: number; mainCpuUs: number; batch: number; fsyncMs: number }[]) =>
        `${fmt(median(xs.map((x) => x.cpuUs)))} µs/capture, main thread ${fmt(median(xs.map((x) => x.mainCpuUs)))} µs; ${fmt(median(xs.map((x) => x.batch)), 1)} captures and ${fmt(median(xs.map((x) => x.fsyncMs)), 2)} ms of fsync per batch`;
      const sinkFigure = `${fmt(s)} PUTs/s (bare server reading the body, storing nothing; CPU ${fmt(median(r.sink.map((x) => x.cpuUs)))} µs/PUT)`;
      rows.push({
        name: `ingest: new 10 KB captures, ${conc} concurrent PUT${conc > 1 ? 's' : ''}, durable 201 (fsync + commit), revisits on (${REVISIT_INTERVAL}; a new capture is never a revisit)`,
        figure: `${fmt(a)} captures/s (CPU ${cpu(r.archive)})`,
        baseline: sinkFigure,
        ratio: a / s,
        target: conc === 32 ? '≥ 5,000 captures/s' : 'report',
      });
      if (conc === 32) {
        // CPU per capture of the daemon: all its threads (the budget) and its main thread (the event loop) alone.
        const total = median(r.archive.map((x) => x.cpuUs)),
          main = median(r.archive.map((x) => x.mainCpuUs));
        rows.push({
          name: `ingest: CPU per new 10 KB capture, ${conc} concurrent PUTs, all threads of the daemon (budget)`,
          figure: `${fmt(total)} µs/capture (main thread ${fmt(main)} µs, ${fmt((main / total) * 100)} %)`,
          baseline: `${fmt(median(r.sink.map((x) => x.cpuUs)))} µs/PUT (bare server reading the body)`,
          ratio: null,
          target: `≤ ${fmt(CPU_BUDGET_US)} µs`,
        });
        rows.push({
          name: `ingest: CPU per new 10 KB capture, ${conc} concurrent PUTs, the daemon's main thread (event loop) alone`,
          figure: `${fmt(main)} µs/capture`,
          baseline: `${fmt(median(r.sink.map((x) => x.mainCpuUs)))} µs/PUT (bare server's main thread)`,
          ratio: null,
          target: 'report',
        });
      }
      if (ab) {
        const b = median(r.ab.map((x) => x.rps));
        rows.push({
          name: `ingest: new 10 KB captures, ${conc} concurrent, this checkout / ${abRoot} (INGEST_AB, same config, alternated)`,
          figure: `${fmt(a)} captures/s (CPU ${cpu(r.archive)})`,
          baseline: `${fmt(b)} captures/s (CPU ${cpu(r.ab)})`,
          ratio: a / b,
          target: 'report',
        });
      }
      if (conc === REVISIT_CONCURRENCY) {
        const rv = median(r.revisit.map((x) => x.rps));
        const results = await capturesByResult(archive.url);
        const revisits = (results.revisit ?? 0) - (resultsBefore.revisit ?? 0);
        const answered = r.revisit.reduce((n, x) => n + x.total, 0);
        rows.push({
          name: `ingest: revisits/s: identical 10 KB captures of stored URI-Rs, each a day after its last memento (revisit_interval ${REVISIT_INTERVAL}: a WARC revisit record + index row each), ${conc} concurrent PUTs, durable 201`,
          figure: `${fmt(rv)} revisits/s (CPU ${cpu(r.revisit)}; ${fmt(rv / a, 2)}× the new captures'; ${fmt(revisits)} revisits counted by the archive for ${fmt(answered)} PUTs answered 201)`,
          baseline: sinkFigure,
          ratio: rv / s,
          target: 'report',
        });
      }
      if (conc === 32) {
        const f = median(r.fast.map((x) => x.rps));
        rows.push({
          name: `ingest: new 10 KB captures, ${conc} concurrent PUTs, durable 201, \`warc_gzip_level: 1\` (default 6)`,
          figure: `${fmt(f)} captures/s (CPU ${cpu(r.fast)}; ${fmt(f / a, 2)}× the default level's)`,
          baseline: sinkFigure,
          ratio: f / s,
          target: 'report',
        });
      }
    }
    await fast.stop();
    await ab?.stop();
    // The daemon's RSS after those runs (its caches hold what they learnt), then the big capture on a fresh daemon.
    const loadedRss = rssOf(archive.pid);
    await archive.stop();
    archive = await startArchiveProcess('ingest-archive-big', writeArchiveConfig(path.join(dir, 'big'), path.join(dir, 'big', 'data')));
    await new Promise((r) => setTimeout(r, 1000));
    const idleRss = rssOf(archive.pid);
    note(`ingest: one ${fmt(BIG / 2 ** 20)} MiB capture against gzip into a file`);
    const big = await bigCapture(archive);
    const base = await gzipBaseline(dir);
    rows.push({
      name: `ingest: one ${BIG === 2 ** 30 ? '1 GiB' : `${fmt(BIG / 2 ** 20)} MiB`} capture (streamed, chunked) until its 201`,
      figure: `${fmt(BIG / 2 ** 20 / big.seconds)} MiB/s (${fmt(big.seconds, 1)} s)`,
      baseline: `${fmt(BIG / 2 ** 20 / base.seconds)} MiB/s (${fmt(base.seconds, 1)} s): zlib gzip into a file + fsync`,
      ratio: base.seconds / big.seconds,
      target: '≥ 0.5×',
    });
    rows.push({
      name: 'ingest: peak RSS of the daemon during that capture (a fresh daemon)',
      figure: `${fmt(big.rss / 2 ** 20)} MiB (+${fmt((big.rss - idleRss) / 2 ** 20)} MiB over its idle ${fmt(idleRss / 2 ** 20)} MiB)`,
      baseline: `${fmt(base.rss / 2 ** 20)} MiB (the gzip process)`,
      ratio: big.rss / base.rss,
      target: '< 150 MiB',
    });
    rows.push({
      name: 'ingest: RSS of the daemon after the 10 KB capture runs (what its caches learnt: the newest memento per URL, SQLite pages)',
      figure: `${fmt(loadedRss / 2 ** 20)} MiB`,
      baseline: `${fmt(idleRss / 2 ** 20)} MiB (a fresh daemon, idle)`,
      ratio: loadedRss / idleRss,
      target: 'report',
    });
  } finally {
    await archive.stop();
    await fast.stop();
    await ab?.stop();
    await sink.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const rows = await run();
  process.stdout.write(formatTable(rows) + '\n');
  process.exit(0);
}
