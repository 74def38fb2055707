/**
 * `memento-archive wacz` as an auditor and a user meet it: the package of
 * an archive with several URLs, a revisit and a hidden URL, written while
 * the daemon runs, opened with yauzl and checked file by file against
 * datapackage.json, its digest and Ed25519 signature checked against the
 * archive's public key, each CDXJ line's record read with warcio, and the
 * package imported into a fresh archive, which then answers the same
 * TimeMaps and the same raw (id_) bodies. What the visitors sent (their
 * request records) is in no package; with `publish_requests: true`, a
 * new request record with the allowed fields only. Bad options: one
 * line, exit 2.
 */
import { createHash, createPublicKey, verify } from 'node:crypto';
import { createWriteStream, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import t from 'tap';
import { WARCParser } from 'warcio';
import yauzl from 'yauzl';
import yazl from 'yazl';
import zlib from 'node:zlib';
import { captureRecord, putCapture, request, startArchive, TWO_ARCHIVES } from '../helpers/archive.js';
import { proofProves } from '../helpers/rfc9162.js';
import { exchange, httpResponse, warcFile } from '../helpers/warc.js';
import { runCli, writeConfig } from './helpers.js';

/** Every entry of a zip file: its bytes (inflated) and compression method. */
async function unzip(file: string): Promise<Map<string, { bytes: Buffer; method: number }>> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) => yauzl.open(file, { lazyEntries: true }, (err, z) => (err ? reject(err) : resolve(z))));
  const out = new Map<string, { bytes: Buffer; method: number }>();
  await new Promise<void>((resolve, reject) => {
    zip.on('error', reject);
    zip.on('end', resolve);
    zip.on('entry', (entry: yauzl.Entry) => {
      zip.openReadStream(entry, (err, stream) => {
        if (err) return reject(err);
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('error', reject);
        stream.on('end', () => {
          out.set(entry.fileName, { bytes: Buffer.concat(chunks), method: entry.compressionMethod });
          zip.readEntry();
        });
      });
    });
    zip.readEntry();
  });
  zip.close();
  return out;
}

/** The bytes of a run of gzip members inflated, or none when `b` is not gzip. */
const zlibGunzipAll = (b: Buffer) => (b[0] === 0x1f && b[1] === 0x8b ? zlib.gunzipSync(b) : Buffer.alloc(0));
const sha256 = (b: Buffer | string) => 'sha256:' + createHash('sha256').update(b).digest('hex');
const day = (d: number) => `${['Tue', 'Wed', 'Thu', 'Fri'][d - 20]}, ${d} Mar 2001 20:35:00 GMT`;
const html = (title: string, colour: string) =>
  `<html><head><title>${title}</title><link rel="stylesheet" href="/s.css"></head><body style="color:${colour}">${title}</body></html>`;

/** What a visitor sent with each capture: none of it may be in a package. */
const VISITOR: [string, string][] = [
  ['User-Agent', 'Mozilla/5.0 (visitor-agent-canary)'],
  ['Referer', 'http://intranet.example/private-referer-canary'],
  ['Accept', 'text/html'],
  ['X-Client-IP', '192.0.2.77'],
];
const PRIVATE = ['visitor-agent-canary', 'private-referer-canary', '192.0.2.77', 'User-Agent', 'Referer', 'X-Client-IP'];

/** The captures of the test archive: [URI path, capture record]. */
function captures(): [string, Buffer][] {
  const c = (p: Parameters<typeof captureRecord>[0]) => captureRecord({ ...p, requestHeaders: VISITOR });
  return [
    ['/a', c({ target: '/a', date: day(20), body: html('A one', 'red') })],
    ['/a', c({ target: '/a', date: day(21), body: html('A two', 'green') })],
    ['/a', c({ target: '/a', date: day(22), body: html('A two', 'green') })], // a day after the same body: a revisit
    ['/s.css', c({ target: '/s.css', date: day(20), responseHeaders: [['Content-Type', 'text/css']], body: 'body{background:#ffeeee}' })],
    ['/b', c({ target: '/b', date: 'Sun, 01 Feb 2026 10:00:00 GMT', body: html('B', 'blue') })],
    ['/secret/x', c({ target: '/secret/x', date: day(20), body: html('hidden', 'black') })],
    [
      '/img',
      c({
        target: '/img',
        date: day(21),
        responseHeaders: [['Content-Type', 'image/png']],
        body: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 255]),
      }),
    ],
  ];
}

/** Every record of a package's WARC file, as warcio reads it: type and block (the HTTP head and body). */
async function warcRecordsOf(warc: Buffer): Promise<{ type: string; fields: Map<string, string>; block: Buffer }[]> {
  const out = [];
  for await (const rec of new WARCParser(Readable.from([warc]), { parseHttp: false })) {
    const fields = new Map<string, string>();
    for (const [k, v] of rec.warcHeaders.headers) fields.set(k.toLowerCase(), v);
    out.push({ type: rec.warcType ?? '', fields, block: Buffer.from(await rec.readFully(false)) });
  }
  return out;
}

/** A line of proofs/proofs.jsonl. */
interface Proof {
  archive: string;
  leaf: { uri: string; datetime: string; record_id: string; digest: string };
  leaf_index: number;
  tree_size: number;
  audit_path: string[];
  sth: { origin: string; tree_size: number; root_hash: string; timestamp: number; signature: string; public_key: string };
}

const ACCESS = `access:
  - url: http://www.example.org/secret/*
    action: exclude
`;

t.test('a WACZ of a running archive: hashes, signature, CDXJ records, pages; imported, the same TimeMaps and bodies', async (t) => {
  const c = writeConfig(ACCESS);
  t.teardown(() => rmSync(c.dir, { recursive: true, force: true }));
  const a = await startArchive(TWO_ARCHIVES + ACCESS, { dataDir: c.dataDir });
  t.teardown(() => a.close(true));
  for (const [p, rec] of captures()) t.equal((await putCapture(a, '', rec)).status, 201, `PUT ${p}`);
  // The checkpoints covering every capture published (within a few seconds), so that each has a receipt.
  for (const [id, n] of [
    ['2025', 6],
    ['current', 1],
  ] as const)
    for (const deadline = Date.now() + 15_000; ; await new Promise((res) => setTimeout(res, 100))) {
      if ((await request(`${a.url}/${id}/tlog/checkpoint`)).text.split('\n')[1] === String(n)) break;
      if (Date.now() > deadline) throw new Error(`no checkpoint of ${n} entries of ${id}`);
    }

  const wacz = path.join(c.dir, 'out.wacz');
  const r = await runCli(['wacz', '--config', c.config, '-o', wacz]);
  t.equal(r.code, 0, r.stderr);
  t.match(
    r.stdout,
    /^wacz: .*out\.wacz: 6 memento\(s\), 4 page\(s\), 6 proof\(s\), 6 receipt\(s\), \d+ bytes; 1 memento\(s\) the access rules hide left out\n$/,
  );
  const files = await unzip(wacz);
  t.same(
    [...files.keys()].sort(),
    [
      'archive/data.warc.gz',
      'datapackage-digest.json',
      'datapackage.json',
      'indexes/index.cdx',
      'pages/pages.jsonl',
      'proofs/proofs.jsonl',
      'receipts/receipts.jsonl',
    ],
    'the files of a WACZ 1.1.1 package, and the receipts',
  );
  t.equal(files.get('archive/data.warc.gz')!.method, 0, 'the WARC file is stored (not deflated again), for range reads');

  // datapackage.json: every other file, its size and SHA-256.
  const dpBytes = files.get('datapackage.json')!.bytes;
  const dp = JSON.parse(dpBytes.toString('utf8')) as {
    profile: string;
    wacz_version: string;
    created: string;
    software: string;
    resources: { path: string; hash: string; bytes: number }[];
  };
  t.equal(dp.profile, 'data-package');
  t.equal(dp.wacz_version, '1.1.1');
  t.match(dp.created, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  t.match(dp.software, /^memento-archive /);
  t.same(dp.resources.map((x) => x.path).sort(), [...files.keys()].filter((k) => !k.startsWith('datapackage')).sort(), 'every other file is a resource');
  for (const res of dp.resources) {
    const f = files.get(res.path)!;
    t.equal(res.bytes, f.bytes.length, `${res.path}: bytes`);
    t.equal(res.hash, sha256(f.bytes), `${res.path}: hash`);
  }

  // datapackage-digest.json: the manifest's hash, signed by the archive's key.
  const digest = JSON.parse(files.get('datapackage-digest.json')!.bytes.toString('utf8'));
  t.equal(digest.path, 'datapackage.json');
  t.equal(digest.hash, sha256(dpBytes), 'the hash of datapackage.json as stored');
  t.equal(digest.signedData.hash, digest.hash);
  const pem = readFileSync(path.join(c.dataDir, 'log-signing-key.pem'));
  const publicDer = createPublicKey(pem).export({ type: 'spki', format: 'der' });
  t.equal(digest.signedData.publicKey, publicDer.toString('base64'), 'the archive key (SPKI DER, base64)');
  const key = createPublicKey({ key: Buffer.from(digest.signedData.publicKey, 'base64'), format: 'der', type: 'spki' });
  t.equal(key.asymmetricKeyType, 'ed25519');
  t.ok(
    verify(null, Buffer.from(digest.hash, 'utf8'), key, Buffer.from(digest.signedData.signature, 'base64')),
    'the Ed25519 signature of the hash string verifies',
  );
  t.notOk(verify(null, Buffer.from(sha256('other'), 'utf8'), key, Buffer.from(digest.signedData.signature, 'base64')), 'and not of another hash');

  // indexes/index.cdx: sorted CDXJ, each line pointing at its record in data.warc.gz.
  const warc = files.get('archive/data.warc.gz')!.bytes;
  const lines = files.get('indexes/index.cdx')!.bytes.toString('utf8').trimEnd().split('\n');
  t.same(
    [...lines].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)),
    lines,
    'sorted bytewise',
  );
  t.equal(lines.length, 6);
  const seen: string[] = [];
  /** Per `<URI-R>\n<14 digits>`: the WARC-Record-ID and block digest of the record the CDXJ line points at, and the rest of the entry it calls for (docs/evidence.md). */
  const records = new Map<string, { id: string; digest: string; tail: string }>();
  for (const line of lines) {
    const m = /^(\S+) (\d{14}) (\{.*\})$/.exec(line)!;
    const j = JSON.parse(m[3]) as { url: string; mime: string; offset: string; length: string; filename: string };
    t.equal(j.filename, 'data.warc.gz');
    const member = warc.subarray(Number(j.offset), Number(j.offset) + Number(j.length));
    const recs = [];
    for await (const rec of new WARCParser(Readable.from([member]), { parseHttp: false }))
      recs.push({
        type: rec.warcType,
        uri: rec.warcTargetURI,
        id: rec.warcHeader('WARC-Record-ID'),
        via: rec.warcHeader('Archive-Capture-Via'),
        refersTo: rec.warcHeader('WARC-Refers-To'),
        payload: rec.warcHeader('WARC-Payload-Digest'),
        block: Buffer.from(await rec.readFully(false)),
      });
    t.equal(recs.length, 1, `${m[2]} ${j.url}: one record at the line's offset and length`);
    t.equal(recs[0].uri, j.url);
    t.equal(recs[0].type, j.mime === 'warc/revisit' ? 'revisit' : 'response');
    seen.push(`${m[2]} ${j.url.replace('http://www.example.org', '')} ${recs[0].type}`);
    const r0 = recs[0];
    const tail = `\nvia ${r0.via}` + (r0.type === 'revisit' ? `\nrefers-to ${r0.refersTo}\npayload-digest ${r0.payload}` : '');
    records.set(`${j.url}\n${m[2]}`, { id: r0.id!, digest: sha256(r0.block), tail });
  }
  t.same(seen.sort(), [
    '20010320203500 /a response',
    '20010320203500 /s.css response',
    '20010321203500 /a response',
    '20010321203500 /img response',
    '20010322203500 /a revisit',
    '20260201100000 /b response',
  ]);
  t.notOk(warc.includes(Buffer.from('secret')) || lines.some((l) => l.includes('secret')), 'the excluded URL is nowhere in the package');
  const letter: Record<string, string> = { response: 'p', revisit: 'v', request: 'q' };
  const types = (await warcRecordsOf(warc)).map((rec) => letter[rec.type] ?? '?').join('');
  t.match(types, /^[pv]{6}$/, 'the mementos’ records, and no request record, in the WARC file');
  for (const [name, f] of files)
    for (const p of PRIVATE) t.notOk(f.bytes.includes(p) || zlibGunzipAll(f.bytes).includes(p), `${name}: nothing the visitor sent (${p})`);

  const pages = files
    .get('pages/pages.jsonl')!
    .bytes.toString('utf8')
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l));
  t.same(pages[0], { format: 'json-pages-1.0', id: 'pages', title: 'All Pages' });
  t.same(
    pages
      .slice(1)
      .map((p: { url: string; ts: string }) => `${p.ts} ${p.url}`)
      .sort(),
    [
      '2001-03-20T20:35:00Z http://www.example.org/a',
      '2001-03-21T20:35:00Z http://www.example.org/a',
      '2001-03-22T20:35:00Z http://www.example.org/a',
      '2026-02-01T10:00:00Z http://www.example.org/b',
    ],
    'the HTML pages that answered 200',
  );
  t.same(
    pages
      .slice(1)
      .map((p: { ts: string; title?: string }) => `${p.ts} ${p.title}`)
      .sort(),
    ['2001-03-20T20:35:00Z A one', '2001-03-21T20:35:00Z A two', '2001-03-22T20:35:00Z A two', '2026-02-01T10:00:00Z B'],
    "each page with its title (ReplayWeb.page lists pages by title), a revisit's from its original's body",
  );

  // proofs/proofs.jsonl: each memento's entry in its archive's log, its inclusion in a signed tree head (RFC 9162 §2.1.3.2).
  const proofs = files
    .get('proofs/proofs.jsonl')!
    .bytes.toString('utf8')
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l) as Proof);
  t.equal(proofs.length, 6, 'a proof per memento');
  for (const p of proofs) {
    const what = `${p.leaf.datetime} ${p.leaf.uri}`;
    const rec = records.get(`${p.leaf.uri}\n${p.leaf.datetime}`)!;
    t.same(
      { id: rec.id, digest: rec.digest },
      { id: p.leaf.record_id, digest: p.leaf.digest },
      `${what}: the entry names the package's record and its block's SHA-256`,
    );
    // The entry rebuilt from the package's record alone.
    const leafText = `${p.leaf.uri}\n${p.leaf.datetime}\n${rec.id}\n${rec.digest}${rec.tail}`;
    t.equal(p.tree_size, p.sth.tree_size);
    t.ok(proofProves(leafText, p), `${what}: the inclusion proof verifies`);
    t.notOk(
      proofProves(
        leafText.replace(/.$/, (x) => (x === '0' ? '1' : '0')),
        p,
      ),
      `${what}: and not for a changed digest`,
    );
    t.equal(p.sth.public_key, digest.signedData.publicKey, 'the same key signs the tree head and the package');
    t.ok(
      verify(
        null,
        Buffer.from(`${p.sth.origin}\n${p.sth.tree_size}\n${p.sth.root_hash}\n${p.sth.timestamp}`, 'utf8'),
        key,
        Buffer.from(p.sth.signature, 'base64'),
      ),
      `${what}: the tree head's signature verifies`,
    );
    const kept = JSON.parse((await request(`${a.url}/${p.archive}/log?tree_size=${p.sth.tree_size}`)).text);
    t.same(kept, p.sth, `${what}: the archive keeps that tree head (/log?tree_size=N)`);
  }

  // receipts/receipts.jsonl: each memento's receipt, checked offline by verify-receipt with the log's public key alone.
  const receipts = files
    .get('receipts/receipts.jsonl')!
    .bytes.toString('utf8')
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l) as { archive: string; uri: string; datetime: string; leaf_index: number; receipt: string });
  t.same(
    receipts.map((x) => `${x.archive} ${x.datetime} ${x.uri}`).sort(),
    proofs.map((p) => `${p.archive} ${p.leaf.datetime} ${p.leaf.uri}`).sort(),
    'a receipt per memento',
  );
  for (const x of receipts) {
    const file = path.join(c.dir, `${x.archive}-${x.leaf_index}.tlog-proof`);
    writeFileSync(file, x.receipt);
    const v = await runCli(['verify-receipt', file, '--key', digest.signedData.publicKey]);
    t.equal(v.code, 0, `${x.datetime} ${x.uri}: verify-receipt ${v.stderr}`);
    t.match(v.stdout, `capture: ${x.uri} at ${x.datetime}`);
  }

  // A selection: one URL from a date on; the revisit in it brings its original, outside it, along.
  const part = path.join(c.dir, 'part.wacz');
  const rp = await runCli(['wacz', '--config', c.config, '--url', 'http://www.example.org/a', '--from', '20010322', '-o', part]);
  t.equal(rp.code, 0, rp.stderr);
  t.match(rp.stdout, /: 2 memento\(s\), 1 page\(s\), 2 proof\(s\), 2 receipt\(s\), \d+ bytes; 1 revisited original\(s\) outside the selection added\n$/);
  const partFiles = await unzip(part);
  t.same(
    partFiles
      .get('indexes/index.cdx')!
      .bytes.toString('utf8')
      .trimEnd()
      .split('\n')
      .map((l) => l.split(' ').slice(0, 2).join(' ') + ' ' + JSON.parse(l.slice(l.indexOf('{'))).mime),
    ['org,example)/a 20010321203500 text/html', 'org,example)/a 20010322203500 warc/revisit'],
    'the revisit and the original it repeats',
  );
  t.match(partFiles.get('pages/pages.jsonl')!.bytes.toString('utf8'), /"ts":"2001-03-22T20:35:00Z"/);
  t.notMatch(partFiles.get('pages/pages.jsonl')!.bytes.toString('utf8'), /2001-03-21/, 'the original is no page of the selection');

  // Round trip: the package imported into a fresh archive.
  const b = writeConfig();
  t.teardown(() => rmSync(b.dir, { recursive: true, force: true }));
  const imp = await runCli(['import', '--config', b.config, wacz]);
  t.equal(imp.code, 0, imp.stdout + imp.stderr);
  t.match(imp.stdout, /: 5 new mementos, 1 revisit memento, 0 duplicates,/);
  const a2 = await startArchive(TWO_ARCHIVES, { dataDir: b.dataDir });
  t.teardown(() => a2.close(true));
  for (const [id, p] of [
    ['2025', '/a'],
    ['2025', '/s.css'],
    ['2025', '/img'],
    ['current', '/b'],
  ]) {
    const tm = (x: { url: string }) => request(`${x.url}/${id}/timemap/link/http://www.example.org${p}`).then((res) => res.text.replaceAll(x.url, 'BASE'));
    t.equal(await tm(a2), await tm(a), `${p}: the same TimeMap`);
  }
  for (const [id, ts, p] of [
    ['2025', '20010320203500', '/a'],
    ['2025', '20010322203500', '/a'],
    ['2025', '20010321203500', '/img'],
    ['current', '20260201100000', '/b'],
  ]) {
    const raw = (x: { url: string }) => request(`${x.url}/${id}/memento/${ts}id_/http://www.example.org${p}`);
    const [one, two] = [await raw(a), await raw(a2)];
    t.equal(one.status, 200);
    t.same(two.body, one.body, `${ts} ${p}: the same id_ body`);
    const replay = (x: { url: string }) => request(`${x.url}/${id}/memento/${ts}/http://www.example.org${p}`).then((res) => res.text.replaceAll(x.url, 'BASE'));
    t.equal(await replay(a2), await replay(a), `${ts} ${p}: the same archival replay, without the request records`);
  }
  t.equal((await request(`${a2.url}/2025/timemap/link/http://www.example.org/secret/x`)).status, 404, 'the hidden URL did not travel');
});

t.test('publish_requests: true: each memento’s record, then a new request record with the allowed fields only', async (t) => {
  const c = writeConfig('publish_requests: true\n');
  t.teardown(() => rmSync(c.dir, { recursive: true, force: true }));
  const a = await startArchive(TWO_ARCHIVES + 'publish_requests: true\n', { dataDir: c.dataDir });
  t.teardown(() => a.close(true));
  for (const [p, rec] of captures()) t.equal((await putCapture(a, '', rec)).status, 201, `PUT ${p}`);
  const wacz = path.join(c.dir, 'out.wacz');
  const r = await runCli(['wacz', '--config', c.config, '-o', wacz]);
  t.equal(r.code, 0, r.stderr);
  const files = await unzip(wacz);
  const warc = files.get('archive/data.warc.gz')!.bytes;
  const dp = JSON.parse(files.get('datapackage.json')!.bytes.toString('utf8')) as { resources: { path: string; hash: string }[] };
  t.equal(dp.resources.find((x) => x.path === 'archive/data.warc.gz')!.hash, sha256(warc), 'the WARC file’s hash in datapackage.json');
  const recs = await warcRecordsOf(warc);
  t.equal(recs.map((x) => (x.type === 'request' ? 'q' : 'p')).join(''), 'pq'.repeat(7), 'each memento’s record followed by a request record');
  for (let i = 0; i < recs.length; i += 2) {
    const [own, req] = [recs[i], recs[i + 1]];
    t.equal(req.fields.get('warc-concurrent-to'), own.fields.get('warc-record-id'), 'the request record names the memento’s record');
    t.match(
      req.block.toString('latin1'),
      /^GET \/\S* HTTP\/1\.1\r\nHost: www\.example\.org\r\nAccept: text\/html\r\n\r\n$/,
      'request line, Host, Accept: nothing else',
    );
    t.equal(req.fields.get('warc-block-digest'), sha256(req.block), 'its block digest recomputed');
  }
  for (const p of PRIVATE) t.notOk(zlibGunzipAll(warc).includes(p), `nothing that identifies the visitor (${p})`);
});

t.test('bad options: one line, exit 2, nothing written', async (t) => {
  const c = writeConfig();
  t.teardown(() => rmSync(c.dir, { recursive: true, force: true }));
  const out = path.join(c.dir, 'x.wacz');
  for (const [args, msg] of [
    [['-o', out, '--from', 'yesterday'], /^memento-archive: wacz: --from must be a date/],
    [['-o', out, '--from', '2026', '--to', '2025'], /--from must not be later than --to/],
    [['-o', out, '--url', 'ftp://x/'], /--url "ftp:\/\/x\/"/],
    [[], /give the package to write with -o FILE\.wacz/],
    [['-o', path.join(c.dir, 'x.zip')], /ends in \.wacz/],
  ] as const) {
    const r = await runCli(['wacz', '--config', c.config, ...args]);
    t.equal(r.code, 2, args.join(' '));
    t.match(r.stderr, msg);
    t.equal(r.stderr.trim().split('\n').length, 1, 'one line');
  }
  t.notOk(existsSync(out), 'nothing written');
});

/** A zip file of `entries` (name, bytes, deflated or stored) written with yazl; `names` renames entries after the fact (a name yazl itself refuses). */
async function makeZip(file: string, entries: [string, Buffer, boolean][]): Promise<void> {
  const zip = new yazl.ZipFile();
  for (const [name, bytes, compress] of entries) zip.addBuffer(bytes, name, { compress });
  zip.end();
  await pipeline(zip.outputStream, createWriteStream(file));
}

t.test('import of a hostile package: refused whole, one line, nothing imported', async (t) => {
  const c = writeConfig();
  t.teardown(() => rmSync(c.dir, { recursive: true, force: true }));
  const warc = warcFile(exchange('http://example.org/x', '2026-02-01T00:00:00Z', httpResponse('200 OK', [['Content-Type', 'text/plain']], 'x')).records, true);
  const cases: [string, [string, Buffer, boolean][], RegExp][] = [
    [
      'a path with ..',
      [
        ['archive/data.warc.gz', warc, false],
        ['archive/a/../../evil.warc', warc, false],
      ],
      /has a \.\. segment|invalid relative path/,
    ],
    ['a zip bomb', [['archive/bomb.warc', Buffer.alloc(4 * 1024 * 1024), true]], /would inflate \d+ bytes to 4194304 \(a zip bomb\?\)/],
    ['no WARC file', [['datapackage.json', Buffer.from('{}'), true]], /no WARC file under archive\//],
    [
      'a deflated WARC file',
      [['archive/x.warc', Buffer.from('WARC/1.1\r\nWARC-Type: warcinfo\r\n'), true]],
      /archive\/x\.warc is compressed in the ZIP \(method 8\); WACZ stores WARC files uncompressed \(STORE\), which import reads in place; nothing imported/,
    ],
    [
      'too many entries',
      Array.from({ length: 10_001 }, (_, i) => [`pages/p${i}.jsonl`, Buffer.alloc(0), false] as [string, Buffer, boolean]),
      /10001 entries, more than a WACZ package has/,
    ],
  ];
  for (const [what, entries, msg] of cases) {
    const file = path.join(c.dir, `${what.replace(/\W/g, '-')}.wacz`);
    if (what === 'a path with ..') {
      // yazl refuses to write such a name: write a same-length one and rename it in the bytes.
      await makeZip(
        file,
        entries.map(([n, b, z]) => [n.replace('a/../../', 'a/xx/xx/'), b, z]),
      );
      const bytes = readFileSync(file);
      writeFileSync(file, Buffer.from(bytes.toString('latin1').replaceAll('archive/a/xx/xx/evil.warc', 'archive/a/../../evil.warc'), 'latin1'));
    } else await makeZip(file, entries);
    const r = await runCli(['import', '--config', c.config, file]);
    t.equal(r.code, 2, `${what}: exit 2`);
    t.match(r.stderr, msg, what);
    t.match(r.stderr, /nothing imported\n$/);
    t.equal(r.stderr.trim().split('\n').length, 1, 'one line');
  }
  t.notOk(existsSync(path.join(c.dataDir, 'index.sqlite3')), 'no archive was even opened');
});
