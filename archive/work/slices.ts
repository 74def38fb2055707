/**
 * Work done on the event loop in slices: a task that would hold the loop
 * for long (the archival replay of a page as it streams,
 * archive/replay/replay.ts) does a little at a time and, once it has spent
 * {@link SLICE_MS} of the loop, waits for a later turn of it
 * ({@link SliceClock}). The turns are shared: each turn of the event loop
 * lets one waiting slice go, in the order they came, so that however many
 * tasks are sliced at once, the I/O and timers of everything else (a
 * `/healthz`, a capture PUT) wait at most one slice between turns.
 * Work that cannot be cut into slices goes to a work pool's thread
 * (pool.ts) instead.
 */

/** Most time one slice holds the event loop, ms (a slice ends at the first check past it). */
export const SLICE_MS = 4;

const waiting: (() => void)[] = [];
let pumping = false;

/** Lets the first waiting slice go; the next one at the next turn (an immediate set while immediates run waits for the next turn). */
function pump(): void {
  const next = waiting.shift();
  if (waiting.length) setImmediate(pump);
  else pumping = false;
  next?.();
}

/** Resolves at a later turn of the event loop, after the I/O waiting then, one slice at a time across all sliced work. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    if (!pumping) {
      pumping = true;
      setImmediate(pump);
    }
  });
}

/** Slices waiting for their turn now. */
export function slicesWaiting(): number {
  return waiting.length;
}

/** The time a sliced task has held the event loop since its slice began. */
export class SliceClock {
  private start = performance.now();

  /** @param ms the length of a slice, ms */
  constructor(private readonly ms = SLICE_MS) {}

  /** The slice is used up. */
  get spent(): boolean {
    return performance.now() - this.start >= this.ms;
  }

  /** Waits for a later turn (then a new slice begins): when {@link spent} says so. */
  async next(): Promise<void> {
    await nextTurn();
    this.start = performance.now();
  }
}
