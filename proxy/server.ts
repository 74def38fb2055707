/**
 * The capture proxy's HTTP side (DESIGN.md "Capture proxy"): a reverse
 * proxy (http-proxy, keep-alive connections to the content servers) that
 * picks a vhost by `Host`, announces the archive's TimeGate on every
 * proxied response, and tees captured exchanges to the archive and the
 * durable spool (proxy/capture.ts, proxy/spool.ts).
 *
 * Answers of its own:
 * - 421 Misdirected Request (RFC 9110 §15.5.20), one text line, when the
 *   `Host` matches no vhost and no vhost has `default: true`;
 * - 502 Bad Gateway, one text line, when the content server cannot be
 *   reached or fails before its response head (504 when it is silent for
 *   `upstream_timeout`); a failure after the head cuts the client's
 *   connection instead (the client sees a short body, not a complete one);
 * - 408 Request Timeout (Node's) when a client takes longer than
 *   `request_timeout` to send its request.
 *
 * To the content server: the request as received (`Host` kept, as Apache's
 * `ProxyPreserveHost On`), without any `X-Client-IP` the client sent (a
 * legacy site may trust it), plus `X-Forwarded-For`, `-Port`, `-Proto` (the
 * client's address appended to any it sent) and `X-Forwarded-Host` (kept if
 * the client sent one). WebSocket upgrades are passed through (not captured).
 *
 * Log: one entry per request once it is done and its capture settled
 * (`type: "request"`): `method`, `host` (the Host header), `target`,
 * `status`, `bytes` (response body bytes from the content server), `ms`
 * (until the response was done), `client` (socket address), `vhost`
 * (server_name), `upstream`, `capture` (`stored`, `spooled`, `dropped`,
 * `aborted`, or `no: <reason>` with reason `archiving-off`, `method`,
 * `accept-datetime`, `excluded`, `private`, `status`, `no-uri`,
 * `no-response`, `websocket`), and `aborted: true` / `error` when it went wrong.
 *
 * Admin server (`admin_listen`): `GET /metrics` (Prometheus text,
 * proxy/metrics.ts), `GET /healthz` (`ok`).
 */
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import httpProxy from 'http-proxy';
import { UriError, uriRFromRequest } from '../shared/uri.js';
import { Capture, startCapture, type CaptureOutcome } from './capture/capture.js';
import { requestVerdict, responseVerdict, type NotCapturedReason } from './capture/verdict.js';
import type { ProxyConfig, Vhost } from './config.js';
import { silentLogger, type Logger } from './log.js';
import { ProxyMetrics } from './metrics.js';
import type { SpoolMeta } from './spool/file.js';
import { Spool, type SpoolOptions } from './spool/spool.js';
import { VhostRegistry, type ReloadEvent } from './vhosts.js';

/** Options of {@link startProxy}; every one has a default (the config's value, else the built-in one). */
export interface ProxyOptions {
  log?: Logger;
  /**
   * A vhost table to use instead of opening (and watching) `config.vhostsDir`.
   * The proxy does not close a registry it was given.
   */
  vhosts?: VhostRegistry;
  /** Hot-reload the vhosts folder (default `true`; ignored with `vhosts`). */
  watch?: boolean;
  /** Cut a live PUT once it has more than this many bytes waiting, and spool the capture (default 8 MiB). */
  maxCaptureBufferBytes?: number;
  /** Give up on an archive silent for this long, ms (default: config `archive_timeout`, 60 000). */
  archiveTimeoutMs?: number;
  /** Answer 504 when the content server is silent for this long, ms (default: config `upstream_timeout`, 60 000, as Apache's ProxyTimeout). */
  upstreamTimeoutMs?: number;
  /** A client must send its whole request within this, ms (default: config `request_timeout`, 300 000; the head alone at most 60 000). */
  requestTimeoutMs?: number;
  /** More spool settings (tests: `memoryBytes`, `paused`, …); the config's `spool_*` keys fill the rest. */
  spool?: Partial<SpoolOptions>;
  /** Metrics to count into (default: a new {@link ProxyMetrics}). */
  metrics?: ProxyMetrics;
}

/** A running proxy. */
export interface RunningProxy {
  /** Where it listens (the real port when `listen` asked for port 0). */
  address: { host: string; port: number };
  /** `http://host:port` (`https://` with TLS; IPv6 in brackets). */
  url: string;
  /** `http://host:port` of the admin server, when `admin_listen` is set. */
  adminUrl?: string;
  /** The vhost table in use (`reload()` for SIGHUP, `'reload'` events). */
  vhosts: VhostRegistry;
  /** The durable spool. */
  spool: Spool;
  metrics: ProxyMetrics;
  /**
   * Events: `'capture'` ({@link CaptureOutcome}) when a capture ends;
   * `'request'` (the request's log entry) when a request is done.
   */
  events: EventEmitter;
  /** Captures not settled yet. */
  readonly capturesInFlight: number;
  /**
   * Stops accepting connections, lets requests and captures in flight
   * finish for up to `graceMs` (default 5000), then cuts what is left
   * (a capture whose body was complete is spooled), stops the spool's
   * senders, closes the vhost watcher (unless the registry was passed in),
   * the admin server and the connections to the content servers. Idempotent.
   */
  close(graceMs?: number): Promise<void>;
}

/** Per-request state, looked up from the request object in http-proxy's events. */
interface Exchange {
  vhost: Vhost;
  started: number;
  scheme: 'http' | 'https';
  uriR?: string;
  /** Why not captured; `null` while it still may be. */
  notCaptured: NotCapturedReason | null;
  capture?: Capture;
  status?: number;
  bodyBytes: number;
  error?: string;
}

/**
 * The `Link` value announcing the TimeGate of a URI-R:
 * `<http://{ArchiveTimeGate}{URI-R}>; rel="timegate"` (RFC 7089 §2.2.1, RFC 8288).
 */
export function timegateLink(vhost: Vhost, uriR: string): string {
  return `<http://${vhost.archiveTimeGate}${uriR}>; rel="timegate"`;
}

/**
 * Starts the proxy: loads the vhosts (unless given), opens the spool (and
 * starts re-sending what an earlier run left there), listens on
 * `config.listen` (TLS when `config.tls`), and on `config.adminListen`;
 * resolves once listening.
 *
 * @throws ConfigError from the vhost files (see {@link VhostRegistry.open});
 *   the file system error when the spool folder cannot be made or the TLS
 *   files cannot be read; the listen error (`EADDRINUSE`, …) when an
 *   address cannot be bound.
 */
export async function startProxy(config: ProxyConfig, options: ProxyOptions = {}): Promise<RunningProxy> {
  const log = options.log ?? silentLogger;
  const metrics = options.metrics ?? new ProxyMetrics();
  const ownRegistry = !options.vhosts;
  const vhosts = options.vhosts ?? (await VhostRegistry.open(config.vhostsDir, { log, watch: options.watch }));
  const onReload = (e: ReloadEvent) => metrics.reloads.inc({ result: e.ok ? 'ok' : 'rejected' });
  vhosts.on('reload', onReload);
  const archiveTimeoutMs = options.archiveTimeoutMs ?? config.archiveTimeoutMs ?? 60_000;
  const upstreamTimeoutMs = options.upstreamTimeoutMs ?? config.upstreamTimeoutMs ?? 60_000;
  const requestTimeoutMs = options.requestTimeoutMs ?? config.requestTimeoutMs ?? 300_000;

  /** The current ArchiveToken for a spooled capture: its vhost's, else any vhost's for that archive. */
  const tokenFor = (meta: SpoolMeta): string | undefined => {
    const same = (v: Vhost) => v.archiveHost === meta.host && v.archivePort === meta.port;
    const all = vhosts.vhosts;
    return (all.find((v) => v.serverName === meta.vhost && same(v)) ?? all.find((v) => same(v) && v.archiveToken))?.archiveToken;
  };
  let spool: Spool;
  try {
    spool = await Spool.open(config.spoolDir, {
      maxBytes: config.spoolMaxBytes,
      retryMinMs: config.spoolRetryMinMs,
      slowDisk: config.spoolSlowDisk,
      retryMaxMs: config.spoolRetryMaxMs,
      archiveTimeoutMs,
      log,
      metrics,
      tokenFor,
      ...options.spool,
    });
  } catch (err) {
    if (ownRegistry) await vhosts.close();
    throw err;
  }

  const events = new EventEmitter();
  const agent = new http.Agent({ keepAlive: true });
  const proxy = httpProxy.createProxyServer({ agent, xfwd: true, preserveHeaderKeyCase: true, proxyTimeout: upstreamTimeoutMs });
  const exchanges = new WeakMap<http.IncomingMessage, Exchange>();
  const captures = new Set<Capture>();
  const timedOut = new WeakSet<http.IncomingMessage>();
  const upgrades = new WeakMap<http.IncomingMessage, { status?: number }>();

  proxy.on('proxyRes', (proxyRes, req, res) => {
    const ex = exchanges.get(req);
    if (!ex) return;
    ex.status = proxyRes.statusCode;
    if (ex.uriR) {
      const link = timegateLink(ex.vhost, ex.uriR);
      const had = proxyRes.headers.link;
      if (had === undefined || had === '') proxyRes.headers['Link'] = link;
      else proxyRes.headers.link = `${Array.isArray(had) ? had.join(', ') : had}, ${link}`;
    }
    if (ex.notCaptured === null) ex.notCaptured = responseVerdict(ex.vhost, proxyRes.statusCode ?? 0, proxyRes.headers);
    let capture: Capture | undefined;
    if (ex.notCaptured === null && ex.uriR) {
      try {
        capture = startCapture(req, proxyRes, ex.vhost, ex.uriR, ex.scheme, { log, metrics, spool, maxBufferedBytes: options.maxCaptureBufferBytes, archiveTimeoutMs });
        const c = capture;
        captures.add(c);
        void c.settled.then((outcome) => {
          captures.delete(c);
          events.emit('capture', outcome);
        });
        ex.capture = capture;
      } catch (err) {
        ex.notCaptured = 'no-uri';
        log({ level: 'error', msg: 'capture not started', error: (err as Error).message, uriR: ex.uriR });
      }
    }
    let ended = false;
    if (capture) {
      const c = capture;
      let held = false;
      proxyRes.on('data', (chunk: Buffer) => {
        ex.bodyBytes += chunk.length;
        c.write(chunk);
        if (c.behind && !held) {
          // The spool disk is slower than the content server: read no faster than it writes.
          // Unpiped while held, so that the client's 'drain' cannot resume the response behind our back.
          held = true;
          proxyRes.unpipe(res);
          proxyRes.pause();
          void c.whenCaughtUp().then(() => {
            held = false;
            if (!res.destroyed && !res.writableEnded) proxyRes.pipe(res);
            else proxyRes.destroy();
          });
        }
      });
    } else {
      proxyRes.on('data', (chunk: Buffer) => {
        ex.bodyBytes += chunk.length;
      });
    }
    proxyRes.on('end', () => {
      ended = true;
      capture?.end();
    });
    proxyRes.on('error', () => {}); // 'close' below handles it
    proxyRes.on('close', () => {
      if (ended) return;
      ex.error ??= 'the content server broke off its response';
      capture?.abort('the content server broke off its response mid-body');
      // The client must not take a cut body for a whole one: cut its connection too.
      if (!res.writableEnded) res.destroy();
    });
  });

  proxy.on('error', (err: NodeJS.ErrnoException, req, resOrSocket) => {
    const ex = exchanges.get(req);
    if (ex) ex.error = `${err.code ?? ''} ${err.message}`.trim();
    if (!(resOrSocket instanceof http.ServerResponse)) {
      const up = upgrades.get(req);
      if (up && up.status === undefined && resOrSocket.writable) {
        up.status = 502;
        resOrSocket.end('HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n502 Bad Gateway: the content server could not be reached\n');
      } else resOrSocket.destroy();
      return;
    }
    const res = resOrSocket;
    if (res.headersSent) {
      ex?.capture?.abort('the content server failed mid-body');
      res.destroy();
      return;
    }
    if (timedOut.has(req)) sendText(res, 504, 'Gateway Timeout: the content server did not answer in time');
    else sendText(res, 502, 'Bad Gateway: the content server could not be reached or failed before answering');
  });

  proxy.on('proxyReq', (proxyReq, req) => {
    // http-proxy aborts on proxyTimeout without saying why; remember it to answer 504.
    proxyReq.on('timeout', () => timedOut.add(req));
  });

  proxy.on('proxyReqWs', (proxyReq, req) => {
    const up = upgrades.get(req);
    if (!up) return;
    proxyReq.on('upgrade', (r: http.IncomingMessage) => (up.status = r.statusCode ?? 101));
    proxyReq.on('response', (r: http.IncomingMessage) => (up.status = r.statusCode));
  });

  const logRequest = (entry: Record<string, unknown>, level: 'info' | 'warn') => {
    metrics.requests.inc({ vhost: String(entry.vhost ?? '-'), status: String(entry.status ?? 0) });
    log({ level, msg: 'request', type: 'request', ...entry });
    events.emit('request', { msg: 'request', type: 'request', ...entry });
  };

  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const started = performance.now();
    const vhost = vhosts.lookup(req.headers.host);
    if (!vhost) {
      sendText(res, 421, `Misdirected Request: no virtual host here serves ${JSON.stringify(req.headers.host ?? '')}`);
      res.on('close', () => {
        logRequest({ method: req.method, host: req.headers.host, target: req.url, status: 421, client: req.socket.remoteAddress, ms: Math.round(performance.now() - started) }, 'info');
      });
      return;
    }
    const scheme: 'http' | 'https' = (req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http';
    const ex: Exchange = { vhost, started, scheme, notCaptured: requestVerdict(vhost, req.method ?? '', req.url ?? '/', req.headers), bodyBytes: 0 };
    try {
      ex.uriR = uriRFromRequest(req.headers.host, req.url ?? '/', scheme);
    } catch (err) {
      if (!(err instanceof UriError)) throw err;
      // No URI-R (a Host the default vhost caught that is not host[:port], an odd target): proxied, not announced, not captured.
      if (ex.notCaptured === null) ex.notCaptured = 'no-uri';
    }
    exchanges.set(req, ex);
    // No spoofing: the content server must not trust a client-sent X-Client-IP.
    delete req.headers['x-client-ip'];
    res.on('close', () => {
      const ms = Math.round(performance.now() - started);
      const finished = res.writableFinished;
      if (ex.capture && !ex.capture.bodyComplete && !finished) {
        // The client went away before the content server's body was complete: cut the PUT.
        // (Once the whole body was captured, the capture is a true one and goes on.)
        ex.capture.abort('the client closed the connection mid-body');
      }
      const write = (capture: string) => {
        const entry: Record<string, unknown> = {
          method: req.method,
          host: req.headers.host,
          target: req.url,
          status: ex.status ?? res.statusCode,
          bytes: ex.bodyBytes,
          ms,
          client: req.socket.remoteAddress,
          vhost: vhost.serverName,
          upstream: vhost.upstream,
          capture,
        };
        if (!finished) entry.aborted = true;
        if (ex.error) entry.error = ex.error;
        logRequest(entry, ex.error ? 'warn' : 'info');
      };
      if (ex.capture) void ex.capture.settled.then((o) => write(o.outcome));
      else write(`no: ${ex.notCaptured ?? (ex.status === undefined ? 'no-response' : 'status')}`);
    });
    proxy.web(req, res, { target: vhost.upstream });
  };

  const serverOptions: http.ServerOptions = {
    requestTimeout: requestTimeoutMs,
    headersTimeout: Math.min(requestTimeoutMs, 60_000),
    connectionsCheckingInterval: Math.max(50, Math.min(30_000, Math.floor(requestTimeoutMs / 4))),
  };
  let server: http.Server;
  try {
    server = config.tls
      ? https.createServer({ ...serverOptions, cert: readFileSync(config.tls.cert), key: readFileSync(config.tls.key) }, handler)
      : http.createServer(serverOptions, handler);
  } catch (err) {
    await spool.close();
    if (ownRegistry) await vhosts.close();
    throw err;
  }

  server.on('upgrade', (req: http.IncomingMessage, socket: Socket, head: Buffer) => {
    const started = performance.now();
    const vhost = vhosts.lookup(req.headers.host);
    socket.on('error', () => {});
    if (!vhost) {
      const body = `421 Misdirected Request: no virtual host here serves ${JSON.stringify(req.headers.host ?? '')}\n`;
      socket.end(`HTTP/1.1 421 Misdirected Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
      logRequest({ method: req.method, host: req.headers.host, target: req.url, status: 421, client: req.socket.remoteAddress, ms: 0, upgrade: req.headers.upgrade }, 'info');
      return;
    }
    const up: { status?: number } = {};
    upgrades.set(req, up);
    // http.Server sockets are half-open capable; a client that hangs up is gone (a WebSocket closes with a frame first).
    socket.on('end', () => socket.end());
    delete req.headers['x-client-ip'];
    socket.once('close', () => {
      logRequest(
        {
          method: req.method,
          host: req.headers.host,
          target: req.url,
          status: up.status ?? 0,
          ms: Math.round(performance.now() - started),
          client: req.socket.remoteAddress,
          vhost: vhost.serverName,
          upstream: vhost.upstream,
          upgrade: req.headers.upgrade,
          capture: 'no: websocket',
        },
        'info',
      );
    });
    proxy.ws(req, socket, head, { target: vhost.upstream });
  });

  const listen = (srv: http.Server, host: string, port: number) =>
    new Promise<void>((resolve, reject) => {
      const onError = (err: Error) => reject(err);
      srv.once('error', onError);
      srv.listen(port, host, () => {
        srv.off('error', onError);
        resolve();
      });
    });

  let admin: http.Server | undefined;
  try {
    await listen(server, config.listen.host, config.listen.port);
    if (config.adminListen) {
      admin = http.createServer((req, res) => void adminHandler(metrics, req, res));
      await listen(admin, config.adminListen.host, config.adminListen.port);
    }
  } catch (err) {
    server.close();
    await spool.close();
    if (ownRegistry) await vhosts.close();
    agent.destroy();
    throw err;
  }
  server.on('error', (err) => log({ level: 'error', msg: 'server error', error: err.message }));
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) return void socket.destroy();
    const [status, line] =
      err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? ['408 Request Timeout', 'the request did not arrive in time'] : ['400 Bad Request', 'the request is malformed'];
    const body = `${status}: ${line}\n`;
    socket.end(`HTTP/1.1 ${status}\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  });

  const urlOf = (srv: http.Server, scheme: string) => {
    const a = srv.address() as AddressInfo;
    return { host: a.address, port: a.port, url: `${scheme}://${a.address.includes(':') ? `[${a.address}]` : a.address}:${a.port}` };
  };
  const main = urlOf(server, config.tls ? 'https' : 'http');

  let closing: Promise<void> | undefined;
  const close = (graceMs = 5000): Promise<void> => {
    closing ??= (async () => {
      const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const adminClosed = admin ? new Promise<void>((resolve) => admin!.close(() => resolve())) : Promise.resolve();
      admin?.closeAllConnections();
      let timer: NodeJS.Timeout | undefined;
      const grace = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), graceMs)));
      // Requests first (their captures start when their responses do), then the captures.
      const drained = (async () => {
        await serverClosed;
        await Promise.all([...captures].map((c) => c.settled));
      })();
      const result = await Promise.race([drained, grace]);
      clearTimeout(timer);
      if (result === 'timeout') {
        server.closeAllConnections();
        for (const c of [...captures]) c.abort('the proxy is shutting down');
        await serverClosed;
        await Promise.all([...captures].map((c) => c.settled));
      }
      await adminClosed;
      await spool.close();
      proxy.close();
      agent.destroy();
      vhosts.off('reload', onReload);
      if (ownRegistry) await vhosts.close();
    })();
    return closing;
  };

  const running: RunningProxy = {
    address: { host: main.host, port: main.port },
    url: main.url,
    vhosts,
    spool,
    metrics,
    events,
    get capturesInFlight() {
      return captures.size;
    },
    close,
  };
  if (admin) running.adminUrl = urlOf(admin, 'http').url;
  return running;
}

/** The admin server: `GET /metrics` (Prometheus text format 0.0.4), `GET /healthz`. */
async function adminHandler(metrics: ProxyMetrics, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const p = (req.url ?? '/').split('?')[0];
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.setHeader('Allow', 'GET, HEAD');
    return sendText(res, 405, 'Method Not Allowed: the admin server answers GET /metrics and GET /healthz');
  }
  if (p === '/metrics') {
    const body = await metrics.text();
    res.writeHead(200, { 'Content-Type': metrics.registry.contentType, 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store' });
    res.end(req.method === 'HEAD' ? undefined : body);
    return;
  }
  if (p === '/healthz') return sendText(res, 200, 'ok');
  sendText(res, 404, `Not Found: the admin server answers /metrics and /healthz, not ${JSON.stringify(p)}`);
}

/** Ends `res` with `status` and one line of text (`text/plain; charset=utf-8`). */
function sendText(res: http.ServerResponse, status: number, line: string): void {
  if (res.destroyed || res.writableEnded) return; // the client is gone already
  const body = `${status} ${line}\n`;
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store' });
  res.end(body);
}
