/**
 * One capture: the live PUT (proxy/capture/upload.ts) and the spool tee
 * (proxy/spool/tee.ts) fed with the same body bytes as they arrive from
 * the content server, and the decision once both are done: stored, spooled
 * for a re-send, kept in `rejected/` (the archive refused it for good),
 * dropped, or aborted. What the archive would refuse (shared/capture-rules.ts,
 * the archive's own rules) is never started. The client never waits for
 * either; the design is in docs/architecture.md.
 */
import type { IncomingMessage } from 'node:http';
import { serializeCaptureHead } from '../../shared/capture-record.js';
import { refusalOf } from '../../shared/capture-rules.js';
import { ScavengeCounter } from '../../shared/gc.js';
import { isPermanentRefusal, putTargetOf, putUrl } from '../archive-put.js';
import type { Vhost } from '../config/vhost-file.js';
import type { Logger } from '../log.js';
import type { ProxyMetrics } from '../metrics.js';
import type { ArchiveQueue } from '../spool/queue.js';
import type { Spool } from '../spool/spool.js';
import type { SpoolTee } from '../spool/tee.js';
import type { CaptureAddress } from './address.js';
import { captureHeads } from './record.js';
import { CaptureUpload, type UploadOptions, type UploadOutcome } from './upload.js';

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
   * - `rejected`: the archive refused the live PUT for good (a 4xx other
   *   than 401, 403, 408, 429); the record is kept in `spool/rejected/`,
   *   never re-sent;
   * - `dropped`: neither: the capture is lost (spool full, too slow, off);
   * - `aborted`: the client went away or the content server broke off
   *   mid-body: there is no whole capture; the PUT was cut so that the
   *   archive stores nothing.
   */
  outcome: 'stored' | 'spooled' | 'rejected' | 'dropped' | 'aborted';
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
  /** A scavenge every few MiB of body: the buffers of a large response are freed as it streams (shared/gc.ts). */
  private readonly gc = new ScavengeCounter();
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
    const target = putTargetOf(vhost, uriR);
    this.putUrl = putUrl(target);
    const spool = options.spool;
    if (spool) {
      this.queue = spool.queue(target.host, target.port);
      this.tee = spool.tee({ ...target, uriR, vhost: vhost.serverName, capturedAt: new Date().toISOString() });
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
    this.gc.add(chunk.length);
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
   * stop reading the response (see proxy/spool/tee.ts, `slowDisk`); resume
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
      log?.({
        level: 'warn',
        msg: 'capture cut off; the archive stores nothing',
        uriR: this.uriR,
        vhost: result.vhost,
        reason: this.abortReason,
        bodyBytes: this.bodyBytes,
      });
    } else if (live?.outcome === 'stored') {
      this.tee?.discard();
      this.queue?.noteSuccess();
      metrics?.capturesSent.inc({ via: 'live' });
    } else if (live?.outcome === 'failed' && live.archiveStatus !== undefined && isPermanentRefusal(live.archiveStatus)) {
      // Refused for good: a re-send cannot change that, and the archive is up (no back-off for the captures behind it).
      await this.keepRejected(result);
    } else {
      // Failed, overflowed, cut at shutdown, or skipped: keep it for a re-send.
      if (live?.outcome === 'failed') this.queue?.noteFailure(live.reason ?? 'the live PUT failed');
      const spooled = this.tee && this.queue ? await this.tee.commit(this.queue) : { result: 'dropped' as const, reason: 'no spool' };
      if (spooled.result === 'spooled') {
        result.outcome = 'spooled';
        metrics?.spooled.inc();
        // (A capture that skipped the live PUT because the archive is backing off gets no line of its own:
        // its request line says `capture: "spooled"`, and the queue logs each failed re-send.)
        if (live)
          log?.({
            level: 'warn',
            msg: 'capture not delivered to the archive; spooled for a re-send',
            uriR: this.uriR,
            vhost: result.vhost,
            putUrl: this.putUrl,
            live: result.live,
            reason: result.reason,
            seq: spooled.seq,
          });
      } else {
        result.outcome = 'dropped';
        const why = spooled.reason.startsWith('spool-error') ? 'spool-error' : spooled.reason;
        metrics?.dropped.inc({ reason: why });
        log?.({
          level: 'error',
          msg: 'capture lost: not delivered to the archive and not spooled',
          uriR: this.uriR,
          vhost: result.vhost,
          putUrl: this.putUrl,
          live: result.live,
          reason: result.reason,
          spool: spooled.reason,
        });
        result.reason = `${result.reason ? result.reason + '; ' : ''}not spooled: ${spooled.reason}`;
      }
    }
    result.ms = Math.round(performance.now() - this.started);
    return result;
  }

  /** The archive refused the live PUT for good: the record goes to `rejected/` (within the spool's bound), counted as lost. */
  private async keepRejected(result: CaptureOutcome): Promise<void> {
    const { log, metrics } = this.options;
    const kept = this.tee ? await this.tee.commit('rejected') : { result: 'dropped' as const, reason: 'no spool' };
    result.outcome = kept.result === 'spooled' ? 'rejected' : 'dropped';
    metrics?.dropped.inc({ reason: 'rejected' });
    log?.({
      level: 'error',
      msg: kept.result === 'spooled' ? 'the archive refused a capture for good; kept in rejected/' : 'the archive refused a capture for good; not kept',
      uriR: this.uriR,
      vhost: result.vhost,
      putUrl: this.putUrl,
      archiveStatus: result.archiveStatus,
      reason: result.reason,
      ...(kept.result === 'spooled' ? { seq: kept.seq } : { spool: kept.reason }),
    });
  }
}

/**
 * Starts the capture of one exchange: builds the record's heads and, unless
 * the archive would refuse them (shared/capture-rules.ts `refusalOf`, with
 * the archive's default limits), opens the live PUT (unless the archive's
 * queue is backing off) and the spool tee. The caller feeds it the body
 * ({@link Capture.write}) and ends or aborts it.
 *
 * @returns the capture, or `{ refused }`: why the archive would refuse it
 *   (nothing was sent nor spooled)
 * @throws TypeError when a header holds CR or LF (cannot happen for headers
 *   Node parsed; the caller skips the capture).
 */
export function startCapture(
  req: IncomingMessage,
  proxyRes: IncomingMessage,
  vhost: Vhost,
  address: CaptureAddress,
  scheme: 'http' | 'https',
  options: CaptureOptions = {},
): Capture | { refused: string } {
  const { request, response } = captureHeads(req, proxyRes, vhost, scheme, address);
  const head = serializeCaptureHead(request, response);
  const refusal = refusalOf(head, new Date());
  if (refusal) return { refused: refusal.message };
  return new Capture(vhost, address.uriR, head, options);
}
