/**
 * No SQL outside the index adapters (issue 34, "one read side"): the
 * statements over the index and the evidence log are written in
 * archive/store/index/ (both adapters and what they share) and nowhere
 * else but the one file listed below with its reason; everything else (the routes, the pages for people, the access
 * rules, the proxy, shared/) asks the index's named queries
 * (archive/store/index/memento-index.ts). SQL is looked for in the string and
 * template literals of every .ts file under archive/, proxy/ and shared/
 * (comments may name a statement), as upper-case keywords.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import ts from 'typescript';
import { repo } from '../helpers/daemons.js';
import { repoFiles } from '../helpers/repo-files.js';

/** A statement in a literal: upper-case keywords only (prose says "select"). */
const SQL = /\bSELECT\b|\bINSERT INTO\b|\bUPDATE\b .* SET\b|\bDELETE FROM\b|\bCREATE (TABLE|INDEX)\b/;

/** Where SQL is written. */
const HOME = 'archive/store/index/';

/**
 * Files with SQL outside {@link HOME}, each with its reason (each holds some: a file that no longer does leaves the
 * list): the data folder's lock is a SQLite file of its own, not the index.
 */
const OUTSIDE: Record<string, string> = {
  'archive/store/lock.ts': 'the data folder lock (a SQLite file of its own, BEGIN EXCLUSIVE), not the index',
};

/** The string and template literals of a TypeScript source that hold SQL (their first 80 characters). */
function sqlLiterals(file: string, text: string): string[] {
  const found: string[] = [];
  const visit = (n: ts.Node): void => {
    const literal = ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n) || ts.isTemplateHead(n) || ts.isTemplateMiddle(n) || ts.isTemplateTail(n);
    if (literal && SQL.test(n.text)) found.push(n.text.trim().slice(0, 80));
    ts.forEachChild(n, visit);
  };
  visit(ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true));
  return found;
}

t.test('no SQL in a string or template literal outside archive/store/index/ (the index adapters)', async (t) => {
  const files = ['archive', 'proxy', 'shared'].flatMap((d) => repoFiles(d));
  t.ok(files.length > 100, `${files.length} files read`);
  const withSql = files.filter((f) => sqlLiterals(f, readFileSync(path.join(repo, f), 'utf8')).length > 0);
  const outside = withSql.filter((f) => !f.startsWith(HOME) && !(f in OUTSIDE));
  t.same(outside, [], 'SQL is written in the index adapters only: ask a named query of the index (archive/store/index/memento-index.ts) instead');
  for (const f of Object.keys(OUTSIDE)) t.ok(withSql.includes(f), `${f} holds SQL (else it leaves the list)`);
  t.ok(
    withSql.some((f) => f.startsWith(HOME)),
    'the named queries are found',
  );
});

t.test('the scan finds a statement in any literal, not in comments or prose', async (t) => {
  const page = [
    '// SELECT in a comment is prose',
    "const a = 'select the mementos';",
    'const b = `SELECT uri_r FROM memento WHERE ${cond}`;',
    'const c = "DELETE FROM memento";',
    'const d = `x ${y} UPDATE memento SET status = 1`;',
    "const e = 'CREATE INDEX i ON memento (urlkey)';",
    "const f = 'INSERT INTO memento VALUES (1)';",
  ].join('\n');
  t.same(sqlLiterals('archive/web/example.ts', page), [
    'SELECT uri_r FROM memento WHERE',
    'DELETE FROM memento',
    'UPDATE memento SET status = 1',
    'CREATE INDEX i ON memento (urlkey)',
    'INSERT INTO memento VALUES (1)',
  ]);
});
