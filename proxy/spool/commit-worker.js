// @ts-check
/**
 * The thread of the spool's writer of whole captures (commit-writer.ts).
 * For each batch it is sent (a list of {@link CommitJob}s), every job's
 * record is written to its tmp file (0600) and fdatasynced, then the file
 * is renamed to its final path in its queue's folder (which the main
 * thread has made); it answers one error message, or null, per job, in
 * order. A job that failed leaves no tmp file behind.
 *
 * Plain JavaScript on purpose: the proxy runs its TypeScript through tsx,
 * and a thread that loaded tsx would cost some 50 MiB of memory for these
 * few system calls. `// @ts-check` and the JSDoc types keep it checked by
 * `npm run typecheck`, and ESLint and Prettier see it like any source.
 */
import fs from 'node:fs';
import { parentPort } from 'node:worker_threads';

/** @typedef {import('./commit-writer.js').CommitJob} CommitJob */

/**
 * Writes every byte of `bufs` to `fd`, in order.
 *
 * @param {number} fd an open file
 * @param {Uint8Array[]} bufs the record's chunks
 * @throws the file system's error (ENOSPC, EIO)
 */
function writeAll(fd, bufs) {
  for (const b of bufs) {
    let off = 0;
    while (off < b.length) off += fs.writeSync(fd, b, off, b.length - off);
  }
}

/**
 * Writes, syncs and renames one batch (see the module comment): all the
 * writes first, then all the fdatasyncs, then all the renames, so the
 * batch's syncs share the file system's journal commits.
 *
 * @param {CommitJob[]} jobs
 * @returns {(string | null)[]} per job, the error's message or null
 */
export function commitBatch(jobs) {
  /** @type {(string | null)[]} */
  const errs = jobs.map(() => null);
  const fds = jobs.map((job, i) => {
    try {
      const fd = fs.openSync(job.tmp, 'w', 0o600);
      try {
        writeAll(fd, job.chunks);
      } catch (err) {
        fs.closeSync(fd);
        throw err;
      }
      return fd;
    } catch (err) {
      errs[i] = /** @type {Error} */ (err).message;
      return -1;
    }
  });
  fds.forEach((fd, i) => {
    if (fd < 0) return;
    try {
      fs.fdatasyncSync(fd);
    } catch (err) {
      errs[i] = /** @type {Error} */ (err).message;
    }
    try {
      fs.closeSync(fd);
    } catch (err) {
      errs[i] ??= /** @type {Error} */ (err).message;
    }
  });
  jobs.forEach((job, i) => {
    if (errs[i] === null) {
      try {
        fs.renameSync(job.tmp, job.file);
        return;
      } catch (err) {
        errs[i] = /** @type {Error} */ (err).message;
      }
    }
    try {
      fs.rmSync(job.tmp, { force: true });
    } catch {
      // Left for the spool's start, which empties tmp/.
    }
  });
  return errs;
}

parentPort?.on('message', (/** @type {CommitJob[]} */ jobs) => parentPort?.postMessage(commitBatch(jobs)));
