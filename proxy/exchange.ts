/**
 * One proxied exchange: the vhost picked by `Host` (421 when none serves
 * it, RFC 9110 §15.5.20), the request passed to the content server
 * (http-proxy, with `X-Forwarded-*` and without a client-sent
 * `X-Client-IP`), the archive's TimeGate announced on the response (RFC
 * 7089 §2.2.1, a `Link` field of RFC 8288), the capture decision and the
 * tee of the response body into the capture, and the request's log line
 * once the request is done and its capture settled.
 */
import type { EventEmitter } from 'node:events';
import type http from 'node:http';
import type httpProxy from 'http-proxy';
import { UriError, uriRFromRequest } from '../shared/uri.js';
import { sendError } from './answers.js';
import { type Capture, type CaptureOptions, startCapture } from './capture/capture.js';
import { type NotCapturedReason, requestVerdict, responseVerdict } from './capture/verdict.js';
import type { Vhost } from './config/vhost-file.js';
import type { Logger } from './log.js';
import type { ProxyMetrics } from './metrics.js';
import type { Spool } from './spool/spool.js';
import type { VhostRegistry } from './vhosts.js';

/** What one exchange knows of itself, from the request head to the request's log line. */
interface Exchange {
  vhost: Vhost;
  /** `performance.now()` when the request arrived. */
  started: number;
  /** Of the client's connection. */
  scheme: 'http' | 'https';
  /** The URI-R; `undefined` when the request has none (not announced, not captured). */
  uriR?: string;
  /** Why not captured; `null` while it still may be. */
  notCaptured: NotCapturedReason | null;
  capture?: Capture;
  /** The content server's status. */
  status?: number;
  /** Response body bytes from the content server. */
  bodyBytes: number;
  /** One line: what went wrong. */
  error?: string;
  /** The content server stayed silent for `upstream_timeout` (http-proxy aborts without saying why). */
  timedOut?: boolean;
}

/** Writes one request's log line (`type: "request"`), counts it, and emits it as the proxy's `'request'` event. */
export type LogRequest = (entry: Record<string, unknown>, level: 'info' | 'warn') => void;

/** A {@link LogRequest} writing to `log`, counting into `metrics.requests` (by vhost and status), emitting on `events`. */
export function requestLogger(log: Logger, metrics: ProxyMetrics, events: EventEmitter): LogRequest {
  return (entry, level) => {
    metrics.requests.inc({ vhost: String(entry.vhost ?? '-'), status: String(entry.status ?? 0) });
    log({ level, msg: 'request', type: 'request', ...entry });
    events.emit('request', { msg: 'request', type: 'request', ...entry });
  };
}

/** What the exchanges of one proxy share. */
export interface ExchangeContext {
  vhosts: VhostRegistry;
  proxy: httpProxy;
  log: Logger;
  metrics: ProxyMetrics;
  spool: Spool;
  /** Captures not settled yet (the proxy's close waits on them). */
  captures: Set<Capture>;
  /** Emits `'capture'` when a capture ends. */
  events: EventEmitter;
  /** Settings of each live PUT. */
  upload: Pick<CaptureOptions, 'maxBufferedBytes' | 'archiveTimeoutMs'>;
  logRequest: LogRequest;
}

/**
 * The `Link` value announcing the TimeGate of a URI-R:
 * `<http://{ArchiveTimeGate}{URI-R}>; rel="timegate"` (RFC 7089 §2.2.1, RFC 8288).
 */
function timegateLink(vhost: Vhost, uriR: string): string {
  return `<http://${vhost.archiveTimeGate}${uriR}>; rel="timegate"`;
}

/**
 * Listens to http-proxy's events for web requests (`proxyReq`,
 * `proxyRes`) and returns the server's request listener, and the
 * `'error'` listener for web requests (the caller dispatches http-proxy's
 * `'error'` between this and the upgrades).
 */
export function exchangeHandler(ctx: ExchangeContext): {
  handle(req: http.IncomingMessage, res: http.ServerResponse): void;
  onError(err: NodeJS.ErrnoException, req: http.IncomingMessage, res: http.ServerResponse): void;
} {
  const exchanges = new WeakMap<http.IncomingMessage, Exchange>();
  ctx.proxy.on('proxyReq', (proxyReq, req) => {
    // http-proxy aborts on proxyTimeout without saying why; remember it to answer 504.
    proxyReq.on('timeout', () => {
      const ex = exchanges.get(req);
      if (ex) ex.timedOut = true;
    });
  });
  ctx.proxy.on('proxyRes', (proxyRes, req, res) => {
    const ex = exchanges.get(req);
    if (ex) onResponse(ctx, ex, req, proxyRes, res);
  });
  return {
    handle(req, res) {
      const ex = startExchange(ctx, req, res);
      if (!ex) return;
      exchanges.set(req, ex);
      ctx.proxy.web(req, res, { target: ex.vhost.upstream });
    },
    onError(err, req, res) {
      const ex = exchanges.get(req);
      if (ex) ex.error = `${err.code ?? ''} ${err.message}`.trim();
      if (res.headersSent) {
        ex?.capture?.abort('the content server failed mid-body');
        res.destroy();
        return;
      }
      if (ex?.timedOut) sendError(res, 504, 'the content server did not answer in time');
      else sendError(res, 502, 'the content server could not be reached or failed before answering');
    },
  };
}

/**
 * Routes a request by its `Host`: answers 421 itself when no vhost serves
 * it (and logs it); otherwise makes its {@link Exchange}, removes any
 * client-sent `X-Client-IP`, and sees to its log line.
 *
 * @returns the exchange to proxy, or `undefined` when answered here
 */
function startExchange(ctx: ExchangeContext, req: http.IncomingMessage, res: http.ServerResponse): Exchange | undefined {
  const started = performance.now();
  const vhost = ctx.vhosts.lookup(req.headers.host);
  if (!vhost) {
    sendError(res, 421, `no virtual host here serves ${JSON.stringify(req.headers.host ?? '')}`);
    res.on('close', () => {
      ctx.logRequest(
        {
          method: req.method,
          host: req.headers.host,
          target: req.url,
          status: 421,
          client: req.socket.remoteAddress,
          ms: Math.round(performance.now() - started),
        },
        'info',
      );
    });
    return undefined;
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
  // No spoofing: the content server must not trust a client-sent X-Client-IP.
  delete req.headers['x-client-ip'];
  res.on('close', () => onClosed(ctx, ex, req, res));
  return ex;
}

/** The response head arrived: announce the TimeGate, decide on the capture, tee the body. */
function onResponse(ctx: ExchangeContext, ex: Exchange, req: http.IncomingMessage, proxyRes: http.IncomingMessage, res: http.ServerResponse): void {
  ex.status = proxyRes.statusCode;
  if (ex.uriR) announceTimeGate(proxyRes, timegateLink(ex.vhost, ex.uriR));
  if (ex.notCaptured === null) ex.notCaptured = responseVerdict(ex.vhost, proxyRes.statusCode ?? 0, proxyRes.headers);
  if (ex.notCaptured === null && ex.uriR) ex.capture = startExchangeCapture(ctx, ex, req, proxyRes, ex.uriR);
  teeBody(ex, proxyRes, res);
}

/** Adds the TimeGate `link` after any `Link` the content server sent. */
function announceTimeGate(proxyRes: http.IncomingMessage, link: string): void {
  const had = proxyRes.headers.link;
  if (had === undefined || had === '') proxyRes.headers.Link = link;
  else proxyRes.headers.link = `${Array.isArray(had) ? had.join(', ') : had}, ${link}`;
}

/** Starts the capture of an exchange; `undefined` (and `notCaptured: 'no-uri'`) when its heads cannot be serialised. */
function startExchangeCapture(
  ctx: ExchangeContext,
  ex: Exchange,
  req: http.IncomingMessage,
  proxyRes: http.IncomingMessage,
  uriR: string,
): Capture | undefined {
  let capture: Capture;
  try {
    capture = startCapture(req, proxyRes, ex.vhost, uriR, ex.scheme, { log: ctx.log, metrics: ctx.metrics, spool: ctx.spool, ...ctx.upload });
  } catch (err) {
    ex.notCaptured = 'no-uri';
    ctx.log({ level: 'error', msg: 'capture not started', error: (err as Error).message, uriR });
    return undefined;
  }
  ctx.captures.add(capture);
  void capture.settled.then((outcome) => {
    ctx.captures.delete(capture);
    ctx.events.emit('capture', outcome);
  });
  return capture;
}

/**
 * Counts the response body and hands it to the capture (if any) as it
 * passes to the client; reads no faster than the spool's disk writes while
 * the capture is behind; cuts the client's connection when the content
 * server breaks off (the client must not take a cut body for a whole one).
 */
function teeBody(ex: Exchange, proxyRes: http.IncomingMessage, res: http.ServerResponse): void {
  const capture = ex.capture;
  let ended = false;
  let held = false;
  proxyRes.on('data', (chunk: Buffer) => {
    ex.bodyBytes += chunk.length;
    if (!capture) return;
    capture.write(chunk);
    if (capture.behind && !held) {
      // The spool disk is slower than the content server: read no faster than it writes.
      // Unpiped while held, so that the client's 'drain' cannot resume the response behind our back.
      held = true;
      proxyRes.unpipe(res);
      proxyRes.pause();
      void capture.whenCaughtUp().then(() => {
        held = false;
        if (!res.destroyed && !res.writableEnded) proxyRes.pipe(res);
        else proxyRes.destroy();
      });
    }
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
    if (!res.writableEnded) res.destroy();
  });
}

/** The client's response is closed: cut a capture the client left mid-body, then log the request once its capture settled. */
function onClosed(ctx: ExchangeContext, ex: Exchange, req: http.IncomingMessage, res: http.ServerResponse): void {
  const ms = Math.round(performance.now() - ex.started);
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
      vhost: ex.vhost.serverName,
      upstream: ex.vhost.upstream,
      capture,
    };
    if (!finished) entry.aborted = true;
    if (ex.error) entry.error = ex.error;
    ctx.logRequest(entry, ex.error ? 'warn' : 'info');
  };
  if (ex.capture) void ex.capture.settled.then((o) => write(o.outcome));
  else write(`no: ${ex.notCaptured ?? (ex.status === undefined ? 'no-response' : 'status')}`);
}
