/**
 * The live PUT of one capture: a plain PUT of the capture record to
 * `http://ArchiveHost:ArchivePort{ArchivePath}{URI-R}` on the proxy's
 * kept-alive connections to the archive (proxy/archive-put.ts
 * `archiveAgent`), through the one capture-PUT client
 * (shared/capture-put.ts), plus `Authorization: Bearer <ArchiveToken>` when the
 * vhost has one. One protocol, in two framings:
 *
 * - a capture held whole (its body ended within `held_max_bytes`) is
 *   sent at once with `Content-Length`, head and body in one write;
 * - a larger one streams while the response streams to the client, with
 *   `Transfer-Encoding: chunked` (RFC 9112 §7.1), so that a PUT cut
 *   before its last chunk leaves the archive nothing to store. Writes
 *   never wait: a PUT that falls behind the content server by more than a
 *   bound is cut (the capture then goes to the spool).
 *
 * The archive decides whether the capture is new (archive/http/ingest.ts):
 * 201 or 200, with the tag and revisit-after that the proxy's cache keeps
 * (proxy/capture/is-it-new.ts).
 */
import type http from 'node:http';
import { answerFailure, type CaptureAnswer, isStored, openCapturePut, readCaptureAnswer } from '#shared/capture-put.js';
import { putTargetOf } from '../archive-put.js';
import type { Vhost } from '../config/vhost-file.js';

/** How a live PUT ended. */
export interface UploadOutcome {
  /**
   * - `stored`: the archive answered 2xx (201: a new memento; 200: the
   *   same as the memento it follows, nothing stored);
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
  /** The archive's answer to a stored capture: its `ETag` and `Archive-Revisit-After` (epoch seconds), when it sent them. */
  answer?: Pick<CaptureAnswer, 'etag' | 'revisitAfter'>;
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

/**
 * One live PUT. Streamed ({@link CaptureUpload.streamed}): the caller
 * writes the record's heads and body ({@link write}) and ends it
 * ({@link end}). Held ({@link CaptureUpload.held}): the whole record is
 * sent at once.
 */
export class CaptureUpload {
  private readonly put: http.ClientRequest;
  private readonly maxBuffered: number;
  private ended = false;
  private done = false;
  private waitTimer: NodeJS.Timeout | undefined;
  private resolveSettled!: (outcome: UploadOutcome) => void;
  /** Resolves with the outcome once the PUT ends (never rejects). */
  readonly settled: Promise<UploadOutcome> = new Promise((resolve) => (this.resolveSettled = resolve));

  /** Opens a streamed PUT (`Transfer-Encoding: chunked`) and queues `head` (parts 1–6 of the record, `serializeCaptureHead`). */
  static streamed(vhost: Vhost, uriR: string, head: Buffer, options: UploadOptions = {}): CaptureUpload {
    const upload = new CaptureUpload(vhost, uriR, { 'Transfer-Encoding': 'chunked' }, options);
    upload.write(head);
    return upload;
  }

  /**
   * Sends a record held whole (`chunks`: heads, then the body as received)
   * with `Content-Length` (their sum), the chunks written in order on the
   * corked request: one `writev` once a connection is the PUT's own, and no
   * copy into one buffer (a PUT waiting for a connection holds its record;
   * the copy doubled that, and its allocation cost ~55 µs a capture with a
   * large backlog: bench/results.md, 2026-11-29 07:50–08:35).
   */
  static held(vhost: Vhost, uriR: string, chunks: Buffer[], options: UploadOptions = {}): CaptureUpload {
    let length = 0;
    for (const c of chunks) length += c.length;
    const upload = new CaptureUpload(vhost, uriR, { 'Content-Length': length }, options);
    upload.ended = true;
    const put = upload.put;
    put.cork();
    for (const c of chunks) put.write(c);
    put.end();
    return upload;
  }

  private constructor(vhost: Vhost, uriR: string, headers: Record<string, string | number>, options: UploadOptions) {
    this.maxBuffered = options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
    const ms = options.archiveTimeoutMs ?? DEFAULT_ARCHIVE_TIMEOUT_MS;
    const put = openCapturePut(putTargetOf(vhost, uriR), vhost.archiveToken, headers, options.agent);
    this.put = put;
    this.waitTimer = setTimeout(() => this.finish('failed', `no connection to the archive came free within ${ms} ms (archive_connections)`), ms);
    put.once('socket', () => clearTimeout(this.waitTimer));
    put.setTimeout(ms, () => this.finish('failed', `the archive sent nothing for ${ms} ms`));
    // Kept for the whole life of the request: a late error must never become an uncaught one.
    put.on('error', (err: NodeJS.ErrnoException) => this.finish('failed', `PUT to the archive failed: ${err.code ?? ''} ${err.message}`.trim()));
    put.on('response', (res) => readCaptureAnswer(res, (answer) => this.onAnswer(answer)));
  }

  /** Queues body bytes of a streamed PUT (exactly as received from the content server, transfer coding undone). Never waits. */
  write(chunk: Buffer): void {
    if (this.done || this.ended) return;
    this.put.write(chunk);
    if (this.put.writableLength > this.maxBuffered) {
      this.finish('overflow', `the archive is slower than the content server: more than ${this.maxBuffered} bytes waiting to be sent`);
    }
  }

  /** The response body is complete: ends a streamed PUT (the archive stores the capture once it has it all). */
  end(): void {
    if (this.done || this.ended) return;
    this.ended = true;
    this.put.end();
  }

  /** Cuts the PUT so that the archive stores nothing. No-op once the outcome is known. */
  abort(reason: string): void {
    this.finish('aborted', reason);
  }

  private onAnswer(answer: CaptureAnswer): void {
    const { status } = answer;
    if (!answer.complete || !isStored(answer)) return this.finish('failed', answerFailure(answer), status);
    if (!this.ended) return this.finish('failed', `the archive answered ${status} before the capture was complete`, status);
    const kept: UploadOutcome['answer'] = {};
    if (answer.etag !== undefined) kept.etag = answer.etag;
    if (answer.revisitAfter !== undefined) kept.revisitAfter = answer.revisitAfter;
    this.finish('stored', undefined, status, kept);
  }

  /** Ends the upload with `outcome` (once); a PUT that did not succeed is destroyed (its connection too). */
  private finish(outcome: UploadOutcome['outcome'], reason?: string, archiveStatus?: number, answer?: UploadOutcome['answer']): void {
    if (this.done) return;
    this.done = true;
    clearTimeout(this.waitTimer);
    if (outcome !== 'stored') this.put.destroy();
    const result: UploadOutcome = { outcome };
    if (archiveStatus !== undefined) result.archiveStatus = archiveStatus;
    if (reason !== undefined) result.reason = reason;
    if (answer) result.answer = answer;
    this.resolveSettled(result);
  }
}
