/**
 * `memento-archive search-export` (archive/commands/search-export.ts, run
 * in-process): the sample site of search.test.ts with an excluded page and
 * a purged one, exported as an OpenSearch / Elasticsearch Bulk API body.
 * Every line is JSON, an `index` action then its document; the shown
 * mementos are there with their text, the excluded and the purged are
 * not; a second run writes the same bytes; `--after-row`, `--from`/`--to`,
 * `--archive`, `--base` and `-o -`; bad options are one line and exit 2,
 * writing nothing; a file that cannot be made and an output that fails
 * are one-line errors (a reader gone is a quiet end).
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import t, { type Test } from 'tap';
import { runPurge } from '../../../archive/commands/purge.js';
import { runSearchExport, type SearchExportOptions } from '../../../archive/commands/search-export.js';
import type { ArchiveConfig } from '../../../archive/config.js';
import { captureRecord, putCapture, startArchive } from '../../helpers/archive.js';
import { load, PHRASE, RULES } from './helpers.js';

const ORG = 'http://www.example.org';

/** Runs the export with `o`: its exit code and what it said on stderr (kept from the test's own output). */
async function exportWith(config: ArchiveConfig, o: SearchExportOptions, stdout?: Writable): Promise<{ code: number; stderr: string }> {
  const write = process.stderr.write.bind(process.stderr);
  let stderr = '';
  process.stderr.write = ((chunk: string | Uint8Array) => ((stderr += String(chunk)), true)) as typeof process.stderr.write;
  try {
    return { code: await runSearchExport(config, o, stdout), stderr };
  } finally {
    process.stderr.write = write;
  }
}

/** The lines of an export: each parsed, as [action, document] pairs. */
function pairs(t: Test, text: string): [Record<string, { _index: string; _id: string }>, Record<string, unknown>][] {
  t.ok(text === '' || text.endsWith('\n'), 'the body ends with a newline (the Bulk API wants one after the last line)');
  const lines = text.split('\n').slice(0, -1);
  t.equal(lines.length % 2, 0, 'an even number of lines');
  const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  const out: ReturnType<typeof pairs> = [];
  for (let i = 0; i < parsed.length; i += 2) out.push([parsed[i] as Record<string, { _index: string; _id: string }>, parsed[i + 1]]);
  return out;
}

const id = (archive: string, ts: string, urlkey: string) => createHash('sha256').update(`${archive}\n${ts}\n${urlkey}`).digest('hex');

/** The document of a sample page as the export writes it (relative addresses). */
const doc = (archive: string, ts: string, iso: string, path: string, mime: string, title: string, body: string, digest: unknown) => ({
  archive_id: archive,
  urlkey: `org,example,www)${path}`,
  uri_r: `${ORG}${path}`,
  memento_datetime: iso,
  uri_m: `/${archive}/memento/${ts}/${ORG}${path}`,
  web_page: `/web/${ts}/${ORG}${path}`,
  status: 200,
  mime,
  digest,
  title,
  body,
});

t.test('search-export: the shown mementos with their text, as Bulk API pairs; excluded and purged ones absent; the same bytes twice', async (t) => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'search-export-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  let a = await startArchive(RULES, { dataDir });
  await load(a);
  await a.close();
  t.equal(await runPurge(a.config, { url: `${ORG}/about` }), 0, '/about purged');

  const file = path.join(dataDir, 'export.ndjson');
  const r = await exportWith(a.config, { output: file });
  t.equal(r.code, 0, r.stderr);
  t.notOk(existsSync(`${file}.partial`), 'no partial file left');
  const text = readFileSync(file, 'utf8');
  const got = pairs(t, text);
  const digests = new Map(got.map(([, d]) => [`${d.uri_r as string} ${d.memento_datetime as string}`, d.digest]));
  for (const d of digests.values()) t.match(d, /^sha256:[0-9a-f]{64}$/, 'the WARC-Payload-Digest');
  const dg = (p: string, iso: string) => digests.get(`${ORG}${p} ${iso}`);
  const terms1 = `Terms of service Plain terms. ${PHRASE}. Ask us anything.`;
  t.same(
    got,
    [
      ['2025', '20250115100000', '2025-01-15T10:00:00Z', '/terms', 'text/html', 'Terms of service', terms1],
      [
        '2025',
        '20250715100000',
        '2025-07-15T10:00:00Z',
        '/terms',
        'text/html',
        'Terms of service',
        'Terms of service Plain terms. We may share what you give us. Ask us anything.',
      ],
      ['current', '20260315100000', '2026-03-15T10:00:00Z', '/terms', 'text/html', 'Terms of service', terms1],
      ['2025', '20250120110000', '2025-01-20T11:00:00Z', '/markup', 'text/html', 'Markup <b>', 'Markup <b> stored <script>alert(1)</script> markup words'],
      ['2025', '20250120120000', '2025-01-20T12:00:00Z', '/notes.txt', 'text/plain', '', 'plain text notes about sellotape and data'],
    ].map(([archive, ts, iso, p, mime, title, body]) => [
      { index: { _index: 'memento-archive', _id: id(archive, ts, `org,example,www)${p}`) } },
      doc(archive, ts, iso, p, mime, title, body, dg(p, iso)),
    ]),
    'by row id: the three texts of /terms (not its revisit), /markup, /notes.txt; not /about (purged), /excluded/secret (excluded), the image',
  );
  t.notMatch(text, /founder|hidden page|Secret/, 'nothing of the purged or the excluded page');
  t.match(
    r.stderr,
    /^search-export: 5 document\(s\) to .*export\.ndjson \(index memento-archive\); 1 memento\(s\) the access rules hide left out; last row (\d+) \(--after-row \1 exports what comes after\)\n$/,
  );
  const lastRow = /last row (\d+)/.exec(r.stderr)![1];

  const again = path.join(dataDir, 'again.ndjson');
  t.equal((await exportWith(a.config, { output: again })).code, 0);
  t.equal(readFileSync(again, 'utf8'), text, 'a second run: the same bytes, the same _ids');

  // A new capture: an export after the last row holds it alone; the full one keeps every _id.
  a = await startArchive(RULES, { dataDir });
  const put = await putCapture(a, '', captureRecord({ target: '/new', date: 'Fri, 20 Mar 2026 10:00:00 GMT', body: '<title>New</title><p>fresh words</p>' }));
  t.equal(put.status, 201);
  await a.app.textIndexer.drained();
  await a.close();
  const inc = path.join(dataDir, 'inc.ndjson');
  const ri = await exportWith(a.config, { output: inc, 'after-row': lastRow });
  t.equal(ri.code, 0, ri.stderr);
  t.same(
    pairs(t, readFileSync(inc, 'utf8')).map(([act, d]) => [act.index._id, d.uri_r, d.title, d.body]),
    [[id('current', '20260320100000', 'org,example,www)/new'), `${ORG}/new`, 'New', 'fresh words']],
    '--after-row: only what came after',
  );
  const full = path.join(dataDir, 'full.ndjson');
  t.equal((await exportWith(a.config, { output: full })).code, 0);
  t.equal(readFileSync(full, 'utf8'), text + readFileSync(inc, 'utf8'), 'the full export: the first one, then the new memento');
});

t.test('search-export: --from/--to, --archive, --index, --base, -o - (stdout)', async (t) => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'search-export-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const a = await startArchive(RULES, { dataDir });
  await load(a);
  await a.close();
  const run = async (o: SearchExportOptions) => {
    const out = new PassThrough();
    let text = '';
    out.on('data', (d) => (text += String(d)));
    const r = await exportWith(a.config, { output: '-', ...o }, out);
    t.equal(r.code, 0, r.stderr);
    return pairs(t, text);
  };
  const when = async (o: SearchExportOptions) => (await run(o)).map(([, d]) => `${d.uri_r as string} ${d.memento_datetime as string}`);
  t.same(
    await when({ from: '202507', to: '2026' }),
    [`${ORG}/terms 2025-07-15T10:00:00Z`, `${ORG}/terms 2026-03-15T10:00:00Z`],
    '--from 202507 --to 2026 (digits)',
  );
  t.same(await when({ from: '2026-01-01T00:00:00Z' }), [`${ORG}/terms 2026-03-15T10:00:00Z`], '--from ISO 8601');
  t.same(await when({ archive: 'current' }), [`${ORG}/terms 2026-03-15T10:00:00Z`], '--archive current');
  t.equal((await run({ archive: '2025' })).length, 5, '--archive 2025: the others (the excluded page left out)');
  const [[act, d]] = await run({ index: 'pages-2026', base: 'https://archive.example.org/', archive: 'current' });
  t.equal(act.index._index, 'pages-2026', '--index');
  t.equal(d.uri_m, `https://archive.example.org/current/memento/20260315100000/${ORG}/terms`, '--base: the URI-M whole (trailing slash dropped)');
  t.equal(d.web_page, `https://archive.example.org/web/20260315100000/${ORG}/terms`);

  // An output that fails: the export stops with its error in one line (a reader gone, EPIPE, is a quiet end).
  const failing = (code: string) =>
    new Writable({
      write: (_chunk, _enc, cb) => cb(Object.assign(new Error(`${code}: it failed, write`), { code })),
    });
  await t.rejects(exportWith(a.config, { output: '-' }, failing('EIO')), { message: 'search-export: EIO: it failed, write' });
  t.equal((await exportWith(a.config, { output: '-' }, failing('EPIPE'))).code, 0, 'EPIPE: exit 0');
});

t.test('search-export: bad options are one line on stderr, exit 2, nothing written', async (t) => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'search-export-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const a = await startArchive(RULES, { dataDir });
  await a.close();
  const there = path.join(dataDir, 'there.ndjson');
  writeFileSync(there, 'keep');
  writeFileSync(path.join(dataDir, 'stopped.ndjson.partial'), 'half');
  const out = path.join(dataDir, 'out.ndjson');
  const bad: [SearchExportOptions, RegExp][] = [
    [{}, /give where to write: -o FILE\.ndjson/],
    [{ output: there }, /there\.ndjson exists; give a new name/],
    [{ output: path.join(dataDir, 'stopped.ndjson') }, /stopped\.ndjson\.partial exists: an export that was stopped before it ended; remove it/],
    [{ output: out, index: 'Pages' }, /--index "Pages": an index name is lower-case/],
    [{ output: out, index: '_x' }, /--index "_x"/],
    [{ output: out, base: 'archive.example.org' }, /--base must be the archive's address/],
    [{ output: out, archive: 'nope' }, /--archive: no local archive "nope" in the config \(2025, current\)/],
    [{ output: out, from: 'yesterday' }, /--from must be a date/],
    [{ output: out, to: '20251332' }, /--to must be a date/],
    [{ output: out, from: '2026', to: '2025' }, /--from must not be later than --to/],
    [{ output: out, 'after-row': '-1' }, /--after-row must be a row id/],
  ];
  for (const [o, why] of bad) {
    const r = await exportWith(a.config, o);
    t.equal(r.code, 2, `${JSON.stringify(o)}: exit 2`);
    t.match(r.stderr, /^memento-archive: search-export: [^\n]+\n$/, 'one line');
    t.match(r.stderr, why);
    t.notOk(existsSync(out) || existsSync(`${out}.partial`), 'nothing written');
  }
  t.equal(readFileSync(there, 'utf8'), 'keep', 'the existing file is untouched');

  // A file that cannot be made: an error the command line says in one line (exit 1), nothing left behind.
  const nowhere = path.join(dataDir, 'no-such-folder', 'out.ndjson');
  await t.rejects(exportWith(a.config, { output: nowhere }), {
    message: `search-export: ENOENT: no such file or directory, open '${nowhere}.partial'; ${nowhere} was not written`,
  });
});
