/**
 * The receipts of a WACZ package's captures (docs/evidence.md "WACZ
 * packages"): `receipts/receipts.jsonl`, one line per memento whose entry
 * a published checkpoint of its archive's log covers, with the receipt
 * `GET /<id>/receipt/<ts>/<url>` would give (C2SP tlog-proof), so that
 * each capture in the package can be checked offline with the log's key
 * alone (`memento-archive verify-receipt`). Per archive, the newest
 * checkpoint published when the package meets its first memento is used
 * for all of them.
 */
import { toTimestamp14 } from '#shared/http-date.js';
import { timestampKeyName } from '../evidence/checkpoint.js';
import type { CheckpointRow, LogStore } from '../evidence/log.js';
import { receiptOf } from '../evidence/receipt.js';
import type { MementoRow } from '../store/index/index-db.js';

/** A line of receipts/receipts.jsonl. */
export interface ReceiptLine {
  archive: string;
  /** The URI-R. */
  uri: string;
  /** The Memento-Datetime, 14 digits. */
  datetime: string;
  leaf_index: number;
  /** The receipt's text. */
  receipt: string;
}

/** Makes the receipts of a package's mementos. */
export class PackageReceipts {
  private readonly checkpoints = new Map<string, CheckpointRow | null>();

  /** @param tsaUrl the archive's `tsa_url` (names the time-stamp lines) */
  constructor(
    private readonly log: LogStore,
    private readonly tsaUrl?: string,
  ) {}

  /** The receipt line of `row`; `undefined` when it has no entry, or no published checkpoint covers it. */
  async line(row: MementoRow): Promise<ReceiptLine | undefined> {
    let c = this.checkpoints.get(row.archive_id);
    if (c === undefined) this.checkpoints.set(row.archive_id, (c = (await this.log.checkpoint(row.archive_id)) ?? null));
    if (!c) return undefined;
    const leaf = await this.log.leafOf(row.archive_id, row.urlkey, row.datetime);
    const receipt = leaf && (await receiptOf(this.log, leaf, c, timestampKeyName(this.tsaUrl)));
    if (!leaf || !receipt) return undefined;
    return { archive: row.archive_id, uri: row.uri_r, datetime: toTimestamp14(row.datetime), leaf_index: leaf.leaf_index, receipt };
  }
}
