/**
 * Waiting for a condition in tests without guessing a time: `cond` is
 * asked again at each turn of the event loop until it holds, for at most
 * `ms` (the bound, never the expected wait).
 */

/** Resolves once `cond()` holds (or resolves true); rejects after `ms` with `not within <ms> ms: <what>`. */
export async function until(cond: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = performance.now() + ms;
  while (!(await cond())) {
    if (performance.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setImmediate(r));
  }
}
