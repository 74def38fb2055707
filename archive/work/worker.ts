/**
 * The entry of a work pool's thread (pool.ts): says `ready` once the
 * tasks' modules are loaded, then runs each `{task, input}` it is sent
 * and answers `{ok: true, output}` or `{ok: false, error}` (the error's
 * one-line message; for a task that returns a promise, when it settles),
 * an output's `body` bytes moved rather than copied when they own their
 * buffer. One task at a time; the pool terminates the
 * thread at a task's deadline.
 */
import { parentPort } from 'node:worker_threads';
import { runTask, type TaskName } from './tasks.js';

const port = parentPort!;
/** The buffer of an output's `body` when the body owns all of it: moved to the caller, not copied. */
function movable(output: unknown): ArrayBuffer[] {
  const body = (output as { body?: unknown } | null)?.body;
  if (!(body instanceof Uint8Array) || !(body.buffer instanceof ArrayBuffer)) return [];
  return body.byteOffset === 0 && body.byteLength === body.buffer.byteLength ? [body.buffer] : [];
}

port.on('message', (m: { task: TaskName; input: unknown }) => {
  const failed = (err: unknown) => port.postMessage({ ok: false, error: String((err as Error)?.message ?? err).split('\n')[0] });
  try {
    const output = runTask(m.task, m.input);
    // A task that returns a promise (tasks.ts) answers when it settles; the pool sends no other task meanwhile.
    if (output instanceof Promise) output.then((o: unknown) => port.postMessage({ ok: true, output: o }, movable(o)), failed);
    else port.postMessage({ ok: true, output }, movable(output));
  } catch (err) {
    failed(err);
  }
});
port.postMessage({ ready: true });
