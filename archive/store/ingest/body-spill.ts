/**
 * A body buffer that holds small bodies in memory and spills large ones to
 * a temporary file, so that a capture of any size costs at most
 * `memLimit` bytes of memory (the daemons hold a bounded amount of any body).
 */

import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { type FileHandle, open, unlink } from 'node:fs/promises';
import path from 'node:path';

export class BodySpill {
  private chunks: Buffer[] = [];
  private memBytes = 0;
  private fh: FileHandle | null = null;
  private file: string | null = null;
  /** Bytes written so far. */
  length = 0;

  /**
   * @param tmpDir folder for the spill file (same disk as the WARC files)
   * @param memLimit bytes kept in memory before spilling to disk
   */
  constructor(
    private readonly tmpDir: string,
    private readonly memLimit = 256 * 1024,
  ) {}

  /** Appends a chunk; resolves once it is in memory or written to the spill file. */
  async write(chunk: Buffer): Promise<void> {
    this.length += chunk.length;
    if (!this.fh && this.memBytes + chunk.length <= this.memLimit) {
      this.chunks.push(chunk);
      this.memBytes += chunk.length;
      return;
    }
    if (!this.fh) {
      this.file = path.join(this.tmpDir, `body-${process.pid}-${randomBytes(8).toString('hex')}.tmp`);
      this.fh = await open(this.file, 'w+', 0o600);
      for (const c of this.chunks) await this.fh.write(c);
      this.chunks = [];
      this.memBytes = 0;
    }
    await this.fh.write(chunk);
  }

  /** The whole body when it never spilled to disk (small bodies); `null` otherwise. */
  inMemory(): Buffer | null {
    if (this.file) return null;
    return this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
  }

  /** The bytes written, in order, as an async iterable (may be read more than once). */
  async *read(): AsyncGenerator<Buffer> {
    if (!this.file) {
      yield* this.chunks;
      return;
    }
    for await (const c of createReadStream(this.file, { highWaterMark: 64 * 1024 })) yield c as Buffer;
  }

  /** Frees memory and deletes the spill file. Safe to call twice. */
  async dispose(): Promise<void> {
    this.chunks = [];
    const fh = this.fh,
      file = this.file;
    this.fh = null;
    this.file = null;
    if (fh) await fh.close().catch(() => undefined);
    if (file) await unlink(file).catch(() => undefined);
  }
}
