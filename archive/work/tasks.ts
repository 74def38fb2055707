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
 * - `replay`: the archival replay of a whole page or stylesheet of up to
 *   2 MiB (archive/replay/rewrite.ts), when it does not fit in a slice of
 *   the event loop; `replay-part`: one tag or `<style>` text of a page
 *   that streams, too long to rewrite within a slice (html.ts
 *   `rewritePart`). Both cost time in proportion to their bytes.
 * - `text`: the title and visible text of a stored page for the full-text
 *   index, from the raw bytes of its record (archive/search/extract.ts
 *   `extractFromRecord`: inflated, decoded, parsed; at most 3 MiB of record
 *   and 1 MiB of decoded text), after its capture was answered.
 * - `gzip-records`: a write batch's WARC records, each gzipped into its
 *   own member (archive/store/warcs/gzip-batch.ts; at most the batch's
 *   records whole in memory, 1 MiB each).
 *
 * Inputs and outputs cross between threads by structured clone: plain
 * data only (an input's bytes may be moved rather than copied: pool.ts
 * `run`'s `transfer`). A task's output `body` (bytes that own their
 * buffer) is moved to the caller, not copied (worker.ts). A task may
 * return a promise (`text`: streams through zlib); the thread answers when
 * it settles, and takes no other task meanwhile.
 */
import { embeddedResources, type EmbeddedResource } from '../replay/embedded.js';
import { type DeferredPart, type HtmlReplay, rewritePart } from '../replay/html.js';
import { type RewritePage, rewriteWhole } from '../replay/rewrite.js';
import { type DiffResult, diffTexts } from '../web/diff.js';
import { extractFromRecord } from '../search/extract.js';
import { gzipPacked } from '../store/warcs/gzip-batch.js';

/** The `replay` task: the bytes of a page or stylesheet, rewritten (`null`: a stylesheet with nothing to rewrite). */
function replay(input: { kind: 'html' | 'css'; bytes: Uint8Array; page: RewritePage }): { body: Uint8Array | null } {
  const out = rewriteWhole(input.kind, Buffer.from(input.bytes.buffer, input.bytes.byteOffset, input.bytes.byteLength), input.page);
  return { body: out === 'unchanged' ? null : out };
}

const TASKS = {
  diff: (input: { a: string[]; b: string[] }): DiffResult => diffTexts(input.a, input.b),
  embedded: (input: { html: string; uriR: string; max: number }): { resources: EmbeddedResource[]; more: boolean } =>
    embeddedResources(input.html, input.uriR, input.max),
  replay,
  'replay-part': (input: { part: DeferredPart; page: HtmlReplay }): { text: string; rewritten: number } => rewritePart(input.part, input.page),
  text: extractFromRecord,
  'gzip-records': gzipPacked,
};

/** The name of a task. */
export type TaskName = keyof typeof TASKS;
/** What task `N` takes. */
export type TaskInput<N extends TaskName> = Parameters<(typeof TASKS)[N]>[0];
/** What task `N` gives (what its promise settles to, for a task that returns one). */
export type TaskOutput<N extends TaskName> = Awaited<ReturnType<(typeof TASKS)[N]>>;

/** Runs task `name` on `input` (in a pool's thread): its output, or a promise of it. @throws for an unknown task, or the task's own error */
export function runTask(name: TaskName, input: unknown): unknown {
  const task = TASKS[name] as ((input: unknown) => unknown) | undefined;
  if (!task) throw new Error(`no task named ${JSON.stringify(name)}`);
  return task(input);
}
