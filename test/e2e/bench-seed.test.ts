/**
 * Bench data (bench/seed.ts) ends with the full-text index caught up: a
 * daemon started on seeded data has no memento left to index, so the
 * benches measure its reads, not its indexer catching up on the seed.
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { IndexDb } from '../../archive/store/index/index-db.js';
import { seedOneUri } from '../../bench/seed.js';

t.test('seedOneUri: every seeded HTML memento has a text row; none is left for the indexer', async (t) => {
  const seeded = await seedOneUri(`test-seed-${process.pid}`, 250);
  t.teardown(() => rmSync(seeded.dir, { recursive: true, force: true }));
  const index = await IndexDb.open(path.join(seeded.dir, 'data', 'index.sqlite3'));
  t.teardown(() => index.close());
  t.same(await index.text.missing(0, 1000), [], 'nothing for the indexer to read');
  t.equal(await index.text.count(), 250, 'one text per memento');
});
