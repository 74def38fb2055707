/**
 * Memento response assembly (RFC 7089 §4.2.1, and the Prefer rules in
 * docs/architecture.md "Replay and Prefer"): from a stored response record
 * and the variant asked for, the status, headers and body a Memento answer
 * carries. No HTTP server here: the Memento route sends what this returns.
 *
 * Headers: every original header as `X-Archive-Orig-<name>`; only
 * `Content-Type` also as itself (and `Content-Encoding` / `Content-Length`
 * when the body goes out as stored; `Location` for a 3xx), so that no stale
 * header acts on the client. Body: the raw variant, a non-HTML page, a
 * bodyless answer or an HTML page that already has a base element goes out
 * as stored; an HTML page of the default variant gets its base element
 * (after undoing a gzip/deflate/br content-coding).
 */
import http from 'node:http';
import { formatHttpDate } from '../../shared/http-date.js';
import type { Link } from '../../shared/link.js';
import type { MementoRow } from '../store/index-db.js';
import type { StoredResponse } from '../store/warc-reader.js';
import { canDecode, decodeBody, decodedLength } from './content-coding.js';
import { isHtml, withBaseElement, withBaseElementBuffer } from './html-base.js';
import { FIXED_HEAD_BYTES, HEAD_BUDGET, headerBytes, linkWithin } from './head-budget.js';
import { LINK_DETAILS, mementoLinks, type Selection, uris } from './navigation.js';
import { type PreferRequest, preferenceApplied } from './prefer.js';
import { LINK_FORMAT } from './timemap.js';

/** Reads a memento's stored response record (again). */
export type ReadRecord = (row: MementoRow) => Promise<StoredResponse>;

/** The body of a Memento answer as it will be sent. */
export interface BodyPlan {
  /** The record to close when done (it may have been reopened). */
  stored: StoredResponse;
  body: AsyncIterable<Uint8Array>;
  /** The whole body when it is in memory (then sent as one buffer). */
  bodyBuffer: Buffer | null;
  /** Exact length in bytes of what is sent. */
  length: number;
  /** The body differs from the stored bytes (a base element went in). */
  changed: boolean;
  /** The status has no body (204, 304, 1xx) or the stored body is empty. */
  bodyless: boolean;
}

/**
 * The body of a Memento as it will be sent: the stored bytes for the raw
 * variant (`originalContent`), a non-HTML page, a bodyless answer or a page
 * that already has a base element; else the page with its base element, a
 * content-coded page decoded first (its decoded length counted in a second
 * pass, so that Content-Length stays exact; a corrupt encoded body goes out
 * as stored). Holds at most the first 64 KiB of a streamed page.
 *
 * @param contentEncoding the stored Content-Encoding, lower case; `undefined` for none or identity
 */
export async function planBody(
  row: MementoRow,
  stored: StoredResponse,
  contentEncoding: string | undefined,
  originalContent: boolean,
  read: ReadRecord,
): Promise<BodyPlan> {
  const bodyless = stored.status === 204 || stored.status === 304 || stored.status < 200 || stored.bodyLength === 0;
  const asStored: BodyPlan = { stored, body: stored.body, bodyBuffer: stored.bodyBuffer, length: stored.bodyLength, changed: false, bodyless };
  if (originalContent || !isHtml(row.mime) || bodyless) return asStored;
  if (!contentEncoding && stored.bodyBuffer) {
    // A small record, read whole: insert in memory.
    const r = withBaseElementBuffer(stored.bodyBuffer, row.uri_r);
    return { ...asStored, body: bufferBody(r.body), bodyBuffer: r.body, length: r.body.length, changed: r.added > 0 };
  }
  if (!contentEncoding) {
    const r = await withBaseElement(stored.body, row.uri_r);
    return { ...asStored, body: r.body, bodyBuffer: null, length: stored.bodyLength + r.added, changed: r.added > 0 };
  }
  if (!canDecode(contentEncoding)) return asStored;
  const r = await withBaseElement(decodeBody(stored.body, contentEncoding), row.uri_r).catch(() => null);
  if (r?.added) {
    const again = await read(row);
    const total = await decodedLength(again.body, contentEncoding).finally(() => again.close());
    if (total !== null) return { ...asStored, body: r.body, bodyBuffer: null, length: total + r.added, changed: true };
  }
  // Nothing to insert, or the encoded body is corrupt: it goes out as stored.
  stored.close();
  const fresh = await read(row);
  return { stored: fresh, body: fresh.body, bodyBuffer: fresh.bodyBuffer, length: fresh.bodyLength, changed: false, bodyless };
}

/** A buffer as a body stream (one chunk). */
async function* bufferBody(buf: Buffer): AsyncGenerator<Uint8Array> {
  yield buf;
}

/** The Content-Encoding of stored headers, lower case; `undefined` for none or identity. */
export function storedContentEncoding(stored: Pick<StoredResponse, 'headers'>): string | undefined {
  const enc = stored.headers
    .find(([k]) => k.toLowerCase() === 'content-encoding')?.[1]
    .trim()
    .toLowerCase();
  return enc === 'identity' || enc === '' ? undefined : enc;
}

/**
 * Whether the default variant of a Memento differs from its stored body (a
 * base element goes in), for a TimeGate's Preference-Applied.
 */
export async function defaultVariantChanges(row: MementoRow, read: ReadRecord): Promise<boolean> {
  if (!isHtml(row.mime)) return false;
  const stored = await read(row);
  const plan = await planBody(row, stored, storedContentEncoding(stored), false, read);
  plan.stored.close();
  return plan.changed;
}

function validHeaderName(name: string): boolean {
  try {
    http.validateHeaderName(name);
    return true;
  } catch {
    return false;
  }
}

/** A stored header value as Node can send it: characters outside latin-1 or control characters are percent-encoded. */
function headerValue(value: string): string {
  try {
    http.validateHeaderValue('x', value);
    return value;
  } catch {
    return value.replace(/[^\t\x20-\x7e\x80-\xff]/gu, (c) => encodeURIComponent(c));
  }
}

/** Response headers of a Memento answer (lower-case names; repeated ones as lists). */
export type HeaderMap = Record<string, string | string[]>;

/** The original headers of a stored response as `X-Archive-Orig-<name>`, and the few that also go out as themselves. */
export function originalHeaders(stored: Pick<StoredResponse, 'headers'>): {
  headers: HeaderMap;
  contentType?: string;
  contentEncoding?: string;
  location?: string;
} {
  const headers: HeaderMap = {};
  let contentType: string | undefined;
  let location: string | undefined;
  for (const [name, value] of stored.headers) {
    const lower = name.toLowerCase();
    if (!validHeaderName(lower)) continue;
    const v = headerValue(value);
    const k = `x-archive-orig-${lower}`;
    const cur = headers[k];
    headers[k] = cur === undefined ? v : Array.isArray(cur) ? [...cur, v] : [cur, v];
    if (lower === 'content-type') contentType ??= v;
    if (lower === 'location') location ??= v;
  }
  return { headers, contentType, contentEncoding: storedContentEncoding(stored), location };
}

/** What a Memento answer serves: the row, its navigation, the variant. */
export interface MementoRequest {
  base: string;
  archiveId: string;
  /** The URI-R as the request named it. */
  uriR: string;
  row: MementoRow;
  selection: Selection;
  /** The address asked for is the raw (`id_`) URI-M: navigation links name raw URI-Ms too. */
  raw: boolean;
  /** The stored bytes are served (the raw URI-M, or Prefer: original-content). */
  originalContent: boolean;
  prefer: PreferRequest;
}

/**
 * The Content-Security-Policy of every Memento answer, in every form: a
 * sandbox without `allow-same-origin` (CSP 3 `sandbox`, HTML "sandboxing
 * flags"), so that a stored page, HTML or SVG, runs its scripts in an
 * opaque origin and never as the archive (no access to the archive's
 * cookies, storage or same-origin requests).
 */
export const MEMENTO_CSP = 'sandbox allow-scripts allow-forms allow-popups allow-modals';

/** A Memento answer ready to send. */
export interface MementoAnswer {
  status: number;
  headers: HeaderMap;
  plan: BodyPlan;
}

/**
 * Assembles a Memento answer: the stored status; the original headers as
 * `X-Archive-Orig-<name>` plus Content-Type (and Content-Encoding /
 * Content-Length when the body goes out as stored, Location for a 3xx, as
 * stored: original-links means no URI is rewritten); Memento-Datetime;
 * Link (original, timegate, timemap, the neighbouring URI-Ms); Vary:
 * prefer; the sandbox ({@link MEMENTO_CSP}) and `X-Content-Type-Options:
 * nosniff`; Preference-Applied; Content-Location (the URI-M of the variant
 * served). The head stays within head-budget.ts's budget: navigation links
 * and then echoed headers are left out when they do not fit
 * (`X-Archive-Headers-Omitted: <count>` says how many headers).
 *
 * @throws when the stored record is missing or damaged
 */
export async function assembleMemento(m: MementoRequest, read: ReadRecord): Promise<MementoAnswer> {
  const stored = await read(m.row);
  const orig = originalHeaders(stored);
  const plan = await planBody(m.row, stored, orig.contentEncoding, m.originalContent, read);
  const status = plan.stored.status;
  // The archive's own headers, in the order they are sent; the Link goes after Memento-Datetime.
  const before: HeaderMap = {};
  const after: HeaderMap = {};
  if (orig.contentType) before['content-type'] = orig.contentType;
  if (orig.contentEncoding && !plan.changed) before['content-encoding'] = orig.contentEncoding;
  // RFC 9110 §8.6: no Content-Length in a 1xx or 204 answer; a 304 has no body to measure.
  if (status >= 200 && status !== 204 && status !== 304) before['content-length'] = String(plan.length);
  if (orig.location !== undefined && status >= 300 && status < 400) before.location = orig.location;
  before['memento-datetime'] = formatHttpDate(m.row.datetime);
  after.vary = 'prefer';
  // Stored pages never run as the archive: an opaque origin, and no type sniffing (a stored body is what it says it is).
  after['content-security-policy'] = MEMENTO_CSP;
  after['x-content-type-options'] = 'nosniff';
  after['preference-applied'] = preferenceApplied(m.prefer, m.originalContent, plan.changed);
  after['content-location'] = uris.memento(m.base, m.archiveId, m.row, m.originalContent);
  // Within the head budget: the own headers, then as many navigation links as fit, then as many echoed headers as fit.
  let left = HEAD_BUDGET - FIXED_HEAD_BYTES - bytesOf(before) - bytesOf(after) - OMITTED_LINE;
  const required: Link[] = [
    { uri: m.row.uri_r, rel: 'original' },
    { uri: uris.timegate(m.base, m.archiveId, m.uriR), rel: 'timegate' },
    { uri: uris.timemap(m.base, m.archiveId, m.uriR), rel: 'timemap', type: LINK_FORMAT },
  ];
  const link = linkWithin(
    left,
    required,
    LINK_DETAILS.map((d) => mementoLinks(m.base, m.archiveId, m.selection, m.raw, d)),
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
