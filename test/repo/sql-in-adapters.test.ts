/**
 * No SQL outside the index adapters (issue 34, "one read side"): the
 * statements over the index and the evidence log are written in
 * archive/store/index/ and in the files that will move there, listed below
 * by name; everything else (the routes, the pages for people, the access
 * rules, the proxy, shared/) asks the index's named queries
 * (archive/store/index/memento-index.ts). SQL is looked for in the string and
 * template literals of every .ts file under archive/, proxy/ and shared/
 * (comments may name a statement), as upper-case keywords.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import ts from 'typescript';
import { repo } from '../helpers/daemons.js';

/** A statement in a literal: upper-case keywords only (prose says "select"). */
const SQL = /\bSELECT\b|\bINSERT INTO\b|\bUPDATE\b .* SET\b|\bDELETE FROM\b|\bCREATE (TABLE|INDEX)\b/;

/** Where SQL is written. */
const HOME = 'archive/store/index/';

/** Files with SQL that are to move into {@link HOME} (each of them holds some: a file that no longer does leaves the list). */
const MOVING = [
  'archive/store/index/log-pg.ts',
  'archive/store/index/log-sqlite.ts',
  'archive/store/index/cdx-walk.ts',
  'archive/store/upkeep/copy-index.ts',
  'archive/store/index/index-db-tables.ts',
  'archive/store/index/index-db.ts',
  'archive/store/index/index-pg.ts',
  'archive/store/index/index-sql.ts',
  'archive/store/lock.ts',
  'archive/store/index/urlkey-version.ts',
];

/** The `.ts` files under `dir` (relative to the repository, `/`-separated). */
function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(path.join(repo, dir), { withFileTypes: true })) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) out.push(...tsFiles(rel));
    else if (e.name.endsWith('.ts')) out.push(rel);
  }
  return out;
}

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

t.test('no SQL in a string or template literal outside archive/store/index/ and the files that will move there', async (t) => {
  const files = ['archive', 'proxy', 'shared'].flatMap(tsFiles);
  t.ok(files.length > 100, `${files.length} files read`);
  const withSql = files.filter((f) => sqlLiterals(f, readFileSync(path.join(repo, f), 'utf8')).length > 0);
  const outside = withSql.filter((f) => !f.startsWith(HOME) && !MOVING.includes(f));
  t.same(outside, [], 'SQL is written in the index adapters only: ask a named query of the index (archive/store/index/memento-index.ts) instead');
  for (const f of MOVING) t.ok(withSql.includes(f), `${f} holds SQL (else it leaves the list)`);
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
