/**
 * The full-text index under upkeep: `purge` removes a memento's text with
 * its row (no hit after), and `reindex` (a new index) has the texts
 * extracted again when the daemon starts.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { startArchive, TWO_ARCHIVES } from '../../helpers/archive.js';
import { until } from '../../helpers/until.js';
import { runCli, writeConfig } from '../helpers.js';
import { json, load } from './helpers.js';

t.test('purge removes the text; reindex rebuilds it', async (t) => {
  const { dir, config, dataDir } = writeConfig();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  let a = await startArchive(TWO_ARCHIVES, { dataDir });
  await load(a);
  t.equal((await json(a, '/search?q=founder&output=json')).body.total, 1);
  await a.close(true);
  const indexBytes = () =>
    ['index.sqlite3', 'index.sqlite3-wal']
      .filter((f) => existsSync(path.join(dataDir, f)))
      .map((f) => readFileSync(path.join(dataDir, f)).toString('utf8'))
      .join('');
  t.ok(indexBytes().includes('says the founder'), 'before: the text is in the index file');
  const p = await runCli(['purge', '--config', config, '--url', 'http://www.example.org/about']);
  t.equal(p.code, 0, p.stderr);
  t.notOk(indexBytes().includes('says the founder'), 'after: no trace of the text in the index file or its WAL');
  a = await startArchive(TWO_ARCHIVES, { dataDir });
  await a.app.textIndexer.drained();
  t.equal((await json(a, '/search?q=founder&output=json')).body.total, 0, 'purged: no hit');
  t.equal((await json(a, '/search?q=never&output=json')).body.total, 3, 'the rest is found (no access rules here)');
  await a.close(true);
  const r = await runCli(['reindex', '--config', config]);
  t.equal(r.code, 0, r.stderr);
  a = await startArchive(TWO_ARCHIVES, { dataDir });
  t.teardown(() => a.close(true));
  await until(async () => (await a.app.textIndexer.drained(), (await a.store.index.text!.count()) >= 6), 20_000, 'the texts are indexed again');
  t.equal((await json(a, '/search?q=never&output=json')).body.total, 3, 'after reindex: the same answer');
  t.equal((await json(a, '/search?q=founder&output=json')).body.total, 0);
});
