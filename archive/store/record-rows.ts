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
import type { NewMementoRow } from './index-db.js';
import type { MementoIndex } from './memento-index.js';
import { indexRow } from './index-row.js';
import type { ScannedRecord } from './warc-scan.js';
import { captureLeaf } from '../evidence/leaf.js';
import type { NewLeaf } from '../evidence/log.js';

/** The evidence log entry of the memento `row` read from `record` (its WARC-Record-ID and block digest as read); null for a record without an id. */
function leafOf(row: NewMementoRow, record: ScannedRecord): NewLeaf | null {
  const recordId = record.headers.get('warc-record-id');
  return recordId ? captureLeaf(row, { recordId, blockDigest: record.blockSha256 }) : null;
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
 * Collects rows from records and inserts them into `index` in order, in
 * batches of `batchSize`. A revisit first inserts the rows before it, then
 * finds its original ({@link MementoIndex.revisitOriginal}). One whose original
 * is not (yet) in the index waits for {@link finish}: its original may be
 * in a file read later (another archive's folder). Rows skipped are
 * reported through `skip`.
 */
export class RowWriter {
  private rows: NewMementoRow[] = [];
  private leaves: NewLeaf[] = [];
  /** Revisits whose original was not found when read: their row (without `refers_to`) and what they name. */
  private waiting: { row: NewMementoRow; named: { urlkey: string; datetime: number } | null; record: ScannedRecord; file: string }[] = [];
  /** Rows inserted so far. */
  inserted = 0;

  constructor(
    private readonly index: MementoIndex,
    private readonly skip: (line: string) => void,
    private readonly batchSize = 1000,
  ) {}

  /** Adds the row of `record` (a `response` or `revisit` record) and its `request` record. @throws as {@link rowFromRecords} */
  async add(archiveId: string, file: string, record: ScannedRecord, request: ScannedRecord | null): Promise<void> {
    const row = rowFromRecords(archiveId, file, record, request);
    if (record.type === 'revisit') {
      await this.flush();
      const named = namedOriginal(record);
      const id = await this.index.revisitOriginal(named, row);
      if (id === undefined) {
        this.waiting.push({ row, named, record, file });
        return;
      }
      row.refers_to = id;
    }
    this.push(row, record);
    if (this.rows.length >= this.batchSize) await this.flush();
  }

  private push(row: NewMementoRow, record: ScannedRecord): void {
    this.rows.push(row);
    const leaf = leafOf(row, record);
    if (leaf) this.leaves.push(leaf);
  }

  /** Inserts the rows collected so far and their log entries (one transaction). */
  async flush(): Promise<void> {
    if (!this.rows.length) return;
    const rows = this.rows;
    const leaves = this.leaves;
    this.rows = [];
    this.leaves = [];
    await this.index.insertMany(rows, { leaves, ifAbsent: true });
    this.inserted += rows.length;
  }

  /**
   * Inserts what is left: the rows collected, then each waiting revisit
   * whose original is now in the index; the others are reported and get
   * no row.
   */
  async finish(): Promise<void> {
    await this.flush();
    for (const { row, named, record, file } of this.waiting.splice(0)) {
      const id = await this.index.revisitOriginal(named, row);
      if (id === undefined) {
        const h = (k: string) => record.headers.get(k) ?? 'missing';
        this.skip(
          `${file}:${record.offset}: revisit record of ${row.uri_r} names no stored response (WARC-Refers-To-Target-URI ${h('warc-refers-to-target-uri')}, WARC-Refers-To-Date ${h('warc-refers-to-date')}, none of its payload digest before it); left out`,
        );
        continue;
      }
      row.refers_to = id;
      this.push(row, record);
    }
    await this.flush();
  }
}
