/**
 * How `reindex` (maintenance.ts) reads the WARC files: each archive's
 * files in writing order (file serial, then offset), every complete
 * response or revisit record handed, with the request record written after
 * it, to the row writer (record-rows.ts) in that order — so that each
 * archive's rows, and the evidence log entries made for mementos that have
 * none, follow the order of its files, which is the order ingest committed
 * them in. A log rebuilt so (an index lost with its log; an archive indexed
 * before the log was kept) then has the entries, and so the roots, of the
 * log as it was (docs/evidence.md "Storage").
 *
 * A revisit whose original is in another archive's files not read yet (the
 * folder of an archive holding revisits of an earlier archive's captures
 * may be listed first) stops the reading of its archive at that record; the
 * other archives are read on, and it is offered again after each round in
 * which one of them moved. Only when no archive can move (an original
 * stored after its revisit, or nowhere) does the first stopped record go to
 * the row writer's waiting list (inserted at the end, out of order, or
 * reported), and its archive reads on. What is held meanwhile is one
 * position per archive: a stopped record is read again from its file.
 */
import type { RowWriter } from './record-rows.js';
import type { ScannedRecord } from '../warcs/warc-scan.js';
import type { WarcStore } from '../warcs/warc-store.js';

/** A record that is a memento of its own: a `response`, or a `revisit` (its payload another memento's). */
export function isMemento(r: ScannedRecord): boolean {
  return r.type === 'response' || r.type === 'revisit';
}

/** True when `req` is the request record written with `res` (WARC-Concurrent-To). */
export function pairs(res: ScannedRecord, req: ScannedRecord): boolean {
  return req.type === 'request' && req.headers.get('warc-concurrent-to') === res.headers.get('warc-record-id');
}

/** Whether the block and payload digests a record states (if any) match what was read. */
export function digestsOk(r: ScannedRecord): boolean {
  return r.blockDigestOk !== false && r.payloadDigestOk !== false;
}

/** Where the reading of one archive's files stands. */
interface Cursor {
  archiveId: string;
  files: { file: string; size: number }[];
  /** The file being read (index into `files`). */
  fi: number;
  /** The offset to read on from in that file: 0, or a record that had to wait. */
  at: number;
  /** The end of the last record of that file counted (a stopped record is read twice, counted once). */
  counted: number;
}

/**
 * Reads every archive's WARC files of `byArchive` (archive id → files in
 * writing order, warc-store.ts `list`) into `rows`, in the order the module
 * comment gives. Records read go to `report.records`; damaged, partial and
 * unreadable records are listed in `report.skipped` (a damaged or partial
 * member ends the reading of its file); `progress` gets bytes read and in all.
 */
export async function readArchivesInOrder(
  warcs: WarcStore,
  byArchive: Map<string, { file: string; size: number }[]>,
  rows: RowWriter,
  report: { records: number; skipped: string[] },
  progress?: (done: number, total: number) => void,
): Promise<void> {
  let total = 0;
  for (const f of [...byArchive.values()].flat()) total += f.size;
  let finished = 0;

  /** Reads `c` on until its files end or a revisit must wait for another archive; with `force`, the first record offered is taken whatever its original. */
  const readOn = async (c: Cursor, force: boolean): Promise<void> => {
    for (; c.fi < c.files.length; c.fi++, c.at = 0, c.counted = 0) {
      const { file, size } = c.files[c.fi];
      const take = async (rec: ScannedRecord, req: ScannedRecord | null): Promise<boolean> => {
        try {
          if (!(await rows.add(c.archiveId, file, rec, req, { inOrder: !force }))) return false;
        } catch (err) {
          report.skipped.push((err as Error).message);
        }
        force = false;
        return true;
      };
      let pending: ScannedRecord | null = null;
      for await (const item of warcs.scan(file, c.at)) {
        if (item.kind !== 'record') {
          pending = null;
          report.skipped.push(`${file}: ${item.kind} record at offset ${item.offset}: ${item.reason}; the rest of the file is not read`);
          break;
        }
        const r = item.record;
        if (r.offset >= c.counted) {
          report.records++;
          c.counted = r.offset + r.length;
        }
        progress?.(finished + r.offset + r.length, total);
        if (pending) {
          const req = pairs(pending, r) ? r : null;
          if (!(await take(pending, req))) {
            c.at = pending.offset;
            return;
          }
          pending = null;
          if (req) continue;
        }
        if (!isMemento(r)) continue;
        if (digestsOk(r)) pending = r;
        else report.skipped.push(`${file}:${r.offset}: ${r.type} record does not match its digest; left out`);
      }
      if (pending && !(await take(pending, null))) {
        c.at = pending.offset;
        return;
      }
      finished += size;
    }
  };

  let open: Cursor[] = [...byArchive].map(([archiveId, files]) => ({ archiveId, files, fi: 0, at: 0, counted: 0 }));
  while (open.length) {
    let moved = false;
    for (const c of open) {
      const from = [c.fi, c.at].join();
      await readOn(c, false);
      if ([c.fi, c.at].join() !== from) moved = true;
    }
    open = open.filter((c) => c.fi < c.files.length);
    if (!moved && open.length) await readOn(open[0], true);
  }
}
