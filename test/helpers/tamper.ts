/**
 * What an attacker with write access to a stopped archive's data folder
 * (not its signing key) does, for the tests of what the archive then
 * says (test/archive/evidence/tamper.test.ts, test/e2e/verify-capture.test.ts):
 * SQL on the SQLite index, and a WARC record rewritten in place with its
 * WARC digests recomputed, so that the record itself looks intact.
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import sqlite3 from 'sqlite3';

export const sha = (b: Buffer | string) => 'sha256:' + createHash('sha256').update(b).digest('hex');

/** Runs SQL on the index file (the daemon stopped). */
export async function sql(dataDir: string, text: string, params: unknown[] = []): Promise<Record<string, unknown>[]> {
  const db = await new Promise<sqlite3.Database>((resolve, reject) => {
    const d = new sqlite3.Database(path.join(dataDir, 'index.sqlite3'), (err) => (err ? reject(err) : resolve(d)));
  });
  try {
    return await new Promise((resolve, reject) => db.all(text, params, (err, rows: Record<string, unknown>[]) => (err ? reject(err) : resolve(rows))));
  } finally {
    await new Promise<void>((r) => db.close(() => r()));
  }
}

export interface Row {
  id: number;
  warc_file: string;
  warc_offset: number;
  warc_length: number;
  digest: string;
}

/** The index row of the memento of `uri` at `date` (an HTTP-date). */
export async function rowOf(dataDir: string, uri: string, date: string): Promise<Row> {
  const [r] = await sql(dataDir, 'SELECT id, warc_file, warc_offset, warc_length, digest FROM memento WHERE uri_r = ? AND datetime = ?', [
    uri,
    Date.parse(date) / 1000,
  ]);
  return r as unknown as Row;
}

/** A WARC record's header fields set to `set`, its Content-Length and WARC digests recomputed over its (new) block, as a careful forger would. */
export function forge(record: Buffer, set: Record<string, string>, block?: (b: Buffer) => Buffer): Buffer {
  const end = record.indexOf('\r\n\r\n');
  let head = record.subarray(0, end).toString('utf8');
  let b = record.subarray(end + 4, record.length - 4);
  if (block) b = block(b);
  const field = (name: string, value: string) => {
    const re = new RegExp(`^${name}: .*$`, 'mi');
    head = re.test(head) ? head.replace(re, `${name}: ${value}`) : `${head}\r\n${name}: ${value}`;
  };
  for (const [k, v] of Object.entries(set)) field(k, v);
  field('Content-Length', String(b.length));
  field('WARC-Block-Digest', sha(b));
  if (/^WARC-Type: response$/m.test(head)) field('WARC-Payload-Digest', sha(b.subarray(b.indexOf('\r\n\r\n') + 4)));
  return Buffer.concat([Buffer.from(head + '\r\n\r\n'), b, Buffer.from('\r\n\r\n')]);
}

/**
 * Replaces the memento record of `row` in its WARC file by `edit` of it
 * (inflated; gzipped again), and moves the index rows after it by the
 * change in length, as a forger who wants the index to stay readable does.
 */
export async function rewriteRecord(dataDir: string, row: Row, edit: (rec: Buffer) => Buffer): Promise<Buffer> {
  const file = path.join(dataDir, 'warcs', row.warc_file);
  const bytes = readFileSync(file);
  const old = zlib.gunzipSync(bytes.subarray(row.warc_offset, row.warc_offset + row.warc_length));
  const rec = edit(old);
  const member = zlib.gzipSync(rec);
  writeFileSync(file, Buffer.concat([bytes.subarray(0, row.warc_offset), member, bytes.subarray(row.warc_offset + row.warc_length)]));
  const delta = member.length - row.warc_length;
  await sql(dataDir, 'UPDATE memento SET warc_length = ? WHERE id = ?', [member.length, row.id]);
  await sql(dataDir, 'UPDATE memento SET warc_offset = warc_offset + ? WHERE warc_file = ? AND warc_offset > ?', [delta, row.warc_file, row.warc_offset]);
  return rec;
}
