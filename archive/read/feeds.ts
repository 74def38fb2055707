/**
 * What the Atom feeds of changes (`/feed/`, archive/feed/routes.ts) read
 * of the index, through the access rules (a memento they hide is in no
 * feed, no count and no page number): the new mementos of a URL or of the
 * URLs under a prefix (a revisit is no change), cut into pages counted
 * from the oldest, as RFC 5005 §4 archive documents.
 *
 * The entries are numbered 1, 2, … oldest first by Memento-Datetime (then
 * by index row). Archive page `p` holds entries `(p − 1) × pageSize + 1`
 * to `p × pageSize`, and exists once it is full: a memento that arrives
 * later (it is newer) takes a higher number and never moves an entry of a
 * full page. The subscription document holds the newest `pageSize`
 * entries (some of them may also be in the newest archive page). What
 * does renumber entries, and so changes archive pages: an import of
 * mementos older than the newest one, a purge, and a change of the access
 * rules (docs/http-api.md says so).
 *
 * Cost: each request examines at most {@link FEED_ROWS_EXAMINED} rows of
 * the index range of a URL, {@link FEED_PREFIX_ROWS_EXAMINED} of a prefix
 * (a count, then one query of the page's rows in order, and for a prefix a
 * seek per URL on the page); a URL or prefix with more captures is refused
 * with a 400.
 */
import { httpError } from '#shared/http-error.js';
import type { AccessRules } from './access-rules.js';
import type { FeedRange, FeedRow } from '../store/index/feed-queries.js';
import type { MementoIndex } from '../store/index/memento-index.js';

export type { FeedRow };

/** Entries per feed document (the subscription document and each archive page). */
export const FEED_PAGE = 50;

/** Most index rows the rules show (new mementos and revisits) one feed request of one URL examines; hidden rows are never counted. */
export const FEED_ROWS_EXAMINED = 100_000;

/** Most index rows a feed request of a prefix examines (its page sorts the rows of every URL under it). */
export const FEED_PREFIX_ROWS_EXAMINED = 25_000;

/** One feed document's entries and where it stands among the pages. */
export interface FeedDocument {
  /** Entries of the whole feed (new mementos shown). */
  total: number;
  /** Full archive pages (1 … `archives`); none while the feed has fewer than a page of entries. */
  archives: number;
  /** This document's entries, newest first. */
  entries: FeedRow[];
}

/** The feeds' reads through the access rules; one per daemon (VisibleIndex `feeds`). */
export class VisibleFeeds {
  constructor(
    private readonly index: MementoIndex,
    private readonly rules: AccessRules,
  ) {}

  /**
   * A document of the feed of `urlkey` (with `prefix`, of every urlkey that
   * starts with it): the subscription document (`page` undefined: the
   * newest `pageSize` entries) or the archive page `page` (from 1).
   * @param limits a test's smaller page or budget
   * @throws HttpError 400 when the range holds more than `examine` rows; 404
   *   for an archive page that is not full yet or does not exist
   */
  async document(urlkey: string, prefix: boolean, page: number | undefined, limits: { pageSize?: number; examine?: number } = {}): Promise<FeedDocument> {
    const pageSize = limits.pageSize ?? FEED_PAGE;
    const examine = limits.examine ?? (prefix ? FEED_PREFIX_ROWS_EXAMINED : FEED_ROWS_EXAMINED);
    const range = this.range(urlkey, prefix);
    const { examined, entries: total } = await this.index.feeds.count(range, examine + 1);
    if (examined > examine)
      throw httpError(
        400,
        `a feed reads at most ${examine} captures and ${prefix ? 'this prefix' : 'this URL'} has more; ask for a narrower prefix, or see /cdx for the whole list`,
      );
    const archives = Math.floor(total / pageSize);
    if (page !== undefined && (page < 1 || page > archives))
      throw httpError(404, `this feed has ${archives ? `archive pages 1 to ${archives}` : 'no archive page yet'}; page ${page} is not one of them`);
    const [first, last] = page === undefined ? [Math.max(1, total - pageSize + 1), total] : [(page - 1) * pageSize + 1, page * pageSize];
    const entries = total ? await this.index.feeds.entries(range, first, last) : [];
    return { total, archives, entries };
  }

  /** The urlkeys of a feed and what the rules show of them. */
  private range(urlkey: string, prefix: boolean): FeedRange {
    if (prefix) return { key: urlkey, prefix, shown: this.rules.shownRules() };
    const policy = this.rules.policy(urlkey);
    return { key: urlkey, prefix, within: policy.open ? undefined : policy.ranges('allow') };
  }
}
