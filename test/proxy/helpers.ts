/**
 * Test helpers for the capture proxy: a content server, a fake archive that
 * records every PUT it gets, a client that sends exactly the headers it is
 * given, and a proxy on a temp vhosts folder. Every server listens on
 * 127.0.0.1 port 0 and is closed in the test's teardown.
 *
 * (Not a test file; tap reports it as "no tests found".)
 */
import { EventEmitter, once } from 'node:events';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Test } from 'tap';
import type { ProxyConfig } from '../../proxy/config/proxy-file.js';
import type { LogEntry } from '../../proxy/log.js';
import { type ProxyOptions, type RunningProxy, startProxy } from '../../proxy/server.js';

export async function listen(t: Test, server: http.Server | net.Server): Promise<number> {
  // A plain net.Server has no closeAllConnections: track its sockets, so that close() never waits on a peer.
  const sockets = new Set<net.Socket>();
  server.on('connection', (s: net.Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => {
    if ('closeAllConnections' in server) server.closeAllConnections();
    for (const s of sockets) s.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return (server.address() as AddressInfo).port;
}

/** A content server; `handler` answers each request. */
export async function startUpstream(
  t: Test,
  handler: http.RequestListener,
): Promise<{ url: string; port: number; server: http.Server; seen: http.IncomingMessage[] }> {
  const seen: http.IncomingMessage[] = [];
  const server = http.createServer((req, res) => {
    seen.push(req);
    handler(req, res);
  });
  const port = await listen(t, server);
  return { url: `http://127.0.0.1:${port}`, port, server, seen };
}

/** One PUT as the fake archive received it. */
export interface ReceivedPut {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** The body arrived whole (the chunked body's last chunk came). */
  complete: boolean;
}

/**
 * A fake archive: a plain HTTP server that records each request. Events:
 * `'start'` (the request head and first body bytes arrived), `'put'`
 * ({@link ReceivedPut}, once it ended or was cut).
 */
export async function startFakeArchive(t: Test): Promise<{ port: number; puts: ReceivedPut[]; events: EventEmitter }> {
  const puts: ReceivedPut[] = [];
  const events = new EventEmitter();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    let started = false;
    let done = false;
    req.on('data', (c: Buffer) => {
      chunks.push(c);
      if (!started) {
        started = true;
        events.emit('start', req);
      }
    });
    const finish = (complete: boolean) => {
      if (done) return;
      done = true;
      const put: ReceivedPut = { method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks), complete };
      puts.push(put);
      events.emit('put', put);
    };
    req.on('end', () => {
      finish(true);
      res.writeHead(201, { 'Content-Type': 'text/plain' });
      res.end('stored\n');
    });
    req.on('error', () => {});
    req.on('close', () => finish(false));
  });
  const port = await listen(t, server);
  return { port, puts, events };
}

/** A port nothing listens on (taken from the OS, then freed). */
export async function freePort(): Promise<number> {
  const s = net.createServer();
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

export interface ClientResponse {
  status: number;
  statusMessage: string;
  headers: http.IncomingHttpHeaders;
  rawHeaders: string[];
  body: Buffer;
}

/**
 * Sends `method url` with exactly `headers` (name/value pairs, in this
 * order; nothing is added, so give Host and Connection) on a new
 * connection, and reads the whole response body as received (no decoding).
 */
export function rawRequest(url: string, method: string, headers: [string, string][]): Promise<ClientResponse> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, method, path: u.pathname + u.search, agent: false, setHost: false, headers: headers.flat() });
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () =>
        resolve({ status: res.statusCode!, statusMessage: res.statusMessage!, headers: res.headers, rawHeaders: res.rawHeaders, body: Buffer.concat(chunks) }),
      );
    });
    req.end();
  });
}

/** GET through the proxy with `Host: host`, `Connection: close` and any `extra` headers. */
export function get(proxyUrl: string, pathAndQuery: string, host: string, extra: [string, string][] = [], method = 'GET'): Promise<ClientResponse> {
  return rawRequest(proxyUrl + pathAndQuery, method, [['Host', host], ...extra, ['Connection', 'close']]);
}

/** A temp folder, removed at teardown. */
export async function tempDir(t: Test, prefix = 'proxy-test-'): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * A proxy on 127.0.0.1 port 0 whose vhosts folder holds `files`
 * (name → YAML text, written mode 0600: a file with an `ArchiveToken` that
 * every user may read is refused; or `{text, mode}`); closed at teardown.
 * Log entries are collected in `logs`.
 */
export async function startTestProxy(
  t: Test,
  files: Record<string, string | { text: string; mode: number }>,
  options: ProxyOptions = {},
  configExtra: Partial<ProxyConfig> = {},
): Promise<{ proxy: RunningProxy; dir: string; logs: LogEntry[] }> {
  const dir = await tempDir(t);
  const vhostsDir = path.join(dir, 'vhosts');
  await mkdir(vhostsDir);
  for (const [name, f] of Object.entries(files)) {
    const { text, mode } = typeof f === 'string' ? { text: f, mode: 0o600 } : f;
    await writeFile(path.join(vhostsDir, name), text, { mode });
    await chmod(path.join(vhostsDir, name), mode); // (whatever the umask)
  }
  const logs: LogEntry[] = [];
  const config: ProxyConfig = {
    file: path.join(dir, 'proxy.yaml'),
    listen: { host: '127.0.0.1', port: 0 },
    vhostsDir,
    spoolDir: path.join(dir, 'spool'),
    ...configExtra,
  };
  const proxy = await startProxy(config, { watch: false, log: (e) => logs.push(e), ...options });
  t.teardown(() => proxy.close(1000));
  return { proxy, dir: vhostsDir, logs };
}

/** YAML of one vhost. */
export function vhostYaml(settings: Record<string, string | number | boolean>): string {
  return Object.entries(settings)
    .map(([k, v]) => `${k}: ${v}\n`)
    .join('');
}

/**
 * Waits until `cond()` is true, checking every 20 ms; fails after
 * `timeoutMs` (default 30 s) naming `what`.
 */
export async function waitFor(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A real archive daemon (in this process) on a fixed port and data folder, so that it can go away and come back. */
export interface RealArchive {
  port: number;
  store: import('../../archive/store/store.js').ArchiveStore;
  close(): Promise<void>;
}

/**
 * Starts the real archive (archive/server.ts, two spans as conf/archive.yaml
 * has them) on 127.0.0.1:`port` with its data in `dataDir`; call again with
 * the same arguments to bring it back after {@link RealArchive.close}.
 */
export async function startRealArchive(port: number, dataDir: string): Promise<RealArchive> {
  const { parseYamlText } = await import('#shared/config.js');
  const { validateArchiveConfig } = await import('../../archive/config.js');
  const { buildArchiveServer } = await import('../../archive/server.js');
  const { ArchiveStore } = await import('../../archive/store/store.js');
  const text = `listen: 127.0.0.1:${port}\ndata_dir: ${JSON.stringify(dataDir)}\narchives:\n  - id: "2025"\n    until: 2026-01-01T00:00:00Z\n  - id: current\n    from: 2026-01-01T00:00:00Z\n`;
  const config = validateArchiveConfig(parseYamlText(text, path.join(dataDir, 'archive.yaml')));
  const store = await ArchiveStore.open(config);
  const app = await buildArchiveServer(config, store);
  await app.listen({ host: '127.0.0.1', port });
  return {
    port,
    store,
    async close() {
      await app.close();
      await store.close();
    },
  };
}

/** One PUT as the counting archive saw it: sizes and SHA-256 digests, no bytes kept. */
export interface CountedPut {
  url: string;
  headers: http.IncomingHttpHeaders;
  /** Bytes of the record head (request and response heads with their blank lines). */
  headBytes: number;
  /** The record head as text. */
  head: string;
  /** Body bytes after the head, and their SHA-256 (hex). */
  bodyBytes: number;
  bodySha256: string;
  complete: boolean;
}

/**
 * An archive stub that reads each PUT as it streams, keeps the record head
 * and only counts and digests the body (so a 1 GiB capture costs it no
 * memory); answers 201. Event `'put'` ({@link CountedPut}).
 */
export async function startCountingArchive(t: Test): Promise<{ port: number; puts: CountedPut[]; events: EventEmitter }> {
  const { createHash } = await import('node:crypto');
  const puts: CountedPut[] = [];
  const events = new EventEmitter();
  const server = http.createServer((req, res) => {
    const hash = createHash('sha256');
    let headBuf: Buffer | undefined = Buffer.alloc(0);
    let head = '';
    let headBytes = 0;
    let bodyBytes = 0;
    req.on('data', (c: Buffer) => {
      if (headBuf) {
        headBuf = Buffer.concat([headBuf, c]);
        const first = headBuf.indexOf('\r\n\r\n');
        const second = first >= 0 ? headBuf.indexOf('\r\n\r\n', first + 4) : -1;
        if (second < 0) return;
        headBytes = second + 4;
        head = headBuf.subarray(0, headBytes).toString('latin1');
        c = headBuf.subarray(headBytes);
        headBuf = undefined;
      }
      bodyBytes += c.length;
      hash.update(c);
    });
    let done = false;
    const finish = (complete: boolean) => {
      if (done) return;
      done = true;
      const put: CountedPut = { url: req.url!, headers: req.headers, headBytes, head, bodyBytes, bodySha256: hash.digest('hex'), complete };
      puts.push(put);
      events.emit('put', put);
    };
    req.on('end', () => {
      finish(true);
      res.writeHead(201, { 'Content-Type': 'text/plain' });
      res.end('stored\n');
    });
    req.on('error', () => {});
    req.on('close', () => finish(false));
  });
  const port = await listen(t, server);
  return { port, puts, events };
}

/**
 * A content server that sends `totalBytes` generated on the fly (a 64 KiB
 * pseudo-random block, repeated), honouring backpressure. `state` says how
 * far it got, whether it is waiting for `drain`, and the SHA-256 of what it sent.
 */
export async function startGeneratingUpstream(
  t: Test,
  totalBytes: number,
): Promise<{ url: string; state: { written: number; waiting: boolean; ended: boolean; sha256?: string } }> {
  const { createHash, randomBytes } = await import('node:crypto');
  const block = randomBytes(64 * 1024);
  const state: { written: number; waiting: boolean; ended: boolean; sha256?: string } = { written: 0, waiting: false, ended: false };
  const server = http.createServer((_req, res) => {
    const hash = createHash('sha256');
    res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': String(totalBytes) });
    const pump = () => {
      state.waiting = false;
      while (state.written < totalBytes) {
        const chunk = block.subarray(0, Math.min(block.length, totalBytes - state.written));
        hash.update(chunk);
        state.written += chunk.length;
        if (!res.write(chunk)) {
          state.waiting = true;
          res.once('drain', pump);
          return;
        }
      }
      state.sha256 = hash.digest('hex');
      state.ended = true;
      res.end();
    };
    res.on('close', () => res.off('drain', pump));
    pump();
  });
  const port = await listen(t, server);
  return { url: `http://127.0.0.1:${port}`, state };
}

export { type RawConnection, rawConnection } from '../helpers/raw-connection.js';

/** The request head of a captured record (request line to the blank line, without it). */
export function recordRequestHead(body: Buffer): string {
  const s = body.toString('latin1');
  return s.slice(0, s.indexOf('\r\n\r\n') + 2);
}

/** The response head of a captured record. */
export function recordResponseHead(body: Buffer): string {
  const s = body.toString('latin1');
  const start = s.indexOf('\r\n\r\n') + 4;
  return s.slice(start, s.indexOf('\r\n\r\n', start) + 2);
}
