/**
 * No import circles among the project's own modules. A circle (a imports
 * b, b imports a, directly or through others) means a boundary drawn in
 * the wrong place: neither module can be read, tested or changed without
 * the other, and module initialisation order starts to matter. Every `.ts`
 * file under archive/, proxy/, shared/, bench/ and test/ is read with the
 * TypeScript parser; its static imports, `export … from` and `import()`
 * with a literal name, relative or `#shared/*` (package.json `imports`),
 * are its edges. Type-only imports count too: a circle of types is still
 * two modules that each need the other to be understood.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import ts from 'typescript';
import { repo } from '../helpers/daemons.js';

/** Folders whose modules are read, relative to the repository. */
const FOLDERS = ['archive', 'proxy', 'shared', 'bench', 'test'];

/** One import of a module: the module it names (a path relative to the root) and whether only types come through it. */
interface Edge {
  to: string;
  typeOnly: boolean;
}

/** The `.ts` files (not `.d.ts`) under `dir` of `root`, relative to `root`, fixtures left out. */
function modules(root: string, dir: string): string[] {
  if (!existsSync(path.join(root, dir))) return [];
  const out: string[] = [];
  for (const e of readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name !== 'fixtures' && e.name !== 'node_modules') out.push(...modules(root, rel));
    } else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

/**
 * The module a specifier names, relative to `root`: `./x.js` and `./x.ts`
 * beside `from`, `#shared/x.js` as `shared/x.ts`; `undefined` for a package
 * or a file that is not one of the project's modules.
 */
function resolve(root: string, from: string, spec: string): string | undefined {
  let target: string;
  if (spec.startsWith('#shared/')) target = path.join('shared', spec.slice('#shared/'.length));
  else if (spec.startsWith('./') || spec.startsWith('../')) target = path.join(path.dirname(from), spec);
  else return undefined;
  const file = path.normalize(target.replace(/\.js$/, '.ts'));
  return file.endsWith('.ts') && existsSync(path.join(root, file)) ? file : undefined;
}

/** Whether an import declaration brings in types only (`import type …`, or every named binding marked `type`). */
function typeOnlyImport(d: ts.ImportDeclaration): boolean {
  const c = d.importClause;
  if (!c) return false; // `import './x.js'`: run for its effects
  if (c.isTypeOnly) return true;
  if (c.name) return false;
  const b = c.namedBindings;
  return !!b && ts.isNamedImports(b) && b.elements.length > 0 && b.elements.every((e) => e.isTypeOnly);
}

/** The imports of the module `file` (relative to `root`) that name other modules of the project. */
function importsOf(root: string, file: string): Edge[] {
  const sf = ts.createSourceFile(file, readFileSync(path.join(root, file), 'utf8'), ts.ScriptTarget.Latest, true);
  const edges: Edge[] = [];
  const add = (spec: ts.Expression | undefined, typeOnly: boolean) => {
    if (!spec || !ts.isStringLiteralLike(spec)) return;
    const to = resolve(root, file, spec.text);
    if (to) edges.push({ to, typeOnly });
  };
  const visit = (n: ts.Node) => {
    if (ts.isImportDeclaration(n)) add(n.moduleSpecifier, typeOnlyImport(n));
    else if (ts.isExportDeclaration(n)) add(n.moduleSpecifier, n.isTypeOnly);
    else if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword) add(n.arguments[0], false);
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return edges;
}

/** The import graph of the modules under `folders` of `root`: module → its imports of other modules. */
export function importGraph(root: string, folders: string[]): Map<string, Edge[]> {
  const graph = new Map<string, Edge[]>();
  for (const f of folders.flatMap((d) => modules(root, d)).sort()) graph.set(f, importsOf(root, f));
  return graph;
}

/**
 * Every import circle of `graph`, one per strongly connected component
 * (Tarjan): the shortest circle through the component's first module in
 * name order, written `a.ts -> b.ts -> a.ts` (`-(type)->` where only types
 * come through), followed by every module of the component when it holds
 * more than that circle. Sorted; empty when there are none.
 */
export function importCircles(graph: Map<string, Edge[]>): string[] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  let next = 0;
  const connect = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const { to } of graph.get(v) ?? []) {
      if (!index.has(to)) {
        connect(to);
        low.set(v, Math.min(low.get(v)!, low.get(to)!));
      } else if (onStack.has(to)) low.set(v, Math.min(low.get(v)!, index.get(to)!));
    }
    if (low.get(v) === index.get(v)) {
      const c: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        c.push(w);
      } while (w !== v);
      const selfImport = (graph.get(v) ?? []).some((e) => e.to === v);
      if (c.length > 1 || selfImport) components.push(c.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) connect(v);
  return components
    .map((c) => {
      const circle = shortestCircle(graph, c[0], new Set(c));
      const length = (circle.split(' ').length - 1) / 2;
      return length === c.length ? circle : `${circle} (all tied together: ${c.join(', ')})`;
    })
    .sort();
}

/** The shortest path from `start` back to itself within `members` (breadth first), as `a.ts -> b.ts -> a.ts`. */
function shortestCircle(graph: Map<string, Edge[]>, start: string, members: Set<string>): string {
  const came = new Map<string, { from: string; typeOnly: boolean }>();
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    const v = queue[i];
    for (const e of graph.get(v) ?? []) {
      if (!members.has(e.to) || came.has(e.to)) continue;
      came.set(e.to, { from: v, typeOnly: e.typeOnly });
      if (e.to === start) i = queue.length;
      else queue.push(e.to);
    }
  }
  const parts = [start];
  for (let v = start; ;) {
    const c = came.get(v)!;
    parts.unshift(c.from, c.typeOnly ? '-(type)->' : '->');
    v = c.from;
    if (v === start) break;
  }
  return parts.join(' ');
}

t.test('the circle finder names a circle, type-only and #shared/ imports included, and passes a tree without one', async (t) => {
  const root = mkdtempSync(path.join(tmpdir(), 'import-circles-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const write = (file: string, text: string) => {
    mkdirSync(path.join(root, path.dirname(file)), { recursive: true });
    writeFileSync(path.join(root, file), text);
  };
  write('shared/a.ts', "import { b } from '../archive/b.js';\nexport const a = b;\n");
  write('archive/b.ts', "import type { C } from './c.js';\nexport const b: C = 1;\n");
  write('archive/c.ts', "import { a } from '#shared/a.js';\nexport type C = typeof a;\n");
  write('archive/d.ts', "import { b } from './b.js';\nimport 'node:fs';\nexport const d = b;\n");
  t.same(importCircles(importGraph(root, ['archive', 'shared'])), ['archive/b.ts -(type)-> archive/c.ts -> shared/a.ts -> archive/b.ts']);
  write('archive/c.ts', 'export type C = number;\n');
  t.same(importCircles(importGraph(root, ['archive', 'shared'])), [], 'no circle once c.ts imports nothing');
});

t.test('no import circles among the modules of archive/, proxy/, shared/, bench/ and test/', async (t) => {
  const graph = importGraph(repo, FOLDERS);
  t.ok(graph.size > 150, `${graph.size} modules read`);
  t.ok([...graph.values()].reduce((n, e) => n + e.length, 0) > 500, 'their imports found');
  t.same(importCircles(graph), [], 'import circles (each a boundary in the wrong place)');
});
