/**
 * The full-text index on PostgreSQL (text-queries.ts has its contract and
 * the SQLite one): a table `memento_text` (one row per memento whose text
 * was extracted, deleted with the memento's row by its foreign key) with a
 * stored `tsvector` of the title and text (the `simple` configuration:
 * words lower-cased, no stemming, as SQLite's tokens) under a GIN index.
 * A query's terms become a `tsquery` written here from checked words only
 * (`<->` between a phrase's words, `:*` for a prefix, `&` between terms);
 * snippets are `ts_headline`'s, for the page's hits only.
 */
import type pg from 'pg';
import type { MementoRow } from './memento-row.js';
import {
  conditions,
  type HistoryRow,
  type MementoText,
  MIMES_SQL,
  pageConditions,
  TEXT_ROW_COLUMNS,
  type TextHit,
  type TextIndex,
  type TextPage,
  type TextRow,
  type TextSearch,
  type TextSnippet,
  type TextTerm,
} from './text-queries.js';

/** The table, its GIN index, and its rows deleted with their memento. */
export const TEXT_SCHEMA_PG = `
CREATE TABLE IF NOT EXISTS memento_text (
  id bigint PRIMARY KEY REFERENCES memento (id) ON DELETE CASCADE,
  title text NOT NULL,
  body text NOT NULL,
  tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', title || ' ' || body)) STORED
);
CREATE INDEX IF NOT EXISTS memento_text_tsv ON memento_text USING GIN (tsv);
`;

/** The tsquery text of checked terms (their words hold letters and digits only). */
export function tsQuery(terms: readonly TextTerm[]): string {
  return terms.map((t) => `(${t.words.map((w, i) => (t.prefix && i === t.words.length - 1 ? `${w}:*` : w)).join(' <-> ')})`).join(' & ');
}

/** `$name` parameters as PostgreSQL's `$1…`, with their values in order. */
function positional(sql: string, params: Record<string, unknown>): { text: string; values: unknown[] } {
  const names: string[] = [];
  const text = sql.replace(/\$([a-z][a-z0-9]*)/gi, (_, n: string) => {
    let i = names.indexOf(n);
    if (i < 0) i = names.push(n) - 1;
    return `$${i + 1}`;
  });
  return { text, values: names.map((n) => params[`$${n}`]) };
}

/** The full-text index's reads and writes on PostgreSQL; the PostgreSQL index's `text`. */
export class PgTextQueries implements TextIndex {
  constructor(private readonly pool: pg.Pool) {}

  private async rows<T>(sql: string, params: Record<string, unknown>): Promise<T[]> {
    const q = positional(sql, params);
    return (await this.pool.query(q.text, q.values)).rows as T[];
  }

  missing(after: number, limit: number): Promise<MementoRow[]> {
    return this.rows<MementoRow>(
      `SELECT m.* FROM memento m WHERE m.id > $after AND m.refers_to IS NULL AND m.mime IN (${MIMES_SQL})
        AND NOT EXISTS (SELECT 1 FROM memento_text t WHERE t.id = m.id) ORDER BY m.id LIMIT $limit`,
      { $after: after, $limit: limit },
    );
  }

  async putMany(texts: readonly MementoText[]): Promise<void> {
    if (!texts.length) return;
    await this.rows(
      `INSERT INTO memento_text (id, title, body) SELECT t.id, t.title, t.body FROM jsonb_to_recordset($texts::jsonb) AS t(id bigint, title text, body text)
        WHERE EXISTS (SELECT 1 FROM memento WHERE id = t.id) ON CONFLICT (id) DO NOTHING`,
      { $texts: JSON.stringify(texts) },
    );
  }

  search(q: TextSearch): Promise<TextHit[]> {
    const c = conditions(q);
    return this.rows<TextHit>(
      `SELECT m.id, m.archive_id, m.urlkey, m.uri_r, m.datetime, m.mime FROM memento_text t JOIN memento m ON m.id = t.id
        WHERE t.tsv @@ to_tsquery('simple', $match)${c.sql} ORDER BY t.id DESC LIMIT $limit`,
      { ...c.params, $match: tsQuery(q.terms), $limit: q.limit },
    );
  }

  async lastId(): Promise<number> {
    return Number((await this.rows<{ n: string | number | null }>('SELECT max(id) AS n FROM memento', {}))[0].n ?? 0);
  }

  snippets(terms: readonly TextTerm[], ids: readonly number[], words = 24): Promise<TextSnippet[]> {
    if (!ids.length) return Promise.resolve([]);
    return this.rows<TextSnippet>(
      `SELECT id, title, ts_headline('simple', body, to_tsquery('simple', $match), $options) AS snippet FROM memento_text WHERE id = ANY($ids::bigint[])`,
      {
        $match: tsQuery(terms),
        $ids: ids,
        $options: `StartSel=\u0001, StopSel=\u0002, MaxFragments=1, FragmentDelimiter=" … ", MaxWords=${words}, MinWords=${Math.ceil(words / 2)}`,
      },
    );
  }

  history(terms: readonly TextTerm[], ranges: readonly { from: string; to?: string }[], limit: number): Promise<HistoryRow[]> {
    const c = conditions({ ranges });
    return this.rows<HistoryRow>(
      `SELECT m.id, m.archive_id, m.urlkey, m.uri_r, m.datetime, m.refers_to, o.urlkey AS o_urlkey, o.datetime AS o_datetime,
          CASE WHEN EXISTS (SELECT 1 FROM memento_text t WHERE t.id = COALESCE(m.refers_to, m.id) AND t.tsv @@ to_tsquery('simple', $match)) THEN 1 ELSE 0 END AS holds
        FROM memento m LEFT JOIN memento o ON o.id = m.refers_to WHERE 1 = 1${c.sql} ORDER BY m.urlkey, m.datetime, m.id LIMIT $limit`,
      { ...c.params, $match: tsQuery(terms), $limit: limit },
    );
  }

  texts(q: TextPage): Promise<TextRow[]> {
    const c = pageConditions(q);
    return this.rows<TextRow>(
      `SELECT ${TEXT_ROW_COLUMNS} FROM memento_text t JOIN memento m ON m.id = t.id
        WHERE t.id > $after AND (t.title <> '' OR t.body <> '')${c.sql} ORDER BY t.id LIMIT $limit`,
      { ...c.params, $after: q.after, $limit: q.limit },
    );
  }

  async count(): Promise<number> {
    return Number((await this.rows<{ n: string | number }>('SELECT count(*) AS n FROM memento_text', {}))[0].n);
  }
}
