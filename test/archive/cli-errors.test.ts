/**
 * Every `memento-archive` command ends an error in one line on stderr,
 * never a Node stack trace (archive/cli.ts, shared/cli-error.ts): the
 * commands that read an archive, run on a config whose `data_dir` is
 * missing or is a file (an error the command did not expect, caught at the
 * top), exit 1 with one line naming the folder; a bad option of
 * `search-export` is one line and exit 2.
 */
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { errorLine } from '#shared/cli-error.js';
import { runCli, writeConfig } from './helpers.js';

/** Each command that reads an archive, with the arguments it needs to get that far. */
const COMMANDS: [string, string[]][] = [
  ['verify', []],
  ['reindex', []],
  ['purge', ['--url', 'http://a.example/']],
  ['cdxj', []],
  ['wacz', ['-o', 'x.wacz']],
  ['migrate', ['--to', 'postgres://archive@127.0.0.1:1/archive']],
  ['search-export', ['-o', 'x.ndjson']],
];

/** Runs every command on `config` at once; their results in {@link COMMANDS} order. */
function runAll(config: string, dir: string) {
  return Promise.all(COMMANDS.map(([c, extra]) => runCli([c, '--config', config, ...extra.map((a) => (a.startsWith('x.') ? path.join(dir, a) : a))])));
}

t.test('a missing data_dir: one line per command, exit 1, nothing made', async (t) => {
  const { dir, config, dataDir } = writeConfig();
  const results = await runAll(config, dir);
  for (const [i, [c]] of COMMANDS.entries()) {
    const r = results[i];
    t.equal(r.code, 1, `${c}: exit 1`);
    t.match(r.stderr, /^memento-archive: [^\n]+\n$/, `${c}: one line`);
    t.ok(r.stderr.includes(dataDir), `${c}: naming the folder (${r.stderr.trim()})`);
    t.equal(r.stdout, '', `${c}: nothing on stdout`);
  }
});

t.test('a data_dir that is a file: an error no command expects is still one line naming the command, exit 1', async (t) => {
  const { dir, config, dataDir } = writeConfig();
  writeFileSync(dataDir, 'not a folder');
  const results = await runAll(config, dir);
  for (const [i, [c]] of COMMANDS.entries()) {
    const r = results[i];
    t.equal(r.code, 1, `${c}: exit 1`);
    t.match(r.stderr, /^memento-archive: [^\n]+\n$/, `${c}: one line`);
    t.ok(r.stderr.includes(dataDir), `${c}: naming the folder (${r.stderr.trim()})`);
    t.notMatch(r.stderr, /\n\s+at /, `${c}: no stack trace`);
  }
});

t.test('search-export: a bad option is one line and exit 2, as the other commands', async (t) => {
  const { dir, config } = writeConfig();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const r = await runCli(['search-export', '--config', config, '-o', path.join(dir, 'x.ndjson'), '--index', 'Bad Name']);
  t.equal(r.code, 2);
  t.equal(
    r.stderr,
    "memento-archive: search-export: --index \"Bad Name\": an index name is lower-case letters, digits, '.', '_' and '-' (not first), at most 255 bytes\n",
  );
  t.equal(r.stdout, '');
});

t.test('errorLine: the message on one line', async (t) => {
  t.equal(errorLine(new Error('a\n  b\nc')), 'a b c');
  t.equal(errorLine('text'), 'text');
  const e = new Error('');
  e.name = 'AbortError';
  t.equal(errorLine(e), 'AbortError');
});
