/**
 * The full-text index under upkeep: `purge` removes a memento's text with
 * its row (no hit after), and `reindex` (a new index) has the texts
 * extracted again when the daemon starts.
 */
import { rmSync } from 'node:fs';
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
  const p = await runCli(['purge', '--config', config, '--url', 'http://www.example.org/about']);
  t.equal(p.code, 0, p.stderr);
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
