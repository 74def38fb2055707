/**
 * The index contract (index-contract.ts) on the SQLite index (IndexDb, a
 * temp file per case). The same cases on PostgreSQL:
 * index-contract-postgres.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { IndexDb } from '../../../../archive/store/index/index-db.js';
import { contract } from './index-contract.js';

t.test('SQLite (IndexDb)', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'index-contract-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  let n = 0;
  contract(t, () => IndexDb.open(path.join(dir, `index-${n++}.sqlite3`), { cacheBytes: 1 << 20 }));
});
