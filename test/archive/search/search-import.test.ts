/**
 * Search over an imported WARC file of a few hundred pages (written here
 * with the test WARC writer, imported with `import`'s own code while no
 * daemon runs): the daemon extracts their text when it starts, and the
 * answers count exactly the pages that held the words, hidden ones left
 * out.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { validateArchiveConfig } from '../../../archive/config.js';
import { runImport } from '../../../archive/commands/import.js';
import { parseYamlText } from '#shared/config.js';
import { startArchive } from '../../helpers/archive.js';
import { until } from '../../helpers/until.js';
import { exchange, httpResponse, warcFile } from '../../helpers/warc.js';
import { json } from './helpers.js';

const PAGES = 300;
const YAML = `archives:\n  - id: main\naccess:\n  - url: http://site.example/private/*\n    action: exclude\n`;

/** Page `i`: every page says "archive", every third "kestrel", every fifth is under /private/; dated one day apart from 2024-01-01. */
function page(i: number): { uri: string; date: string; html: string } {
  const dir = i % 5 === 0 ? 'private' : 'pub';
  const words = `page number ${i} of the archive${i % 3 === 0 ? ', where a kestrel hovers' : ''}`;
  return {
    uri: `http://site.example/${dir}/p${i}`,
    date: new Date(Date.UTC(2024, 0, 1) + i * 86_400_000).toISOString().replace(/\.\d+Z$/, 'Z'),
    html: `<html><head><title>Page ${i}</title><script>kestrel()</script></head><body><p>${words}</p></body></html>`,
  };
}

t.test('an imported WARC of 300 pages: every page found, hidden ones absent, counts by year exact', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'search-import-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const records = Array.from({ length: PAGES }, (_, i) => {
    const p = page(i);
    return exchange(
      p.uri,
      p.date,
      httpResponse(
        '200 OK',
        [
          ['Content-Type', 'text/html'],
          ['Content-Length', String(Buffer.byteLength(p.html))],
        ],
        p.html,
      ),
    ).records;
  }).flat();
  const file = path.join(dir, 'site.warc.gz');
  writeFileSync(file, warcFile(records, true));
  const dataDir = path.join(dir, 'data');
  const config = validateArchiveConfig(parseYamlText(`listen: 127.0.0.1:0\ndata_dir: ${JSON.stringify(dataDir)}\n${YAML}`, path.join(dir, 'archive.yaml')));
  t.equal(await runImport(config, [file]), 0, 'imported');

  const a = await startArchive(YAML, { dataDir });
  t.teardown(() => a.close(true));
  await until(async () => (await a.app.textIndexer.drained(), (await a.store.index.text!.count()) >= PAGES), 60_000, 'every page has its text');

  const shown = (f: (i: number) => boolean) => Array.from({ length: PAGES }, (_, i) => i).filter((i) => i % 5 !== 0 && f(i));
  const all = await json(a, '/search?q=archive&output=json');
  t.equal(all.body.total, shown(() => true).length, 'every shown page says "archive"');
  const kestrel = await json(a, '/search?q=kestrel&output=json');
  t.equal(kestrel.body.total, shown((i) => i % 3 === 0).length, '"kestrel" in the text of every third (never from the script)');
  const years: Record<string, number> = {};
  for (const i of shown((i) => i % 3 === 0)) {
    const y = page(i).date.slice(0, 4);
    years[y] = (years[y] ?? 0) + 1;
  }
  t.same(kestrel.body.facets.year, years, 'counts by year');
  t.equal((await json(a, '/search?q=kestrel&url=http://site.example/private/*&output=json')).body.total, 0, 'the excluded pages are absent');
  t.equal((await json(a, `/search?q=${encodeURIComponent('"page number 7"')}&output=json`)).body.hits[0].uri_r, 'http://site.example/pub/p7');
  const p2 = await json(a, '/search?q=kestrel&output=json&page=2');
  t.equal(p2.body.hits.length, 20, 'a second page of 20');
});
