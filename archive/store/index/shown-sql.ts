/**
 * The access rules (archive/read/access-rules.ts) as SQL conditions over a memento's
 * `urlkey` and `datetime`, for the queries of this folder and the CDX
 * walks (cdx-walk.ts): the same verdict as the rules' policy of each URL,
 * computed by the index's database. SQL of SQLite and PostgreSQL alike.
 */
import { rangeSql } from './index-sql.js';
import type { Ranges } from './memento-row.js';

/**
 * One rule as it applies at one moment to the whole index (archive/read/access-rules.ts AccessRules `shownRules`):
 * the urlkey it names (`prefix`: every urlkey that starts with `key`), the
 * Memento-Datetimes it applies to `[from, until)` (epoch s, whole numbers
 * or ±Infinity; empty when `from >= until`), and whether it shows them.
 */
export interface ShownRule {
  key: string;
  prefix: boolean;
  from: number;
  until: number;
  shown: boolean;
}

/** A condition on the index rows: SQL over `urlkey` and `datetime`, with its parameters (`$rule0`, …: the rules' urlkeys). */
export interface RowCondition {
  sql: string;
  params: Record<string, string>;
}

/**
 * The condition true for the mementos `rules` show (AccessRules
 * `shownRules`: most specific first, the first that names a memento
 * decides, none: shown): `TRUE` for an empty list, else one `CASE` whose
 * urlkeys are bound as parameters and whose instants are written as whole
 * numbers (never request text).
 */
export function shownCondition(rules: readonly ShownRule[]): RowCondition {
  if (!rules.length) return { sql: 'TRUE', params: {} };
  const params: Record<string, string> = {};
  const cases = rules.map((r, i) => {
    params[`$rule${i}`] = r.key;
    const name = r.prefix ? `substr(urlkey, 1, ${r.key.length})` : 'urlkey';
    const time = [
      Number.isFinite(r.from) ? ` AND datetime >= ${Math.ceil(r.from)}` : '',
      Number.isFinite(r.until) ? ` AND datetime < ${Math.ceil(r.until)}` : '',
    ].join('');
    return `WHEN ${name} = $rule${i}${time} THEN ${r.shown ? 1 : 0}`;
  });
  return { sql: `(CASE ${cases.join(' ')} ELSE 1 END) = 1`, params };
}

/**
 * The extra condition (` AND (…)`, to follow another) that keeps a query of
 * one URL to the datetimes `within` (`[from, until)` epoch s: what the rules
 * show of it, UrlPolicy `ranges('allow')`); empty when `within` is
 * undefined (every memento), `FALSE` when it is empty.
 */
export function withinSql(within: Ranges | undefined): string {
  return within ? ` AND (${rangeSql(within)})` : '';
}
