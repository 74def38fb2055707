/**
 * `memento-archive migrate`: a one-host archive (SQLite index, WARC folder)
 * with revisits, two archives and a capture large enough for a multipart
 * upload, moved to a PostgreSQL index (throwaway server) and a bucket
 * (s3rver). A daemon on the new storage answers TimeMaps, Mementos, raw
 * (`id_`) bodies and the CDX API byte for byte as the one-host daemon did,
 * `verify` passes, new captures go on; the source is not changed; a
 * second run and a non-empty target are refused; a failed upload leaves
 * the database empty and the next run completes. The full-text index's
 * texts are copied (search answers at once, no text extracted again), and
 * `search-export` reads the same documents from either index.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import t, { type Test } from 'tap';
import { ts14 } from '../conformance/helpers.js';
import { captureRecord, putCapture, request, startArchive, type TestArchive, TWO_ARCHIVES } from '../helpers/archive.js';
import { startPostgres, type ThrowawayPostgres } from '../helpers/postgres.js';
import { startS3 } from '../helpers/s3.js';
import { runCli } from './helpers.js';

const URI = 'http://www.example.org/page?q=1';
const DATES = ['Mon, 01 Jan 2001 00:00:00 GMT', 'Fri, 01 Jun 2001 12:00:00 GMT', 'Thu, 01 Jan 2026 10:00:00 GMT'];
const REVISIT = 'Sun, 03 Jun 2001 12:00:00 GMT';
const BIG_DATE = 'Fri, 02 Jan 2026 10:00:00 GMT';
/** Larger than an upload part (8 MiB) and not compressible: its WARC file goes up in parts. */
const BIG = randomBytes(9 * 1024 * 1024);
const page = (date: string) => `<html><head><title>${date}</title></head><body>page at ${date}</body></html>`;

/** Three captures of a page (both archives), a duplicate, another page, a revisit of the page, a big file. */
async function feed(a: TestArchive): Promise<number[]> {
  const out: number[] = [];
  const put = async (target: string, date: string, body: string | Buffer, type = 'text/html') =>
    out.push((await putCapture(a, `http://www.example.org${target}`, captureRecord({ target, date, body, responseHeaders: [['Content-Type', type]] }))).status);
  for (const d of DATES) await put('/page?q=1', d, page(d));
  await put('/page?q=1', DATES[1], page(DATES[1]));
  await put('/other', DATES[0], 'other');
  await put('/page?q=1', REVISIT, page(DATES[1]));
  await put('/big.bin', BIG_DATE, BIG, 'application/octet-stream');
  return out;
}

/** What readers ask, with the answers (status, Memento headers, body) and the daemon's address taken out. */
async function answers(a: TestArchive): Promise<string[]> {
  const asks = [
    `/2025/timemap/link/${URI}`,
    `/current/timemap/json/${URI}`,
    `/2025/timegate/${URI}`,
    `/2025/memento/${ts14(DATES[1])}/${URI}`,
    `/2025/memento/${ts14(REVISIT)}/${URI}`,
    `/2025/memento/${ts14(REVISIT)}id_/${URI}`,
    `/2025/memento/${ts14(DATES[0])}id_/http://www.example.org/other`,
    `/current/memento/${ts14(DATES[2])}id_/${URI}`,
    `/current/memento/${ts14(BIG_DATE)}id_/http://www.example.org/big.bin`,
    '/cdx?url=www.example.org/&matchType=prefix&output=json&fl=urlkey,timestamp,url,mime,status,digest,archive',
    '/search?q=page&output=json',
    '/search?q=other&output=json',
    `/history?q=page&url=${encodeURIComponent(URI)}&output=json`,
  ];
  const out: string[] = [];
  for (const target of asks) {
    const res = await request(a.url + target);
    const keep = ['location', 'link', 'memento-datetime', 'content-type', 'content-length'].map((h) => `${h}: ${String(res.headers[h] ?? '')}`);
    // Each search engine writes its own snippets (and so its own content-length); the hits, titles and counts are the same.
    const body =
      res.body.length > 1 << 20
        ? `sha256 ${createHash('sha256').update(res.body).digest('hex')}`
        : res.text.replace(/nonce="[^"]*"/g, 'nonce="…"').replace(/"snippet":"(?:[^"\\]|\\.)*"/g, '"snippet":"…"');
    if (target.startsWith('/search')) keep.pop();
    out.push([`${target} → ${res.status}`, ...keep, body].join('\n').split(a.url).join('<archive>'));
  }
  return out;
}

/** sha256 of every file under `dir`, by relative path. */
function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir, { recursive: true }) as string[]) {
    const abs = path.join(dir, name);
    if (statSync(abs).isFile() && name !== 'daemon.pid') out[name] = createHash('sha256').update(readFileSync(abs)).digest('hex');
  }
  return out;
}

/** A one-host archive fed and stopped: its data folder, a config file of it, and its answers. */
async function oneHost(t: Test) {
  const a = await startArchive();
  t.same(await feed(a), [201, 201, 201, 200, 201, 201, 201], 'new, new, new, duplicate, new, revisit, new');
  await a.app.textIndexer.drained();
  t.equal(await a.store.index.text!.count(), 4, 'the texts of the three pages and /other');
  const want = await answers(a);
  await a.close(true);
  t.teardown(() => rmSync(a.dataDir, { recursive: true, force: true }));
  const config = path.join(a.dataDir, 'archive.yaml');
  writeFileSync(config, `listen: 127.0.0.1:0\ndata_dir: ${JSON.stringify(a.dataDir)}\n${TWO_ARCHIVES}`);
  return { dataDir: a.dataDir, config, want };
}

async function postgres(t: Test): Promise<ThrowawayPostgres> {
  const server = await startPostgres();
  t.teardown(() => server.stop());
  return server;
}

/** Rows of `memento` in the database at `url`. */
async function rowsIn(url: string): Promise<number> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return Number((await c.query('SELECT count(*) AS n FROM memento')).rows[0].n);
  } finally {
    await c.end();
  }
}

t.test('migrate to PostgreSQL and a bucket: the new daemon answers as the old one, verify passes, the source is unchanged', async (t) => {
  const server = await postgres(t);
  const db = await server.database('archive');
  const s3 = await startS3();
  t.teardown(() => s3.close());
  const src = await oneHost(t);
  const before = tree(src.dataDir);

  const r = await runCli(['migrate', '--config', src.config, '--from', 'sqlite', '--to', db, '--warcs', 's3://warcs/shared/', '--s3-endpoint', s3.endpoint]);
  t.equal(r.code, 0, r.stderr);
  t.match(
    r.stdout,
    /^migrate: 6 memento row\(s\), 4 memento_text row\(s\), 6 log_leaf row\(s\), \d+ log_node row\(s\), \d+ log_head row\(s\), \d+ log_checkpoint row\(s\) \(of 6 mementos\) to postgres:\/\/postgres@127\.0\.0\.1:\d+\/archive; 2 WARC file\(s\) \([\d.]+ MiB\) to s3:\/\/warcs\/shared\/migrated\/ \([\d.]+ s\)\n/,
  );
  // The advice ends with the exact block to paste: the bucket as the upload reached it (endpoint, path style), the key.
  const block =
    /\nnext: paste this into the config \(archive\.yaml\) of every daemon of the shared setup, start one, run memento-archive verify:\n([\s\S]+)$/.exec(
      r.stdout,
    )![1];
  t.equal(
    block.replace(/ +#.*$/gm, ''),
    `signing_key_file: ${JSON.stringify(path.join(src.dataDir, 'log-signing-key.pem'))}\nstorage:\n  index: ${db}\n  warcs: s3://warcs/shared/\n` +
      `  s3:\n    endpoint: ${s3.endpoint}\n    region: us-east-1\n    force_path_style: true\n\n`,
    'the config block names the key, the database, the bucket, its endpoint and path style',
  );
  t.same(tree(src.dataDir), before, 'the data folder (index and WARC files) is unchanged');
  const folderFiles = Object.keys(before).filter((f) => f.startsWith('warcs/'));
  for (const f of folderFiles)
    t.same(
      await s3.get(`shared/migrated/${path.basename(f)}`),
      readFileSync(path.join(src.dataDir, f)),
      `${path.basename(f)}: the object is the file, byte for byte`,
    );

  // The log's signing key goes with it (the next: block says so); another key is refused.
  const elsewhere = `${src.dataDir}-elsewhere`;
  t.teardown(() => rmSync(elsewhere, { recursive: true, force: true }));
  mkdirSync(elsewhere);
  writeFileSync(path.join(elsewhere, 'archive.yaml'), `listen: 127.0.0.1:0\ndata_dir: .\nstorage:\n  index: ${db}\n${TWO_ARCHIVES}`);
  const other = await runCli(['serve', '--config', path.join(elsewhere, 'archive.yaml')]);
  t.equal(other.code, 1);
  t.match(other.stderr, /the evidence log of archive \S+ was signed with another key .*give this daemon the signing_key_file the log was signed with/);
  // The daemon on the pasted block alone reads the migrated WARC files from the bucket (not from AWS, not from a folder).
  const storage = block;
  const b = await startArchive(storage + TWO_ARCHIVES);
  let bOpen = true;
  t.teardown(() => (bOpen ? b.close() : undefined));
  await b.app.textIndexer.drained();
  t.equal(b.app.textIndexer.stats.indexed, 0, 'no text extracted again from the bucket: the texts were copied');
  const got = await answers(b);
  for (const [i, w] of src.want.entries()) t.equal(got[i], w, w.split('\n')[0]);

  // verify on the new config, as the sysadmin runs it.
  const config = path.join(b.dataDir, 'archive.yaml');
  writeFileSync(config, `listen: 127.0.0.1:0\ndata_dir: ${JSON.stringify(b.dataDir)}\n${storage}${TWO_ARCHIVES}`);
  const v = await runCli(['verify', '--config', config]);
  t.equal(v.code, 0, v.stdout);
  t.match(v.stdout, /^verify: OK: 6 index rows, \d+ WARC records in 2 files/m);

  // New captures go on: new row ids after the copied ones, a revisit of a migrated original.
  t.equal((await putCapture(b, '', captureRecord({ target: '/new', date: BIG_DATE, body: 'new' }))).status, 201, 'a new capture');
  t.equal((await putCapture(b, '', captureRecord({ target: '/page?q=1', date: 'Sat, 03 Jan 2026 10:00:00 GMT', body: page(DATES[2]) }))).status, 201);
  t.equal(await b.store.index.count(), 8);
  const revisit = await request(`${b.url}/current/memento/20260103100000id_/${URI}`);
  t.equal(revisit.text, page(DATES[2]), "a revisit of a migrated original serves the original's body");
  await b.close(true);
  bOpen = false;
  const again = await runCli(['verify', '--config', config]);
  t.equal(again.code, 0, again.stdout);

  // A second run: the target holds rows.
  const twice = await runCli(['migrate', '--config', src.config, '--to', db, '--warcs', 's3://warcs/shared/', '--s3-endpoint', s3.endpoint]);
  t.equal(twice.code, 1);
  t.match(
    twice.stderr,
    /^memento-archive: migrate: postgres:\/\/\S+: the table memento holds 8 row\(s\); migrate copies into an empty index only; nothing was changed\n$/,
  );
  t.equal(await rowsIn(db), 8);
});

t.test(
  'migrate: the index alone (WARC files stay in the folder), purge and verify on it; a failed upload copies no row and the next run completes',
  async (t) => {
    const server = await postgres(t);
    const src = await oneHost(t);
    const before = tree(src.dataDir);
    const db = await server.database('alone');
    const r = await runCli(['migrate', '--config', src.config, '--to', db]);
    t.equal(r.code, 0, r.stderr);
    t.match(
      r.stdout,
      /^migrate: 6 memento row\(s\), 4 memento_text row\(s\), 6 log_leaf row\(s\), \d+ log_node row\(s\), \d+ log_head row\(s\), \d+ log_checkpoint row\(s\) \(of 6 mementos\) to \S+; the WARC files stay in \S+warcs \([\d.]+ s\)\n/,
    );
    const b = await startArchive(`storage:\n  index: ${db}\n${TWO_ARCHIVES}`, { dataDir: src.dataDir });
    await b.app.textIndexer.drained();
    t.equal(b.app.textIndexer.stats.indexed, 0, 'no text extracted again: the texts were copied');
    const got = await answers(b);
    await b.close();
    for (const [i, w] of src.want.entries()) t.equal(got[i], w, w.split('\n')[0]);
    t.same(tree(src.dataDir), before, 'the daemon on the new index changed nothing in the folder either');

    // search-export reads the texts from PostgreSQL as from SQLite: the same documents, the same _ids.
    const pgConfig = `${src.dataDir}-pg.yaml`;
    t.teardown(() => rmSync(pgConfig, { force: true }));
    writeFileSync(pgConfig, `listen: 127.0.0.1:0\ndata_dir: ${JSON.stringify(src.dataDir)}\nstorage:\n  index: ${db}\n${TWO_ARCHIVES}`);
    const onLite = await runCli(['search-export', '--config', src.config, '-o', '-']);
    const onPg = await runCli(['search-export', '--config', pgConfig, '-o', '-']);
    t.equal(onPg.code, 0, onPg.stderr);
    t.match(onPg.stderr, /^search-export: 4 document\(s\) to stdout \(index memento-archive\); last row \d+/);
    t.equal(onPg.stdout.split('\n').length, 9, 'four action and document lines, and the end');
    t.equal(onPg.stdout, onLite.stdout, 'the same bytes as from the SQLite index');

    // The store refuses connections: nothing is copied; then it is up, and the run completes.
    const port = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    const db2 = await server.database('second');
    const failed = await runCli(['migrate', '--config', src.config, '--to', db2, '--warcs', 's3://warcs/x/', '--s3-endpoint', `http://127.0.0.1:${port}`]);
    t.equal(failed.code, 1);
    t.match(
      failed.stderr,
      /^memento-archive: migrate: upload to s3:\/\/warcs\/x\/ failed after 0 file\(s\): .*; the index was not copied \(run migrate again\)\n$/,
    );
    t.equal(await rowsIn(db2), 0, 'no row copied');
    t.same(tree(src.dataDir), before, 'the source is unchanged');
    const s3 = await startS3();
    t.teardown(() => s3.close());
    const ok = await runCli(['migrate', '--config', src.config, '--to', db2, '--warcs', 's3://warcs/x/', '--s3-endpoint', s3.endpoint]);
    t.equal(ok.code, 0, ok.stderr);
    t.equal(await rowsIn(db2), 6);

    // purge on that setup (PostgreSQL index, WARC files in the folder): the rows follow the rewritten file.
    const p = await runCli(['purge', '--config', pgConfig, '--url', 'http://www.example.org/other']);
    t.equal(p.code, 0, p.stderr);
    t.match(p.stdout, /^purge: erased 1 capture\(s\) \(2 WARC record\(s\), 1 index row\(s\)\)/m);
    t.equal(await rowsIn(db), 5);
    const v = await runCli(['verify', '--config', pgConfig]);
    t.equal(v.code, 0, v.stdout);
    t.match(v.stdout, /^verify: OK: 5 index rows/m);
  },
);

t.test('migrate: bad options are refused in one line (exit 2)', async (t) => {
  const src = await oneHost(t);
  const cases: [string[], RegExp][] = [
    [['--from', 'mysql', '--to', 'postgres://x@h/db'], /--from "mysql": the only source is sqlite/],
    [[], /give the target index: --to postgres:/],
    [['--to', 'mysql://x@h/db'], /--to must be a URL like postgres:/],
    [['--to', 'postgres://x@h/db', '--warcs', 'http://bucket/'], /--warcs must be a URL like s3:\/\/bucket\/prefix\//],
    [['--to', 'postgres://x@h/db', '--s3-endpoint', 'http://h:1'], /--s3-endpoint and --s3-region go with --warcs/],
  ];
  for (const [args, message] of cases) {
    const r = await runCli(['migrate', '--config', src.config, ...args]);
    t.equal(r.code, 2, args.join(' '));
    t.match(r.stderr, new RegExp(`^memento-archive: migrate: ${message.source}.*\\n$`));
  }
});
