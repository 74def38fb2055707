/**
 * Shared benchmark utilities: the row type every bench module returns,
 * servers under test in child processes, the load generator (wrk, in its
 * own process), alternating baseline/candidate rounds, medians, RSS
 * sampling and the table.
 *
 * Method (issue 6): the machine is shared and has 2 cores, so every figure
 * is the median of several rounds in which baseline and candidate run one
 * after the other (alternating order), and is printed with its baseline
 * measured in the same run. The servers under test run in their own
 * processes, and so does the load generator (wrk, bench/wrk.ts): each
 * figure is measured from outside the process under test.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, cpSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type OpenLoopOptions, type OpenLoopResult, openLoop } from './open-loop.js';
import { type LoadOptions, type LoadResult, wrkLoad } from './wrk.js';

/** Repository root. */
export const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** Bench data and logs (gitignored); cached seeded archives live here. */
export const dataRoot = path.join(repo, 'bench', '.data');

/**
 * One line of the bench table. `figure` and `baseline` are display strings
 * with their units; `ratio` is figure ÷ baseline (null when there is no
 * baseline); `target` as in the issue (`≥ 0.95×`, `≤ 1.1×`, `< 1 s`,
 * `≥ 3,000 captures/s`, `report`); `met` overrides the check that
 * {@link targetMet} derives from `target`.
 */
export interface BenchRow {
  name: string;
  figure: string;
  baseline: string;
  ratio: number | null;
  target?: string;
  met?: boolean;
}

// ---- statistics -------------------------------------------------------------

/** Median of `xs` (mean of the two middle values for an even count); NaN for none. */
export function median(xs: number[]): number {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/**
 * Runs `rounds` rounds; in each, every arm once, the order reversed every
 * other round (so a drift of the machine's load hits all arms alike).
 * Returns each arm's results in round order.
 */
export async function alternate<T>(rounds: number, arms: Record<string, () => Promise<T>>): Promise<Record<string, T[]>> {
  const names = Object.keys(arms);
  const out: Record<string, T[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 ? [...names].reverse() : names;
    for (const n of order) out[n].push(await arms[n]());
  }
  return out;
}

/**
 * A fixed pseudo-random sequence in [0, 1) from `seed`, the same in every
 * run: a 32-bit LCG (Numerical Recipes' constants) computed with
 * `Math.imul`, so its period is 2^32. (Computed in floating point, as
 * `(x * 1103515245 + 12345) >>> 0`, the product loses its low bits past
 * 2^53 and the sequence falls into a cycle of a few hundred to a few
 * thousand values.)
 */
export function lcg(seed: number): () => number {
  let x = seed >>> 0;
  return () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return x / 2 ** 32;
  };
}

/** `12345.6` → `12,346`; `0.1234` → `0.123`. */
export function fmt(n: number, digits?: number): string {
  if (!Number.isFinite(n)) return String(n);
  const d = digits ?? (Math.abs(n) >= 100 ? 0 : Math.abs(n) >= 10 ? 1 : Math.abs(n) >= 1 ? 2 : 3);
  return n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
}

// ---- load generator ---------------------------------------------------------

export type { LoadOptions, LoadResult } from './wrk.js';

/**
 * One run of the load generator, wrk, in its own process (bench/wrk.ts
 * {@link wrkLoad}: HTTP/1.1 keep-alive, `opts.connections` connections for
 * `opts.duration` s, dynamic paths/headers sampled 20,000 times first);
 * its script and request files go to {@link logDir}. Returns req/s and
 * latency p50/p99/mean in ms.
 * @throws when a response has another status than `opts.expect`, a socket
 *   failed or a request timed out (a bench of wrong answers is no bench),
 *   or wrk is not installed.
 */
export function load(opts: LoadOptions): Promise<LoadResult> {
  return wrkLoad(opts, logDir);
}

export type { OpenLoopOptions, OpenLoopResult } from './open-loop.js';

/**
 * One fixed-rate (open-loop, wrk2-style) run in its own process
 * (bench/open-loop.ts): requests due at fixed instants, `opts.rate` per
 * second, on a pool of keep-alive connections; latency counted from when
 * each request was due, so that waiting for a connection counts. Its
 * request file goes to {@link logDir}.
 * @throws when an answer has another status than `opts.expect` or a connection fails.
 */
export function openLoad(opts: OpenLoopOptions): Promise<OpenLoopResult> {
  mkdirSync(logDir, { recursive: true });
  return openLoop(opts, logDir);
}

// ---- servers under test -----------------------------------------------------

/** A server under test running in its own process. */
export interface Child {
  url: string;
  pid: number;
  proc: ChildProcess;
  /** Its output (stdout and stderr go to this file, so the bench process never reads a log pipe). */
  logFile: string;
  /** Resident set size now, bytes (from /proc/<pid>/status). */
  rss(): number;
  /** SIGTERM, then SIGKILL after 5 s; resolves once it exited. */
  stop(): Promise<void>;
}

const children = new Set<Child>();
let cleanupInstalled = false;

function installCleanup() {
  if (cleanupInstalled) return;
  cleanupInstalled = true;
  const killAll = () => {
    for (const c of children) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
  };
  process.on('exit', killAll);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.on(sig, () => {
      killAll();
      process.exit(130);
    });
  }
}

/**
 * The archive's read-cache counters so far (its `/metrics`):
 * `memento_archive_read_cache_lookups_total` of `cache` (`index` or
 * `record`), hits and misses. Zeros when the daemon has no such metric.
 */
export async function cacheLookups(url: string, cache: 'index' | 'record' = 'index'): Promise<{ hits: number; misses: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const count = (result: string) =>
    Number(new RegExp(`^memento_archive_read_cache_lookups_total\\{cache="${cache}",result="${result}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
  return { hits: count('hit'), misses: count('miss') };
}

/**
 * The archive's capture PUTs so far by result (its `/metrics`,
 * `memento_archive_captures_total`: `stored`, `revisit`, `duplicate`,
 * `conflict`, `refused`); an absent result counts 0.
 */
export async function capturesByResult(url: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^memento_archive_captures_total\{result="([a-z]+)"\} (\d+)/gm)) out[m[1]] = Number(m[2]);
  return out;
}

/**
 * CPU time (user + system) process `pid` has used so far, seconds, all its
 * threads (from /proc/<pid>/stat); with `tid`, that one thread's only (from
 * /proc/<pid>/task/<tid>/stat: `tid` = `pid` is the main thread, the one
 * that runs a Node process's event loop).
 */
export function cpuSecondsOf(pid: number, tid?: number): number {
  const stat = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
}

/**
 * Waits until the processes `pids` are quiet: together they used less than
 * `maxShare` of one core (0.05 = 5 %) over the last `windowMs`, sampled
 * from /proc every `windowMs`. For arms that follow heavy ones: an archive
 * still storing, indexing or committing the captures of the arm before
 * would otherwise take a core from the next arm and its baseline alike.
 * Gives up after `maxMs` and returns false (the caller notes it); true
 * once quiet. Resolution: /proc counts CPU in 10 ms ticks.
 */
export async function untilQuiet(pids: number[], opts: { windowMs?: number; maxShare?: number; maxMs?: number } = {}): Promise<boolean> {
  const windowMs = opts.windowMs ?? 250;
  const maxShare = opts.maxShare ?? 0.05;
  const deadline = Date.now() + (opts.maxMs ?? 60_000);
  const total = () => pids.reduce((a, pid) => a + cpuSecondsOf(pid), 0);
  let last = total();
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, windowMs));
    const now = total();
    if ((now - last) * 1000 <= windowMs * maxShare) return true;
    last = now;
  }
  return false;
}

/**
 * CPU time (user + system) of process `pid` and all its children so far,
 * seconds: its own, the children it has already reaped (cutime, cstime of
 * /proc/<pid>/stat) and those of its live children (e.g. a PostgreSQL
 * postmaster and its backends, which come and go with the connections).
 */
export function treeCpuSecondsOf(pid: number): number {
  const fields = (p: number | string) => {
    const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  };
  const own = fields(pid);
  let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const f = fields(p);
      if (Number(f[1]) === pid) ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
    } catch {
      // exited meanwhile
    }
  }
  return ticks / 100;
}

/** True when process `pid` exists. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Logs of this run's servers (one folder per bench run, so that two runs at once keep apart). */
export const logDir = path.join(dataRoot, 'logs', `run-${process.pid}`);

/** Removes the log folders of bench runs that are no longer running. */
export function removeStaleLogs(): void {
  let dirs: string[];
  try {
    dirs = readdirSync(path.join(dataRoot, 'logs'));
  } catch {
    return;
  }
  for (const d of dirs) {
    const m = /^run-(\d+)$/.exec(d);
    if (!m || !isAlive(Number(m[1]))) rmSync(path.join(dataRoot, 'logs', d), { recursive: true, force: true });
  }
}

/** Resident set size of process `pid`, bytes. */
export function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

/**
 * Starts `node <args>` (cwd: `cwd`, by default this repo) and resolves once its output has a
 * line `listening on http://host:port`. Output goes to `<dataRoot>/logs/run-<pid>/<name>.log`.
 * With `BENCH_CPU_PROF=1` in the environment, the child runs with
 * `--cpu-prof` and writes its profile to `<dataRoot>/profiles/<name>/` when
 * it exits ({@link summarizeCpuProfile} reads it).
 *
 * @throws when it exits first or does not listen within 60 s.
 */
export async function spawnServer(name: string, args: string[], env: Record<string, string> = {}, cwd = repo): Promise<Child> {
  installCleanup();
  mkdirSync(logDir, { recursive: true });
  const logFile = path.join(logDir, `${name}.log`);
  const fd = openSync(logFile, 'w');
  const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${path.join(dataRoot, 'profiles', name)}`] : [];
  const proc = spawn(process.execPath, [...prof, ...args], { cwd, stdio: ['ignore', fd, fd], env: { ...process.env, ...env } });
  closeSync(fd);
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const started = Date.now();
  let url: string | undefined;
  while (!url) {
    const text = readFileSync(logFile, 'utf8');
    const m = /listening on (http:\/\/[^\s/]+)/.exec(text);
    if (m) url = m[1];
    else if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`${name} exited before listening:\n${text.slice(-2000)}`);
    else if (Date.now() - started > 60_000) {
      proc.kill('SIGKILL');
      throw new Error(`${name} did not listen within 60 s:\n${text.slice(-2000)}`);
    } else await new Promise((r) => setTimeout(r, 50));
  }
  const child: Child = {
    url,
    pid: proc.pid!,
    proc,
    logFile,
    rss: () => rssOf(proc.pid!),
    async stop() {
      children.delete(child);
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM');
        const t = setTimeout(() => proc.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(t);
      }
    },
  };
  children.add(child);
  return child;
}

/** A 10 KB HTML page (10,240 bytes): the page the proxy and Memento benches serve. */
export function page10k(seed = 0): Buffer {
  const head = `<!DOCTYPE html>\n<html><head><title>Bench page ${seed}</title></head><body>\n`;
  const tail = '</body></html>\n';
  let body = '';
  let i = 0;
  while (head.length + body.length + tail.length < 10240) body += `<p>Paragraph ${i++} of page ${seed}: the quick brown fox jumps over the lazy dog.</p>\n`;
  return Buffer.from((head + body).slice(0, 10240 - tail.length) + tail);
}

/**
 * A bare Node http server in a child process, the baseline of the read
 * benches: `'302'` answers every request with a constant 302 (Location +
 * one-line text/plain body, as a TimeGate does); `'10k'` answers with a
 * constant 10 KB text/html page ({@link page10k}) and Content-Length, or,
 * for a target under `/new/`, the same page with a serial number written
 * into it (every answer a page the archive has not seen), and for a target
 * under `/clock/` the constant page with a `Date` from a fake clock of
 * that target, which starts at 2001-01-01 and moves one day and one second
 * forward with each answer, so that any two answers of one URL are more
 * than a day apart (each identical capture past a `revisit_interval` of
 * `1d`: a revisit record each) and stay in the past (the archive refuses a
 * capture dated more than a day ahead) for 9,000 answers per target;
 * `'sink'` reads a request body to its end and answers 201 (an archive
 * that stores nothing, to tell the proxy's own capture cost from the
 * archive's).
 */
export function bareServer(kind: '302' | '10k' | 'sink'): Promise<Child> {
  const code = `
    const http = require('node:http');
    const kind = ${JSON.stringify(kind)};
    const page = Buffer.from(${JSON.stringify(page10k(0).toString('base64'))}, 'base64');
    const loc = 'http://127.0.0.1/bench/memento/20260101000000/http://www.example.org/';
    let serial = 0;
    const clocks = new Map();
    const server = http.createServer((req, res) => {
      if (kind === '302') {
        const body = loc + '\\n';
        res.writeHead(302, { location: loc, 'content-type': 'text/plain; charset=UTF-8', 'content-length': Buffer.byteLength(body) });
        res.end(body);
      } else if (kind === 'sink') {
        req.resume();
        req.on('end', () => {
          res.writeHead(201, { location: loc, 'content-type': 'text/plain; charset=UTF-8', 'content-length': loc.length + 1 });
          res.end(loc + '\\n');
        });
      } else if (req.url.startsWith('/new/')) {
        const fresh = Buffer.from(page);
        fresh.write(String(++serial).padStart(12, '0'), 100, 'latin1');
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': fresh.length });
        res.end(fresh);
      } else if (req.url.startsWith('/clock/')) {
        const clock = (clocks.get(req.url) ?? Date.UTC(2001, 0, 1)) + 86401000;
        clocks.set(req.url, clock);
        res.writeHead(200, { date: new Date(clock).toUTCString(), 'content-type': 'text/html; charset=utf-8', 'content-length': page.length });
        res.end(page);
      } else {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': page.length });
        res.end(page);
      }
    });
    server.keepAliveTimeout = 60000;
    server.listen(0, '127.0.0.1', () => console.log('bare-' + kind + ' listening on http://127.0.0.1:' + server.address().port));
    process.on('SIGTERM', () => process.exit(0));
  `;
  return spawnServer(`bare-${kind}`, ['-e', code]);
}

/**
 * Samples `pid`'s RSS every `everyMs` until `stop()`; returns the peak (bytes).
 */
export function sampleRss(pid: number, everyMs = 10): { stop(): number } {
  let peak = rssOf(pid);
  const t = setInterval(() => {
    try {
      peak = Math.max(peak, rssOf(pid));
    } catch {
      /* exited */
    }
  }, everyMs);
  return {
    stop() {
      clearInterval(t);
      try {
        peak = Math.max(peak, rssOf(pid));
      } catch {
        /* exited */
      }
      return peak;
    },
  };
}

// ---- archives under test ----------------------------------------------------

/**
 * Writes an archive config (one open-span archive `bench`, listen on port 0)
 * for `dataDir` and returns its path.
 */
export function writeArchiveConfig(dir: string, dataDir: string, extra = ''): string {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'archive.yaml');
  writeFileSync(file, `listen: 127.0.0.1:0\ndata_dir: ${JSON.stringify(dataDir)}\narchives:\n  - id: bench\n${extra}`);
  return file;
}

/** Starts `bin/memento-archive.js serve --quiet --config <file>` in a child process (`env` added to this one's). */
export function startArchiveProcess(name: string, configFile: string, nodeArgs: string[] = [], env: Record<string, string> = {}): Promise<Child> {
  return spawnServer(name, [...nodeArgs, path.join(repo, 'bin', 'memento-archive.js'), 'serve', '--quiet', '--config', configFile], env);
}

// ---- A/B: another checkout ----------------------------------------------------

let baselineRoot: string | null = null;

/**
 * Sets the other checkout of `npm run bench -- NAME --baseline-dir <path>`:
 * the benches that support it (timegate, memento) then also start that
 * checkout's archive daemon ({@link startBaselineArchive}) and measure it in
 * the same alternating rounds as this checkout's.
 * @throws when `dir` has no `bin/memento-archive.js`
 */
export function setBaselineDir(dir: string): void {
  const root = path.resolve(dir);
  if (!existsSync(path.join(root, 'bin', 'memento-archive.js')))
    throw new Error(`--baseline-dir ${dir}: no bin/memento-archive.js there (not a checkout of this repository)`);
  baselineRoot = root;
}

/** The checkout given with `--baseline-dir`, or null. */
export function baselineDir(): string | null {
  return baselineRoot;
}

/**
 * Starts the archive daemon of the {@link baselineDir} checkout (its own
 * `bin/memento-archive.js serve --quiet`, cwd that checkout) on a copy of
 * the data folder `dataDir`, made under `bench/.data/ab-<pid>-<name>/`
 * (a daemon locks its data folder, so two cannot share one; copy before
 * this checkout's daemon opens `dataDir`), with the config of
 * {@link writeArchiveConfig} and `extra`. The copy is removed when the
 * daemon stops. The data was written by this checkout's code: a baseline
 * whose store format differs cannot read it.
 */
export async function startBaselineArchive(name: string, dataDir: string, extra = ''): Promise<Child> {
  if (!baselineRoot) throw new Error('startBaselineArchive: no --baseline-dir');
  const dir = path.join(dataRoot, `ab-${process.pid}-${name}`);
  rmSync(dir, { recursive: true, force: true });
  cpSync(dataDir, path.join(dir, 'data'), { recursive: true });
  const child = await spawnServer(
    name,
    [path.join(baselineRoot, 'bin', 'memento-archive.js'), 'serve', '--quiet', '--config', writeArchiveConfig(dir, path.join(dir, 'data'), extra)],
    {},
    baselineRoot,
  );
  const stop = child.stop.bind(child);
  child.stop = async () => {
    await stop();
    rmSync(dir, { recursive: true, force: true });
  };
  return child;
}

/**
 * s3rver (an S3-compatible server, npm) in a child process of its own, so
 * that its CPU time can be read apart from the archive's: 127.0.0.1, port
 * 0, objects in `dir`, one empty bucket `bucket`. Its keys are `S3RVER` /
 * `S3RVER`.
 */
export function s3Server(dir: string, bucket: string): Promise<Child> {
  mkdirSync(dir, { recursive: true });
  const code = `
    const S3rver = require('s3rver');
    const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: ${JSON.stringify(dir)}, configureBuckets: [{ name: ${JSON.stringify(bucket)}, configs: [] }] });
    server.run().then(({ port }) => console.log('s3rver listening on http://127.0.0.1:' + port));
    process.on('SIGTERM', () => server.close().then(() => process.exit(0)));
  `;
  return spawnServer('s3rver', ['-e', code]);
}

/**
 * A version stamp for cached bench data: hash of `files` (repo-relative;
 * the code that writes the data) and `params`. Data seeded by other code
 * is seeded again.
 */
export function stamp(files: string[], params: unknown): string {
  const h = createHash('sha256');
  for (const f of files) {
    try {
      h.update(readFileSync(path.join(repo, f)));
    } catch {
      h.update(`missing:${f}`);
    }
  }
  h.update(JSON.stringify(params));
  return h.digest('hex').slice(0, 12);
}

// ---- the table ----------------------------------------------------------------

/**
 * Whether a row meets its target: `met` when given; else the target
 * `≥|>|≤|< N×` against `ratio`, or `≥|>|≤|< N unit` against the first number
 * of `figure`; `null` when there is nothing to check (`report`, no target).
 */
export function targetMet(row: BenchRow): boolean | null {
  if (row.met !== undefined) return row.met;
  const m = /^\s*(≥|>=|>|≤|<=|<)\s*([\d,]*\.?\d+)\s*(×|x\b)?/.exec(row.target ?? '');
  if (!m) return null;
  const want = Number(m[2].replace(/,/g, ''));
  let have: number;
  if (m[3]) {
    if (row.ratio === null) return null;
    have = row.ratio;
  } else {
    const f = /([\d,]*\.?\d+)/.exec(row.figure);
    if (!f) return null;
    have = Number(f[1].replace(/,/g, ''));
  }
  switch (m[1]) {
    case '≥':
    case '>=':
      return have >= want;
    case '>':
      return have > want;
    case '≤':
    case '<=':
      return have <= want;
    default:
      return have < want;
  }
}

/** The table as GitHub markdown: benchmark | figure | baseline | ratio | target | met?. */
export function formatTable(rows: BenchRow[]): string {
  const lines = ['| benchmark | figure | baseline | ratio | target | met? |', '|---|---|---|---|---|---|'];
  for (const r of rows) {
    const met = targetMet(r);
    const ratio = r.ratio === null ? '—' : `${fmt(r.ratio, 2)}×`;
    lines.push(`| ${r.name} | ${r.figure} | ${r.baseline || '—'} | ${ratio} | ${r.target ?? '—'} | ${met === null ? '—' : met ? 'yes' : '**no**'} |`);
  }
  return lines.join('\n');
}

/**
 * A bench (or part of one) that threw: notes its stack on stderr and gives
 * the row that says so in the table, `<name>: failed`, with the error's
 * first line (at most 200 characters) as its figure and `met: false`.
 */
export function failedRow(name: string, err: unknown): BenchRow {
  note(`${name} failed: ${(err as Error).stack ?? err}`);
  return {
    name: `${name}: failed`,
    figure: String((err as Error).message ?? err)
      .split('\n')[0]
      .slice(0, 200),
    baseline: '',
    ratio: null,
    met: false,
  };
}

/** Progress line on stderr (the table goes to stdout). */
export function note(msg: string): void {
  process.stderr.write(`[bench] ${msg}\n`);
}

// ---- profiles -------------------------------------------------------------------

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

/**
 * The heaviest functions of a V8 `.cpuprofile` (node --cpu-prof) by self
 * time, and by package/folder: `{self: [[name, percent]], byPlace: [[place, percent]]}`,
 * percent of the busy (not idle) time.
 */
export function summarizeCpuProfile(file: string, top = 15): { self: [string, number][]; byPlace: [string, number][] } {
  const prof = JSON.parse(readFileSync(file, 'utf8')) as { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] };
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const selfTime = new Map<number, number>();
  for (const [i, id] of prof.samples.entries()) selfTime.set(id, (selfTime.get(id) ?? 0) + (prof.timeDeltas[i] ?? 0));
  // Percentages of the busy time: the servers idle between arms.
  const idle = prof.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id);
  for (const id of idle) selfTime.delete(id);
  const total = [...selfTime.values()].reduce((a, b) => a + b, 0) || 1;
  const fn = new Map<string, number>();
  const place = new Map<string, number>();
  for (const [id, t] of selfTime) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const rel = url.replace(/^file:\/\//, '').replace(repo + '/', '');
    const name = `${functionName || '(anonymous)'} ${rel ? `${rel}:${lineNumber + 1}` : ''}`.trim();
    fn.set(name, (fn.get(name) ?? 0) + t);
    const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(rel);
    const where = m
      ? m[1]
      : rel.startsWith('node:')
        ? 'node internals'
        : rel
          ? rel.split('/').slice(0, 2).join('/')
          : functionName.startsWith('(')
            ? functionName
            : 'native/V8';
    place.set(where, (place.get(where) ?? 0) + t);
  }
  const rank = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, v]) => [k, (100 * v) / total] as [string, number]);
  return { self: rank(fn), byPlace: rank(place) };
}
