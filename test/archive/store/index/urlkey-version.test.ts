/**
 * An index made before the canonical urlkey (docs/url-space.md "One
 * canonical form of a URL"; its SQLite user_version is 0): used as it is,
 * and marked, when every key is canonical; refused with one line saying to
 * run `reindex` when some key is of the old rules, until `reindex` has
 * rebuilt it.
 */
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import sqlite3 from 'sqlite3';
import t from 'tap';
import { IndexDb, StaleIndexError } from '../../../../archive/store/index/index-db.js';
import { URLKEY_VERSION } from '#shared/uri.js';
import { partsOf, seed } from '../../../conformance/helpers.js';
import { request, startArchive, TWO_ARCHIVES } from '../../../helpers/archive.js';
import { runCli, writeConfig } from '../../helpers.js';

/** Runs SQL on the index file with a connection of its own. */
function sql(file: string, text: string): Promise<{ [k: string]: unknown }[]> {
  return new Promise((resolve, reject) => {
    const db = new sqlite3.Database(file, (err) => {
      if (err) return reject(err);
      db.all(text, (e, rows: { [k: string]: unknown }[]) => db.close(() => (e ? reject(e) : resolve(rows))));
    });
  });
}

const ODD = 'http://www.example.org/%65xcluded/page';

t.test('an index of an earlier version: used when its keys are canonical; refused, changing nothing, until reindex when they are not', async (t) => {
  const { dir, config, dataDir } = writeConfig();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dataDir, 'index.sqlite3');
  let a = await startArchive(TWO_ARCHIVES, { dataDir });
  await seed(a, 'http://www.example.org/plain', 'Mon, 01 Jan 2001 00:00:00 GMT');
  await a.close();
  t.same(await sql(file, 'PRAGMA user_version'), [{ user_version: URLKEY_VERSION }], 'a new index is marked with the urlkey version');

  // As an earlier version left it: unmarked, canonical keys only.
  await sql(file, 'PRAGMA user_version = 0');
  await (await IndexDb.open(file)).close();
  t.same(await sql(file, 'PRAGMA user_version'), [{ user_version: URLKEY_VERSION }], 'every key canonical: used, and marked');

  // As an earlier version left it after a capture of another spelling: its key as the old rules made it.
  a = await startArchive(TWO_ARCHIVES, { dataDir });
  await seed(a, ODD, 'Fri, 01 Jun 2001 12:00:00 GMT', partsOf(ODD));
  await a.close();
  await sql(file, `UPDATE memento SET urlkey = 'org,example,www)/%65xcluded/page' WHERE uri_r = '${ODD}'`);
  await sql(file, 'PRAGMA user_version = 0');
  await t.rejects(IndexDb.open(file), StaleIndexError, 'IndexDb refuses it');
  await t.rejects(
    startArchive(TWO_ARCHIVES, { dataDir }),
    { message: /index\.sqlite3: its urlkeys were computed by the rules of an earlier version .*; run memento-archive reindex$/ },
    'the daemon does not start on it',
  );
  t.same(await sql(file, 'PRAGMA user_version'), [{ user_version: 0 }], 'nothing changed');
  const cdxj = await runCli(['cdxj', '--config', config]);
  t.equal(cdxj.code, 1);
  t.match(cdxj.stderr, /^memento-archive: cannot open the index in \S+: \S+index\.sqlite3: its urlkeys were computed .* run memento-archive reindex\n$/);

  const verify = await runCli(['verify', '--config', config]);
  t.equal(verify.code, 1);
  t.match(verify.stderr, /^memento-archive: \S+index\.sqlite3: its urlkeys were computed .* run memento-archive reindex\n$/, 'verify says so in one line');
  writeFileSync(path.join(dir, 'empty.warc'), '');
  const imp = await runCli(['import', '--config', config, path.join(dir, 'empty.warc')]);
  t.not(imp.code, 0, 'import refuses it');
  t.match(imp.stderr, /run memento-archive reindex/, 'and says so');

  const r = await runCli(['reindex', '--config', config]);
  t.equal(r.code, 0, r.stderr);
  t.same(await sql(file, 'PRAGMA user_version'), [{ user_version: URLKEY_VERSION }], 'reindex marks the new index');
  t.same(await sql(file, `SELECT urlkey FROM memento WHERE uri_r = '${ODD}'`), [{ urlkey: 'org,example,www)/excluded/page' }], 'with the canonical key');
  a = await startArchive(TWO_ARCHIVES, { dataDir });
  t.teardown(() => a.close());
  t.equal((await request(`${a.url}/tg/http://www.example.org/excluded/page`)).status, 302, 'the daemon starts, and finds the memento by its canonical URL');
});
