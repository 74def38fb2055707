/**
 * The live PUT of one capture: the record streams to the archive while the
 * response streams to the client, with `Transfer-Encoding: chunked` (RFC
 * 9112 §7.1) so that a PUT cut before its last chunk leaves the archive
 * nothing to store. Writes never wait: a PUT that falls behind the content
 * server by more than a bound is cut (the capture then goes to the spool).
 */
import type http from 'node:http';
import { type ArchiveAnswer, answerFailure, archivePut, isStored, putTargetOf, readArchiveAnswer } from '../archive-put.js';
import type { Vhost } from '../config/vhost-file.js';

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

const DEFAULT_MAX_BUFFERED_BYTES = 8 * 1024 * 1024;
const DEFAULT_ARCHIVE_TIMEOUT_MS = 60_000;

/**
 * One live PUT to `http://ArchiveHost:ArchivePort{ArchivePath}{URI-R}` with
 * `Transfer-Encoding: chunked` and `Connection: close`, plus
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
   * @param head bytes of parts 1–6 of the capture record (`serializeCaptureHead`)
   */
  constructor(vhost: Vhost, uriR: string, head: Buffer, options: UploadOptions = {}) {
    this.maxBuffered = options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
    const timeout = options.archiveTimeoutMs ?? DEFAULT_ARCHIVE_TIMEOUT_MS;
    this.put = archivePut(putTargetOf(vhost, uriR), vhost.archiveToken, { 'Transfer-Encoding': 'chunked', Connection: 'close' });
    this.put.setTimeout(timeout, () => this.finish('failed', `the archive sent nothing for ${timeout} ms`));
    // Kept for the whole life of the request: a late error must never become an uncaught one.
    this.put.on('error', (err: NodeJS.ErrnoException) => this.finish('failed', `PUT to the archive failed: ${err.code ?? ''} ${err.message}`.trim()));
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

  /**
   * Cuts the PUT without its last chunk, so that the archive sees a broken
   * body and stores nothing. No-op once the outcome is known.
   */
  abort(reason: string): void {
    this.finish('aborted', reason);
  }

  private onAnswer(answer: ArchiveAnswer): void {
    const { status } = answer;
    if (!answer.complete || !isStored(answer)) this.finish('failed', answerFailure(answer), status);
    else if (this.ended) this.finish('stored', undefined, status);
    else this.finish('failed', `the archive answered ${status} before the capture was complete`, status);
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
