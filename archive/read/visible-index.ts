/**
 * The index as the public sees it: the archive's {@link MementoIndex} read
 * through the access rules in force (archive/read/access-rules.ts), applied here and
 * nowhere else. Every read path — the redirector, TimeGates, Mementos,
 * TimeMaps, the record and receipt addresses, the CDX API, the `/web/`
 * pages, the exports — asks this object, so that a hidden memento cannot be
 * reached by forgetting a call: what it answers is only what the rules
 * show (`allow`), and the reasons for showing nothing are its own
 * ({@link VisibleIndex.absent}: 451 when something is blocked, else 404,
 * so that an excluded URL looks never captured).
 *
 * As pywb wraps its index iterator in an access checker, so one policy
 * per urlkey is made at the first row of it and every later row of that
 * urlkey asks it; the one-URL queries (navigation, spans, TimeMaps) are
 * limited to the shown spans of datetimes in the index's own query, so
 * that an excluded URL with many mementos costs what a never-captured one
 * costs.
 */
import { type HttpError, httpError } from '#shared/http-error.js';
import { formatLinkHeader } from '#shared/link.js';
import { type AccessRule, AccessRules, nowSeconds, subtractKeys, type UrlPolicy, type Verdict } from './access-rules.js';
import { type ArchiveSpan, isLocal } from '../spans.js';
import { cdxRows, type PlacedRow } from '../cdx/answer.js';
import type { CdxQuery } from '../cdx/query.js';
import type { CdxWalk } from '../store/index/cdx-walk.js';
import type { MementoIndex, TimemapRow } from '../store/index/memento-index.js';
import type { PanelCapture } from '../store/index/panel-query.js';
import type { MementoRow, Neighbourhood, Ranges, Spans } from '../store/index/memento-row.js';
import { nearer, type Period, type Selection, select } from './nearest.js';
import { VisiblePages } from './pages.js';
import { VisibleSearch } from './search.js';
import { VisibleFeeds } from './feeds.js';

/** The nearest shown memento of a URL in any local archive ({@link VisibleIndex.nearest}). */
export interface NearestMemento {
  archiveId: string;
  /** The chosen memento and its first/last/prev/next in that archive. */
  selection: Selection;
  /** The neighbourhood of that archive it was chosen from (its read-cache view keeps answers made from it). */
  neighbourhood: Neighbourhood;
}

/** The index through the access rules; see the module comment. One per daemon (or per command), cheap to ask. */
export class VisibleIndex {
  /**
   * @param index the archive's index (SQLite or PostgreSQL)
   * @param rules the access rules in force (replaced in place on SIGHUP)
   * @param archives the configured archives: {@link nearest} looks in the local ones
   */
  constructor(
    private readonly index: MementoIndex,
    private readonly rules: AccessRules,
    private readonly archives: readonly ArchiveSpan[] = [],
  ) {
    this.pages = new VisiblePages(index, rules);
    this.search = new VisibleSearch(index, (urlkey, datetime) => this.shows(urlkey, datetime));
    this.feeds = new VisibleFeeds(index, rules);
  }

  /** The `/web/` pages' queries (calendars, day lists, prefix lists, sites, counts) through the same rules. */
  readonly pages: VisiblePages;

  /** Full-text search and phrase history (archive/read/search.ts) through the same rules. */
  readonly search: VisibleSearch;
  /** The feeds' reads (new mementos of a URL or prefix, paged from the oldest) through the same rules. */
  readonly feeds: VisibleFeeds;

  /**
   * The index through `rules` (checked rules, archive/config.ts `access`),
   * put in force over `index`: the stored keys the rules name in their
   * folded form only are looked up first (archive/read/access-folded.ts). A
   * command that tests each row it reads may pass `lookUpFolded: false`
   * (each row is matched in its folded form too).
   * @throws UriError for a rule whose URL is not one (the config check prevents it); the index's errors
   */
  static async open(index: MementoIndex, rules: readonly AccessRule[], archives: readonly ArchiveSpan[] = [], lookUpFolded = true): Promise<VisibleIndex> {
    const access = lookUpFolded ? new AccessRules([], index) : new AccessRules(rules);
    if (lookUpFolded) await access.replace(rules);
    return new VisibleIndex(index, access, archives);
  }

  /** What the rules say of every memento of `urlkey`, now. */
  private policy(urlkey: string, now?: number): UrlPolicy {
    return this.rules.policy(urlkey, now);
  }

  /** True when the memento `urlkey` at `datetime` (epoch s) is shown, at `now` (epoch s, default the clock). */
  shows(urlkey: string, datetime: number, now?: number): boolean {
    return this.rules.verdict(urlkey, datetime, now) === 'allow';
  }

  /** The rules' verdict on the memento `urlkey` at `datetime` (epoch s): `allow`, `block` (451) or `exclude` (as never captured). */
  verdict(urlkey: string, datetime: number, now?: number): Verdict {
    return this.rules.verdict(urlkey, datetime, now);
  }

  /**
   * The navigation around `t` (epoch s) of `urlkey` in `archive` over the
   * shown mementos: first, last, and the two on each side (the index's
   * `neighbourhood`); with `whole`, `atOrBefore[0]` is the whole row.
   * `undefined` when none is shown there.
   */
  neighbourhood(archive: string, urlkey: string, t: number, whole = false): Promise<Neighbourhood | undefined> {
    const policy = this.policy(urlkey);
    if (policy.open) return this.index.neighbourhood(archive, urlkey, t, whole);
    return this.index.neighbourhoodWithin(archive, urlkey, t, policy.ranges('allow'), whole);
  }

  /** For each archive with shown mementos of `urlkey`: first and last datetime (epoch s) and count, archives in no fixed order. */
  spans(urlkey: string): Promise<Spans> {
    const policy = this.policy(urlkey);
    if (policy.open) return this.index.spans(urlkey);
    return this.index.spansWithin(urlkey, policy.ranges('allow'));
  }

  /** The shown mementos of `urlkey` in `archive`, oldest first, a page of rows at a time (a TimeMap); empty pages are skipped. */
  timemapPages(archive: string, urlkey: string): AsyncGenerator<TimemapRow[]> {
    return this.policy(urlkey).filterPages(this.index.mementoPages(archive, urlkey));
  }

  /**
   * The shown memento of `urlkey` nearest to `period` in any local archive
   * (archive/read/nearest.ts: the one rule), with its navigation in its
   * archive; `undefined` when no archive shows one. One neighbourhood per
   * archive holding the URL, from the read cache's views.
   */
  async nearest(urlkey: string, period: Period): Promise<NearestMemento | undefined> {
    const local = new Set(this.archives.filter(isLocal).map((a) => a.id));
    const spans = (await this.spans(urlkey)).filter((s) => local.has(s.archive_id));
    let best: NearestMemento | undefined;
    for (const s of spans) {
      const n = await this.neighbourhood(s.archive_id, urlkey, period.end);
      if (!n) continue;
      const selection = select(n, period);
      if (!best || nearer(selection.memento, best.selection.memento, period)) best = { archiveId: s.archive_id, selection, neighbourhood: n };
    }
    return best;
  }

  /**
   * The memento of `urlkey` in `archive` stored at exactly `datetime`
   * (epoch s), whole, when the rules show it; `block` when one is stored
   * there and the rules block it (451); `undefined` when none is stored or
   * the rules exclude it (the same answer).
   */
  async exact(archive: string, urlkey: string, datetime: number): Promise<MementoRow | 'block' | undefined> {
    const verdict = this.verdict(urlkey, datetime);
    if (verdict === 'exclude') return undefined;
    const row = await this.index.rowAt(archive, urlkey, datetime);
    if (!row) return undefined;
    return verdict === 'block' ? 'block' : row;
  }

  /**
   * The whole row of a memento this index named (a selection's
   * `memento.id`); `undefined` when it is gone (never while the daemon
   * runs: purge and reindex run without it) or the rules hide it now.
   */
  async row(id: number): Promise<MementoRow | undefined> {
    return this.ifShown(await this.index.byId(id));
  }

  /** The whole row of a capture this index listed (the pages' `Capture`: archive, urlkey, Memento-Datetime); `undefined` when it is gone or the rules hide it now. */
  async rowOf(c: Pick<MementoRow, 'archive_id' | 'urlkey' | 'datetime'>): Promise<MementoRow | undefined> {
    return this.ifShown(await this.index.rowAt(c.archive_id, c.urlkey, c.datetime));
  }

  /** `row` when the rules show it, else `undefined`. */
  private ifShown(row: MementoRow | undefined): MementoRow | undefined {
    return row && this.shows(row.urlkey, row.datetime) ? row : undefined;
  }

  /**
   * The answer kept with the read cache's view `view` (a neighbourhood's
   * `view`) under `key`, made when that view was current; `undefined`
   * when none (or no view). A write of the URL drops the view and its
   * answers; a neighbourhood of a URL the rules hide some of has no view
   * (it is read from the index each time), so no kept answer outlives a
   * rule that hides it.
   */
  kept<T>(view: object | undefined, key: string): T | undefined {
    return this.index.cache.answer<T>(view, key);
  }

  /** Keeps `answer` (about `bytes` long) with view `view` under `key`, for {@link kept}. */
  keep(view: object | undefined, key: string, answer: object, bytes: number): void {
    this.index.cache.keep(view, key, answer, bytes);
  }

  /** Whether a memento of `urlkey` is stored in `archive` at exactly `datetime` (epoch s) and the rules block it (a 451 for its address). */
  async blockedAt(archive: string, urlkey: string, datetime: number): Promise<boolean> {
    if (this.verdict(urlkey, datetime) !== 'block') return false;
    return (await this.index.neighbourhood(archive, urlkey, datetime))?.atOrBefore[0]?.datetime === datetime;
  }

  /**
   * Why nothing of `urlkey` is shown (in `archiveId`, or in any archive):
   * `block` when some memento of it is blocked, else `undefined` (never
   * captured, or excluded: the same answer). Asks the index only whether a
   * blocked memento exists (one row at most), never about excluded ones, so
   * that an excluded URL costs what a never-captured one costs, however many
   * mementos it has.
   */
  async whyHidden(urlkey: string, archiveId?: string): Promise<'block' | undefined> {
    const policy = this.policy(urlkey);
    if (policy.open) return undefined;
    const ranges = policy.ranges('block');
    if (!ranges.length) return undefined;
    return (await this.index.anyWithin(urlkey, ranges, archiveId)) ? 'block' : undefined;
  }

  /**
   * The error when nothing of `urlkey` is shown (in `archiveId`, or in any
   * archive): 451 ({@link blockedError}) when some memento is blocked, else
   * 404 with `notFound` as its reason (excluded = never captured).
   */
  async absent(urlkey: string, uriR: string, base: string, notFound: string, archiveId?: string): Promise<HttpError> {
    if ((await this.whyHidden(urlkey, archiveId)) === 'block') return blockedError(uriR, base);
    return httpError(404, notFound);
  }

  /**
   * The memento of `urlkey` in `archive` at `datetime` (epoch s) when it
   * may be named as the original of a revisit ({@link revisitTargetShown});
   * else `undefined` (not stored, or hidden: one answer for both).
   */
  async revisitTarget(archive: string, urlkey: string, datetime: number): Promise<MementoRow | undefined> {
    const row = await this.index.rowAt(archive, urlkey, datetime);
    return row && (await this.revisitTargetShown(row)) ? row : undefined;
  }

  /**
   * True when memento `row` may be named as the original of a revisit: the
   * rules show it at `now` (epoch s, default the clock), and, when it is
   * itself a revisit, the memento holding its payload too.
   */
  async revisitTargetShown(row: MementoRow, now?: number): Promise<boolean> {
    if (!this.shows(row.urlkey, row.datetime, now)) return false;
    if (row.refers_to === null) return true;
    const original = await this.index.byId(row.refers_to);
    return original !== undefined && this.shows(original.urlkey, original.datetime, now);
  }

  /** The datetimes of `urlkey` that are shown, as `[from, until)` spans (epoch s); `undefined` when every memento of it is. */
  shownRanges(urlkey: string): Ranges | undefined {
    const policy = this.policy(urlkey);
    return policy.open ? undefined : policy.ranges('allow');
  }

  /**
   * For each of `urlkeys`: the shown memento nearest to `t` (epoch s) in
   * any archive (the coherence panel's resources of a page replayed at
   * `t`), and whether another shown capture with another digest lies
   * strictly between it and `pageTime` among the first `between` there
   * (the index's `panel` query: two seeks per key, one statement per group
   * of keys the rules show the same datetimes of). At most `maxStatements`
   * groups: `upTo` is how many of `urlkeys` fit, in order.
   * @returns the rows found by place in `urlkeys` (a key with no shown memento is absent)
   */
  async nearestMany(
    urlkeys: readonly string[],
    t: number,
    pageTime: number,
    between: number,
    maxStatements: number,
  ): Promise<{ found: Map<number, PanelCapture>; upTo: number }> {
    // By the datetimes the rules show, as text (`''`: all; `[]`: none): the keys of one group share one statement.
    const groups = new Map<string, { within?: Ranges; members: number[] }>();
    let upTo = urlkeys.length;
    for (let i = 0; i < urlkeys.length; i++) {
      const within = this.shownRanges(urlkeys[i]);
      const group = within ? `[${within.map(([from, until]) => `${from} ${until}`).join(',')}]` : '';
      if (!groups.has(group) && groups.size >= maxStatements) {
        upTo = i;
        break;
      }
      if (!groups.has(group)) groups.set(group, { within, members: [] });
      groups.get(group)!.members.push(i);
    }
    const found = new Map<number, PanelCapture>();
    for (const { within, members } of groups.values()) {
      const rows = await this.index.panel.capturesAt(
        members.map((m) => urlkeys[m]),
        t,
        pageTime,
        between,
        within,
      );
      for (const r of rows) found.set(members[r.i], r);
    }
    return { found, upTo };
  }

  /**
   * The rows of a CDX query (archive/cdx/answer.ts `cdxRows`) that are
   * shown, in the answer's order: the walk limited as far as the index can
   * limit it — for one URL (`matchType=exact`, also `sort=closest`) to the
   * spans of datetimes shown (none at all when the URL is wholly hidden: an
   * excluded URL with many mementos is answered as fast as one never
   * captured); for many, to the urlkeys not wholly hidden and the rows the
   * rules show — and every row tested all the same (AccessRules `rowTest`), at
   * one `now` for the whole answer.
   */
  cdxRows(q: CdxQuery): AsyncGenerator<PlacedRow> {
    const now = nowSeconds();
    const listed = this.rules.rowTest(now);
    let limits: Pick<CdxWalk, 'within' | 'shown'> = {};
    if (q.matchType !== 'exact') {
      const hidden = this.rules.wholeHiddenKeys();
      if (hidden.length)
        q = {
          ...q,
          ranges: subtractKeys(
            q.ranges.map((r) => ({ from: r.from, to: r.to ?? r.from + '\0' })),
            hidden,
          ),
        };
      const shown = this.rules.shownRules(now);
      if (shown.length) limits = { shown };
    } else {
      const policy = this.policy(q.ranges[0].from, now);
      if (!policy.open) limits = { within: policy.ranges('allow') };
    }
    return filterPlaced(cdxRows(this.index, q, [], limits), listed);
  }

  /**
   * Puts `rules` in force (SIGHUP; AccessRules `replace`): read at once (a
   * bad one throws and the old rules stay), in force when the promise
   * resolves. @throws UriError for a URL that is not one
   */
  replaceRules(rules: readonly AccessRule[]): Promise<void> {
    return this.rules.replace(rules);
  }

  /** Counts the rule sets put in force: what was computed under other rules is stale. */
  get generation(): number {
    return this.rules.generation;
  }
}

/** The placed rows whose row `listed` lets through. */
async function* filterPlaced(rows: AsyncIterable<PlacedRow>, listed: (row: { urlkey: string; datetime: number }) => boolean): AsyncGenerator<PlacedRow> {
  for await (const p of rows) if (listed(p.row)) yield p;
}

/**
 * The answer for a blocked memento (RFC 7725): 451 Unavailable For Legal
 * Reasons, a one-line body naming the URL, and `Link: <{base}/>;
 * rel="blocked-by"` (the archive itself is what implements the block). No
 * Memento headers: it is not a Memento.
 */
export function blockedError(uriR: string, base: string): HttpError {
  return httpError(451, `the archive's access rules withhold the mementos of ${uriR} (451 Unavailable For Legal Reasons, RFC 7725)`, {
    headers: { link: formatLinkHeader([{ uri: base + '/', rel: 'blocked-by' }]) },
  });
}
