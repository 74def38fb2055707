/**
 * The index as CDXJ, the index format of pywb and OutbackCDX: one line per
 * memento, `urlkey timestamp {json}`, sorted bytewise (as `LC_ALL=C sort`
 * would), so that those tools can binary-search it and serve the archive's
 * WARC files. `memento-archive cdxj` writes it (docs/storage.md).
 *
 *   org,example)/a 20010320203500 {"url":"http://www.example.org/a","mime":"text/html","status":"200",
 *     "digest":"<base32>","length":"1234","offset":"5678","filename":"current/current-…-00001-ab12cd.warc.gz"}
 *
 * The urlkey is pywb's canonical SURT (shared/surt.ts), not the archive's
 * exact key; `length` and `offset` are those of the memento's record's
 * gzip member (its response record, or its revisit record); `filename` is
 * relative to `<data_dir>/warcs/`. A revisit is listed as pywb's
 * cdxj-indexer lists a WARC `revisit` record: `"mime":"warc/revisit"`,
 * the status of its HTTP head, the payload's digest.
 */
import { once } from 'node:events';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { Writable } from 'node:stream';
import { toTimestamp14 } from '#shared/http-date.js';
import { canonicalUrlkey } from '#shared/surt.js';
import type { NewMementoRow } from '../index/index-db.js';
import { base32 } from '../warcs/warc-scan.js';

/**
 * The digest of a CDX line: the payload digest's value in base32 without
 * its algorithm prefix, the form CDX files carry (pywb's indexer strips
 * `sha1:`; OutbackCDX stores digests base32-decoded). The archive's digests
 * are SHA-256 (`sha256:<hex>` → 52 base32 characters); a value already in
 * base32 is kept.
 */
export function cdxDigest(digest: string): string {
  const value = digest.slice(digest.indexOf(':') + 1);
  return /^(?:[0-9a-f]{2})+$/i.test(value) ? base32(Buffer.from(value, 'hex')) : value;
}

/** JSON with every character outside printable ASCII escaped, so that a line's string order is its byte order. */
function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(/[\u007f-\uffff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}

/**
 * The CDXJ line of an index row (no newline): `urlkey timestamp {json}`
 * with the fields of pywb's CDXJ, in its order: `url` (the URI-R), `mime`
 * (`unk` when none, as pywb; `warc/revisit` for a revisit, a row with
 * `refers_to`), `status`, `digest` ({@link cdxDigest}: the payload's, a
 * revisit's too), `length`, `offset` (of the memento's record's gzip
 * member — response or revisit —, bytes) and `filename` (relative to
 * `<data_dir>/warcs/`). Numbers are strings, as pywb writes them.
 */
export function cdxjLine(row: NewMementoRow): string {
  const json = {
    url: row.uri_r,
    mime: row.refers_to !== null ? 'warc/revisit' : row.mime || 'unk',
    status: String(row.status),
    digest: cdxDigest(row.digest),
    length: String(row.warc_length),
    offset: String(row.warc_offset),
    filename: row.warc_file,
  };
  return `${canonicalUrlkey(row.uri_r)} ${toTimestamp14(row.datetime)} ${asciiJson(json)}`;
}

/** Byte order of ASCII lines (what `LC_ALL=C sort` gives). */
const byteOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Writes `text` to `out`, waiting when its buffer is full. @throws (code `EPIPE`) once `out` is gone, e.g. a reader that stopped reading. */
async function put(out: Writable, text: string): Promise<void> {
  if (out.destroyed) throw Object.assign(new Error('the output was closed'), { code: 'EPIPE' });
  if (!out.write(text)) await once(out, 'drain');
}

/** Merges sorted run files into `out`, line by line (k-way, the smallest head line first). */
async function mergeRuns(files: string[], out: Writable): Promise<void> {
  const iters = files.map((f) => createInterface({ input: createReadStream(f), crlfDelay: Infinity })[Symbol.asyncIterator]());
  const heads: (string | null)[] = [];
  for (const it of iters) {
    const r = await it.next();
    heads.push(r.done ? null : r.value);
  }
  for (;;) {
    let min = -1;
    for (let i = 0; i < heads.length; i++) if (heads[i] !== null && (min < 0 || heads[i]! < heads[min]!)) min = i;
    if (min < 0) return;
    await put(out, heads[min] + '\n');
    const r = await iters[min].next();
    heads[min] = r.done ? null : r.value;
  }
}

/** Options of {@link writeCdxj}. */
export interface CdxjOptions {
  /** Lines sorted in memory at a time; more go to sorted run files that are merged at the end (default 200,000, about 60 MiB). */
  runLines?: number;
}

/**
 * Writes the CDXJ lines of `rows` to `out`, sorted bytewise, in bounded
 * memory: up to `runLines` lines are sorted in memory; a larger index is
 * sorted in runs written to a temporary folder (mode 0700, removed at the
 * end) and merged.
 *
 * @returns the number of lines written
 * @throws what reading the rows or writing `out` throws (the temporary folder is removed)
 */
export async function writeCdxj(rows: AsyncIterable<NewMementoRow>, out: Writable, opts: CdxjOptions = {}): Promise<number> {
  const runLines = opts.runLines ?? 200_000;
  let lines: string[] = [];
  let count = 0;
  let tmp: string | null = null;
  const runs: string[] = [];
  try {
    for await (const row of rows) {
      lines.push(cdxjLine(row));
      count++;
      if (lines.length < runLines) continue;
      tmp ??= await mkdtemp(path.join(os.tmpdir(), 'memento-cdxj-'));
      const file = path.join(tmp, `run-${runs.length}.cdxj`);
      await writeFile(file, lines.sort(byteOrder).join('\n') + '\n', { mode: 0o600 });
      runs.push(file);
      lines = [];
    }
    lines.sort(byteOrder);
    if (!runs.length) {
      for (let i = 0; i < lines.length; i += 1000) await put(out, lines.slice(i, i + 1000).join('\n') + '\n');
    } else {
      if (lines.length) {
        const file = path.join(tmp!, `run-${runs.length}.cdxj`);
        await writeFile(file, lines.join('\n') + '\n', { mode: 0o600 });
        runs.push(file);
      }
      lines = [];
      await mergeRuns(runs, out);
    }
    return count;
  } finally {
    if (tmp) await rm(tmp, { recursive: true, force: true });
  }
}
