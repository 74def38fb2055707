/**
 * What the pages for people (`/web/`, archive/web/) ask of the index, over
 * every local archive at once (one timeline per URI-R, whichever archive
 * holds each memento). Every count is aggregated by the database over the
 * `(urlkey, datetime)` index; no query loads the mementos of a URI-R one by
 * one, so a calendar of 100,000 captures costs one index range scan.
 *
 * The queries of one URL take `within`: the spans of datetimes the access
 * rules show of it (UrlPolicy `ranges('allow')`; undefined: every memento).
 * The queries over the whole index take the rules themselves (AccessRules
 * `shownRules`). A statement whose SQL does not vary with the rules is
 * prepared once under its name; one that does (a URL some of whose
 * mementos are hidden, rules that hide something) is prepared per call.
 * Datetimes are epoch seconds (UTC); errors are the database driver's.
 */
import type { MementoRow } from './memento-row.js';
import type { IndexReads } from './reads.js';
import { type ShownRule, shownCondition, withinSql } from './shown-sql.js';
import type { Ranges } from './memento-row.js';

/** One capture as a page lists it: the index row without its WARC location. */
export type Capture = Pick<MementoRow, 'archive_id' | 'urlkey' | 'uri_r' | 'datetime' | 'status' | 'mime' | 'digest'>;

/** The captures of one URL in one month ({@link PageQueries.months}). */
export interface MonthCount {
  /** `YYYY-MM`, UTC. */
  month: string;
  n: number;
  /** First and last Memento-Datetime in the month, epoch s. */
  first: number;
  last: number;
}

/** The captures around an instant on the one timeline of all archives ({@link PageQueries.around}). */
export interface CapturesAround {
  first: Capture;
  last: Capture;
  /** The two (at most) at or before the instant, newest first. */
  atOrBefore: Capture[];
  /** The two (at most) after it, oldest first. */
  after: Capture[];
}

/** One archived URL of a list ({@link PageQueries.under}, {@link PageQueries.ofDomain}). */
export interface UrlSummary {
  urlkey: string;
  /** One URI-R of it (the greatest: with several schemes, `https://`). */
  uri_r: string;
  /** Its number of captures, first and last Memento-Datetime (epoch s). */
  n: number;
  first: number;
  last: number;
}

/** One archived site ({@link PageQueries.sites}). */
export interface SiteCount {
  /** The urlkey's SURT host part (`org,example,www:8080`). */
  surtHost: string;
  /** Distinct urlkeys and captures of it shown, and the last shown Memento-Datetime (epoch s). */
  urls: number;
  captures: number;
  last: number;
}

const CAPTURE_COLS = 'archive_id, urlkey, uri_r, datetime, status, mime, digest';

/** The statement's name when its SQL is fixed (`extra` empty), else null (prepared per call). */
const named = (name: string, extra: string) => (extra ? null : name);

/** The queries of the pages for people (see the module comment); the index's `pages`. */
export class PageQueries {
  constructor(private readonly db: IndexReads) {}

  /**
   * The captures of `urlkey` per month, oldest first; empty when it has
   * none. One grouped scan of the `(urlkey, datetime)` index.
   */
  async months(urlkey: string, within?: Ranges): Promise<MonthCount[]> {
    const cond = withinSql(within);
    const rows = await this.db.browse<{ ym: string; n: number; first: number; last: number }>(
      named('web.calendar', cond),
      `SELECT ${this.db.sql.yearMonth('datetime')} AS ym, count(*) AS n, min(datetime) AS first, max(datetime) AS last
         FROM memento WHERE urlkey = $urlkey${cond} GROUP BY ym ORDER BY ym`,
      { $urlkey: urlkey },
    );
    return rows.map((r) => ({ month: r.ym, n: r.n, first: r.first, last: r.last }));
  }

  /** The captures of `urlkey` with datetime in `[from, until)` (epoch s) per day, UTC: `MM-DD` → count (days without any left out). */
  async days(urlkey: string, from: number, until: number, within?: Ranges): Promise<Map<string, number>> {
    const cond = withinSql(within);
    const rows = await this.db.browse<{ d: string; n: number }>(
      named('web.days', cond),
      `SELECT ${this.db.sql.monthDay('datetime')} AS d, count(*) AS n
         FROM memento WHERE urlkey = $urlkey AND datetime >= $from AND datetime < $to${cond} GROUP BY d`,
      { $urlkey: urlkey, $from: from, $to: until },
    );
    return new Map(rows.map((r) => [r.d, r.n]));
  }

  /** The captures of `urlkey` with datetime in `[from, until)` (epoch s), oldest first, at most `limit`. */
  between(urlkey: string, from: number, until: number, limit: number, within?: Ranges): Promise<Capture[]> {
    const cond = withinSql(within);
    return this.db.browse<Capture>(
      named('web.between', cond),
      `SELECT ${CAPTURE_COLS} FROM memento WHERE urlkey = $urlkey AND datetime >= $from AND datetime < $to${cond} ORDER BY datetime LIMIT $limit`,
      { $urlkey: urlkey, $from: from, $to: until, $limit: limit },
    );
  }

  /** The Memento-Datetime (epoch s) of the last capture of `urlkey` before `t`; `undefined` when there is none. One index seek. */
  async before(urlkey: string, t: number, within?: Ranges): Promise<number | undefined> {
    const cond = withinSql(within);
    const rows = await this.db.browse<{ datetime: number }>(
      named('web.before', cond),
      `SELECT datetime FROM memento WHERE urlkey = $urlkey AND datetime < $from${cond} ORDER BY datetime DESC LIMIT 1`,
      { $urlkey: urlkey, $from: t },
    );
    return rows[0]?.datetime;
  }

  /**
   * The first and last captures of `urlkey` in any archive, and the two at
   * or before `t` (epoch s) and the two after it; `undefined` when it has
   * none. Of two captures at one second (two archives), the higher row id
   * comes first in each list and is the first or last (archive/read/nearest.ts
   * rule 4, so that `select` picks it). One statement of four index seeks.
   */
  async around(urlkey: string, t: number, within?: Ranges): Promise<CapturesAround | undefined> {
    const cond = withinSql(within);
    const where = `urlkey = $urlkey${cond}`;
    const rows = await this.db.browse<Capture & { kind: number; id: number }>(
      named('web.nearest', cond),
      `SELECT * FROM (SELECT 1 AS kind, id, ${CAPTURE_COLS} FROM memento WHERE ${where} ORDER BY datetime ASC, id DESC LIMIT 1) AS k1
       UNION ALL SELECT * FROM (SELECT 2 AS kind, id, ${CAPTURE_COLS} FROM memento WHERE ${where} ORDER BY datetime DESC, id DESC LIMIT 1) AS k2
       UNION ALL SELECT * FROM (SELECT 3 AS kind, id, ${CAPTURE_COLS} FROM memento WHERE ${where} AND datetime <= $t ORDER BY datetime DESC, id DESC LIMIT 2) AS k3
       UNION ALL SELECT * FROM (SELECT 4 AS kind, id, ${CAPTURE_COLS} FROM memento WHERE ${where} AND datetime > $t ORDER BY datetime ASC, id DESC LIMIT 2) AS k4`,
      { $urlkey: urlkey, $t: t },
    );
    // A compound SELECT keeps no subquery's order: each kind sorted here (at one second, the higher id first).
    const of = (kind: number) =>
      rows
        .filter((r) => r.kind === kind)
        .sort((x, y) => (x.datetime === y.datetime ? Number(y.id) - Number(x.id) : kind === 3 ? y.datetime - x.datetime : x.datetime - y.datetime))
        .map(({ kind: _k, id: _id, ...c }) => c as Capture);
    const [first] = of(1);
    const [last] = of(2);
    if (!first || !last) return undefined;
    return { first, last, atOrBefore: of(3), after: of(4) };
  }

  /** Whether `urlkey` has a capture whose URI-R is exactly `uriR` (the scheme included, which the urlkey leaves out). One row at most. */
  async hasUriR(urlkey: string, uriR: string, within?: Ranges): Promise<boolean> {
    const cond = withinSql(within);
    const rows = await this.db.browse<{ one: number }>(
      named('web.has', cond),
      `SELECT 1 AS one FROM memento WHERE urlkey = $urlkey AND uri_r = $uriR${cond} LIMIT 1`,
      { $urlkey: urlkey, $uriR: uriR },
    );
    return rows.length > 0;
  }

  /**
   * The archived URLs whose urlkey starts with `prefix`, in urlkey order,
   * after `afterKey` (keyset paging; `''`: from the first), at most `limit`.
   * A range scan of the urlkey index. Every memento counts (the caller
   * filters the list by the access rules).
   */
  under(prefix: string, afterKey: string, limit: number): Promise<UrlSummary[]> {
    return this.db.browse<UrlSummary>(
      'web.under',
      `SELECT urlkey, max(uri_r) AS uri_r, count(*) AS n, min(datetime) AS first, max(datetime) AS last
         FROM memento WHERE urlkey > $after AND urlkey >= $prefix AND urlkey < $end
         GROUP BY urlkey ORDER BY urlkey LIMIT $limit`,
      { $prefix: prefix, $end: prefix + '\uffff', $after: afterKey, $limit: limit },
    );
  }

  /**
   * The archived URLs of a domain: the host `name` (its SURT form without
   * port: `com,example`), any port of it and every subdomain, in urlkey
   * order after `afterKey`, at most `limit`; as {@link under}. One range
   * scan of the urlkey index from `<name>)` to `<name>:`, keeping the keys
   * whose next character ends the host name.
   */
  ofDomain(name: string, afterKey: string, limit: number): Promise<UrlSummary[]> {
    return this.db.browse<UrlSummary>(
      'web.domain',
      `SELECT urlkey, max(uri_r) AS uri_r, count(*) AS n, min(datetime) AS first, max(datetime) AS last
         FROM memento WHERE urlkey > $after AND urlkey >= $from AND urlkey < $to AND substr(urlkey, $at, 1) IN (')', ',', ':')
         GROUP BY urlkey ORDER BY urlkey LIMIT $limit`,
      { $from: name + ')', $to: name + ';', $at: name.length + 1, $after: afterKey, $limit: limit },
    );
  }

  /**
   * Every archived site (SURT host and port) with its number of URLs and
   * captures, most captures first, then by host (at most `limit`), over
   * the mementos `shown` shows (AccessRules `shownRules`: a hidden capture
   * is in no count or date, a site of hidden captures only is not listed).
   * A scan of the whole urlkey index: callers cache it.
   */
  async sites(limit: number, shown: readonly ShownRule[] = []): Promise<SiteCount[]> {
    const cond = shownCondition(shown);
    const rows = await this.db.browse<{ h: string; urls: number; captures: number; last: number }>(
      shown.length ? null : 'web.sites',
      `SELECT ${this.db.sql.surtHost('urlkey')} AS h, count(DISTINCT urlkey) AS urls, count(*) AS captures, max(datetime) AS last
         FROM memento WHERE ${cond.sql} GROUP BY h ORDER BY captures DESC, h LIMIT $limit`,
      { ...cond.params, $limit: limit },
    );
    return rows.map((r) => ({ surtHost: r.h, urls: r.urls, captures: r.captures, last: r.last }));
  }

  /** The `limit` captures indexed last (by row id, newest first) of those `shown` shows. */
  recent(limit: number, shown: readonly ShownRule[] = []): Promise<Capture[]> {
    const cond = shownCondition(shown);
    return this.db.browse<Capture>(shown.length ? null : 'web.recent', `SELECT ${CAPTURE_COLS} FROM memento WHERE ${cond.sql} ORDER BY id DESC LIMIT $limit`, {
      ...cond.params,
      $limit: limit,
    });
  }

  /** How many captures `shown` shows, in every archive. */
  async count(shown: readonly ShownRule[] = []): Promise<number> {
    const cond = shownCondition(shown);
    const [r] = await this.db.browse<{ n: number }>(shown.length ? null : 'web.count', `SELECT count(*) AS n FROM memento WHERE ${cond.sql}`, cond.params);
    return r.n;
  }
}
