/**
 * Bench smoke: `npm run bench -- proxy-cost` runs as a user runs it (the
 * capture proxy and a bare http-proxy in their own processes, wrk from
 * outside, one round instead of five) and prints its row with a baseline
 * and a ratio. It checks that the bench machinery still works end to end
 * (servers start, every answer is the expected status, the table is
 * written); it asserts no speed: the figures are measured by `npm run
 * bench`, not by tests. Needs `wrk` (Debian's `wrk`; `.ci/run` installs it).
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

t.test('npm run bench -- proxy-cost (one round): exits 0 and prints its row with a baseline, a ratio and a target', async (t) => {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/run.ts', 'proxy-cost'], {
    cwd: repo,
    env: { ...process.env, PROXY_COST_ROUNDS: '1', BENCH_CPU_PROF: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  t.equal(code, 0, `the bench run exits 0 (stderr: ${err.slice(-600)})`);
  const row = out.split('\n').find((l) => l.startsWith('| proxy, capture Off / bare http-proxy'));
  t.ok(row, 'the table has the row "proxy, capture Off / bare http-proxy"');
  const cells = (row ?? '').split('|').map((c) => c.trim());
  // | benchmark | figure | baseline | ratio | target | met? |
  t.match(cells[2], /[\d,]+ req\/s, [\d,]+ µs CPU\/request/, 'the figure: the proxy with capture Off, req/s and CPU per request');
  t.match(cells[3], /[\d,]+ req\/s, [\d,]+ µs CPU\/request \(bare http-proxy\)/, 'the baseline: the bare http-proxy measured in the same run');
  t.match(cells[4], /^\d+\.\d+×$/, 'a ratio');
  t.equal(cells[5], '≥ 0.9×', 'the target of the goal');
  const table = path.join(repo, 'bench', '.data', 'last-table.md');
  t.ok(
    existsSync(table) && readFileSync(table, 'utf8').includes('| proxy, capture Off / bare http-proxy'),
    'the table is also written to bench/.data/last-table.md',
  );
});
