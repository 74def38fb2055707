/**
 * Memento response assembly (RFC 7089 §4.2.1, and the Prefer rules in
 * docs/architecture.md "Replay and Prefer"): from a stored response record
 * and the form asked for, the status, headers and body a Memento answer
 * carries. No HTTP server here: the Memento route sends what this returns.
 *
 * Headers: every original header as `X-Archive-Orig-<name>`; only
 * `Content-Type` also as itself (and `Content-Encoding` when the body goes
 * out as stored; `Location` for a 3xx, into the archive in every form,
 * location.ts; in the replay form a `Refresh` with a URL, rewritten), so
 * that no stale header acts on the client. Every form is sandboxed; the
 * replay form is also kept on the archive's origin (no fetch reaches the
 * live web); the stored forms fetch nothing and go to a browser as
 * downloads. Bodies: body.ts.
 */
import { formatHttpDate, toTimestamp14 } from '#shared/http-date.js';
import { formatLinkHeader, type Link } from '#shared/link.js';
import type { MementoRow } from '../store/index/index-db.js';
import type { StoredResponse } from '../store/warcs/warc-reader.js';
import { type CachedReplay, cacheKey, type ReplayCache } from '../replay/cache.js';
import type { ReplayOptions } from '../replay/replay.js';
import { type BodyPlan, planBody, type ReadRecord } from './body.js';
import type { DecodeOptions } from '../replay/content-coding.js';
import { FIXED_HEAD_BYTES, HEAD_BUDGET, headerBytes, linkWithin } from './head-budget.js';
import { LINK_DETAILS, mementoLinks, uris } from './navigation.js';
import type { Selection } from '../read/nearest.js';
import { type HeaderMap, originalHeaders } from './original-headers.js';
import { decidePreferenceApplied } from './preference-applied.js';
import type { MementoForm, PreferRequest } from './prefer.js';
import { LINK_FORMAT } from './timemap.js';

/** What a Memento answer serves: the row, its navigation, the form. */
export interface MementoRequest {
  base: string;
  archiveId: string;
  /** The URI-R as the request named it. */
  uriR: string;
  row: MementoRow;
  selection: Selection;
  /** The form the address names: the navigation links name URI-Ms of that form. */
  addressForm: MementoForm;
  /** The form served (the address's, or the one Prefer asked for). */
  form: MementoForm;
  prefer: PreferRequest;
  /** The origin of the archive's pages for people (`frame-ancestors`); default: `base`'s. */
  pagesOrigin?: string;
  /**
   * The instant (14 digits, UTC) the replay form's URLs are rewritten at:
   * the reader's time in the banner page's frame (an `if_` address at a
   * timestamp that is not stored, archive/http/memento.ts), so that the
   * page's embedded resources come at that time; default the memento's
   * own Memento-Datetime.
   */
  rewriteAt?: string;
}

/**
 * The sandbox of the replay form (CSP 3 `sandbox` without
 * `allow-same-origin`, HTML "sandboxing flags"): a stored page, HTML or
 * SVG, runs its scripts in an opaque origin and never as the archive (no
 * access to the archive's cookies, storage or same-origin requests). No
 * `allow-popups`: a new window (`window.open`, a `target=_blank` link)
 * loads its URL as written, and no fetch directive governs a navigation, so
 * a stored page could open the live site in a tab of its own (the replay
 * shim, static/replay.js, turns a click on a link to a new window into one
 * in place, in the archive).
 */
export const REPLAY_SANDBOX = 'sandbox allow-scripts allow-forms allow-modals';

/**
 * The Content-Security-Policy of the stored forms (`id_`, `ol_`): a
 * sandbox without a single flag (no script, form, popup or plugin runs),
 * and no fetch at all (`default-src 'none'`; inline styles and `data:`
 * images, which fetch nothing, still show), so that a browser that renders
 * one after all (the stored forms go out as downloads,
 * {@link STORED_DISPOSITION}) loads nothing, neither from the live web nor
 * from the archive; framed only by the archive's pages for people
 * (`pagesOrigin`, CSP 3 `frame-ancestors`), never by another site or a
 * stored page. What it cannot stop, a download can: `<link rel=preconnect>`
 * and `dns-prefetch` in the stored markup are followed by Chromium
 * whatever the policy says (docs/threat-model.md).
 */
export function storedCsp(base: string, pagesOrigin = new URL(base).origin): string {
  return `sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors ${pagesOrigin}`;
}

/**
 * The `Content-Disposition` of the stored forms (RFC 6266): a browser
 * saves the stored bytes instead of rendering them, so that a stored
 * page's connection hints, scripts and subresources (which go to the live
 * site in these forms: nothing is rewritten) never run. Tools read the
 * body as always; a subresource (`<img>`, `<script>`) ignores it.
 */
export const STORED_DISPOSITION = 'attachment';

/**
 * The Content-Security-Policy of the replay form: every fetch and form
 * submission only to the archive's own origin (a URL a script builds, which
 * the rewriter could not see, fails instead of reaching the live web),
 * inline code and `data:`/`blob:` allowed as the page had them, frames
 * only from the archive (a `data:` or `blob:` document would run without
 * the replay shim, which disables WebRTC), and the sandbox of
 * {@link REPLAY_SANDBOX}. No `frame-ancestors`: a replayed page's own
 * iframes are replay-form mementos framed by that page, whose origin is
 * opaque, and no `frame-ancestors` source matches an opaque origin
 * (Chromium refuses them all); the sandbox leaves nothing to gain by
 * framing one. No `webrtc 'block'`: Chromium 156 knows no such directive
 * (nor a `webrtc` Permissions-Policy) and warns of it on every page.
 */
export function replayCsp(base: string): string {
  const origin = new URL(base).origin;
  const own = `'self' ${origin}`;
  return `default-src ${own} data: blob: 'unsafe-inline' 'unsafe-eval'; frame-src ${own}; form-action ${own}; ${REPLAY_SANDBOX}`;
}

/** A Memento answer ready to send. */
export interface MementoAnswer {
  status: number;
  headers: HeaderMap;
  plan: BodyPlan;
}

/**
 * Assembles a Memento answer: the stored status; the original headers as
 * `X-Archive-Orig-<name>` plus Content-Type (and Content-Encoding when the
 * body goes out as stored; Content-Length when it is known); a 3xx's
 * Location, an archive address of the same form (location.ts: never a
 * redirect out of the archive); Memento-Datetime; Link (original,
 * timegate, timemap, the receipt as `describedby`, the neighbouring
 * URI-Ms); Vary: prefer; the sandbox and fetch policy of the form (stored
 * forms also `Content-Disposition: attachment`); nosniff;
 * `Access-Control-Allow-Origin: *` (the replayed page's origin is opaque,
 * its fonts and other CORS fetches come from the archive);
 * Preference-Applied; Content-Location (the URI-M of the form served; at
 * the reader's time, `rewriteAt`, the memento's own URI-M all the same).
 * The head stays within head-budget.ts's budget: navigation links and then
 * echoed headers are left out when they do not fit
 * (`X-Archive-Headers-Omitted: <count>` says how many headers).
 *
 * @param cache replayed bodies kept in memory (replay form, small pages)
 * @param decode the bound of a streamed decoding of a content-coded body, and who hears how it ended (content-coding.ts)
 * @param replay where the replay form's rewrite runs when it does not fit in a slice of the event loop (archive/replay/replay.ts)
 * @throws when the stored record is missing or damaged; HttpError 503 when the replay form's rewrite cannot be done now
 */
export async function assembleMemento(
  m: MementoRequest,
  read: ReadRecord,
  cache?: ReplayCache,
  decode: DecodeOptions = {},
  replay: ReplayOptions = {},
): Promise<MementoAnswer> {
  const target = { base: m.base, archiveId: m.archiveId, ts: m.rewriteAt ?? toTimestamp14(m.row.datetime) };
  const key = m.form === 'replay' && cache ? cacheKey(m.row, m.base, target.ts) : undefined;
  const hit = key ? cache!.get(key) : undefined;
  const stored = hit ? cachedRecord(hit) : await read(m.row);
  const orig = originalHeaders(stored);
  const plan = hit ? cachedPlan(stored, hit) : await planBody(m.row, stored, m.form, read, target, orig.contentType, decode, replay);
  if (key && !hit && plan.bodyBuffer && plan.changes.content) cache!.set(key, stored, { body: plan.bodyBuffer, changes: plan.changes, decoded: plan.decoded });
  const status = plan.stored.status;
  // The archive's own headers, in the order they are sent; the Link goes after Memento-Datetime.
  const before: HeaderMap = {};
  const after: HeaderMap = {};
  if (orig.contentType) before['content-type'] = orig.contentType;
  if (orig.contentEncoding && !plan.decoded && !plan.changes.content) before['content-encoding'] = orig.contentEncoding;
  // RFC 9110 §8.6: no Content-Length in a 1xx or 204 answer; a 304 has no body to measure.
  if (plan.length !== null && status >= 200 && status !== 204 && status !== 304) before['content-length'] = String(plan.length);
  const applied = decidePreferenceApplied(m.prefer, m.form, plan.changes, { status, location: orig.location, refresh: orig.refresh }, target, m.row.uri_r);
  if (applied.location !== undefined) before.location = applied.location;
  if (applied.refresh !== undefined) before.refresh = applied.refresh;
  before['memento-datetime'] = formatHttpDate(m.row.datetime);
  after.vary = 'prefer';
  // Stored pages never run as the archive: an opaque origin, and no type sniffing (a stored body is what it says it is).
  after['content-security-policy'] = m.form === 'replay' ? replayCsp(m.base) : storedCsp(m.base, m.pagesOrigin);
  // The stored forms rewrite nothing: a browser saves them instead of loading what they name from the live web.
  if (m.form !== 'replay') after['content-disposition'] = STORED_DISPOSITION;
  after['x-content-type-options'] = 'nosniff';
  after['access-control-allow-origin'] = '*';
  after['preference-applied'] = applied.preferenceApplied;
  after['content-location'] = uris.memento(m.base, m.archiveId, m.row, m.form);
  // Within the head budget: the own headers, then as many navigation links as fit, then as many echoed headers as fit.
  let left = HEAD_BUDGET - FIXED_HEAD_BYTES - bytesOf(before) - bytesOf(after) - OMITTED_LINE;
  const required: Link[] = [
    { uri: m.row.uri_r, rel: 'original' },
    { uri: uris.timegate(m.base, m.archiveId, m.uriR), rel: 'timegate' },
    { uri: uris.timemap(m.base, m.archiveId, m.uriR), rel: 'timemap', type: LINK_FORMAT },
    // The capture's receipt in the evidence log (docs/evidence.md "Receipts").
    { uri: uris.receipt(m.base, m.archiveId, m.row), rel: 'describedby', type: 'text/plain' },
  ];
  const link = linkWithin(
    left,
    required,
    LINK_DETAILS.map((d) => () => formatLinkHeader(mementoLinks(m.base, m.archiveId, m.selection, m.addressForm, d))),
  );
  left -= headerBytes('link', link);
  const echoed: HeaderMap = {};
  let omitted = 0;
  for (const [name, value] of Object.entries(orig.headers)) {
    const n = headerBytes(name, value);
    if (n <= left) {
      echoed[name] = value;
      left -= n;
    } else omitted++;
  }
  if (omitted) after['x-archive-headers-omitted'] = String(omitted);
  return { status, headers: { ...echoed, ...before, link, ...after }, plan };
}

/** Room kept for the `X-Archive-Headers-Omitted` line. */
const OMITTED_LINE = 40;

function bytesOf(headers: HeaderMap): number {
  let n = 0;
  for (const [k, v] of Object.entries(headers)) n += headerBytes(k, v);
  return n;
}

/** A stored response rebuilt from a cache entry (its head; the body is the replayed one). */
function cachedRecord(hit: CachedReplay): StoredResponse {
  return { ...hit.head, body: onceBody(hit.body), bodyBuffer: hit.body, bodyLength: hit.body.length, close: () => undefined };
}

function cachedPlan(stored: StoredResponse, hit: CachedReplay): BodyPlan {
  return {
    stored,
    body: onceBody(hit.body),
    bodyBuffer: hit.body,
    length: hit.body.length,
    changes: hit.changes,
    decoded: hit.decoded,
    bodyless: false,
    close: () => stored.close(),
  };
}

async function* onceBody(buf: Buffer): AsyncGenerator<Uint8Array> {
  if (buf.length) yield buf;
}
