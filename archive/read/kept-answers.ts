/**
 * Whole answers of the hot reads (a TimeGate's 302, a Memento's 200 whose
 * body is in memory), kept with the read cache's view of the URL they were
 * made from (archive/store/read-cache.ts `answer`, `keep`, reached through
 * the visible index), so that the next request that asks the same is
 * answered without choosing, linking or assembling again.
 *
 * Never stale: a kept answer lives as long as its URL's view stays in the
 * read cache, which a write of the URL drops before the capture's PUT is
 * answered (read-after-write), and a view exists only for a URL the access
 * rules leave open (asked per request, so a SIGHUP that changes the rules
 * applies to the next request). What else the answer depends on (the
 * memento chosen, the form, Prefer, the base URL from Host, the URI-R as
 * the request spelt it, the time a replay's URLs are rewritten at) is in
 * its key (reader.ts). HEAD and GET share an answer: the route leaves the
 * body out for HEAD.
 */
import type { Answer, HeaderValues } from './answer.js';
import type { VisibleIndex } from './visible-index.js';

/** The largest body an answer is kept with (bytes); a larger answer is made for each request. */
export const MAX_KEPT_BODY = 64 * 1024;

/** An answer as kept: its head, and its body, or where another cache holds it. Given out as it is: never changed. */
interface Kept extends Answer {
  body: Buffer | null;
  /** Where the body is found when the record cache or the replay cache holds it; `undefined` when it no longer does. */
  source?: () => Buffer | undefined;
}

/** The answers kept with the read cache's views. */
export class KeptAnswers {
  constructor(private readonly visible: Pick<VisibleIndex, 'kept' | 'keep'>) {}

  /**
   * The answer kept with `view` under `key`; `undefined` when none is, or
   * its body was in another cache that has since let it go (then the
   * answer is made again).
   */
  get(view: object | undefined, key: string): Answer | undefined {
    const k = this.visible.kept<Kept>(view, key);
    if (!k?.source) return k;
    const body = k.source();
    return body ? { status: k.status, headers: k.headers, body } : undefined;
  }

  /**
   * Keeps `answer` (a body in memory, or none) with `view` under `key`,
   * which names everything besides the view the answer depends on. An
   * answer with a body over {@link MAX_KEPT_BODY} is not kept.
   *
   * @param source where the body is found later when another cache holds it (then it is not held here too)
   */
  keep(view: object | undefined, key: string, answer: { status: number; headers: HeaderValues; body: Buffer | null }, source?: () => Buffer | undefined): void {
    const { status, headers, body } = answer;
    if (!view || (body && body.length > MAX_KEPT_BODY)) return;
    // An estimate of its heap bytes: the head (header strings are latin-1, a byte a character in V8), and the body it holds.
    let bytes = 128 + (body && !source ? body.length : 0);
    for (const name of Object.keys(headers)) {
      const value = headers[name];
      if (value === undefined) continue;
      for (const v of Array.isArray(value) ? value : [value]) bytes += name.length + v.length + 32;
    }
    this.visible.keep(view, key, source ? { status, headers, body: null, source } : { status, headers, body }, bytes);
  }
}
