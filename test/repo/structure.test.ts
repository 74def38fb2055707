/**
 * The shape of the code base, as a reader meets it: rooms of a readable
 * size (no source file over 600 lines, no function over 120), every
 * module opening with a comment that says what it is for, and a repository
 * that stands alone (nothing points at files a clone does not have).
 */
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import ts from 'typescript';
import { repo } from '../helpers/daemons.js';
import { repoFiles } from '../helpers/repo-files.js';

const MAX_FILE_LINES = 600;
const MAX_FUNCTION_LINES = 120;

const code = ['archive', 'proxy', 'shared'].flatMap((d) => repoFiles(d));

t.test('no source file in archive/, proxy/, shared/ is over 600 lines', async (t) => {
  t.ok(code.length > 20, `${code.length} source files`);
  for (const f of code) {
    const lines = readFileSync(path.join(repo, f), 'utf8').split('\n').length;
    t.ok(lines <= MAX_FILE_LINES, `${f}: ${lines} lines`);
  }
});

t.test('no function in archive/, proxy/, shared/ spans more than 120 lines', async (t) => {
  const long: string[] = [];
  let functions = 0;
  for (const f of code) {
    const text = readFileSync(path.join(repo, f), 'utf8');
    const sf = ts.createSourceFile(f, text, ts.ScriptTarget.Latest, true);
    const visit = (n: ts.Node) => {
      if (ts.isFunctionLike(n) && 'body' in n && n.body) {
        functions++;
        const from = sf.getLineAndCharacterOfPosition(n.getStart()).line;
        const to = sf.getLineAndCharacterOfPosition(n.end).line;
        const name = (n as { name?: ts.Node }).name?.getText(sf) ?? '(anonymous)';
        if (to - from + 1 > MAX_FUNCTION_LINES) long.push(`${f}:${from + 1} ${name}: ${to - from + 1} lines`);
      }
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }
  t.ok(functions > 200, `${functions} functions read`);
  t.same(long, [], 'functions over 120 lines');
});

t.test('every module opens with a comment saying what it is for', async (t) => {
  for (const f of code) {
    const text = readFileSync(path.join(repo, f), 'utf8');
    t.match(text, /^\/\*\*\n \* \S/, `${f} starts with a /** comment`);
  }
});

t.test('the repository stands alone: nothing points at the design files beside a checkout', async (t) => {
  const files = [
    ...code,
    ...repoFiles('test'),
    ...repoFiles('bench'),
    ...repoFiles('bin', /\.js$/),
    ...repoFiles('conf', /\.ya?ml$/),
    ...(statExists('docs') ? repoFiles('docs', /\.md$/) : []),
    'README.md',
  ];
  for (const f of files) {
    const text = readFileSync(path.join(repo, f), 'utf8');
    if (f === 'test/repo/structure.test.ts') continue;
    t.notMatch(text, /DESIGN\.md|spec\.md|\.\.\/shared\/(?![\w-]+\.(?:js|ts)['/])|\bDESIGN\b/, `${f} names no file outside the repository`);
  }
});

function statExists(dir: string): boolean {
  try {
    return statSync(path.join(repo, dir)).isDirectory();
  } catch {
    return false;
  }
}
