/**
 * What a Memento answer applies of Prefer (RFC 7240 §3 Preference-Applied;
 * the Prefer rules of docs/architecture.md "Replay and Prefer"), decided in
 * one place for both who say it: the Memento (response.ts), which serves
 * the form, and the TimeGate (archive/http/timegate.ts), which names the
 * URI-M of that form with the Preference-Applied it will answer with
 * (Prefer rule 8). Both go through {@link decidePreferenceApplied}, so that
 * they cannot differ.
 */
import type { ReplayOptions } from '../replay/replay.js';
import { archiveUrl, type ReplayTarget, rewriteRefresh } from '../replay/urls.js';
import type { MementoRow } from '../store/index/index-db.js';
import { planBody, type ReadRecord } from './body.js';
import type { DecodeOptions } from '../replay/content-coding.js';
import { isRedirect, mementoLocation } from './location.js';
import { originalHeaders } from './original-headers.js';
import { type MementoForm, type PreferRequest, preferenceApplied } from './prefer.js';
import type { BodyChanges } from '../replay/cache.js';

/** The stored status and the stored values of the headers a Memento answer acts on (original-headers.ts `originalHeaders`). */
export interface StoredHead {
  status: number;
  /** The stored `Location`, as `originalHeaders` gives it; `undefined` for none. */
  location?: string;
  /** The stored `Refresh`, as `originalHeaders` gives it; `undefined` for none. */
  refresh?: string;
}

/** What a Memento answer in one form applies of Prefer, and the headers that depend on it. */
export interface AppliedPreferences {
  /** The Preference-Applied value (Prefer rules 3, 4, 6; prefer.ts `preferenceApplied`). */
  preferenceApplied: string;
  /** How the answer differs from the stored response: its body, and a URI rewritten in its body, `Location` or `Refresh`. */
  changes: BodyChanges;
  /** The `Location` to send (a 3xx, in every form: location.ts); `undefined` for none. */
  location?: string;
  /** The `Refresh` to send (the replay form only, when it names a URL: rewritten into the archive); `undefined` for none. */
  refresh?: string;
}

/**
 * Decides what a Memento answer in `form` applies of `prefer`: the
 * Preference-Applied value, from how its body changed and how its headers
 * did (a 3xx's `Location` into the archive in every form, location.ts; in
 * the replay form a `Refresh` that names a URL, rewritten into the archive
 * as a browser follows it), with those headers as they are sent. The one
 * decision of Preference-Applied: the Memento and the TimeGate both call it.
 *
 * @param body how the body differs from the stored one (body.ts `planBody`)
 * @param stored the stored status, Location and Refresh
 * @param target the archive, and the time (14 digits) the answer's URIs are rewritten at
 * @param uriR the memento's URI-R (relative URLs resolve against it)
 */
export function decidePreferenceApplied(
  prefer: PreferRequest,
  form: MementoForm,
  body: BodyChanges,
  stored: StoredHead,
  target: ReplayTarget,
  uriR: string,
): AppliedPreferences {
  let links = body.links;
  let location: string | undefined;
  let refresh: string | undefined;
  if (stored.location !== undefined && isRedirect(stored.status)) {
    // Every form redirects only within the archive (location.ts); the stored value is X-Archive-Orig-Location.
    const out = mementoLocation(target, form, stored.location, uriR);
    location = out.location;
    links ||= out.changed;
  }
  if (stored.refresh !== undefined && form === 'replay') {
    // A Refresh header is followed as a browser follows a 3xx: in the replay, into the archive (and only there).
    const rewritten = rewriteRefresh(stored.refresh, (u) => archiveUrl(target, u, uriR));
    if (rewritten !== null && rewritten !== stored.refresh) {
      refresh = rewritten;
      links = true;
    }
  }
  const changes = { content: body.content, links };
  return { preferenceApplied: preferenceApplied(prefer, form, changes), changes, location, refresh };
}

/**
 * What the Memento of `row` in `form` will apply of `prefer` (a TimeGate's
 * Preference-Applied, Prefer rule 8), with the changes and headers it is
 * decided on: {@link decidePreferenceApplied}
 * on the stored record, whose body is worked out as the Memento does it
 * (and as cheaply: a content-coded page is decoded only as far as the
 * Memento decodes before its head; an HTML page is not rewritten, since its
 * replay always changes it). The raw form of a response that is not a 3xx
 * is not read: it changes neither body nor headers.
 *
 * @param row the memento; `undefined` when it is gone (purged since it was chosen): then what an unchanged answer applies
 * @param target the archive, and the memento's time (14 digits)
 * @param replay where a stylesheet's rewrite runs when it does not fit in a slice of the event loop
 * @throws HttpError 503 when that rewrite cannot be done now (replay.ts); what `read` throws
 */
export async function predictPreferenceApplied(
  row: MementoRow | undefined,
  prefer: PreferRequest,
  form: MementoForm,
  read: ReadRecord,
  target: ReplayTarget,
  decode: DecodeOptions = {},
  replay: ReplayOptions = {},
): Promise<AppliedPreferences> {
  const unchanged = { content: false, links: false };
  if (!row) return decidePreferenceApplied(prefer, form, unchanged, { status: 200 }, target, '');
  if (form === 'raw' && !isRedirect(row.status)) return decidePreferenceApplied(prefer, form, unchanged, { status: row.status }, target, row.uri_r);
  const stored = await read(row);
  const orig = originalHeaders(stored);
  const plan = await planBody(row, stored, form, read, target, orig.contentType, decode, { ...replay, changesOnly: true });
  plan.close();
  const head = { status: plan.stored.status, location: orig.location, refresh: orig.refresh };
  return decidePreferenceApplied(prefer, form, plan.changes, head, target, row.uri_r);
}
