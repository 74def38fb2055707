/**
 * The bench's load generator: wrk (apt `wrk`, /usr/bin/wrk) in its own
 * process, driven by a Lua script this module writes. Performance is
 * measured from outside the process under test: a load generator inside
 * the bench process (autocannon, as before) took CPU from the same 2 cores
 * as the servers and pulled every ratio towards 1. wrk still shares the
 * cores, the same way for baseline and candidate, but costs far less per
 * request. Its Lua response() hook makes it read every body (to count the
 * statuses): baseline and candidate pay the same.
 *
 * bench/lib.ts {@link load} is the entry point the benches use.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** What one wrk run measured. */
export interface LoadResult {
  /** Completed requests per second over the run. */
  rps: number;
  /** Latency percentiles and mean, ms (wrk's histogram keeps µs). */
  p50: number;
  p99: number;
  mean: number;
  /** Completed requests. */
  total: number;
  /** Responses by status code. */
  statuses: Record<string, number>;
  /** Socket errors (connect, read, write) and timeouts; a run with any throws, so a returned result has 0. */
  errors: number;
}

export interface LoadOptions {
  /** Base URL, `http://127.0.0.1:port`. */
  url: string;
  connections: number;
  /** Seconds (whole; wrk's `-d`). */
  duration: number;
  /** Request path (raw target), or a function giving one per request. */
  path: string | (() => string);
  headers?: Record<string, string> | (() => Record<string, string>);
  /** Every response must have one of these statuses, else the run throws. */
  expect: number[];
  /** Request method (default `GET`). */
  method?: string;
  /**
   * A request body made anew for each request (for PUTs that must each be
   * new): every `{n}` in it is replaced by a serial of {@link SERIAL_DIGITS}
   * digits unique within the bench process (run, thread, count), so every
   * body has the same length. Sent with `Content-Length`.
   */
  bodyTemplate?: string;
  /**
   * With {@link bodyTemplate}: the same URI-Rs captured again and again,
   * a day apart. Each wrk thread counts its requests from 0 (`c`); `{k}`
   * becomes `TT-KKKKKK`, the thread and the key `c mod keys`, and `{date}`
   * the HTTP-date (29 characters) `start + floor(c / keys) days + (c mod keys) s`:
   * request `c + keys` of a thread repeats the key of request `c` one day
   * later. So a run gives `keys` keys per thread, each dated
   * `start + key s` on its first use ({@link keyedDate}); the next run
   * starts after the last day this one used: {@link keyedDays}.
   */
  keyed?: { keys: number; start: number };
}

/** wrk threads of a run on `connections` connections: 2, or 1 for an odd count (wrk gives each thread connections/threads connections: keep the count exact). */
export function wrkThreads(connections: number): number {
  return connections >= 2 && connections % 2 === 0 ? 2 : 1;
}

/** The `{date}` of request `c` of a thread in a {@link LoadOptions.keyed} run, epoch seconds. */
export function keyedDate(keyed: { keys: number; start: number }, c: number): number {
  return keyed.start + Math.floor(c / keyed.keys) * 86_400 + (c % keyed.keys);
}

/**
 * Days that a {@link LoadOptions.keyed} run of `total` answered requests
 * (all threads) may have used, one more for requests still in flight when
 * wrk stopped (sent, not counted): the next run's `start` is this one's
 * plus that many days.
 */
export function keyedDays(keys: number, total: number): number {
  return Math.floor(Math.max(0, total - 1) / keys) + 2;
}

/** The `{k}` of key `key` of wrk thread `thread` in a {@link LoadOptions.keyed} run. */
export function keyedKey(thread: number, key: number): string {
  return `${String(thread).padStart(2, '0')}-${String(key).padStart(6, '0')}`;
}

/** Width of the serial that replaces `{n}` in {@link LoadOptions.bodyTemplate}. */
export const SERIAL_DIGITS = 16;

/** Requests precomputed from `path()`/`headers()` functions for one run; wrk cycles over them. */
export const DYNAMIC_REQUESTS = 20_000;

/**
 * The wrk script of {@link load}. Arguments after the URL: the requests
 * file (one request a line: the target, then `name: value` headers, all
 * tab-separated), the expected statuses (`200,302`) and the thread count.
 * Each thread builds its requests with wrk.format in init() and cycles
 * through them from its own offset; response() counts statuses and keeps
 * the first unexpected answer; done() sums the threads' counts and prints
 * one line `WRK_JSON {…}` (times in µs).
 */
const WRK_SCRIPT = String.raw`-- Written by bench/lib.ts load(); see WRK_SCRIPT there.
local threads = {}
local started = 0

function setup(thread)
  thread:set("id", started)
  started = started + 1
  table.insert(threads, thread)
end

function init(args)
  reqs = {}
  local f = assert(io.open(args[1], "rb"))
  for line in f:lines() do
    local fields = {}
    for field in string.gmatch(line, "[^\t]+") do fields[#fields + 1] = field end
    local headers = {}
    for k = 2, #fields do
      local name, value = string.match(fields[k], "^([^:]+): (.*)$")
      headers[name] = value
    end
    reqs[#reqs + 1] = wrk.format(args[4], fields[1], headers)
    first = first or { path = fields[1], headers = headers }
  end
  f:close()
  if args[5] then
    local t = assert(io.open(args[5], "rb"))
    local text = t:read("*a")
    t:close()
    -- The text between the slots {n}, {k}, {date} (any other {word} is text).
    parts, slots = {}, {}
    local pos, from = 1, 1
    while true do
      local s, e, word = string.find(text, "{(%a+)}", from)
      if not s then break end
      if word == "n" or word == "k" or word == "date" then
        parts[#parts + 1] = string.sub(text, pos, s - 1)
        slots[#slots + 1] = word
        pos = e + 1
      end
      from = e + 1
    end
    parts[#parts + 1] = string.sub(text, pos)
    run = tonumber(args[6])
    keys = tonumber(args[7])
    start = tonumber(args[8])
    count = 0
  end
  expect = {}
  for code in string.gmatch(args[2], "%d+") do expect[tonumber(code)] = true end
  args_method = args[4]
  n = #reqs
  i = math.floor(id * n / tonumber(args[3]))
  statuses = {}
end

function request()
  if parts then
    count = count + 1
    local c = count - 1
    local value = { n = string.format("%04d%02d%010d", run % 10000, id, count) }
    if keys > 0 then
      value.k = string.format("%02d-%06d", id, c % keys)
      value.date = os.date("!%a, %d %b %Y %H:%M:%S GMT", start + math.floor(c / keys) * 86400 + c % keys)
    end
    local out = {}
    for j = 1, #slots do
      out[#out + 1] = parts[j]
      out[#out + 1] = value[slots[j]]
    end
    out[#out + 1] = parts[#parts]
    return wrk.format(args_method, first.path, first.headers, table.concat(out))
  end
  i = i % n + 1
  return reqs[i]
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
  if not expect[status] and not bad then bad = status .. " " .. string.sub(body or "", 1, 300) end
end

local function jstr(s)
  if s == nil then return "null" end
  return '"' .. string.gsub(s, '[%c"\\\128-\255]', function(c) return string.format("\\u%04x", string.byte(c)) end) .. '"'
end

function done(summary, latency, requests)
  local counts, first = {}, nil
  for _, t in ipairs(threads) do
    for code, c in pairs(t:get("statuses") or {}) do counts[code] = (counts[code] or 0) + c end
    first = first or t:get("bad")
  end
  local parts = {}
  for code, c in pairs(counts) do parts[#parts + 1] = string.format('"%d":%d', code, c) end
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"mean_us":%.3f,' ..
      '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},"statuses":{%s},"bad":%s}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), latency.mean,
    e.connect, e.read, e.write, e.status, e.timeout, table.concat(parts, ","), jstr(first)))
end
`;

/** What the wrk script prints (times µs). */
interface WrkReport {
  requests: number;
  duration_us: number;
  p50_us: number;
  p99_us: number;
  mean_us: number;
  errors: Record<'connect' | 'read' | 'write' | 'status' | 'timeout', number>;
  statuses: Record<string, number>;
  bad: string | null;
}

let wrkRuns = 0;

/**
 * Writes the requests of one run for the wrk script: the static request, or
 * {@link DYNAMIC_REQUESTS} calls of `path()`/`headers()`. `Host` is spelled
 * so (wrk.format adds its own unless the table has exactly `Host`).
 * @throws when a target or header holds a tab, CR or LF
 */
function writeRequests(opts: LoadOptions, file: string): void {
  const dynamic = typeof opts.path === 'function' || typeof opts.headers === 'function';
  const pathOf = typeof opts.path === 'function' ? opts.path : () => opts.path as string;
  const headersOf = typeof opts.headers === 'function' ? opts.headers : () => (opts.headers ?? {}) as Record<string, string>;
  const lines: string[] = [];
  for (let k = 0; k < (dynamic ? DYNAMIC_REQUESTS : 1); k++) {
    const fields = [pathOf(), ...Object.entries(headersOf()).map(([name, v]) => `${name.toLowerCase() === 'host' ? 'Host' : name}: ${v}`)];
    const badField = fields.find((f) => /[\t\r\n]/.test(f) || !f);
    if (badField !== undefined) throw new Error(`load: a request target or header is empty or holds a tab or line break: ${JSON.stringify(badField)}`);
    lines.push(fields.join('\t'));
  }
  writeFileSync(file, lines.join('\n') + '\n');
}

/** Runs `wrk args…`; resolves with its stdout once it exits 0. @throws with its output otherwise, or how to install it. */
function runWrk(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const proc = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
    proc.once('error', (e: NodeJS.ErrnoException) => reject(e.code === 'ENOENT' ? new Error('load: wrk is not installed (apt-get install -y wrk)') : e));
    proc.once('close', (code, signal) => {
      if (code === 0) resolve(out);
      else reject(new Error(`load: wrk ${args.join(' ')} exited with ${signal ?? code}:\n${(err + out).trim().slice(-2000)}`));
    });
  });
}

/**
 * One wrk run (its own process; HTTP/1.1 keep-alive, no pipelining):
 * `wrk -t <min(2, connections)> -c <connections> -d <duration>s --timeout 30s`
 * with a Lua script ({@link WRK_SCRIPT}) that sends the requests as given
 * (a dynamic `path`/`headers` is sampled {@link DYNAMIC_REQUESTS} times
 * first, and the threads cycle through that list from different offsets)
 * and checks every status. The script and the requests file are written to
 * `dir` (the requests file is removed after the run). Returns req/s, latency p50/p99/mean in ms and the counts.
 * @throws when a response has another status than `opts.expect`, a socket
 *   failed or a request timed out (a bench of wrong answers is no bench),
 *   or wrk is missing.
 */
export async function wrkLoad(opts: LoadOptions, dir: string): Promise<LoadResult> {
  mkdirSync(dir, { recursive: true });
  const script = path.join(dir, 'wrk-load.lua');
  writeFileSync(script, WRK_SCRIPT);
  const run = ++wrkRuns;
  const file = path.join(dir, `wrk-requests-${run}.txt`);
  writeRequests(opts, file);
  const extra: string[] = [];
  if (opts.bodyTemplate !== undefined) {
    const body = path.join(dir, `wrk-body-${run}.txt`);
    writeFileSync(body, opts.bodyTemplate, 'latin1');
    extra.push(body, String(run), String(opts.keyed?.keys ?? 0), String(opts.keyed?.start ?? 0));
  }
  const threads = wrkThreads(opts.connections);
  const target = /^https?:\/\/[^/]+$/.test(opts.url) ? `${opts.url}/` : opts.url;
  const args = ['-t', String(threads), '-c', String(opts.connections), '-d', `${Math.max(1, Math.round(opts.duration))}s`, '--timeout', '30s'];
  let out: string;
  try {
    out = await runWrk([...args, '-s', script, target, file, opts.expect.join(','), String(threads), opts.method ?? 'GET', ...extra]);
  } finally {
    rmSync(file, { force: true });
    if (extra.length) rmSync(extra[0], { force: true });
  }
  const line = /^WRK_JSON (.*)$/m.exec(out);
  if (!line) throw new Error(`load: wrk printed no result:\n${out.slice(-2000)}`);
  const r = JSON.parse(line[1]) as WrkReport;
  const statuses = Object.fromEntries(Object.entries(r.statuses).sort(([a], [b]) => Number(a) - Number(b)));
  const bad = Object.keys(statuses).filter((c) => !opts.expect.includes(Number(c)));
  const errors = r.errors.connect + r.errors.read + r.errors.write + r.errors.timeout;
  if (bad.length || errors || !r.requests) {
    const e = r.errors;
    throw new Error(
      `load on ${opts.url}: unexpected answers ${JSON.stringify(statuses)} (expected ${opts.expect.join('/')}), ` +
        `${r.requests} requests, errors: connect ${e.connect}, read ${e.read}, write ${e.write}, timeout ${e.timeout}; first: ${r.bad ?? '-'}`,
    );
  }
  return {
    rps: r.requests / (r.duration_us / 1e6),
    p50: r.p50_us / 1000,
    p99: r.p99_us / 1000,
    mean: r.mean_us / 1000,
    total: r.requests,
    statuses,
    errors,
  };
}
