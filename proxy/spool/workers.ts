/**
 * The spool of each worker (`workers:` in proxy.yaml, proxy/workers.ts):
 * every worker has a spool of its own, so that each queue keeps one
 * writer and one sender, and its order. Worker 1 uses the spool folder
 * itself (the folder of a proxy without workers: going from one worker to
 * several, or back, leaves nothing behind); worker k ≥ 2 uses
 * `<spool>/worker-<k>/`, laid out alike (proxy/spool/spool.ts).
 *
 * Before the workers start, the captures in the folder of a worker that
 * will not run (`worker-3/` after `workers:` went from 4 to 2) are moved
 * into worker 1's spool ({@link adoptLeftoverSpools}): queued captures in
 * their order, after the ones worker 1 already has; `rejected/` ones
 * likewise. A move is a rename in the same file system: a crash leaves
 * each capture in one place or the other, never in both or in neither.
 */
import { mkdir, readdir, rename, rm, rmdir } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../log.js';
import { REJECTED_DIR, seqOfFileName, spoolFileName, TMP_DIR, WORKER_DIR_RE } from './file.js';

/**
 * The spool folder of worker `k` (1-based) of `workers`: the spool folder
 * itself for worker 1 (and for a proxy without workers), else
 * `<spoolDir>/worker-<k>`.
 */
export function workerSpoolDir(spoolDir: string, k: number, workers: number): string {
  return k <= 1 || workers <= 1 ? spoolDir : path.join(spoolDir, `worker-${k}`);
}

/** The file names of `dir` that are spool files, in sequence order; none when it does not exist. */
async function spoolFilesOf(dir: string): Promise<string[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  return names.filter((f) => seqOfFileName(f) !== undefined).sort();
}

/** The highest sequence number in worker 1's spool (its queues and `rejected/`), 0 when empty. */
async function highestSeq(spoolDir: string): Promise<number> {
  let max = 0;
  for (const d of await readdir(spoolDir, { withFileTypes: true }).catch(() => [])) {
    if (!d.isDirectory() || d.name === TMP_DIR || WORKER_DIR_RE.test(d.name)) continue;
    for (const f of await spoolFilesOf(path.join(spoolDir, d.name))) max = Math.max(max, seqOfFileName(f)!);
  }
  return max;
}

/**
 * Moves the captures of every `<spoolDir>/worker-<j>/` with `j > workers`
 * into worker 1's spool (`spoolDir`), each queue's in its order after the
 * ones there, and removes those folders (their `tmp/`: captures left
 * half-written by a crash, as the spool removes at start). Call it before
 * any worker opens its spool. Logs one line per folder adopted.
 *
 * @returns how many captures were moved
 * @throws the file system error when a folder cannot be read or a file moved
 */
export async function adoptLeftoverSpools(spoolDir: string, workers: number, log: Logger): Promise<number> {
  const leftovers = (await readdir(spoolDir, { withFileTypes: true }).catch(() => []))
    .filter((d) => d.isDirectory() && Number(WORKER_DIR_RE.exec(d.name)?.[1]) > workers)
    .map((d) => d.name)
    .sort((a, b) => Number(WORKER_DIR_RE.exec(a)![1]) - Number(WORKER_DIR_RE.exec(b)![1]));
  let seq = leftovers.length ? await highestSeq(spoolDir) : 0;
  let moved = 0;
  for (const name of leftovers) {
    const from = path.join(spoolDir, name);
    let count = 0;
    for (const d of await readdir(from, { withFileTypes: true })) {
      if (!d.isDirectory() || d.name === TMP_DIR) continue;
      const to = path.join(spoolDir, d.name);
      await mkdir(to, { recursive: true, mode: 0o700 });
      for (const f of await spoolFilesOf(path.join(from, d.name))) {
        await rename(path.join(from, d.name, f), path.join(to, spoolFileName(++seq)));
        count++;
      }
      await rmdir(path.join(from, d.name)).catch(() => {});
    }
    await rm(path.join(from, TMP_DIR), { recursive: true, force: true });
    await rmdir(from).catch(() => {});
    if (count)
      log({ msg: `spool: captures of ${name}, a worker that no longer runs, moved to worker 1's spool (queued and ${REJECTED_DIR}/)`, count, dir: from });
    moved += count;
  }
  return moved;
}
