/**
 * The files of this repository the repo tests read (test/repo/): every file
 * under a folder whose name matches, relative to the repository root,
 * `/`-separated, sorted.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { repo } from './daemons.js';

/** The files under `dir` (relative to the repository) whose name matches `name` (default: `.ts` files), sorted. */
export function repoFiles(dir: string, name: RegExp = /\.ts$/): string[] {
  const out: string[] = [];
  for (const e of readdirSync(path.join(repo, dir), { withFileTypes: true })) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) out.push(...repoFiles(rel, name));
    else if (name.test(e.name)) out.push(rel);
  }
  return out.sort();
}
