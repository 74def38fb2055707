/**
 * One capture: the live PUT (proxy/capture/upload.ts) and the spool tee
 * (proxy/spool/tee.ts) fed with the same body bytes as they arrive from
 * the content server, and the decision once both are done: stored,
 * unchanged (the archive answered that it has the same memento, or the
 * proxy's cache of its answers knew it would, proxy/capture/is-it-new.ts),
 * spooled for a re-send, kept in `rejected/` (the archive refused it for
 * good), dropped, or aborted. A body that ends within `held_max_bytes` is
 * held and sent as one PUT with `Content-Length` once the response has
 * ended (or not at all when the cache knows it unchanged); a larger one
 * streams. What the archive would refuse (shared/capture-rules.ts, the
 * archive's own rules) is never started. The client never waits for
 * either; the design is in docs/architecture.md.
 */
import { createHash, hash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { inspectCaptureHeads } from '#shared/capture-rules.js';
import { captureEntityTag, mediaType } from '#shared/capture-tag.js';
import { ScavengeCounter } from '#shared/gc.js';
import { parseHttpDate, toEpochSeconds } from '#shared/http-date.js';
import { isConflict, isPermanentRefusal, putUrl } from '#shared/capture-put.js';
import { putTargetOf } from '../archive-put.js';
import type { Vhost } from '../config/vhost-file.js';
import type { Logger } from '../log.js';
import type { ProxyMetrics } from '../metrics.js';
import type { ArchiveQueue } from '../spool/queue.js';
import type { Spool } from '../spool/spool.js';
import type { SpoolMeta } from '../spool/file.js';
import type { SpoolTee } from '../spool/tee.js';
import type { CaptureAddress } from './address.js';
import type { UnchangedCache } from './is-it-new.js';
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
   * - `stored`: the archive stored it as a new memento (201);
   * - `unchanged`: the capture is the same as the memento it would follow:
   *   the archive answered 200 (`live: 'stored'`: it was sent), or the
   *   proxy's cache of the archive's answers knew it would and nothing
   *   was sent (`live: 'cached'`);
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
   *   archive stores nothing;
   * - `refused`: the archive would refuse its heads (shared/capture-rules.ts),
   *   found when they were made (a held capture's are made only when it
   *   must be sent): nothing sent nor spooled, as for a capture refused
   *   before it started.
   */
  outcome: 'stored' | 'unchanged' | 'spooled' | 'rejected' | 'conflict' | 'dropped' | 'aborted' | 'refused';
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
  /** Largest body held whole and sent with `Content-Length` once complete, bytes (`held_max_bytes`, default 64 KiB); a larger one streams. */
  heldMaxBytes?: number;
  /** The proxy's cache of the archive's answers, used for vhosts with `ArchiveUnchangedCache: On` (proxy/capture/is-it-new.ts). */
  unchangedCache?: UnchangedCache;
}

/** What the capture tag is made of besides the payload digest, and the capture's datetime, from the heads as the archive reads them. */
export interface CaptureHeadFacts {
  status: number;
  /** Media type of its Content-Type (shared/capture-tag.ts `mediaType`). */
  mime: string;
  /** Its Memento-Datetime as the archive will take it, epoch seconds: the response's Date, else now. */
  datetime: number;
  /** The body's length when the response says it (Content-Length): a body known to be larger than the bound is not held. */
  bodyLength?: number;
}

/** `sha256:<hex>` of the body `chunks` (one call for a body of one chunk). */
function bodyDigest(chunks: Buffer[]): string {
  if (chunks.length === 1) return 'sha256:' + hash('sha256', chunks[0], 'hex');
  const h = createHash('sha256');
  for (const c of chunks) h.update(c);
  return 'sha256:' + h.digest('hex');
}

/**
 * The bytes of parts 1–6 of a capture record, or what makes them (or says
 * why the archive would refuse the capture) once they are needed: a held
 * capture that the cache finds unchanged needs none (see {@link startCapture}).
 */
export type RecordHead = Buffer | (() => Buffer | { refused: string });

const DEFAULT_HELD_MAX_BYTES = 64 * 1024;

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
  private live: CaptureUpload | undefined;
  /** The spool copy; for a held capture made only when it is needed (the live PUT failed, or the body passed the bound). */
  private tee: SpoolTee | undefined;
  /** When the capture started, ms since the epoch (the spool copy's `capturedAt`). */
  private readonly startedAt = Date.now();
  /** The held body, once it ended within the bound: with the heads, the spool copy of a failed PUT. */
  private heldBody: Buffer[] | undefined;
  private readonly queue: ArchiveQueue | undefined;
  /** The record's heads, or what makes them (and checks them against the archive's rules) when first needed. */
  private head: RecordHead;
  /** Why the archive would refuse the capture, found when its heads were made late: nothing is sent nor spooled. */
  private refusedWhy: string | undefined;
  private readonly facts: CaptureHeadFacts | undefined;
  private readonly bound: number;
  /** The body while it is held (the chunks as received); `undefined` once it streams or is complete. */
  private held: Buffer[] | undefined;
  private heldBytes = 0;
  /** The proxy's cache of the archive's answers this capture counts in (vhost `ArchiveUnchangedCache: On`). */
  private readonly cache: UnchangedCache | undefined;
  private bodyBytes = 0;
  /** A scavenge every few MiB of body: the buffers of a large response are freed as it streams (shared/gc.ts). */
  private readonly gc = new ScavengeCounter();
  private body: 'streaming' | 'complete' | 'aborted' = 'streaming';
  private abortReason: string | undefined;
  private liveResult: UploadOutcome | undefined;
  /** The cache knew the capture unchanged: no PUT. */
  private cached = false;
  private deciding = false;
  private resolveSettled!: (o: CaptureOutcome) => void;
  /** Resolves with the outcome (never rejects). */
  readonly settled: Promise<CaptureOutcome> = new Promise((resolve) => (this.resolveSettled = resolve));

  /**
   * @param head bytes of parts 1–6 of the capture record, or (for a capture
   *   that will be held) a function that makes them when they are needed
   * @param facts status, media type and datetime of the heads (as the
   *   archive reads them): with them, the body is held while it is within
   *   `heldMaxBytes` (and, with the cache, its tag compared once it is
   *   complete); without them it streams
   */
  constructor(vhost: Vhost, uriR: string, head: RecordHead, options: CaptureOptions = {}, facts?: CaptureHeadFacts) {
    this.vhost = vhost;
    this.uriR = uriR;
    this.options = options;
    this.head = head;
    this.facts = facts;
    this.bound = options.heldMaxBytes ?? DEFAULT_HELD_MAX_BYTES;
    const target = putTargetOf(vhost, uriR);
    this.putUrl = putUrl(target);
    const spool = options.spool;
    if (spool) this.queue = spool.queue(target.host, target.port);
    if (vhost.archiveUnchangedCache && options.unchangedCache) {
      // Every capture of the address counts, streamed ones too: the archive's answer to any of them is the entry's news.
      this.cache = options.unchangedCache;
      this.cache.begin(this.putUrl);
    }
    if (facts && !((facts.bodyLength ?? 0) > this.bound)) this.held = [];
    else this.stream([]);
  }

  /** The record's heads, made now if they were left for later; `undefined` (and {@link refusedWhy} set) when the archive would refuse them. */
  private recordHead(): Buffer | undefined {
    if (Buffer.isBuffer(this.head)) return this.head;
    const made = this.head();
    if (Buffer.isBuffer(made)) return (this.head = made);
    this.refusedWhy = made.refused;
    return undefined;
  }

  /** Starts the spool copy and the streamed PUT (unless the archive is backing off) with the heads and `body`, the body so far. */
  private stream(body: Buffer[]): void {
    const head = this.recordHead();
    if (!head) return; // refused: nothing is sent nor spooled
    this.openTee([head, ...body]);
    if (this.queue?.down) return;
    const live = CaptureUpload.streamed(this.vhost, this.uriR, head, this.options);
    for (const c of body) live.write(c);
    this.startLive(live);
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

  private startLive(live: CaptureUpload): void {
    this.live = live;
    void live.settled.then((r) => {
      this.liveResult = r;
      this.decide();
    });
  }

  /** Body bytes, as received from the content server (transfer coding undone). Never waits. */
  write(chunk: Buffer): void {
    if (this.body !== 'streaming' || this.refusedWhy !== undefined) return;
    this.bodyBytes += chunk.length;
    this.gc.add(chunk.length);
    const held = this.held;
    if (!held) {
      this.tee?.write(chunk);
      this.live?.write(chunk);
      return;
    }
    held.push(chunk);
    this.heldBytes += chunk.length;
    if (this.heldBytes > this.bound) {
      // Too large to hold: stream it as it comes, from what is held so far.
      this.held = undefined;
      this.stream(held);
    }
  }

  /** The response body is complete. */
  end(): void {
    if (this.body !== 'streaming') return;
    this.body = 'complete';
    const held = this.held;
    if (held && this.facts) {
      this.held = undefined;
      const { status, mime, datetime } = this.facts;
      if (this.cache?.unchanged(this.putUrl, captureEntityTag({ digest: bodyDigest(held), status, mime }), datetime)) this.cached = true;
      else {
        const head = this.recordHead();
        if (head) this.heldBody = held;
        if (head && !this.queue?.down) this.startLive(CaptureUpload.held(this.vhost, this.uriR, [head, ...held], this.options));
      }
    } else this.live?.end();
    this.decide();
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
    if (this.deciding || (this.body === 'streaming' && this.refusedWhy === undefined) || (this.live && !this.liveResult)) return;
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
    if (live && live.outcome !== 'stored' && live.outcome !== 'aborted' && !conflict) metrics?.putFailures.inc({ via: 'live' });
    this.settleCache(live);

    if (this.refusedWhy !== undefined) {
      // Found when its heads were made, at the end of a held body or as it passed the bound: as if never started.
      result.outcome = 'refused';
      result.reason = this.refusedWhy;
    } else if (this.body === 'aborted') {
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
    } else if (live?.outcome === 'stored') {
      this.tee?.discard();
      this.queue?.noteSuccess();
      // 200: the archive has the same memento (archive/http/ingest.ts); 201: a new one.
      if (live.archiveStatus === 200) {
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
      if (this.heldBody) this.openTee([this.head as Buffer, ...this.heldBody]);
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

  /** Tells the cache (when this capture counts in one) what the archive answered, or that it did not. */
  private settleCache(live: UploadOutcome | undefined): void {
    if (!this.cache) return;
    if (this.cached) return this.cache.settle(this.putUrl, undefined, true);
    const answer = live?.outcome === 'stored' && this.body === 'complete' ? live.answer : undefined;
    if (answer?.etag !== undefined && answer.revisitAfter !== undefined && this.facts)
      this.cache.settle(this.putUrl, { tag: answer.etag, since: this.facts.datetime, until: answer.revisitAfter });
    else this.cache.settle(this.putUrl, undefined);
  }

  /** The archive refused the live PUT for good: the record goes to `rejected/` (within the spool's bound), counted as lost. */
  private async keepRejected(result: CaptureOutcome): Promise<void> {
    const { log, metrics } = this.options;
    if (this.heldBody) this.openTee([this.head as Buffer, ...this.heldBody]);
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
 * Starts the capture of one exchange. A body that will be held (within
 * `held_max_bytes`, or of unknown length) with the cache on
 * (`ArchiveUnchangedCache`) is held with only its status, media type and
 * datetime known: the record's heads are built, and checked against the
 * archive's rules (shared/capture-rules.ts `inspectCaptureHeads`, with the
 * archive's default limits), only when it must be sent, so a capture the
 * cache finds unchanged costs no more than its digest. Otherwise the heads
 * are built and checked now, and the capture held or streamed. The caller
 * feeds it the body ({@link Capture.write}) and ends or aborts it.
 *
 * @returns the capture, or `{ refused }`: why the archive would refuse it
 *   (nothing was sent nor spooled; a held capture refused later ends
 *   with the outcome `refused`)
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
  const facts = headFacts(proxyRes);
  const inspect = (): { bytes: Buffer } | { refused: string } => {
    const { request, response } = captureHeads(req, proxyRes, vhost, scheme, address);
    const inspected = inspectCaptureHeads(request, response, new Date());
    return 'refusal' in inspected ? { refused: inspected.refusal.message } : inspected;
  };
  if (vhost.archiveUnchangedCache && options.unchangedCache && !((facts.bodyLength ?? 0) > (options.heldMaxBytes ?? DEFAULT_HELD_MAX_BYTES))) {
    // Held, and perhaps never sent: its heads are made (and checked) only when it must be.
    const later = () => {
      try {
        const made = inspect();
        return 'bytes' in made ? made.bytes : made;
      } catch (err) {
        return { refused: `the capture's heads cannot be written: ${(err as Error).message}` };
      }
    };
    return new Capture(vhost, address.uriR, later, options, facts);
  }
  const made = inspect();
  if ('refused' in made) return made;
  return new Capture(vhost, address.uriR, made.bytes, options, facts);
}

/**
 * Status, media type, Memento-Datetime and body length of a response, as
 * the archive will read them from the capture record's response head: the
 * first `Content-Type` and `Date` fields (RFC 9110 §5.3), the Date when it
 * is an HTTP-date, else now.
 */
function headFacts(proxyRes: IncomingMessage): CaptureHeadFacts {
  let type: string | undefined;
  let date: string | undefined;
  let length: string | undefined;
  const raw = proxyRes.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i];
    if (name.length !== 4 && name.length !== 12 && name.length !== 14) continue;
    const lower = name.toLowerCase();
    if (lower === 'content-type') type ??= raw[i + 1];
    else if (lower === 'date') date ??= raw[i + 1];
    else if (lower === 'content-length') length ??= raw[i + 1];
  }
  const facts: CaptureHeadFacts = {
    status: proxyRes.statusCode ?? 0,
    mime: mediaType(type),
    datetime: toEpochSeconds(parseHttpDate(date) ?? new Date()),
  };
  if (length !== undefined) facts.bodyLength = Number(length.split(',')[0]);
  return facts;
}
