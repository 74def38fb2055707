/**
 * The tasks a work pool's thread runs (pool.ts, worker.ts): pure
 * functions of their input, whose cost grows with stored content, each
 * with a budget of its own:
 *
 * - `diff`: the comparison of two captures' lines for `/web/diff/…`
 *   (archive/web/diff.ts, {@link DIFF_BUDGET}).
 * - `embedded`: the resources a stored HTML page embeds, for the replay
 *   banner's "About this capture" panel (archive/replay/embedded.ts; at
 *   most `max` resources of the page's first bytes, coherence.ts).
 *
 * Inputs and outputs cross between threads by structured clone: plain
 * data only.
 */
import { embeddedResources, type EmbeddedResource } from '../replay/embedded.js';
import { type DiffResult, diffTexts } from '../web/diff.js';

const TASKS = {
  diff: (input: { a: string[]; b: string[] }): DiffResult => diffTexts(input.a, input.b),
  embedded: (input: { html: string; uriR: string; max: number }): { resources: EmbeddedResource[]; more: boolean } =>
    embeddedResources(input.html, input.uriR, input.max),
};

/** The name of a task. */
export type TaskName = keyof typeof TASKS;
/** What task `N` takes. */
export type TaskInput<N extends TaskName> = Parameters<(typeof TASKS)[N]>[0];
/** What task `N` gives. */
export type TaskOutput<N extends TaskName> = ReturnType<(typeof TASKS)[N]>;

/** Runs task `name` on `input` (in a pool's thread). @throws for an unknown task, or the task's own error */
export function runTask(name: TaskName, input: unknown): unknown {
  const task = TASKS[name] as ((input: unknown) => unknown) | undefined;
  if (!task) throw new Error(`no task named ${JSON.stringify(name)}`);
  return task(input);
}
