/**
 * `memento-archive cdxj` (issue 15 part 2): every memento as a CDXJ line,
 * sorted bytewise as pywb and OutbackCDX binary-search it; each line's
 * filename, offset and length lead to its WARC record (read back with
 * warcio), whose URL, date, status, media type and digest the line states;
 * the same offsets and lengths warcio's own CDX indexer finds.
 */
import { createReadStream, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import zlib from 'node:zlib';
import t from 'tap';
import { CDXIndexer, WARCParser } from 'warcio';
import { cdxDigest, cdxjLine, writeCdxj } from '../../../../archive/store/upkeep/cdxj.js';
import { IndexDb } from '../../../../archive/store/index/index-db.js';
import { base32 } from '../../../../archive/store/warcs/warc-scan.js';
import { toTimestamp14 } from '#shared/http-date.js';
import { canonicalUrlkey } from '#shared/surt.js';
import { captureRecord, putCapture, startArchive, TWO_ARCHIVES } from '../../../helpers/archive.js';
import { runCli, writeConfig } from '../../helpers.js';

interface Line {
  key: string;
  ts: string;
  json: { url: string; mime: string; status: string; digest: string; length: string; offset: string; filename: string };
}

const parse = (line: string): Line => {
  const [key, ts] = line.split(' ', 2);
  return { key, ts, json: JSON.parse(line.slice(key.length + ts.length + 2)) };
};

/** Fills an archive in `dataDir` with captures in both archives: www and not, case, query order, https, a URL captured three times, a binary body. */
async function filledArchive(dataDir: string): Promise<number> {
  const a = await startArchive(TWO_ARCHIVES, { dataDir });
  const captures = [
    captureRecord({ target: '/', host: 'www.example.org', date: 'Tue, 20 Mar 2001 20:35:00 GMT' }),
    captureRecord({ target: '/a', host: 'example.org', body: 'a1', date: 'Tue, 20 Mar 2001 20:35:00 GMT' }),
    captureRecord({ target: '/a', host: 'example.org', body: 'a2', date: 'Sun, 01 Feb 2026 00:00:00 GMT' }),
    captureRecord({ target: '/a', host: 'example.org', body: 'a3', date: 'Mon, 02 Feb 2026 00:00:00 GMT' }),
    captureRecord({ target: '/a-b', host: 'example.org', date: 'Mon, 02 Feb 2026 00:00:00 GMT' }),
    captureRecord({ target: '/a/b', host: 'example.org', date: 'Mon, 02 Feb 2026 00:00:00 GMT' }),
    captureRecord({ target: '/Page?b=2&a=1', host: 'www.example.org', date: 'Tue, 03 Feb 2026 00:00:00 GMT' }),
    captureRecord({ target: '/s', host: 'example.net', requestHeaders: [['X-Forwarded-Proto', 'https']], date: 'Tue, 03 Feb 2026 00:00:00 GMT' }),
    captureRecord({
      target: '/img.png',
      host: 'example.net',
      responseHeaders: [['Content-Type', 'image/png']],
      body: zlib.gzipSync('pixels'),
      date: 'Wed, 04 Feb 2026 00:00:00 GMT',
    }),
    captureRecord({ target: '/gone', host: 'example.net', status: 404, responseHeaders: [], body: '', date: 'Wed, 04 Feb 2026 00:00:00 GMT' }),
  ];
  for (const c of captures) if ((await putCapture(a, '', c)).status !== 201) throw new Error('capture not stored');
  await a.close(true);
  return captures.length;
}

/** The gzip member at `offset` of `file` (`length` bytes), read with warcio. */
async function recordAt(file: string, offset: number, length: number) {
  const fh = await open(file, 'r');
  const buf = Buffer.alloc(length);
  await fh.read(buf, 0, length, offset);
  await fh.close();
  for await (const rec of new WARCParser(Readable.from([buf]))) {
    await rec.readFully(false);
    return rec;
  }
  throw new Error(`no record at ${file}:${offset}`);
}

t.test('cdxj: one line per memento, sorted bytewise; each line finds its WARC record', async (t) => {
  const c = writeConfig();
  t.teardown(() => rmSync(c.dir, { recursive: true, force: true }));
  const n = await filledArchive(c.dataDir);
  const r = await runCli(['cdxj', '--config', c.config]);
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stderr, `cdxj: ${n} lines\n`);
  const lines = r.stdout.split('\n');
  t.equal(lines.pop(), '', 'every line ends in a newline');
  t.equal(lines.length, n, 'every memento');
  for (let i = 1; i < lines.length; i++) t.ok(Buffer.compare(Buffer.from(lines[i - 1]), Buffer.from(lines[i])) < 0, `sorted: line ${i} before line ${i + 1}`);
  t.same(
    lines.map((l) => l.split(' ')[0]).filter((k) => k.startsWith('org,example)/a')),
    ['org,example)/a', 'org,example)/a', 'org,example)/a', 'org,example)/a-b', 'org,example)/a/b'],
    'a key that is a prefix of another comes first ("a " < "a-" < "a/", as LC_ALL=C sort)',
  );

  for (const line of lines) {
    const { key, ts, json } = parse(line);
    t.equal(key, canonicalUrlkey(json.url), `${json.url}: pywb's key`);
    const rec = await recordAt(path.join(c.dataDir, 'warcs', json.filename), Number(json.offset), Number(json.length));
    t.equal(rec.warcType, 'response');
    t.equal(rec.warcTargetURI, json.url, `${json.url}: the record at ${json.filename}:${json.offset}`);
    t.equal(toTimestamp14(new Date(rec.warcDate!)), ts, 'its WARC-Date is the timestamp');
    t.equal(base32(Buffer.from(rec.warcPayloadDigest!.slice('sha256:'.length), 'hex')), json.digest, 'its payload digest, base32');
    t.equal(String(rec.httpHeaders!.statusCode), json.status);
    t.equal((rec.httpHeaders!.headers.get('content-type') ?? 'unk').split(';')[0], json.mime);
  }
  t.match(r.stdout, /^org,example\)\/page\?a=1&b=2 20260203000000 \{"url":"http:\/\/www\.example\.org\/Page\?b=2&a=1","mime":"text\/html","status":"200",/m);
  t.match(
    r.stdout,
    /^net,example\)\/gone 20260204000000 \{"url":"http:\/\/example\.net\/gone","mime":"unk","status":"404",/m,
    'no Content-Type: mime "unk", as pywb',
  );

  // warcio's own CDX indexer over the same WARC files finds the same records at the same offsets and lengths.
  const index = await IndexDb.open(path.join(c.dataDir, 'index.sqlite3'));
  const files = [...new Set((await index.dump()).map((row) => row.warc_file))];
  await index.close();
  const theirs = new Set<string>();
  const indexer = new CDXIndexer({ format: 'cdxj' });
  for await (const e of indexer.iterIndex(files.map((f) => ({ filename: f, reader: createReadStream(path.join(c.dataDir, 'warcs', f)) }))))
    theirs.add(`${e.url} ${e.timestamp} ${e.status} ${e.mime ?? 'unk'} ${e.offset} ${e.length} ${e.filename}`);
  const ours = lines.map(parse).map(({ ts, json }) => `${json.url} ${ts} ${json.status} ${json.mime} ${json.offset} ${json.length} ${json.filename}`);
  t.same(
    ours.filter((l) => !theirs.has(l)),
    [],
    'every line is one warcio indexes the same way',
  );

  const only = await runCli(['cdxj', '--config', c.config, '--archive', '2025']);
  t.equal(only.code, 0);
  t.equal(only.stderr, 'cdxj: 2 lines (archive 2025)\n');
  t.same(
    only.stdout
      .trim()
      .split('\n')
      .map((l) => parse(l).ts),
    ['20010320203500', '20010320203500'],
  );
  const unknown = await runCli(['cdxj', '--config', c.config, '--archive', 'nope']);
  t.equal(unknown.code, 2);
  t.equal(unknown.stdout, '');
  t.equal(unknown.stderr, 'memento-archive: no local archive "nope" in the config (2025, current)\n');
});

t.test('writeCdxj sorts an index larger than one run through run files on disk, with the same result', async (t) => {
  const rows = Array.from({ length: 50 }, (_, i) => ({
    archive_id: 'current',
    urlkey: '',
    uri_r: `http://example.org/${(i * 37) % 50}/${'x'.repeat(i % 7)}`,
    datetime: 1_770_000_000 + ((i * 13) % 17),
    status: 200,
    mime: 'text/html',
    digest: 'sha256:' + '0'.repeat(64),
    warc_file: 'current/f.warc.gz',
    warc_offset: i * 100,
    warc_length: 100,
    client_ip: null,
    refers_to: null,
  }));
  const run = async (runLines: number) => {
    const out = new PassThrough();
    const chunks: Buffer[] = [];
    out.on('data', (c: Buffer) => chunks.push(c));
    const n = await writeCdxj(Readable.from(rows), out, { runLines });
    return { n, text: Buffer.concat(chunks).toString() };
  };
  const inMemory = await run(1000);
  const onDisk = await run(7);
  t.equal(onDisk.n, 50);
  t.equal(onDisk.text, inMemory.text, 'eight runs merged = one sort in memory');
  t.same(inMemory.text.trim().split('\n'), rows.map(cdxjLine).sort(), 'bytewise order of whole lines');
});

t.test("cdxDigest: the payload digest's value in base32, without the algorithm", async (t) => {
  t.equal(cdxDigest('sha256:' + 'ff'.repeat(32)), base32(Buffer.alloc(32, 0xff)));
  t.equal(cdxDigest('sha256:' + 'ff'.repeat(32)).length, 52);
  t.equal(cdxDigest('sha1:B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A'), 'B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A', 'already base32: kept');
});

t.test(
  'cdxj leaves out the mementos the access rules hide (an export feeds replay tools that know nothing of the rules), every spelling of them',
  async (t) => {
    const c = writeConfig(
      'access:\n  - url: http://example.org/a*\n    action: exclude\n  - url: http://example.net/gone\n    action: block\n  - url: http://example.org/a/b\n    action: allow\n',
    );
    t.teardown(() => rmSync(c.dir, { recursive: true, force: true }));
    await filledArchive(c.dataDir);
    const a = await startArchive(TWO_ARCHIVES, { dataDir: c.dataDir });
    t.equal((await putCapture(a, '', captureRecord({ target: '/%61/x', host: 'example.org', date: 'Tue, 03 Feb 2026 00:00:00 GMT' }))).status, 201);
    await a.close(true);
    const r = await runCli(['cdxj', '--config', c.config]);
    t.equal(r.code, 0, r.stderr);
    const urls = r.stdout
      .trim()
      .split('\n')
      .map((l) => parse(l).json.url);
    t.same(
      urls.filter((u) => /example\.org\/a|example\.net\/gone/.test(u)),
      ['http://example.org/a/b'],
      'of /a*, /%61/x (the same URL as /a/x) and the blocked /gone, only the allowed /a/b is exported',
    );
    t.equal(urls.length, 11 - 6, 'the 5 others');
    t.equal(r.stderr, 'cdxj: 5 lines; 6 mementos the access rules hide left out\n');
  },
);

t.test(
  "cdxj lists a revisit as pywb's cdxj-indexer and warcio's CDX indexer list a WARC revisit record: mime \"warc/revisit\", its own status, offset and length, the payload's digest",
  async (t) => {
    const c = writeConfig();
    t.teardown(() => rmSync(c.dir, { recursive: true, force: true }));
    const a = await startArchive(TWO_ARCHIVES, { dataDir: c.dataDir });
    const at = (date: string, body: string) => captureRecord({ target: '/r', host: 'example.org', body, date });
    t.equal((await putCapture(a, '', at('Sun, 01 Feb 2026 00:00:00 GMT', 'same'))).status, 201, 'the original');
    t.equal((await putCapture(a, '', at('Sun, 01 Mar 2026 00:00:00 GMT', 'same'))).status, 201, 'a month later, the same: a revisit');
    t.equal((await putCapture(a, '', at('Wed, 01 Apr 2026 00:00:00 GMT', 'changed'))).status, 201, 'changed');
    await a.close(true);
    const r = await runCli(['cdxj', '--config', c.config]);
    t.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trim().split('\n').map(parse);
    t.same(
      lines.map((l) => `${l.ts} ${l.json.mime} ${l.json.status}`),
      ['20260201000000 text/html 200', '20260301000000 warc/revisit 200', '20260401000000 text/html 200'],
      'the revisit is a line of its own, mime warc/revisit',
    );
    const [original, revisit] = lines;
    t.equal(revisit.json.digest, original.json.digest, "the revisit's digest is the payload's: the original's");
    t.not(revisit.json.offset, original.json.offset);
    const rec = await recordAt(path.join(c.dataDir, 'warcs', revisit.json.filename), Number(revisit.json.offset), Number(revisit.json.length));
    t.equal(rec.warcType, 'revisit', 'filename, offset and length lead to the revisit record');
    t.equal(rec.warcTargetURI, 'http://example.org/r');
    t.equal(rec.warcDate, '2026-03-01T00:00:00Z');
    t.equal(rec.warcRefersToDate, '2026-02-01T00:00:00Z');

    const indexer = new CDXIndexer({ format: 'cdxj' });
    const theirs: string[] = [];
    for await (const e of indexer.iterIndex([
      { filename: revisit.json.filename, reader: createReadStream(path.join(c.dataDir, 'warcs', revisit.json.filename)) },
    ]))
      theirs.push(`${e.url} ${e.timestamp} ${e.mime} ${e.status} ${e.offset} ${e.length} ${e.filename}`);
    t.same(
      lines.map(({ ts, json }) => `${json.url} ${ts} ${json.mime} ${json.status} ${json.offset} ${json.length} ${json.filename}`),
      theirs,
      "warcio's CDX indexer indexes the file the same way, the revisit record included",
    );
  },
);
