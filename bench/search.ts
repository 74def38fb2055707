/**
 * The full-text search: what its index costs each capture, and how fast
 * `GET /search` answers at 100,000 mementos.
 *
 * 1. Index cost per capture, a same-run A/B. Two archive daemons
 *    (`bin/memento-archive.js serve`, each its own process and data
 *    folder, the same config): one as shipped, whose text indexer reads,
 *    parses (in its `text` work pool's thread) and stores the text of
 *    every new HTML memento after its commit; one started with
 *    `node --import ./bench/text-index-off.mjs`, which stops that indexer
 *    from ever starting (the archive has no setting for it; the earlier
 *    A/B in bench/results.md ran a checkout from before the text index,
 *    which now differs in much more than the index). Each round PUTs the
 *    same {@link CAPTURES} new captures to each, {@link CONCURRENCY} at a
 *    time: ~10 KB HTML pages of varied words (bench/search-pages.ts), a
 *    different page per capture. wrk's body template varies only a serial,
 *    so the bodies are made in advance and sent by a small Node client in
 *    its own process (keep-alive connections; every answer must be a 201).
 *    The figure is the daemon's CPU time per capture (all its threads, and
 *    its main thread alone, from /proc), counted from before the first PUT
 *    until the indexer has stored the text of the last capture (polled in
 *    the index file; the daemon without indexer: until its last 201), then
 *    200 ms more for both. Rounds alternate the two daemons.
 * 2. Query latency at 100k mementos: an archive of 100,000 HTML mementos
 *    with their text in the full-text index (bench/seed.ts `seedText`:
 *    bulk index rows and texts, not 100,000 PUTs), and `GET
 *    /search?…&output=json` for a common word, a rare word, a phrase, a
 *    prefix term and a common word within a `url=` prefix and a `from`/`to`
 *    window, each the same request repeated by wrk on
 *    {@link QUERY_CONNECTIONS} connections for {@link SECONDS} s, p50 and
 *    p99 latency and req/s (medians of {@link ROUNDS} rounds), beside a
 *    bare Node server answering a constant 302 in the same rounds (the
 *    ratio: the search's p50 over the bare server's). A query whose second
 *    answer (the first after the daemon's start reads from disk) takes over {@link SLOW_MS} ms is timed instead over
 *    {@link SLOW_REQUESTS} requests one after the other (p50 and max). The
 *    shortest prefix the search takes (two letters, {@link SHORT_PREFIX}*)
 *    takes seconds here, too long for wrk's runs: it is timed over
 *    {@link SLOW_REQUESTS} requests one after the other, each with a
 *    TimeMap GET sent 500 ms after it (the index reads both on one
 *    connection), against the same TimeMap alone.
 *
 * `BENCH_ROUNDS` and `BENCH_SECONDS` change the rounds (3) and the length
 * of a query run (3 s).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import sqlite3 from 'sqlite3';
import { formatHttpDate } from '#shared/http-date.js';
import {
  alternate,
  type BenchRow,
  bareServer,
  type Child,
  cpuSecondsOf,
  dataRoot,
  fmt,
  load,
  type LoadResult,
  median,
  note,
  repo,
  startArchiveProcess,
  writeArchiveConfig,
  failedRow,
} from './lib.js';
import { searchPage, PHRASE, RARE_WORD, wordsWithPrefix } from './search-pages.js';
import { seedText } from './seed.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
/** New captures PUT to each daemon per round. */
const CAPTURES = 1500;
/** Concurrent PUTs (as the ingest bench's CPU budget row). */
const CONCURRENCY = 32;
/** Mementos of the query archive. */
const MEMENTOS = 100_000;
/** wrk connections of the query rows. */
const QUERY_CONNECTIONS = 2;
/** The prefix of the prefix-term row (three letters). */
const PREFIX = 'kal';
/** The shortest prefix the search takes (archive/search/query.ts, two letters): too slow for wrk, measured one request at a time. */
const SHORT_PREFIX = 'ka';
/** Requests of the {@link SHORT_PREFIX} row, and of any query timed one request at a time. */
const SLOW_REQUESTS = 3;
/** A query whose second answer takes longer (ms) is timed one request at a time, not with wrk. */
const SLOW_MS = 1000;

// ---- 1. index cost per capture ---------------------------------------------------

/** The PUT client, run with `node -e` in its own process: sends the captures of a file, `concurrency` at a time. */
const CLIENT = `
const http = require('node:http'), fs = require('node:fs');
const [file, url, conc] = process.argv.slice(1);
const buf = fs.readFileSync(file);
const bodies = [];
for (let o = 0; o < buf.length; ) { const n = buf.readUInt32BE(o); bodies.push(buf.subarray(o + 4, o + 4 + n)); o += 4 + n; }
const agent = new http.Agent({ keepAlive: true, maxSockets: Number(conc) });
const u = new URL(url);
let next = 0;
const put = (body) => new Promise((resolve, reject) => {
  const req = http.request({ host: u.hostname, port: u.port, path: '/put/bench', method: 'PUT', agent, headers: { 'content-length': body.length } }, (res) => {
    let t = '';
    res.setEncoding('utf8');
    res.on('data', (c) => (t += c));
    res.on('end', () => (res.statusCode === 201 ? resolve() : reject(new Error('a PUT answered ' + res.statusCode + ': ' + t.slice(0, 300)))));
  });
  req.on('error', reject);
  req.end(body);
});
const started = process.hrtime.bigint();
const worker = async () => { while (next < bodies.length) await put(bodies[next++]); };
Promise.all(Array.from({ length: Number(conc) }, worker)).then(
  () => { console.log(JSON.stringify({ n: bodies.length, ms: Number(process.hrtime.bigint() - started) / 1e6 })); agent.destroy(); },
  (e) => { console.error(e.message); process.exit(1); },
);
`;

/**
 * Writes `count` capture records (request head, response head, body
 * {@link searchPage}(first + k)) of new URI-Rs under `tag` to `file`, each
 * prefixed by its length (4 bytes, big-endian), for {@link CLIENT}.
 */
function writeCaptures(file: string, tag: string, first: number, count: number): void {
  const parts: Buffer[] = [];
  const date = formatHttpDate(Math.floor(Date.now() / 1000));
  for (let k = 0; k < count; k++) {
    const body = searchPage(first + k);
    const head = Buffer.from(
      `GET /ingest/${tag}/${first + k}.html HTTP/1.1\r\nHost: www${k % 1000}.example.org\r\nUser-Agent: bench\r\nX-Client-IP: 192.0.2.1\r\n\r\n` +
        `HTTP/1.1 200 OK\r\nDate: ${date}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: ${body.length}\r\n\r\n`,
      'latin1',
    );
    const len = Buffer.alloc(4);
    len.writeUInt32BE(head.length + body.length);
    parts.push(len, head, body);
  }
  writeFileSync(file, Buffer.concat(parts));
}

/** Runs {@link CLIENT} on `file` against `server`; resolves with the captures sent and the milliseconds until the last 201. */
function putAll(server: Child, file: string, concurrency: number): Promise<{ n: number; ms: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', CLIENT, file, server.url, String(concurrency)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`PUT client: ${err.trim() || `exit ${code}`}`))));
  });
}

/** A read-only connection to a daemon's index file, for the bench's polls. */
async function openIndex(dataDir: string): Promise<sqlite3.Database> {
  return new Promise((resolve, reject) => {
    const d = new sqlite3.Database(path.join(dataDir, 'index.sqlite3'), sqlite3.OPEN_READONLY, (err) => (err ? reject(err) : resolve(d)));
  });
}

function one<T>(db: sqlite3.Database, sql: string): Promise<T> {
  return new Promise((resolve, reject) => db.get(sql, (err: Error | null, row: T) => (err ? reject(err) : resolve(row))));
}

/** Mementos, and texts stored, in an index file (the texts: the indexer's rows, archive/store/index/text-queries.ts). */
async function counts(db: sqlite3.Database): Promise<{ mementos: number; texts: number; lastMemento: number; lastText: number }> {
  return one(
    db,
    `SELECT (SELECT count(*) FROM memento) AS mementos, (SELECT count(*) FROM memento_text) AS texts,
      (SELECT coalesce(max(id), 0) FROM memento) AS lastMemento, (SELECT coalesce(max(rowid), 0) FROM memento_text) AS lastText`,
  );
}

/** Waits until the indexer has stored the text of the newest memento (it walks in row id order). @throws after 120 s */
async function drained(db: sqlite3.Database): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const c = await counts(db);
    if (c.lastText >= c.lastMemento) return;
    if (Date.now() > deadline) throw new Error(`the text indexer did not catch up within 120 s (text of row ${c.lastText} of ${c.lastMemento})`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

interface CostRun {
  cpuUs: number;
  mainCpuUs: number;
  /** Captures per second until the last 201. */
  rate: number;
  /** Milliseconds from the last 201 until the last text was stored. */
  lagMs: number;
}

/** One round of one arm: `count` new captures numbered from `first`, then (indexer on) until their text is stored. */
async function costRun(
  arm: { server: Child; db: sqlite3.Database; indexes: boolean; tag: string },
  dir: string,
  first: number,
  count: number,
): Promise<CostRun> {
  const file = path.join(dir, `captures-${arm.tag}-${first}.bin`);
  writeCaptures(file, `${arm.tag}/${first}`, first, count);
  const pid = arm.server.pid;
  const cpu0 = cpuSecondsOf(pid);
  const main0 = cpuSecondsOf(pid, pid);
  try {
    const sent = await putAll(arm.server, file, CONCURRENCY);
    const done = Date.now();
    if (arm.indexes) await drained(arm.db);
    const lagMs = Date.now() - done;
    await new Promise((r) => setTimeout(r, 200));
    return {
      cpuUs: ((cpuSecondsOf(pid) - cpu0) / sent.n) * 1e6,
      mainCpuUs: ((cpuSecondsOf(pid, pid) - main0) / sent.n) * 1e6,
      rate: sent.n / (sent.ms / 1000),
      lagMs,
    };
  } finally {
    rmSync(file, { force: true });
  }
}

/** Part 1 (see the module comment): its rows. */
async function indexCost(): Promise<BenchRow[]> {
  const dir = path.join(dataRoot, `search-cost-${process.pid}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const started: Child[] = [];
  const dbs: sqlite3.Database[] = [];
  try {
    const arm = async (tag: string, indexes: boolean) => {
      const dataDir = path.join(dir, tag, 'data');
      const off = indexes ? [] : ['--import', path.join(repo, 'bench', 'text-index-off.mjs')];
      const server = await startArchiveProcess(`search-cost-${tag}`, writeArchiveConfig(path.join(dir, tag), dataDir), off);
      started.push(server);
      const db = await openIndex(dataDir);
      dbs.push(db);
      return { server, db, indexes, tag };
    };
    const on = await arm('on', true);
    const off = await arm('off', false);
    note(`search: index cost, warm-up (${CONCURRENCY * 10} captures each)`);
    let next = 1_000_000;
    await costRun(on, dir, next, CONCURRENCY * 10);
    await costRun(off, dir, next, CONCURRENCY * 10);
    next += CONCURRENCY * 10;
    note(`search: index cost, ${ROUNDS} rounds × 2 daemons × ${fmt(CAPTURES)} new ~10 KB HTML captures, ${CONCURRENCY} concurrent`);
    // Round i of each daemon: the same pages, numbered from next + i·CAPTURES.
    const round = { on: 0, off: 0 };
    const r = await alternate(ROUNDS, {
      on: () => costRun(on, dir, next + round.on++ * CAPTURES, CAPTURES),
      off: () => costRun(off, dir, next + round.off++ * CAPTURES, CAPTURES),
    });
    const onCounts = await counts(on.db);
    const offCounts = await counts(off.db);
    if (onCounts.texts !== onCounts.mementos) throw new Error(`text index on: ${onCounts.texts} texts for ${onCounts.mementos} mementos`);
    if (offCounts.texts !== 0) throw new Error(`text index off: ${offCounts.texts} texts stored`);
    const m = (xs: CostRun[], k: keyof CostRun) => median(xs.map((x) => x[k]));
    const diff = (k: 'cpuUs' | 'mainCpuUs') => median(r.on.map((x, i) => x[k] - r.off[i][k]));
    const shape = `${fmt(CAPTURES)} new ~10 KB HTML captures (varied words) per round, ${CONCURRENCY} concurrent PUTs`;
    return [
      {
        name: `search: CPU per new capture, text index on / off (bench/text-index-off.mjs), ${shape}; on: counted until the text of the last capture is stored`,
        figure: `${fmt(m(r.on, 'cpuUs'))} µs/capture (main thread ${fmt(m(r.on, 'mainCpuUs'))} µs); ${fmt(m(r.on, 'rate'))} captures/s, text stored ${fmt(m(r.on, 'lagMs'))} ms after the last 201 (${fmt(onCounts.texts)} texts for ${fmt(onCounts.mementos)} mementos)`,
        baseline: `${fmt(m(r.off, 'cpuUs'))} µs/capture (main thread ${fmt(m(r.off, 'mainCpuUs'))} µs); ${fmt(m(r.off, 'rate'))} captures/s (no text stored)`,
        ratio: m(r.on, 'cpuUs') / m(r.off, 'cpuUs'),
        target: 'report',
      },
      {
        name: `search: the text index's CPU per new capture (on − off, median of the rounds' differences), ${shape}`,
        figure: `${fmt(diff('cpuUs'))} µs/capture all threads, ${fmt(diff('mainCpuUs'))} µs main thread`,
        baseline: '',
        ratio: null,
        target: 'report',
      },
    ];
  } finally {
    for (const db of dbs) await new Promise<void>((resolve) => db.close(() => resolve()));
    for (const c of started.reverse()) await c.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---- 2. query latency at 100k mementos ----------------------------------------------

/** The queries measured with wrk: a name for the row and the query string (without `output`). */
function queries(): { name: string; query: string }[] {
  const [first, second] = PHRASE.split(' ');
  return [
    { name: 'a common word ("news", in about 85 % of the pages)', query: 'q=news' },
    { name: `a rare word ("${RARE_WORD}", planted in 1 page of 10,000)`, query: `q=${RARE_WORD}` },
    { name: `a phrase ("${first} ${second}", planted in 1 page of 10)`, query: `q=${encodeURIComponent(`"${first} ${second}"`)}` },
    { name: `a prefix term (${PREFIX}*: ${fmt(wordsWithPrefix(PREFIX))} words of the vocabulary begin so)`, query: `q=${PREFIX}*` },
    {
      name: 'a common word within a url= prefix (one host of 1,000) and a from/to window (2022–2023)',
      query: `q=news&url=${encodeURIComponent('http://www7.example.org/*')}&from=2022&to=2023`,
    },
  ];
}

/** A GET of `url`, read to its end; its milliseconds. @throws on another status than `status` */
async function timed(url: string, status = 200): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(url);
  const text = await res.text();
  if (res.status !== status) throw new Error(`${url}: ${res.status} ${text.slice(0, 200)}`);
  return performance.now() - t0;
}

/** What `GET /search?<query>&output=json` counts: its total, whether it was capped, and how long that first request took (ms). @throws on another status than 200 */
async function hits(server: Child, query: string): Promise<{ total: number; capped: boolean; ms: number }> {
  const t0 = performance.now();
  const res = await fetch(`${server.url}/search?${query}&output=json`);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`/search?${query}: ${res.status} ${text.slice(0, 200)}`);
  return { ...(JSON.parse(text) as { total: number; capped: boolean }), ms: performance.now() - t0 };
}

/**
 * The shortest prefix the search takes ({@link SHORT_PREFIX}*), too slow
 * for wrk's runs: {@link SLOW_REQUESTS} searches one after the other, and
 * 500 ms into each a TimeMap GET of one URI-R (the full-text reads have
 * an index connection of their own: the TimeMap should not wait), against
 * the same TimeMap alone.
 */
async function shortPrefix(archive: Child, uriR: string): Promise<{ search: number[]; timemapDuring: number[]; timemapAlone: number[] }> {
  const timemap = `${archive.url}/bench/timemap/link/${uriR}`;
  const timemapAlone: number[] = [];
  for (let k = 0; k < SLOW_REQUESTS; k++) timemapAlone.push(await timed(timemap));
  const search: number[] = [];
  const timemapDuring: number[] = [];
  for (let k = 0; k < SLOW_REQUESTS; k++) {
    const s = timed(`${archive.url}/search?q=${SHORT_PREFIX}*&output=json`);
    await new Promise((r) => setTimeout(r, 500));
    timemapDuring.push(await timed(timemap));
    search.push(await s);
  }
  return { search, timemapDuring, timemapAlone };
}

/** p50, p99 and req/s of a query's wrk runs (medians over the rounds) and the requests they answered. */
function summary(xs: LoadResult[]): { p50: number; p99: number; rps: number; n: number } {
  return {
    p50: median(xs.map((x) => x.p50)),
    p99: median(xs.map((x) => x.p99)),
    rps: median(xs.map((x) => x.rps)),
    n: xs.reduce((k, x) => k + x.total, 0),
  };
}

/** Part 2 (see the module comment): its rows. */
async function queryLatency(): Promise<BenchRow[]> {
  const seeded = await seedText('search-100k', MEMENTOS);
  const started: Child[] = [];
  try {
    const bare = await bareServer('302');
    started.push(bare);
    const archive = await startArchiveProcess('search-100k', seeded.configFile);
    started.push(archive);
    const qs = [];
    // Each query twice: the first after the daemon's start reads the index from disk; the second's time sorts it.
    for (const q of queries()) {
      await hits(archive, q.query);
      qs.push({ ...q, ...(await hits(archive, q.query)) });
    }
    // A query whose second answer took longer than SLOW_MS is timed one request at a time: a wrk run of a few seconds would answer too few of it.
    const fast = qs.filter((q) => q.ms <= SLOW_MS);
    const slow = qs.filter((q) => q.ms > SLOW_MS);
    const run =
      (server: Child, target: string, d = SECONDS) =>
      (): Promise<LoadResult> =>
        load({ url: server.url, connections: QUERY_CONNECTIONS, duration: d, path: target, expect: [server === bare ? 302 : 200] });
    note('search: query warm-up');
    await run(bare, '/', 1)();
    for (const q of fast) await run(archive, `/search?${q.query}&output=json`, 2)();
    note(`search: ${ROUNDS} rounds × ${fast.length + 1} arms × ${SECONDS} s, ${QUERY_CONNECTIONS} connections`);
    const arms: Record<string, () => Promise<LoadResult>> = { bare: run(bare, '/') };
    fast.forEach((q, i) => (arms[`q${i}`] = run(archive, `/search?${q.query}&output=json`)));
    const r = await alternate(ROUNDS, arms);
    const b = summary(r.bare);
    note(`search: ${slow.length} slow queries, ${SLOW_REQUESTS} requests each, one at a time`);
    const seq: number[][] = [];
    for (const q of slow) {
      const ms: number[] = [];
      for (let k = 0; k < SLOW_REQUESTS; k++) ms.push(await timed(`${archive.url}/search?${q.query}&output=json`));
      seq.push(ms);
    }
    note(`search: ${SHORT_PREFIX}*, ${SLOW_REQUESTS} requests one at a time, and a TimeMap during each`);
    const sp = await shortPrefix(archive, seeded.uris[7]);
    const spHits = await hits(archive, `q=${SHORT_PREFIX}*`);
    const rss = archive.rss();
    const baseline = `bare Node 302: p50 ${fmt(b.p50, 3)} ms, p99 ${fmt(b.p99, 3)} ms, ${fmt(b.rps)} req/s`;
    const at = `search at ${fmt(seeded.mementos)} mementos with text (GET /search?…&output=json)`;
    const counts = (c: { total: number; capped: boolean }) => `${fmt(c.total, 0)} hits${c.capped ? ', capped' : ''}`;
    const oneByOne = (ms: number[], c: { total: number; capped: boolean }) =>
      `p50 ${fmt(median(ms))} ms, max ${fmt(Math.max(...ms))} ms, ${fmt((1000 * ms.length) / ms.reduce((x, y) => x + y, 0), 2)} req/s (${counts(c)})`;
    const rows: BenchRow[] = [
      ...fast.map((q, i) => {
        const a = summary(r[`q${i}`]);
        return {
          name: `${at}, ${QUERY_CONNECTIONS} connections: ${q.name}`,
          figure: `p50 ${fmt(a.p50)} ms, p99 ${fmt(a.p99)} ms, ${fmt(a.rps)} req/s (${counts(q)}; ${fmt(a.n, 0)} requests in ${ROUNDS} runs)`,
          baseline,
          ratio: a.p50 / b.p50,
          target: 'report',
        };
      }),
      ...slow.map((q, i) => ({
        name: `${at}, 1 connection, ${SLOW_REQUESTS} requests one after the other (its second answer took ${fmt(q.ms / 1000, 1)} s: too slow for wrk's runs): ${q.name}`,
        figure: oneByOne(seq[i], q),
        baseline,
        ratio: median(seq[i]) / b.p50,
        target: 'report',
      })),
      {
        name: `${at}, 1 connection, ${SLOW_REQUESTS} requests one after the other: the shortest prefix taken (${SHORT_PREFIX}*: ${fmt(wordsWithPrefix(SHORT_PREFIX))} words of the vocabulary begin so)`,
        figure: `${oneByOne(sp.search, spHits)}; daemon RSS ${fmt(rss / 2 ** 20)} MiB after the rounds`,
        baseline,
        ratio: median(sp.search) / b.p50,
        target: 'report',
      },
      {
        name: `TimeMap (link format) of one URI-R, sent 500 ms into each of those ${SHORT_PREFIX}* searches (the full-text reads have their own index connection)`,
        figure: `p50 ${fmt(median(sp.timemapDuring))} ms (${sp.timemapDuring.map((x) => fmt(x)).join(', ')})`,
        baseline: `p50 ${fmt(median(sp.timemapAlone))} ms alone, just before`,
        ratio: median(sp.timemapDuring) / median(sp.timemapAlone),
        target: 'report',
      },
    ];
    return rows;
  } finally {
    for (const c of started.reverse()) await c.stop();
  }
}

/** Runs both parts; their rows (a part that fails gives a row saying so, and the other's rows stay). */
export async function run(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const [name, part] of [
    ['index cost per capture', indexCost],
    ['query latency', queryLatency],
  ] as const) {
    try {
      rows.push(...(await part()));
    } catch (err) {
      rows.push(failedRow(`search: ${name}`, err));
    }
  }
  return rows;
}
