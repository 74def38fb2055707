/**
 * `memento-archive import` (issue 15 part 1), as a user runs it: exit
 * status, the lines it prints, the mementos the archive then serves.
 * A round trip through the archive's own WARC files; revisit, resource
 * and metadata records; refusals; damaged files; the data folder's lock;
 * import through a running daemon; the PUT's Memento-Datetime.
 */
import { spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import t from 'tap';
import { type DumpRow, IndexDb } from '../../../archive/store/index/index-db.js';
import { DataDirLock } from '../../../archive/store/lock.js';
import { verify } from '../../../archive/store/upkeep/maintenance.js';
import { listWarcFiles } from '../../../archive/store/warcs/warc-files.js';
import { WarcReader } from '../../../archive/store/warcs/warc-reader.js';
import { captureRecord, putCapture, request, startArchive, TWO_ARCHIVES } from '../../helpers/archive.js';
import { startDaemon } from '../../helpers/daemons.js';
import { exchange, httpRequest, httpResponse, recordId, sha1Digest, warcFile, warcRecord } from '../../helpers/warc.js';
import { prng, runCli, writeConfig } from '../helpers.js';

/** Every row of an index, without where its record is (which differs between two archives of the same mementos). */
async function mementos(dataDir: string): Promise<Omit<DumpRow, 'warc_file' | 'warc_offset' | 'warc_length'>[]> {
  const index = await IndexDb.open(path.join(dataDir, 'index.sqlite3'));
  try {
    return (await index.dump()).map(({ warc_file: _f, warc_offset: _o, warc_length: _l, ...r }) => r);
  } finally {
    await index.close();
  }
}

/** The stored response of every memento: status line, headers and body bytes, in index order. */
async function storedResponses(dataDir: string): Promise<{ head: string; body: Buffer }[]> {
  const index = await IndexDb.open(path.join(dataDir, 'index.sqlite3'));
  const reader = new WarcReader(path.join(dataDir, 'warcs'));
  try {
    const out: { head: string; body: Buffer }[] = [];
    for (const row of await index.dump()) {
      const r = await reader.read(row.warc_file, row.warc_offset, row.warc_length);
      const chunks: Buffer[] = [];
      for await (const c of r.body) chunks.push(Buffer.from(c));
      out.push({ head: [r.statusLine, ...r.headers.map(([k, v]) => `${k}: ${v}`)].join('\n'), body: Buffer.concat(chunks) });
    }
    return out;
  } finally {
    await reader.close();
    await index.close();
  }
}

/** The WARC files of a data folder, each archive's in writing order. */
async function warcPaths(dataDir: string): Promise<string[]> {
  const warcs = path.join(dataDir, 'warcs');
  return [...(await listWarcFiles(warcs)).values()].flat().map((f) => path.join(warcs, f));
}

t.test('round trip: the WARC files of an archive, imported into a fresh one, give the same mementos', async (t) => {
  const a = await startArchive();
  const random = prng(15);
  const big = Buffer.alloc(3 * 1024 * 1024, 0);
  for (let i = 0; i < big.length; i += 4) big.writeUInt32LE(Math.floor(random() * 2 ** 32), i);
  const day = (d: number, s = 0) => `${['Tue', 'Wed', 'Thu', 'Fri'][d - 20]}, ${d} Mar 2001 20:35:${String(s).padStart(2, '0')} GMT`;
  const captures: [string, Buffer, number][] = [
    ['/a', captureRecord({ target: '/a', date: day(20), body: 'version 1' }), 201],
    ['/a', captureRecord({ target: '/a', date: day(21), body: 'version 2' }), 201],
    ['/a', captureRecord({ target: '/a', date: day(22), body: 'version 1' }), 201],
    ['/a same second', captureRecord({ target: '/a', date: day(22), body: 'version 3' }), 409],
    ['/a again, a day later: a revisit', captureRecord({ target: '/a', date: day(23), body: 'version 1' }), 201],
    ['/a again, within the revisit interval', captureRecord({ target: '/a', date: day(23, 30), body: 'version 1' }), 200],
    ['https', captureRecord({ target: '/s', requestHeaders: [['X-Forwarded-Proto', 'https']], date: 'Sun, 01 Feb 2026 10:00:00 GMT' }), 201],
    ['client ip', captureRecord({ target: '/ip', requestHeaders: [['X-Client-IP', '192.0.2.7']], date: 'Mon, 02 Feb 2026 10:00:00 GMT' }), 201],
    [
      'gzip',
      captureRecord({
        target: '/gz',
        responseHeaders: [
          ['Content-Type', 'text/html'],
          ['Content-Encoding', 'gzip'],
        ],
        body: zlib.gzipSync('<p>compressed</p>'),
        date: 'Tue, 03 Feb 2026 10:00:00 GMT',
      }),
      201,
    ],
    [
      '3 MiB',
      captureRecord({ target: '/big', responseHeaders: [['Content-Type', 'application/octet-stream']], body: big, date: 'Sun, 01 Mar 2026 10:00:00 GMT' }),
      201,
    ],
    [
      '301',
      captureRecord({ target: '/old', status: 301, reason: 'Moved Permanently', responseHeaders: [['Location', 'http://www.example.org/new']], body: '' }),
      201,
    ],
    ['404', captureRecord({ target: '/missing', status: 404, reason: 'Not Found', responseHeaders: [['Content-Type', 'text/plain']], body: 'no' }), 201],
    ['no Date', captureRecord({ target: '/q?b=2&a=1', date: null }), 201],
  ];
  for (const [what, record, status] of captures) t.equal((await putCapture(a, '', record)).status, status, what);
  await a.close(true);
  t.teardown(() => rmSync(a.dataDir, { recursive: true, force: true }));

  const b = writeConfig();
  t.teardown(() => rmSync(b.dir, { recursive: true, force: true }));
  const files = await warcPaths(a.dataDir);
  t.equal(files.length, 2, 'one WARC file in each of the two archives');
  const r = await runCli(['import', '--config', b.config, ...files]);
  t.equal(r.code, 0, r.stderr);
  t.match(
    r.stdout,
    /^import: 2 files, 24 WARC records \([\d.]+ MiB, [\d.]+ s\): 10 new mementos, 1 revisit memento, 0 duplicates, 1 revisit record resolved, 0 revisit records unresolved \(skipped\), 0 refused; skipped 0 resource, 0 metadata, 0 other; 0 errors; with the data folder locked \(no daemon running\)$/m,
  );
  t.equal(r.stdout.trim().split('\n').length, 1, 'nothing else printed');

  const before = await mementos(a.dataDir);
  t.equal(before.length, 11, 'eleven mementos, one a revisit (one same-second capture refused, one duplicate)');
  t.same(await mementos(b.dataDir), before, 'the same mementos: URI-R, Memento-Datetime, archive, status, media type, digest, client address');
  t.same(await storedResponses(b.dataDir), await storedResponses(a.dataDir), 'the same status lines, headers and body bytes');

  const index = await IndexDb.open(path.join(b.dataDir, 'index.sqlite3'));
  t.teardown(() => index.close());
  const v = await verify(index, path.join(b.dataDir, 'warcs'));
  t.ok(v.ok, 'verify passes: ' + v.problems.join('; '));
  t.equal(v.unindexed, 0, 'every response record is indexed');

  const again = await runCli(['import', '--config', b.config, ...files]);
  t.match(again.stdout, /: 0 new mementos, 0 revisit mementos, 11 duplicates,/, 'imported twice: duplicates');
  t.same(await mementos(b.dataDir), before, 'and the same mementos still');
});

/** A WARC file of the kinds of record another crawler writes (response before request, as Heritrix does), gzip per record. */
function crawlerWarc(): { file: Buffer; responseId: string } {
  const html = (s: string) =>
    httpResponse(
      '200 OK',
      [
        ['Content-Type', 'text/html'],
        ['Content-Length', String(s.length)],
      ],
      s,
    );
  const alpha = exchange('http://example.org/a', '2026-02-01T00:00:00Z', html('alpha'));
  const revisit = (uri: string, date: string, fields: [string, string][], head: Buffer) =>
    warcRecord(
      [
        ['WARC-Type', 'revisit'],
        ['WARC-Record-ID', recordId()],
        ['WARC-Date', date],
        ['WARC-Target-URI', uri],
        ['WARC-Profile', 'http://netpreserve.org/warc/1.1/revisit/identical-payload-digest'],
        ['Content-Type', 'application/http; msgtype=response'],
        ...fields,
      ],
      head,
    );
  const head200 = Buffer.from('HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5\r\n\r\n');
  const chunked = httpResponse(
    '200 OK',
    [
      ['Content-Type', 'text/plain'],
      ['Transfer-Encoding', 'chunked'],
    ],
    '5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n',
  );
  const badChunked = httpResponse(
    '200 OK',
    [
      ['Content-Type', 'text/plain'],
      ['Transfer-Encoding', 'chunked'],
    ],
    'zz\r\nhello\r\n0\r\n\r\n',
  );
  const records = [
    warcRecord(
      [
        ['WARC-Type', 'warcinfo'],
        ['WARC-Record-ID', recordId()],
        ['WARC-Date', '2026-02-01T00:00:00Z'],
        ['Content-Type', 'application/warc-fields'],
      ],
      'software: test\r\n',
    ),
    ...alpha.records,
    // The same payload a day later: resolved by WARC-Refers-To-Target-URI/Date; a revisit memento (a day is the revisit interval).
    revisit(
      'http://example.org/a',
      '2026-02-02T00:00:00Z',
      [
        ['WARC-Refers-To-Target-URI', 'http://example.org/a'],
        ['WARC-Refers-To-Date', '2026-02-01T00:00:00Z'],
        ['WARC-Payload-Digest', sha1Digest('alpha')],
      ],
      head200,
    ),
    // Another URI with that payload, by record id: a memento with alpha's body, stored as a revisit of /a (never a second copy of it).
    revisit('http://example.org/b', '2026-02-03T00:00:00Z', [['WARC-Refers-To', alpha.id]], head200),
    // By payload digest alone, a 304 (server-not-modified): alpha's head and body; a revisit of /a too.
    revisit('http://example.org/c', '2026-02-04T00:00:00Z', [['WARC-Payload-Digest', sha1Digest('alpha')]], Buffer.from('HTTP/1.1 304 Not Modified\r\n\r\n')),
    // Refers to a record nobody has.
    revisit(
      'http://example.org/d',
      '2026-02-05T00:00:00Z',
      [
        ['WARC-Refers-To-Target-URI', 'http://example.org/nowhere'],
        ['WARC-Refers-To-Date', '2026-01-01T00:00:00Z'],
      ],
      head200,
    ),
    warcRecord(
      [
        ['WARC-Type', 'resource'],
        ['WARC-Record-ID', recordId()],
        ['WARC-Date', '2026-02-01T00:00:00Z'],
        ['WARC-Target-URI', 'http://example.org/log.txt'],
        ['Content-Type', 'text/plain'],
      ],
      'a crawl log',
    ),
    warcRecord(
      [
        ['WARC-Type', 'metadata'],
        ['WARC-Record-ID', recordId()],
        ['WARC-Date', '2026-02-01T00:00:00Z'],
        ['WARC-Target-URI', 'http://example.org/a'],
        ['Content-Type', 'application/warc-fields'],
      ],
      'outlink: http://example.org/b\r\n',
    ),
    ...exchange('http://example.org/post', '2026-02-01T00:00:01Z', html('posted'), { request: httpRequest('http://example.org/post', [], 'POST') }).records,
    ...exchange('http://example.org/chunked', '2026-02-01T00:00:02Z', chunked).records,
    ...exchange('http://example.org/bad-chunked', '2026-02-01T00:00:03Z', badChunked).records,
    warcRecord(
      [
        ['WARC-Type', 'response'],
        ['WARC-Record-ID', recordId()],
        ['WARC-Date', '2026-02-01T00:00:04Z'],
        ['WARC-Target-URI', 'dns:example.org'],
        ['Content-Type', 'text/dns'],
      ],
      '20260201000004\r\nexample.org. 300 IN A 192.0.2.1\r\n',
    ),
  ];
  return { file: warcFile(records, true), responseId: alpha.id };
}

t.test('revisit records resolve to the memento they repeat; resource and metadata records are skipped and counted; refusals are listed', async (t) => {
  const c = writeConfig();
  t.teardown(() => rmSync(c.dir, { recursive: true, force: true }));
  const file = path.join(c.dir, 'crawl.warc.gz');
  writeFileSync(file, crawlerWarc().file);
  const r = await runCli(['import', '--config', c.config, file]);
  t.equal(r.code, 0, r.stderr);
  t.match(
    r.stdout,
    /^import: 1 file, 16 WARC records \([\d.]+ MiB, [\d.]+ s\): 2 new mementos, 3 revisit mementos, 0 duplicates, 3 revisit records resolved, 1 revisit record unresolved \(skipped\), 2 refused; skipped 1 resource, 1 metadata, 1 other; 0 errors; /m,
  );
  t.match(
    r.stdout,
    new RegExp(
      `^unresolved: ${file}:\\d+ http://example.org/d: revisit of http://example.org/nowhere, which is neither in this import nor in the archive; skipped$`,
      'm',
    ),
  );
  t.match(r.stdout, new RegExp(`^refused: ${file}:\\d+ http://example.org/post: 400 embedded request method POST is not archived`, 'm'));
  t.match(r.stdout, new RegExp(`^refused: ${file}:\\d+ http://example.org/bad-chunked: the chunked body has a bad chunk size line "zz"$`, 'm'));

  const a = await startArchive(TWO_ARCHIVES, { dataDir: c.dataDir });
  t.teardown(() => a.close());
  const raw = (ts: string, uri: string) => request(`${a.url}/current/memento/${ts}id_/${uri}`);
  for (const [ts, uri] of [
    ['20260201000000', 'http://example.org/a'],
    ['20260203000000', 'http://example.org/b'],
    ['20260204000000', 'http://example.org/c'],
  ]) {
    const m = await raw(ts, uri);
    t.equal(m.status, 200, uri);
    t.equal(
      m.headers['memento-datetime'],
      new Date(`${ts.slice(0, 4)}-${ts.slice(4, 6)}-${ts.slice(6, 8)}T00:00:00Z`).toUTCString(),
      `${uri}: Memento-Datetime is the WARC-Date`,
    );
    t.equal(m.text, 'alpha', `${uri}: the body of the record the revisit refers to`);
    t.equal(m.headers['content-type'], 'text/html');
  }
  for (const [ts, uri] of [
    ['20260203000000', 'http://example.org/b'],
    ['20260204000000', 'http://example.org/c'],
  ]) {
    const rec = await request(`${a.url}/current/record/${ts}/${uri}`);
    t.match(rec.text, /^WARC-Type: revisit\r$/m, `${uri}: a revisit record`);
    t.match(rec.text, /^WARC-Refers-To-Target-URI: http:\/\/example\.org\/a\r$/m, `${uri}: of /a`);
  }
  const tm = await request(`${a.url}/current/timemap/link/http://example.org/a`);
  t.equal(tm.text.match(/rel="[^"]*memento"/g)?.length, 2, 'the revisit of /a a day later is a memento of its own (a revisit)');
  const again = await raw('20260202000000', 'http://example.org/a');
  t.equal(again.text, 'alpha', "the revisit replays the original's body");
  const ch = await raw('20260201000002', 'http://example.org/chunked');
  t.equal(ch.text, 'hello world', 'a chunked body is stored without its transfer coding');
  t.equal(ch.headers['transfer-encoding'], undefined);
  t.equal((await raw('20260201000004', 'dns:example.org')).status, 400, 'a dns: record is no memento');
});

t.test('two different records of one URI-R in the same second: the first is imported, the second refused (409), an identical one a duplicate', async (t) => {
  const c = writeConfig();
  t.teardown(() => rmSync(c.dir, { recursive: true, force: true }));
  const file = path.join(c.dir, 'pair.warc.gz');
  const page = (s: string) =>
    httpResponse(
      '200 OK',
      [
        ['Content-Type', 'text/html'],
        ['Content-Length', String(s.length)],
      ],
      s,
    );
  const at = '2026-02-01T00:00:00Z';
  writeFileSync(
    file,
    warcFile(
      [
        ...exchange('http://example.org/x', at, page('one')).records,
        ...exchange('http://example.org/x', at, page('two')).records,
        ...exchange('http://example.org/x', at, page('one')).records,
      ],
      true,
    ),
  );
  const r = await runCli(['import', '--config', c.config, file]);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /: 1 new memento, 0 revisit mementos, 1 duplicate, 0 revisit records resolved, 0 revisit records unresolved \(skipped\), 1 refused;/);
  t.match(
    r.stdout,
    new RegExp(
      `^refused: ${file}:\\d+ http://example.org/x: 409 conflict: a different capture of this URI-R is stored at the same second, current/memento/20260201000000/http://example.org/x; nothing stored$`,
      'm',
    ),
  );
  const a = await startArchive(TWO_ARCHIVES, { dataDir: c.dataDir });
  t.teardown(() => a.close());
  t.equal((await request(`${a.url}/current/memento/20260201000000id_/http://example.org/x`)).text, 'one', 'the first record is the memento');
  const v = await verify(a.store.index, a.store.warcsDir);
  t.equal(v.unindexed, 0, 'the refused record was not written');
});

t.test('a damaged file: one line naming the file and the offset, exit status 1; what came before the damage stays imported', async (t) => {
  const c = writeConfig();
  t.teardown(() => rmSync(c.dir, { recursive: true, force: true }));
  // wget's order: request first. Five files of random bytes (gzip cannot shrink them), gzip per record; cut in the middle of the fourth response.
  const random = prng(4);
  const members: Buffer[] = [];
  for (let i = 1; i <= 5; i++) {
    const body = Buffer.from(Array.from({ length: 40_000 }, () => Math.floor(random() * 256)));
    const ex = exchange(
      `http://example.org/p${i}`,
      `2026-03-0${i}T00:00:00Z`,
      httpResponse(
        '200 OK',
        [
          ['Content-Type', 'application/octet-stream'],
          ['Content-Length', String(body.length)],
        ],
        body,
      ),
      { requestFirst: true, version: 'WARC/1.0' },
    );
    members.push(...ex.records.map((r) => zlib.gzipSync(r)));
  }
  const fourthResponse = members.slice(0, 7).reduce((n, m) => n + m.length, 0);
  const cut = path.join(c.dir, 'cut.warc.gz');
  writeFileSync(cut, Buffer.concat(members).subarray(0, fourthResponse + Math.floor(members[7].length / 2)));
  const r = await runCli(['import', '--config', c.config, cut]);
  t.equal(r.code, 1);
  t.match(
    r.stderr,
    new RegExp(
      `^memento-archive: ${cut}: damaged at offset ${fourthResponse}: the file ends inside this record: its block has \\d+ of 40\\d{3} bytes; what comes before that offset is imported, nothing after it is read\\n$`,
    ),
  );
  t.match(r.stdout, /: 3 new mementos, .* 1 error; /);
  t.same(
    (await mementos(c.dataDir)).map((m) => m.uri_r),
    ['http://example.org/p1', 'http://example.org/p2', 'http://example.org/p3'],
    'the three files before the damage',
  );
  // Cut inside the gzip header of a member: warcio ends quietly there; the import does not.
  writeFileSync(cut, Buffer.concat(members).subarray(0, fourthResponse + 5));
  const r2 = await runCli(['import', '--config', c.config, cut]);
  t.equal(r2.code, 1);
  t.match(
    r2.stderr,
    new RegExp(`^memento-archive: ${cut}: damaged at offset ${fourthResponse}: 5 bytes at the end of the file are not a complete WARC record`),
  );
  t.match(r2.stdout, /: 0 new mementos, 0 revisit mementos, 3 duplicates, .* 1 error; /);

  // Not a WARC file at all.
  const html = path.join(c.dir, 'page.warc');
  writeFileSync(html, '<html><body>not a WARC file</body></html>\n');
  const h = await runCli(['import', '--config', c.config, html]);
  t.equal(h.code, 1);
  t.match(h.stderr, new RegExp(`^memento-archive: ${html}: damaged at offset 0: not a WARC record \\(it begins "<html><body>not a WARC f"\\)`));
  t.match(h.stdout, /: 0 new mementos, 0 revisit mementos, 0 duplicates,/);

  // A block that does not match its WARC-Block-Digest: that record is left out, the others are imported.
  const good = exchange('http://example.org/good', '2026-03-10T00:00:00Z', httpResponse('200 OK', [['Content-Length', '4']], 'good'));
  const bad = httpResponse('200 OK', [['Content-Length', '3']], 'bad');
  const badRecord = warcRecord(
    [
      ['WARC-Type', 'response'],
      ['WARC-Record-ID', recordId()],
      ['WARC-Date', '2026-03-11T00:00:00Z'],
      ['WARC-Target-URI', 'http://example.org/bad'],
      ['Content-Type', 'application/http; msgtype=response'],
    ],
    bad,
    { blockDigest: sha1Digest('something else') },
  );
  const mixed = path.join(c.dir, 'mixed.warc');
  writeFileSync(mixed, warcFile([badRecord, ...good.records], false));
  const m = await runCli(['import', '--config', c.config, mixed]);
  t.equal(m.code, 1);
  t.match(m.stdout, new RegExp(`^damaged: ${mixed}:0 http://example.org/bad: the record's block does not match its WARC-Block-Digest; not imported$`, 'm'));
  t.match(m.stdout, /: 1 new memento, .* 1 error; /);

  // A file that cannot be read: nothing at all is imported, exit status 2.
  const rows = (await mementos(c.dataDir)).length;
  const missing = await runCli(['import', '--config', c.config, mixed, path.join(c.dir, 'nothing.warc.gz')]);
  t.equal(missing.code, 2);
  t.equal(missing.stderr, `memento-archive: ${path.join(c.dir, 'nothing.warc.gz')}: cannot read it (ENOENT); nothing imported\n`);
  t.equal((await mementos(c.dataDir)).length, rows, 'nothing imported');
  t.equal((await runCli(['import', '--config', c.config])).code, 2, 'no file: a usage error');
});

/** The CLI run as {@link runCli} does, also telling its peak resident memory (bytes, from the kernel's count at exit). */
async function runCliPeak(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string; peak: number }> {
  const peakFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'peak-')), 'rss');
  const hook = `import fs from 'node:fs'; process.on('exit', () => fs.writeFileSync(${JSON.stringify(peakFile)}, String(process.resourceUsage().maxRSS * 1024)));`;
  const p = spawn(process.execPath, ['--import', `data:text/javascript,${encodeURIComponent(hook)}`, path.resolve('bin/memento-archive.js'), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  p.stdout.on('data', (d) => (stdout += d));
  p.stderr.on('data', (d) => (stderr += d));
  const code = await new Promise<number | null>((resolve, reject) => p.on('error', reject).on('close', resolve));
  const peak = Number(readFileSync(peakFile, 'utf8'));
  rmSync(path.dirname(peakFile), { recursive: true, force: true });
  return { code, stdout, stderr, peak };
}

/** `prefix` then zero bytes up to `size` in all, as a sparse file (no disk used, no newline in the zeros). */
function sparseFile(file: string, prefix: Buffer, size: number): void {
  writeFileSync(file, prefix);
  truncateSync(file, size);
}

/** One gzip member of `prefix` and then `zeros` zero bytes, made as a stream (never held decoded). */
async function gzipMember(prefix: string, zeros: number): Promise<Buffer> {
  const z = zlib.createGzip({ level: 1 });
  const out: Buffer[] = [];
  z.on('data', (c: Buffer) => out.push(c));
  const ended = new Promise((resolve, reject) => z.once('end', resolve).once('error', reject));
  z.write(prefix);
  const mib = Buffer.alloc(1024 * 1024);
  for (let left = zeros; left > 0; left -= mib.length) if (!z.write(mib.subarray(0, Math.min(left, mib.length)))) await once(z, 'drain');
  z.end();
  await ended;
  return Buffer.concat(out);
}

t.test('a WARC header line without end (200 MiB): damaged at the offset of that record, in bounded memory; an HTTP head without end is refused', async (t) => {
  const c = writeConfig();
  t.teardown(() => rmSync(c.dir, { recursive: true, force: true }));
  const good = exchange('http://example.org/ok', '2026-03-01T00:00:00Z', httpResponse('200 OK', [['Content-Length', '2']], 'ok')).records;
  const baseFile = path.join(c.dir, 'good.warc');
  writeFileSync(baseFile, warcFile(good, false));
  const base = await runCliPeak(['import', '--config', c.config, baseFile]);
  t.equal(base.code, 0, 'a good file: imported');
  const MiB = 1024 * 1024;
  const LINE = 'WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: http://example.org/';
  const after = (r: { stderr: string }, file: string, offset: number) =>
    t.equal(
      r.stderr,
      `memento-archive: ${file}: damaged at offset ${offset}: the WARC header is longer than 65536 bytes (a line without end?); what comes before that offset is imported, nothing after it is read\n`,
      'one line naming the file and the offset of the record',
    );

  const plain = path.join(c.dir, 'line.warc');
  const before = warcFile(good, false);
  sparseFile(plain, Buffer.concat([before, Buffer.from(LINE)]), before.length + 200 * MiB);
  const p = await runCliPeak(['import', '--config', c.config, plain]);
  t.equal(p.code, 1, 'plain file: exit status 1');
  after(p, plain, before.length);
  t.match(p.stdout, /: 0 new mementos, 0 revisit mementos, 1 duplicate, .* 1 error; /, 'the records before it are read');
  t.ok(p.peak - base.peak < 64 * MiB, `plain file: peak memory ${((p.peak - base.peak) / MiB).toFixed(1)} MiB above a small import's`);

  const gz = path.join(c.dir, 'line.warc.gz');
  const members = warcFile(good, true);
  writeFileSync(gz, Buffer.concat([members, await gzipMember(LINE, 200 * MiB)]));
  const g = await runCliPeak(['import', '--config', c.config, gz]);
  t.equal(g.code, 1, 'gzip file: exit status 1');
  after(g, gz, members.length);
  t.ok(
    g.peak - base.peak < 64 * MiB,
    `gzip file (one member of 200 MiB from 200 KB): peak memory ${((g.peak - base.peak) / MiB).toFixed(1)} MiB above a small import's`,
  );

  // The HTTP head inside a response record, without end: read within max_head_bytes, the record refused, the file goes on.
  const headFile = path.join(c.dir, 'head.warc');
  const size = 200 * MiB;
  const fields = `WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: ${recordId()}\r\nWARC-Date: 2026-03-02T00:00:00Z\r\nWARC-Target-URI: http://example.org/head\r\nContent-Type: application/http; msgtype=response\r\nContent-Length: ${size}\r\n\r\n`;
  sparseFile(headFile, Buffer.from(fields + 'HTTP/1.1 200 OK\r\nX-Long: '), fields.length + size);
  appendFileSync(headFile, Buffer.concat([Buffer.from('\r\n\r\n'), warcFile(good, false)]));
  const h = await runCliPeak(['import', '--config', c.config, headFile]);
  t.match(
    h.stdout,
    /^refused: .*http:\/\/example\.org\/head: the response record has no HTTP head \(status line, headers, blank line\) within 65536 bytes/m,
    'the record with an endless HTTP head: refused',
  );
  t.match(h.stdout, /: 0 new mementos, 0 revisit mementos, 1 duplicate, /, 'the record after it is read');
  t.ok(h.peak - base.peak < 64 * MiB, `endless HTTP head: peak memory ${((h.peak - base.peak) / MiB).toFixed(1)} MiB above a small import's`);
});

t.test('the data folder held by reindex: import says so and waits for nothing (exit status 1)', async (t) => {
  const c = writeConfig();
  t.teardown(() => rmSync(c.dir, { recursive: true, force: true }));
  const file = path.join(c.dir, 'crawl.warc.gz');
  writeFileSync(file, crawlerWarc().file);
  const { mkdirSync } = await import('node:fs');
  mkdirSync(c.dataDir, { recursive: true });
  const lock = await DataDirLock.acquire(c.dataDir, 'reindex');
  t.teardown(() => lock.release());
  const r = await runCli(['import', '--config', c.config, file]);
  t.equal(r.code, 1);
  t.equal(r.stderr, `memento-archive: memento-archive reindex (pid ${process.pid}) is running on ${c.dataDir}; wait until it has finished\n`);
});

t.test('while the daemon runs, import PUTs the captures to it (with the put_tokens bearer token): they are served at once', async (t) => {
  const c = writeConfig('put_tokens: [import-test-token]\n');
  t.teardown(() => rmSync(c.dir, { recursive: true, force: true }));
  const file = path.join(c.dir, 'crawl.warc.gz');
  writeFileSync(file, crawlerWarc().file);
  const d = await startDaemon('memento-archive.js', ['serve', '--config', c.config, '--quiet']);
  t.teardown(() => d.stop());
  const blind = await runCli(['import', '--config', c.config, file]);
  t.equal(blind.code, 1, 'a daemon on port 0 cannot be found from its config');
  t.match(
    blind.stderr,
    /^memento-archive: a daemon \(pid \d+\) is running on .* and listens on port 0 \(any free port\): give its address with --daemon http:\/\/HOST:PORT\n$/,
  );
  const r = await runCli(['import', '--config', c.config, '--daemon', d.url, file]);
  t.equal(r.code, 0, r.stderr);
  t.match(
    r.stdout,
    new RegExp(
      `: 2 new mementos, 3 revisit mementos, 0 duplicates, 3 revisit records resolved, 1 revisit record unresolved \\(skipped\\), 2 refused; .*; through the running daemon at ${d.url}$`,
      'm',
    ),
  );
  t.match(r.stdout, /^refused: .* http:\/\/example.org\/post: 400 embedded request method POST is not archived/m);
  const m = await request(`${d.url}/current/memento/20260203000000id_/http://example.org/b`);
  t.equal(m.status, 200);
  t.equal(m.text, 'alpha', 'the daemon serves the imported revisit');
});

t.test('a capture PUT with Memento-Datetime: that is its datetime, whatever the Date header says', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const record = captureRecord({ target: '/md', date: 'Fri, 31 Feb 2001 20:35:00 GMT' });
  const plain = await putCapture(a, '', record);
  t.equal(plain.status, 400, 'without it, a Date that names no real instant is refused');
  const r = await putCapture(a, '', record, { headers: { 'memento-datetime': 'Sun, 01 Feb 2026 12:00:00 GMT' } });
  t.equal(r.status, 201);
  t.equal(r.headers.location, `${a.url}/current/memento/20260201120000/http://www.example.org/md`);
  const bad = await putCapture(a, '', record, { headers: { 'memento-datetime': 'yesterday' } });
  t.equal(bad.status, 400);
  t.match(bad.text, /Memento-Datetime is not an HTTP-date/);
  const ahead = await putCapture(a, '', record, { headers: { 'memento-datetime': new Date(Date.now() + 3 * 86_400_000).toUTCString() } });
  t.equal(ahead.status, 400, 'more than a day ahead');
  t.match(ahead.text, /more than a day ahead/);
});
