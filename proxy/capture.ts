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
 * {@link requestVerdict} and {@link isCapturableStatus} are the two places
 * to change that (e.g. to leave out private traffic).
 *
 * The client never waits for the archive: body bytes are handed to the PUT
 * as they arrive from the content server and the PUT's buffer is bounded
 * ({@link CaptureOptions.maxBufferedBytes}); a capture that would need more
 * is abandoned, not the client slowed down.
 */
import http from 'node:http';
import type { IncomingMessage } from 'node:http';
import { serializeCaptureHead, fromRawHeaders, type CapturedRequest, type CapturedResponse, type RawHeader } from '../shared/capture-record.js';
import { normalizeMatchPath, type Vhost } from './config.js';
import type { Logger } from './log.js';

/** Why an exchange is not captured (`null` in {@link requestVerdict} = it may be). */
export type NotCapturedReason =
  | 'archiving-off'
  | 'method'
  | 'accept-datetime'
  | 'excluded'
  | 'status'
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
  return null;
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
 *   `X-Forwarded-Proto: https` is added when the client connection was TLS.
 */
export function captureRequestHeaders(req: IncomingMessage, vhost: Vhost, scheme: 'http' | 'https'): RawHeader[] {
  const headers = fromRawHeaders(req.rawHeaders).filter(([k]) => {
    const n = k.toLowerCase();
    return n !== 'x-client-ip' && n !== 'x-forwarded-proto';
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
 * §6.1; the body is stored with the transfer coding undone).
 */
export function captureResponseHeaders(rawHeaders: string[]): RawHeader[] {
  return fromRawHeaders(rawHeaders).filter(([k]) => !HOP_BY_HOP.has(k.toLowerCase()));
}

/** The request and response heads of a capture record, from what the proxy saw. */
export function captureHeads(req: IncomingMessage, proxyRes: IncomingMessage, vhost: Vhost, scheme: 'http' | 'https'): { request: CapturedRequest; response: CapturedResponse } {
  return {
    request: { method: req.method ?? 'GET', target: req.url ?? '/', httpVersion: `HTTP/${req.httpVersion}`, headers: captureRequestHeaders(req, vhost, scheme) },
    response: {
      httpVersion: `HTTP/${proxyRes.httpVersion}`,
      status: proxyRes.statusCode ?? 0,
      reason: proxyRes.statusMessage ?? '',
      headers: captureResponseHeaders(proxyRes.rawHeaders),
    },
  };
}

/** How a capture ended; the payload of the proxy's `'capture'` event. */
export interface CaptureOutcome {
  uriR: string;
  /** `server_name` of the vhost. */
  vhost: string;
  /** `PUT` address, `http://ArchiveHost:ArchivePort/ArchivePath/URI-R`. */
  putUrl: string;
  /**
   * - `stored`: the archive answered 2xx;
   * - `failed`: the archive could not be reached, timed out, or answered non-2xx;
   * - `overflow`: the archive took the bytes slower than the client and the
   *   PUT buffer passed the bound; the capture was abandoned;
   * - `aborted`: the client went away or the content server's response broke
   *   off mid-body; the PUT was cut so that the archive stores nothing.
   */
  outcome: 'stored' | 'failed' | 'overflow' | 'aborted';
  /** Status of the archive's answer, when there was one. */
  archiveStatus?: number;
  /** One line: what went wrong (the archive's error body, the socket error, …). */
  reason?: string;
  /** Response body bytes handed to the PUT. */
  bodyBytes: number;
  /** From opening the PUT to its end, ms. */
  ms: number;
}

/** Settings of one capture upload. */
export interface CaptureOptions {
  /** Abandon the capture when the PUT has more than this many bytes waiting to be sent (default 8 MiB). */
  maxBufferedBytes?: number;
  /** Give up on an archive that is silent for this long, ms (default 60 000). */
  archiveTimeoutMs?: number;
  log?: Logger;
  /** Called once when the capture ends, whatever the outcome. */
  onDone?: (outcome: CaptureOutcome) => void;
  /**
   * Called when a capture could not be delivered (`failed`, `overflow`).
   * TODO(issue 4): the durable spool hooks in here (or, better, tees the
   * record to disk before the PUT) and re-sends later, in order.
   */
  onCaptureFailed?: (outcome: CaptureOutcome) => void;
}

export const DEFAULT_MAX_BUFFERED_BYTES = 8 * 1024 * 1024;
export const DEFAULT_ARCHIVE_TIMEOUT_MS = 60_000;

/**
 * One capture on its way to the archive: a PUT to
 * `http://ArchiveHost:ArchivePort{ArchivePath}{URI-R}` with
 * `Transfer-Encoding: chunked` and `Connection: close` (spec.md §8), a new
 * connection per capture, whose body is the two heads then the response
 * body as it streams. Writes never wait: {@link write} only queues.
 */
export class CaptureUpload {
  readonly uriR: string;
  readonly putUrl: string;
  private readonly vhost: Vhost;
  private readonly put: http.ClientRequest;
  private readonly maxBuffered: number;
  private readonly options: CaptureOptions;
  private readonly started = performance.now();
  private bodyBytes = 0;
  private done = false;
  private ended = false;
  private resolveSettled!: (outcome: CaptureOutcome) => void;
  /** Resolves with the outcome once the capture ends (never rejects). */
  readonly settled: Promise<CaptureOutcome> = new Promise((resolve) => (this.resolveSettled = resolve));

  /**
   * Opens the PUT and queues the two heads.
   *
   * @param head bytes of parts 1–6 of the capture record ({@link serializeCaptureHead})
   */
  constructor(vhost: Vhost, uriR: string, head: Buffer, options: CaptureOptions = {}) {
    this.vhost = vhost;
    this.uriR = uriR;
    this.options = options;
    this.maxBuffered = options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
    const pathAndUri = vhost.archivePath + uriR;
    const hostPort = `${vhost.archiveHost.includes(':') ? `[${vhost.archiveHost}]` : vhost.archiveHost}:${vhost.archivePort}`;
    this.putUrl = `http://${hostPort}${pathAndUri}`;
    this.put = http.request({
      host: vhost.archiveHost,
      port: vhost.archivePort,
      method: 'PUT',
      path: pathAndUri,
      agent: false,
      headers: { 'Transfer-Encoding': 'chunked', Connection: 'close' },
    });
    this.put.setTimeout(options.archiveTimeoutMs ?? DEFAULT_ARCHIVE_TIMEOUT_MS, () => {
      this.finish('failed', `the archive sent nothing for ${options.archiveTimeoutMs ?? DEFAULT_ARCHIVE_TIMEOUT_MS} ms`);
    });
    // Kept for the whole life of the request: a late error must never become an uncaught one.
    this.put.on('error', (err: NodeJS.ErrnoException) => this.finish('failed', `PUT to the archive failed: ${err.code ?? ''} ${err.message}`.trim()));
    this.put.on('response', (res) => this.onResponse(res));
    this.put.write(head);
  }

  /** Queues body bytes (exactly as received from the content server, transfer coding undone). Never waits. */
  write(chunk: Buffer): void {
    if (this.done || this.ended) return;
    this.bodyBytes += chunk.length;
    this.put.write(chunk);
    if (this.put.writableLength > this.maxBuffered) {
      this.finish('overflow', `the archive is slower than the client: more than ${this.maxBuffered} bytes waiting to be sent; capture abandoned`);
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
   * body and stores nothing (client gone, content server broke off, proxy
   * shutting down). No-op once the outcome is known.
   */
  abort(reason: string): void {
    this.finish('aborted', reason);
  }

  /** True once the outcome is known. */
  get finished(): boolean {
    return this.done;
  }

  /** True once {@link end} was called: the whole body was handed to the PUT. */
  get bodyComplete(): boolean {
    return this.ended;
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
      if (status >= 200 && status < 300) this.finish('stored', undefined, status);
      else this.finish('failed', `the archive answered ${status}: ${text.split('\n')[0].slice(0, 300)}`, status);
    });
    res.on('close', () => {
      if (!res.complete) this.finish('failed', `the archive's answer (${status}) broke off`, status);
    });
  }

  private finish(outcome: CaptureOutcome['outcome'], reason?: string, archiveStatus?: number): void {
    if (this.done) return;
    this.done = true;
    if (outcome !== 'stored') this.put.destroy();
    const result: CaptureOutcome = {
      uriR: this.uriR,
      vhost: this.vhost.serverName,
      putUrl: this.putUrl,
      outcome,
      bodyBytes: this.bodyBytes,
      ms: Math.round(performance.now() - this.started),
    };
    if (archiveStatus !== undefined) result.archiveStatus = archiveStatus;
    if (reason !== undefined) result.reason = reason;
    if (outcome === 'failed' || outcome === 'overflow') {
      this.options.log?.({ level: 'error', msg: 'capture not delivered to the archive', ...result });
      this.options.onCaptureFailed?.(result);
    } else if (outcome === 'aborted') {
      this.options.log?.({ level: 'warn', msg: 'capture cut off; the archive stores nothing', ...result });
    }
    this.options.onDone?.(result);
    this.resolveSettled(result);
  }
}

/**
 * Starts the capture of one exchange: builds the record's heads and opens
 * the PUT. The caller feeds it the body ({@link CaptureUpload.write}) and
 * ends or aborts it.
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
): CaptureUpload {
  const { request, response } = captureHeads(req, proxyRes, vhost, scheme);
  return new CaptureUpload(vhost, uriR, serializeCaptureHead(request, response), options);
}
