/**
 * Index rows from WARC records read back (crash recovery and `reindex`,
 * maintenance.ts): a `response` or `revisit` record, with the `request`
 * record written after it, becomes the row ingest made for it (through the
 * one row builder, index-row.ts), and the rows go into the index in
 * writing order. A revisit's `refers_to` (the row of the memento holding
 * its payload) is resolved against the index as it stands with every
 * earlier row inserted. Each row's evidence log entry is appended with it,
 * unless the log has one for that memento already (archive/evidence/log.ts). docs/storage.md "Revisits".
 */
import { parseHead, parseStatusLine } from '#shared/http-head.js';
import { exactUrlkey } from '#shared/uri.js';
import type { NewMementoRow } from '../index/index-db.js';
import type { MementoIndex } from '../index/memento-index.js';
import { indexRow } from '../index/index-row.js';
import type { ScannedRecord } from '../warcs/warc-scan.js';
import { captureLeaf, leafOfRecord } from '../../evidence/leaf.js';
import { keyText, type LogStore, type NewLeaf } from '../../evidence/log.js';
import { toTimestamp14 } from '#shared/http-date.js';

/**
 * The evidence log entry of the memento `row` read from `record`, as the
 * record calls for it (leaf.ts `leafOfRecord`: its WARC-Record-ID and
 * block digest as read, and in the second form how it came in and a
 * revisit's original).
 * @throws Error when the record lacks what its entry needs (a record id; a revisit's WARC-Refers-To)
 */
export function leafOf(row: NewMementoRow, record: ScannedRecord): NewLeaf {
  const fields = leafOfRecord(row.uri_r, row.datetime, { type: record.type, field: (name) => record.headers.get(name), blockDigest: record.blockSha256 });
  const { uri: _u, datetime: _d, ...rest } = fields;
  return captureLeaf(row, rest);
}

/**
 * The index row of a response or revisit record (and the request record
 * written with it, for `X-Client-IP`), as ingest would have made it
 * (index-row.ts); a revisit's `refers_to` is left `null` for
 * {@link RowWriter} to resolve.
 *
 * @throws Error when the record has no target URI, date or status line.
 */
export function rowFromRecords(archiveId: string, file: string, record: ScannedRecord, request: ScannedRecord | null): NewMementoRow {
  const uriR = record.headers.get('warc-target-uri') ?? '';
  const date = Date.parse(record.headers.get('warc-date') ?? '');
  const head = record.httpHead ? parseHead(record.httpHead) : null;
  const status = head && parseStatusLine(head.startLine);
  if (!uriR || Number.isNaN(date) || !head || !status)
    throw new Error(`${record.type} record at ${file}:${record.offset} lacks a target URI, date or status line`);
  return indexRow({
    archiveId,
    uriR,
    datetime: Math.floor(date / 1000),
    status: status.status,
    responseHeaders: head.fields,
    requestHeaders: request?.httpHead ? parseHead(request.httpHead).fields : null,
    digest: record.headers.get('warc-payload-digest') ?? record.payloadDigest ?? '',
    warc: { file, offset: record.offset, length: record.length },
  });
}

/**
 * The memento a revisit record names as its original: the urlkey of its
 * `WARC-Refers-To-Target-URI` and the datetime of its `WARC-Refers-To-Date`
 * (epoch s); `null` when either is missing or unreadable.
 */
function namedOriginal(record: ScannedRecord): { urlkey: string; datetime: number } | null {
  const uri = record.headers.get('warc-refers-to-target-uri');
  const date = Date.parse(record.headers.get('warc-refers-to-date') ?? '');
  if (!uri || Number.isNaN(date)) return null;
  try {
    return { urlkey: exactUrlkey(uri), datetime: Math.floor(date / 1000) };
  } catch {
    return null;
  }
}

/**
 * The rule of `reindex` for a record whose memento has no entry in the
 * evidence log (docs/evidence.md "Verify", "reindex"): the log as it
 * stood when the rebuild began is `log` (the index's own, or, on
 * PostgreSQL, the shared database's). Per archive, in writing order, a
 * record before the first one whose memento has an entry was written
 * before the log was kept: it gets its row and an entry, appended now. A
 * record after it without an entry was written while the log was kept but
 * never committed (a daemon stopped between its write and its commit) —
 * or its row and entry were deleted: it gets no row (it is never
 * published without an entry), is reported, and `verify` lists it.
 */
export interface LogGate {
  /** The log before the rebuild appended to it. */
  log: Pick<LogStore, 'leavesOf'>;
}

/** A row collected for the next batch, with its record; `preLog`: decided already (a waiting revisit: as when it was read). */
interface Collected {
  row: NewMementoRow;
  record: ScannedRecord;
  file: string;
  preLog?: boolean;
}

/**
 * Collects rows from records and inserts them into `index` in order, in
 * batches of `batchSize`. A revisit first inserts the rows before it, then
 * finds its original ({@link MementoIndex.revisitOriginal}). One whose original
 * is not (yet) in the index waits for {@link finish}: its original may be
 * in a file read later (another archive's folder). Rows skipped are
 * reported through `skip`. Each row's evidence log entry is appended with
 * it, unless the log has one for its memento already; with a `gate`
 * (reindex), a row without an entry only as {@link LogGate} says.
 */
export class RowWriter {
  private batch: Collected[] = [];
  /** Revisits whose original was not found when read: their row (without `refers_to`) and what they name. */
  private waiting: { c: Collected; named: { urlkey: string; datetime: number } | null }[] = [];
  /** Per archive, with a gate: a record whose memento has an entry has been read (every later one must have its own). */
  private readonly logSeen = new Set<string>();
  /** Rows inserted so far. */
  inserted = 0;
  /** With a gate: records left out because their memento has no entry though written while the log was kept. */
  unlogged = 0;

  constructor(
    private readonly index: MementoIndex,
    private readonly skip: (line: string) => void,
    private readonly batchSize = 1000,
    private readonly gate?: LogGate,
  ) {}

  /**
   * Adds the row of `record` (a `response` or `revisit` record) and its
   * `request` record. A revisit whose original is not in the index yet
   * waits for {@link finish} — or, with `opts.inOrder`, is not taken at
   * all: `false` is returned, and the caller reads another archive's files
   * first and offers it again, so that every archive's rows and log
   * entries go in in the order of its WARC files (reindex-read.ts).
   * @returns whether the record was taken
   * @throws as {@link rowFromRecords}
   */
  async add(archiveId: string, file: string, record: ScannedRecord, request: ScannedRecord | null, opts: { inOrder?: boolean } = {}): Promise<boolean> {
    const row = rowFromRecords(archiveId, file, record, request);
    if (record.type === 'revisit') {
      await this.flush();
      const named = namedOriginal(record);
      const id = await this.index.revisitOriginal(named, row);
      if (id === undefined) {
        if (opts.inOrder) return false;
        this.waiting.push({ c: { row, record, file, preLog: !this.logSeen.has(archiveId) }, named });
        return true;
      }
      row.refers_to = id;
    }
    this.batch.push({ row, record, file });
    if (this.batch.length >= this.batchSize) await this.flush();
    return true;
  }

  /** Inserts the rows collected so far and their log entries (one transaction). */
  async flush(): Promise<void> {
    if (!this.batch.length) return;
    const batch = this.batch;
    this.batch = [];
    const logged = this.gate ? await this.loggedKeys(batch) : null;
    const rows: NewMementoRow[] = [];
    const leaves: NewLeaf[] = [];
    for (const c of batch) {
      const { row, record, file } = c;
      if (logged?.has(keyText(row))) {
        this.logSeen.add(row.archive_id);
        rows.push(row);
        continue;
      }
      if (logged && !(c.preLog ?? !this.logSeen.has(row.archive_id))) {
        this.unlogged++;
        this.skip(
          `${file}:${record.offset}: ${record.type} record of ${row.uri_r} at ${toTimestamp14(row.datetime)} has no entry in the evidence log, though records written before it have theirs ` +
            '(a capture never acknowledged — a daemon stopped between its write and its commit —, or its row and entry were deleted); not published, verify lists it',
        );
        continue;
      }
      let leaf: NewLeaf;
      try {
        leaf = leafOf(row, record);
      } catch (err) {
        this.skip(
          `${file}:${record.offset}: ${record.type} record of ${row.uri_r}: ${(err as Error).message}; left out (no row without an entry in the evidence log)`,
        );
        continue;
      }
      rows.push(row);
      leaves.push(leaf);
    }
    if (!rows.length) return;
    await this.index.insertMany(rows, { leaves, ifAbsent: true });
    this.inserted += rows.length;
  }

  /** Of the batch's memento keys, those with a capture entry in the gate's log (`<urlkey> <datetime>`). */
  private async loggedKeys(batch: Collected[]): Promise<Set<string>> {
    const byArchive = new Map<string, { urlkey: string; datetime: number }[]>();
    for (const { row } of batch) byArchive.set(row.archive_id, [...(byArchive.get(row.archive_id) ?? []), { urlkey: row.urlkey, datetime: row.datetime }]);
    const out = new Set<string>();
    for (const [archive, keys] of byArchive)
      for (const l of await this.gate!.log.leavesOf(archive, keys)) if (l.leaf_text !== null) out.add(keyText({ urlkey: l.urlkey!, datetime: l.datetime! }));
    return out;
  }

  /**
   * Inserts what is left: the rows collected, then each waiting revisit
   * whose original is now in the index; the others are reported and get
   * no row.
   */
  async finish(): Promise<void> {
    await this.flush();
    for (const { c, named } of this.waiting.splice(0)) {
      const { row, record, file } = c;
      const id = await this.index.revisitOriginal(named, row);
      if (id === undefined) {
        const h = (k: string) => record.headers.get(k) ?? 'missing';
        this.skip(
          `${file}:${record.offset}: revisit record of ${row.uri_r} names no stored response (WARC-Refers-To-Target-URI ${h('warc-refers-to-target-uri')}, WARC-Refers-To-Date ${h('warc-refers-to-date')}, none of its payload digest before it); left out`,
        );
        continue;
      }
      row.refers_to = id;
      this.batch.push(c);
    }
    await this.flush();
  }
}
