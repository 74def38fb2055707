/**
 * What a `purge` works with (purge.ts, and purge-objects.ts for a bucket):
 * the selection, the plan of each WARC file (which records go), the
 * report, and the index side: the rows a rewritten file's change deletes
 * and moves, and the rows of a selection, as
 * {@link MementoIndex.rewriteRows} takes them.
 */
import { foldedKeysNamed, type UrlPattern } from '../../read/access-rules.js';
import type { MementoIndex, RowChange } from '../index/memento-index.js';

/** What to erase: the captures of a URL (or under a URL prefix), optionally only those `before` / `after` an instant. */
export interface PurgeSelection {
  /** archive/read/access-rules.ts `urlPattern` of `--url URL` or `--prefix URL*`. */
  pattern: UrlPattern;
  /** Only captures earlier than this (epoch s). */
  before?: number;
  /** Only captures at or after this (epoch s). */
  after?: number;
}

/** One capture erased (or, in a dry run, to be erased): its response (or revisit) record. */
export interface PurgedCapture {
  file: string;
  uriR: string;
  /** WARC-Date, epoch seconds. */
  datetime: number;
  /** A revisit erased because its original was: the original's URI-R and datetime (epoch s). */
  revisitOf?: { uriR: string; datetime: number };
}

/** What a purge did (or, in a dry run, would do). */
export interface PurgeReport {
  /** The response (and revisit, resource) records erased: one per capture. */
  captures: PurgedCapture[];
  /** Every record erased, request records included. */
  records: number;
  /** Index rows deleted. */
  rows: number;
  /** WARC files written again without the records, and those removed because nothing but their warcinfo was left. */
  rewritten: string[];
  removed: string[];
  /** Bytes of the WARC files touched, before and after. */
  bytesBefore: number;
  bytesAfter: number;
  /** A previous purge had not finished: the index was rebuilt first. */
  reindexed: boolean;
  /** Purge entries appended to the evidence log (one per removed capture entry; docs/evidence.md). */
  logEntries: number;
  /** When the purge began (epoch ms): the date of its purge entries. */
  at: number;
}

/** Adds what one {@link MementoIndex.rewriteRows} did to `report`. */
export function count(report: PurgeReport, done: { deleted: number; logEntries: number }): void {
  report.rows += done.deleted;
  report.logEntries += done.logEntries;
}

/** A record of a file as the plan needs it: where it is and whether it goes. */
export interface PlannedRecord {
  offset: number;
  length: number;
  type: string;
  drop: boolean;
}

/** A file with records to erase, and what to do with it. */
export interface FilePlan {
  file: string;
  size: number;
  records: PlannedRecord[];
  /** Nothing but its warcinfo is left: the file is removed. */
  empty: boolean;
}

/**
 * The index change of one rewritten (or removed) file: its rows of erased
 * records (every row, when the file was removed) deleted, the others
 * moved to `newFile` (the same name, for a file rewritten in place) at
 * their new offsets; `at` is when the purge began (epoch ms).
 */
export async function rowChange(
  index: MementoIndex,
  file: string,
  newFile: string,
  plan: PlannedRecord[],
  moved: Map<number, number>,
  removed: boolean,
  at: number,
): Promise<RowChange> {
  const dropped = new Set(plan.filter((r) => r.drop).map((r) => r.offset));
  const change = { drop: [] as number[], move: [] as { id: number; warc_file: string; warc_offset: number }[], at };
  for (const row of await index.rowsOfFile(file)) {
    const to = moved.get(row.warc_offset);
    if (removed || dropped.has(row.warc_offset)) change.drop.push(row.id);
    else if (to !== undefined && (to !== row.warc_offset || newFile !== file)) change.move.push({ id: row.id, warc_file: newFile, warc_offset: to });
  }
  return change;
}

/**
 * The ids of the index rows of the selection (those left at a WARC file
 * that is missing, after the files are done): rows of its pattern, and of
 * the stored keys it names only with their encoded slashes read as `/`
 * (archive/read/access-rules.ts `foldedKeysNamed`), as purge.ts selects WARC records.
 */
export async function selectedRowIds(index: MementoIndex, sel: PurgeSelection): Promise<number[]> {
  const folded = await foldedKeysNamed(index, [sel.pattern]);
  const ids: number[] = [];
  for (const pattern of [sel.pattern, ...folded.map((f) => ({ key: f.urlkey, prefix: false }))]) {
    // One push per id: a selection may hold more ids than a call takes arguments.
    for (const id of await index.keys.rowIds(pattern, sel)) ids.push(id);
  }
  return ids;
}
