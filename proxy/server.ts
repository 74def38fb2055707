/**
 * The capture proxy's HTTP side (DESIGN.md "Capture proxy"): a reverse
 * proxy (http-proxy, keep-alive connections to the content servers) that
 * picks a vhost by `Host`, announces the archive's TimeGate on every
 * proxied response, and tees captured exchanges to the archive
 * (proxy/capture.ts).
 *
 * Answers of its own:
 * - 421 Misdirected Request (RFC 7540 §9.1.2), one text line, when the
 *   `Host` matches no vhost and no vhost has `default: true`;
 * - 502 Bad Gateway, one text line, when the content server cannot be
 *   reached or fails before its response head (504 when it is silent for
 *   `upstreamTimeoutMs`); a failure after the head cuts the client's
 *   connection instead (the client sees a short body, not a complete one).
 *
 * To the content server: the request as received (`Host` kept, as Apache's
 * `ProxyPreserveHost On`), plus `X-Forwarded-For`, `-Port`, `-Proto` (the
 * client's address appended to any it sent) and `X-Forwarded-Host` (kept if
 * the client sent one).
 *
 * Log: one entry per request once it is done (`type: "request"`): `method`,
 * `host` (the Host header), `target`, `status`, `bytes` (response body bytes
 * from the content server), `ms`, `client` (socket address), `vhost`
 * (server_name), `upstream`, `capture` (`sent`, or `no: <reason>` with
 * reason `archiving-off`, `method`, `accept-datetime`, `excluded`, `status`,
 * `no-uri`, `no-response`), and `aborted: true` / `error` when it went
 * wrong. A capture that is not delivered adds an `error` entry (proxy/capture.ts).
 */
import { EventEmitter } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import httpProxy from 'http-proxy';
import { UriError, uriRFromRequest } from '../shared/uri.js';
import { CaptureUpload, isCapturableStatus, requestVerdict, startCapture, type CaptureOutcome, type NotCapturedReason } from './capture.js';
import type { ProxyConfig, Vhost } from './config.js';
import { silentLogger, type Logger } from './log.js';
import { VhostRegistry } from './vhosts.js';

/** Options of {@link startProxy}; every one has a default. */
export interface ProxyOptions {
  log?: Logger;
  /**
   * A vhost table to use instead of opening (and watching) `config.vhostsDir`.
   * The proxy does not close a registry it was given.
   */
  vhosts?: VhostRegistry;
  /** Hot-reload the vhosts folder (default `true`; ignored with `vhosts`). */
  watch?: boolean;
  /** Abandon a capture once its PUT has more than this many bytes waiting (default 8 MiB). */
  maxCaptureBufferBytes?: number;
  /** Give up on an archive silent for this long, ms (default 60 000). */
  archiveTimeoutMs?: number;
  /** Answer 504 when the content server is silent for this long, ms (default 60 000, as Apache's ProxyTimeout). */
  upstreamTimeoutMs?: number;
  /**
   * Called for each capture that could not be delivered (`failed`, `overflow`).
   * TODO(issue 4): the durable spool.
   */
  onCaptureFailed?: (outcome: CaptureOutcome) => void;
}

/** A running proxy. */
export interface RunningProxy {
  /** Where it listens (the real port when `listen` asked for port 0). */
  address: { host: string; port: number };
  /** `http://host:port` (IPv6 in brackets). */
  url: string;
  /** The vhost table in use (`reload()` for SIGHUP, `'reload'` events). */
  vhosts: VhostRegistry;
  /**
   * Events: `'capture'` ({@link CaptureOutcome}) when a capture ends;
   * `'request'` (the request's log entry) when a request is done.
   */
  events: EventEmitter;
  /**
   * Stops accepting connections, lets requests and captures in flight
   * finish for up to `graceMs` (default 5000), then cuts what is left,
   * closes the vhost watcher (unless the registry was passed in) and the
   * connections to the content servers. Idempotent.
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
  capture?: CaptureUpload;
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
 * Starts the proxy: loads the vhosts (unless given), listens on
 * `config.listen`, resolves once listening.
 *
 * @throws ConfigError from the vhost files (see {@link VhostRegistry.open});
 *   the listen error (`EADDRINUSE`, …) when the address cannot be bound.
 */
export async function startProxy(config: ProxyConfig, options: ProxyOptions = {}): Promise<RunningProxy> {
  const log = options.log ?? silentLogger;
  const ownRegistry = !options.vhosts;
  const vhosts = options.vhosts ?? (await VhostRegistry.open(config.vhostsDir, { log, watch: options.watch }));
  const events = new EventEmitter();
  const agent = new http.Agent({ keepAlive: true });
  const upstreamTimeoutMs = options.upstreamTimeoutMs ?? 60_000;
  const proxy = httpProxy.createProxyServer({ agent, xfwd: true, preserveHeaderKeyCase: true, proxyTimeout: upstreamTimeoutMs });
  const exchanges = new WeakMap<http.IncomingMessage, Exchange>();
  const captures = new Set<CaptureUpload>();
  const timedOut = new WeakSet<http.IncomingMessage>();

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
    if (ex.notCaptured === null && !isCapturableStatus(proxyRes.statusCode ?? 0)) ex.notCaptured = 'status';
    let capture: CaptureUpload | undefined;
    if (ex.notCaptured === null && ex.uriR) {
      try {
        capture = startCapture(req, proxyRes, ex.vhost, ex.uriR, ex.scheme, {
          log,
          maxBufferedBytes: options.maxCaptureBufferBytes,
          archiveTimeoutMs: options.archiveTimeoutMs,
          onCaptureFailed: options.onCaptureFailed,
          onDone: (outcome) => {
            captures.delete(capture!);
            events.emit('capture', outcome);
          },
        });
        captures.add(capture);
        ex.capture = capture;
      } catch (err) {
        ex.notCaptured = 'no-uri';
        log({ level: 'error', msg: 'capture not started', error: (err as Error).message, uriR: ex.uriR });
      }
    }
    let ended = false;
    proxyRes.on('data', (chunk: Buffer) => {
      ex.bodyBytes += chunk.length;
      capture?.write(chunk);
    });
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
      resOrSocket.destroy();
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

  const server = http.createServer((req, res) => {
    const started = performance.now();
    const vhost = vhosts.lookup(req.headers.host);
    if (!vhost) {
      sendText(res, 421, `Misdirected Request: no virtual host here serves ${JSON.stringify(req.headers.host ?? '')}`);
      res.on('close', () => {
        const entry = { msg: 'request', type: 'request', method: req.method, host: req.headers.host, target: req.url, status: 421, client: req.socket.remoteAddress, ms: Math.round(performance.now() - started) };
        log(entry);
        events.emit('request', entry);
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
    res.on('close', () => {
      if (ex.capture && !ex.capture.bodyComplete && !res.writableFinished) {
        // The client went away before the content server's body was complete: cut the PUT.
        // (Once the whole body was handed to the PUT, the capture is a true one and goes on.)
        ex.capture.abort('the client closed the connection mid-body');
      }
      const entry: Record<string, unknown> = {
        msg: 'request',
        type: 'request',
        method: req.method,
        host: req.headers.host,
        target: req.url,
        status: ex.status ?? res.statusCode,
        bytes: ex.bodyBytes,
        ms: Math.round(performance.now() - started),
        client: req.socket.remoteAddress,
        vhost: vhost.serverName,
        upstream: vhost.upstream,
        capture: ex.capture ? 'sent' : `no: ${ex.notCaptured ?? (ex.status === undefined ? 'no-response' : 'status')}`,
      };
      if (!res.writableFinished) entry.aborted = true;
      if (ex.error) entry.error = ex.error;
      log({ level: ex.error ? 'warn' : 'info', msg: 'request', ...entry });
      events.emit('request', entry);
    });
    proxy.web(req, res, { target: vhost.upstream });
  });

  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    server.once('error', onError);
    server.listen(config.listen.port, config.listen.host, () => {
      server.off('error', onError);
      resolve();
    });
  }).catch(async (err) => {
    if (ownRegistry) await vhosts.close();
    agent.destroy();
    throw err;
  });
  server.on('error', (err) => log({ level: 'error', msg: 'server error', error: err.message }));

  const addr = server.address() as AddressInfo;
  const host = addr.address;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${addr.port}`;

  let closing: Promise<void> | undefined;
  const close = (graceMs = 5000): Promise<void> => {
    closing ??= (async () => {
      const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const capturesDone = Promise.all([...captures].map((c) => c.settled));
      let timer: NodeJS.Timeout | undefined;
      const grace = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), graceMs)));
      const result = await Promise.race([Promise.all([serverClosed, capturesDone]), grace]);
      clearTimeout(timer);
      if (result === 'timeout') {
        server.closeAllConnections();
        for (const c of [...captures]) c.abort('the proxy is shutting down');
        await serverClosed;
      }
      proxy.close();
      agent.destroy();
      if (ownRegistry) await vhosts.close();
    })();
    return closing;
  };

  return { address: { host, port: addr.port }, url, vhosts, events, close };
}

/** Ends `res` with `status` and one line of text (`text/plain; charset=utf-8`). */
function sendText(res: http.ServerResponse, status: number, line: string): void {
  if (res.destroyed || res.writableEnded) return; // the client is gone already
  const body = `${status} ${line}\n`;
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store' });
  res.end(body);
}
