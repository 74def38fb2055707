/**
 * `memento-archive search-export [--config FILE] -o FILE.ndjson|- [--index NAME] [--base URL] [--archive ID] [--from DATE] [--to DATE] [--after-row N]`:
 * the full-text index as the NDJSON body of an OpenSearch / Elasticsearch
 * Bulk API request (docs/search-export.md): for every memento with a text
 * that the access rules show now (archive/read/texts.ts), an `index`
 * action line and the document's line. The document `_id` names the
 * memento (archive, Memento-Datetime, urlkey), not its row, so a second
 * export, after a `reindex` or a `migrate` too, replaces the documents of
 * the first instead of adding copies. Streamed: a page of texts at a time,
 * written as the output takes it. It only reads the index, so it runs
 * beside the daemon (as `cdxj` does), on SQLite or PostgreSQL.
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream, existsSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import { formatIsoSeconds, toTimestamp14 } from '#shared/http-date.js';
import { inContext } from '#shared/operator-error.js';
import { buildUriM } from '#shared/uri-m.js';
import { type ArchiveConfig } from '../config.js';
import { dateRange } from './date-range.js';
import { nowSeconds } from '../read/access-rules.js';
import { shownTexts, type TextWalk, type TextWalkCounts } from '../read/texts.js';
import { VisibleIndex } from '../read/visible-index.js';
import { isLocal } from '../spans.js';
import type { MementoIndex } from '../store/index/memento-index.js';
import { openIndex, sqliteIndexFile } from '../store/index/open-index.js';
import type { TextRow } from '../store/index/text-queries.js';
import { lockHolder } from '../store/lock.js';
import { progressBar, say } from './terminal.js';

/** The index name the documents go to when `--index` is not given. */
export const DEFAULT_INDEX = 'memento-archive';

/** The options of `search-export` as parsed from the command line. */
export interface SearchExportOptions {
  output?: string;
  index?: string;
  base?: string;
  archive?: string;
  from?: string;
  to?: string;
  'after-row'?: string;
}

/** The checked options. */
interface Checked {
  output: string;
  index: string;
  /** The archive's base URL, no trailing slash; `''`: addresses from the root (`/2025/memento/…`). */
  base: string;
  walk: TextWalk;
}

/**
 * The options checked against the config.
 * @returns the checked options, or the one-line reason they are wrong
 */
export function checkExportOptions(config: ArchiveConfig, o: SearchExportOptions): Checked | string {
  if (o.output === undefined || o.output === '') return 'give where to write: -o FILE.ndjson (a new file), or -o - for stdout';
  if (o.output !== '-' && existsSync(o.output)) return `${o.output} exists; give a new name (nothing is overwritten)`;
  if (o.output !== '-' && existsSync(`${o.output}.partial`))
    return `${o.output}.partial exists: an export that was stopped before it ended; remove it, or give another name`;
  const index = o.index ?? DEFAULT_INDEX;
  // OpenSearch's and Elasticsearch's rule for index names.
  if (!/^[a-z0-9][a-z0-9._-]*$/.test(index) || Buffer.byteLength(index) > 255)
    return `--index ${JSON.stringify(index)}: an index name is lower-case letters, digits, '.', '_' and '-' (not first), at most 255 bytes`;
  let base = config.baseUrl ?? '';
  if (o.base !== undefined) {
    if (!/^https?:\/\/[^/\s?#]+(\/[^\s?#]*)?$/.test(o.base))
      return `--base must be the archive's address like https://archive.example.org, not ${JSON.stringify(o.base)}`;
    base = o.base.replace(/\/+$/, '');
  }
  if (o.archive !== undefined && !config.archives.some((a) => a.id === o.archive && isLocal(a)))
    return `--archive: no local archive "${o.archive}" in the config (${config.archives.map((a) => a.id).join(', ')})`;
  const walk: TextWalk = { archive: o.archive };
  const range = dateRange(o);
  if (typeof range === 'string') return range;
  if (range.from !== undefined) walk.since = range.from;
  if (range.to !== undefined) walk.until = range.to;
  if (o['after-row'] !== undefined) {
    if (!/^\d{1,15}$/.test(o['after-row']))
      return `--after-row must be a row id (digits), the one a former export ended at, not ${JSON.stringify(o['after-row'])}`;
    walk.afterRow = Number(o['after-row']);
  }
  return { output: o.output, index, base, walk };
}

/** The document `_id` of a memento: SHA-256 (hex) of its archive, 14-digit Memento-Datetime and urlkey, the key that names it in every index of it. */
export function documentId(row: Pick<TextRow, 'archive_id' | 'datetime' | 'urlkey'>): string {
  return createHash('sha256')
    .update(`${row.archive_id}\n${toTimestamp14(row.datetime)}\n${row.urlkey}`)
    .digest('hex');
}

/**
 * The two lines (each ending in `\n`) of a memento in a Bulk API body: the
 * `index` action naming the index and the document `_id`, then the
 * document: `archive_id`, `urlkey`, `uri_r`, `memento_datetime` (ISO 8601,
 * UTC), `uri_m` (RFC 7089 URI-M, `{base}/{archive}/memento/{14 digits}/{URI-R}`),
 * `web_page` (the replay page for people, `{base}/web/{14 digits}/{URI-R}`),
 * `status`, `mime`, `digest` (the WARC-Payload-Digest), `title`, `body`.
 */
export function bulkLines(row: TextRow, index: string, base: string): string {
  const ts = toTimestamp14(row.datetime);
  const doc = {
    archive_id: row.archive_id,
    urlkey: row.urlkey,
    uri_r: row.uri_r,
    memento_datetime: formatIsoSeconds(row.datetime),
    uri_m: buildUriM(base, { archive: row.archive_id, timestamp: ts, modifier: '', uriR: row.uri_r }),
    web_page: `${base}/web/${ts}/${row.uri_r}`,
    status: row.status,
    mime: row.mime,
    digest: row.digest,
    title: row.title,
    body: row.body,
  };
  return `${JSON.stringify({ index: { _index: index, _id: documentId(row) } })}\n${JSON.stringify(doc)}\n`;
}

/** An output and the first error it emitted (a write error is emitted, not thrown). */
interface Output {
  stream: Writable;
  failed?: NodeJS.ErrnoException;
}

/** Writes the bulk lines of every shown text to `out`, waiting whenever it is full. @returns the documents written @throws the output's error */
async function writeAll(index: MementoIndex, visible: VisibleIndex, c: Checked, counts: TextWalkCounts, out: Output): Promise<number> {
  const bar = progressBar('search-export', 'rows');
  const total = process.stderr.isTTY ? await index.text!.count() : 0;
  let n = 0;
  try {
    for await (const row of shownTexts(index, visible, c.walk, counts)) {
      if (out.failed) throw out.failed;
      if (!out.stream.write(bulkLines(row, c.index, c.base))) await once(out.stream, 'drain');
      if (++n % 100 === 0) bar.update(n + counts.hidden, total);
    }
    bar.stop();
    return n;
  } catch (err) {
    bar.stop(false);
    throw err;
  }
}

/** Ends `out` (a file) and waits until its bytes are written; rejects with its error. */
async function finish(out: Writable): Promise<void> {
  out.end();
  await once(out, 'close');
}

/**
 * Runs `search-export` (module comment): the NDJSON on stdout (`-o -`) or
 * in a new file (written as `FILE.partial`, renamed when complete), then
 * one summary line on stderr: the documents written, the mementos the
 * rules hide left out, and the last row id read (give it as `--after-row`
 * to export only what came after).
 *
 * @returns the exit status: 0 written (possibly nothing); 2 bad options
 *   (nothing written); 1 no index, no full-text index, or `reindex` or
 *   `purge` at work on the data folder (one line on stderr). A reader that
 *   closes stdout early (`| head`) ends it quietly.
 * @throws OperatorError (exit status 1) when the index cannot be read or the file cannot be written
 */
export async function runSearchExport(config: ArchiveConfig, o: SearchExportOptions, stdout: Writable = process.stdout): Promise<number> {
  const c = checkExportOptions(config, o);
  if (typeof c === 'string') {
    say(`search-export: ${c}`);
    return 2;
  }
  if (config.indexPostgres === undefined && !existsSync(sqliteIndexFile(config.dataDir))) {
    say(`search-export: ${config.dataDir}: no index there (no archive yet?)`);
    return 1;
  }
  const holder = await lockHolder(config.dataDir);
  if (holder && (holder.what === 'reindex' || holder.what === 'purge')) {
    say(`search-export: ${holder.what} (pid ${holder.pid}) is rewriting the index; wait until it has finished`);
    return 1;
  }
  let index: MementoIndex;
  try {
    index = await openIndex(config);
  } catch (err) {
    const where = config.indexPostgres === undefined ? `cannot open the index in ${config.dataDir}: ` : '';
    throw inContext(err, { before: `search-export: ${where}`, otherwise: (e) => `search-export: cannot open the index in ${config.dataDir}: ${e.message}` });
  }
  const partial = `${c.output}.partial`;
  let out: Output | undefined;
  let opened = false;
  try {
    if (!index.text) {
      say('search-export: this index has no full-text index (its database has none)');
      return 1;
    }
    const visible = await VisibleIndex.open(index, config.access, config.archives, false);
    const counts: TextWalkCounts = { hidden: 0, lastRow: 0 };
    c.walk.now = nowSeconds();
    out = { stream: c.output === '-' ? stdout : createWriteStream(partial, { flags: 'wx' }) };
    const o = out;
    o.stream.on('error', (err: NodeJS.ErrnoException) => (o.failed ??= err));
    if (o.stream !== stdout) {
      // Opened before anything is written: a file that cannot be made (no such folder, no permission) is said at once.
      await once(o.stream, 'open');
      opened = true;
    }
    const n = await writeAll(index, visible, c, counts, o);
    if (o.failed) throw o.failed;
    if (o.stream !== stdout) {
      await finish(o.stream);
      await rename(partial, c.output);
    }
    process.stderr.write(
      `search-export: ${n} document(s) to ${c.output === '-' ? 'stdout' : c.output} (index ${c.index})` +
        (counts.hidden ? `; ${counts.hidden} memento(s) the access rules hide left out` : '') +
        `; last row ${counts.lastRow} (--after-row ${counts.lastRow} exports what comes after)\n`,
    );
    return 0;
  } catch (err) {
    const toStdout = out?.stream === stdout;
    if (toStdout && (out?.failed?.code === 'EPIPE' || (err as NodeJS.ErrnoException).code === 'EPIPE')) return 0;
    if (out && !toStdout) {
      out.stream.destroy();
      if (opened) await rm(partial, { force: true });
    }
    // A file is written whole or not at all; what went to stdout stays there.
    const after = toStdout ? '' : `; ${c.output} was not written`;
    throw inContext(err, { before: 'search-export: ', after, otherwise: (e) => (e.code ? `search-export: ${e.message}${after}` : undefined) });
  } finally {
    await index.close();
  }
}
