/**
 * Client latency through the capture proxy with the archive up, down and
 * slow, against the same proxy with capture off (issue 4: "the client never
 * waits for the archive").
 *
 *   node --import tsx bench/proxy-latency.ts      # prints a table
 *
 * Processes (each its own, on the machine's 2 cores): a content server (a
 * constant 10 KB HTML page on every path), the archive daemon
 * (`bin/memento-archive.js`, fresh data folder), a slow archive (reads each
 * PUT, answers 201 only after 500 ms), and one capture proxy
 * (`bin/capture-proxy.js`, its log to a file) with four vhosts on the same
 * content server, picked by `Host`: `off.bench` (EnableArchiving Off, the
 * baseline), `up.bench` (to the archive), `down.bench` (to a port nothing
 * listens on: every capture goes to the spool) and `slow.bench` (to the
 * slow archive). The load generator is wrk, in its own process (lib.ts
 * `load`). The pages do not change: with the archive up, every capture
 * after a path's first is asked about in a POST of questions (with the
 * others that end in the same turn) and answered `unchanged` (the proxy's
 * default); down, every capture is spooled; slow, every request waits
 * 500 ms (the slow archive answers the POST of questions 201, which the
 * proxy does not take for an answer, and takes any PUT, conditional or
 * not).
 *
 * Each arm: one keep-alive connection (a client's own wait, not queueing
 * behind others), requests cycling over 100 paths, for {@link SECONDS} s;
 * every answer must be a 200. The arms run alternately, {@link ROUNDS}
 * rounds (order reversed every other round); each figure is the median
 * over rounds of that arm's p50 / p99 (wrk's latency histogram, µs).
 * Rows: p50 and p99 for up, down and slow, each with its ratio to capture off measured in the same rounds (what a capture
 * costs on a machine where the proxy, the archive, the content server and
 * the load generator share 2 cores); req/s on one connection for the same
 * arms; and down and slow against up (target p50 ≤ 1.1×: the client does
 * not wait for the archive, whatever state it is in).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type BenchRow, load, median } from './lib.js';

export type { BenchRow };

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const PATHS = 100;
const SLOW_MS = 500;

interface Child {
  url: string;
  proc: ChildProcess;
  stop(): Promise<void>;
}

/** Runs `node args…` and resolves once it prints `listening on http://…`. */
function spawnNode(args: string[], logFile?: string): Promise<Child> {
  const out = logFile ? openSync(logFile, 'w') : 'ignore';
  const proc = spawn(process.execPath, args, { cwd: repo, stdio: ['ignore', 'pipe', out === 'ignore' ? 'pipe' : out] });
  let seen = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${args.join(' ')} did not start:\n${seen}`)), 60_000);
    proc.once('exit', (code) => reject(new Error(`${args.join(' ')} exited (${code}):\n${seen}`)));
    proc.stderr?.on('data', (d: Buffer) => (seen += d.toString()));
    proc.stdout!.on('data', (d: Buffer) => {
      if (!/listening on http/.test(seen)) seen += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(seen);
      if (m && timer) {
        clearTimeout(timer);
        proc.stdout!.removeAllListeners('data');
        proc.stdout!.resume(); // the rest of the log is not needed; never let the pipe fill
        resolve({
          url: m[1].replace(/\/$/, ''),
          proc,
          stop: () =>
            new Promise<void>((r) => {
              if (proc.exitCode !== null || proc.signalCode !== null) return r();
              proc.once('exit', () => r());
              proc.kill('SIGTERM');
              setTimeout(() => proc.kill('SIGKILL'), 10_000).unref();
            }),
        });
      }
    });
  });
}

/** A small server in its own process: `page` (10 KB HTML on every path) or `slow` (a PUT sink answering after {@link SLOW_MS}). */
function helperServer(kind: 'page' | 'slow'): Promise<Child> {
  const code =
    kind === 'page'
      ? `const http = require('node:http');
         const body = Buffer.from('<!doctype html><html><head><title>bench</title></head><body>' + 'x'.repeat(10 * 1024 - 80) + '</body></html>');
         const s = http.createServer((req, res) => { res.writeHead(200, { 'Content-Type': 'text/html', 'Content-Length': body.length }); res.end(body); });
         s.keepAliveTimeout = 60000;
         s.listen(0, '127.0.0.1', () => console.log('listening on http://127.0.0.1:' + s.address().port));`
      : `const http = require('node:http');
         const s = http.createServer((req, res) => { req.resume(); req.on('end', () => setTimeout(() => { res.writeHead(201); res.end('stored\\n'); }, ${SLOW_MS})); });
         s.listen(0, '127.0.0.1', () => console.log('listening on http://127.0.0.1:' + s.address().port));`;
  return spawnNode(['-e', code]);
}

/** A TCP port nothing listens on. */
async function deadPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/**
 * One wrk run (lib.ts {@link load}) on one keep-alive connection, requests
 * cycling over {@link PATHS} paths with `Host: <host>`; every answer must be
 * a 200. Latency p50 / p99 in ms (wrk's µs histogram), and req/s.
 */
async function measure(url: string, host: string): Promise<{ p50: number; p99: number; rps: number }> {
  let n = 0;
  const r = await load({ url, connections: 1, duration: SECONDS, path: () => `/p/${n++ % PATHS}`, headers: { Host: host }, expect: [200] });
  return { p50: r.p50, p99: r.p99, rps: r.rps };
}

const ms = (x: number) => `${x.toFixed(3)} ms`;

/**
 * Runs the benchmark (about `ROUNDS × 4 × SECONDS` s plus start-up) and
 * returns its rows: p50, p99 and req/s on one connection with the archive
 * up, down and slow, each against capture off.
 */
export async function run(): Promise<BenchRow[]> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-proxy-latency-'));
  const children: Child[] = [];
  try {
    const page = await helperServer('page');
    children.push(page);
    const slow = await helperServer('slow');
    children.push(slow);
    const archiveData = path.join(dir, 'archive');
    writeFileSync(path.join(dir, 'archive.yaml'), `listen: 127.0.0.1:0\ndata_dir: ${JSON.stringify(archiveData)}\narchives:\n  - id: current\n`);
    const archive = await spawnNode(
      [path.join(repo, 'bin', 'memento-archive.js'), 'serve', '--config', path.join(dir, 'archive.yaml'), '--quiet'],
      path.join(dir, 'archive.log'),
    );
    children.push(archive);
    const down = await deadPort();
    const portOf = (u: string) => new URL(u).port;
    mkdirSync(path.join(dir, 'vhosts'));
    writeFileSync(
      path.join(dir, 'vhosts', 'bench.yaml'),
      [
        `- server_name: off.bench\n  upstream: ${page.url}\n  EnableArchiving: Off\n`,
        `- server_name: up.bench\n  upstream: ${page.url}\n  ArchivePort: ${portOf(archive.url)}\n`,
        `- server_name: down.bench\n  upstream: ${page.url}\n  ArchivePort: ${down}\n`,
        `- server_name: slow.bench\n  upstream: ${page.url}\n  ArchivePort: ${portOf(slow.url)}\n`,
      ].join(''),
    );
    writeFileSync(path.join(dir, 'proxy.yaml'), 'listen: 127.0.0.1:0\nvhosts: vhosts/\nspool: spool/\nspool_retry_min: 5\nspool_retry_max: 60\n');
    const proxy = await spawnNode([path.join(repo, 'bin', 'capture-proxy.js'), '--config', path.join(dir, 'proxy.yaml')], path.join(dir, 'proxy-stderr.log'));
    children.push(proxy);

    const arms = ['off', 'up', 'down', 'slow'] as const;
    const results: Record<(typeof arms)[number], { p50: number; p99: number; rps: number }[]> = { off: [], up: [], down: [], slow: [] };
    for (const arm of arms) await measure(proxy.url, `${arm}.bench`); // warm-up: JIT, connections, the archive's first captures
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 ? [...arms].reverse() : arms;
      for (const arm of order) results[arm].push(await measure(proxy.url, `${arm}.bench`));
    }
    const stat = (arm: (typeof arms)[number], k: 'p50' | 'p99' | 'rps') => median(results[arm].map((x) => x[k]));
    const rows: BenchRow[] = [];
    for (const arm of ['up', 'down', 'slow'] as const) {
      const what = arm === 'up' ? 'archive up' : arm === 'down' ? 'archive down (captures spooled)' : `archive slow (answers after ${SLOW_MS} ms)`;
      for (const k of ['p50', 'p99'] as const) {
        rows.push({
          name: `proxy latency ${k}, ${what}, vs capture off`,
          figure: ms(stat(arm, k)),
          baseline: ms(stat('off', k)),
          ratio: stat(arm, k) / stat('off', k),
          target: 'report',
        });
      }
      rows.push({
        name: `proxy req/s on 1 connection, ${what}, vs capture off`,
        figure: `${stat(arm, 'rps').toFixed(0)} req/s`,
        baseline: `${stat('off', 'rps').toFixed(0)} req/s`,
        ratio: stat(arm, 'rps') / stat('off', 'rps'),
        target: 'report',
      });
    }
    // The client never waits for the archive: its latency must not depend on the archive's state.
    for (const arm of ['down', 'slow'] as const) {
      const what = arm === 'down' ? 'archive down' : 'archive slow';
      for (const k of ['p50', 'p99'] as const) {
        rows.push({
          name: `proxy latency ${k}, ${what} vs archive up`,
          figure: ms(stat(arm, k)),
          baseline: ms(stat('up', k)),
          ratio: stat(arm, k) / stat('up', k),
          target: k === 'p50' ? '≤ 1.1×' : 'report',
        });
      }
    }
    return rows;
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The rows as a text table. */
export function table(rows: BenchRow[]): string {
  const head = ['benchmark', 'figure', 'baseline', 'ratio', 'target'];
  const body = rows.map((r) => [r.name, r.figure, r.baseline, r.ratio === null ? '-' : `${r.ratio.toFixed(2)}×`, r.target ?? '']);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)].join('\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const rows = await run();
  process.stdout.write(table(rows) + '\n');
}
