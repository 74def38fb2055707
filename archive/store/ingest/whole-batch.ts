/**
 * The write queue's captures whose records arrived whole in memory
 * (whole-capture.ts): checked, parsed and hashed for their batch in one
 * task of the ingest pool's thread, then made the captures the batch
 * decides and writes (batch-plan.ts `PendingCapture`), or refused with the
 * answer the event loop would have given them; and the refusals both
 * paths share.
 */
import { type HttpError, httpError, isHttpError } from '#shared/http-error.js';
import type { Via } from '../../evidence/leaf.js';
import { type ArchiveSpan, archiveForInstant, isLocal } from '../../spans.js';
import type { MementoRow, NewMementoRow } from '../index/index-db.js';
import type { IngestResult } from '../store-types.js';
import type { PendingCapture } from './batch-plan.js';
import { BodySpill } from './body-spill.js';
import type { CheckedRecord, PackedRecords, RecordLimits } from './whole-capture.js';
import { packRecords } from './whole-capture.js';

/** A capture that cannot be stored: the HTTP answer (`status`, one-line reason); the connection closes after it (the body may be unread). */
export function refuse(status: number, reason: string): HttpError {
  return httpError(status, reason, { close: true });
}

/** The 400 of a capture whose payload digest is not that of the memento it names as its original (`Archive-Revisit-Of`). */
export const notThePayload = () => refuse(400, 'the body is not the payload of the memento named as its original (another payload digest); nothing stored');

/** The local archive whose span holds the datetime of `row`. @throws HttpError 422 when none does */
export function archiveOf(archives: readonly ArchiveSpan[], row: NewMementoRow): ArchiveSpan {
  const archive = archiveForInstant(archives, row.datetime);
  if (!archive || !isLocal(archive))
    throw refuse(422, `no local archive in the config covers the capture's datetime ${new Date(row.datetime * 1000).toISOString()}`);
  row.archive_id = archive.id;
  return archive;
}

/** A capture in the write queue whose record arrived whole (its chunks as received), not yet checked. */
export interface WholeCapture {
  whole: Buffer[];
  receivedAt: Date;
  given?: Date;
  revisitOf?: MementoRow;
  via: Via;
  resolve: (r: Omit<IngestResult, 'bytes'>) => void;
  reject: (e: unknown) => void;
}

/** What a batch's whole captures need of the store. */
export interface WholeContext {
  archives: readonly ArchiveSpan[];
  limits: RecordLimits;
  tmpDir: string;
  /** Runs the `capture-checks` task (the ingest pool). */
  check(packed: PackedRecords): Promise<CheckedRecord[]>;
}

/** The capture of `w` as its checks found it, or the refusal its PUT is answered with (the same as on the event loop, in the same order). */
async function fromChecked(w: WholeCapture, c: CheckedRecord, ctx: WholeContext): Promise<PendingCapture | HttpError> {
  if ('refused' in c) return refuse(c.refused.status, c.refused.reason);
  const { row } = c;
  let archive: ArchiveSpan;
  try {
    archive = archiveOf(ctx.archives, row);
  } catch (err) {
    return err as HttpError;
  }
  if (c.lengthError) return refuse(400, c.lengthError);
  row.digest = c.payload;
  if (w.revisitOf && w.revisitOf.digest !== row.digest) return notThePayload();
  const record = w.whole.length === 1 ? w.whole[0] : Buffer.concat(w.whole);
  const body = new BodySpill(ctx.tmpDir);
  const bodyStart = c.requestLength + c.responseLength;
  if (record.length > bodyStart) await body.write(record.subarray(bodyStart));
  const head = { requestBytes: record.subarray(0, c.requestLength), responseBytes: record.subarray(c.requestLength, bodyStart) };
  return { archive, row, head, body, blockDigest: c.block, revisitOf: w.revisitOf, via: w.via, resolve: w.resolve, reject: w.reject };
}

/**
 * The captures of `batch` in order, each whole one checked (one task for
 * all of them) and made a {@link PendingCapture}; a whole capture refused
 * is answered (rejected) and left out, as is each of them with a 503 when
 * the thread failed (died, or missed its deadline). Nothing is written of
 * those.
 */
export async function checkWholeCaptures(batch: readonly (PendingCapture | WholeCapture)[], ctx: WholeContext): Promise<PendingCapture[]> {
  const whole = batch.filter((p): p is WholeCapture => 'whole' in p);
  if (!whole.length) return batch as PendingCapture[];
  let checked: CheckedRecord[];
  try {
    checked = await ctx.check(
      packRecords(
        whole.map((w) => ({ chunks: w.whole, receivedAt: w.receivedAt, given: w.given })),
        ctx.limits,
      ),
    );
  } catch (err) {
    const why = refuse(503, `the capture record was not checked: ${(err as Error).message}`);
    for (const w of whole) w.reject(why);
    return batch.filter((p): p is PendingCapture => !('whole' in p));
  }
  const made = new Map<WholeCapture, PendingCapture | HttpError>();
  for (const [i, w] of whole.entries()) made.set(w, await fromChecked(w, checked[i], ctx));
  const out: PendingCapture[] = [];
  for (const p of batch) {
    if (!('whole' in p)) out.push(p);
    else {
      const m = made.get(p)!;
      if (isHttpError(m)) p.reject(m);
      else out.push(m);
    }
  }
  return out;
}
