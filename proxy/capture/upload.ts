/**
 * The live PUT of one capture, in one of two forms:
 *
 * - {@link CaptureUpload}, streamed: the record goes to the archive while
 *   the response streams to the client, with `Transfer-Encoding: chunked`
 *   (RFC 9112 §7.1) so that a PUT cut before its last chunk leaves the
 *   archive nothing to store. Writes never wait: a PUT that falls behind
 *   the content server by more than a bound is cut (the capture then goes
 *   to the spool).
 * - {@link ConditionalUpload}, for a capture held whole in memory: one PUT
 *   with `If-None-Match: <the capture's entity tag>` and `Expect:
 *   100-continue` (RFC 9110 §13.1.2, §10.1.1); the body is sent only after
 *   `100 Continue`, and a **412** (the archive has the same memento) ends
 *   the request with an empty last chunk, so its connection is reused.
 *
 * Both use the proxy's kept-alive connections to the archive: node:http's
 * agent for the streamed ones (proxy/archive-put.ts), a lean client of its
 * own for the conditional ones (proxy/capture/conditional-client.ts).
 */
import type http from 'node:http';
import { type ArchiveAnswer, answerFailure, archivePut, isStored, putTargetOf, readArchiveAnswer } from '../archive-put.js';
import type { Vhost } from '../config/vhost-file.js';
import { ArchiveConnections, type ConditionalPut } from './conditional-client.js';

/** How a live PUT ended. */
export interface UploadOutcome {
  /**
   * - `stored`: the archive answered 2xx;
   * - `unchanged`: the archive answered 412 to a conditional PUT: it has a
   *   memento identical to the capture where it would go (nothing sent);
   * - `failed`: the archive could not be reached, timed out, answered
   *   non-2xx, or cut its answer;
   * - `overflow`: the archive took the bytes slower than the content server
   *   sent them and the PUT buffer passed the bound; the PUT was cut;
   * - `aborted`: the PUT was cut on purpose (client gone, content server
   *   broke off, proxy shutting down), so that the archive stores nothing.
   */
  outcome: 'stored' | 'unchanged' | 'failed' | 'overflow' | 'aborted';
  /** Status of the archive's answer, when there was one. */
  archiveStatus?: number;
  /** One line: what went wrong. */
  reason?: string;
}

/** Settings of one live PUT. */
export interface UploadOptions {
  /** Cut the PUT when more than this many bytes wait to be sent (default 8 MiB). */
  maxBufferedBytes?: number;
  /** Give up on an archive that is silent for this long, or when no connection to it is free for this long, ms (default 60 000). */
  archiveTimeoutMs?: number;
  /** The proxy's connections to the archives for streamed PUTs (proxy/archive-put.ts `archiveAgent`); without it, a new connection per PUT, `Connection: close`. */
  agent?: http.Agent;
  /** The proxy's connections to the archives for conditional PUTs; without them, one of its own per PUT. */
  connections?: ArchiveConnections;
}

const DEFAULT_MAX_BUFFERED_BYTES = 8 * 1024 * 1024;
const DEFAULT_ARCHIVE_TIMEOUT_MS = 60_000;
/** How long a conditional PUT waits for `100 Continue` or an answer before it sends the body anyway (RFC 9110 §10.1.1 allows it; curl waits 1 s). */
const CONTINUE_WAIT_MS = 1000;

/** What both forms share: the outcome, settled once; the timers of the wait for a connection and of a silent archive. */
abstract class LiveUpload {
  protected done = false;
  protected readonly timeoutMs: number;
  private waitTimer: NodeJS.Timeout | undefined;
  private resolveSettled!: (outcome: UploadOutcome) => void;
  /** Resolves with the outcome once the PUT ends (never rejects). */
  readonly settled: Promise<UploadOutcome> = new Promise((resolve) => (this.resolveSettled = resolve));

  constructor(options: UploadOptions) {
    this.timeoutMs = options.archiveTimeoutMs ?? DEFAULT_ARCHIVE_TIMEOUT_MS;
  }

  /** Watches a PUT just opened: its errors, a silent archive, a connection that does not come free. */
  protected watch(put: http.ClientRequest, onError: (err: NodeJS.ErrnoException) => void): void {
    const ms = this.timeoutMs;
    clearTimeout(this.waitTimer);
    this.waitTimer = setTimeout(() => this.finish('failed', `no connection to the archive came free within ${ms} ms (archive_connections)`), ms);
    put.once('socket', () => clearTimeout(this.waitTimer));
    put.setTimeout(ms, () => this.finish('failed', `the archive sent nothing for ${ms} ms`));
    // Kept for the whole life of the request: a late error must never become an uncaught one.
    put.on('error', onError);
  }

  /** Cuts the PUT so that the archive stores nothing. No-op once the outcome is known. */
  abort(reason: string): void {
    this.finish('aborted', reason);
  }

  /** Ends the upload with `outcome` (once); a PUT that did not succeed is destroyed by {@link cut}. */
  protected finish(outcome: UploadOutcome['outcome'], reason?: string, archiveStatus?: number): void {
    if (this.done) return;
    this.done = true;
    clearTimeout(this.waitTimer);
    if (outcome !== 'stored' && outcome !== 'unchanged') this.cut();
    const result: UploadOutcome = { outcome };
    if (archiveStatus !== undefined) result.archiveStatus = archiveStatus;
    if (reason !== undefined) result.reason = reason;
    this.resolveSettled(result);
  }

  /** Destroys the PUT in flight (its connection too). */
  protected abstract cut(): void;
}

/**
 * One live PUT to `http://ArchiveHost:ArchivePort{ArchivePath}{URI-R}` with
 * `Transfer-Encoding: chunked`, plus `Authorization: Bearer
 * <ArchiveToken>` when the vhost has one; its body is the two heads then
 * the response body as it streams. Writes never wait: {@link write} only
 * queues.
 */
export class CaptureUpload extends LiveUpload {
  private readonly put: http.ClientRequest;
  private readonly maxBuffered: number;
  private ended = false;

  /**
   * Opens the PUT and queues the two heads.
   *
   * @param head bytes of parts 1–6 of the capture record (`serializeCaptureHead`)
   */
  constructor(vhost: Vhost, uriR: string, head: Buffer, options: UploadOptions = {}) {
    super(options);
    this.maxBuffered = options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
    this.put = archivePut(putTargetOf(vhost, uriR), vhost.archiveToken, { 'Transfer-Encoding': 'chunked' }, options.agent);
    this.watch(this.put, (err) => this.finish('failed', `PUT to the archive failed: ${err.code ?? ''} ${err.message}`.trim()));
    this.put.on('response', (res) => readArchiveAnswer(res, (answer) => this.onAnswer(answer)));
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

  private onAnswer(answer: ArchiveAnswer): void {
    const { status } = answer;
    if (!answer.complete || !isStored(answer)) this.finish('failed', answerFailure(answer), status);
    else if (this.ended) this.finish('stored', undefined, status);
    else this.finish('failed', `the archive answered ${status} before the capture was complete`, status);
  }

  protected cut(): void {
    this.put.destroy();
  }
}

/** A capture held whole for a conditional PUT. */
export interface HeldRecord {
  /** The record's bytes: the two heads, then the body chunks as received (not copied). */
  chunks: Buffer[];
  /** The capture's entity tag (shared/capture-tag.ts `captureEntityTag`), sent as `If-None-Match`. */
  tag: string;
  /** Its Memento-Datetime as an HTTP-date, when its response's `Date` gives one (sent as `Memento-Datetime`). */
  datetime?: string;
}

/**
 * One conditional PUT of a capture held whole (on the proxy's
 * {@link ArchiveConnections}, proxy/capture/conditional-client.ts):
 * `Transfer-Encoding: chunked`, `Expect: 100-continue`, `If-None-Match:
 * <tag>`, `Authorization` when the vhost has an `ArchiveToken` and, when
 * the capture has a Date, `Memento-Datetime` (the instant the archive
 * evaluates the condition at). The body goes after `100 Continue` (or
 * after {@link CONTINUE_WAIT_MS} without any answer); a **412** is
 * `unchanged`, and the request is then ended with its empty last chunk,
 * so that the connection carries the next PUT.
 */
export class ConditionalUpload extends LiveUpload {
  private put: ConditionalPut | undefined;

  constructor(vhost: Vhost, uriR: string, record: HeldRecord, options: UploadOptions = {}) {
    super(options);
    const headers: [string, string][] = [['If-None-Match', record.tag]];
    if (record.datetime) headers.push(['Memento-Datetime', record.datetime]);
    if (vhost.archiveToken) headers.push(['Authorization', `Bearer ${vhost.archiveToken}`]);
    // Without the proxy's connections (a capture made outside a proxy): its own, closed after it.
    const own = options.connections ? undefined : new ArchiveConnections(1);
    const connections = options.connections ?? own!;
    try {
      this.put = connections.put({
        target: putTargetOf(vhost, uriR),
        headers,
        body: record.chunks,
        timeoutMs: this.timeoutMs,
        continueWaitMs: CONTINUE_WAIT_MS,
      });
    } catch (err) {
      own?.destroy();
      this.finish('failed', (err as Error).message);
      return;
    }
    void this.put.answer.then((a) => {
      own?.destroy();
      if ('error' in a) this.finish('failed', a.error);
      else if (a.status === 412) this.finish('unchanged', undefined, 412);
      else if (a.status < 200 || a.status >= 300) this.finish('failed', `the archive answered ${a.status}: ${a.firstLine}`, a.status);
      else if (a.bodySent) this.finish('stored', undefined, a.status);
      else this.finish('failed', `the archive answered ${a.status} before the capture was complete`, a.status);
    });
  }

  protected cut(): void {
    this.put?.cancel('the PUT was cut');
  }
}
