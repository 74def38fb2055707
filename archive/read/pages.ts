/**
 * What the pages for people (`/web/`) ask of the index, through the access
 * rules (archive/read/visible-index.ts): captures a rule hides are in no
 * count, date or list. Over every local archive at once (one timeline per
 * URI-R). Each query is one of the index's named queries, limited to the
 * spans of datetimes the rules show of the URL (or, for the whole index,
 * to the rows the rules show), so that the database does the counting.
 */
import type { AccessRules } from '../access.js';
import type { MementoIndex } from '../store/memento-index.js';
import {
  calendarSummary,
  type CalendarSummary,
  type Capture,
  captureCount,
  capturesBetween,
  daysOfYear,
  hasCaptureOf,
  nearestCapture,
  type Nearest,
  recentCaptures,
  type Site,
  sites,
  urlsOfDomain,
  urlsUnder,
  type UrlUnderPrefix,
} from '../web/queries.js';
import type { Period } from './nearest.js';

export type { CalendarSummary, Capture, Nearest, Site, UrlUnderPrefix };

/** The `/web/` pages' queries through the access rules; one per daemon (VisibleIndex `pages`). */
export class VisiblePages {
  constructor(
    private readonly index: MementoIndex,
    private readonly rules: AccessRules,
  ) {}

  /** The shown captures of `urlkey` per year and month (a calendar); `undefined` when none is shown. */
  calendar(urlkey: string): Promise<CalendarSummary | undefined> {
    return calendarSummary(this.index, urlkey, this.rules.policy(urlkey));
  }

  /** The shown captures of `urlkey` per day of `year` (UTC): `"MM-DD"` → count. */
  daysOfYear(urlkey: string, year: number): Promise<Map<string, number>> {
    return daysOfYear(this.index, urlkey, year, this.rules.policy(urlkey));
  }

  /** The shown captures of `urlkey` with `from <= datetime < to` (epoch s), oldest first (at most DAY_LIMIT), and the datetime of the shown one before `from`. */
  capturesBetween(urlkey: string, from: number, to: number): Promise<{ captures: Capture[]; before?: number }> {
    return capturesBetween(this.index, urlkey, from, to, this.rules.policy(urlkey));
  }

  /** The shown capture of `urlkey` nearest to `period` (archive/read/nearest.ts), with its first, last, previous and next; `undefined` when none is shown. */
  nearest(urlkey: string, period: Period): Promise<Nearest | undefined> {
    return nearestCapture(this.index, urlkey, period.end, this.rules.policy(urlkey), period.start);
  }

  /** Whether `urlkey` has a shown capture whose URI-R is exactly `uriR` (its scheme included). */
  hasCaptureOf(urlkey: string, uriR: string): Promise<boolean> {
    return hasCaptureOf(this.index, urlkey, uriR, this.rules.policy(urlkey));
  }

  /**
   * A page of the URLs under a urlkey prefix (`domain`: of the domain of
   * `urlkey`, web/queries.ts `urlsOfDomain`), in urlkey order after
   * `after`, as the rules let them be shown: counts and dates over the
   * shown captures, a URL with none left out. Reads until `pageSize` URLs
   * and one more are shown, so that the page is full and its cursor is the
   * last URL it shows (never a hidden one).
   * @returns the page and whether more URLs follow it
   */
  async urlsUnder(urlkey: string, domain: boolean, after: string, pageSize: number): Promise<{ page: UrlUnderPrefix[]; more: boolean }> {
    const list = (at: string) => (domain ? urlsOfDomain(this.index, urlkey, at, pageSize + 1) : urlsUnder(this.index, urlkey, at, pageSize + 1));
    const page: UrlUnderPrefix[] = [];
    let more = false;
    for (let at = after; !more;) {
      const rows = await list(at);
      for (const r of rows) {
        const shown = await this.shownUrl(r);
        if (!shown) continue;
        if (page.length === pageSize) {
          more = true;
          break;
        }
        page.push(shown);
      }
      if (rows.length <= pageSize) break;
      at = rows[rows.length - 1].urlkey;
    }
    return { page, more };
  }

  /** A URL of a prefix list as the rules let it be shown: counts and dates of its shown captures; `undefined` when none is. */
  private async shownUrl(r: UrlUnderPrefix): Promise<UrlUnderPrefix | undefined> {
    const policy = this.rules.policy(r.urlkey);
    if (policy.open) return r;
    const spans = await this.index.spansWithin(r.urlkey, policy.ranges('allow'));
    const n = spans.reduce((a, x) => a + x.n, 0);
    return n ? { ...r, n, first: Math.min(...spans.map((x) => x.first)), last: Math.max(...spans.map((x) => x.last)) } : undefined;
  }

  /** Every archived site with shown captures, most captures first (at most `limit`): a scan of the whole urlkey index (callers cache it). */
  sites(limit: number): Promise<Site[]> {
    return sites(this.index, limit, this.rules.shownSql());
  }

  /** The `limit` shown captures indexed last, newest first. */
  recent(limit: number): Promise<Capture[]> {
    return recentCaptures(this.index, limit, this.rules.shownSql());
  }

  /** How many captures are shown, in every archive. */
  count(): Promise<number> {
    return captureCount(this.index, this.rules.shownSql());
  }
}
