/**
 * One capture: the live PUT (proxy/capture/upload.ts) and the spool tee
 * (proxy/spool/tee.ts) fed with the same body bytes as they arrive from
 * the content server, and the decision once both are done: stored,
 * unchanged (the archive, or the local cache, has the same memento),
 * spooled for a re-send, kept in `rejected/` (the archive refused it for
 * good), dropped, or aborted. A body that ends within
 * `conditional_max_bytes` is held and sent as one conditional PUT
 * (`If-None-Match` with its entity tag, shared/capture-tag.ts); a larger
 * one streams. What the archive would refuse (shared/capture-rules.ts, the
 * archive's own rules) is never started. The client never waits for
 * either; the design is in docs/architecture.md.
 */
import { createHash, hash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { inspectCaptureHeads } from '#shared/capture-rules.js';
import { captureEntityTag, mediaType } from '#shared/capture-tag.js';
import { ScavengeCounter } from '#shared/gc.js';
import { formatHttpDate, parseHttpDate, toEpochSeconds } from '#shared/http-date.js';
import { getHeader } from '#shared/http-head.js';
import { isConflict, isPermanentRefusal, putTargetOf, putUrl } from '../archive-put.js';
import type { Vhost } from '../config/vhost-file.js';
import type { Logger } from '../log.js';
import type { ProxyMetrics } from '../metrics.js';
import type { ArchiveQueue } from '../spool/queue.js';
import type { Spool } from '../spool/spool.js';
import type { SpoolMeta } from '../spool/file.js';
import type { SpoolTee } from '../spool/tee.js';
import type { CaptureAddress } from './address.js';
import { captureHeads } from './record.js';
import type { CaptureQuestion, CaptureQuestions } from './questions.js';
import type { UnchangedCache } from './unchanged-cache.js';
import { CaptureUpload, ConditionalUpload, type HeldRecord, type UploadOptions, type UploadOutcome } from './upload.js';

/** How a capture ended; the payload of the proxy's `'capture'` event. */
export interface CaptureOutcome {
  uriR: string;
  /** `server_name` of the vhost. */
  vhost: string;
  /** `PUT` address, `http://ArchiveHost:ArchivePort/ArchivePath/URI-R`. */
  putUrl: string;
  /**
   * - `stored`: the archive acknowledged the live PUT (2xx);
   * - `unchanged`: the capture is the same as the memento it would follow:
   *   the archive answered 412 to its conditional PUT (`live:
   *   'unchanged'`), or the local cache said so and nothing was sent
   *   (`live: 'cached'`);
   * - `spooled`: the live PUT failed or was skipped (the archive is backing
   *   off); the whole record is in the spool and will be re-sent;
   * - `rejected`: the archive refused the live PUT for good (a 4xx other
   *   than 401, 403, 408, 409, 429); the record is kept in `spool/rejected/`,
   *   never re-sent;
   * - `conflict`: the archive answered 409: it holds a different capture of
   *   the URI-R at the same second and keeps it; logged, counted, dropped
   *   (never re-sent, not kept);
   * - `dropped`: neither: the capture is lost (spool full, too slow, off);
   * - `aborted`: the client went away or the content server broke off
   *   mid-body: there is no whole capture; the PUT was cut so that the
   *   archive stores nothing.
   */
  outcome: 'stored' | 'unchanged' | 'spooled' | 'rejected' | 'conflict' | 'dropped' | 'aborted';
  /** What the live PUT did (`skipped`: not tried, the archive's queue was backing off; `cached`: not needed, see `unchanged`). */
  live: UploadOutcome['outcome'] | 'skipped' | 'cached';
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
  /** Largest body held for a conditional PUT (vhosts with `ArchiveConditional: On`), bytes (default 64 KiB). */
  conditionalMaxBytes?: number;
  /** The local cache of vhosts with `ArchiveUnchangedCache: On`. */
  unchangedCache?: UnchangedCache;
  /** Asks the archive about several held captures at once before their conditional PUTs (proxy/capture/questions.ts); without it, each is PUT. */
  questions?: CaptureQuestions;
}

/** What a conditional PUT's entity tag is made of besides the payload digest, from the heads as the archive reads them. */
export interface CaptureHeadFacts {
  status: number;
  /** Media type of its Content-Type (shared/capture-tag.ts `mediaType`). */
  mime: string;
  /** The response's Date field as sent, when it has one (the capture's Memento-Datetime when it is a valid HTTP-date; read only for a conditional PUT). */
  date?: string;
  /** The body's length when the response says it (Content-Length): a body known to be larger than the bound is not held. */
  bodyLength?: number;
}

/** The body held for a conditional PUT while it is within the bound (its digest is taken once it is complete). */
interface Held {
  /** The record's head, then the body chunks as received. */
  chunks: Buffer[];
  bytes: number;
}

/** `sha256:<hex>` of the body held after the record's head in `chunks` (one call for a body of one chunk). */
function heldDigest(chunks: Buffer[]): string {
  if (chunks.length === 2) return 'sha256:' + hash('sha256', chunks[1], 'hex');
  const h = createHash('sha256');
  for (let i = 1; i < chunks.length; i++) h.update(chunks[i]);
  return 'sha256:' + h.digest('hex');
}

const DEFAULT_CONDITIONAL_MAX_BYTES = 64 * 1024;

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
  private live: CaptureUpload | ConditionalUpload | undefined;
  /** The spool copy; for a held capture made only when it is needed (the live PUT failed, or the body passed the bound). */
  private tee: SpoolTee | undefined;
  /** When the capture started, ms since the epoch (the spool copy's `capturedAt`). */
  private readonly startedAt = Date.now();
  /** The held record (heads and body), once the body ended within the bound: the spool copy of a failed conditional PUT. */
  private heldRecord: Buffer[] | undefined;
  private readonly queue: ArchiveQueue | undefined;
  private readonly head: Buffer;
  private readonly facts: CaptureHeadFacts | undefined;
  /** The body while it is held for a conditional PUT (not yet sent); `undefined` once it streams or is sent. */
  private held: Held | undefined;
  /** The capture's entity tag, once its body is complete and was held. */
  private tag: string | undefined;
  /** The local cache this capture counts in (vhost `ArchiveUnchangedCache: On`). */
  private readonly cache: UnchangedCache | undefined;
  private bodyBytes = 0;
  /** A scavenge every few MiB of body: the buffers of a large response are freed as it streams (shared/gc.ts). */
  private readonly gc = new ScavengeCounter();
  private body: 'streaming' | 'complete' | 'aborted' = 'streaming';
  private abortReason: string | undefined;
  private liveResult: UploadOutcome | undefined;
  /** The local cache found the capture unchanged: no PUT. */
  private cached = false;
  /** Its question is with the archive (proxy/capture/questions.ts). */
  private asking = false;
  private deciding = false;
  private resolveSettled!: (o: CaptureOutcome) => void;
  /** Resolves with the outcome (never rejects). */
  readonly settled: Promise<CaptureOutcome> = new Promise((resolve) => (this.resolveSettled = resolve));

  /**
   * @param head bytes of parts 1–6 of the capture record
   * @param facts status, media type and datetime of the heads (as the
   *   archive reads them): with them, and `ArchiveConditional: On`, the
   *   body is held for a conditional PUT while it is within
   *   `conditionalMaxBytes`; without them it streams
   */
  constructor(vhost: Vhost, uriR: string, head: Buffer, options: CaptureOptions = {}, facts?: CaptureHeadFacts) {
    this.vhost = vhost;
    this.uriR = uriR;
    this.options = options;
    this.head = head;
    this.facts = facts;
    const target = putTargetOf(vhost, uriR);
    this.putUrl = putUrl(target);
    const spool = options.spool;
    if (spool) {
      this.queue = spool.queue(target.host, target.port);
    }
    const bound = options.conditionalMaxBytes ?? DEFAULT_CONDITIONAL_MAX_BYTES;
    if (facts && vhost.archiveConditional && !((facts.bodyLength ?? 0) > bound)) {
      this.held = { chunks: [head], bytes: 0 };
      if (vhost.archiveUnchangedCache && options.unchangedCache) {
        this.cache = options.unchangedCache;
        this.cache.begin(this.putUrl);
      }
    } else {
      this.openTee([head]);
      if (!this.queue?.down) this.startLive(new CaptureUpload(vhost, uriR, head, options));
    }
  }

  /** Starts the spool copy with `chunks` (the record so far), when there is a spool. */
  private openTee(chunks: Buffer[]): void {
    if (!this.options.spool || this.tee) return;
    const meta: SpoolMeta = {
      ...putTargetOf(this.vhost, this.uriR),
      uriR: this.uriR,
      vhost: this.vhost.serverName,
      capturedAt: new Date(this.startedAt).toISOString(),
    };
    this.tee = this.options.spool.tee(meta);
    for (const c of chunks) this.tee.write(c);
  }

  private startLive(live: CaptureUpload | ConditionalUpload): void {
    this.live = live;
    void live.settled.then((r) => {
      this.liveResult = r;
      this.decide();
    });
  }

  /** Body bytes, as received from the content server (transfer coding undone). Never waits. */
  write(chunk: Buffer): void {
    if (this.body !== 'streaming') return;
    this.bodyBytes += chunk.length;
    this.gc.add(chunk.length);
    this.tee?.write(chunk);
    const held = this.held;
    if (!held) {
      if (this.live instanceof CaptureUpload) this.live.write(chunk);
      return;
    }
    held.chunks.push(chunk);
    held.bytes += chunk.length;
    if (held.bytes > (this.options.conditionalMaxBytes ?? DEFAULT_CONDITIONAL_MAX_BYTES)) {
      // Too large to hold: stream it as it comes, unconditionally, from what is held so far.
      this.held = undefined;
      this.openTee(held.chunks);
      if (this.queue?.down) return;
      const live = new CaptureUpload(this.vhost, this.uriR, this.head, this.options);
      for (const c of held.chunks.slice(1)) live.write(c);
      this.startLive(live);
    }
  }

  /** The response body is complete. */
  end(): void {
    if (this.body !== 'streaming') return;
    this.body = 'complete';
    const held = this.held;
    if (held && this.facts) {
      this.held = undefined;
      this.heldRecord = held.chunks;
      const { status, mime } = this.facts;
      this.tag = captureEntityTag({ digest: heldDigest(held.chunks), status, mime });
      if (this.cache?.unchanged(this.putUrl, this.tag)) this.cached = true;
      else if (!this.queue?.down) {
        const date = parseHttpDate(this.facts.date) ?? undefined;
        const questions = this.options.questions;
        if (questions) {
          // Asked with the other captures of this turn; PUT only when the archive does not have it (or cannot say).
          this.asking = true;
          const { archiveHost: host, archivePort: port, archivePath: path, archiveToken: token } = this.vhost;
          const question: CaptureQuestion = { archive: { host, port, path }, tag: this.tag, uriR: this.uriR };
          if (token) question.token = token;
          if (date) question.datetime = toEpochSeconds(date);
          void questions.ask(question).then((answer) => {
            if (!this.asking) return; // cut meanwhile (see abort)
            this.asking = false;
            if (answer === 'unchanged') this.liveResult = { outcome: 'unchanged' };
            else if (this.body === 'complete' && !this.queue?.down) this.putHeld(held.chunks, date);
            this.decide();
          });
        } else this.putHeld(held.chunks, date);
      }
    } else if (this.live instanceof CaptureUpload) this.live.end();
    this.decide();
  }

  /** Sends the held record as one conditional PUT (`date`: its Memento-Datetime). */
  private putHeld(chunks: Buffer[], date: Date | undefined): void {
    const record: HeldRecord = { chunks, tag: this.tag! };
    if (date) record.datetime = formatHttpDate(date);
    this.startLive(new ConditionalUpload(this.vhost, this.uriR, record, this.options));
  }

  /**
   * The exchange broke off before the body was complete (client gone,
   * content server failed): cuts the live PUT (a held body was never
   * sent), drops the tee. After {@link end} (the proxy shutting down with
   * the PUT still in flight): cuts the live PUT and spools the capture.
   */
  abort(reason: string): void {
    if (this.body === 'streaming') {
      this.body = 'aborted';
      this.abortReason = reason;
      this.held = undefined;
    }
    // A question still with the archive: not waited for; the capture is spooled (nothing was sent).
    this.asking = false;
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
    if (this.deciding || this.body === 'streaming' || this.asking || (this.live && !this.liveResult)) return;
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
      live: this.cached ? 'cached' : (live?.outcome ?? 'skipped'),
      bodyBytes: this.bodyBytes,
      ms: 0,
    };
    if (live?.archiveStatus !== undefined) result.archiveStatus = live.archiveStatus;
    if (live?.reason !== undefined) result.reason = live.reason;
    const conflict = live?.outcome === 'failed' && live.archiveStatus !== undefined && isConflict(live.archiveStatus);
    if (live && live.outcome !== 'stored' && live.outcome !== 'unchanged' && live.outcome !== 'aborted' && !conflict) metrics?.putFailures.inc({ via: 'live' });
    const acknowledged = this.cached || live?.outcome === 'stored' || live?.outcome === 'unchanged';
    this.cache?.settle(this.putUrl, acknowledged && this.body === 'complete' ? this.tag : undefined);

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
    } else if (this.cached) {
      this.tee?.discard();
      result.outcome = 'unchanged';
      metrics?.unchanged.inc({ via: 'cache' });
    } else if (live?.outcome === 'stored' || live?.outcome === 'unchanged') {
      this.tee?.discard();
      this.queue?.noteSuccess();
      if (live.outcome === 'unchanged') {
        result.outcome = 'unchanged';
        metrics?.unchanged.inc({ via: 'archive' });
      } else metrics?.capturesSent.inc({ via: 'live' });
    } else if (conflict) {
      // The archive keeps the capture it has at that second: final, and not the proxy's fault; nothing to keep.
      this.tee?.discard();
      this.queue?.noteSuccess();
      result.outcome = 'conflict';
      metrics?.conflicts.inc({ via: 'live' });
      log?.({
        level: 'warn',
        msg: 'the archive holds another capture of this URI-R at that second; this one is dropped',
        uriR: this.uriR,
        vhost: result.vhost,
        putUrl: this.putUrl,
        archiveStatus: result.archiveStatus,
        reason: result.reason,
      });
    } else if (live?.outcome === 'failed' && live.archiveStatus !== undefined && isPermanentRefusal(live.archiveStatus)) {
      // Refused for good: a re-send cannot change that, and the archive is up (no back-off for the captures behind it).
      await this.keepRejected(result);
    } else {
      // Failed, overflowed, cut at shutdown, or skipped: keep it for a re-send.
      if (live?.outcome === 'failed') this.queue?.noteFailure(live.reason ?? 'the live PUT failed');
      if (this.heldRecord) this.openTee(this.heldRecord);
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
    if (this.heldRecord) this.openTee(this.heldRecord);
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
 * the archive would refuse them (shared/capture-rules.ts `inspectCaptureHeads`,
 * with the archive's default limits), opens the spool tee and either the
 * live PUT (unless the archive's queue is backing off) or, with
 * `ArchiveConditional: On`, holds the body for a conditional PUT. The
 * caller feeds it the body ({@link Capture.write}) and ends or aborts it.
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
  const inspected = inspectCaptureHeads(request, response, new Date());
  if ('refusal' in inspected) return { refused: inspected.refusal.message };
  // Status, media type and Date exactly as the archive will read them from these bytes.
  const headers = inspected.head.response.headers;
  const facts: CaptureHeadFacts = { status: inspected.head.response.status, mime: mediaType(getHeader(headers, 'content-type')) };
  const date = getHeader(headers, 'date');
  if (date !== undefined) facts.date = date;
  const length = getHeader(headers, 'content-length');
  if (length !== undefined) facts.bodyLength = Number(length.split(',')[0]);
  return new Capture(vhost, address.uriR, inspected.bytes, options, facts);
}
