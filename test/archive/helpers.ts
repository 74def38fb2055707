/**
 * Helpers for the archive tests (not a test file: tap skips helpers.ts):
 * what is on disk (WARC bytes, records), a config file for a real daemon,
 * and running the `memento-archive` CLI.
 */
import { spawn } from 'node:child_process';
import { createReadStream, mkdtempSync, writeFileSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { WARCParser } from 'warcio';
import { repo } from '../helpers/daemons.js';

/** Total bytes of every WARC file under `<dataDir>/warcs`. */
export async function warcBytes(dataDir: string): Promise<number> {
  let n = 0;
  for (const id of await readdir(path.join(dataDir, 'warcs')).catch(() => [] as string[])) {
    for (const f of await readdir(path.join(dataDir, 'warcs', id))) n += (await stat(path.join(dataDir, 'warcs', id, f))).size;
  }
  return n;
}

/** Every WARC record of an archive's folder, in file-name order: type, target URI, headers and block bytes (read with warcio). */
export async function warcRecords(dataDir: string, archiveId: string) {
  const dir = path.join(dataDir, 'warcs', archiveId);
  const out: { type: string; target: string; headers: Map<string, string>; block: Buffer }[] = [];
  for (const f of (await readdir(dir).catch(() => [] as string[])).sort()) {
    const parser = new WARCParser(createReadStream(path.join(dir, f)), { parseHttp: false });
    for await (const rec of parser) {
      const block = Buffer.from(await rec.readFully(false));
      const headers = new Map<string, string>();
      for (const [k, v] of rec.warcHeaders.headers) headers.set(k.toLowerCase(), v);
      out.push({ type: rec.warcType ?? '', target: rec.warcTargetURI ?? '', headers, block });
    }
  }
  return out;
}

/** A temp folder with `archive.yaml` (mode 0600; listen 127.0.0.1:0, data in `data/`) plus `extra` YAML lines. */
export function writeConfig(extra = ''): { dir: string; config: string; dataDir: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'archive-cli-'));
  const config = path.join(dir, 'archive.yaml');
  writeFileSync(
    config,
    `listen: 127.0.0.1:0\ndata_dir: data\narchives:\n  - id: "2025"\n    until: 2026-01-01T00:00:00Z\n  - id: current\n    from: 2026-01-01T00:00:00Z\n${extra}`,
    { mode: 0o600 },
  );
  return { dir, config, dataDir: path.join(dir, 'data') };
}

/**
 * Runs `node bin/memento-archive.js ...args` to its end: exit code and
 * output. With `killAfterMs`, a run still going then is ended (SIGTERM)
 * and its code is `null`: for commands that must exit at once.
 */
export function runCli(args: string[], killAfterMs?: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [path.join(repo, 'bin', 'memento-archive.js'), ...args], { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '',
      stderr = '';
    const timer = killAfterMs === undefined ? undefined : setTimeout(() => p.kill('SIGTERM'), killAfterMs);
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    p.on('error', reject);
    p.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** mulberry32: a small seeded PRNG returning numbers in [0, 1), so that a failing random run can be repeated with its seed. */
export function prng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}
