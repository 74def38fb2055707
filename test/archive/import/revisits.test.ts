/**
 * `memento-archive import` and revisits (docs/operations.md "Data in and
 * out"): a crawler's WARC revisit record (Heritrix, browsertrix: a
 * response, then a revisit of it with the identical-payload-digest
 * profile) becomes a revisit memento that replays the original's body;
 * and the round trip — an archive with revisits, its WARC files imported
 * into a fresh archive — gives the same TimeMaps and the same replays at
 * every memento, while warcio reads each revisit record the archive wrote.
 */
import { createHash } from 'node:crypto';
import { createReadStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { WARCParser, WARCRecord, WARCSerializer } from 'warcio';
import { IndexDb } from '../../../archive/store/index/index-db.js';
import { verify } from '../../../archive/store/upkeep/maintenance.js';
import { listWarcFiles } from '../../../archive/store/warcs/warc-files.js';
import { captureRecord, NEW_SORTS_BEFORE_OLD, putCapture, request, startArchive, type TestArchive, TWO_ARCHIVES } from '../../helpers/archive.js';
import { startDaemon } from '../../helpers/daemons.js';
import { runCli, writeConfig } from '../helpers.js';

const PROFILE = 'http://netpreserve.org/warc/1.1/revisit/identical-payload-digest';
const sha256 = (b: Buffer | string) => 'sha256:' + createHash('sha256').update(b).digest('hex');

async function* once(b: Uint8Array = new Uint8Array()) {
  yield b;
}

/** One record as a gzip member, digests as Heritrix writes them (SHA-1, base32). */
const gz = (r: WARCRecord) => WARCSerializer.serialize(r, { gzip: true, digest: { algo: 'sha-1', prefix: 'sha1:', base32: true } });

/**
 * A crawler's WARC file, written with warcio as Heritrix and browsertrix
 * write one: a response (then its request) on day 1; on day 3 the same
 * payload again as a `revisit` record (identical-payload-digest, with
 * `WARC-Refers-To-Target-URI`/`-Date` and the payload digest, its own HTTP
 * head, no body), then its request.
 */
async function crawlerWarc(url: string, page: string): Promise<Buffer> {
  const day1 = '2026-01-01T10:00:00Z';
  const day3 = '2026-01-03T10:00:00Z';
  const head = (date: string) => ({ 'Content-Type': 'text/html', 'Content-Length': String(Buffer.byteLength(page)), Date: new Date(date).toUTCString() });
  const u = new URL(url);
  const request = (date: string, to: string) =>
    WARCRecord.create(
      {
        url,
        date,
        type: 'request',
        warcVersion: 'WARC/1.1',
        statusline: `GET ${u.pathname} HTTP/1.1`,
        httpHeaders: { Host: u.host },
        warcHeaders: { 'WARC-Concurrent-To': to },
      },
      once(),
    );
  const response = WARCRecord.create(
    { url, date: day1, type: 'response', warcVersion: 'WARC/1.1', statusline: 'HTTP/1.1 200 OK', httpHeaders: head(day1) },
    once(Buffer.from(page)),
  );
  const first = await gz(response);
  const digest = response.warcPayloadDigest!;
  const revisit = WARCRecord.create(
    {
      url,
      date: day3,
      type: 'revisit',
      warcVersion: 'WARC/1.1',
      refersToUrl: url,
      refersToDate: day1,
      statusline: 'HTTP/1.1 200 OK',
      httpHeaders: head(day3),
      warcHeaders: { 'WARC-Payload-Digest': digest },
    },
    once(),
  );
  const third = await gz(revisit);
  return Buffer.concat([
    first,
    await gz(request(day1, response.warcHeaders.headers.get('WARC-Record-ID')!)),
    third,
    await gz(request(day3, revisit.warcHeaders.headers.get('WARC-Record-ID')!)),
  ]);
}

t.test(
  "a crawler's revisit record (Heritrix, browsertrix) is imported as a revisit memento: 2 mementos, the revisit replays the original's body",
  async (t) => {
    const c = writeConfig();
    t.teardown(() => rmSync(c.dir, { recursive: true, force: true }));
    const url = 'http://example.org/page';
    const page = '<html><body>the page</body></html>';
    const file = path.join(c.dir, 'crawl.warc.gz');
    writeFileSync(file, await crawlerWarc(url, page));
    const r = await runCli(['import', '--config', c.config, file]);
    t.equal(r.code, 0, r.stderr);
    t.match(
      r.stdout,
      /^import: 1 file, 4 WARC records \([\d.]+ MiB, [\d.]+ s\): 1 new memento, 1 revisit memento, 0 duplicates, 1 revisit record resolved, 0 revisit records unresolved \(skipped\), 0 refused; /m,
      'the summary counts the revisit memento',
    );

    const a = await startArchive(TWO_ARCHIVES, { dataDir: c.dataDir });
    t.teardown(() => a.close());
    const tm = await request(`${a.url}/current/timemap/link/${url}`);
    t.equal(tm.status, 200);
    t.same(
      tm.text.match(/\/memento\/(\d{14})\//g),
      ['/memento/20260101100000/', '/memento/20260103100000/'],
      'the TimeMap lists 2 mementos: the response and the revisit',
    );
    const revisit = await request(`${a.url}/current/memento/20260103100000id_/${url}`);
    t.equal(revisit.status, 200);
    t.equal(revisit.text, page, "the revisit replays the original's body");
    t.equal(revisit.headers['memento-datetime'], 'Sat, 03 Jan 2026 10:00:00 GMT', 'at its own datetime');
    t.equal(revisit.headers['x-archive-orig-date'], 'Sat, 03 Jan 2026 10:00:00 GMT', 'with its own HTTP head (its Date)');

    const ours = await warcRecordsOf(c.dataDir);
    const written = ours.filter((x) => x.type === 'revisit');
    t.equal(written.length, 1, 'the archive wrote one revisit record of its own');
    t.equal(written[0].headers.get('warc-refers-to-target-uri'), url);
    t.equal(written[0].headers.get('warc-refers-to-date'), '2026-01-01T10:00:00Z');
    t.equal(written[0].headers.get('warc-payload-digest'), sha256(page), "the original's payload digest, as the archive writes it (SHA-256)");
  },
);

t.test(
  "through the running daemon: a revisit record that resolves to a revisit memento is imported with its original's body, and counted as a revisit memento",
  async (t) => {
    const c = writeConfig();
    t.teardown(() => rmSync(c.dir, { recursive: true, force: true }));
    const d = await startDaemon('memento-archive.js', ['serve', '--config', c.config, '--quiet']);
    t.teardown(() => d.stop());
    const url = 'http://example.org/kept';
    const page = '<html><body>kept as it was</body></html>';
    const capture = (date: string) =>
      captureRecord({ target: '/kept', host: 'example.org', date, body: page, responseHeaders: [['Content-Type', 'text/html']] });
    t.equal((await putCapture(d, '', capture('Thu, 01 Jan 2026 10:00:00 GMT'))).status, 201, 'the original');
    t.equal((await putCapture(d, '', capture('Fri, 02 Jan 2026 10:00:00 GMT'))).status, 201, 'a revisit');
    // Another crawler's revisit a day later, naming nothing but the payload digest: the newest memento with it is the revisit of 2 January.
    const day3 = '2026-01-03T10:00:00Z';
    const revisit = WARCRecord.create(
      {
        url,
        date: day3,
        type: 'revisit',
        warcVersion: 'WARC/1.1',
        statusline: 'HTTP/1.1 200 OK',
        httpHeaders: { 'Content-Type': 'text/html', Date: new Date(day3).toUTCString() },
        warcHeaders: { 'WARC-Payload-Digest': sha256(page) },
      },
      once(),
    );
    const file = path.join(c.dir, 'later.warc.gz');
    writeFileSync(file, await gz(revisit));
    const r = await runCli(['import', '--config', c.config, '--daemon', d.url, file]);
    t.equal(r.code, 0, r.stderr);
    t.match(r.stdout, /: 0 new mementos, 1 revisit memento, 0 duplicates, 1 revisit record resolved, .*; through the running daemon at /m);
    const m = await request(`${d.url}/current/memento/20260103100000id_/${url}`);
    t.equal(m.status, 200);
    t.equal(m.text, page, "its body is the original's");
  },
);

/** Every record of every WARC file of a data folder (each archive's in writing order), read with warcio: type, target, WARC headers (lower-case names), the status of the HTTP head its block starts with, the block bytes. */
async function warcRecordsOf(dataDir: string) {
  const warcs = path.join(dataDir, 'warcs');
  const out: { type: string; target: string; headers: Map<string, string>; status: number | null; block: Buffer }[] = [];
  for (const file of [...(await listWarcFiles(warcs)).values()].flat()) {
    const parser = new WARCParser(createReadStream(path.join(warcs, file)), { parseHttp: false });
    for await (const rec of parser) {
      const block = Buffer.from(await rec.readFully(false));
      const headers = new Map<string, string>();
      for (const [k, v] of rec.warcHeaders.headers) headers.set(k.toLowerCase(), v);
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(block.toString('latin1'));
      out.push({ type: rec.warcType ?? '', target: rec.warcTargetURI ?? '', headers, status: status ? +status[1] : null, block });
    }
  }
  return out;
}

/** The WARC files of a data folder, each archive's in writing order. */
async function warcPaths(dataDir: string): Promise<string[]> {
  const warcs = path.join(dataDir, 'warcs');
  return [...(await listWarcFiles(warcs)).values()].flat().map((f) => path.join(warcs, f));
}

/** The stored response's headers as a memento answers with them (`X-Archive-Orig-<name>`). */
const archived = (h: Record<string, unknown>) => Object.entries(h).filter(([k]) => k.startsWith('x-archive-orig-'));

/** What a reader sees of `url` in an archive, its base address written `BASE`: the link and JSON TimeMaps, and at each memento the replay and the raw (`id_`) answer. */
async function seen(a: TestArchive, url: string) {
  const norm = (s: string) => s.split(a.url).join('BASE');
  const linkTm = await request(`${a.url}/tg/timemap/link/${url}`);
  const jsonTm = await request(`${a.url}/tg/timemap/json/${url}`);
  const list = (JSON.parse(jsonTm.text) as { mementos: { list: { uri: string; datetime: string }[] } }).mementos.list;
  const mementos = [];
  for (const m of list) {
    const replay = await request(m.uri);
    const raw = await request(m.uri.replace(/\/memento\/(\d{14})\//, '/memento/$1id_/'));
    mementos.push({
      datetime: m.datetime,
      replay: { status: replay.status, type: replay.headers['content-type'], mementoDatetime: replay.headers['memento-datetime'], body: norm(replay.text) },
      raw: {
        status: raw.status,
        orig: archived(raw.headers),
        type: raw.headers['content-type'],
        link: norm(String(raw.headers.link)),
        body: raw.body.toString('base64'),
      },
    });
  }
  return { link: { status: linkTm.status, text: norm(linkTm.text) }, json: { status: jsonTm.status, text: norm(jsonTm.text) }, mementos };
}

const DAY = (d: string) => `${d} 2026 10:00:00 GMT`;

t.test(
  'round trip with revisits: the WARC files of an archive with revisits, imported into a fresh one, give the same TimeMaps (link, JSON) and replays; warcio reads each revisit record',
  async (t) => {
    const a0 = writeConfig();
    t.teardown(() => rmSync(a0.dir, { recursive: true, force: true }));
    let a = await startArchive(TWO_ARCHIVES, { dataDir: a0.dataDir });
    const page = 'http://www.example.org/';
    const style = 'http://www.example.org/style.css';
    const html = '<html><head><link rel="stylesheet" href="/style.css"></head><body><a href="/about">about</a></body></html>';
    const css = (colour: string) => `body { color: ${colour}; background: url(/bg.png) }`;
    const put = async (uri: string, date: string, body: string, type: string) =>
      (await putCapture(a, uri, captureRecord({ target: new URL(uri).pathname, date, body, responseHeaders: [['Content-Type', type]] }))).status;
    const captures: [string, string, string, string, number][] = [
      [page, DAY('Thu, 01 Jan'), html, 'text/html', 201],
      [style, DAY('Thu, 01 Jan'), css('black'), 'text/css', 201],
      [page, DAY('Sun, 01 Feb'), html, 'text/html', 201], // a revisit
      [style, DAY('Sun, 01 Feb'), css('navy'), 'text/css', 201], // changed: a new memento
      [page, DAY('Sun, 01 Mar'), html, 'text/html', 201], // a revisit of January's
      [page, 'Sun, 01 Mar 2026 12:00:00 GMT', html, 'text/html', 200], // within the revisit interval: nothing stored
      [style, DAY('Sun, 01 Mar'), css('navy'), 'text/css', 201], // a revisit of February's
    ];
    for (const [uri, date, body, type, status] of captures) t.equal(await put(uri, date, body, type), status, `${uri} at ${date}: ${status}`);
    await a.close(true);

    // warcio reads every revisit record the archive wrote, with the headers of docs/storage.md.
    const records = await warcRecordsOf(a0.dataDir);
    const revisits = records.filter((r) => r.type === 'revisit');
    t.same(
      revisits.map((r) => `${r.headers.get('warc-date')} ${r.target}`),
      ['2026-02-01T10:00:00Z http://www.example.org/', '2026-03-01T10:00:00Z http://www.example.org/', '2026-03-01T10:00:00Z http://www.example.org/style.css'],
      'three revisit records',
    );
    const refersTo = ['2026-01-01T10:00:00Z', '2026-01-01T10:00:00Z', '2026-02-01T10:00:00Z'];
    for (const [i, r] of revisits.entries()) {
      const what = `revisit of ${r.target} at ${r.headers.get('warc-date')}`;
      t.equal(r.headers.get('warc-profile'), PROFILE, `${what}: WARC-Profile`);
      t.equal(r.headers.get('warc-refers-to-target-uri'), r.target, `${what}: WARC-Refers-To-Target-URI`);
      t.equal(r.headers.get('warc-refers-to-date'), refersTo[i], `${what}: WARC-Refers-To-Date, the original's (never a revisit's)`);
      t.equal(r.headers.get('warc-payload-digest'), sha256(r.target === page ? html : css('navy')), `${what}: the payload's digest`);
      t.equal(r.headers.get('warc-block-digest'), sha256(r.block), `${what}: WARC-Block-Digest over the block`);
      t.equal(r.headers.get('content-type'), 'application/http; msgtype=response');
      const original = records.find((q) => q.type === 'response' && q.target === r.target && q.headers.get('warc-date') === refersTo[i]);
      t.equal(r.headers.get('warc-refers-to'), original?.headers.get('warc-record-id'), `${what}: WARC-Refers-To, the original's record id`);
      t.equal(r.headers.get('archive-capture-via'), 'put', `${what}: Archive-Capture-Via: put`);
      t.equal(r.status, 200, `${what}: its block is its HTTP head`);
      t.ok(r.block.toString('latin1').endsWith('\r\n\r\n') && r.block.indexOf('\r\n\r\n') === r.block.length - 4, `${what}: the head and nothing after it`);
      const req = records.filter((q) => q.type === 'request' && q.headers.get('warc-concurrent-to') === r.headers.get('warc-record-id'));
      t.equal(req.length, 1, `${what}: one request record names it in WARC-Concurrent-To`);
    }

    const b0 = writeConfig();
    t.teardown(() => rmSync(b0.dir, { recursive: true, force: true }));
    const r = await runCli(['import', '--config', b0.config, ...(await warcPaths(a0.dataDir))]);
    t.equal(r.code, 0, r.stderr);
    t.match(
      r.stdout,
      /^import: 1 file, 13 WARC records \([\d.]+ MiB, [\d.]+ s\): 3 new mementos, 3 revisit mementos, 0 duplicates, 3 revisit records resolved, 0 revisit records unresolved \(skipped\), 0 refused; /m,
    );
    const index = await IndexDb.open(path.join(b0.dataDir, 'index.sqlite3'));
    const v = await verify(index, path.join(b0.dataDir, 'warcs'));
    await index.close();
    t.ok(v.ok, 'verify passes on the new archive: ' + v.problems.join('; '));
    t.equal((await warcRecordsOf(b0.dataDir)).filter((x) => x.type === 'revisit').length, 3, 'the new archive wrote three revisit records');

    a = await startArchive(TWO_ARCHIVES, { dataDir: a0.dataDir });
    t.teardown(() => a.close());
    const b = await startArchive(TWO_ARCHIVES, { dataDir: b0.dataDir });
    t.teardown(() => b.close());
    for (const url of [page, style]) {
      const [was, is] = [await seen(a, url), await seen(b, url)];
      t.equal(was.mementos.length, 3, `${url}: three mementos`);
      for (const m of was.mementos) t.same([m.replay.status, m.raw.status], [200, 200], `${url} at ${m.datetime}: replayed`);
      t.same(is.link, was.link, `${url}: the same link TimeMap`);
      t.same(is.json, was.json, `${url}: the same JSON TimeMap`);
      t.same(is.mementos, was.mementos, `${url}: the same replay and raw answer at each memento`);
    }
    const raw = await request(`${b.url}/current/memento/20260301100000id_/${page}`);
    t.equal(raw.text, html, "the March revisit's body is January's page");
  },
);

t.test("a revisit read before its original (another archive's folder, later in name order) is resolved at the end of the run", async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'import-revisit-order-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const config = (name: string) => {
    const file = path.join(dir, `${name}.yaml`);
    writeFileSync(file, `listen: 127.0.0.1:0\ndata_dir: ${name}\n${NEW_SORTS_BEFORE_OLD}`, { mode: 0o600 });
    return file;
  };
  const configB = config('b');
  const url = 'http://example.org/span';
  const page = '<html><body>the same across the new year</body></html>';
  let a = await startArchive(NEW_SORTS_BEFORE_OLD, { dataDir: path.join(dir, 'a') });
  const capture = (date: string) => captureRecord({ target: '/span', host: 'example.org', date, body: page, responseHeaders: [['Content-Type', 'text/html']] });
  t.equal((await putCapture(a, '', capture('Mon, 15 Dec 2025 10:00:00 GMT'))).status, 201, 'the original, in archive old');
  t.equal((await putCapture(a, '', capture('Thu, 15 Jan 2026 10:00:00 GMT'))).status, 201, 'its revisit, in archive new');
  await a.close(true);
  const warcs = path.join(dir, 'a', 'warcs');
  const files = (await readdir(warcs, { recursive: true }))
    .filter((f) => f.endsWith('.warc.gz'))
    .sort()
    .map((f) => path.join(warcs, f));
  t.match(
    files.map((f) => path.basename(path.dirname(f))),
    ['new', 'old'],
    "as a shell's warcs/*/*.warc.gz lists them: the revisit's file first",
  );
  const r = await runCli(['import', '--config', configB, ...files]);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /: 1 new memento, 1 revisit memento, 0 duplicates, 1 revisit record resolved, 0 revisit records unresolved \(skipped\), /);
  a = await startArchive(NEW_SORTS_BEFORE_OLD, { dataDir: path.join(dir, 'a') });
  t.teardown(() => a.close());
  const b = await startArchive(NEW_SORTS_BEFORE_OLD, { dataDir: path.join(dir, 'b') });
  t.teardown(() => b.close());
  const [was, is] = [await seen(a, url), await seen(b, url)];
  t.equal(was.mementos.length, 2);
  t.same(is, was, 'the same TimeMaps and the same answer at each memento');
});
