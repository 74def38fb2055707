/**
 * The proxy's log writer (proxy/log.ts): with `maxWrite`, as the workers
 * use it, every line arrives whole and in order, and a batch is cut only
 * between lines, never longer than `maxWrite` bytes unless one line alone
 * is (several processes share one stdout: a pipe writes up to 4096 bytes
 * at once).
 */
import { openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { lineCut, pinoLogger } from '../../proxy/log.js';
import { tempDir } from './helpers.js';

t.test('lineCut: whole lines, at most maxBytes of UTF-8, the first line alone when it is longer', async (t) => {
  const lines = 'aaaa\nbbbb\ncccc\n';
  t.equal(lineCut(lines, 12), 10, 'two lines of 5 bytes fit in 12');
  t.equal(lineCut(lines, 5), 5, 'exactly one line');
  t.equal(lineCut(lines, 3), 5, 'a line longer than the bound goes alone');
  t.equal(lineCut('éé\néé\n', 7), 3, 'bytes, not characters: "éé\\n" is 3 characters and 5 bytes, two such lines 10 bytes');
});

t.test('a logger with maxWrite writes every line whole and in order', async (t) => {
  const dir = await tempDir(t, 'log-');
  const file = path.join(dir, 'out.log');
  const fd = openSync(file, 'w');
  const log = pinoLogger(fd, { maxWrite: 512 });
  for (let i = 0; i < 200; i++) log({ msg: 'request', n: i, pad: 'é'.repeat(i % 40) });
  await log.end!();
  const got = readFileSync(file, 'utf8')
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l) as { n: number; msg: string });
  t.same(
    got.map((e) => e.n),
    Array.from({ length: 200 }, (_, i) => i),
  );
});

t.test('after end(), an entry is dropped, not thrown, and the file holds what came before', async (t) => {
  const dir = await tempDir(t, 'log-');
  const file = path.join(dir, 'out.log');
  const log = pinoLogger(openSync(file, 'w'));
  log({ msg: 'before' });
  await log.end!();
  t.doesNotThrow(() => log({ msg: 'after' }));
  t.same(
    readFileSync(file, 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => (JSON.parse(l) as { msg: string }).msg),
    ['before'],
  );
});
