/**
 * The stored texts of the mementos the access rules show, for an export of
 * the full-text index (archive/commands/search-export.ts): the index's
 * texts (archive/store/index/text-queries.ts `texts`) read a page at a
 * time in row id order, each tested with the rules at one instant for the
 * whole walk. What the rules hide (excluded, blocked, under embargo) is
 * skipped and counted; a purged memento has no row and no text, so it is
 * never read. Only a `response` memento has a text of its own (a revisit
 * has its original's), and an empty text (a page with no words) is no row
 * of the walk.
 */
import { nowSeconds } from './access-rules.js';
import type { MementoIndex } from '../store/index/memento-index.js';
import type { TextRow } from '../store/index/text-queries.js';
import type { VisibleIndex } from './visible-index.js';

/** Texts read per page: a text is at most 200,000 characters and a title 500 (archive/search/parse-text.ts), so a page holds at most ~60 MB of UTF-8 (typically well under 1 MB). */
export const TEXT_PAGE = 100;

/** Which texts a walk reads: row ids above `afterRow`, Memento-Datetimes within `since`–`until` (inclusive, epoch s), of `archive`. */
export interface TextWalk {
  afterRow?: number;
  since?: number;
  until?: number;
  archive?: string;
  /** The instant the rules are applied at (epoch s; default: when the walk starts). */
  now?: number;
  /** Rows per page (default {@link TEXT_PAGE}). */
  page?: number;
}

/** What a walk skipped: texts of mementos the rules hide now. */
export interface TextWalkCounts {
  hidden: number;
  /** The highest row id read (shown or not); `afterRow` when none was. */
  lastRow: number;
}

/**
 * The shown texts of `index` (one whose `text` is defined), by row id
 * (module comment); `counts` is updated as the walk goes.
 * @throws the index's errors
 */
export async function* shownTexts(index: MementoIndex, visible: VisibleIndex, walk: TextWalk, counts: TextWalkCounts): AsyncGenerator<TextRow> {
  const text = index.text;
  if (!text) return;
  const now = walk.now ?? nowSeconds();
  const limit = walk.page ?? TEXT_PAGE;
  counts.lastRow = walk.afterRow ?? 0;
  for (;;) {
    const rows = await text.texts({ after: counts.lastRow, limit, since: walk.since, until: walk.until, archive: walk.archive });
    for (const row of rows) {
      counts.lastRow = row.id;
      if (visible.shows(row.urlkey, row.datetime, now)) yield row;
      else counts.hidden++;
    }
    if (rows.length < limit) return;
  }
}
