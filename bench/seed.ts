/**
 * Bench data, built by the bench itself with the archive's own writers and
 * cached under `bench/.data/<name>-<stamp>/` (gitignored). The stamp hashes
 * the code that writes the data (this file, the index schema, the WARC
 * writer, the urlkey; and the ingest path for ingested data) and the parameters, so changed code seeds anew
 * and a repeated `npm run bench` does not.
 *
 * Two paths:
 * - {@link seedBulk} (1M mementos in about a minute): 1,000 real WARC
 *   `response`/`request` record pairs (one per host, 2 KB HTML), written
 *   with the archive's {@link WarcWriter}, and `perUri` index rows per URI-R
 *   inserted with the archive's {@link IndexDb.insertMany} in transactions
 *   of 20,000 rows; the rows of URI-R i point at record i mod 1,000 (a page
 *   of the same host). Writing a WARC pair per URI-R would take ~90 s more
 *   (WarcWriter.append: ~0.9 ms each here), and the benches that use this
 *   data (TimeGate, TimeMap) read only the index, never the WARC record.
 * - {@link seedIngest}: captures through the real ingest path
 *   ({@link ArchiveStore.ingest}: capture-record parser, digest, dedup,
 *   WARC pair, fsync, index row), 32 at a time.
 * - {@link seedText} (100k mementos with text in 1–3 minutes): the bulk
 *   path, and each memento's text in the full-text index, inserted in
 *   large transactions.
 *
 * Every path ends with the full-text index caught up ({@link textsCaughtUp}:
 * an empty text for each memento that has none), so that a daemon started
 * on the data does not spend the bench indexing it.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import sqlite3 from 'sqlite3';
import { validateArchiveConfig } from '../archive/config.js';
import { extractFromText } from '../archive/search/parse-text.js';
import { IndexDb, type NewMementoRow } from '../archive/store/index/index-db.js';
import { indexRow } from '../archive/store/index/index-row.js';
import type { MementoIndex } from '../archive/store/index/memento-index.js';
import { readAll, run } from '../archive/store/index/sqlite-calls.js';
import { ArchiveStore } from '../archive/store/store.js';
import { WarcWriter } from '../archive/store/warcs/warc-writer.js';
import { loadYamlFile } from '#shared/config.js';
import { formatHttpDate } from '#shared/http-date.js';
import { dataRoot, fmt, isAlive, note, page10k, stamp, writeArchiveConfig } from './lib.js';
import { bigPage, replayPage } from './pages.js';
import { pageText, searchPage } from './search-pages.js';

/** The code whose output the bulk data is (index schema, index rows, WARC writer, urlkey). */
const BULK_CODE = [
  'bench/seed.ts',
  'archive/store/index/index-db.ts',
  'archive/store/index/index-row.ts',
  'archive/store/warcs/warc-writer.ts',
  'shared/uri.ts',
];
/** The code whose output ingested data is: the bulk code plus the ingest path. */
const INGEST_CODE = [
  ...BULK_CODE,
  'archive/store/store.ts',
  'archive/store/ingest/body-spill.ts',
  'shared/capture-record.ts',
  'shared/http-head.ts',
  'shared/http-date.ts',
];
/** The code whose output ingested replay pages are: the ingest code plus the page builders. */
const PAGES_CODE = [...INGEST_CODE, 'bench/pages.ts'];

/** The index row of a bench memento: a 200 text/html page at `datetime` whose record is `rec` (archive/store/index/index-row.ts, as ingest makes it). */
function benchRow(uriR: string, datetime: number, digest: string, rec: { file: string; offset: number; length: number }): NewMementoRow {
  return indexRow({
    archiveId: 'bench',
    uriR,
    datetime,
    status: 200,
    responseHeaders: [['Content-Type', 'text/html']],
    requestHeaders: null,
    digest,
    warc: rec,
  });
}

/** A seeded archive: its config file (one archive `bench`) and what it holds. */
export interface Seeded {
  dir: string;
  configFile: string;
  /** URI-Rs, in seeding order. */
  uris: string[];
  /** Memento-Datetimes of each URI-R's mementos, epoch s (the same offsets for every URI-R, shifted by its index). */
  datetimes(i: number): number[];
  mementos: number;
}

/** Epoch s of 2020-01-01T00:00:00Z: the first memento of URI-R 0. */
export const T0 = Date.UTC(2020, 0, 1) / 1000;
/** Spacing of the mementos of one URI-R: 30 days. */
export const STEP = 30 * 86400;

/** URI-R number `i` of a data set: 1,000 hosts, paths under each. */
export function uriOf(i: number, prefix = 'p'): string {
  return `http://www${i % 1000}.example.org/${prefix}/${Math.floor(i / 1000)}/page-${i}.html`;
}

function datetimesOf(perUri: number) {
  return (i: number) => Array.from({ length: perUri }, (_, j) => T0 + j * STEP + (i % 86400));
}

/** Finds or builds the cached data dir `<name>-<stamp>`, removing stale `<name>-*` dirs. */
async function cached(
  name: string,
  code: string[],
  params: unknown,
  build: (dataDir: string, configFile: string) => Promise<void>,
): Promise<{ dir: string; configFile: string }> {
  const s = stamp(code, params);
  const dir = path.join(dataRoot, `${name}-${s}`);
  const configFile = path.join(dir, 'archive.yaml');
  if (existsSync(path.join(dir, 'DONE'))) return { dir, configFile };
  mkdirSync(dataRoot, { recursive: true });
  // Data of older stamps goes; a build in progress (`.tmp-<pid>`) of a live run stays.
  for (const d of readdirSync(dataRoot)) {
    if (!d.startsWith(`${name}-`)) continue;
    const tmp = /\.tmp-(\d+)$/.exec(d);
    if (tmp && isAlive(Number(tmp[1]))) continue;
    rmSync(path.join(dataRoot, d), { recursive: true, force: true });
  }
  const started = Date.now();
  note(`seeding ${name} (${JSON.stringify(params)}) …`);
  // Built under a temp name and renamed when complete, so that two runs at once never share a half-built archive.
  const tmpDir = `${dir}.tmp-${process.pid}`;
  writeArchiveConfig(tmpDir, 'data'); // relative: the folder is renamed
  await build(path.join(tmpDir, 'data'), path.join(tmpDir, 'archive.yaml'));
  await textsCaughtUp(path.join(tmpDir, 'data'));
  writeFileSync(path.join(tmpDir, 'DONE'), new Date().toISOString() + '\n');
  try {
    renameSync(tmpDir, dir);
  } catch {
    rmSync(tmpDir, { recursive: true, force: true }); // another run finished the same data first
  }
  note(`seeded ${name} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return { dir, configFile };
}

/** Rows marked per step by {@link textsCaughtUp}. */
const CAUGHT_UP_STEP = 20_000;

/**
 * Gives every memento of the seeded index that has no text yet, and whose
 * text the daemon's indexer would extract (archive/search/indexer.ts: an
 * HTML or plain-text response), an empty text, through the index's own
 * `text.missing` / `text.putMany`. Without it, a daemon started on seeded
 * data spends the whole bench catching up: its indexer walks every seeded
 * memento from row id 0 (about 400 pages a second here, a `text` worker
 * thread and the event loop's record reads beside the requests measured),
 * which is what an archive does once after an import or `reindex`, not
 * what its reads cost. Seeded data is thus an archive whose indexer has
 * caught up. The full-text index's own costs are measured by `search`
 * (its {@link seedText} stores each page's real text, which this leaves
 * as it is). Only for the SQLite index at `<dataDir>/index.sqlite3`;
 * nothing to do without one.
 */
async function textsCaughtUp(dataDir: string): Promise<void> {
  const file = path.join(dataDir, 'index.sqlite3');
  if (!existsSync(file)) return;
  const index = await IndexDb.open(file);
  try {
    for (let after = 0; ;) {
      const rows = await index.text.missing(after, CAUGHT_UP_STEP);
      if (!rows.length) break;
      await index.text.putMany(rows.map((r) => ({ id: r.id, title: '', body: '' })));
      after = rows[rows.length - 1].id;
    }
  } finally {
    await index.close();
  }
}

/** WARC record pairs written by {@link seedBulk} (one per host); the rows of URI-R i point at record i mod RECORDS. */
const RECORDS = 1000;
/** Index rows per transaction in {@link seedBulk}. */
const TX_ROWS = 20_000;
/** Texts per transaction in {@link seedText}. */
const TEXT_TX = 5_000;

/**
 * `uris` URI-Rs × `perUri` mementos each (see the module comment), URI-R
 * `i` = {@link uriOf}(i, prefix), memento `j` at T0 + j·30 days + (i mod 86400) s.
 */
export async function seedBulk(name: string, opts: { uris: number; perUri: number; prefix?: string; bodyBytes?: number }): Promise<Seeded> {
  const prefix = opts.prefix ?? 'p';
  const bodyBytes = opts.bodyBytes ?? 2048;
  const { dir, configFile } = await cached(name, BULK_CODE, { ...opts, prefix, bodyBytes, v: 1 }, async (dataDir, configFile) => {
    const config = validateArchiveConfig(loadYamlFile(configFile));
    mkdirSync(path.join(dataDir, 'warcs'), { recursive: true });
    const writer = new WarcWriter(path.join(dataDir, 'warcs'), 'bench', config.warcMaxBytes);
    const index = await IndexDb.open(path.join(dataDir, 'index.sqlite3'));
    const times = datetimesOf(opts.perUri);
    const body = page10k(1).subarray(0, bodyBytes);
    const digest = 'sha256:' + createHash('sha256').update(body).digest('hex');
    // One real WARC record pair for each of the first RECORDS URI-Rs (one per host).
    const records = [];
    for (let i = 0; i < Math.min(opts.uris, RECORDS); i++) {
      const uriR = uriOf(i, prefix);
      const u = new URL(uriR);
      const responseHead = Buffer.from(
        `HTTP/1.1 200 OK\r\nDate: ${formatHttpDate(times(i)[0])}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: ${body.length}\r\n\r\n`,
      );
      const requestHead = Buffer.from(`GET ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nUser-Agent: bench\r\n\r\n`);
      records.push(
        await writer.append({
          uriR,
          datetime: new Date(times(i)[0] * 1000),
          requestHead,
          responseHead,
          body: async function* () {
            yield body;
          },
          payloadDigest: digest,
        }),
      );
    }
    await writer.sync();
    let rows: NewMementoRow[] = [];
    let inserting: Promise<void> = Promise.resolve();
    for (let i = 0; i < opts.uris; i++) {
      const uriR = uriOf(i, prefix);
      const rec = records[i % RECORDS];
      for (const t of times(i)) {
        rows.push(benchRow(uriR, t, digest, rec));
      }
      if (rows.length >= TX_ROWS) {
        await inserting;
        inserting = index.insertMany(rows);
        rows = [];
        if ((i + 1) % 20_000 < Math.ceil(TX_ROWS / opts.perUri)) note(`  ${name}: ${i + 1} of ${opts.uris} URI-Rs`);
      }
    }
    await inserting;
    if (rows.length) await index.insertMany(rows);
    await writer.close();
    await index.close();
  });
  return {
    dir,
    configFile,
    uris: Array.from({ length: opts.uris }, (_, i) => uriOf(i, prefix)),
    datetimes: datetimesOf(opts.perUri),
    mementos: opts.uris * opts.perUri,
  };
}

/** A capture record's heads (request + response, `text/html; charset=utf-8` with `Content-Length`) for URI-R `uriR` dated `datetime` (epoch s). */
function captureHead(uriR: string, datetime: number, bodyLength: number): Buffer {
  const u = new URL(uriR);
  return Buffer.from(
    `GET ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nUser-Agent: bench\r\n\r\n` +
      `HTTP/1.1 200 OK\r\nDate: ${formatHttpDate(datetime)}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: ${bodyLength}\r\n\r\n`,
    'latin1',
  );
}

/**
 * Ingests `count` HTML captures through {@link ArchiveStore.ingest}, 32 at
 * a time: capture `i` is URI-R `uriOf(i)`, dated T0 + i s, body `bodyOf(i)`.
 */
async function ingestPages(configFile: string, name: string, count: number, uriOf: (i: number) => string, bodyOf: (i: number) => Buffer): Promise<void> {
  const config = validateArchiveConfig(loadYamlFile(configFile));
  const store = await ArchiveStore.open(config);
  const one = async (i: number) => {
    const body = bodyOf(i);
    const r = await store.ingest(Readable.from([captureHead(uriOf(i), T0 + i, body.length), body]), new Date());
    if (!r.created) throw new Error(`seeding ${name}: capture ${i} was not stored as a new memento`);
  };
  for (let i = 0; i < count; i += 32) {
    await Promise.all(Array.from({ length: Math.min(32, count - i) }, (_, k) => one(i + k)));
  }
  await store.close();
}

/**
 * `uris` URI-Rs with one 10 KB HTML memento each (a different page per
 * URI-R, {@link page10k}), ingested through {@link ArchiveStore.ingest}
 * 32 at a time. Memento `i` is dated T0 + i s.
 */
export async function seedIngest(name: string, opts: { uris: number; prefix?: string }): Promise<Seeded> {
  const prefix = opts.prefix ?? 'm';
  const { dir, configFile } = await cached(name, INGEST_CODE, { ...opts, prefix, v: 1 }, (_dataDir, configFile) =>
    ingestPages(configFile, name, opts.uris, (i) => uriOf(i, prefix), page10k),
  );
  return { dir, configFile, uris: Array.from({ length: opts.uris }, (_, i) => uriOf(i, prefix)), datetimes: (i) => [T0 + i], mementos: opts.uris };
}

/**
 * The captures of {@link seedIngest}`(name, opts)` (the same URI-Rs,
 * Memento-Datetimes and pages) ingested anew, through the same path, into
 * the archive of `configFile`: for an archive whose index or WARC files
 * live outside `bench/.data` (PostgreSQL, a bucket), which is not cached.
 */
export async function ingestAgain(seeded: Seeded, configFile: string, name: string): Promise<void> {
  const started = Date.now();
  await ingestPages(configFile, name, seeded.uris.length, (i) => seeded.uris[i], page10k);
  note(`ingested ${name} (${seeded.uris.length} captures) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/**
 * Copies every index row of a seeded archive's SQLite index into `to`
 * (another {@link MementoIndex}, e.g. PostgreSQL), `batch` rows per
 * `insertMany` (one transaction each): the same mementos, pointing at the
 * same WARC records. Returns the rows copied.
 */
export async function copyIndex(seeded: Seeded, to: MementoIndex, batch = 20_000): Promise<number> {
  const started = Date.now();
  const from = await IndexDb.open(path.join(seeded.dir, 'data', 'index.sqlite3'));
  let rows: NewMementoRow[] = [];
  let n = 0;
  try {
    for await (const { id: _id, ...row } of from.allMementos(undefined, batch)) {
      rows.push(row);
      if (rows.length >= batch) {
        await to.insertMany(rows);
        n += rows.length;
        rows = [];
      }
    }
    if (rows.length) await to.insertMany(rows);
    n += rows.length;
  } finally {
    await from.close();
  }
  note(`copied ${fmt(n)} index rows in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return n;
}

/**
 * `uris` URI-Rs with one {@link replayPage} memento each (30 KB of HTML
 * full of URLs, a different page per URI-R), ingested through
 * {@link ArchiveStore.ingest} 32 at a time. Memento `i` is dated T0 + i s.
 */
export async function seedReplayPages(name: string, opts: { uris: number; bytes?: number; prefix?: string }): Promise<Seeded> {
  const prefix = opts.prefix ?? 'r';
  const bytes = opts.bytes ?? 30 * 1024;
  const { dir, configFile } = await cached(name, PAGES_CODE, { ...opts, prefix, bytes, v: 1 }, (_dataDir, configFile) =>
    ingestPages(
      configFile,
      name,
      opts.uris,
      (i) => uriOf(i, prefix),
      (i) => replayPage(i, uriOf(i, prefix), bytes),
    ),
  );
  return { dir, configFile, uris: Array.from({ length: opts.uris }, (_, i) => uriOf(i, prefix)), datetimes: (i) => [T0 + i], mementos: opts.uris };
}

/**
 * One URI-R whose one memento is an HTML page of at least `bytes` bytes
 * ({@link bigPage}: the head of {@link replayPage}, then sections of
 * paragraphs with links and images to the end), streamed into
 * {@link ArchiveStore.ingest} chunk by chunk (never whole in memory),
 * dated T0. `bodyBytes`: the stored body's exact length.
 */
export async function seedBigPage(name: string, bytes: number): Promise<Seeded & { uri: string; bodyBytes: number }> {
  const uriR = 'http://www.example.org/big/the-long-page.html';
  const page = bigPage(uriR, bytes);
  const { dir, configFile } = await cached(name, PAGES_CODE, { bytes, uriR, v: 1 }, async (_dataDir, configFile) => {
    const store = await ArchiveStore.open(validateArchiveConfig(loadYamlFile(configFile)));
    async function* record() {
      yield captureHead(uriR, T0, page.length);
      yield* page.chunks();
    }
    const r = await store.ingest(Readable.from(record()), new Date());
    if (!r.created) throw new Error(`seeding ${name}: the page was not stored as a new memento`);
    await store.close();
  });
  return { dir, configFile, uri: uriR, uris: [uriR], datetimes: () => [T0], mementos: 1, bodyBytes: page.length };
}

/**
 * One URI-R with `count` mementos, one day apart from T0 (the TimeMap
 * bench), through the bulk path: one WARC record, `count` index rows.
 */
export async function seedOneUri(name: string, count: number): Promise<Seeded & { uri: string }> {
  const uriR = 'http://www.example.org/busy-page.html';
  const { dir, configFile } = await cached(name, BULK_CODE, { count, uriR, v: 1 }, async (dataDir, _configFile) => {
    mkdirSync(path.join(dataDir, 'warcs'), { recursive: true });
    const writer = new WarcWriter(path.join(dataDir, 'warcs'), 'bench', 1 << 30);
    const index = await IndexDb.open(path.join(dataDir, 'index.sqlite3'));
    const body = page10k(2);
    const digest = 'sha256:' + createHash('sha256').update(body).digest('hex');
    const rec = await writer.append({
      uriR,
      datetime: new Date(T0 * 1000),
      requestHead: Buffer.from('GET /busy-page.html HTTP/1.1\r\nHost: www.example.org\r\n\r\n'),
      responseHead: Buffer.from(`HTTP/1.1 200 OK\r\nDate: ${formatHttpDate(T0)}\r\nContent-Type: text/html\r\nContent-Length: ${body.length}\r\n\r\n`),
      body: async function* () {
        yield body;
      },
      payloadDigest: digest,
    });
    for (let start = 0; start < count; start += TX_ROWS) {
      const rows: NewMementoRow[] = [];
      for (let j = start; j < Math.min(count, start + TX_ROWS); j++) {
        rows.push(benchRow(uriR, T0 + j * 86400, digest, rec));
      }
      await index.insertMany(rows);
    }
    await writer.close();
    await index.close();
  });
  return { dir, configFile, uri: uriR, uris: [uriR], datetimes: () => Array.from({ length: count }, (_, j) => T0 + j * 86400), mementos: count };
}

/** Spacing of the mementos of {@link seedText}: 100,000 of them span five years from T0. */
export const TEXT_STEP = 1577;

/**
 * `count` URI-Rs ({@link uriOf}(i, 's'), 1,000 hosts), one HTML memento
 * each, dated T0 + i·{@link TEXT_STEP} s, with the text of
 * {@link searchPage}(i) in the full-text index (the full-text search
 * bench). Through the bulk path: the first 1,000 pages written as real
 * WARC record pairs, the index rows with {@link IndexDb.insertMany} (the
 * rows of URI-R i point at record i mod 1,000: the search reads the index
 * and the text only, never the record); then one row per memento in the
 * full-text table the index made (archive/store/index/text-queries.ts,
 * `memento_text`: rowid = the memento's row id, title, body), inserted
 * in transactions of {@link TEXT_TX}. The daemon's indexer inserts the
 * same row, one commit per text (`TextQueries.put`, which also checks
 * that the memento exists and has no text yet; that check inside a long
 * transaction made seeding 2.5× slower); FTS5 merges its segments
 * either way. Each text is the page's title and visible text
 * ({@link pageText}), checked against the archive's extractor on every
 * 100th page.
 */
export async function seedText(name: string, count: number): Promise<Seeded> {
  const prefix = 's';
  const code = [...BULK_CODE, 'archive/store/index/text-queries.ts', 'archive/search/parse-text.ts', 'bench/search-pages.ts'];
  const { dir, configFile } = await cached(name, code, { count, prefix, step: TEXT_STEP, v: 1 }, async (dataDir, configFile) => {
    const config = validateArchiveConfig(loadYamlFile(configFile));
    mkdirSync(path.join(dataDir, 'warcs'), { recursive: true });
    const writer = new WarcWriter(path.join(dataDir, 'warcs'), 'bench', config.warcMaxBytes);
    const file = path.join(dataDir, 'index.sqlite3');
    const index = await IndexDb.open(file);
    const records: { file: string; offset: number; length: number; digest: string }[] = [];
    for (let i = 0; i < Math.min(count, RECORDS); i++) {
      const uriR = uriOf(i, prefix);
      const body = searchPage(i);
      const payloadDigest = 'sha256:' + createHash('sha256').update(body).digest('hex');
      const u = new URL(uriR);
      const rec = await writer.append({
        uriR,
        datetime: new Date((T0 + i * TEXT_STEP) * 1000),
        requestHead: Buffer.from(`GET ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nUser-Agent: bench\r\n\r\n`),
        responseHead: Buffer.from(
          `HTTP/1.1 200 OK\r\nDate: ${formatHttpDate(T0 + i * TEXT_STEP)}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: ${body.length}\r\n\r\n`,
        ),
        body: async function* () {
          yield body;
        },
        payloadDigest,
      });
      records.push({ ...rec, digest: payloadDigest });
    }
    await writer.close();
    for (let start = 0; start < count; start += TX_ROWS) {
      const rows: NewMementoRow[] = [];
      for (let i = start; i < Math.min(count, start + TX_ROWS); i++) {
        const rec = records[i % RECORDS];
        rows.push(benchRow(uriOf(i, prefix), T0 + i * TEXT_STEP, rec.digest, rec));
      }
      await index.insertMany(rows);
    }
    await index.close();
    // The texts, into the table the index made (text-queries.ts), on a connection that holds a transaction open.
    const db = await new Promise<sqlite3.Database>((resolve, reject) => {
      const d = new sqlite3.Database(file, (err) => (err ? reject(err) : resolve(d)));
    });
    try {
      const ids = await readAll<{ id: number; uri_r: string }>(db, 'SELECT id, uri_r FROM memento ORDER BY id', {});
      const insert = db.prepare('INSERT INTO memento_text(rowid, title, body) VALUES ($id, $title, $body)');
      for (let start = 0; start < ids.length; start += TEXT_TX) {
        await run(db, 'BEGIN IMMEDIATE');
        const puts: Promise<void>[] = [];
        for (const { id, uri_r } of ids.slice(start, start + TEXT_TX)) {
          const i = Number(/page-(\d+)\.html$/.exec(uri_r)![1]);
          const html = searchPage(i).toString();
          const t = pageText(html);
          if (i % 100 === 0) {
            const want = extractFromText({ html: true, text: html });
            if (want.title !== t.title || want.body !== t.body) throw new Error(`seeding ${name}: page ${i}'s text differs from the extractor's`);
          }
          puts.push(run(insert, null, { $id: id, $title: t.title, $body: t.body }));
        }
        await Promise.all(puts);
        await run(db, 'COMMIT');
        if ((start / TEXT_TX) % 4 === 3) note(`  ${name}: ${start + TEXT_TX} of ${ids.length} texts`);
      }
      insert.finalize();
      const [n] = await readAll<{ n: number }>(db, 'SELECT count(*) AS n FROM memento_text', {});
      if (n.n !== count) throw new Error(`seeding ${name}: ${n.n} texts stored, not ${count}`);
    } finally {
      await new Promise<void>((resolve) => db.close(() => resolve()));
    }
  });
  return {
    dir,
    configFile,
    uris: Array.from({ length: count }, (_, i) => uriOf(i, prefix)),
    datetimes: (i) => [T0 + i * TEXT_STEP],
    mementos: count,
  };
}
