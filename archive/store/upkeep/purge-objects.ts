/**
 * `purge` of WARC files in a bucket (purge.ts; docs/scale-out.md "purge
 * with WARCs in a bucket"). Objects are never changed, so an object
 * holding erased records is replaced by a new one:
 *
 * 1. a marker object `<prefix>purge.pending.json` names each object to
 *    replace (`old`) and its replacement (`new`; none when nothing but
 *    its `warcinfo` is left);
 * 2. each replacement is uploaded: the kept records of the old object,
 *    byte for byte, streamed from one GET (a multipart upload when large),
 *    under the old name with a new random part (same folder, archive,
 *    time and serial: the same place in writing order);
 * 3. the index change is committed, one transaction for every object:
 *    the erased rows deleted, the others pointed at the replacement;
 * 4. the old objects are deleted; 5. the marker is deleted.
 *
 * A purge stopped before 3 leaves the index on the old objects and the
 * replacements unnamed; stopped after 3, the old objects unnamed (the
 * erased records still in them). The next `purge` reads the marker first
 * and finishes: the replacements deleted when the index still names an
 * old object, else the old objects.
 */
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import type { Log } from './maintenance.js';
import type { MementoIndex, RowChange } from '../index/memento-index.js';
import { type FilePlan, type PlannedRecord, type PurgeReport, count, rowChange } from './purge-plan.js';
import type { S3WarcStore } from '../warcs/s3-warcs.js';

/** The marker object's name after the prefix. */
export const PURGE_MARKER_OBJECT = 'purge.pending.json';

/** What the marker object holds. */
interface PendingPurge {
  objects: { old: string; new: string | null }[];
}

/** The name of the object replacing `file`: its random part (before `.warc.gz`) new. */
function replacementName(file: string): string {
  let name: string;
  do name = file.replace(/-[0-9a-f]+\.warc\.gz$/, `-${randomBytes(3).toString('hex')}.warc.gz`);
  while (name === file);
  return name;
}

/** The bytes of `source` (an object read from its start) within the kept records of `plan`, in order. */
async function* keptBytes(source: AsyncIterable<Buffer>, plan: PlannedRecord[]): AsyncGenerator<Buffer> {
  const kept = plan.filter((r) => !r.drop);
  let at = 0;
  let i = 0;
  for await (const chunk of source) {
    const end = at + chunk.length;
    while (i < kept.length && kept[i].offset < end) {
      const from = Math.max(kept[i].offset, at);
      const to = Math.min(kept[i].offset + kept[i].length, end);
      if (to > from) yield chunk.subarray(from - at, to - at);
      if (kept[i].offset + kept[i].length <= end) i++;
      else break;
    }
    at = end;
    if (i === kept.length) return;
  }
  if (i < kept.length) throw new Error(`the object ends inside the record at offset ${kept[i].offset}`);
}

/** New offset by old offset of the kept records of `plan`. */
function newOffsets(plan: PlannedRecord[]): Map<number, number> {
  const moved = new Map<number, number>();
  let pos = 0;
  for (const r of plan) {
    if (r.drop) continue;
    moved.set(r.offset, pos);
    pos += r.length;
  }
  return moved;
}

async function putMarker(s3: S3WarcStore, pending: PendingPurge): Promise<void> {
  await s3.client.send(
    new PutObjectCommand({ Bucket: s3.conf.bucket, Key: s3.key(PURGE_MARKER_OBJECT), Body: JSON.stringify(pending), ContentType: 'application/json' }),
  );
}

/**
 * Finishes a purge of objects that was stopped (the module comment): the
 * replacements deleted when the index still names an old object, else the
 * old objects; then the marker. Nothing when there is no marker.
 */
export async function finishPending(s3: S3WarcStore, index: MementoIndex, log: Log): Promise<void> {
  let pending: PendingPurge;
  try {
    const r = await s3.client.send(new GetObjectCommand({ Bucket: s3.conf.bucket, Key: s3.key(PURGE_MARKER_OBJECT) }));
    pending = JSON.parse(await r.Body!.transformToString()) as PendingPurge;
  } catch (err) {
    if ((err as Error).name === 'NoSuchKey') return;
    throw err;
  }
  let committed = true;
  for (const o of pending.objects) if ((await index.rowsOfFile(o.old)).length) committed = false;
  const gone = committed ? pending.objects.map((o) => o.old) : pending.objects.flatMap((o) => (o.new ? [o.new] : []));
  for (const f of gone) await s3.remove(f);
  await s3.remove(PURGE_MARKER_OBJECT);
  log(
    `purge: ${s3.location}${PURGE_MARKER_OBJECT}: a previous purge did not finish; ${committed ? 'its index change was committed: the old objects are deleted' : 'its index change was not committed: its new objects are deleted'} (${gone.length})`,
  );
}

/** Replaces each object of `plans` (the module comment), the index following in one transaction. */
export async function purgeObjects(s3: S3WarcStore, index: MementoIndex, plans: FilePlan[], report: PurgeReport, log: Log): Promise<void> {
  if (!plans.length) return;
  const pending: PendingPurge = { objects: plans.map((p) => ({ old: p.file, new: p.empty ? null : replacementName(p.file) })) };
  await putMarker(s3, pending);
  const change: { drop: number[]; move: RowChange['move'][number][]; at: number } = { drop: [], move: [], at: report.at };
  for (const [i, { file, size, records, empty }] of plans.entries()) {
    const to = pending.objects[i].new;
    if (to) {
      const body = await s3.stream(file, 0, size);
      try {
        await s3.putStream(to, Readable.from(keptBytes(body as AsyncIterable<Buffer>, records)));
      } finally {
        body.destroy();
      }
    }
    const c = await rowChange(index, file, to ?? file, records, newOffsets(records), empty, report.at);
    change.drop.push(...c.drop);
    change.move.push(...c.move);
  }
  count(report, await index.rewriteRows(change));
  for (const [i, { file, size, records, empty }] of plans.entries()) {
    await s3.remove(file);
    const erased = records.filter((r) => r.drop).length;
    const after = empty ? 0 : records.filter((r) => !r.drop).reduce((n, r) => n + r.length, 0);
    log(
      `purge: ${file}: ${erased} record(s) erased, ${size} → ${after} bytes${empty ? ' (nothing but warcinfo left: deleted)' : `, now ${pending.objects[i].new}`}`,
    );
  }
  await s3.remove(PURGE_MARKER_OBJECT);
}
