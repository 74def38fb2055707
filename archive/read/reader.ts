/**
 * The reader: the Memento protocol's reads answered as plain answers
 * (answer.ts: status, headers, body), with nothing of the HTTP server in
 * them. A TimeGate (RFC 7089 §4.2.1, pattern 2.1, and Prefer variant 1), a
 * Memento (§4.2.1, §2.1.1, and Prefer variant 2), a TimeMap (§5) and its
 * timebundle, and a memento's own WARC record. The routes
 * (archive/http/timegate.ts, memento.ts, timemap.ts, record.ts) parse the
 * address, call one method, and send what it returns.
 *
 * Every memento it names is one the access rules show: it reads through
 * the {@link VisibleIndex} and nothing else. It is the one owner of the
 * caches on the way of a memento: the index's views of recently asked
 * URLs (in the visible index) with the whole answers kept with them (here:
 * {@link KeptAnswers}), the record cache (the store's, whose bodies a kept
 * answer points at rather than holding twice) and the replay cache of
 * rewritten pages.
 */
import { formatLinkHeader, type Link } from '#shared/link.js';
import { httpError } from '#shared/http-error.js';
import { toTimestamp14, parseTimestamp14, toEpochSeconds } from '#shared/http-date.js';
import { buildUriM, parseUriMTimestamp } from '#shared/uri-m.js';
import { mementoRecords } from '../evidence/memento-records.js';
import { FIXED_HEAD_BYTES, HEAD_BUDGET, headerBytes, linkWithin } from '../memento/head-budget.js';
import { LINK_DETAILS, mementoLinks, uris } from '../memento/navigation.js';
import { formFor, formOfModifier, hasPreference, type MementoForm, parsePrefer, type PreferRequest } from '../memento/prefer.js';
import { predictPreferenceApplied } from '../memento/preference-applied.js';
import { assembleMemento } from '../memento/response.js';
import { jsonTimemap, LINK_FORMAT, linkFormat, type Span, timemapHead, timemapMementoLinks } from '../memento/timemap.js';
import type { DecodeOptions } from '../replay/content-coding.js';
import { cacheKey, type ReplayCache } from '../replay/cache.js';
import type { ArchiveSpan } from '../spans.js';
import type { ArchiveStore } from '../store/store.js';
import type { WorkPool } from '../work/pool.js';
import { type AcrossRead, indexJsonTimemapOf, indexTimemap, redirector } from './across-archives.js';
import { type Answer, type HeaderValues, lazy, redirectAnswer, TEXT } from './answer.js';
import { KeptAnswers } from './kept-answers.js';
import { instant, type Period, type Selection, select, timestampPeriod } from './nearest.js';
import type { MementoRow, Neighbourhood } from './rows.js';
import { blockedError, type VisibleIndex } from './visible-index.js';

/** What every read names: a local archive, the URI-R (normalised) and its urlkey, the archive's public base URL. */
export interface ReadRequest {
  /** A local archive's id (the route has checked it is one). */
  archiveId: string;
  uriR: string;
  urlkey: string;
  /** The archive's public base URL for this request, no trailing slash. */
  base: string;
}

/** A TimeGate read. */
export interface TimegateRead extends ReadRequest {
  /** Accept-Datetime as epoch seconds; `undefined`: the newest. */
  acceptDatetime?: number;
  /** The `Prefer` header as sent. */
  prefer?: string | string[];
}

/** A Memento read. */
export interface MementoRead extends ReadRequest {
  /** The address's timestamp segment as sent: 1-14 digits and a form modifier (`id_`, `ol_`, `if_`…). */
  ts: string;
  /** The `Prefer` header as sent. */
  prefer?: string | string[];
  /**
   * The client's connection: its `close` means the client went away, and
   * a replay waiting for the replay pool's thread is then dropped from its
   * queue.
   */
  client?: ClientConnection;
}

/** The events of a client's connection the reader listens to (a `net.Socket` has them). */
export interface ClientConnection {
  once(event: 'close', listener: () => void): unknown;
  off(event: 'close', listener: () => void): unknown;
}

/** What the reader reads with: the visible index, the store's records, the replay's cache, bounds and pool. */
export interface ReaderParts {
  visible: VisibleIndex;
  /** The stored records: their responses (through the record cache), the cache itself, and the WARC files. */
  store: Pick<ArchiveStore, 'readResponse' | 'recordCache' | 'warcs'>;
  /** Rewritten (replay form) bodies kept in memory (`replay_cache_bytes`). */
  replayCache: ReplayCache;
  /** The bound of a streamed decoding of a content-coded body (`max_decoded_bytes`), and who hears how it ended. */
  decode: DecodeOptions;
  /** The work pools (archive/work/pool.ts): `replay`, where a rewrite that does not fit in a slice of the event loop runs (none: in this thread), looked up at each read. */
  work: { readonly replay?: WorkPool };
  /** `publish_requests`: a memento's record comes with the published form of its request record. */
  publishRequests: boolean;
  /** The origin of the archive's pages for people for a request's base URL, which alone may frame a stored form (`frame-ancestors`). */
  pagesOrigin: (base: string) => string;
  /** The configured archives, local and remote (the redirector and the index TimeMap read over all of them). */
  archives: readonly ArchiveSpan[];
}

const FORM_FLAGS = (prefer: PreferRequest) => `${prefer.raw ? 'r' : ''}${prefer.rewritten ? 'w' : ''}`;

/** The reads of the Memento protocol; one per daemon. */
export class Reader {
  private readonly kept: KeptAnswers;

  constructor(private readonly parts: ReaderParts) {
    this.kept = new KeptAnswers(parts.visible);
  }

  /** The replay cache (for the metrics and tests: its size). */
  get replayCache(): ReplayCache {
    return this.parts.replayCache;
  }

  /**
   * A TimeGate (`/<id>/timegate/<URI-R>`): 302 to the URI-M of the
   * memento nearest to Accept-Datetime (archive/read/nearest.ts), of the
   * form that satisfies the most of Prefer (variant 1: the raw one for
   * `original-content`); `Vary: accept-datetime, prefer`; one `Link`
   * (original, timemap, timebundle and as many memento links around the
   * choice as the head has room for); `Preference-Applied` when Prefer
   * was sent, worked out as the URI-M will work it out
   * (archive/memento/preference-applied.ts).
   *
   * @throws HttpError 404 when the archive shows no memento of the URI-R; 451 when it has only hidden ones and some are blocked
   */
  async timegate(q: TimegateRead): Promise<Answer> {
    const { archiveId, uriR, urlkey, base } = q;
    const t = q.acceptDatetime ?? Number.MAX_SAFE_INTEGER;
    const { visible } = this.parts;
    const n = await visible.neighbourhood(archiveId, urlkey, t);
    if (!n) throw await visible.absent(urlkey, uriR, base, `no memento of ${uriR} in archive "${archiveId}"`, archiveId);
    const s = select(n, instant(t));
    const prefer = parsePrefer(q.prefer);
    const form = formFor(prefer, 'replay');
    const preferred = hasPreference(prefer);
    const key = `timegate ${s.memento.id} ${form} ${preferred ? `p${FORM_FLAGS(prefer)}` : ''} ${archiveId} ${base} ${uriR}`;
    const kept = this.kept.get(n.view, key);
    if (kept) return kept;
    const vary = 'accept-datetime, prefer';
    let applied: string | undefined;
    if (preferred) {
      // What that URI-M will say it satisfies (Prefer rule 8), worked out as it will work it out.
      const row = await visible.row(s.memento.id);
      const target = { base, archiveId, ts: toTimestamp14(s.memento.datetime) };
      const { store, decode, work } = this.parts;
      applied = (await predictPreferenceApplied(row, prefer, form, (r) => store.readResponse(r), target, decode, { pool: work.replay })).preferenceApplied;
    }
    const location = uris.memento(base, archiveId, s.memento, form);
    const used = FIXED_HEAD_BYTES + headerBytes('location', location) + headerBytes('vary', vary) + headerBytes('preference-applied', applied);
    const required: Link[] = [
      { uri: uriR, rel: 'original' },
      { uri: uris.timemap(base, archiveId, uriR), rel: 'timemap', type: LINK_FORMAT },
      { uri: uris.timebundle(base, archiveId, uriR), rel: 'timebundle' },
    ];
    const link = linkWithin(
      HEAD_BUDGET - used,
      required,
      LINK_DETAILS.map((d) => () => formatLinkHeader(mementoLinks(base, archiveId, s, form, d))),
    );
    const answer = redirectAnswer(302, location, { vary, 'preference-applied': applied, link });
    this.kept.keep(n.view, key, answer);
    return answer;
  }

  /**
   * A Memento (`/<id>/memento/<ts><modifier>/<URI-R>`): the stored status,
   * headers and body in the form asked for (Prefer, else the address's:
   * archive/memento/response.ts); a 302 to the nearest shown URI-M in any
   * archive for a timestamp that is not a stored (shown) datetime here or
   * names a period (1-13 digits); at `<T>if_` (the banner page's frame) a
   * 14-digit T that is not stored is answered with the nearest memento's
   * archival replay itself, its URLs rewritten at T (a nearest memento in
   * another archive: a 302 to `/<other>/memento/<T>if_/<URI-R>`).
   *
   * @returns the answer; for a URI-R no archive shows, a 404 marked `notArchived`
   * @throws HttpError 400 for a malformed timestamp; 451 for a blocked
   *   memento, or a URI-R whose every memento is hidden and some blocked;
   *   503 when a rewrite cannot be done now; what reading the record throws
   */
  async memento(q: MementoRead): Promise<Answer> {
    const { archiveId, uriR, urlkey, base } = q;
    const { visible } = this.parts;
    const { ts, period, form: addressForm, modifier } = parseTs(q.ts);
    const t = period.end;
    // The navigation links (id, datetime, URI-R of first/last/prev/next) and the memento at or before `t`.
    const n = await visible.neighbourhood(archiveId, urlkey, t);
    const s = n && select(n, instant(t));
    const prefer = parsePrefer(q.prefer);
    if (n && n.atOrBefore[0] && s && s.memento.datetime === t && ts.length === 14) return this.serve(q, { n, s, prefer, addressForm, rewriteAt: ts });
    const atT = modifier === 'if_' && ts.length === 14 && formFor(prefer, addressForm) === 'replay';
    // At the reader's time: an answer kept with the URL's view was made when `s` was the nearest in every archive (a
    // write of the URL, in any archive, drops the view with its answers).
    if (atT && n && s) {
      const kept = this.kept.get(n.view, mementoKey(q, prefer, s.memento.id, ts, addressForm, 'replay'));
      if (kept) return kept;
    }
    // A memento stored at exactly this datetime that the access rules block.
    if (ts.length === 14 && (await visible.blockedAt(archiveId, urlkey, t))) throw blockedError(uriR, base);
    // Not a stored (shown) datetime here, or a timestamp prefix: the nearest URI-M in any archive.
    const nearest = await visible.nearest(urlkey, period);
    if (!nearest && (await visible.whyHidden(urlkey)) === 'block') throw blockedError(uriR, base);
    if (!nearest) return notArchived(uriR);
    if (atT && nearest.archiveId === archiveId && n && s?.memento.id === nearest.selection.memento.id)
      return this.serve(q, { n, s, prefer, addressForm, rewriteAt: ts });
    const cors = { 'access-control-allow-origin': '*' };
    if (atT) return redirectAnswer(302, buildUriM(base, { archive: nearest.archiveId, timestamp: ts, modifier, uriR }), cors);
    return redirectAnswer(302, uris.memento(base, nearest.archiveId, nearest.selection.memento, addressForm), cors);
  }

  /**
   * Memento `s.memento` of the archive in the form asked for (Prefer, else
   * the address's), the replay form's URLs rewritten at `rewriteAt` (14
   * digits: its own timestamp, or the reader's time); kept with the URL's
   * view when its body is in memory.
   */
  private async serve(
    q: MementoRead,
    at: { n: Neighbourhood; s: Selection; prefer: PreferRequest; addressForm: MementoForm; rewriteAt: string },
  ): Promise<Answer> {
    const { store, replayCache, visible } = this.parts;
    const { archiveId, uriR, base } = q;
    const { n, s, prefer, addressForm, rewriteAt } = at;
    const form = formFor(prefer, addressForm);
    const key = mementoKey(q, prefer, s.memento.id, rewriteAt, addressForm, form);
    const kept = this.kept.get(n.view, key);
    if (kept) return kept;
    // Rows are never changed while the daemon runs (purge and reindex run without it): a memento the index named is there.
    const row = await visible.row(s.memento.id);
    if (!row) throw httpError(404, `the memento of ${uriR} at ${toTimestamp14(s.memento.datetime)} is gone from the index`);
    // A reader who leaves while the page waits for the replay pool's thread takes it out of the queue.
    const gone = new AbortController();
    const onClose = () => gone.abort();
    q.client?.once('close', onClose);
    const answer = await assembleMemento(
      { base, archiveId, uriR, row, selection: s, addressForm, form, prefer, pagesOrigin: this.parts.pagesOrigin(base), rewriteAt },
      (r) => store.readResponse(r),
      replayCache,
      this.parts.decode,
      { pool: this.parts.work.replay, signal: gone.signal },
    ).finally(() => q.client?.off('close', onClose));
    const { plan } = answer;
    if (plan.bodyless || plan.bodyBuffer) {
      const body = plan.bodyless ? null : plan.bodyBuffer;
      plan.close();
      const whole = { status: answer.status, headers: answer.headers, body };
      this.kept.keep(n.view, key, whole, this.bodySource(row, form, base, rewriteAt, body));
      return whole;
    }
    // A stream: closed when it is sent, fails (a decoding past max_decoded_bytes: the client sees the body cut), or
    // is not sent (HEAD, a client that left); then the record and any decoder are released.
    return { status: answer.status, headers: answer.headers, body: plan.body, close: () => plan.close() };
  }

  /**
   * Where the body of a memento's answer is found again when the replay
   * cache or the record cache holds it (then a kept answer points there
   * instead of holding it twice); `undefined` when neither does.
   */
  private bodySource(row: MementoRow, form: MementoForm, base: string, rewriteAt: string, body: Buffer | null): (() => Buffer | undefined) | undefined {
    if (!body) return undefined;
    const { replayCache, store } = this.parts;
    const replayKey = cacheKey(row, base, rewriteAt);
    if (form === 'replay' && replayCache.peek(replayKey)?.body === body) return () => replayCache.get(replayKey)?.body;
    if (store.recordCache.peek(row.warc_file, row.warc_offset, row.warc_length) === body)
      return () => store.recordCache.body(row.warc_file, row.warc_offset, row.warc_length);
    return undefined;
  }

  /**
   * A TimeMap of one archive (`/<id>/timemap/link|json/<URI-R>`, RFC 7089
   * §5): `application/link-format` (head, then every memento oldest first,
   * §5.1) or the JSON of mementoweb.org's timemap-json, streamed from the
   * index a page at a time. The address names the format, so every client
   * gets that format whatever its `Accept` says.
   *
   * @throws HttpError 404 when the archive shows no memento of the URI-R; 451 when it has only hidden ones and some are blocked
   */
  async timemap(q: ReadRequest & { format: 'link' | 'json' }): Promise<Answer> {
    const span = await this.span(q);
    const { visible } = this.parts;
    const { archiveId, urlkey, base, uriR } = q;
    if (q.format === 'json') {
      // Lazy: nothing is read before the body is (a HEAD reads nothing).
      const pages = () => visible.timemapPages(archiveId, urlkey);
      return { status: 200, headers: { 'content-type': 'application/json' }, body: lazy(() => jsonTimemap(pages(), base, archiveId, uriR)) };
    }
    const links = async function* () {
      for await (const page of visible.timemapPages(archiveId, urlkey)) yield timemapMementoLinks(page, base, archiveId, span);
    };
    return { status: 200, headers: { 'content-type': LINK_FORMAT }, body: lazy(() => linkFormat(timemapHead(base, archiveId, uriR, span), links())) };
  }

  /**
   * The timebundle (`/<id>/timebundle/<URI-R>`): 303 to the link-format TimeMap.
   *
   * @throws HttpError as {@link timemap}
   */
  async timebundle(q: ReadRequest): Promise<Answer> {
    await this.span(q);
    return redirectAnswer(303, uris.timemap(q.base, q.archiveId, q.uriR));
  }

  /** The span of the archive's shown mementos of the URI-R. @throws HttpError as {@link timemap} */
  private async span(q: ReadRequest): Promise<Span> {
    const { visible } = this.parts;
    const span = (await visible.spans(q.urlkey)).find((x) => x.archive_id === q.archiveId);
    if (!span) throw await visible.absent(q.urlkey, q.uriR, q.base, `no memento of ${q.uriR} in archive "${q.archiveId}"`, q.archiveId);
    return span;
  }

  /**
   * The TimeGate redirector over every archive (`/tg/<URI-R>`): 302 to the
   * chosen archive's TimeGate (across-archives.ts `redirector`).
   *
   * @param q.acceptDatetime Accept-Datetime as epoch seconds and as sent; `undefined`: the newest
   * @throws HttpError 404 when no archive has the URI-R; 451 when every local memento is hidden and some are blocked
   */
  redirector(q: AcrossRead & { acceptDatetime?: { seconds: number; header: string } }): Promise<Answer> {
    return redirector(this.parts, q);
  }

  /**
   * The index TimeMap over every archive (`/tg/timemap/<URI-R>`, and as
   * JSON at `/tg/timemap/json/<URI-R>`), streamed (across-archives.ts).
   *
   * @throws HttpError as {@link redirector}
   */
  indexTimemap(q: AcrossRead & { format: 'link' | 'json' }): Promise<Answer> {
    return q.format === 'json' ? indexJsonTimemapOf(this.parts, q) : indexTimemap(this.parts, q);
  }

  /**
   * The memento of a URL stored at exactly `ts`, as the access rules let it
   * be seen: its index row (the record, log, tile and receipt addresses
   * name a memento so).
   *
   * @param ts the Memento-Datetime as 14 digits (UTC)
   * @throws HttpError 404 for a `ts` that is not 14 digits or not a stored
   *   datetime, and for an excluded or embargoed memento (as if not stored);
   *   451 for a blocked one (RFC 7725)
   */
  async exact(q: ReadRequest, ts: string): Promise<MementoRow> {
    const when = /^\d{14}$/.test(ts) ? parseTimestamp14(ts) : null;
    const notFound = () =>
      httpError(404, `no memento of ${q.uriR} at ${ts.slice(0, 40)} in archive ${q.archiveId}; the address needs its exact 14-digit timestamp`);
    if (!when) throw notFound();
    const row = await this.parts.visible.exact(q.archiveId, q.urlkey, toEpochSeconds(when));
    if (!row) throw notFound();
    if (row === 'block') throw blockedError(q.uriR, q.base);
    return row;
  }

  /**
   * A memento's own WARC record (`/<id>/record/<ts>/<URI-R>`), as stored,
   * for anyone to check its entry in the evidence log: `application/warc`,
   * its record (and its published request record with `publish_requests`:
   * archive/evidence/memento-records.ts), as an attachment named
   * `<id>-<ts>.warc`.
   *
   * @throws HttpError as {@link exact}
   */
  async record(q: ReadRequest & { ts: string }): Promise<Answer> {
    const row = await this.exact(q, q.ts);
    const { records, close } = await mementoRecords(this.parts.store.warcs, row, this.parts.publishRequests);
    const headers = {
      'content-type': 'application/warc',
      'content-disposition': `attachment; filename="${q.archiveId}-${q.ts}.warc"`,
      'access-control-allow-origin': '*',
      'x-content-type-options': 'nosniff',
    };
    return { status: 200, headers, body: records, close };
  }
}

/**
 * The timestamp segment: 14 digits, or 1-13 digits naming a period
 * (nearest.ts `timestampPeriod`), and a form modifier (`id_`, `ol_`, or one
 * of the replay's context modifiers `im_`, `js_`…).
 *
 * @throws HttpError 400
 */
function parseTs(segment: string): { ts: string; period: Period; form: MementoForm; modifier: string } {
  const m = parseUriMTimestamp(segment);
  const form = m ? formOfModifier(m.modifier) : undefined;
  const period = m && form ? timestampPeriod(m.timestamp) : undefined;
  if (!m || !form || !period) throw httpError(400, `malformed Memento timestamp ${JSON.stringify(segment.slice(0, 40))}; it is 14 digits YYYYMMDDhhmmss (UTC)`);
  return { ts: m.timestamp, period, form, modifier: m.modifier };
}

/** The key of a kept Memento answer: everything the answer depends on besides the URL's view. */
function mementoKey(q: MementoRead, prefer: PreferRequest, id: number, rewriteAt: string, addressForm: MementoForm, form: MementoForm): string {
  return `memento ${id} ${rewriteAt} ${addressForm} ${form} ${FORM_FLAGS(prefer)} ${q.archiveId} ${q.base} ${q.uriR}`;
}

/** A 404 for a URI-R no archive shows: no Memento headers, there is no memento. */
function notArchived(uriR: string): Answer {
  const headers: HeaderValues = { 'access-control-allow-origin': '*', 'content-type': TEXT };
  return { status: 404, headers, body: Buffer.from(`no memento of ${uriR} in any archive\n`), notArchived: true };
}
