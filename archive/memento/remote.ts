/**
 * The client of remote archives (another host's TimeGate and TimeMap,
 * RFC 7089 §4.2 and §5): asked by the redirector and the index TimeMap when
 * the choice depends on them. Node's built-in fetch, each request bounded
 * by `AbortSignal.timeout`; any failure is an `unknown` holding, never an
 * error.
 */
import { parseHttpDate, toEpochSeconds } from '#shared/http-date.js';
import { hasRel, parseLinks } from '#shared/link.js';
import type { Holding } from './choice.js';

/** How long the redirector and the index TimeMap wait for a remote archive, ms. */
export const REMOTE_TIMEOUT_MS = 3000;

/** Most bytes of a remote TimeMap read while looking for its `self` link. */
const SELF_LINK_WINDOW = 64 * 1024;

/**
 * Asks a remote TimeGate whether it has a URI-R: `HEAD <timegate URL>`
 * with the client's Accept-Datetime when given (RFC 7089 §4.2.1: 302 = it
 * has mementos, 404/410 = none). The memento links of its answer are kept,
 * for the redirector to pass on, with the datetimes of its `first` and
 * `last` links and its `Location` (the URI-M it chose).
 *
 * @param url the remote TimeGate address of the URI-R
 * @returns `yes` (with links, first/last and location when it sent them), `no`, or `unknown` (no answer in time, or another status)
 */
export async function probeTimegate(url: string, acceptDatetime?: string, timeoutMs = REMOTE_TIMEOUT_MS): Promise<Holding> {
  try {
    const res = await fetch(url, {
      method: 'HEAD',
      redirect: 'manual',
      headers: acceptDatetime ? { 'accept-datetime': acceptDatetime } : {},
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (res.status === 404 || res.status === 410) return { state: 'no' };
    if (res.status >= 400) return { state: 'unknown' };
    const link = res.headers.get('link');
    const links = link ? parseLinks(link).filter((l) => hasRel(l, 'memento')) : [];
    const h: Holding = { state: 'yes', links };
    const location = res.headers.get('location');
    if (location) h.location = new URL(location, url).href;
    for (const rel of ['first', 'last'] as const) {
      const d = links.find((l) => hasRel(l, rel))?.datetime;
      const date = d === undefined ? undefined : parseHttpDate(d);
      if (date) h[rel] = toEpochSeconds(date);
    }
    return h;
  } catch {
    return { state: 'unknown' };
  }
}

/**
 * The span of a remote archive's mementos of a URI-R: `GET` of its
 * link-format TimeMap, read only as far as its `self` link (RFC 7089 §5:
 * `from`/`until` bound the mementos); the rest is not downloaded.
 *
 * @param url the remote TimeMap address of the URI-R
 * @returns `yes` with first/last when the self link says them (`yes`
 *   alone when it does not), `no` for 404/410, `unknown` otherwise
 */
export async function timemapSpan(url: string, timeoutMs = REMOTE_TIMEOUT_MS): Promise<Holding> {
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const res = await fetch(url, { redirect: 'manual', signal });
    if (res.status === 404 || res.status === 410) return { state: 'no' };
    if (res.status !== 200 || !res.body) {
      await res.body?.cancel();
      return { state: 'unknown' };
    }
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let text = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
        const span = selfSpan(text);
        if (span) return { state: 'yes', ...span };
        if (text.length > SELF_LINK_WINDOW) break;
      }
    } finally {
      await reader.cancel().catch(() => undefined);
    }
    return { state: 'yes' };
  } catch {
    return { state: 'unknown' };
  }
}

/** `from`/`until` of the `self` link in (the start of) a link-format TimeMap, as epoch seconds. */
function selfSpan(text: string): { first: number; last: number } | undefined {
  const self = parseLinks(text).find((l) => hasRel(l, 'self') && l.from !== undefined && l.until !== undefined);
  const from = self && parseHttpDate(self.from);
  const until = self && parseHttpDate(self.until);
  return from && until ? { first: toEpochSeconds(from), last: toEpochSeconds(until) } : undefined;
}
