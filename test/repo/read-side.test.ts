/**
 * One read side (issue 34): the access rules are applied in one module,
 * archive/read/ (the index as the public sees it, `VisibleIndex`), and the
 * routes reach the index only through it.
 *
 * - No file outside archive/read/ imports what reads or decides with the
 *   rules (`AccessRules`, `UrlPolicy`, `Verdict`, …): a route, page or
 *   command that wants "what is shown" asks the visible index. Outside it,
 *   only the rules' patterns may be used (the config check and `purge`
 *   select URLs with them) and two helpers that decide nothing.
 * - The route folders (archive/http/, archive/web/) import nothing of the
 *   store's index (archive/store/index/) nor the read cache: the shapes of
 *   rows come from archive/read/rows.ts.
 * - Nothing reaches the rules through the fastify instance (`app.access`).
 * - The reader (archive/read/reader.ts) takes no fastify instance, and no
 *   answer is written past fastify's reply (`reply.hijack()`): every
 *   header takes one path.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import ts from 'typescript';
import { repo } from '../helpers/daemons.js';
import { repoFiles } from '../helpers/repo-files.js';

/** What of archive/read/access-rules.ts code outside archive/read/ may import: URL patterns and helpers that decide nothing. */
const PATTERN_NAMES = new Set(['AccessRule', 'urlPattern', 'UrlPattern', 'matchesPattern', 'foldedKeysNamed', 'afterPrefix', 'nowSeconds']);

/** Each import and export-from of a source: the module it names, resolved to a repository path when relative, and the names it takes. */
function importsOf(file: string, text: string): { target: string; names: string[] }[] {
  const out: { target: string; names: string[] }[] = [];
  const src = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  for (const s of src.statements) {
    const spec =
      (ts.isImportDeclaration(s) || ts.isExportDeclaration(s)) && s.moduleSpecifier && ts.isStringLiteral(s.moduleSpecifier)
        ? s.moduleSpecifier.text
        : undefined;
    if (!spec) continue;
    const target = spec.startsWith('.') ? path.posix.normalize(path.posix.join(path.posix.dirname(file), spec)).replace(/\.js$/, '.ts') : spec;
    const names: string[] = [];
    if (ts.isImportDeclaration(s)) {
      const c = s.importClause;
      if (c?.name) names.push('default');
      const b = c?.namedBindings;
      if (b && ts.isNamedImports(b)) for (const e of b.elements) names.push((e.propertyName ?? e.name).text);
      else if (b) names.push('*');
    } else if (ts.isExportDeclaration(s) && s.exportClause && ts.isNamedExports(s.exportClause)) {
      for (const e of s.exportClause.elements) names.push((e.propertyName ?? e.name).text);
    } else names.push('*');
    out.push({ target, names });
  }
  return out;
}

const files = ['archive', 'proxy', 'shared'].flatMap((d) => repoFiles(d));
const sources = new Map(files.map((f) => [f, readFileSync(path.join(repo, f), 'utf8')]));

t.test('the access rules are read and decided only in archive/read/', async (t) => {
  t.ok(files.length > 100, `${files.length} files read`);
  const found: string[] = [];
  for (const [f, text] of sources) {
    if (f.startsWith('archive/read/')) continue;
    for (const i of importsOf(f, text)) {
      if (i.target !== 'archive/read/access-rules.ts') continue;
      for (const n of i.names) if (!PATTERN_NAMES.has(n)) found.push(`${f} imports ${n}`);
    }
    if (/\bapp\.access\b/.test(text)) found.push(`${f} reaches the rules through app.access`);
  }
  t.same(found, [], 'ask the visible index (archive/read/visible-index.ts) for what the rules show');
});

t.test('the route folders do not import the store’s index or the read cache', async (t) => {
  const found: string[] = [];
  for (const [f, text] of sources) {
    if (!f.startsWith('archive/http/') && !f.startsWith('archive/web/')) continue;
    for (const i of importsOf(f, text)) {
      if (i.target.startsWith('archive/store/index/') || i.target === 'archive/store/read-cache.ts') found.push(`${f} imports ${i.target}`);
    }
  }
  t.same(found, [], 'routes read through archive/read/ (rows.ts has the shapes of rows)');
});

t.test('the reader knows nothing of fastify, and no route writes past fastify’s reply', async (t) => {
  const found: string[] = [];
  for (const [f, text] of sources) {
    if (f.startsWith('archive/read/')) for (const i of importsOf(f, text)) if (i.target === 'fastify') found.push(`${f} imports fastify`);
    if (f.startsWith('archive/') && /\.hijack\(/.test(text)) found.push(`${f} calls reply.hijack()`);
  }
  t.same(found, [], 'the read module returns plain answers (archive/read/answer.ts); archive/http/answer.ts sends them through the reply');
});

t.test('the checks see what they look for', async (t) => {
  const page = [
    "import { type AccessRules, urlPattern } from '../read/access-rules.js';",
    "import type { MementoRow } from '../store/index/memento-row.js';",
    "export { x } from './y.js';",
  ].join('\n');
  t.same(importsOf('archive/http/example.ts', page), [
    { target: 'archive/read/access-rules.ts', names: ['AccessRules', 'urlPattern'] },
    { target: 'archive/store/index/memento-row.ts', names: ['MementoRow'] },
    { target: 'archive/http/y.ts', names: ['x'] },
  ]);
});
