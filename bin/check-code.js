#!/usr/bin/env node
// The static checks of `npm test`, run side by side (each is one process
// that keeps one core busy for about 20 s here): ESLint (`eslint .`),
// Prettier's check (`prettier --check .`) and the type check (`tsc
// --noEmit`). Each one's output is printed whole, in that order, once all
// have ended; the exit status is 1 when any of them failed (`npm run
// lint` and `npx tsc --noEmit` run them one by one, without the caches).
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bin = (name) => path.join(root, 'node_modules', '.bin', name);
// Each keeps what it learnt of unchanged files under node_modules/.cache (by content), so a second run is quicker.
const cache = path.join(root, 'node_modules', '.cache');
const CHECKS = [
  ['eslint', [bin('eslint'), '--cache', '--cache-strategy', 'content', '--cache-location', path.join(cache, 'eslint') + path.sep, '.']],
  ['prettier', [bin('prettier'), '--check', '--cache', '--cache-strategy', 'content', '.']],
  ['tsc', [bin('tsc'), '--noEmit', '--incremental', '--tsBuildInfoFile', path.join(cache, 'tsc', 'tsconfig.tsbuildinfo')]],
];

/** Runs one check; its name, exit code and output (stdout and stderr as they came). */
function run([name, [command, ...args]]) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', (err) => resolve({ name, code: 1, out: `${out}${err.message}\n` }));
    child.on('close', (code, signal) => resolve({ name, code: code ?? 1, out: signal ? `${out}(ended by ${signal})\n` : out }));
  });
}

const results = await Promise.all(CHECKS.map(run));
for (const r of results) {
  process.stdout.write(`> ${r.name}: ${r.code === 0 ? 'ok' : `failed (exit ${r.code})`}\n`);
  if (r.out.trim()) process.stdout.write(r.out.endsWith('\n') ? r.out : `${r.out}\n`);
}
process.exit(results.some((r) => r.code !== 0) ? 1 : 0);
