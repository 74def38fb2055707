/**
 * The archive's log (shared/log.ts): `end()` writes every line out, in
 * order, before the daemon exits; a line logged after it is dropped, not
 * thrown; and `endLog` does not wait for ever on a pipe nobody reads.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import t, { type Test } from 'tap';
import { endLog, jsonLinesLogger } from '#shared/log.js';

function tempDir(t: Test): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'log-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

t.test('jsonLinesLogger: end() writes every line in order; a line after it is dropped', async (t) => {
  const file = path.join(tempDir(t), 'out.log');
  const { logger, end } = jsonLinesLogger(openSync(file, 'w'));
  for (let i = 0; i < 500; i++) logger.info({ n: i, pad: 'x'.repeat(i % 300) }, 'request');
  await end();
  t.doesNotThrow(() => logger.info({ n: 500 }, 'after the end'));
  const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
  t.same(
    lines.map((l) => (JSON.parse(l) as { n: number }).n),
    Array.from({ length: 500 }, (_, i) => i),
  );
  t.match(JSON.parse(lines[0]), { level: 'info', msg: 'request', time: /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/ });
});

t.test('endLog gives up after maxMs when nobody reads the pipe, so a stopping daemon still exits', async (t) => {
  const fifo = path.join(tempDir(t), 'pipe');
  execFileSync('mkfifo', [fifo]);
  const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
  const dest = pino.destination({ dest: openSync(fifo, 'w'), sync: false, minLength: 0 });
  for (let i = 0; i < 4000; i++) dest.write(`${'x'.repeat(99)}\n`); // 400 KB, more than a pipe holds
  const started = Date.now();
  await endLog(dest, 50); // without the bound this never resolves, and tap's timeout fails the test
  t.ok(Date.now() - started >= 45, 'it waited for the bound: the lines could not all be written');
  closeSync(reader); // the blocked write now fails (EPIPE)
});
