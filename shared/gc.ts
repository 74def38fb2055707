/**
 * Bounded memory for large bodies: a young-generation collection every few
 * MiB of a streamed body, in both daemons.
 *
 * A capture's body streams through short-lived 64 KiB buffers (socket
 * reads, spill-file reads, gzip output, the proxy's tee). Their memory lives outside V8's
 * heap and is returned only when their small wrappers are collected, and V8
 * waits for tens of MiB of them before it collects. A scavenge takes well
 * under a millisecond; calling one every {@link SCAVENGE_EVERY} bytes keeps
 * the RSS of either daemon about flat while 1 GiB streams through it.
 */
import v8 from 'node:v8';
import vm from 'node:vm';

const minorGc: () => void = (() => {
  try {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as (o?: { type: string }) => void;
    return () => gc({ type: 'minor' });
  } catch {
    return () => undefined;
  }
})();

/** Bytes of streamed body between two scavenges. */
export const SCAVENGE_EVERY = 8 * 1024 * 1024;

/** Counts streamed bytes and runs a scavenge each time the count passes a multiple of {@link SCAVENGE_EVERY}. */
export class ScavengeCounter {
  private n = 0;
  /** Adds `bytes` to the count (a scavenge when it crosses a boundary). */
  add(bytes: number): void {
    const before = Math.floor(this.n / SCAVENGE_EVERY);
    this.n += bytes;
    if (Math.floor(this.n / SCAVENGE_EVERY) !== before) minorGc();
  }
}
