/**
 * The entry of a work pool's thread (pool.ts): says `ready` once the
 * tasks' modules are loaded, then runs each `{task, input}` it is sent
 * and answers `{ok: true, output}` or `{ok: false, error}` (the error's
 * one-line message). One task at a time; the pool terminates the thread
 * at a task's deadline.
 */
import { parentPort } from 'node:worker_threads';
import { runTask, type TaskName } from './tasks.js';

const port = parentPort!;
port.on('message', (m: { task: TaskName; input: unknown }) => {
  try {
    port.postMessage({ ok: true, output: runTask(m.task, m.input) });
  } catch (err) {
    port.postMessage({ ok: false, error: String((err as Error)?.message ?? err).split('\n')[0] });
  }
});
port.postMessage({ ready: true });
