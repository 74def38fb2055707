/**
 * The advice `migrate` prints when it is done (archive/commands/migrate.ts
 * `nextAdvice`): the exact config block to paste, read back as YAML by the
 * archive's own config loader, so that the daemon it makes talks to the
 * database and the bucket the copy went to. The whole migration, with the
 * pasted block starting a daemon, is test/archive/migrate.test.ts.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { nextAdvice } from '../../archive/commands/migrate.js';
import { loadArchiveConfig } from '../../archive/config.js';

const KEY = '/srv/archive/log-signing-key.pem';
const ARCHIVES = 'archives:\n  - id: current\n';

/** The archive config made of `listen`, `data_dir`, the pasted block and one archive. */
function configOf(t: Test, advice: string) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'migrate-advice-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const block = advice.split('\n').slice(1).join('\n');
  const file = path.join(dir, 'archive.yaml');
  writeFileSync(file, `listen: 127.0.0.1:8090\ndata_dir: .\n${block}${ARCHIVES}`);
  return loadArchiveConfig(file);
}

t.test('--s3-endpoint given: the block has storage.s3.endpoint and force_path_style: true', async (t) => {
  const advice = nextAdvice({ to: 'postgres://archive@db:5432/archive', warcs: 's3://bucket/pre/', 's3-endpoint': 'http://10.0.0.9:9000/' }, KEY);
  t.match(advice, /^next: paste this into the config \(archive\.yaml\) of every daemon of the shared setup, start one, run memento-archive verify:\n/);
  const c = configOf(t, advice);
  t.equal(c.indexPostgres, 'postgres://archive@db:5432/archive');
  t.match(c.warcStore, { bucket: 'bucket', prefix: 'pre/', endpoint: 'http://10.0.0.9:9000', region: 'us-east-1', forcePathStyle: true });
  t.equal(c.signingKeyFile, KEY);
});

t.test('no --s3-endpoint: AWS S3 (no endpoint, virtual-host style), the region given', async (t) => {
  const c = configOf(t, nextAdvice({ to: 'postgres://archive@db/archive', warcs: 's3://bucket/', 's3-region': 'eu-west-1' }, KEY));
  t.equal(c.warcStore?.endpoint, undefined);
  t.match(c.warcStore, { bucket: 'bucket', prefix: '', region: 'eu-west-1', forcePathStyle: false });
});

t.test('the index alone: no storage.warcs; a password is left out and the comment says where it goes', async (t) => {
  const advice = nextAdvice({ to: 'postgres://archive:s3cret@db/archive' }, KEY);
  t.notMatch(advice, 's3cret');
  t.match(advice, /index: postgres:\/\/archive@db\/archive +# password left out: give it as PGPASSWORD or in ~\/\.pgpass/);
  const c = configOf(t, advice);
  t.equal(c.warcStore, undefined);
  t.equal(c.indexPostgres, 'postgres://archive@db/archive');
});
