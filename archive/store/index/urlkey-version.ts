/**
 * Which rules computed an index's urlkeys: the index records the version of
 * the canonical form (shared/uri.ts `URLKEY_VERSION`, docs/url-space.md) in
 * SQLite's `user_version`, and an index made under older rules is checked
 * once when it is opened.
 */
import { OperatorError } from '#shared/operator-error.js';
import type sqlite3 from 'sqlite3';
import { exactUrlkey, URLKEY_VERSION } from '#shared/uri.js';
import { readAll, run } from './sqlite-calls.js';

/** The index holds urlkeys computed by the rules of an earlier version (shared/uri.ts `URLKEY_VERSION`); `message` says what to do. */
export class StaleIndexError extends OperatorError {
  constructor(file: string, example: { uri_r: string; urlkey: string }) {
    super(
      `${file}: its urlkeys were computed by the rules of an earlier version (${JSON.stringify(example.uri_r.slice(0, 200))} has the key ` +
        `${JSON.stringify(example.urlkey.slice(0, 200))}, now ${JSON.stringify(exactUrlkey(example.uri_r).slice(0, 200))}); run memento-archive reindex`,
    );
    this.name = 'StaleIndexError';
  }
}

/** Rows read per query by {@link checkUrlkeys}. */
const CHECK_PAGE = 10_000;

/**
 * Makes sure every urlkey of the index is the one {@link exactUrlkey}
 * computes now, once per index: an index whose `user_version` is below
 * `URLKEY_VERSION` (made before the canonical form of docs/url-space.md,
 * or new) has every row's key recomputed from its URI-R; when all agree,
 * `user_version` is set and the check is not made again; else nothing is
 * changed and StaleIndexError says to run `reindex` (which rebuilds the
 * index from the WARC files, in writing order, so that the same-second
 * rule holds between spellings that now share a key).
 *
 * @throws StaleIndexError naming a row whose key differs
 */
export async function checkUrlkeys(db: sqlite3.Database, file: string): Promise<void> {
  const [{ user_version: version }] = await readAll<{ user_version: number }>(db, 'PRAGMA user_version', {});
  if (version >= URLKEY_VERSION) return;
  for (let after = -Infinity; ;) {
    const rows = await readAll<{ id: number; urlkey: string; uri_r: string }>(
      db,
      'SELECT id, urlkey, uri_r FROM memento WHERE id > $after ORDER BY id LIMIT $limit',
      { $after: after, $limit: CHECK_PAGE },
    );
    for (const r of rows) {
      let key: string;
      try {
        key = exactUrlkey(r.uri_r);
      } catch {
        continue; // (no row of this version has such a URI-R: nothing to compare)
      }
      if (key !== r.urlkey) throw new StaleIndexError(file, r);
    }
    if (rows.length < CHECK_PAGE) break;
    after = rows[rows.length - 1].id;
  }
  await run(db, `PRAGMA user_version = ${URLKEY_VERSION}`);
}
