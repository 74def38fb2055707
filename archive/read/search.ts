/**
 * Full-text search and phrase history as the public sees them: the
 * full-text index's answers (archive/store/index/text-queries.ts) through
 * the access rules (a memento the rules hide is no hit, and no step of a
 * history). A search reads the index newest row ids first, a stretch of
 * row ids at a time ({@link searchShown}), and stops at
 * {@link SEARCH_ROWS} shown hits, {@link SEARCH_EXAMINED} rows read (hidden
 * ones too) or {@link SEARCH_MS} of time, whichever comes first; a history
 * reads at most {@link HISTORY_ROWS} rows. When a read stopped before the
 * end, `total` counts what it found and `capped` says so. Datetimes are
 * epoch seconds.
 */
import { httpError } from '#shared/http-error.js';
import type { MementoIndex } from '../store/index/memento-index.js';
import type { HistoryRow, TextHit, TextIndex, TextTerm } from '../store/index/text-queries.js';

/** Most shown hits one search counts. */
export const SEARCH_ROWS = 5000;
/** Most matching rows one search reads, the hidden ones included. */
export const SEARCH_EXAMINED = 4 * SEARCH_ROWS;
/** Time one search may take, ms: past it, the next statement is not started. */
export const SEARCH_MS = 1500;
/** A search's bounds (see the module comment and {@link VisibleSearch.searchShown}); a test may make them small. */
export interface SearchLimits {
  /** Most shown hits counted ({@link SEARCH_ROWS}). */
  rows: number;
  /** Most matching rows read, hidden ones too ({@link SEARCH_EXAMINED}). */
  examined: number;
  /** Time, ms ({@link SEARCH_MS}). */
  ms: number;
  /** Rows one statement reads. */
  statementRows: number;
  /** Row ids the first statement looks at; doubled after each statement quicker than 100 ms. */
  firstWindow: number;
}

const LIMITS: SearchLimits = { rows: SEARCH_ROWS, examined: SEARCH_EXAMINED, ms: SEARCH_MS, statementRows: 1000, firstWindow: 20_000 };
const QUICK_MS = 100;
/** Most mementos (of the URLs asked) one phrase history reads. */
export const HISTORY_ROWS = 20_000;
/** Hits per page. */
export const SEARCH_PAGE = 20;

/** A search: terms (archive/search/query.ts), window, URLs, type, page (from 1). */
export interface SearchAsk {
  terms: readonly TextTerm[];
  since?: number;
  until?: number;
  ranges?: readonly { from: string; to?: string }[];
  mime?: string;
  page: number;
}

/** One hit: the memento, its title and its snippet (matched words between \u0001 and \u0002). */
export interface SearchHit extends TextHit {
  title: string;
  snippet: string;
}

/**
 * A page of hits, the count of all of them, and their counts by year
 * (`YYYY`) and month (`YYYY-MM`), UTC. `capped`: the read stopped before
 * the oldest memento, so more may match; `cut` says why (`rows`: enough
 * hits or rows read; `time`: {@link SEARCH_MS} spent), null when not capped.
 */
export interface SearchAnswer {
  total: number;
  capped: boolean;
  cut: 'rows' | 'time' | null;
  hits: SearchHit[];
  facets: { year: Record<string, number>; month: Record<string, number> };
}

/** One memento of a history step. */
export interface HistoryStep {
  archive_id: string;
  uri_r: string;
  datetime: number;
}

/** A period in which a URL's text held the phrase: first and last memento holding it, and the next one without it (`null`: none yet). */
export interface HistoryPeriod {
  from: HistoryStep;
  until: HistoryStep;
  gone: HistoryStep | null;
}

/** The periods of one URL, oldest first. */
export interface UrlHistory {
  urlkey: string;
  uri_r: string;
  periods: HistoryPeriod[];
}

/** The full-text reads through the access rules (see the module comment); the visible index's `search`. */
export class VisibleSearch {
  /**
   * @param index the archive's index
   * @param shows whether the rules show the memento of `urlkey` at `datetime`, now
   * @param limits a search's bounds (default: the constants above)
   */
  constructor(
    private readonly index: MementoIndex,
    private readonly shows: (urlkey: string, datetime: number) => boolean,
    private readonly limits: SearchLimits = LIMITS,
  ) {}

  /** Whether this index has a full-text index. */
  get available(): boolean {
    return this.index.text !== undefined;
  }

  private text() {
    const text = this.index.text;
    if (!text) throw httpError(404, 'this archive has no full-text index (its index database has none)');
    return text;
  }

  /**
   * The shown mementos whose title or text holds every term, newest first,
   * page `ask.page` of {@link SEARCH_PAGE}; a page past the end has no hits
   * and the same total.
   */
  async search(ask: SearchAsk): Promise<SearchAnswer> {
    const text = this.text();
    const { shown, cut } = await this.searchShown(text, ask);
    shown.sort((a, b) => b.datetime - a.datetime || b.id - a.id);
    const year: Record<string, number> = {};
    const month: Record<string, number> = {};
    for (const r of shown) {
      const ym = new Date(r.datetime * 1000).toISOString().slice(0, 7);
      year[ym.slice(0, 4)] = (year[ym.slice(0, 4)] ?? 0) + 1;
      month[ym] = (month[ym] ?? 0) + 1;
    }
    const page = shown.slice((ask.page - 1) * SEARCH_PAGE, ask.page * SEARCH_PAGE);
    const snips = new Map(
      (
        await engine(() =>
          text.snippets(
            ask.terms,
            page.map((r) => r.id),
          ),
        )
      ).map((s) => [s.id, s]),
    );
    return {
      total: shown.length,
      capped: cut !== null,
      cut,
      hits: page.map((r) => ({ ...r, title: snips.get(r.id)?.title ?? '', snippet: snips.get(r.id)?.snippet ?? '' })),
      facets: { year, month },
    };
  }

  /**
   * The shown hits of a search, newest row ids first, read a stretch of
   * row ids at a time so that hidden rows never take the place of shown
   * ones and the time between statements can be checked: each statement
   * reads at most `statementRows` rows of a window of row ids that
   * starts at `firstWindow` and doubles while statements are quick
   * (FTS5 reads only that stretch of a word's list). Stops as the module
   * comment says; `cut` null when every row was read. Each stop is
   * checked between statements: one statement's own time is bounded by
   * its window and row limit, not interrupted.
   */
  private async searchShown(text: TextIndex, ask: SearchAsk): Promise<{ shown: TextHit[]; cut: 'rows' | 'time' | null }> {
    const max = this.limits;
    const until = Date.now() + max.ms;
    const shown: TextHit[] = [];
    let below = (await engine(() => text.lastId())) + 1;
    let window = max.firstWindow;
    let examined = 0;
    while (below > 1) {
      if (Date.now() >= until) return { shown, cut: 'time' };
      const from = Math.max(1, below - window);
      const started = Date.now();
      const limit = Math.min(max.statementRows, max.examined - examined);
      const rows = await engine(() => text.search({ ...ask, rowIds: { from, below }, limit }));
      examined += rows.length;
      for (const r of rows) {
        if (!this.shows(r.urlkey, r.datetime)) continue;
        if (shown.length === max.rows) return { shown, cut: 'rows' };
        shown.push(r);
      }
      if (rows.length === limit) {
        if (examined >= max.examined) return { shown, cut: 'rows' };
        below = rows[rows.length - 1].id; // the window goes on below the last row read
      } else {
        below = from;
        if (Date.now() - started < QUICK_MS) window *= 2;
      }
    }
    return { shown, cut: null };
  }

  /**
   * The periods in which each URL in `ranges` held the phrase `terms`, over
   * its shown mementos (a revisit holds what its original held, so it
   * neither starts nor splits a period); URLs that never held it are left
   * out. URLs in urlkey order.
   */
  async history(terms: readonly TextTerm[], ranges: readonly { from: string; to?: string }[]): Promise<{ urls: UrlHistory[]; capped: boolean }> {
    const text = this.text();
    const rows = await engine(() => text.history(terms, ranges, HISTORY_ROWS));
    const urls: UrlHistory[] = [];
    let cur: UrlHistory | undefined;
    let open: HistoryPeriod | undefined;
    for (const r of rows.filter((r) => this.shown(r))) {
      if (cur?.urlkey !== r.urlkey) {
        if (cur?.periods.length) urls.push(cur);
        cur = { urlkey: r.urlkey, uri_r: r.uri_r, periods: [] };
        open = undefined;
      }
      const step = { archive_id: r.archive_id, uri_r: r.uri_r, datetime: r.datetime };
      if (r.holds) {
        if (open) open.until = step;
        else cur.periods.push((open = { from: step, until: step, gone: null }));
      } else if (open) {
        open.gone = step;
        open = undefined;
      }
    }
    if (cur?.periods.length) urls.push(cur);
    return { urls, capped: rows.length >= HISTORY_ROWS };
  }

  /** A history row is shown when it is, and a revisit's original is too. */
  private shown(r: HistoryRow): boolean {
    return this.shows(r.urlkey, r.datetime) && (r.o_urlkey === null || r.o_datetime === null || this.shows(r.o_urlkey, r.o_datetime));
  }
}

/**
 * Runs an engine query; an error the engine raises for the query itself
 * (the terms are checked before, so this is a safety net) is a 400, never
 * a 5xx.
 */
async function engine<T>(q: () => Promise<T>): Promise<T> {
  try {
    return await q();
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    if (/fts5|syntax|tsquery/i.test(msg)) throw httpError(400, `q= could not be read by the search engine: ${msg.split('\n')[0].slice(0, 120)}`);
    throw err;
  }
}
