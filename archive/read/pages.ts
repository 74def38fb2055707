/**
 * What the pages for people (`/web/`) ask of the index, through the access
 * rules (archive/read/visible-index.ts): captures a rule hides are in no
 * count, date or list. Over every local archive at once (one timeline per
 * URI-R, whichever archive holds each memento), shaped for the pages. The
 * index's named queries (archive/store/index/page-queries.ts, the index's
 * `pages`) do the counting, each one grouped scan or a few seeks of the
 * `(urlkey, datetime)` index, so a calendar of 100,000 captures costs one
 * index range scan. A query of one URL is limited to the spans of
 * datetimes the rules show of it (the statement then varies with the rules
 * and is not kept); a query over the whole index to the rows the rules
 * show (AccessRules `shownRules`).
 */
import type { AccessRules } from './access-rules.js';
import { urlkeyRanges } from '../cdx/query.js';
import { CursorSeal } from './cursor.js';
import type { Capture, UrlSummary } from '../store/index/page-queries.js';
import type { MementoIndex } from '../store/index/memento-index.js';
import type { Ranges } from '../store/index/memento-row.js';
import { type Period, select } from './nearest.js';

export type { Capture };

/** Captures per year of one URI-R, with its first and last Memento-Datetime (epoch s). */
export interface CalendarSummary {
  total: number;
  first: number;
  last: number;
  /** Oldest year first; `months[m]` is the count in month m (0 = January). */
  years: { year: number; n: number; months: number[] }[];
}

/** The capture nearest to a time with its neighbours on the one timeline of all archives (RFC 7089 §2.2.1 terms). */
export interface Nearest {
  memento: Capture;
  first: Capture;
  last: Capture;
  prev?: Capture;
  next?: Capture;
}

/** One archived URL under a prefix (its count and first/last Memento-Datetime, epoch s). */
export type UrlUnderPrefix = UrlSummary;

/** One archived site (host and port as in the urlkey). */
export interface Site {
  /** The host as people write it (`www.example.org:8080`). */
  host: string;
  urls: number;
  captures: number;
  last: number;
}

/** Most captures one day lists. */
export const DAY_LIMIT = 1000;

/**
 * Most URLs of the index {@link VisiblePages.urlsUnder} examines for one
 * page, per URL the page shows (400 for the `/web/` prefix page's 100):
 * past them it stops and offers the rest from a cursor. A shown URL costs
 * no query of its own unless rules hide some of its captures; a URL hidden
 * by date costs one.
 */
export const URLS_EXAMINED_PER_SHOWN = 4;

/** The host of a urlkey's SURT host part: `org,example,www:8080` → `www.example.org:8080` (IP literals as they are). */
export function hostOfSurt(surtHost: string): string {
  const colon = surtHost.startsWith('[') ? surtHost.indexOf(']:') + 1 : surtHost.lastIndexOf(':');
  const name = colon > 0 ? surtHost.slice(0, colon) : surtHost;
  const port = colon > 0 ? surtHost.slice(colon) : '';
  if (name.startsWith('[')) return name + port;
  return name.split(',').reverse().join('.') + port;
}

/** The `/web/` pages' queries through the access rules; one per daemon (VisibleIndex `pages`). */
export class VisiblePages {
  /**
   * @param index the archive's index
   * @param rules the access rules in force
   * @param cursors seals {@link urlsUnder}'s cursors among hidden URLs: a
   *   key of this object's own (one per daemon) unless a test gives one
   */
  constructor(
    private readonly index: MementoIndex,
    private readonly rules: AccessRules,
    private readonly cursors: CursorSeal = new CursorSeal(),
  ) {}

  /** The datetimes of `urlkey` the rules show, as spans (epoch s); `undefined` when they show every memento of it. */
  private within(urlkey: string): Ranges | undefined {
    const policy = this.rules.policy(urlkey);
    return policy.open ? undefined : policy.ranges('allow');
  }

  /** The shown captures of `urlkey` per year and month, across archives; `undefined` when none is shown. One grouped scan. */
  async calendar(urlkey: string): Promise<CalendarSummary | undefined> {
    const rows = await this.index.pages.months(urlkey, this.within(urlkey));
    if (!rows.length) return undefined;
    const years = new Map<number, { year: number; n: number; months: number[] }>();
    for (const r of rows) {
      const year = Number(r.month.slice(0, 4));
      let y = years.get(year);
      if (!y) years.set(year, (y = { year, n: 0, months: new Array<number>(12).fill(0) }));
      y.n += r.n;
      y.months[Number(r.month.slice(5, 7)) - 1] = r.n;
    }
    return {
      total: rows.reduce((a, r) => a + r.n, 0),
      first: Math.min(...rows.map((r) => r.first)),
      last: Math.max(...rows.map((r) => r.last)),
      years: [...years.values()],
    };
  }

  /** The shown captures of `urlkey` per day of `year` (four digits, UTC): `"MM-DD"` → count. */
  daysOfYear(urlkey: string, year: number): Promise<Map<string, number>> {
    return this.index.pages.days(urlkey, Date.UTC(year, 0, 1) / 1000, Date.UTC(year + 1, 0, 1) / 1000, this.within(urlkey));
  }

  /**
   * The shown captures of `urlkey` in `[from, to)` (epoch s), oldest first,
   * at most {@link DAY_LIMIT}; and the Memento-Datetime of the shown capture
   * just before `from` (for "compare with previous" on the first one).
   */
  async capturesBetween(urlkey: string, from: number, to: number): Promise<{ captures: Capture[]; before?: number }> {
    const within = this.within(urlkey);
    const captures = await this.index.pages.between(urlkey, from, to, DAY_LIMIT, within);
    return { captures, before: await this.index.pages.before(urlkey, from, within) };
  }

  /**
   * The shown capture of `urlkey` nearest to `period` across every local
   * archive (archive/read/nearest.ts: the one rule), with the first, last,
   * previous and next; `undefined` when none is shown. Four index seeks.
   */
  async nearest(urlkey: string, period: Period): Promise<Nearest | undefined> {
    const around = await this.index.pages.around(urlkey, period.end, this.within(urlkey));
    return around && select(around, period);
  }

  /** Whether `urlkey` has a shown capture whose URI-R is exactly `uriR` (the scheme included, which the urlkey leaves out). */
  hasCaptureOf(urlkey: string, uriR: string): Promise<boolean> {
    return this.index.pages.hasUriR(urlkey, uriR, this.within(urlkey));
  }

  /**
   * A page of the URLs whose urlkey starts with `urlkey` (`domain`: of the
   * domain of `urlkey` — its host, any port of it, every subdomain), in
   * urlkey order after the cursor `after` (keyset paging; `''`: from the
   * first), as the rules let them be shown: counts and dates over the
   * shown captures, a URL with none left out. Reads until `pageSize` URLs
   * and one more are shown, so that the page is full and its cursor is the
   * last URL it shows, as it is — or until it has examined
   * {@link URLS_EXAMINED_PER_SHOWN} × `pageSize` URLs of the index (at least
   * `pageSize` + 1): a URL the rules hide by date costs a query of its
   * captures, so a long run of hidden URLs would otherwise cost a query
   * each for one request. Cut short so, the page holds the URLs shown
   * among those examined (maybe none), `more` is true and `next` goes on
   * after the last URL examined: its urlkey as it is when that URL is
   * shown, else sealed (archive/read/cursor.ts: opaque, good as long as
   * this object, the daemon's), so that no cursor spells any part of a
   * hidden urlkey. At most that many URLs examined, as many queries of
   * captures, and one list query per `pageSize` + 1 of them and one more.
   * @param after a cursor (cursor.ts): a urlkey, or a sealed one this
   *   method made for the same list
   * @param pageSize URLs a page shows, at least 1
   * @returns the page; whether more URLs may follow it; when they may,
   *   `next`: the `after` of the next page
   * @throws HttpError 400 (cursor.ts `CURSOR_EXPIRED`) for a sealed `after`
   *   that does not open; the index's errors
   */
  async urlsUnder(urlkey: string, domain: boolean, after: string, pageSize: number): Promise<{ page: UrlUnderPrefix[]; more: boolean; next?: string }> {
    const host = domain ? urlkeyRanges(urlkey, 'domain')[0].from.slice(0, -1) : '';
    const list = (at: string) => (domain ? this.index.pages.ofDomain(host, at, pageSize + 1) : this.index.pages.under(urlkey, at, pageSize + 1));
    // A sealed cursor belongs to one list: opened for another, it is refused.
    const listName = `${domain ? 'domain' : 'prefix'} ${urlkey}`;
    const from = this.cursors.open(after, listName);
    const budget = Math.max(pageSize + 1, URLS_EXAMINED_PER_SHOWN * pageSize);
    const page: UrlUnderPrefix[] = [];
    let examined = 0;
    // The last URL examined, and whether it is shown.
    let last = from;
    let lastShown = true;
    for (let at = from; ;) {
      const rows = await list(at);
      for (const r of rows) {
        if (examined === budget) return { page, more: true, next: lastShown ? last : this.cursors.seal(last, listName) };
        examined++;
        const shown = await this.shownUrl(r);
        last = r.urlkey;
        lastShown = shown !== undefined;
        if (!shown) continue;
        if (page.length === pageSize) return { page, more: true, next: page[page.length - 1].urlkey };
        page.push(shown);
      }
      if (rows.length <= pageSize) return { page, more: false };
      at = rows[rows.length - 1].urlkey;
    }
  }

  /** A URL of a prefix list as the rules let it be shown: counts and dates of its shown captures; `undefined` when none is (no query when the rules hide every capture of it). */
  private async shownUrl(r: UrlUnderPrefix): Promise<UrlUnderPrefix | undefined> {
    const within = this.within(r.urlkey);
    if (!within) return r;
    if (!within.length) return undefined;
    const spans = await this.index.spansWithin(r.urlkey, within);
    const n = spans.reduce((a, x) => a + x.n, 0);
    return n ? { ...r, n, first: Math.min(...spans.map((x) => x.first)), last: Math.max(...spans.map((x) => x.last)) } : undefined;
  }

  /** Every archived site with shown captures and its number of URLs and captures, most captures first (at most `limit`): a scan of the whole urlkey index (callers cache it). */
  async sites(limit: number): Promise<Site[]> {
    const rows = await this.index.pages.sites(limit, this.rules.shownRules());
    return rows.map((r) => ({ host: hostOfSurt(r.surtHost), urls: r.urls, captures: r.captures, last: r.last }));
  }

  /** The `limit` shown captures indexed last (by index row), newest first. */
  recent(limit: number): Promise<Capture[]> {
    return this.index.pages.recent(limit, this.rules.shownRules());
  }

  /** How many captures are shown, in every archive. */
  count(): Promise<number> {
    return this.index.pages.count(this.rules.shownRules());
  }
}
