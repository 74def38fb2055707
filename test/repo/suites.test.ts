/**
 * The two test suites: `npm test` (the fast one: lint, types and every
 * test file but the slow ones) and `npm run test:e2e` (Chromium, the real
 * site crawled with wget, the crash rounds). Every test file runs in
 * exactly one of them, and the command the README gives is the one CI
 * (`.ci/run`) runs.
 */
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { repo } from '../helpers/daemons.js';

const run = promisify(execFile);
const TEST_COMMAND = 'npm test && npm run test:e2e';

/** Every `*.test.ts` under test/, relative to the repository, sorted. */
function testFiles(dir = 'test'): string[] {
  const out: string[] = [];
  for (const e of readdirSync(path.join(repo, dir), { withFileTypes: true })) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) out.push(...testFiles(rel));
    else if (e.name.endsWith('.test.ts')) out.push(rel);
  }
  return out.sort();
}

/** The files `tap list` selects with the arguments of an npm script's `tap` (a shell expands its globs, as npm's does). */
async function listed(tapArgs: string): Promise<string[]> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TAP')));
  const r = await run('/bin/sh', ['-c', `node_modules/.bin/tap list ${tapArgs}`], { cwd: repo, env });
  return r.stdout.split('\n').filter(Boolean).sort();
}

t.test('every test file runs in exactly one suite: npm test (the fast one) or npm run test:e2e', async (t) => {
  const scripts = (JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  const e2eArgs = /(?:^|&& )tap (.+)$/.exec(scripts['test:e2e'])![1];
  t.match(scripts.test, /&& tap$/, 'npm test ends with tap over its default file set');
  const fast = await listed('');
  const e2e = await listed(e2eArgs);
  t.same(
    fast.filter((f) => e2e.includes(f)),
    [],
    'no file in both',
  );
  t.same([...fast, ...e2e].sort(), testFiles(), 'together they are every test file');
  t.ok(
    e2e.some((f) => f.startsWith('test/e2e/replay-')),
    'the Chromium tests are in test:e2e',
  );
  t.notOk(
    fast.some((f) => f.startsWith('test/e2e/')),
    'npm test starts no browser',
  );
});

t.test("the README's test command is the one .ci/run runs", async (t) => {
  const readme = readFileSync(path.join(repo, 'README.md'), 'utf8');
  const ci = readFileSync(path.join(repo, '.ci', 'run'), 'utf8');
  const firstBlock = /```sh\n([\s\S]*?)```/.exec(readme)![1];
  t.ok(
    firstBlock.split('\n').some((l) => l.startsWith(`${TEST_COMMAND} `) || l === TEST_COMMAND),
    `the README's first commands include: ${TEST_COMMAND}`,
  );
  t.match(ci, `\ntest_command='${TEST_COMMAND}'\n`, '.ci/run runs the same command');
});
