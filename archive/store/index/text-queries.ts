/**
 * The full-text index of the mementos' text (archive/search/): one row per
 * memento whose `response` record is HTML or plain text (never a revisit:
 * a revisit has its original's text), keyed by the memento's row id, with
 * the title and the visible text extracted at ingest
 * (archive/search/extract.ts). SQLite keeps it in an FTS5 table
 * (`memento_text`, unicode61 tokens without diacritics, `secure-delete` so
 * that a purged text leaves no token behind, and prefix indexes of 2 and 3
 * letters, so that a short `prefix*` reads one list instead of merging
 * every word's that starts so) in the index file; a trigger
 * deletes a memento's text with its row (purge), and a new index file
 * (`reindex`) starts without text, which the daemon's indexer extracts
 * again ({@link TextQueries.missing}).
 *
 * A query arrives as terms already checked (archive/search/query.ts
 * `TextQuery`); the MATCH expression is written here from them alone, so no
 * text a visitor typed reaches the engine's query syntax. Every read is
 * bounded by a row limit. Datetimes are epoch seconds; errors are the
 * driver's.
 */
import sqlite3 from 'sqlite3';
import type { MementoRow } from './memento-row.js';
import { all, readAll, run } from './sqlite-calls.js';

/** The media types whose text is indexed (lower case, no parameters). */
export const TEXT_MIMES = ['text/html', 'application/xhtml+xml', 'text/plain'] as const;

/** A checked term of a query: its words (one: a word; several: a phrase), the last a prefix when `prefix`. */
export interface TextTerm {
  words: string[];
  prefix: boolean;
}

/** What a search asks of the index (see {@link TextQueries.search}). */
export interface TextSearch {
  terms: readonly TextTerm[];
  /** Inclusive window of Memento-Datetimes, epoch s. */
  since?: number;
  until?: number;
  /** Urlkey ranges (`to` exclusive; absent: one urlkey), none: every URL. */
  ranges?: readonly { from: string; to?: string }[];
  /** The media type, lower case. */
  mime?: string;
  /** The memento row ids looked at: `from` inclusive, `below` exclusive (absent: all). */
  rowIds?: { from: number; below: number };
  /** Most rows read (newest row ids first). */
  limit: number;
}

/** A memento whose text matched: the index row's public parts. */
export type TextHit = Pick<MementoRow, 'id' | 'archive_id' | 'urlkey' | 'uri_r' | 'datetime' | 'mime'>;

/** A memento of a URL in a phrase's history: whether its text (or its original's, for a revisit) held the phrase. */
export interface HistoryRow extends Pick<MementoRow, 'id' | 'archive_id' | 'urlkey' | 'uri_r' | 'datetime' | 'refers_to'> {
  holds: 0 | 1;
  /** A revisit's original, for the access rules (its urlkey and datetime); null for a response. */
  o_urlkey: string | null;
  o_datetime: number | null;
}

/** A memento's stored text with its row's public parts, as an export reads it ({@link TextIndex.texts}). */
export interface TextRow extends Pick<MementoRow, 'id' | 'archive_id' | 'urlkey' | 'uri_r' | 'datetime' | 'status' | 'mime' | 'digest'> {
  title: string;
  body: string;
}

/** A page of an export: row ids above `after`, Memento-Datetimes within `since`–`until` (inclusive, epoch s), of `archive`. */
export interface TextPage {
  after: number;
  limit: number;
  since?: number;
  until?: number;
  archive?: string;
}

/** The text of memento `id` to store: its title and visible text. */
export interface MementoText {
  id: number;
  title: string;
  body: string;
}

/** Title and snippet of a hit; the snippet's matched words between \u0001 and \u0002. */
export interface TextSnippet {
  id: number;
  title: string;
  snippet: string;
}

/** The FTS5 table (its `secure-delete` option set once, when it is made) and the trigger that deletes a memento's text with its row. */
const TEXT_SCHEMA_SQLITE = `
CREATE VIRTUAL TABLE memento_text USING fts5(title, body, tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3');
INSERT INTO memento_text(memento_text, rank) VALUES('secure-delete', 1);
CREATE TRIGGER memento_text_gone AFTER DELETE ON memento BEGIN DELETE FROM memento_text WHERE rowid = old.id; END;
`;

/** Makes the full-text table and its trigger in an index that has none (an index of an older version gains them); writes nothing otherwise. */
export async function makeTextTable(db: sqlite3.Database): Promise<void> {
  const [has] = await readAll<{ n: number }>(db, "SELECT count(*) AS n FROM sqlite_master WHERE name = 'memento_text'", {});
  if (has.n) return;
  await new Promise<void>((resolve, reject) => db.exec(`BEGIN;${TEXT_SCHEMA_SQLITE}COMMIT;`, (err) => (err ? reject(err) : resolve())));
}

/** The MATCH expression of checked terms: each a quoted phrase (its words hold letters and digits only), the last word of a prefix term starred. */
export function ftsMatch(terms: readonly TextTerm[]): string {
  return terms.map((t) => `"${t.words.join(' ')}"${t.prefix ? '*' : ''}`).join(' ');
}

/** The indexed media types as an SQL list. */
export const MIMES_SQL = TEXT_MIMES.map((m) => `'${m}'`).join(', ');

/** The conditions of a search's row ids, window, URL ranges and type on `m`, and their parameters. */
export function conditions(q: Omit<TextSearch, 'terms' | 'limit'>): { sql: string; params: Record<string, string | number> } {
  const parts: string[] = [];
  const params: Record<string, string | number> = {};
  if (q.rowIds !== undefined) {
    parts.push('m.id >= $idFrom AND m.id < $idBelow');
    params.$idFrom = q.rowIds.from;
    params.$idBelow = q.rowIds.below;
  }
  if (q.since !== undefined) {
    parts.push('m.datetime >= $since');
    params.$since = q.since;
  }
  if (q.until !== undefined) {
    parts.push('m.datetime <= $until');
    params.$until = q.until;
  }
  if (q.mime !== undefined) {
    parts.push('m.mime = $mime');
    params.$mime = q.mime;
  }
  if (q.ranges?.length) {
    const ors = q.ranges.map((r, i) => {
      params[`$kf${i}`] = r.from;
      if (r.to === undefined) return `m.urlkey = $kf${i}`;
      params[`$kt${i}`] = r.to;
      return `(m.urlkey >= $kf${i} AND m.urlkey < $kt${i})`;
    });
    parts.push(`(${ors.join(' OR ')})`);
  }
  return { sql: parts.map((p) => ` AND ${p}`).join(''), params };
}

/** The full-text index's reads and writes (SQLite: {@link TextQueries}; PostgreSQL: text-pg.ts); an index's `text`. */
export interface TextIndex {
  /** Up to `limit` mementos with row id above `after` whose text is indexed but not yet extracted, by row id. */
  missing(after: number, limit: number): Promise<MementoRow[]>;
  /** Stores the texts (an empty text: looked at, nothing to index) in one transaction, each unless its row is gone (purged meanwhile) or it has one. */
  putMany(texts: readonly MementoText[]): Promise<void>;
  /** The mementos whose title or text holds every term, within the row ids, window, URLs and type: up to `limit`, newest row ids first. */
  search(q: TextSearch): Promise<TextHit[]>;
  /** The highest memento row id (0: none), where a search's first window of row ids ends. */
  lastId(): Promise<number>;
  /** Title and snippet (about `words` words around the matches) of the mementos `ids` for the terms. */
  snippets(terms: readonly TextTerm[], ids: readonly number[], words?: number): Promise<TextSnippet[]>;
  /** Every memento of the URLs in `ranges`, by urlkey then datetime, marked whether its text (a revisit: its original's) holds the terms: up to `limit`. */
  history(terms: readonly TextTerm[], ranges: readonly { from: string; to?: string }[], limit: number): Promise<HistoryRow[]>;
  /** Number of texts stored (extracted mementos, empty ones too). */
  count(): Promise<number>;
  /** Up to `limit` texts that are not empty, with the memento's row id above `after` (and within the page's window and archive), by row id. */
  texts(q: TextPage): Promise<TextRow[]>;
}

/** The conditions of an export's page on `m` (besides the row id), and their parameters. */
export function pageConditions(q: TextPage): { sql: string; params: Record<string, string | number> } {
  const c = conditions({ since: q.since, until: q.until });
  if (q.archive === undefined) return c;
  return { sql: `${c.sql} AND m.archive_id = $archive`, params: { ...c.params, $archive: q.archive } };
}

/** The columns an export reads, of the memento `m` and its text `t`. */
export const TEXT_ROW_COLUMNS = 'm.id, m.archive_id, m.urlkey, m.uri_r, m.datetime, m.status, m.mime, m.digest, t.title, t.body';

/** The full-text index's reads and writes on SQLite (see the module comment); the index's `text`. */
export class TextQueries implements TextIndex {
  /**
   * @param db the write connection
   * @param reader the read connection of the full-text reads alone (a long search waits for no other read, nor they for it)
   */
  constructor(
    private readonly db: sqlite3.Database,
    private readonly reader: sqlite3.Database,
  ) {}

  /** Up to `limit` mementos with row id above `after` whose text is indexed but not yet extracted, by row id. */
  missing(after: number, limit: number): Promise<MementoRow[]> {
    return readAll<MementoRow>(
      this.reader,
      `SELECT m.* FROM memento m WHERE m.id > $after AND m.refers_to IS NULL AND m.mime IN (${MIMES_SQL})
        AND NOT EXISTS (SELECT 1 FROM memento_text t WHERE t.rowid = m.id) ORDER BY m.id LIMIT $limit`,
      { $after: after, $limit: limit },
    );
  }

  /**
   * Stores the texts in one statement (one transaction: FTS5 writes one
   * segment for all of them), each unless its row is gone (purged
   * meanwhile) or it has one.
   */
  async putMany(texts: readonly MementoText[]): Promise<void> {
    if (!texts.length) return;
    await run(
      this.db,
      `INSERT INTO memento_text(rowid, title, body)
        SELECT j.value ->> 'id', j.value ->> 'title', j.value ->> 'body' FROM json_each($texts) j
        WHERE EXISTS (SELECT 1 FROM memento WHERE id = j.value ->> 'id') AND NOT EXISTS (SELECT 1 FROM memento_text WHERE rowid = j.value ->> 'id')`,
      { $texts: JSON.stringify(texts) },
    );
  }

  /** The mementos whose title or text holds every term, within the row ids, window, URLs and type: up to `limit`, newest row ids first. */
  search(q: TextSearch): Promise<TextHit[]> {
    const c = conditions(q);
    // The row-id bounds on t.rowid too: FTS5 then reads only that stretch of each term's list.
    const ids = q.rowIds ? ' AND t.rowid >= $idFrom AND t.rowid < $idBelow' : '';
    return readAll<TextHit>(
      this.reader,
      `SELECT m.id, m.archive_id, m.urlkey, m.uri_r, m.datetime, m.mime FROM memento_text t JOIN memento m ON m.id = t.rowid
        WHERE memento_text MATCH $match${ids}${c.sql} ORDER BY t.rowid DESC LIMIT $limit`,
      { ...c.params, $match: ftsMatch(q.terms), $limit: q.limit },
    );
  }

  /** The highest memento row id (0: none). */
  async lastId(): Promise<number> {
    const [row] = await readAll<{ n: number | null }>(this.reader, 'SELECT max(id) AS n FROM memento', {});
    return row.n ?? 0;
  }

  /** Title and snippet (about `words` words around the matches) of the mementos `ids` for the terms. */
  snippets(terms: readonly TextTerm[], ids: readonly number[], words = 24): Promise<TextSnippet[]> {
    if (!ids.length) return Promise.resolve([]);
    return readAll<TextSnippet>(
      this.reader,
      // The match once over the ids' stretch (FTS5 takes the bounds), the ids themselves a filter (`+rowid`: not a lookup
      // per id, which would match the terms again for each, expanding a prefix each time).
      `SELECT rowid AS id, title, snippet(memento_text, 1, char(1), char(2), '…', $words) AS snippet FROM memento_text
        WHERE memento_text MATCH $match AND rowid >= $min AND rowid <= $max AND +rowid IN (SELECT value FROM json_each($ids))`,
      { $match: ftsMatch(terms), $ids: JSON.stringify(ids), $words: words, $min: Math.min(...ids), $max: Math.max(...ids) },
    );
  }

  /**
   * Every memento (responses and revisits) of the URLs in `ranges`, by
   * urlkey then datetime, each marked whether its text (a revisit: its
   * original's) holds the terms: up to `limit` rows.
   */
  history(terms: readonly TextTerm[], ranges: readonly { from: string; to?: string }[], limit: number): Promise<HistoryRow[]> {
    const c = conditions({ ranges });
    return readAll<HistoryRow>(
      this.reader,
      `WITH hit(id) AS (SELECT rowid FROM memento_text WHERE memento_text MATCH $match)
        SELECT m.id, m.archive_id, m.urlkey, m.uri_r, m.datetime, m.refers_to, o.urlkey AS o_urlkey, o.datetime AS o_datetime,
          CASE WHEN COALESCE(m.refers_to, m.id) IN (SELECT id FROM hit) THEN 1 ELSE 0 END AS holds
        FROM memento m LEFT JOIN memento o ON o.id = m.refers_to WHERE 1 = 1${c.sql} ORDER BY m.urlkey, m.datetime, m.id LIMIT $limit`,
      { ...c.params, $match: ftsMatch(terms), $limit: limit },
    );
  }

  /** Up to `limit` texts that are not empty, with the memento's row id above `after` (and within the page's window and archive), by row id. */
  texts(q: TextPage): Promise<TextRow[]> {
    const c = pageConditions(q);
    return readAll<TextRow>(
      this.reader,
      `SELECT ${TEXT_ROW_COLUMNS} FROM memento_text t JOIN memento m ON m.id = t.rowid
        WHERE t.rowid > $after AND (t.title <> '' OR t.body <> '')${c.sql} ORDER BY t.rowid LIMIT $limit`,
      { ...c.params, $after: q.after, $limit: q.limit },
    );
  }

  /** Number of texts stored (extracted mementos, empty ones too). */
  async count(): Promise<number> {
    const st = this.reader.prepare('SELECT count(*) AS n FROM memento_text');
    try {
      return (await all<{ n: number }>(st, {}))[0].n;
    } finally {
      st.finalize();
    }
  }
}
