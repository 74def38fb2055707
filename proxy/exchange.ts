/**
 * One proxied exchange: the vhost picked by `Host` (421 when none serves
 * it, RFC 9110 §15.5.20), the request passed to the content server
 * (http-proxy, for exactly the target the client sent, with the proxy's
 * own `X-Forwarded-*` and without a client-sent `X-Client-IP`,
 * proxy/forwarding.ts), the content server's own address in redirects
 * replaced by the site's (proxy/reverse.ts), the archive's TimeGate
 * announced on the response (RFC 7089 §2.2.1, a `Link` field of RFC 8288),
 * the capture decision and the tee of the response body into the capture,
 * the content server's request cut when the client goes away, and the
 * request's log line once the request is done and its capture settled.
 */
import type { EventEmitter } from 'node:events';
import type http from 'node:http';
import { parse as parseUrl, type Url } from 'node:url';
import type httpProxy from 'http-proxy';
import { formatLink } from '#shared/link.js';
import { sendError } from './answers.js';
import { type CaptureAddress, captureAddress, type NoAddress, upstreamTarget } from './capture/address.js';
import { type Capture, type CaptureOptions, startCapture } from './capture/capture.js';
import { type NotCapturedReason, requestVerdict, responseVerdict } from './capture/verdict.js';
import type { Vhost } from './config/vhost-file.js';
import { dropProxyOwned, setForwarded } from './forwarding.js';
import type { Logger } from './log.js';
import type { ProxyMetrics } from './metrics.js';
import { reverseUpstreamUrls } from './reverse.js';
import type { Spool } from './spool/spool.js';
import type { VhostRegistry } from './vhosts.js';

/** What one exchange knows of itself, from the request head to the request's log line. */
interface Exchange {
  ctx: ExchangeContext;
  req: http.IncomingMessage;
  res: http.ServerResponse;
  vhost: Vhost;
  /** `performance.now()` when the request arrived. */
  started: number;
  /** Of the client's connection. */
  scheme: 'http' | 'https';
  /** Where it is filed (the URI-R); `undefined` when the request has none (not announced, not captured). */
  address?: CaptureAddress;
  /** The `Link` announcing the TimeGate of {@link address}. */
  timegateLink?: string;
  /** The target the content server is asked for: the client's, exactly. */
  upstreamTarget: string;
  /** The target the content server was asked for, once the request to it is made. */
  askedTarget?: string;
  /** Why not captured; `null` while it still may be. */
  notCaptured: NotCapturedReason | null;
  /** One line on {@link notCaptured} (why the archive would refuse it, …). */
  notCapturedWhy?: string;
  /** The request to the content server (cut when the client goes away). */
  proxyReq?: http.ClientRequest;
  /** The client went away before its response was complete. */
  clientGone?: boolean;
  capture?: Capture;
  /** The content server's status. */
  status?: number;
  /** Response body bytes from the content server. */
  bodyBytes: number;
  /** The content server's response body ended. */
  bodyEnded?: boolean;
  /** The response body is held (unpiped, paused) until the capture catches up with the spool's disk. */
  held?: boolean;
  /** One line: what went wrong. */
  error?: string;
  /** The content server stayed silent for `upstream_timeout` (http-proxy aborts without saying why). */
  timedOut?: boolean;
  /** Sent once more on a new connection ({@link mayResend}). */
  resent?: boolean;
}

/** One request's log line: `msg` and `type` are `"request"`; `vhost` (absent: none served it) and `status` are counted. */
export interface RequestLogEntry {
  msg: 'request';
  type: 'request';
  vhost?: string;
  status?: number;
  [key: string]: unknown;
}

/** Writes one request's log line, counts it, and emits it as the proxy's `'request'` event. */
export type LogRequest = (entry: RequestLogEntry, level: 'info' | 'warn') => void;

/** The one-line reason of a 421: no vhost serves the request's `Host`. */
export function noVhostReason(req: http.IncomingMessage): string {
  return `no virtual host here serves ${JSON.stringify(req.headers.host ?? '')}`;
}

/** Logs a request answered 421 (no vhost serves its `Host`) after `ms` ms; an upgrade request's log line names its `Upgrade`. */
export function logNoVhost(logRequest: LogRequest, req: http.IncomingMessage, ms: number, upgrade?: string): void {
  const entry: RequestLogEntry = {
    msg: 'request',
    type: 'request',
    method: req.method,
    host: req.headers.host,
    target: req.url,
    status: 421,
    client: req.socket.remoteAddress,
    ms,
  };
  if (upgrade !== undefined) entry.upgrade = upgrade;
  logRequest(entry, 'info');
}

/**
 * A {@link LogRequest} writing to `log`, counting into
 * `capture_proxy_requests_total` (by vhost and status), and emitting the
 * entry (without `level`) on `events` when anything listens.
 */
export function requestLogger(log: Logger, metrics: ProxyMetrics, events: EventEmitter): LogRequest {
  return (entry, level) => {
    metrics.countRequest(entry.vhost ?? '-', entry.status ?? 0);
    log(level === 'info' ? entry : { level, ...entry });
    if (events.listenerCount('request') > 0) events.emit('request', entry);
  };
}

/**
 * The content server's address as http-proxy takes it (`url.parse`'s
 * shape), parsed once per vhost: given as a string, http-proxy parses it
 * again for every request.
 */
const upstreamTargets = new WeakMap<Vhost, Url>();
function upstreamOf(vhost: Vhost): Url {
  let u = upstreamTargets.get(vhost);
  if (!u) upstreamTargets.set(vhost, (u = parseUrl(vhost.upstream)));
  return u;
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
  upload: Pick<CaptureOptions, 'maxBufferedBytes' | 'archiveTimeoutMs' | 'agent' | 'heldMaxBytes' | 'unchangedCache'>;
  logRequest: LogRequest;
}

/**
 * The `Link` value announcing the TimeGate of a URI-R:
 * `<{ArchiveTimeGate}{URI-R}>; rel="timegate"` (RFC 7089 §2.2.1,
 * RFC 8288), the URI written as every Link of the archive is (`,` and `;`
 * percent-encoded, shared/link.ts).
 */
function timegateLink(vhost: Vhost, uriR: string): string {
  return formatLink({ uri: `${vhost.archiveTimeGate}${uriR}`, rel: 'timegate' });
}

/** What a request's `Host`, target, scheme and port give on a vhost, whatever else the request says. */
interface Routing {
  /** The target the content server is asked for (proxy/capture/address.ts `upstreamTarget`). */
  upstreamTarget: string;
  /** Where it would be filed, or why it has no URI-R (proxy/capture/address.ts `captureAddress`). */
  address: CaptureAddress | NoAddress;
  /**
   * The TimeGate's `Link`, when it has a URI-R on a vhost that archives: with
   * `EnableArchiving: Off` the proxy announces no TimeGate (as SiteStory
   * announced only the hosts it archived), since none would hold this response.
   */
  timegateLink?: string;
}

/** How many {@link Routing}s each vhost keeps (the most recent; a site's pages come back again and again). */
const RECENT_ROUTINGS = 512;
/** The recent routings of each vhost (vhosts are frozen, and a reload makes new ones, so a kept answer is never stale). */
const routings = new WeakMap<Vhost, Map<string, Routing>>();

/**
 * The {@link Routing} of a request, from the vhost's recent ones when it is
 * there: worked out anew, it was a tenth of the proxy's own time per
 * request (the URI-R built, normalised and checked, the Link formatted).
 */
function routingOf(vhost: Vhost, host: string | undefined, target: string, scheme: 'http' | 'https', localPort: number | undefined): Routing {
  let recent = routings.get(vhost);
  if (!recent) routings.set(vhost, (recent = new Map()));
  // (The host's length first: no two requests share a key.)
  const key = `${scheme} ${localPort} ${host?.length ?? -1} ${host ?? ''}${target}`;
  let r = recent.get(key);
  if (r) return r;
  const address = captureAddress(vhost, host, target, scheme, localPort);
  r = { upstreamTarget: upstreamTarget(target), address: Object.freeze(address) };
  if ('uriR' in address && vhost.enableArchiving) r.timegateLink = timegateLink(vhost, address.uriR);
  if (recent.size >= RECENT_ROUTINGS) recent.delete(recent.keys().next().value!);
  recent.set(key, Object.freeze(r));
  return r;
}

/**
 * Where a request's {@link Exchange} is kept: a property of the request
 * itself, not a WeakMap keyed by it. The exchange refers to the request to
 * the content server, whose listeners (http-proxy's) refer back to the
 * client's request; through a WeakMap, V8's young-generation collector
 * kept that key alive by its own value, so every exchange outlived two
 * collections and was promoted to the old generation (80 MB promoted in
 * 3 s of load, and a full collection every second, where a property costs
 * nothing).
 */
const EXCHANGE = Symbol('exchange');
type WithExchange = { [EXCHANGE]?: Exchange };

/**
 * The exchange of `req` (and of its response, of the request to the
 * content server and of that one's response), once
 * {@link exchangeHandler} made one. The listeners of an exchange are the
 * module's own functions, which find their exchange on the emitter (`this`)
 * instead of closing over it: no function made per request.
 */
function exchangeOf(emitter: object): Exchange | undefined {
  return (emitter as WithExchange)[EXCHANGE];
}

function setExchange(emitter: object, ex: Exchange): void {
  (emitter as WithExchange)[EXCHANGE] = ex;
}

/** http-proxy aborts on proxyTimeout without saying why; remember it to answer 504. */
function onUpstreamTimeout(this: http.ClientRequest): void {
  const ex = exchangeOf(this);
  if (ex) ex.timedOut = true;
}

/**
 * Whether a request whose send to the content server failed may be sent
 * once more: a GET or HEAD without a body (safe and idempotent, RFC 9110
 * §9.2.1–9.2.2), on a kept-alive connection the server closed or reset
 * (`ECONNRESET`, `EPIPE`: the race of a keep-alive timeout, the server
 * closing an idle connection just as the request left), before any answer
 * and not already sent again; never after `upstream_timeout` or with the
 * client gone. The retry Node's docs advise for `request.reusedSocket`.
 */
function mayResend(ex: Exchange, err: NodeJS.ErrnoException): boolean {
  const req = ex.req;
  if (ex.resent || ex.timedOut || ex.clientGone || ex.status !== undefined || ex.res.headersSent) return false;
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  if (req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] ?? '0') !== '0') return false;
  return ex.proxyReq?.reusedSocket === true && (err.code === 'ECONNRESET' || err.code === 'EPIPE');
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
  ctx.proxy.on('proxyReq', (proxyReq, req) => {
    const ex = exchangeOf(req);
    if (!ex) return;
    ex.proxyReq = proxyReq;
    setExchange(proxyReq, ex);
    proxyReq.on('timeout', onUpstreamTimeout);
    if (ex.clientGone) return void proxyReq.destroy();
    // http-proxy's path went through url.parse (`\` → `/`) and a `//` merge: ask for the target as sent.
    if (!proxyReq.headersSent) proxyReq.path = ex.upstreamTarget;
    ex.askedTarget = proxyReq.path;
  });
  ctx.proxy.on('proxyRes', (proxyRes, req) => {
    const ex = exchangeOf(req);
    if (ex) onResponse(ex, proxyRes);
  });
  return {
    handle(req, res) {
      const ex = startExchange(ctx, req, res);
      if (!ex) return;
      setExchange(req, ex);
      ctx.proxy.web(req, res, { target: upstreamOf(ex.vhost) });
    },
    onError(err, req, res) {
      const ex = exchangeOf(req);
      if (ex?.clientGone) return void res.destroy(); // the proxy cut it: the client is gone
      if (ex && mayResend(ex, err)) {
        ex.resent = true;
        return void ctx.proxy.web(req, res, { target: upstreamOf(ex.vhost) });
      }
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
 * it (and logs it); otherwise makes its {@link Exchange} (where a capture
 * would be filed, proxy/capture/address.ts), removes the fields that are
 * the proxy's word (proxy/forwarding.ts), and sees to its log line.
 *
 * @returns the exchange to proxy, or `undefined` when answered here
 */
function startExchange(ctx: ExchangeContext, req: http.IncomingMessage, res: http.ServerResponse): Exchange | undefined {
  const started = performance.now();
  const vhost = ctx.vhosts.lookup(req.headers.host);
  if (!vhost) {
    sendError(res, 421, noVhostReason(req));
    res.on('close', () => logNoVhost(ctx.logRequest, req, Math.round(performance.now() - started)));
    return undefined;
  }
  const scheme: 'http' | 'https' = (req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http';
  const target = req.url ?? '/';
  const { upstreamTarget, address, timegateLink } = routingOf(vhost, req.headers.host, target, scheme, req.socket.localPort);
  const ex: Exchange = {
    ctx,
    req,
    res,
    vhost,
    started,
    scheme,
    upstreamTarget,
    notCaptured: requestVerdict(vhost, req.method ?? '', target, req.headers),
    bodyBytes: 0,
  };
  if ('uriR' in address) {
    ex.address = address;
    ex.timegateLink = timegateLink;
  } else if (ex.notCaptured === null) {
    // Not the site's own name or port, a target the archive would refuse, no URI-R at all: proxied, not announced, not captured.
    ex.notCaptured = address.reason;
    if ('why' in address) ex.notCapturedWhy = address.why;
  }
  // No spoofing: the content server must not trust a client-sent X-Client-IP or X-Forwarded-Host (any spelling).
  dropProxyOwned(req.headers);
  setForwarded(req, scheme === 'https');
  setExchange(res, ex);
  res.on('close', onClientClosed);
  return ex;
}

/** The response head arrived: announce the TimeGate, decide on the capture, tee the body. */
function onResponse(ex: Exchange, proxyRes: http.IncomingMessage): void {
  const { ctx, req } = ex;
  ex.status = proxyRes.statusCode;
  reverseUpstreamUrls(proxyRes, ex.vhost, req.headers.host, ex.scheme, req.socket.localPort);
  if (ex.timegateLink) announceTimeGate(proxyRes, ex.timegateLink);
  if (ex.notCaptured === null) ex.notCaptured = responseVerdict(ex.vhost, proxyRes.statusCode ?? 0, proxyRes.headers);
  if (ex.notCaptured === null && ex.address) {
    if (ex.askedTarget === ex.address.target) ex.capture = startExchangeCapture(ctx, ex, req, proxyRes, ex.address);
    else {
      // (A request with Expect: http-proxy sends its head before we can set the path.)
      ex.notCaptured = 'no-uri';
      ex.notCapturedWhy = `the content server was asked for ${JSON.stringify(ex.askedTarget ?? '?')}, not the target as sent`;
    }
  }
  teeBody(ex, proxyRes);
}

/** Adds the TimeGate `link` after any `Link` the content server sent. */
function announceTimeGate(proxyRes: http.IncomingMessage, link: string): void {
  const had = proxyRes.headers.link;
  if (had === undefined || had === '') proxyRes.headers.Link = link;
  else proxyRes.headers.link = `${Array.isArray(had) ? had.join(', ') : had}, ${link}`;
}

/**
 * Starts the capture of an exchange; `undefined` and `notCaptured:
 * 'refused'` when the archive would refuse it, `'no-uri'` when its heads
 * cannot be serialised.
 */
function startExchangeCapture(
  ctx: ExchangeContext,
  ex: Exchange,
  req: http.IncomingMessage,
  proxyRes: http.IncomingMessage,
  address: CaptureAddress,
): Capture | undefined {
  let capture: Capture;
  try {
    const started = startCapture(req, proxyRes, ex.vhost, address, ex.scheme, { log: ctx.log, metrics: ctx.metrics, spool: ctx.spool, ...ctx.upload });
    if ('refused' in started) {
      ex.notCaptured = 'refused';
      ex.notCapturedWhy = started.refused;
      return undefined;
    }
    capture = started;
  } catch (err) {
    ex.notCaptured = 'no-uri';
    ctx.log({ level: 'error', msg: 'capture not started', error: (err as Error).message, uriR: address.uriR });
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
function teeBody(ex: Exchange, proxyRes: http.IncomingMessage): void {
  setExchange(proxyRes, ex);
  proxyRes.on('data', onBodyData);
  proxyRes.on('end', onBodyEnd);
  proxyRes.on('error', ignore); // 'close' below handles it
  proxyRes.on('close', onBodyClosed);
}

function ignore(): void {}

function onBodyData(this: http.IncomingMessage, chunk: Buffer): void {
  const ex = exchangeOf(this)!;
  ex.bodyBytes += chunk.length;
  const capture = ex.capture;
  if (!capture) return;
  capture.write(chunk);
  if (capture.behind && !ex.held) {
    // The spool disk is slower than the content server: read no faster than it writes.
    // Unpiped while held, so that the client's 'drain' cannot resume the response behind our back.
    ex.held = true;
    const { res } = ex;
    this.unpipe(res);
    this.pause();
    void capture.whenCaughtUp().then(() => {
      ex.held = false;
      if (!res.destroyed && !res.writableEnded) this.pipe(res);
      else this.destroy();
    });
  }
}

function onBodyEnd(this: http.IncomingMessage): void {
  const ex = exchangeOf(this)!;
  ex.bodyEnded = true;
  ex.capture?.end();
}

function onBodyClosed(this: http.IncomingMessage): void {
  const ex = exchangeOf(this)!;
  if (ex.bodyEnded || ex.clientGone) return; // (the proxy cut it: the client went away, see onClosed)
  ex.error ??= 'the content server broke off its response';
  ex.capture?.abort('the content server broke off its response mid-body');
  if (!ex.res.writableEnded) ex.res.destroy();
}

/**
 * The client's response is closed: when the client went away before its
 * end, cut the request to the content server (its connection would stay
 * open until `upstream_timeout`) and a capture left mid-body; then log the
 * request once its capture settled.
 */
function onClientClosed(this: http.ServerResponse): void {
  const ex = exchangeOf(this)!;
  const ms = Math.round(performance.now() - ex.started);
  const finished = this.writableFinished;
  if (!finished) {
    ex.clientGone = true;
    ex.proxyReq?.destroy();
  }
  if (ex.capture && !ex.capture.bodyComplete && !finished) {
    // The client went away before the content server's body was complete: cut the PUT.
    // (Once the whole body was captured, the capture is a true one and goes on.)
    ex.capture.abort('the client closed the connection mid-body');
  }
  if (ex.capture)
    void ex.capture.settled.then((o) => {
      if (o.outcome !== 'refused') return logExchange(ex, o.outcome, ms, finished);
      // Found when its heads were made late (a held capture): logged as one refused before it started.
      ex.notCapturedWhy = o.reason;
      ex.ctx.metrics.refused.inc();
      logExchange(ex, 'no: refused', ms, finished);
    });
  else {
    if (ex.notCaptured === 'refused') ex.ctx.metrics.refused.inc();
    logExchange(ex, `no: ${ex.notCaptured ?? (ex.status === undefined ? 'no-response' : 'status')}`, ms, finished);
  }
}

/** Writes the request's log line: `capture` its outcome, `ms` its time, `finished` whether the client got all of its response. */
function logExchange(ex: Exchange, capture: string, ms: number, finished: boolean): void {
  const { req, res, vhost } = ex;
  const entry: RequestLogEntry = {
    msg: 'request',
    type: 'request',
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
  if (ex.notCapturedWhy && capture.startsWith('no: ')) entry.reason = ex.notCapturedWhy;
  if (!finished) entry.aborted = true;
  if (ex.error) entry.error = ex.error;
  ex.ctx.logRequest(entry, ex.error ? 'warn' : 'info');
}
