/**
 * The spool's commit of a capture still all in memory, written by the
 * spool's writer thread (proxy/spool/commit-writer.ts, issue 36): once a
 * commit says `spooled`, the file is in its queue's folder with the same
 * bytes and mode as a tee's own commit writes, nothing is left in `tmp/`;
 * commits that come in together go in sequence order, also when a capture
 * committed from a tmp file overtakes them; a disk error drops the capture
 * (`spool-error`), leaves no tmp file and frees its bytes; the writer
 * thread's own failure (the rename) leaves no tmp file either.
 */
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { metaLine, type SpoolMeta, spoolFileName } from '../../proxy/spool/file.js';
import { CommitWriter } from '../../proxy/spool/commit-writer.js';
import { Spool } from '../../proxy/spool/spool.js';
import { tempDir } from './helpers.js';

const meta = (n: number): SpoolMeta => ({
  host: '127.0.0.1',
  port: 9,
  path: `/http://site.example/p/${n}`,
  uriR: `http://site.example/p/${n}`,
  vhost: 'site.example',
  capturedAt: '2026-11-29T05:00:00.000Z',
});
const record = (n: number, size = 300) => Buffer.from(`record ${n} `.padEnd(size, 'r'));

t.test('captures committed whole from memory: in the queue, synced, in order, nothing left in tmp/', async (t) => {
  const dir = await tempDir(t);
  const spool = await Spool.open(path.join(dir, 'spool'), { paused: true, memoryBytes: 4096 });
  t.teardown(() => spool.close());
  const queue = spool.queue('127.0.0.1', 9);
  const tees = Array.from({ length: 20 }, (_, n) => {
    const tee = spool.tee(meta(n));
    tee.write(record(n));
    return tee;
  });
  const results = await Promise.all(tees.map((tee) => tee.commit(queue)));
  t.same(
    results.map((r) => r.result),
    Array(20).fill('spooled'),
    'all spooled',
  );
  const seqs = results.map((r) => (r.result === 'spooled' ? r.seq : -1));
  t.same(
    seqs,
    [...seqs].sort((a, b) => a - b),
    'sequence numbers in commit order',
  );
  for (const [n, r] of results.entries()) {
    if (r.result !== 'spooled') continue;
    const file = path.join(queue.dir, spoolFileName(r.seq));
    t.same(await readFile(file), Buffer.concat([metaLine(meta(n)), record(n)]), `capture ${n}: the meta line and the record`);
    t.equal((await stat(file)).mode & 0o777, 0o600, `capture ${n}: mode 0600`);
  }
  t.equal((await stat(queue.dir)).mode & 0o777, 0o700, "the queue's folder is 0700");
  t.same(await readdir(spool.tmpDir), [], 'tmp/ is empty');
  t.equal(spool.depth, 20, '20 queued');
  t.equal(
    spool.bytes,
    tees.reduce((a, _, n) => a + metaLine(meta(n)).length + 300, 0),
    'the bytes of the 20 files are counted',
  );
});

t.test('a capture committed from a tmp file that overtakes whole ones is queued in sequence order', async (t) => {
  const dir = await tempDir(t);
  const spool = await Spool.open(path.join(dir, 'spool'), { paused: true, memoryBytes: 1024 });
  t.teardown(() => spool.close());
  const queue = spool.queue('127.0.0.1', 9);
  const commits = [];
  for (let n = 0; n < 6; n++) {
    // Every other one passes memoryBytes: it is written to a tmp file as it comes, and committed from there.
    const tee = spool.tee(meta(n));
    tee.write(record(n, n % 2 ? 8000 : 200));
    commits.push(tee.commit(queue));
  }
  const results = await Promise.all(commits);
  t.ok(
    results.every((r) => r.result === 'spooled'),
    'all spooled',
  );
  const files = (queue as unknown as { files: { seq: number; file: string }[] }).files;
  t.same(
    files.map((f) => f.seq),
    [...files.map((f) => f.seq)].sort((a, b) => a - b),
    'the queue is in sequence order',
  );
  t.same(
    files.map((f) => path.basename(f.file)),
    (await readdir(queue.dir)).sort(),
    'the queue lists the files in its folder',
  );

  // Directly: a file committed late with a lower sequence number goes before the ones queued after it.
  const q2 = spool.queue('127.0.0.1', 11);
  q2.add({ seq: 105, file: '/nonexistent/105', size: 1 });
  q2.add({ seq: 107, file: '/nonexistent/107', size: 1 });
  q2.add({ seq: 106, file: '/nonexistent/106', size: 1 });
  t.same(
    (q2 as unknown as { files: { seq: number }[] }).files.map((f) => f.seq),
    [105, 106, 107],
    'a late file takes its place in sequence order',
  );
});

t.test('a disk error drops a capture committed whole: spool-error, no tmp file left, its bytes freed', async (t) => {
  const dir = await tempDir(t);
  const spool = await Spool.open(path.join(dir, 'spool'), { paused: true, memoryBytes: 4096 });
  t.teardown(() => spool.close());
  // A file where the queue's folder should be: making the folder fails.
  await writeFile(path.join(spool.dir, '127.0.0.1_9'), 'not a folder');
  const queue = spool.queue('127.0.0.1', 9);
  const tee = spool.tee(meta(1));
  tee.write(record(1));
  const r = await tee.commit(queue);
  t.match(r, { result: 'dropped', reason: /^spool-error: / });
  t.same(await readdir(spool.tmpDir), [], 'tmp/ is empty');
  t.equal(spool.bytes, 0, 'no bytes held');
  t.equal(spool.depth, 0, 'nothing queued');

  // The spool still works for another archive.
  const other = spool.queue('127.0.0.1', 10);
  const tee2 = spool.tee({ ...meta(2), port: 10 });
  tee2.write(record(2));
  t.match(await tee2.commit(other), { result: 'spooled' });
  t.equal(spool.depth, 1);
});

t.test("the writer thread: a rename that fails rejects with the file system's message and leaves no tmp file", async (t) => {
  const dir = await tempDir(t);
  await mkdir(path.join(dir, 'tmp'));
  const writer = new CommitWriter();
  t.teardown(() => writer.close());
  const good = writer.write({ tmp: path.join(dir, 'tmp', 'a'), file: path.join(dir, 'a'), chunks: [record(1), record(2)] });
  const bad = writer.write({ tmp: path.join(dir, 'tmp', 'b'), file: path.join(dir, 'missing', 'b'), chunks: [record(3)] });
  await good;
  await t.rejects(bad, /ENOENT/);
  t.same(await readFile(path.join(dir, 'a')), Buffer.concat([record(1), record(2)]), 'the good one in place, whole');
  t.equal((await stat(path.join(dir, 'a'))).mode & 0o777, 0o600, 'mode 0600');
  t.same(await readdir(path.join(dir, 'tmp')), [], 'no tmp file left');
});
