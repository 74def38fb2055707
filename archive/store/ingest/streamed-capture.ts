/**
 * A capture record too large to arrive whole in memory (over
 * whole-capture.ts `WHOLE_BYTES`), read on the event loop as it streams:
 * its heads parsed as they arrive and checked at once (whole-capture.ts
 * `checkedRow`), its body hashed and written to a {@link BodySpill}
 * (memory, then a temp file) chunk by chunk, never whole in memory.
 */
import { createHash } from 'node:crypto';
import { type CaptureHead, CaptureRecordParser } from '#shared/capture-record.js';
import type { NewMementoRow } from '../index/index-db.js';
import { BodySpill } from './body-spill.js';
import { bodyLengthError, checkedRow, type RecordLimits } from './whole-capture.js';

export class StreamedCapture {
  private readonly parser: CaptureRecordParser;
  private readonly payload = createHash('sha256');
  private readonly block = createHash('sha256');
  /** Where the body goes. */
  readonly body: BodySpill;
  /** The index row (without archive id, WARC position and digest), once the heads are read and accepted. */
  row: NewMementoRow | null = null;

  /**
   * @param tmpDir the folder of the body's spill file
   * @param given the PUT's Memento-Datetime, if any (capture-rules.ts `acceptCapture`)
   */
  constructor(
    tmpDir: string,
    private readonly limits: RecordLimits,
    private readonly receivedAt: Date,
    private readonly given?: Date,
  ) {
    this.parser = new CaptureRecordParser(limits);
    this.body = new BodySpill(tmpDir);
  }

  /** Takes the record's next chunk. @throws CaptureRecordError (400, 431) for heads the parser or the rules refuse; UriError */
  async take(chunk: Buffer): Promise<void> {
    const out = this.parser.feed(chunk);
    if (!this.row && this.parser.head) {
      this.row = checkedRow(this.parser.head, this.receivedAt, this.limits, this.given);
      this.block.update(this.parser.head.responseBytes);
    }
    if (out.length) {
      this.payload.update(out);
      this.block.update(out);
      await this.body.write(out);
    }
  }

  /**
   * The record ended: its heads, row (its payload digest set), block
   * digest, and why its body is not the length declared (or `null`).
   * @throws CaptureRecordError when it ended inside its heads
   */
  finish(): { head: CaptureHead; row: NewMementoRow; block: string; lengthError: string | null } {
    this.parser.finish();
    const head = this.parser.head!;
    const row = this.row!;
    row.digest = 'sha256:' + this.payload.digest('hex');
    return { head, row, block: 'sha256:' + this.block.digest('hex'), lengthError: bodyLengthError(head, this.body.length) };
  }
}
