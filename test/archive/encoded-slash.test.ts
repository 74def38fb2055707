/**
 * What a capture may be, whoever writes it (shared/capture-rules.ts), and
 * what the URL rules cover of what is stored already (docs/url-space.md
 * "One canonical form of a URL"):
 * - a target whose path holds an encoded slash or backslash (`%2F`,
 *   `%5C`) is refused: a site that decodes it serves `/assets%2Fhljs.css`
 *   as `/assets/hljs.css`, and the capture would dodge every rule on
 *   `/assets/`;
 * - a capture whose request had a body is refused: what a body asked for
 *   is not the URL's representation (anyone could plant content under a
 *   public URL);
 * - `import` skips and counts such records;
 * - captures of such paths stored before (a WARC file of an earlier
 *   version, reindexed) are matched by `access:` rules and `purge` in
 *   their folded form (`%2F`, `%5C` read as `/`), on every read path.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import type { Test } from 'tap';
import t from 'tap';
import { AccessRules } from '../../archive/read/access-rules.js';
import { IndexDb } from '../../archive/store/index/index-db.js';
import { PgIndex } from '../../archive/store/index/index-pg.js';
import { reindex } from '../../archive/store/upkeep/maintenance.js';
import { captureRecord, putCapture, request, startArchive, type TestArchive, TWO_ARCHIVES } from '../helpers/archive.js';
import { exactUrlkey } from '#shared/uri.js';
import { indexRowOf } from '../helpers/index-rows.js';
import { startPostgres } from '../helpers/postgres.js';
import { exchange, httpRequest, httpResponse, warcFile, warcRecord } from '../helpers/warc.js';
import { runCli, writeConfig } from './helpers.js';

const JUN = 'Fri, 01 Jun 2001 12:00:00 GMT';
const WARC_JUN = '2001-06-01T12:00:00Z';

t.test('a capture whose target path holds %2F or %5C is refused (400, one line) from any writer and stores nothing; in the query they are kept', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  for (const target of [
    '/assets%2fhljs.css',
    '/assets%2Fhljs.css',
    '/assets%5Chljs.css',
    '/assets%5c..%5csecret',
    '/a/b%2F',
    'http://a.test/assets%2Fhljs.css',
  ]) {
    const res = await putCapture(a, '', captureRecord({ host: 'a.test', target }));
    t.equal(res.status, 400, `${target}: 400`);
    t.match(res.text, /^request target has an encoded (slash|backslash) \(%2f|%5c\)|^request target has a dot-segment/i, `${target}: ${res.text.trim()}`);
    t.equal(res.text.split('\n').length, 2, 'one line');
  }
  const res = await putCapture(a, '', captureRecord({ host: 'a.test', target: '/assets%2Fhljs.css' }));
  t.equal(
    res.text,
    'request target has an encoded slash (%2F) in its path: servers that decode it serve another path than the URL names; it is not archived\n',
  );
  t.equal(await a.store.index.count(), 0, 'nothing stored');
  const ok = await putCapture(a, '', captureRecord({ host: 'a.test', target: '/search?next=%2Fassets%2Fhljs.css&x=%5C' }));
  t.equal(ok.status, 201, 'in the query they are data: stored');
  t.equal((await request(`${a.url}/tg/http://a.test/assets/hljs.css`)).status, 404, 'no memento of /assets/hljs.css was planted');
});

t.test('a capture whose embedded request had a body is refused (400, one line); Content-Length: 0 is no body', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const cases: [string, [string, string][]][] = [
    ['Content-Length: 7', [['Content-Length', '7']]],
    ['Transfer-Encoding: chunked', [['Transfer-Encoding', 'chunked']]],
    ['Transfer-Encoding: gzip, chunked', [['transfer-encoding', 'gzip, chunked']]],
    ['a Content-Length that is no number', [['Content-Length', 'seven']]],
  ];
  for (const [what, requestHeaders] of cases) {
    const res = await putCapture(a, '', captureRecord({ host: 'a.test', target: '/page', requestHeaders }));
    t.equal(res.status, 400, `${what}: 400`);
    t.match(res.text, /^embedded request had a body \((Content-Length|Transfer-Encoding): [^)]*\): [^\n]*\n$/i, `${what}: ${res.text.trim()}`);
  }
  t.equal(await a.store.index.count(), 0, 'nothing stored');
  const ok = await putCapture(a, '', captureRecord({ host: 'a.test', target: '/page', requestHeaders: [['Content-Length', '0']] }));
  t.equal(ok.status, 201, 'Content-Length: 0: stored');
});

t.test('import: WARC responses of an encoded-slash path, or whose request had a body, are refused and counted; the rest is imported', async (t) => {
  const { dir, config, dataDir } = writeConfig();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const css = httpResponse('200 OK', [['Content-Type', 'text/css']], 'body{}');
  const records = [
    ...exchange('http://a.test/assets%2Fhljs.css', WARC_JUN, css).records,
    ...exchange('http://a.test/assets%5chljs.css', WARC_JUN, css).records,
    ...exchange('http://a.test/page', WARC_JUN, httpResponse('200 OK', [['Content-Type', 'text/html']], 'PLANTED'), {
      request: Buffer.concat([httpRequest('http://a.test/page', [['Content-Length', '5']]), Buffer.from('x=PLA')]),
    }).records,
    ...exchange('http://a.test/assets/hljs.css', WARC_JUN, css).records,
  ];
  const file = path.join(dir, 'in.warc.gz');
  writeFileSync(file, warcFile(records, true));
  const r = await runCli(['import', '--config', config, file]);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout + r.stderr, /refused: \S+in\.warc\.gz:\d+ http:\/\/a\.test\/assets%2Fhljs\.css: 400 request target has an encoded slash \(%2F\)/);
  t.match(r.stdout + r.stderr, /refused: \S+in\.warc\.gz:\d+ http:\/\/a\.test\/assets%5chljs\.css: 400 request target has an encoded backslash \(%5c\)/);
  t.match(r.stdout + r.stderr, /refused: \S+in\.warc\.gz:\d+ http:\/\/a\.test\/page: 400 embedded request had a body \(Content-Length: 5\)/);
  t.match(r.stdout + r.stderr, /\b3 refused\b/, 'counted as refused');
  const a = await startArchive(TWO_ARCHIVES, { dataDir });
  t.teardown(() => a.close());
  t.same(
    (await a.store.index.dump()).map((row) => row.uri_r),
    ['http://a.test/assets/hljs.css'],
    'only the plain capture is stored',
  );
});

/**
 * A data folder holding captures of `uris` (one WARC file as an earlier
 * version wrote them, before encoded slashes were refused), indexed by
 * `reindex`; each body is `STORED <uri>`.
 */
async function legacyArchive(t: Test, uris: string[]): Promise<{ dir: string; config: string; dataDir: string }> {
  const made = writeConfig();
  t.teardown(() => rmSync(made.dir, { recursive: true, force: true }));
  const folder = path.join(made.dataDir, 'warcs', '2025');
  mkdirSync(folder, { recursive: true });
  const info = warcRecord(
    [
      ['WARC-Type', 'warcinfo'],
      ['WARC-Record-ID', '<urn:uuid:00000000-0000-4000-8000-000000000000>'],
      ['WARC-Date', WARC_JUN],
      ['Content-Type', 'application/warc-fields'],
    ],
    'software: memento-archive (an earlier version)\r\n',
  );
  const records = uris.flatMap(
    (uri) =>
      exchange(
        uri,
        WARC_JUN,
        httpResponse(
          '200 OK',
          [
            ['Content-Type', 'text/plain'],
            ['Date', JUN],
          ],
          `STORED ${uri}`,
        ),
      ).records,
  );
  writeFileSync(path.join(folder, '2025-20010601120000-00000-abcdef.warc.gz'), warcFile([info, ...records], true));
  const report = await reindex(path.join(made.dataDir, 'index.sqlite3'), path.join(made.dataDir, 'warcs'));
  t.equal(report.rows, uris.length, 'reindexed: one memento per URL');
  return made;
}

/** The addresses a reader may ask about `uriR`, and the pages over many URLs. */
function addresses(uriR: string): string[] {
  return [
    `/tg/${uriR}`,
    `/tg/timemap/${uriR}`,
    `/2025/timegate/${uriR}`,
    `/2025/memento/20010601120000/${uriR}`,
    `/2025/memento/20010601120000id_/${uriR}`,
    `/2025/timemap/link/${uriR}`,
    `/cdx?url=${encodeURIComponent(uriR)}`,
    `/cdx?url=${encodeURIComponent('http://a.test/*')}`,
    '/cdx?url=a.test&matchType=host',
    `/web/*/${uriR}`,
    '/web/*/http://a.test/*',
    '/web/',
  ];
}

/** The answer as a user sees it, the archive's own address and the pages' nonces made one. */
const seen = (a: TestArchive, r: { status: number; text: string }) =>
  `${r.status}\n${r.text
    .split(a.url)
    .join('{base}')
    .split(`127.0.0.1:${a.port}`)
    .join('{host}')
    .replace(/nonce(-|=")[A-Za-z0-9+/_-]+=*/g, 'nonce$1{nonce}')}`;

const HIDING = `${TWO_ARCHIVES}access:\n  - url: http://a.test/assets/*\n    action: exclude\n`;
/** Spellings a site that decodes %2F and %5C serves as files under /assets/, as an earlier version stored them. */
const LEGACY = ['http://a.test/assets%2Fhljs.css', 'http://a.test/assets%5Cdeep%2F%2Fx.css', 'http://a.test/%2Fassets/y.css'];

t.test('captures of encoded-slash paths stored before: an access rule hides them by their folded form at every address, as if never captured', async (t) => {
  const { dataDir } = await legacyArchive(t, LEGACY);
  const a = await startArchive(HIDING, { dataDir });
  const b = await startArchive(HIDING); // the same rules, nothing ever captured
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  for (const uri of [...LEGACY, 'http://a.test/assets/hljs.css']) {
    for (const address of addresses(uri)) {
      t.equal(seen(a, await request(a.url + address)), seen(b, await request(b.url + address)), `${address}: as never captured`);
    }
  }
});

t.test('the folded form counts as the rule does: a more specific allow shows it, a key no rule names stays shown, on every list', async (t) => {
  const { dataDir } = await legacyArchive(t, ['http://a.test/a%2Fb', 'http://a.test/a%2Fc', 'http://a.test/public%2Fx']);
  const rules = `${TWO_ARCHIVES}access:\n  - url: http://a.test/a*\n    action: exclude\n  - url: http://a.test/a/b\n    action: allow\n`;
  const a = await startArchive(rules, { dataDir });
  t.teardown(() => a.close());
  t.equal((await request(`${a.url}/tg/http://a.test/a%2Fb`)).status, 302, '/a%2Fb (/a/b, allowed): shown');
  t.equal((await request(`${a.url}/tg/http://a.test/a%2Fc`)).status, 404, '/a%2Fc (under /a, excluded): hidden');
  t.equal((await request(`${a.url}/tg/http://a.test/public%2Fx`)).status, 302, '/public%2Fx (no rule): shown');
  const cdx = (await request(`${a.url}/cdx?url=${encodeURIComponent('http://a.test/*')}`)).text;
  t.match(cdx, /a%2Fb/, '/cdx prefix: /a%2Fb listed (a key inside the hidden range of /a*, shown by the allow)');
  t.notMatch(cdx, /a%2Fc/, '/cdx prefix: /a%2Fc not listed');
  t.match(cdx, /public%2Fx/);
  const home = (await request(`${a.url}/web/`)).text;
  t.match(home, /a%2Fb/, 'the home page lists /a%2Fb');
  t.notMatch(home, /a%2Fc/, 'and not /a%2Fc');
  t.match(home, /public%2Fx/);
  t.match(home, /\b2 captures in 2 archives\b/, 'its count leaves /a%2Fc out');
});

t.test('purge of the decoded URL, or a prefix, erases the stored encoded-slash spellings for good; verify passes', async (t) => {
  const keep = 'http://a.test/public%2Fx';
  const { config, dataDir } = await legacyArchive(t, [...LEGACY, keep]);
  // And an index row whose WARC file is gone (purge removes the rows of its selection left at a missing file).
  const index = await IndexDb.open(path.join(dataDir, 'index.sqlite3'));
  await index.insertMany([indexRowOf('2025', 'http://a.test/assets%2Fgone.css', 991_396_800)]);
  await index.close();
  const one = await runCli(['purge', '--config', config, '--url', 'http://a.test/assets/hljs.css']);
  t.equal(one.code, 0, one.stderr);
  t.match(one.stdout, /purge: erased 1 capture\(s\) \(2 WARC record\(s\), 1 index row\(s\)\)/, one.stdout);
  const all = await runCli(['purge', '--config', config, '--prefix', 'http://a.test/assets/*']);
  t.equal(all.code, 0, all.stderr);
  t.match(all.stdout, /purge: erased 2 capture\(s\)/, all.stdout);
  const text = readdirSync(path.join(dataDir, 'warcs', '2025'))
    .map((f) => zlib.gunzipSync(readFileSync(path.join(dataDir, 'warcs', '2025', f))).toString('latin1'))
    .join('\n');
  for (const uri of LEGACY) t.notOk(text.includes(`STORED ${uri}`), `no WARC file holds the body of ${uri}`);
  t.ok(text.includes(`STORED ${keep}`), `${keep} (no rule names it) is kept`);
  const v = await runCli(['verify', '--config', config]);
  t.equal(v.code, 0, v.stdout + v.stderr);
  const a = await startArchive(TWO_ARCHIVES, { dataDir });
  t.teardown(() => a.close());
  t.same(
    (await a.store.index.dump()).map((r) => r.uri_r),
    [keep],
    'the index keeps only the other URL',
  );
  t.ok(existsSync(path.join(dataDir, 'index.sqlite3')));
});

t.test('on a PostgreSQL index: the stored keys the rules name in their folded form are found, and its SQL condition agrees with the verdict', async (t) => {
  // A server that cannot start rejects: the test fails with its message.
  const server = await startPostgres();
  t.teardown(() => server.stop());
  const index = await PgIndex.open(await server.database('archive'));
  t.teardown(() => index.close());
  const stored = [...LEGACY, 'http://a.test/a%2Fb', 'http://a.test/a%2Fc', 'http://a.test/public%2Fx', 'http://a.test/assets/plain'];
  await index.insertMany(stored.map((u, i) => indexRowOf('2025', u, 991_396_800 + i)));
  const access = new AccessRules([], index);
  await access.replace([
    { url: 'http://a.test/assets/*', action: 'exclude' },
    { url: 'http://a.test/a*', action: 'block' },
    { url: 'http://a.test/a/b', action: 'allow' },
  ]);
  const rows = await index.pages.recent(100, access.shownRules());
  t.same(
    rows.map((r) => r.uri_r).sort(),
    ['http://a.test/a%2Fb', 'http://a.test/public%2Fx'],
    'shown by the index over the rules: the allowed /a%2Fb and the key no rule names',
  );
  for (const u of stored) {
    const k = exactUrlkey(u);
    t.equal(
      access.verdict(k, 991_396_800) === 'allow',
      rows.some((r) => r.uri_r === u),
      `${u}: the verdict agrees`,
    );
  }
});
