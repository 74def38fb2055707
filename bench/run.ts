/**
 * `npm run bench [-- NAME…]`: runs every module `bench/*.ts` that exports
 * `run(): Promise<BenchRow[]>` (all but the helpers lib.ts, open-loop.ts,
 * pages.ts, run.ts, search-pages.ts, seed.ts, wrk.ts, and cdx-hidden.ts, which runs alone), one after the other, and prints one table: benchmark | figure | baseline |
 * ratio | target | met?. NAMEs pick modules by file name (`timegate`,
 * `proxy-throughput`; a prefix is enough). A module that fails gives a row
 * saying so and the others still run; the exit status is 1 then.
 *
 * The table also goes to `bench/.data/last-table.md` with the date and
 * machine, ready for bench/results.md. `BENCH_CPU_PROF=1 npm run bench -- NAME`
 * runs the servers under test with `node --cpu-prof` and prints where each
 * spent its CPU (profiles in `bench/.data/profiles/`).
 *
 * `--baseline-dir <path>`: another checkout of this repository (with its
 * node_modules). The benches that export `usesBaselineDir` (timegate,
 * memento) also run that checkout's archive daemon on a copy of the same
 * seeded data, in the same alternating rounds, and add rows giving this
 * checkout's req/s over the other's (lib.ts `startBaselineArchive`).
 */
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { type BenchRow, baselineDir, dataRoot, failedRow, formatTable, note, removeStaleLogs, repo, setBaselineDir, summarizeCpuProfile } from './lib.js';

const SKIP = new Set(['cdx-hidden.ts', 'lib.ts', 'open-loop.ts', 'pages.ts', 'run.ts', 'search-pages.ts', 'seed.ts', 'wrk.ts']);

/** Date, CPU count, memory and Node version of this run. */
export function machine(): string {
  const cpu = os.cpus()[0]?.model.replace(/\s+/g, ' ').trim() ?? 'unknown CPU';
  return `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, ${os.cpus().length} cores (${cpu}), ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${os.type()} ${os.release()}`;
}

/** With BENCH_CPU_PROF=1: where each profiled server spent its CPU (stderr). */
function printProfiles(): void {
  const root = path.join(dataRoot, 'profiles');
  if (!existsSync(root)) return;
  for (const name of readdirSync(root).sort()) {
    for (const f of readdirSync(path.join(root, name)).filter((x) => x.endsWith('.cpuprofile'))) {
      const s = summarizeCpuProfile(path.join(root, name, f));
      process.stderr.write(`\n== profile ${name} (${f})\n-- by place:\n`);
      for (const [k, v] of s.byPlace) process.stderr.write(`${v.toFixed(1).padStart(5)}%  ${k}\n`);
      process.stderr.write('-- by function (self):\n');
      for (const [k, v] of s.self) process.stderr.write(`${v.toFixed(1).padStart(5)}%  ${k}\n`);
    }
  }
}

async function main(argv: string[]): Promise<number> {
  const want: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--baseline-dir' || a.startsWith('--baseline-dir=')) {
      const dir = a === '--baseline-dir' ? argv[++i] : a.slice('--baseline-dir='.length);
      if (!dir) {
        process.stderr.write('bench: --baseline-dir needs the path of another checkout\n');
        return 2;
      }
      try {
        setBaselineDir(dir);
      } catch (err) {
        process.stderr.write(`bench: ${(err as Error).message}\n`);
        return 2;
      }
    } else if (!a.startsWith('-')) want.push(a);
  }
  removeStaleLogs();
  if (process.env.BENCH_CPU_PROF) rmSync(path.join(dataRoot, 'profiles'), { recursive: true, force: true });
  const dir = path.join(repo, 'bench');
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && !SKIP.has(f))
    .sort();
  const picked = want.length ? files.filter((f) => want.some((w) => f.replace(/\.ts$/, '').startsWith(w))) : files;
  if (want.length && !picked.length) {
    process.stderr.write(`bench: no benchmark matches ${want.join(', ')} (have: ${files.map((f) => f.replace(/\.ts$/, '')).join(', ')})\n`);
    return 2;
  }
  const rows: BenchRow[] = [];
  let failed = false;
  for (const f of picked) {
    const name = f.replace(/\.ts$/, '');
    let mod: { run?: () => Promise<BenchRow[]>; usesBaselineDir?: boolean };
    try {
      mod = await import(pathToFileURL(path.join(dir, f)).href);
    } catch (err) {
      note(`${name}: cannot load: ${(err as Error).message}`);
      rows.push({ name: `${name}: could not load`, figure: (err as Error).message.split('\n')[0], baseline: '', ratio: null, met: false });
      failed = true;
      continue;
    }
    if (typeof mod.run !== 'function') continue;
    if (baselineDir() && !mod.usesBaselineDir) note(`${name}: has no A/B arm; --baseline-dir is not used here`);
    const started = Date.now();
    note(`${name} …`);
    try {
      const got = await mod.run();
      rows.push(...got);
      note(`${name} done in ${((Date.now() - started) / 1000).toFixed(0)} s`);
      for (const r of got) process.stderr.write(formatTable([r]).split('\n')[2] + '\n');
    } catch (err) {
      rows.push(failedRow(name, err));
      failed = true;
    }
  }
  if (process.env.BENCH_CPU_PROF) printProfiles();
  const table = formatTable(rows);
  const stampLine = `Measured ${machine()}.`;
  process.stdout.write(`\n${table}\n\n${stampLine}\n`);
  mkdirSync(dataRoot, { recursive: true });
  writeFileSync(path.join(dataRoot, 'last-table.md'), `${table}\n\n${stampLine}\n`);
  return failed ? 1 : 0;
}

process.exitCode = await main(process.argv.slice(2));
// Children are stopped by each module; do not let a stray handle keep the run alive.
process.exit();
