/**
 * `GET /<id>/record/<ts>/<URL>` (docs/evidence.md): a memento's own WARC
 * record as stored — its response (or revisit) record, gunzipped — for
 * WARC files in a folder and in a bucket, and for a WARC file of another
 * tool. Checked against the stored files read independently (the whole
 * file gunzipped and cut into records by their Content-Length), with
 * warcio, and by recomputing the response's block digest. The request
 * record beside it (what the visitor sent: X-Client-IP, Referer,
 * User-Agent) is never served; with `publish_requests: true`, a new
 * request record with the allowed fields only follows it.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import zlib from 'node:zlib';
import t, { type Test } from 'tap';
import { WARCParser } from 'warcio';
import { reindex } from '../../../archive/store/upkeep/maintenance.js';
import { captureRecord, putCapture, request, startArchive, type TestArchive, TWO_ARCHIVES } from '../../helpers/archive.js';
import { startS3 } from '../../helpers/s3.js';
import { exchange, httpResponse, warcFile } from '../../helpers/warc.js';

const URL_A = 'http://www.example.org/a';
const URL_B = 'http://www.example.org/b?q=1';
const JAN1 = 'Thu, 01 Jan 2026 00:00:00 GMT';
const JAN2 = 'Fri, 02 Jan 2026 00:00:00 GMT';
const JAN3 = 'Sat, 03 Jan 2026 00:00:00 GMT';

/** What a visitor sent with each capture: none of it may be served. */
const VISITOR: [string, string][] = [
  ['User-Agent', 'Mozilla/5.0 (visitor-agent-canary)'],
  ['Referer', 'http://intranet.example/private-referer-canary'],
  ['Accept', 'text/html'],
  ['Accept-Language', 'de-CH'],
  ['Cookie', 'session-cookie-canary='],
  ['X-Client-IP', '192.0.2.77'],
];
const PRIVATE = ['visitor-agent-canary', 'private-referer-canary', 'session-cookie-canary', '192.0.2.77', 'User-Agent', 'Referer', 'X-Client-IP'];

const capture = (target: string, date: string, body: string) =>
  captureRecord({ target, date, body, responseHeaders: [['Content-Type', 'text/html']], requestHeaders: VISITOR });

/** One WARC record of a gunzipped file: its bytes and named fields (lower-case names). */
interface Rec {
  bytes: Buffer;
  fields: Map<string, string>;
  block: Buffer;
}

/** The records of a whole WARC file's bytes, found by gunzipping it all and cutting at each record's Content-Length (WARC 1.1 §4). */
function recordsOf(file: Buffer): Rec[] {
  const all = zlib.gunzipSync(file);
  const out: Rec[] = [];
  for (let at = 0; at < all.length;) {
    const headEnd = all.indexOf('\r\n\r\n', at) + 4;
    const fields = new Map<string, string>();
    for (const line of all
      .subarray(at, headEnd - 4)
      .toString('latin1')
      .split('\r\n')
      .slice(1)) {
      const i = line.indexOf(':');
      fields.set(line.slice(0, i).toLowerCase(), line.slice(i + 1).trim());
    }
    const end = headEnd + Number(fields.get('content-length')) + 4;
    out.push({ bytes: all.subarray(at, end), fields, block: all.subarray(headEnd, end - 4) });
    at = end;
  }
  return out;
}

/** What `/record` must answer for the memento whose own record has id `id`: that record alone, as stored. */
function expected(recs: Rec[], id: string): Buffer {
  return recs.find((r) => r.fields.get('warc-record-id') === id)!.bytes;
}

/** The stored request record that names (or is named by) the record `id`, next to it in the file. */
function storedRequest(recs: Rec[], id: string): Rec | undefined {
  const i = recs.findIndex((r) => r.fields.get('warc-record-id') === id);
  const pairs = (r: Rec | undefined) =>
    r?.fields.get('warc-type') === 'request' &&
    (r.fields.get('warc-concurrent-to') === id || recs[i].fields.get('warc-concurrent-to') === r.fields.get('warc-record-id'));
  return [recs[i + 1], recs[i - 1]].find(pairs);
}

/** The records of a `/record` answer as warcio reads them: type, record id, block. */
async function parsed(body: Buffer) {
  const out: { type: string; id: string; digest: string; block: Buffer }[] = [];
  for await (const rec of new WARCParser(Readable.from([body]), { parseHttp: false })) {
    const block = Buffer.from(await rec.readFully(false));
    out.push({ type: rec.warcType ?? '', id: rec.warcHeader('WARC-Record-ID') ?? '', digest: rec.warcHeader('WARC-Block-Digest') ?? '', block });
  }
  return out;
}

const ts14 = (httpDate: string) => new Date(httpDate).toISOString().replace(/[-:T]/g, '').slice(0, 14);

/** PUTs A on 1 Jan, B on 1 Jan, A again identical on 2 Jan (a revisit), A changed on 3 Jan. */
async function fill(t: Test, a: TestArchive): Promise<void> {
  for (const [uri, target, date, body] of [
    [URL_A, '/a', JAN1, 'page a'],
    [URL_B, '/b?q=1', JAN1, 'page b'],
    [URL_A, '/a', JAN2, 'page a'],
    [URL_A, '/a', JAN3, 'page a, changed'],
  ])
    t.equal((await putCapture(a, uri, capture(target, date, body))).status, 201, `PUT ${uri} at ${date}`);
}

/** Every memento of `a` against the stored records: `/record`'s bytes, warcio's reading, the block digest. */
async function checkAll(t: Test, a: TestArchive, fileBytes: (file: string) => Promise<Buffer>): Promise<void> {
  const rows = [];
  for await (const r of a.store.index.allMementos()) rows.push(r);
  t.equal(rows.length, 4);
  let revisits = 0;
  for (const row of rows) {
    const ts = new Date(row.datetime * 1000).toISOString().replace(/[-:T]/g, '').slice(0, 14);
    const res = await request(`${a.url}/${row.archive_id}/record/${ts}/${row.uri_r}`);
    t.equal(res.status, 200, `${row.uri_r} ${ts}`);
    t.equal(res.headers['content-type'], 'application/warc');
    t.equal(res.headers['content-disposition'], `attachment; filename="${row.archive_id}-${ts}.warc"`);
    const recs = recordsOf(await fileBytes(row.warc_file));
    const own = recordsOf((await fileBytes(row.warc_file)).subarray(row.warc_offset, row.warc_offset + row.warc_length))[0];
    const id = own.fields.get('warc-record-id')!;
    t.ok(res.body.equals(expected(recs, id)), 'the bytes are the stored record, gunzipped');
    const got = await parsed(res.body);
    const type = row.refers_to === null ? 'response' : 'revisit';
    if (type === 'revisit') revisits++;
    t.same(
      got.map((r) => r.type),
      [type],
      `warcio reads the ${type} record alone: no request record`,
    );
    t.ok(storedRequest(recs, id)?.block.includes('private-referer-canary'), 'the request record is kept in the WARC file');
    for (const s of PRIVATE) t.notOk(res.body.includes(s), `nothing the visitor sent: ${s}`);
    t.equal(got[0].id, id);
    t.equal(got[0].digest, 'sha256:' + createHash('sha256').update(got[0].block).digest('hex'), 'sha256 of the block is its WARC-Block-Digest');
    const head = await request(`${a.url}/${row.archive_id}/record/${ts}/${row.uri_r}`, { method: 'HEAD' });
    t.equal(head.status, 200);
    t.equal(head.body.length, 0, 'HEAD: no body');
  }
  t.equal(revisits, 1, 'one revisit among them');
}

t.test('a folder: each memento’s records, byte for byte; errors for what is not a stored memento', async (t) => {
  const a = await startArchive(
    `${TWO_ARCHIVES}access:\n  - url: http://www.example.org/blocked\n    action: block\n  - url: http://www.example.org/hidden\n    action: exclude\n`,
  );
  t.teardown(() => a.close());
  await fill(t, a);
  await checkAll(t, a, async (file) => readFileSync(path.join(a.dataDir, 'warcs', file)));

  const wrongTs = await request(`${a.url}/current/record/20260101000001/${URL_A}`);
  t.equal(wrongTs.status, 404, 'a timestamp that is not the memento’s: 404');
  t.match(wrongTs.text, /^no memento of http:\/\/www\.example\.org\/a at 20260101000001 in archive current; .*\n$/);
  t.equal(wrongTs.text.split('\n').length, 2, 'one line');
  t.equal((await request(`${a.url}/current/record/2026/${URL_A}`)).status, 404, 'a timestamp prefix: 404 (no nearest here)');
  t.equal((await request(`${a.url}/current/record/2026010100000x/${URL_A}`)).status, 404);
  t.equal((await request(`${a.url}/2025/record/${ts14(JAN1)}/${URL_A}`)).status, 404, 'another archive: 404');
  t.equal((await request(`${a.url}/nope/record/${ts14(JAN1)}/${URL_A}`)).status, 404, 'no such archive: 404');

  for (const u of ['http://www.example.org/blocked', 'http://www.example.org/hidden'])
    t.equal((await putCapture(a, u, capture(new URL(u).pathname, JAN1, 'kept'))).status, 201);
  const blocked = await request(`${a.url}/current/record/${ts14(JAN1)}/http://www.example.org/blocked`);
  t.equal(blocked.status, 451, 'blocked: 451');
  t.match(blocked.headers.link, /rel="blocked-by"/);
  const hidden = await request(`${a.url}/current/record/${ts14(JAN1)}/http://www.example.org/hidden`);
  const never = await request(`${a.url}/current/record/${ts14(JAN1)}/http://www.example.org/never`);
  t.equal(hidden.status, 404, 'hidden: 404');
  t.equal(hidden.text.replace('hidden', 'never'), never.text, 'as a URL never captured');
  t.equal((await request(`${a.url}/current/record/${ts14(JAN1)}/${URL_A}`, { method: 'POST' })).status, 405);
});

t.test('a bucket: the same records, read by ranged GETs', async (t) => {
  const s3 = await startS3();
  t.teardown(() => s3.close());
  const a = await startArchive(TWO_ARCHIVES + s3.storageYaml('w/', 'r1'));
  t.teardown(() => a.close());
  await fill(t, a);
  await checkAll(t, a, (file) => s3.get(`w/${file}`));
});

t.test('a WARC file of another tool, request record first: found before the response; without one, the response alone', async (t) => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'record-test-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const date = '2026-02-01T00:00:00Z';
  const first = exchange('http://other.example/x', date, httpResponse('200 OK', [['Content-Type', 'text/plain']], 'x'.repeat(5000)), {
    requestFirst: true,
  });
  const second = exchange('http://other.example/y', date, httpResponse('200 OK', [['Content-Type', 'text/plain']], 'y'), { requestFirst: true });
  const alone = exchange('http://other.example/z', date, httpResponse('200 OK', [['Content-Type', 'text/plain']], 'z'));
  const bytes = warcFile([...first.records, ...second.records, alone.records[0]], true);
  mkdirSync(path.join(dataDir, 'warcs', 'current'), { recursive: true });
  writeFileSync(path.join(dataDir, 'warcs', 'current', 'other-tool.warc.gz'), bytes);
  await reindex(path.join(dataDir, 'index.sqlite3'), path.join(dataDir, 'warcs'));
  const a = await startArchive(TWO_ARCHIVES, { dataDir });
  t.teardown(() => a.close());
  const recs = recordsOf(bytes);
  for (const [uri, id, n] of [
    ['http://other.example/x', first.id, 2],
    ['http://other.example/y', second.id, 2],
    ['http://other.example/z', alone.id, 1],
  ] as const) {
    const res = await request(`${a.url}/current/record/20260201000000/${uri}`);
    t.equal(res.status, 200, uri);
    t.ok(res.body.equals(expected(recs, id)), `${uri}: the stored bytes`);
    t.same(
      (await parsed(res.body)).map((r) => r.type),
      ['response'],
    );
    t.equal(n === 2, storedRequest(recs, id) !== undefined);
  }
});

t.test('publish_requests: true: the response record, then a new request record with the allowed fields only', async (t) => {
  const a = await startArchive(`${TWO_ARCHIVES}publish_requests: true\n`);
  t.teardown(() => a.close());
  await fill(t, a);
  const rows = [];
  for await (const r of a.store.index.allMementos()) rows.push(r);
  for (const row of rows) {
    const ts = ts14(new Date(row.datetime * 1000).toUTCString());
    const url = `${a.url}/${row.archive_id}/record/${ts}/${row.uri_r}`;
    const res = await request(url);
    t.equal(res.status, 200);
    const recs = recordsOf(readFileSync(path.join(a.dataDir, 'warcs', row.warc_file)));
    const own = recordsOf(readFileSync(path.join(a.dataDir, 'warcs', row.warc_file)).subarray(row.warc_offset, row.warc_offset + row.warc_length))[0];
    const ownId = own.fields.get('warc-record-id')!;
    const stored = storedRequest(recs, ownId)!;
    const got = recordsOf(zlib.gzipSync(res.body));
    t.same(
      got.map((r) => r.fields.get('warc-type')),
      [row.refers_to === null ? 'response' : 'revisit', 'request'],
    );
    t.ok(got[0].bytes.equals(own.bytes), 'the memento’s record as stored');
    const req = got[1];
    t.equal(req.fields.get('warc-concurrent-to'), ownId, 'the request names the memento’s record');
    t.not(req.fields.get('warc-record-id'), stored.fields.get('warc-record-id'), 'a new record, with an id of its own');
    t.match(req.fields.get('warc-record-id'), /^<urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}>$/);
    t.equal(req.fields.get('warc-date'), stored.fields.get('warc-date'));
    t.equal(req.fields.get('warc-target-uri'), stored.fields.get('warc-target-uri'));
    const path_ = new URL(row.uri_r).pathname + new URL(row.uri_r).search;
    t.equal(
      req.block.toString('latin1'),
      `GET ${path_} HTTP/1.1\r\nHost: www.example.org\r\nAccept: text/html\r\nAccept-Language: de-CH\r\n\r\n`,
      'request line, Host and negotiation fields only',
    );
    t.equal(req.fields.get('warc-block-digest'), 'sha256:' + createHash('sha256').update(req.block).digest('hex'), 'its block digest recomputed');
    t.equal(req.fields.get('warc-payload-digest'), 'sha256:' + createHash('sha256').digest('hex'), 'no payload');
    for (const s of PRIVATE) t.notOk(res.body.includes(s), `nothing that identifies the visitor: ${s}`);
    t.ok((await request(url)).body.equals(res.body), 'the same bytes on every read');
  }
  const page = await request(`${a.url}/web/verify/current/${ts14(JAN3)}/${URL_A}`, { headers: { accept: 'text/html' } });
  t.match(
    page.text,
    />WARC records<\/a>: .* After it, the request: its request line, Host and the fields that chose the representation only/,
    'the check page says what the download holds',
  );
  const banner = await request(`${a.url}/web/${ts14(JAN3)}/${URL_A}`, { headers: { accept: 'text/html' } });
  t.match(banner.text, />WARC records \(response, request without the visitor’s details\)<\/a>/, 'and so does the banner');
});
