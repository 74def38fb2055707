/**
 * A fixed-rate (open-loop) load generator, in the manner of wrk2, for the
 * latency of a server at a given request rate: Debian's wrk (4.1) has no
 * `-R`, and a closed loop (each connection waits for its answer before it
 * sends the next) under-reports the tail, because a slow answer delays the
 * requests behind it instead of being measured by them (coordinated
 * omission).
 *
 * How it measures: requests are due at fixed instants (`rate` per second);
 * every millisecond or so (a timer) the ones due are sent on idle
 * keep-alive connections of a pool (HTTP/1.1, one request at a time per
 * connection, no pipelining), and a request that finds every connection
 * busy waits for one. Each request's latency runs from the tick that found
 * it due (so time spent waiting for a connection — the server's slowness —
 * counts, as in wrk2; the generator's own timer lateness, under 1-2 ms
 * here, does not) to the last byte of its answer; `fromSchedule` also
 * counts that lateness (wrk2's exact figure). Answers are read by
 * Content-Length (chunked answers are not supported). It runs in its own
 * process (`node --import tsx bench/open-loop.ts <file>`), like wrk, so
 * that it takes its CPU from the same cores as the servers, the same way
 * for baseline and candidate.
 *
 * bench/lib.ts `openLoad` is the entry point the benches use.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** What one open-loop run is asked to do. */
export interface OpenLoopOptions {
  /** `http://127.0.0.1:port` */
  url: string;
  /** Requests per second, sent at fixed instants. */
  rate: number;
  /** Seconds. */
  duration: number;
  /** Keep-alive connections in the pool. */
  connections: number;
  /** The requests' targets and `Host`, cycled through. */
  targets: string[];
  host: string;
  /** Every answer must have this status, else the run fails. */
  expect: number;
}

/** What one open-loop run measured (times ms). */
export interface OpenLoopResult {
  /** Requests answered per second over the run. */
  rps: number;
  /** Latency percentiles from the tick that found each request due. */
  p50: number;
  p99: number;
  /** p99 from each request's scheduled instant (wrk2's figure, the generator's timer lateness included). */
  p99FromSchedule: number;
  /** Requests sent and answered. */
  total: number;
  /** The most requests waiting for a free connection at once. */
  maxWaiting: number;
  /** Median lateness of the timer ticks against the instants they served, ms. */
  tickLag: number;
}

const here = path.dirname(fileURLToPath(import.meta.url));

/**
 * Runs one open-loop load in a child process and returns what it measured.
 * @throws when an answer has another status than `opts.expect`, a
 *   connection fails, or the child exits without a result.
 */
export function openLoop(opts: OpenLoopOptions, dir: string): Promise<OpenLoopResult> {
  const file = path.join(dir, `open-loop-${process.pid}-${Date.now()}.json`);
  writeFileSync(file, JSON.stringify(opts));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(here, 'open-loop.ts'), file], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => {
      const line = /^OPEN_LOOP (.*)$/m.exec(out);
      if (code === 0 && line) resolve(JSON.parse(line[1]) as OpenLoopResult);
      else reject(new Error(`open-loop load on ${opts.url} failed (${code}): ${(err + out).trim().slice(-1500)}`));
    });
  });
}

/** A pooled connection and the request it is answering. */
interface Conn {
  socket: net.Socket;
  busy: boolean;
  due: number;
  scheduled: number;
  /** The head read so far. */
  buf: Buffer;
  /** Body bytes still to come; -1 while the head is being read. */
  left: number;
}

/** The child: runs the load described in `file` and prints `OPEN_LOOP {json}`. */
async function main(file: string): Promise<void> {
  const o = JSON.parse(readFileSync(file, 'utf8')) as OpenLoopOptions;
  const u = new URL(o.url);
  const reqs = o.targets.map((t) => Buffer.from(`GET ${t} HTTP/1.1\r\nHost: ${o.host}\r\n\r\n`, 'latin1'));
  const fromDue: number[] = [];
  const fromSchedule: number[] = [];
  const lags: number[] = [];
  const waiting: { due: number; scheduled: number }[] = [];
  let maxWaiting = 0;
  let nextReq = 0;
  let failure: string | undefined;
  const idle: Conn[] = [];
  const conns: Conn[] = [];
  for (let i = 0; i < o.connections; i++) {
    const socket = net.connect(Number(u.port), u.hostname);
    socket.setNoDelay(true);
    const c: Conn = { socket, busy: false, due: 0, scheduled: 0, buf: Buffer.alloc(0), left: -1 };
    socket.on('data', (d: Buffer) => onData(c, d));
    socket.on('error', (e) => (failure ??= `connection error: ${e.message}`));
    socket.on('close', () => {
      if (c.busy) failure ??= 'a connection closed before its answer';
    });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', () => resolve());
      socket.once('error', reject);
    });
    conns.push(c);
    idle.push(c);
  }
  const send = (c: Conn, due: number, scheduled: number) => {
    c.busy = true;
    c.due = due;
    c.scheduled = scheduled;
    c.socket.write(reqs[nextReq++ % reqs.length]);
  };
  const dispatch = () => {
    while (waiting.length && idle.length) {
      const w = waiting.shift()!;
      send(idle.pop()!, w.due, w.scheduled);
    }
  };
  function onData(c: Conn, data: Buffer): void {
    let d = data;
    while (d.length) {
      if (c.left < 0) {
        // Reading the head: keep its bytes until the blank line.
        c.buf = c.buf.length ? Buffer.concat([c.buf, d]) : d;
        const end = c.buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = c.buf.subarray(0, end).toString('latin1');
        const status = Number(head.slice(9, 12));
        if (status !== o.expect) failure ??= `answer ${status} (expected ${o.expect}): ${head.split('\r\n')[0]}`;
        c.left = Number(/content-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
        d = c.buf.subarray(end + 4);
        c.buf = Buffer.alloc(0);
      }
      // The body is counted, not kept.
      const take = Math.min(c.left, d.length);
      c.left -= take;
      d = d.subarray(take);
      if (c.left > 0) return;
      const now = performance.now();
      fromDue.push(now - c.due);
      fromSchedule.push(now - c.scheduled);
      c.left = -1;
      c.busy = false;
      idle.push(c);
      dispatch();
    }
  }
  const interval = 1000 / o.rate;
  const start = performance.now() + 20;
  const stop = start + o.duration * 1000;
  let next = start;
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now();
      if (next <= now) lags.push(now - next);
      while (next <= now && next < stop) {
        waiting.push({ due: now, scheduled: next });
        next += interval;
      }
      maxWaiting = Math.max(maxWaiting, waiting.length - idle.length);
      dispatch();
      if (next < stop && !failure) setTimeout(tick, Math.max(0, next - performance.now()));
      else resolve();
    };
    setTimeout(tick, Math.max(0, start - performance.now()));
  });
  // The answers still on their way.
  const deadline = performance.now() + 30_000;
  while ((waiting.length || conns.some((c) => c.busy)) && !failure && performance.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  for (const c of conns) c.socket.destroy();
  if (failure) throw new Error(failure);
  if (waiting.length || conns.some((c) => c.busy)) throw new Error('answers still missing 30 s after the last request was due');
  const pct = (xs: number[], p: number) => {
    const s = Float64Array.from(xs).sort();
    return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
  };
  const result: OpenLoopResult = {
    rps: fromDue.length / o.duration,
    p50: pct(fromDue, 50),
    p99: pct(fromDue, 99),
    p99FromSchedule: pct(fromSchedule, 99),
    total: fromDue.length,
    maxWaiting: Math.max(0, maxWaiting),
    tickLag: pct(lags, 50),
  };
  process.stdout.write(`OPEN_LOOP ${JSON.stringify(result)}\n`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  await main(process.argv[2]).catch((err: Error) => {
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  });
}
