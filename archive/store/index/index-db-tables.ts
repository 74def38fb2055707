/**
 * The tables of the SQLite index (index-db.ts): the mementos and the
 * evidence log's (archive/store/index/log-sqlite.ts), made when missing, and
 * the columns an index of an older version gains on open; the full-text
 * index of the mementos' text (text-queries.ts).
 */
import sqlite3 from 'sqlite3';
import { LOG_SCHEMA_SQLITE, upgradeLogTables } from './log-sqlite.js';
import { readAll, run } from './sqlite-calls.js';
import { makeTextTable } from './text-queries.js';

/** One row per memento, unique on (urlkey, archive id, Memento-Datetime); docs/storage.md. */
const MEMENTO_SCHEMA = `
CREATE TABLE IF NOT EXISTS memento (
  id INTEGER PRIMARY KEY,
  archive_id TEXT NOT NULL,
  urlkey TEXT NOT NULL,
  uri_r TEXT NOT NULL,
  datetime INTEGER NOT NULL,
  status INTEGER NOT NULL,
  mime TEXT NOT NULL,
  digest TEXT NOT NULL,
  warc_file TEXT NOT NULL,
  warc_offset INTEGER NOT NULL,
  warc_length INTEGER NOT NULL,
  client_ip TEXT,
  refers_to INTEGER,
  UNIQUE (urlkey, archive_id, datetime)
);
CREATE INDEX IF NOT EXISTS memento_urlkey_datetime ON memento (urlkey, datetime);
`;

/**
 * Gives an index made before revisits were recorded its `refers_to`
 * column (NULL in every existing row: each is a `response` record's).
 */
async function addRefersTo(db: sqlite3.Database): Promise<void> {
  const cols = await readAll<{ name: string }>(db, 'PRAGMA table_info(memento)', {});
  if (!cols.some((c) => c.name === 'refers_to')) await run(db, 'ALTER TABLE memento ADD COLUMN refers_to INTEGER');
}

/** Makes the index's tables when missing (an empty file, an index of an older version) and adds the columns older versions lack. */
export async function makeTables(db: sqlite3.Database): Promise<void> {
  await new Promise<void>((resolve, reject) => db.exec(MEMENTO_SCHEMA + LOG_SCHEMA_SQLITE, (err) => (err ? reject(err) : resolve())));
  await addRefersTo(db);
  await upgradeLogTables(db);
  await makeTextTable(db);
}
