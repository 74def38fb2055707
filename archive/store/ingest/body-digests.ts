/**
 * A capture's two digests (docs/storage.md): the payload digest, SHA-256
 * of the response body (the index row's `digest`, the WARC-Payload-Digest),
 * and the block digest, SHA-256 of the response head and body (the
 * response record's WARC-Block-Digest). A body whole in memory (at most
 * body-spill.ts's in-memory limit) is not hashed on the event loop: the
 * write queue's batch hashes all of its bodies in one task of the ingest
 * pool's thread (`capture-digests`, archive/work/tasks.ts), the bodies
 * packed into one buffer moved to the thread and 64 bytes a capture
 * back. A body that spills to its temp file is hashed on the event loop
 * as it streams, from the chunk that spills it on (the chunks in memory
 * first), as before.
 */
import { createHash, type Hash } from 'node:crypto';
import type { BodySpill } from './body-spill.js';

/** `sha256:<hex>` of a payload and of its record's block. */
export interface Digests {
  payload: string;
  block: string;
}

/** The digests of one capture's body as it arrives (see the module comment). */
export class BodyDigests {
  private hashes: { payload: Hash; block: Hash } | null = null;

  /**
   * @param responseHead the response head's bytes as received (the start of the block)
   * @param spill where the body goes ({@link add} is called before each of its writes)
   */
  constructor(
    private readonly responseHead: Buffer,
    private readonly spill: BodySpill,
  ) {}

  /** Takes the next body chunk, before it is written to `spill`: hashed here only once the body no longer fits in memory. */
  add(chunk: Buffer): void {
    if (!this.hashes && !this.spill.fits(chunk.length)) {
      this.hashes = { payload: createHash('sha256'), block: createHash('sha256').update(this.responseHead) };
      for (const c of this.spill.chunksInMemory()) this.update(c);
    }
    if (this.hashes) this.update(chunk);
  }

  private update(chunk: Buffer): void {
    this.hashes!.payload.update(chunk);
    this.hashes!.block.update(chunk);
  }

  /** The digests, when the body was hashed as it streamed; `null` for a body whole in memory (the batch's task hashes it). */
  streamed(): Digests | null {
    if (!this.hashes) return null;
    return { payload: 'sha256:' + this.hashes.payload.digest('hex'), block: 'sha256:' + this.hashes.block.digest('hex') };
  }
}

/** What crosses to the thread: each capture's response head then its body, back to back (`bytes`, moved), and their lengths. */
export interface PackedBodies {
  bytes: Uint8Array;
  lengths: number[];
}

/** The heads and bodies (their chunks) of `captures` (each body whole in memory) copied into one buffer of its own (so that it can be moved). */
export function packBodies(captures: readonly { head: Buffer; body: readonly Buffer[] }[]): PackedBodies {
  const lengths = captures.flatMap((c) => [c.head.length, c.body.reduce((n, b) => n + b.length, 0)]);
  const bytes = new Uint8Array(lengths.reduce((a, b) => a + b, 0));
  let at = 0;
  for (const c of captures)
    for (const part of [c.head, ...c.body]) {
      bytes.set(part, at);
      at += part.length;
    }
  return { bytes, lengths };
}

/**
 * The `capture-digests` task: for each head and body of `input`, its
 * {@link Digests}, in order.
 * @throws RangeError when the lengths are not pairs that add up to the bytes
 */
export function digestPacked(input: PackedBodies): Digests[] {
  const buf = Buffer.from(input.bytes.buffer, input.bytes.byteOffset, input.bytes.byteLength);
  if (input.lengths.length % 2 || input.lengths.reduce((a, b) => a + b, 0) !== buf.length)
    throw new RangeError('capture-digests: the lengths are not head and body pairs that add up to the bytes sent');
  const out: Digests[] = [];
  let at = 0;
  for (let i = 0; i < input.lengths.length; i += 2) {
    const head = buf.subarray(at, (at += input.lengths[i]));
    const body = buf.subarray(at, (at += input.lengths[i + 1]));
    out.push({
      payload: 'sha256:' + createHash('sha256').update(body).digest('hex'),
      block: 'sha256:' + createHash('sha256').update(head).update(body).digest('hex'),
    });
  }
  return out;
}

/** Most time the digests of `bytes` of a batch's heads and bodies may take in the pool's thread, ms: 10 s and 1 s a MiB (SHA-256 does some 200 MiB/s). */
export const digestDeadlineMs = (bytes: number) => 10_000 + bytes / 1024;
