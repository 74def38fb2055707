/**
 * The two test suites: `npm test` (the fast one: lint, types and every
 * test file but the slow ones) and `npm run test:e2e` (the slow one: what
 * starts services, daemon processes or a browser). Every test file runs in
 * exactly one of them; a file that starts PostgreSQL, s3rver, Chromium, a
 * real site's crawl, or a process of this repository's code (a daemon or a
 * command through its bin) is in the slow one
 * (the rule of docs/testing.md, {@link slowBecause}); and the command the
 * README gives is the one CI (`.ci/run`) runs.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { repo } from '../helpers/daemons.js';
import { repoFiles } from '../helpers/repo-files.js';

const run = promisify(execFile);
const TEST_COMMAND = 'npm test && npm run test:e2e';

/** The files `tap list` selects with the arguments of an npm script's `tap` (a shell expands its globs, as npm's does). */
async function listed(tapArgs: string): Promise<string[]> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TAP')));
  const r = await run('/bin/sh', ['-c', `node_modules/.bin/tap list ${tapArgs}`], { cwd: repo, env });
  return r.stdout.split('\n').filter(Boolean).sort();
}

/** The scripts of package.json. */
function scriptsOf(): Record<string, string> {
  return (JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
}

t.test('every test file runs in exactly one suite: npm test (the fast one) or npm run test:e2e', async (t) => {
  const scripts = scriptsOf();
  const e2eArgs = /(?:^|&& )tap (.+)$/.exec(scripts['test:e2e'])![1];
  t.match(scripts.test, /&& tap$/, 'npm test ends with tap over its default file set');
  const fast = await listed('');
  const e2e = await listed(e2eArgs);
  t.same(
    fast.filter((f) => e2e.includes(f)),
    [],
    'no file in both',
  );
  t.same([...fast, ...e2e].sort(), repoFiles('test', /\.test\.ts$/), 'together they are every test file');
  t.ok(
    e2e.some((f) => f.startsWith('test/e2e/replay-')),
    'the Chromium tests are in test:e2e',
  );
  t.notOk(
    fast.some((f) => f.startsWith('test/e2e/')),
    'npm test starts no browser',
  );
});

/**
 * Why a test file belongs in the slow suite (docs/testing.md "Which suite a
 * test belongs to"), from its path and text; `undefined` when nothing in it
 * says so.
 */
export function slowBecause(file: string, text: string): string | undefined {
  if (file.startsWith('test/e2e/')) return 'it is in test/e2e/';
  const helpers: [RegExp, string][] = [
    [/from '(?:\.\.\/)+helpers\/postgres\.js'/, 'it starts PostgreSQL (test/helpers/postgres.ts)'],
    [/from '(?:\.\.\/)+helpers\/s3\.js'/, 'it starts s3rver (test/helpers/s3.ts)'],
    [/from '(?:\.\.\/)+helpers\/browser\.js'/, 'it drives Chromium (test/helpers/browser.ts)'],
    [/from '(?:\.\.\/)+helpers\/real-site\.js'/, 'it crawls a real site (test/helpers/real-site.ts)'],
    [/\bstartDaemon\(/, 'it starts a daemon process through its bin (startDaemon, test/helpers/daemons.ts)'],
    [/\brunCli\(|bin\/memento-archive\.js'|'memento-archive\.js'/, 'it runs memento-archive commands as processes (runCli, test/archive/helpers.ts)'],
    [/'start\.js'|\bspawn\('npm'|\bnginx\b/i, 'it starts daemon processes (npm start, npm, nginx)'],
  ];
  return helpers.find(([re]) => re.test(text))?.[1];
}

t.test("a test file that starts a service, a process of the repository's code or a browser is in the slow suite", async (t) => {
  const e2e = await listed(/(?:^|&& )tap (.+)$/.exec(scriptsOf()['test:e2e'])![1]);
  const misplaced = repoFiles('test', /\.test\.ts$/)
    .filter((f) => f !== 'test/repo/suites.test.ts') // (this file names the patterns it looks for)
    .map((f) => ({ f, why: slowBecause(f, readFileSync(path.join(repo, f), 'utf8')) }))
    .filter(({ f, why }) => why !== undefined && !e2e.includes(f))
    .map(({ f, why }) => `${f}: ${why}; add it to package.json's "test:e2e" script and to tap's "exclude" list`);
  t.same(misplaced, [], 'every such file is in npm run test:e2e');
  t.equal(slowBecause('test/archive/x.test.ts', "import { startPostgres } from '../helpers/postgres.js';"), 'it starts PostgreSQL (test/helpers/postgres.ts)');
  t.equal(slowBecause('test/archive/store/x.test.ts', "import { startS3 } from '../../helpers/s3.js';"), 'it starts s3rver (test/helpers/s3.ts)');
  t.equal(slowBecause('test/web/x.test.ts', "import { request } from '../helpers/archive.js';"), undefined, 'an in-process archive is fast');
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
