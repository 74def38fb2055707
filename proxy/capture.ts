/**
 * The capture tee (DESIGN.md "What the proxy captures", "Capture proxy";
 * spec.md §8): which exchanges are captured, what the capture record holds,
 * and the one PUT per capture that streams it to the archive while the
 * response streams to the client.
 *
 * What is captured: a `GET` without `Accept-Datetime` (a Memento client
 * asking for the past is not a hit on the present), whose response is a
 * representation (2xx other than 206: a partial body is not the resource;
 * 3xx other than 304: a redirect is part of the site, a 304 has no body),
 * on a vhost with `EnableArchiving: On`, whose path is not `Excluded`.
 * Private traffic is left out unless the vhost says `ArchivePrivate: On`:
 * a request carrying `Authorization` and a response with `Cache-Control:
 * private` or `no-store` (RFC 9111 §5.2.2.3, §5.2.2.7). {@link requestVerdict}
 * and {@link responseVerdict} are the two places that decide.
 *
 * What the record keeps of private data: `Cookie` and `Set-Cookie` values
 * are removed, names kept (`ArchiveCookies: On` keeps them);
 * `Authorization` and `Proxy-Authorization` keep their scheme only, always.
 *
 * The client never waits for the archive: body bytes are handed to the PUT
 * and to the spool tee (proxy/spool.ts) as they arrive from the content
 * server, and both buffers are bounded; a live PUT that falls behind is cut
 * and the capture spooled; a spool that falls behind drops the capture. The
 * client is never slowed down.
 */
import http from 'node:http';
import type { IncomingMessage } from 'node:http';
import { serializeCaptureHead, type CapturedRequest, type CapturedResponse } from '../shared/capture-record.js';
import { fromRawHeaders, type RawHeader } from '../shared/http-head.js';
import { normalizeMatchPath, type Vhost } from './config.js';
import type { Logger } from './log.js';
import type { ProxyMetrics } from './metrics.js';
import type { ArchiveQueue, Spool, SpoolTee } from './spool.js';

/** Why an exchange is not captured (`null` in {@link requestVerdict} = it may be). */
export type NotCapturedReason =
  | 'archiving-off'
  | 'method'
  | 'accept-datetime'
  | 'excluded'
  | 'status'
  | 'private'
  | 'no-uri';

/**
 * True when `target`'s path is under one of the `excluded` prefixes, on a
 * segment boundary: `/search` excludes `/search`, `/search/x` and
 * `/search?q=1`, not `/searchx`. The path is compared after
 * {@link normalizeMatchPath} (so `/%73earch` and `/a/../search` are
 * excluded too); `excluded` entries are normalised the same way by the
 * config loader.
 *
 * @param excluded normalised prefixes (`Vhost.excluded`)
 * @param target request target, origin-form or absolute-form
 */
export function isExcludedPath(excluded: readonly string[], target: string): boolean {
  if (excluded.length === 0) return false;
  const p = normalizeMatchPath(target);
  for (const ex of excluded) {
    if (ex === '/' || p === ex || p.startsWith(ex + '/')) return true;
  }
  return false;
}

/**
 * The part of the capture decision known from the request alone.
 *
 * @returns `null` when the exchange is captured if its status allows
 *   ({@link isCapturableStatus}); otherwise the reason it is not.
 */
export function requestVerdict(vhost: Vhost, method: string, target: string, headers: http.IncomingHttpHeaders): NotCapturedReason | null {
  if (!vhost.enableArchiving) return 'archiving-off';
  if (method !== 'GET') return 'method';
  if (headers['accept-datetime'] !== undefined) return 'accept-datetime';
  if (isExcludedPath(vhost.excluded, target)) return 'excluded';
  if (!vhost.archivePrivate && headers.authorization !== undefined) return 'private';
  return null;
}

/** The directive names of `Cache-Control` header values, lower-case (RFC 9111 §5.2). */
export function cacheDirectives(value: string | string[] | undefined): Set<string> {
  const out = new Set<string>();
  if (value === undefined) return out;
  for (const v of Array.isArray(value) ? value : [value]) {
    // Split on commas outside quoted strings (private="Set-Cookie, X" is one directive).
    for (const part of v.match(/(?:[^,"]|"(?:[^"\\]|\\.)*")+/g) ?? []) {
      const name = part.split('=')[0].trim().toLowerCase();
      if (name) out.add(name);
    }
  }
  return out;
}

/**
 * The part of the capture decision known from the response head.
 *
 * @returns `null` when captured; `status` when the response is not a
 *   representation ({@link isCapturableStatus}); `private` for
 *   `Cache-Control: private` or `no-store` unless `ArchivePrivate: On`.
 */
export function responseVerdict(vhost: Vhost, status: number, headers: http.IncomingHttpHeaders): NotCapturedReason | null {
  if (!isCapturableStatus(status)) return 'status';
  if (!vhost.archivePrivate) {
    const cc = cacheDirectives(headers['cache-control']);
    if (cc.has('private') || cc.has('no-store')) return 'private';
  }
  return null;
}

/**
 * A `Cookie` value with the values removed, names kept (`a=1; b=2` →
 * `a=; b=`; RFC 6265 §4.2.1). A pair without `=` is dropped.
 */
export function redactCookie(value: string): string {
  return value
    .split(';')
    .map((p) => p.trim())
    .filter((p) => p.includes('='))
    .map((p) => p.slice(0, p.indexOf('=')).trim() + '=')
    .join('; ');
}

/**
 * A `Set-Cookie` value with the cookie's value removed, its name and
 * attributes kept (`sid=abc; Path=/; HttpOnly` → `sid=; Path=/; HttpOnly`;
 * RFC 6265 §4.1.1).
 */
export function redactSetCookie(value: string): string {
  const semi = value.indexOf(';');
  const pair = semi >= 0 ? value.slice(0, semi) : value;
  const attrs = semi >= 0 ? value.slice(semi) : '';
  const eq = pair.indexOf('=');
  return (eq >= 0 ? pair.slice(0, eq).trim() + '=' : '=') + attrs;
}

/** `Basic dXNlcjpwdw==` → `Basic` (the scheme, no credentials). */
function redactCredentials(value: string): string {
  return value.trim().split(/\s+/)[0] ?? '';
}

/** A response that is a representation: 2xx other than 206, 3xx other than 304 (RFC 7231 §6.3, §6.4; RFC 7233 §4.1; RFC 7232 §4.1). */
export function isCapturableStatus(status: number): boolean {
  return (status >= 200 && status < 300 && status !== 206) || (status >= 300 && status < 400 && status !== 304);
}

/** `::ffff:192.0.2.7` → `192.0.2.7`; other addresses unchanged. */
export function clientAddress(remoteAddress: string | undefined): string | undefined {
  if (!remoteAddress) return undefined;
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(remoteAddress);
  return m ? m[1] : remoteAddress;
}

/**
 * Request headers of the capture record: the client's headers as received
 * (names, order and duplicates kept), except
 * - any `X-Client-IP` the client sent (it would forge the stored address);
 *   with `EnableIP: On`, `X-Client-IP: <socket address>` is added at the end;
 * - any `X-Forwarded-Proto` the client sent (the archive takes the URI-R's
 *   scheme from it, so a client could otherwise file a page under https);
 *   `X-Forwarded-Proto: https` is added when the client connection was TLS;
 * - `Cookie` values (names kept) unless `ArchiveCookies: On`;
 * - the credentials of `Authorization` / `Proxy-Authorization` (scheme kept), always.
 */
export function captureRequestHeaders(req: IncomingMessage, vhost: Vhost, scheme: 'http' | 'https'): RawHeader[] {
  const headers = fromRawHeaders(req.rawHeaders)
    .filter(([k]) => {
      const n = k.toLowerCase();
      return n !== 'x-client-ip' && n !== 'x-forwarded-proto';
    })
    .map(([k, v]): RawHeader => {
      const n = k.toLowerCase();
      if (n === 'cookie' && !vhost.archiveCookies) return [k, redactCookie(v)];
      if (n === 'authorization' || n === 'proxy-authorization') return [k, redactCredentials(v)];
      return [k, v];
    });
  if (scheme === 'https') headers.push(['X-Forwarded-Proto', 'https']);
  if (vhost.enableIP) {
    const ip = clientAddress(req.socket.remoteAddress);
    if (ip) headers.push(['X-Client-IP', ip]);
  }
  return headers;
}

const HOP_BY_HOP = new Set(['transfer-encoding', 'connection', 'keep-alive']);

/**
 * Response headers of the capture record: the content server's headers as
 * received (`rawHeaders`: names, order, duplicates kept) without the
 * hop-by-hop `Transfer-Encoding`, `Connection` and `Keep-Alive` (RFC 7230
 * §6.1; the body is stored with the transfer coding undone), and with
 * `Set-Cookie` values removed (name and attributes kept) unless
 * `ArchiveCookies: On`.
 */
export function captureResponseHeaders(rawHeaders: string[], vhost?: Vhost): RawHeader[] {
  return fromRawHeaders(rawHeaders)
    .filter(([k]) => !HOP_BY_HOP.has(k.toLowerCase()))
    .map(([k, v]): RawHeader => (k.toLowerCase() === 'set-cookie' && !vhost?.archiveCookies ? [k, redactSetCookie(v)] : [k, v]));
}

/** The request and response heads of a capture record, from what the proxy saw. */
export function captureHeads(req: IncomingMessage, proxyRes: IncomingMessage, vhost: Vhost, scheme: 'http' | 'https'): { request: CapturedRequest; response: CapturedResponse } {
  return {
    request: { method: req.method ?? 'GET', target: req.url ?? '/', httpVersion: `HTTP/${req.httpVersion}`, headers: captureRequestHeaders(req, vhost, scheme) },
    response: {
      httpVersion: `HTTP/${proxyRes.httpVersion}`,
      status: proxyRes.statusCode ?? 0,
      reason: proxyRes.statusMessage ?? '',
      headers: captureResponseHeaders(proxyRes.rawHeaders, vhost),
    },
  };
}


/** How a live PUT ended. */
export interface UploadOutcome {
  /**
   * - `stored`: the archive answered 2xx;
   * - `failed`: the archive could not be reached, timed out, answered
   *   non-2xx, or cut its answer;
   * - `overflow`: the archive took the bytes slower than the content server
   *   sent them and the PUT buffer passed the bound; the PUT was cut;
   * - `aborted`: the PUT was cut on purpose (client gone, content server
   *   broke off, proxy shutting down), so that the archive stores nothing.
   */
  outcome: 'stored' | 'failed' | 'overflow' | 'aborted';
  /** Status of the archive's answer, when there was one. */
  archiveStatus?: number;
  /** One line: what went wrong. */
  reason?: string;
}

/** Settings of one live PUT. */
export interface UploadOptions {
  /** Cut the PUT when more than this many bytes wait to be sent (default 8 MiB). */
  maxBufferedBytes?: number;
  /** Give up on an archive that is silent for this long, ms (default 60 000). */
  archiveTimeoutMs?: number;
}

export const DEFAULT_MAX_BUFFERED_BYTES = 8 * 1024 * 1024;
export const DEFAULT_ARCHIVE_TIMEOUT_MS = 60_000;

/** `host:port` of a vhost's archive, IPv6 in brackets. */
function archiveHostPort(vhost: Vhost): string {
  return `${vhost.archiveHost.includes(':') ? `[${vhost.archiveHost}]` : vhost.archiveHost}:${vhost.archivePort}`;
}

/**
 * One live PUT to `http://ArchiveHost:ArchivePort{ArchivePath}{URI-R}` with
 * `Transfer-Encoding: chunked` and `Connection: close` (spec.md §8), plus
 * `Authorization: Bearer <ArchiveToken>` when the vhost has one; a new
 * connection per capture; its body is the two heads then the response body
 * as it streams. Writes never wait: {@link write} only queues.
 */
export class CaptureUpload {
  private readonly put: http.ClientRequest;
  private readonly maxBuffered: number;
  private done = false;
  private ended = false;
  private resolveSettled!: (outcome: UploadOutcome) => void;
  /** Resolves with the outcome once the PUT ends (never rejects). */
  readonly settled: Promise<UploadOutcome> = new Promise((resolve) => (this.resolveSettled = resolve));

  /**
   * Opens the PUT and queues the two heads.
   *
   * @param head bytes of parts 1–6 of the capture record ({@link serializeCaptureHead})
   */
  constructor(vhost: Vhost, uriR: string, head: Buffer, options: UploadOptions = {}) {
    this.maxBuffered = options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
    const timeout = options.archiveTimeoutMs ?? DEFAULT_ARCHIVE_TIMEOUT_MS;
    const headers: Record<string, string> = { 'Transfer-Encoding': 'chunked', Connection: 'close' };
    if (vhost.archiveToken) headers.Authorization = `Bearer ${vhost.archiveToken}`;
    this.put = http.request({ host: vhost.archiveHost, port: vhost.archivePort, method: 'PUT', path: vhost.archivePath + uriR, agent: false, headers });
    this.put.setTimeout(timeout, () => this.finish('failed', `the archive sent nothing for ${timeout} ms`));
    // Kept for the whole life of the request: a late error must never become an uncaught one.
    this.put.on('error', (err: NodeJS.ErrnoException) => this.finish('failed', `PUT to the archive failed: ${err.code ?? ''} ${err.message}`.trim()));
    this.put.on('response', (res) => this.onResponse(res));
    this.put.write(head);
  }

  /** Queues body bytes (exactly as received from the content server, transfer coding undone). Never waits. */
  write(chunk: Buffer): void {
    if (this.done || this.ended) return;
    this.put.write(chunk);
    if (this.put.writableLength > this.maxBuffered) {
      this.finish('overflow', `the archive is slower than the content server: more than ${this.maxBuffered} bytes waiting to be sent`);
    }
  }

  /** The response body is complete: ends the PUT (the archive stores the capture once it has it all). */
  end(): void {
    if (this.done || this.ended) return;
    this.ended = true;
    this.put.end();
  }

  /**
   * Cuts the PUT without its last chunk, so that the archive sees a broken
   * body and stores nothing. No-op once the outcome is known.
   */
  abort(reason: string): void {
    this.finish('aborted', reason);
  }

  /** True once the outcome is known. */
  get finished(): boolean {
    return this.done;
  }

  private onResponse(res: IncomingMessage): void {
    const status = res.statusCode ?? 0;
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (d: string) => {
      if (text.length < 1024) text += d;
    });
    res.on('error', () => {});
    res.on('end', () => {
      if (status >= 200 && status < 300 && this.ended) this.finish('stored', undefined, status);
      else if (status >= 200 && status < 300) this.finish('failed', `the archive answered ${status} before the capture was complete`, status);
      else this.finish('failed', `the archive answered ${status}: ${text.split('\n')[0].slice(0, 300)}`, status);
    });
    res.on('close', () => {
      if (!res.complete) this.finish('failed', `the archive's answer (${status}) broke off`, status);
    });
  }

  private finish(outcome: UploadOutcome['outcome'], reason?: string, archiveStatus?: number): void {
    if (this.done) return;
    this.done = true;
    if (outcome !== 'stored') this.put.destroy();
    const result: UploadOutcome = { outcome };
    if (archiveStatus !== undefined) result.archiveStatus = archiveStatus;
    if (reason !== undefined) result.reason = reason;
    this.resolveSettled(result);
  }
}

/** How a capture ended; the payload of the proxy's `'capture'` event. */
export interface CaptureOutcome {
  uriR: string;
  /** `server_name` of the vhost. */
  vhost: string;
  /** `PUT` address, `http://ArchiveHost:ArchivePort/ArchivePath/URI-R`. */
  putUrl: string;
  /**
   * - `stored`: the archive acknowledged the live PUT (2xx);
   * - `spooled`: the live PUT failed or was skipped (the archive is backing
   *   off); the whole record is in the spool and will be re-sent;
   * - `dropped`: neither: the capture is lost (spool full, too slow, off);
   * - `aborted`: the client went away or the content server broke off
   *   mid-body: there is no whole capture; the PUT was cut so that the
   *   archive stores nothing.
   */
  outcome: 'stored' | 'spooled' | 'dropped' | 'aborted';
  /** What the live PUT did (`skipped`: not tried, the archive's queue was backing off). */
  live: UploadOutcome['outcome'] | 'skipped';
  /** Status of the archive's answer to the live PUT, when there was one. */
  archiveStatus?: number;
  /** One line: what went wrong. */
  reason?: string;
  /** Response body bytes captured. */
  bodyBytes: number;
  /** From the response head to the outcome, ms. */
  ms: number;
}

/** Settings of one capture. */
export interface CaptureOptions extends UploadOptions {
  /** Where captures go that the live PUT did not deliver; without it they are dropped. */
  spool?: Spool;
  log?: Logger;
  metrics?: ProxyMetrics;
}

/**
 * One capture: the live PUT and the spool tee fed with the same bytes, and
 * the decision once both are done (see {@link CaptureOutcome}). The caller
 * feeds it the body ({@link write}) and calls {@link end} or {@link abort}.
 */
export class Capture {
  readonly uriR: string;
  readonly putUrl: string;
  private readonly vhost: Vhost;
  private readonly options: CaptureOptions;
  private readonly started = performance.now();
  private readonly live: CaptureUpload | undefined;
  private readonly tee: SpoolTee | undefined;
  private readonly queue: ArchiveQueue | undefined;
  private bodyBytes = 0;
  private body: 'streaming' | 'complete' | 'aborted' = 'streaming';
  private abortReason: string | undefined;
  private liveResult: UploadOutcome | undefined;
  private deciding = false;
  private resolveSettled!: (o: CaptureOutcome) => void;
  /** Resolves with the outcome (never rejects). */
  readonly settled: Promise<CaptureOutcome> = new Promise((resolve) => (this.resolveSettled = resolve));

  constructor(vhost: Vhost, uriR: string, head: Buffer, options: CaptureOptions = {}) {
    this.vhost = vhost;
    this.uriR = uriR;
    this.options = options;
    this.putUrl = `http://${archiveHostPort(vhost)}${vhost.archivePath}${uriR}`;
    const spool = options.spool;
    if (spool) {
      this.queue = spool.queue(vhost.archiveHost, vhost.archivePort);
      this.tee = spool.tee({
        host: vhost.archiveHost,
        port: vhost.archivePort,
        path: vhost.archivePath + uriR,
        uriR,
        vhost: vhost.serverName,
        capturedAt: new Date().toISOString(),
      });
      this.tee.write(head);
    }
    if (!this.queue?.down) {
      this.live = new CaptureUpload(vhost, uriR, head, options);
      void this.live.settled.then((r) => {
        this.liveResult = r;
        this.decide();
      });
    }
  }

  /** Body bytes, as received from the content server (transfer coding undone). Never waits. */
  write(chunk: Buffer): void {
    if (this.body !== 'streaming') return;
    this.bodyBytes += chunk.length;
    this.tee?.write(chunk);
    this.live?.write(chunk);
  }

  /** The response body is complete. */
  end(): void {
    if (this.body !== 'streaming') return;
    this.body = 'complete';
    this.live?.end();
    this.decide();
  }

  /**
   * The exchange broke off before the body was complete (client gone,
   * content server failed): cuts the live PUT, drops the tee. After
   * {@link end} (the proxy shutting down with the PUT still in flight):
   * cuts the live PUT and spools the capture.
   */
  abort(reason: string): void {
    if (this.body === 'streaming') {
      this.body = 'aborted';
      this.abortReason = reason;
    }
    this.live?.abort(reason);
    this.decide();
  }

  /**
   * True while the spool's disk lags so far behind that the caller should
   * stop reading the response (see proxy/spool.ts, `slowDisk`); resume
   * once {@link whenCaughtUp} resolves.
   */
  get behind(): boolean {
    return this.body === 'streaming' && (this.tee?.behind ?? false);
  }

  /** Resolves once {@link behind} is no longer true. */
  whenCaughtUp(): Promise<void> {
    return this.tee?.whenCaughtUp() ?? Promise.resolve();
  }

  /** True once {@link end} was called: the whole body was captured. */
  get bodyComplete(): boolean {
    return this.body === 'complete';
  }

  private decide(): void {
    if (this.deciding || this.body === 'streaming' || (this.live && !this.liveResult)) return;
    this.deciding = true;
    void this.conclude().then((o) => this.resolveSettled(o));
  }

  private async conclude(): Promise<CaptureOutcome> {
    const { log, metrics } = this.options;
    const live = this.liveResult;
    const result: CaptureOutcome = {
      uriR: this.uriR,
      vhost: this.vhost.serverName,
      putUrl: this.putUrl,
      outcome: 'stored',
      live: live?.outcome ?? 'skipped',
      bodyBytes: this.bodyBytes,
      ms: 0,
    };
    if (live?.archiveStatus !== undefined) result.archiveStatus = live.archiveStatus;
    if (live?.reason !== undefined) result.reason = live.reason;
    if (live && live.outcome !== 'stored' && live.outcome !== 'aborted') metrics?.putFailures.inc({ via: 'live' });

    if (this.body === 'aborted') {
      this.tee?.discard();
      result.outcome = 'aborted';
      result.reason = this.abortReason;
      log?.({ level: 'warn', msg: 'capture cut off; the archive stores nothing', uriR: this.uriR, vhost: result.vhost, reason: this.abortReason, bodyBytes: this.bodyBytes });
    } else if (live?.outcome === 'stored') {
      this.tee?.discard();
      this.queue?.noteSuccess();
      metrics?.capturesSent.inc({ via: 'live' });
    } else {
      // Failed, overflowed, cut at shutdown, or skipped: keep it for a re-send.
      if (live?.outcome === 'failed') this.queue?.noteFailure();
      const spooled = this.tee && this.queue ? await this.tee.commit(this.queue) : { result: 'dropped' as const, reason: 'no spool' };
      if (spooled.result === 'spooled') {
        result.outcome = 'spooled';
        metrics?.spooled.inc();
        // (A capture that skipped the live PUT because the archive is backing off gets no line of its own:
        // its request line says `capture: "spooled"`, and the queue logs each failed re-send.)
        if (live) log?.({ level: 'warn', msg: 'capture not delivered to the archive; spooled for a re-send', uriR: this.uriR, vhost: result.vhost, putUrl: this.putUrl, live: result.live, reason: result.reason, seq: spooled.seq });
      } else {
        result.outcome = 'dropped';
        const why = spooled.reason.startsWith('spool-error') ? 'spool-error' : spooled.reason;
        metrics?.dropped.inc({ reason: why });
        log?.({ level: 'error', msg: 'capture lost: not delivered to the archive and not spooled', uriR: this.uriR, vhost: result.vhost, putUrl: this.putUrl, live: result.live, reason: result.reason, spool: spooled.reason });
        result.reason = `${result.reason ? result.reason + '; ' : ''}not spooled: ${spooled.reason}`;
      }
    }
    result.ms = Math.round(performance.now() - this.started);
    return result;
  }
}

/**
 * Starts the capture of one exchange: builds the record's heads, opens the
 * live PUT (unless the archive's queue is backing off) and the spool tee.
 * The caller feeds it the body ({@link Capture.write}) and ends or aborts it.
 *
 * @throws TypeError when a header holds CR or LF (cannot happen for headers
 *   Node parsed; the caller skips the capture).
 */
export function startCapture(
  req: IncomingMessage,
  proxyRes: IncomingMessage,
  vhost: Vhost,
  uriR: string,
  scheme: 'http' | 'https',
  options: CaptureOptions = {},
): Capture {
  const { request, response } = captureHeads(req, proxyRes, vhost, scheme);
  return new Capture(vhost, uriR, serializeCaptureHead(request, response), options);
}
