/**
 * The index contract (index-contract.ts) on the PostgreSQL index
 * (PgIndex, a database per case of a throwaway server,
 * test/helpers/postgres.ts), and what only a shared index does: a row
 * another writer committed first is never replaced. Without the
 * PostgreSQL server binaries this test fails, saying what to install.
 */
import t from 'tap';
import { PgIndex } from '../../../../archive/store/index/index-pg.js';
import { startPostgres } from '../../../helpers/postgres.js';
import { contract, ROWS } from './index-contract.js';

t.test('PostgreSQL (PgIndex)', async (t) => {
  // A server that cannot start rejects: the test fails with its message.
  const server = await startPostgres();
  t.teardown(() => server.stop());
  let n = 0;
  contract(t, async () => PgIndex.open(await server.database(`contract_${n++}`), { cacheBytes: 1 << 20 }));

  t.test('insertNew leaves out, and returns, the rows whose key another writer committed first; those rows stay as they were', async (t) => {
    const index = await PgIndex.open(await server.database(`contract_${n++}`));
    t.teardown(() => index.close());
    await index.insertMany(ROWS.slice(0, 2));
    const theirs = { ...ROWS[1], digest: 'sha256:other', warc_file: 'other.warc.gz' };
    const lost = await index.insertNew([ROWS[2], theirs, ROWS[3]]);
    t.same(lost, [theirs], 'the row of a key in the index, the same object');
    t.equal(await index.count(), 4);
    t.match(await index.rowAt(ROWS[1].archive_id, ROWS[1].urlkey, ROWS[1].datetime), { digest: ROWS[1].digest, warc_file: ROWS[1].warc_file }, 'not replaced');
  });
});
