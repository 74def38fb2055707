/**
 * Lookups of the index by urlkey pattern: the stored keys under a set of
 * prefixes (the access rules' keys named in their folded form,
 * archive/read/access-folded.ts) and the row ids a `purge` selection names
 * (purge-plan.ts). Errors are the database driver's.
 */
import type { IndexReads } from './reads.js';

/** Prefixes asked for in one statement (a UNION of that many range reads; SQLite allows 500 terms). */
const BATCH = 64;

/** A urlkey, or with `prefix` every urlkey that starts with `key`. */
export interface KeyPattern {
  key: string;
  prefix: boolean;
}

/** The lookups by key; the index's `keys`. */
export class KeyQueries {
  constructor(private readonly db: IndexReads) {}

  /**
   * The distinct urlkeys of the index that start with one of `prefixes`
   * (ASCII), sorted: a range read of the urlkey index per prefix,
   * {@link BATCH} per statement as a `UNION` of one `SELECT` each (an `OR`
   * of the ranges makes SQLite scan the whole index: 7 s for 64 ranges over
   * a million rows, against 2 ms).
   */
  async under(prefixes: readonly string[]): Promise<string[]> {
    const unique = [...new Set(prefixes)].sort();
    const found = new Set<string>();
    for (let i = 0; i < unique.length; i += BATCH) {
      const params: Record<string, string> = {};
      const reads = unique.slice(i, i + BATCH).map((p, n) => {
        params[`$f${n}`] = p;
        params[`$t${n}`] = p.slice(0, -1) + String.fromCharCode(p.charCodeAt(p.length - 1) + 1);
        return `SELECT urlkey FROM memento WHERE urlkey >= $f${n} AND urlkey < $t${n}`;
      });
      for (const r of await this.db.browse<{ urlkey: string }>(null, reads.join(' UNION '), params)) found.add(r.urlkey);
    }
    return [...found].sort();
  }

  /**
   * The ids of the rows `pattern` names (a `purge` selection), limited to
   * datetimes before `span.before` and at or after `span.after` (epoch s)
   * when given; in no fixed order.
   */
  async rowIds(pattern: KeyPattern, span: { before?: number; after?: number } = {}): Promise<number[]> {
    let sql = `SELECT id FROM memento WHERE ${pattern.prefix ? 'substr(urlkey, 1, $len) = $key' : 'urlkey = $key'}`;
    const params: Record<string, string | number> = pattern.prefix ? { $len: pattern.key.length, $key: pattern.key } : { $key: pattern.key };
    if (span.before !== undefined) {
      sql += ' AND datetime < $before';
      params.$before = span.before;
    }
    if (span.after !== undefined) {
      sql += ' AND datetime >= $after';
      params.$after = span.after;
    }
    return (await this.db.browse<{ id: number }>(null, sql, params)).map((r) => r.id);
  }
}
