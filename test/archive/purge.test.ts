/**
 * `memento-archive purge` (docs/operations.md "Access rules and takedown"): captures
 * erased for good. After it no WARC file holds the erased bodies (the
 * decompressed files are searched), the index neither, `verify` passes,
 * the index is the one `reindex` builds, every other memento serves the
 * same bytes, and the URL is as if never captured. It refuses while a
 * daemon holds the data folder (a dry run, which only reads, runs beside
 * it), and a purge cut short stops the daemon
 * from starting on an index that may not match.
 */
import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import t from 'tap';
import { purgeSelection } from '../../archive/commands/purge.js';
import { IndexDb } from '../../archive/store/index/index-db.js';
import { PurgeInterruptedError } from '../../archive/store/upkeep/purge.js';
import { epoch, partsOf, ts14 } from '../conformance/helpers.js';
import { captureRecord, putCapture, request, startArchive, type TestArchive, TWO_ARCHIVES } from '../helpers/archive.js';
import { runCli, warcBytes, warcRecords, writeConfig } from './helpers.js';

const JAN = 'Mon, 01 Jan 2001 00:00:00 GMT';
const JUN = 'Fri, 01 Jun 2001 12:00:00 GMT';
const DEC = 'Sat, 01 Dec 2001 00:00:00 GMT';
const OCT26 = 'Thu, 01 Oct 2026 00:00:00 GMT';

/** Every WARC file of the data folder, decompressed (all gzip members) and joined. */
function warcText(dataDir: string): string {
  const out: string[] = [];
  const root = path.join(dataDir, 'warcs');
  for (const id of readdirSync(root))
    for (const f of readdirSync(path.join(root, id))) out.push(zlib.gunzipSync(readFileSync(path.join(root, id, f))).toString('latin1'));
  return out.join('\n');
}

/** The WARC file names under the data folder. */
const warcFiles = (dataDir: string) =>
  readdirSync(path.join(dataDir, 'warcs')).flatMap((id) => readdirSync(path.join(dataDir, 'warcs', id)).map((f) => `${id}/${f}`));

/** Stores one capture of `uriR` at `date` with `body`; returns the PUT status. */
async function put(a: TestArchive, uriR: string, date: string, body: string): Promise<number> {
  return (await putCapture(a, uriR, captureRecord({ ...partsOf(uriR), date, body, responseHeaders: [['Content-Type', 'text/plain']] }))).status;
}

const idUriM = (a: TestArchive, archive: string, date: string, uriR: string) => `${a.url}/${archive}/memento/${ts14(date)}id_/${uriR}`;

/** Every index row (without ids), for comparing an index with its rebuild. */
async function dump(dataDir: string) {
  const index = await IndexDb.open(path.join(dataDir, 'index.sqlite3'));
  try {
    return await index.dump();
  } finally {
    await index.close();
  }
}

t.test('purge --url: the bodies are gone from every WARC file and the index, verify passes, the rest serves the same bytes', async (t) => {
  const { dir, config, dataDir } = writeConfig();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const secret = 'http://www.example.org/secret';
  const keep = 'http://www.example.org/keep';
  const mark = randomBytes(6).toString('hex');
  const S = (what: string) => `SECRET-${what}-${mark}`;
  let a = await startArchive(TWO_ARCHIVES, { dataDir });
  // Interleaved in one WARC file; December twice in one second (the second is refused: nothing of it on disk).
  t.equal(await put(a, secret, JAN, S('JAN')), 201);
  t.equal(await put(a, keep, JAN, `KEEP-JAN-${mark}`), 201);
  t.equal(await put(a, secret, JUN, S('JUN')), 201);
  t.equal(await put(a, keep, JUN, `KEEP-JUN-${mark}`), 201);
  t.equal(await put(a, secret, DEC, S('DEC')), 201);
  t.equal(await put(a, keep, DEC, `KEEP-DEC-${mark}`), 201);
  t.equal(await put(a, secret, DEC, S('DEC-refused')), 409);
  t.equal(await put(a, keep, OCT26, `KEEP-2026-${mark}`), 201);
  const keepers: [string, string][] = [
    ['2025', JAN],
    ['2025', JUN],
    ['2025', DEC],
    ['current', OCT26],
  ];
  const before = await Promise.all(keepers.map(([id, d]) => request(idUriM(a, id, d, keep))));
  for (const w of ['JAN', 'JUN', 'DEC']) t.ok(warcText(dataDir).includes(S(w)), `before: ${w} is on disk`);
  t.notOk(warcText(dataDir).includes(S('DEC-refused')), 'the refused capture was never written');

  // While the daemon holds the data folder: refused, nothing touched.
  const bytes = await warcBytes(dataDir);
  const busy = await runCli(['purge', '--config', config, '--url', secret]);
  t.equal(busy.code, 1, 'refused while the daemon runs');
  t.match(busy.stderr, /^memento-archive: a daemon \(pid \d+\) is running on \S+; stop it before purge\n$/);
  t.equal(await warcBytes(dataDir), bytes, 'nothing changed');
  // A dry run changes nothing: it runs beside the daemon, and says the purge itself needs it stopped.
  // The newest file of the span ends in a record being written (a gzip member cut short): not damage here.
  const newest = path.join(
    dataDir,
    'warcs',
    warcFiles(dataDir)
      .filter((f) => f.startsWith('2025/'))
      .sort()
      .at(-1)!,
  );
  const size = statSync(newest).size;
  const writing = zlib.gzipSync(Buffer.concat([Buffer.from('WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 4096\r\n\r\n'), randomBytes(4096)]));
  appendFileSync(newest, writing.subarray(0, writing.length >> 1));
  const dry = await runCli(['purge', '--config', config, '--url', secret, '--dry-run']);
  truncateSync(newest, size);
  t.equal(dry.code, 0, `a dry run beside the daemon: exit 0 (${dry.stderr.trim()})`);
  t.match(dry.stderr, /^memento-archive: a daemon \(pid \d+\) is running on \S+; a dry run only reads \(stop it before the purge itself\)\n$/);
  t.equal(dry.stdout.match(/^would erase: \d{14} http:\/\/www\.example\.org\/secret \(2025\/\S+\.warc\.gz\)$/gm)?.length, 3, 'it names the 3 captures');
  t.match(dry.stdout, /^purge \(dry run\): would erase 3 capture\(s\) \(6 WARC record\(s\)\) from 1 WARC file\(s\).*; nothing was changed$/m);
  t.equal(await warcBytes(dataDir), bytes, 'nothing changed');
  await a.close();

  const r = await runCli(['purge', '--config', config, '--url', secret]);
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stdout.match(/^erased: \d{14} http:\/\/www\.example\.org\/secret \(2025\/\S+\.warc\.gz\)$/gm)?.length, 3, 'one line per capture erased');
  t.match(
    r.stdout,
    /^purge: erased 3 capture\(s\) \(6 WARC record\(s\), 3 index row\(s\)\) from 1 WARC file\(s\) \(1 rewritten, 0 removed\): \d+ → \d+ bytes$/m,
  );
  const text = warcText(dataDir);
  for (const w of ['JAN', 'JUN', 'DEC']) t.notOk(text.includes(S(w)), `no WARC file holds the ${w} body`);
  t.notOk(text.includes('/secret'), 'nor its request records');
  for (const w of ['JAN', 'JUN', 'DEC', '2026']) t.ok(text.includes(`KEEP-${w}-${mark}`), `the ${w} capture of another URL stays`);
  const index = readFileSync(path.join(dataDir, 'index.sqlite3')).toString('latin1');
  t.notOk(index.includes('/secret'), 'the index file holds no trace of the URL (vacuumed)');
  t.notOk(existsSync(path.join(dataDir, 'index.sqlite3-wal')) && readFileSync(path.join(dataDir, 'index.sqlite3-wal')).includes('/secret'), 'nor its WAL');

  const v = await runCli(['verify', '--config', config]);
  t.equal(v.code, 0, v.stdout);
  t.match(v.stdout, /^verify: OK: 4 index rows, \d+ WARC records in 2 files .*; 0 response\/revisit records not in the index/m);
  const rows = await dump(dataDir);
  t.equal((await runCli(['reindex', '--config', config])).code, 0);
  t.same(await dump(dataDir), rows, 'the index is the one reindex builds from the new files');

  a = await startArchive(TWO_ARCHIVES, { dataDir });
  t.teardown(() => a.close());
  for (const [i, [id, d]] of keepers.entries()) {
    const res = await request(idUriM(a, id, d, keep));
    t.equal(res.status, 200);
    t.same(res.body, before[i].body, `${id} ${d}: the same bytes`);
    t.equal(res.headers['memento-datetime'], before[i].headers['memento-datetime']);
  }
  for (const url of [
    `/2025/timegate/${secret}`,
    `/tg/${secret}`,
    `/tg/timemap/${secret}`,
    `/2025/memento/${ts14(JAN)}/${secret}`,
    `/2025/timemap/link/${secret}`,
  ])
    t.equal((await request(a.url + url)).status, 404, `${url}: 404, as if never captured`);
  t.equal(await put(a, secret, JAN, S('JAN')), 201, 'the same capture again is a new memento: nothing to deduplicate against');
});

t.test('purge --prefix with --after/--before and --dry-run; a file left with only its warcinfo is removed', async (t) => {
  const { dir, config, dataDir } = writeConfig();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const a = await startArchive(TWO_ARCHIVES, { dataDir });
  const u = (p: string) => `http://www.example.org${p}`;
  for (const [p, d] of [
    ['/dir/a', JAN],
    ['/dir/a', JUN],
    ['/dir/b', JUN],
    ['/dirt', JUN],
    ['/dir/a', OCT26],
  ] as const)
    t.equal(await put(a, u(p), d, `${p} at ${d}`), 201);
  await a.close();

  const bytes = await warcBytes(dataDir);
  const dry = await runCli(['purge', '--config', config, '--prefix', u('/dir/'), '--after', '2001-05-01', '--before', '20010701000000', '--dry-run']);
  t.equal(dry.code, 0, dry.stderr);
  t.same(
    dry.stdout.match(/^would erase: .*$/gm)?.map((l) => l.replace(/ \(2025\/\S+\.warc\.gz\)$/, '')),
    [`would erase: ${ts14(JUN)} ${u('/dir/a')}`, `would erase: ${ts14(JUN)} ${u('/dir/b')}`],
    'the dry run names what would go',
  );
  t.match(dry.stdout, /^purge \(dry run\): would erase 2 capture\(s\) \(4 WARC record\(s\)\) from 1 WARC file\(s\).*; nothing was changed$/m);
  t.equal(await warcBytes(dataDir), bytes, 'a dry run changes nothing');

  const r = await runCli(['purge', '--config', config, '--prefix', u('/dir/*'), '--after', '2001-05-01', '--before', '2001-07-01']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /^purge: erased 2 capture\(s\) \(4 WARC record\(s\), 2 index row\(s\)\)/m);
  const text = warcText(dataDir);
  t.notOk(text.includes(`/dir/a at ${JUN}`), '/dir/a in June: gone');
  t.notOk(text.includes(`/dir/b at ${JUN}`), '/dir/b in June: gone');
  t.ok(text.includes(`/dir/a at ${JAN}`), 'January is before --after: kept');
  t.ok(text.includes(`/dirt at ${JUN}`), '/dirt is not under /dir/: kept');
  t.ok(text.includes(`/dir/a at ${OCT26}`), '2026 is after --before: kept');

  // Everything of 2026: the current archive's file keeps nothing but its warcinfo, so it goes.
  t.equal(warcFiles(dataDir).filter((f) => f.startsWith('current/')).length, 1);
  const all = await runCli(['purge', '--config', config, '--prefix', 'http://www.example.org*', '--after', '2026-01-01']);
  t.equal(all.code, 0, all.stderr);
  t.match(all.stdout, /from 1 WARC file\(s\) \(0 rewritten, 1 removed\): \d+ → 0 bytes$/m);
  t.same(
    warcFiles(dataDir).filter((f) => f.startsWith('current/')),
    [],
    'the emptied file is removed',
  );
  const v = await runCli(['verify', '--config', config]);
  t.equal(v.code, 0, v.stdout);
  t.match(v.stdout, /verify: OK: 2 index rows/);

  const none = await runCli(['purge', '--config', config, '--url', u('/never')]);
  t.equal(none.code, 0);
  t.match(none.stdout, /^purge: erased 0 capture\(s\) \(0 WARC record\(s\), 0 index row\(s\)\) from 0 WARC file\(s\)/m, 'nothing matched: nothing changed');
});

t.test('purge options: one of --url / --prefix, dates as in the config; bad ones are exit status 2 with one line', async (t) => {
  t.match(purgeSelection({ url: 'http://a.example/x' }), { pattern: { key: 'example,a)/x', prefix: false } });
  t.match(purgeSelection({ prefix: 'http://a.example/x' }), { pattern: { key: 'example,a)/x', prefix: true } }, 'a prefix without its * gets one');
  t.match(purgeSelection({ url: 'http://a.example/', before: '2020-01-01', after: '20190101' }), { before: 1577836800, after: 1546300800 });
  t.equal(purgeSelection({}), 'give either --url URL or --prefix URL* (one of them)');
  t.equal(purgeSelection({ url: 'http://a.example/', prefix: 'http://a.example/*' }), 'give either --url URL or --prefix URL* (one of them)');
  t.match(purgeSelection({ url: 'http://a.example/*' }), /^--url takes one URL; for every URL under http:\/\/a\.example\/\* use --prefix$/);
  t.match(purgeSelection({ url: 'ftp://a.example/' }), /^--url "ftp:\/\/a\.example\/": only http and https/);
  t.match(purgeSelection({ url: 'http://a.example/', before: 'last week' }), /^--before must be a date like/);
  t.equal(purgeSelection({ url: 'http://a.example/', before: '2020-01-01', after: '2020-01-01' }), '--after must be earlier than --before');
  const { dir, config } = writeConfig();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const r = await runCli(['purge', '--config', config]);
  t.equal(r.code, 2);
  t.equal(r.stderr, 'memento-archive: purge: give either --url URL or --prefix URL* (one of them)\n');
});

t.test('a purge cut short: the daemon will not start until purge runs again or reindex; a damaged file stops purge before any change', async (t) => {
  const { dir, config, dataDir } = writeConfig();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const a = await startArchive(TWO_ARCHIVES, { dataDir });
  t.equal(await put(a, 'http://www.example.org/x', JAN, 'x'), 201);
  t.equal(await put(a, 'http://www.example.org/y', JAN, 'y'), 201);
  await a.close();

  writeFileSync(path.join(dataDir, 'purge.pending'), '');
  await t.rejects(startArchive(TWO_ARCHIVES, { dataDir }), PurgeInterruptedError, 'the store will not open');
  const serve = await runCli(['serve', '--config', config], 20_000);
  t.equal(serve.code, 1);
  t.match(
    serve.stderr,
    /^memento-archive: \S+purge\.pending: a purge did not finish, the index may not match the WARC files; run memento-archive purge again, or reindex\n$/,
  );
  const again = await runCli(['purge', '--config', config, '--url', 'http://www.example.org/x']);
  t.equal(again.code, 0, again.stderr);
  t.match(again.stdout, /a previous purge did not finish; rebuilding the index from the WARC files first/);
  t.notOk(existsSync(path.join(dataDir, 'purge.pending')), 'the marker is gone');
  writeFileSync(path.join(dataDir, 'purge.pending'), '');
  t.equal((await runCli(['reindex', '--config', config])).code, 0);
  t.notOk(existsSync(path.join(dataDir, 'purge.pending')), 'reindex removes it too');

  const file = path.join(dataDir, 'warcs', warcFiles(dataDir)[0]);
  writeFileSync(file, Buffer.concat([readFileSync(file), Buffer.from('not a gzip member')]));
  const bytes = await warcBytes(dataDir);
  const r = await runCli(['purge', '--config', config, '--url', 'http://www.example.org/y']);
  t.equal(r.code, 1);
  t.match(r.stderr, /^memento-archive: purge: 2025\/\S+: corrupt record at offset \d+: not the start of a gzip member; nothing was changed/);
  t.equal(await warcBytes(dataDir), bytes, 'nothing changed');
  const b = await startArchive(TWO_ARCHIVES, { dataDir });
  t.teardown(() => b.close());
  t.equal((await request(`${b.url}/2025/memento/${ts14(JAN)}id_/http://www.example.org/y`)).status, 200, 'y is still there');
});

t.test('purge --url erases every spelling of the URL (one urlkey): /%65xcluded/page and /excluded//page go with /excluded/page', async (t) => {
  const { dir, config, dataDir } = writeConfig();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const mark = randomBytes(6).toString('hex');
  const a = await startArchive(TWO_ARCHIVES, { dataDir });
  const spellings = ['http://www.example.org/excluded/page', 'http://www.example.org/%65xcluded/page', 'http://www.example.org/excluded//page'];
  for (const [i, u] of spellings.entries()) t.equal(await put(a, u, [JAN, JUN, DEC][i], `SPELLING-${i}-${mark}`), 201, `stored: ${u}`);
  t.equal(await put(a, 'http://www.example.org/excludedx/page', JAN, `KEEP-${mark}`), 201);
  await a.close();
  const r = await runCli(['purge', '--config', config, '--url', 'http://www.example.org/excluded/page']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /^purge: erased 3 capture\(s\)/m, 'the captures of every spelling');
  const text = warcText(dataDir);
  for (const i of [0, 1, 2]) t.notOk(text.includes(`SPELLING-${i}-${mark}`), `no WARC file holds the body of ${spellings[i]}`);
  t.notOk(/%65xcluded|excluded\/\/page/.test(text), 'nor a request record of those spellings');
  t.ok(text.includes(`KEEP-${mark}`), 'the URL beside it stays');
  t.same(
    (await dump(dataDir)).map((row) => row.uri_r),
    ['http://www.example.org/excludedx/page'],
    'the index holds the other URL only',
  );
});

t.test(
  'revisits: purging an original takes its revisits (and their request records) with it, in any archive and outside the dates given; a purged revisit leaves its original',
  async (t) => {
    const { dir, config, dataDir } = writeConfig();
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const x = 'http://www.example.org/x';
    const y = 'http://www.example.org/y';
    const mark = randomBytes(6).toString('hex');
    let a = await startArchive(TWO_ARCHIVES, { dataDir });
    // The same body again a day or more later: a revisit (201), a memento whose record is a WARC revisit record.
    for (const d of [JAN, JUN, DEC, OCT26]) t.equal(await put(a, x, d, `X-${mark}`), 201, `x at ${d}`);
    for (const d of [JAN, JUN]) t.equal(await put(a, y, d, `Y-${mark}`), 201, `y at ${d}`);
    await a.close();
    const revisitsOf = async (uri: string) => {
      const all = [...(await warcRecords(dataDir, '2025')), ...(await warcRecords(dataDir, 'current'))];
      return all.filter((r) => r.type === 'revisit' && r.target === uri).map((r) => r.headers.get('warc-date'));
    };
    t.same(await revisitsOf(x), ['2001-06-01T12:00:00Z', '2001-12-01T00:00:00Z', '2026-10-01T00:00:00Z'], 'x: three revisit records, one in the other archive');
    t.same(await revisitsOf(y), ['2001-06-01T12:00:00Z'], 'y: one');

    // A revisit purged: its original stays, and serves.
    const r1 = await runCli(['purge', '--config', config, '--url', y, '--after', '2001-05-01']);
    t.equal(r1.code, 0, r1.stderr);
    t.match(r1.stdout, new RegExp(`^erased: ${ts14(JUN)} ${y} \\(2025/\\S+\\.warc\\.gz\\)$`, 'm'));
    t.match(r1.stdout, /^purge: erased 1 capture\(s\) \(2 WARC record\(s\), 1 index row\(s\)\)/m, 'the revisit record and its request record');
    t.same(await revisitsOf(y), [], 'no revisit record of y is left');
    t.same(
      (await dump(dataDir)).filter((row) => row.uri_r === y).map((row) => row.datetime),
      [epoch(JAN)],
      "y's original is left",
    );

    // The original purged (only January is selected): its three revisits go too, and say why.
    const r2 = await runCli(['purge', '--config', config, '--url', x, '--before', '2001-02-01']);
    t.equal(r2.code, 0, r2.stderr);
    t.match(r2.stdout, new RegExp(`^erased: ${ts14(JAN)} ${x} \\(2025/\\S+\\.warc\\.gz\\)$`, 'm'));
    for (const d of [JUN, DEC, OCT26])
      t.match(r2.stdout, new RegExp(`^erased: ${ts14(d)} ${x} \\(\\S+\\.warc\\.gz, a revisit of ${ts14(JAN)} ${x}\\)$`, 'm'), `the revisit at ${d}`);
    t.match(r2.stdout, /^purge: erased 4 capture\(s\) \(8 WARC record\(s\), 4 index row\(s\)\) from 2 WARC file\(s\)/m);
    const text = warcText(dataDir);
    t.notOk(text.includes(`X-${mark}`), "no WARC file holds x's body");
    t.notOk(text.includes(x), 'no record names x (WARC-Target-URI, WARC-Refers-To-Target-URI): its revisit records went too');
    t.notOk(text.includes('GET /x '), 'and their request records');
    t.ok(text.includes(`Y-${mark}`), "y's original stays");
    t.same(
      (await dump(dataDir)).map((row) => row.uri_r),
      [y],
      'the index holds y alone',
    );
    const v = await runCli(['verify', '--config', config]);
    t.equal(v.code, 0, v.stdout);
    t.match(v.stdout, /^verify: OK: 1 index rows/m);
    const rows = await dump(dataDir);
    t.equal((await runCli(['reindex', '--config', config])).code, 0);
    t.same(await dump(dataDir), rows, 'the index is the one reindex builds from the new files');

    a = await startArchive(TWO_ARCHIVES, { dataDir });
    t.teardown(() => a.close());
    t.equal((await request(`${a.url}/tg/timemap/${x}`)).status, 404, 'x: as if never captured');
    t.equal((await request(idUriM(a, 'current', OCT26, x))).status, 404, 'its revisit in the other archive too');
    const yJan = await request(idUriM(a, '2025', JAN, y));
    t.equal(yJan.status, 200);
    t.equal(yJan.text, `Y-${mark}`, "y's original serves its body");
  },
);
