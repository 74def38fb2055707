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
 * Both use the proxy's kept-alive connections to the archive (proxy/archive-put.ts).
 */
import type http from 'node:http';
import { type ArchiveAnswer, answerFailure, archivePut, isStored, putTargetOf, readArchiveAnswer } from '../archive-put.js';
import type { Vhost } from '../config/vhost-file.js';

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
  /** The proxy's connections to the archives (proxy/archive-put.ts `archiveAgent`); without it, a new connection per PUT, `Connection: close`. */
  agent?: http.Agent;
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
 * One conditional PUT of a capture held whole: `Transfer-Encoding:
 * chunked`, `Expect: 100-continue`, `If-None-Match: <tag>` and, when the
 * capture has a Date, `Memento-Datetime` (the instant the archive
 * evaluates the condition at). The body goes after `100 Continue` (or
 * after {@link CONTINUE_WAIT_MS} without any answer); a **412** is
 * `unchanged`, and the request is then ended with its empty last chunk,
 * so that the connection goes back to the agent. A PUT that fails on a
 * reused connection before any answer (the archive closed it as it was
 * taken) is sent once more on another.
 */
export class ConditionalUpload extends LiveUpload {
  private put!: http.ClientRequest;
  private bodySent = false;
  private answered = false;
  private retried = false;
  private continueTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly vhost: Vhost,
    private readonly uriR: string,
    private readonly record: HeldRecord,
    private readonly options: UploadOptions = {},
  ) {
    super(options);
    this.open();
  }

  private open(): void {
    const headers: Record<string, string> = { 'Transfer-Encoding': 'chunked', Expect: '100-continue', 'If-None-Match': this.record.tag };
    if (this.record.datetime) headers['Memento-Datetime'] = this.record.datetime;
    const put = archivePut(putTargetOf(this.vhost, this.uriR), this.vhost.archiveToken, headers, this.options.agent);
    this.put = put;
    this.bodySent = false;
    this.answered = false;
    this.watch(put, (err) => this.onError(put, err));
    put.once('socket', () => {
      clearTimeout(this.continueTimer);
      this.continueTimer = setTimeout(() => this.sendBody(put), CONTINUE_WAIT_MS);
    });
    put.on('continue', () => this.sendBody(put));
    put.on('response', (res) => this.onResponse(put, res));
    put.flushHeaders();
  }

  private sendBody(put: http.ClientRequest): void {
    clearTimeout(this.continueTimer);
    if (this.done || this.bodySent || put !== this.put) return;
    this.bodySent = true;
    for (const c of this.record.chunks) put.write(c);
    put.end();
  }

  private onResponse(put: http.ClientRequest, res: http.IncomingMessage): void {
    if (put !== this.put) return;
    this.answered = true;
    clearTimeout(this.continueTimer);
    const status = res.statusCode ?? 0;
    if (status === 412 && !this.bodySent) {
      // Not wanted: end the request with its empty last chunk, so that both sides agree where it ends.
      this.bodySent = true;
      put.end();
    }
    readArchiveAnswer(res, (answer) => {
      if (!answer.complete) this.finish('failed', answerFailure(answer), status);
      else if (status === 412) this.finish('unchanged', undefined, status);
      else if (!isStored(answer)) this.finish('failed', answerFailure(answer), status);
      else if (this.bodySent) this.finish('stored', undefined, status);
      else this.finish('failed', `the archive answered ${status} before the capture was complete`, status);
    });
  }

  private onError(put: http.ClientRequest, err: NodeJS.ErrnoException): void {
    if (put !== this.put || this.done) return;
    // A kept-alive connection the archive closed just as it was taken: once more, on another (Node's advice for reusedSocket).
    if (put.reusedSocket && !this.answered && !this.retried && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) {
      this.retried = true;
      clearTimeout(this.continueTimer);
      put.destroy();
      this.open();
      return;
    }
    this.finish('failed', `PUT to the archive failed: ${err.code ?? ''} ${err.message}`.trim());
  }

  protected cut(): void {
    clearTimeout(this.continueTimer);
    this.put.destroy();
  }
}
