/**
 * Shared pieces of the Memento conformance suite (RFC 7089 and the Prefer
 * rules of docs/architecture.md): seeding captures through the real PUT path, reading Link
 * headers, and comparing a HEAD answer with the GET answer.
 */
import type { Test } from 'tap';
import { formatHttpDate, parseHttpDate } from '#shared/http-date.js';
import { type Link, parseLinks } from '#shared/link.js';
import { type Answer, type CaptureParts, captureRecord, putCapture, request, startArchive, type TestArchive } from '../helpers/archive.js';

export { formatHttpDate };

/**
 * Two archive daemons for the redirector's cases: B, a remote one
 * (archives `old` until 2000, `later`), and A, whose archive `old`
 * (1990-2000) is B's TimeGate, with local archives `2000s` (2000-2026) and
 * `current` (2026-2030). Both closed at the end of `t`.
 */
export async function archivesWithRemote(t: Test): Promise<{ A: TestArchive; B: TestArchive }> {
  const B = await startArchive(`archives:
    - id: old
      until: 2000-01-01T00:00:00Z
    - id: later
      from: 2000-01-01T00:00:00Z
  `);
  t.teardown(() => B.close());
  const A = await startArchive(`archives:
    - id: old
      from: 1990-01-01T00:00:00Z
      until: 2000-01-01T00:00:00Z
      timegate: ${B.url}/old/timegate/
    - id: "2000s"
      from: 2000-01-01T00:00:00Z
      until: 2026-01-01T00:00:00Z
    - id: current
      from: 2026-01-01T00:00:00Z
      until: 2030-01-01T00:00:00Z
  `);
  t.teardown(() => A.close());
  return { A, B };
}

/** Epoch seconds of an IMF-fixdate (throws on a bad one: a test bug). */
export function epoch(httpDate: string): number {
  const d = parseHttpDate(httpDate);
  if (!d) throw new Error('bad date in test: ' + httpDate);
  return Math.floor(d.getTime() / 1000);
}

/** 14-digit timestamp of an IMF-fixdate. */
export function ts14(httpDate: string): string {
  return new Date(epoch(httpDate) * 1000).toISOString().replace(/[-:T]/g, '').slice(0, 14);
}

/** URI-R → `{host, target}` of its embedded request. */
export function partsOf(uriR: string): { host: string; target: string; requestHeaders?: [string, string][] } {
  const u = new URL(uriR);
  return { host: u.host, target: u.pathname + u.search, ...(u.protocol === 'https:' ? { requestHeaders: [['X-Forwarded-Proto', 'https']] } : {}) };
}

/**
 * PUTs one capture of `uriR` dated `date` (IMF-fixdate) and checks that the
 * archive made a new memento (201).
 */
export async function seed(archive: TestArchive, uriR: string, date: string, parts: CaptureParts = {}): Promise<Answer> {
  const res = await putCapture(
    archive,
    uriR,
    captureRecord({ ...partsOf(uriR), date, body: `<html><head><title>${date}</title></head><body>${uriR} at ${date}</body></html>`, ...parts }),
  );
  if (res.status !== 201) throw new Error(`seeding ${uriR} at ${date}: ${res.status} ${res.text}`);
  return res;
}

/** The links of a Link header (or link-format body). */
export function links(value: string | string[] | undefined): Link[] {
  if (value === undefined) return [];
  return parseLinks(Array.isArray(value) ? value.join(', ') : value);
}

/** The one link whose rel is exactly `rel` (space-separated relation types, in any order). */
export function byRel(list: Link[], rel: string): Link[] {
  const want = rel.split(' ').sort().join(' ');
  return list.filter((l) => l.rel.split(/\s+/).sort().join(' ') === want);
}

/** Response headers that depend on the moment or the connection, not on the resource. */
const TRANSIENT = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding']);

/**
 * RFC 9110 §9.3.2: HEAD answers exactly as GET without the body. Requests
 * both and compares status and every header but Date and the framing ones
 * (Transfer-Encoding: a HEAD answer has no body to frame).
 *
 * @returns the GET answer
 */
export async function headMatchesGet(t: Test, url: string, headers: Record<string, string> = {}): Promise<Answer> {
  const get = await request(url, { headers });
  const head = await request(url, { method: 'HEAD', headers });
  t.equal(head.status, get.status, `HEAD ${url}: same status as GET`);
  const strip = (h: Answer['headers']) => Object.fromEntries(Object.entries(h).filter(([k]) => !TRANSIENT.has(k)));
  t.same(strip(head.headers), strip(get.headers), `HEAD ${url}: same headers as GET`);
  t.equal(head.body.length, 0, 'HEAD has no body');
  return get;
}

/** Asserts that an answer carries no Memento headers (RFC 7089: an error is not a Memento, TimeGate or TimeMap). */
export function noMementoHeaders(t: Test, res: Answer, what: string): void {
  t.notOk(res.headers['memento-datetime'], `${what}: no Memento-Datetime`);
  t.notOk(res.headers.link, `${what}: no Link`);
  t.notOk(res.headers.vary, `${what}: no Vary`);
}

/** The element an archival replay puts first in a page's head: the archive's replay script, told the page's datetime. */
export function replayScript(base: string, httpDate: string): string {
  return `<script src="${base}/_static/replay.js" data-memento-datetime="${ts14(httpDate)}"></script>`;
}

/** The `ol_` (original links) URI-M of a URI-M: `/<ts>/` → `/<ts>ol_/`. */
export function olOf(uriM: string): string {
  return uriM.replace(/\/memento\/(\d{14})\//, '/memento/$1ol_/');
}
