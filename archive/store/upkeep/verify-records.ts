/**
 * `verify`'s checks of one memento record against what the index says of
 * it (maintenance.ts `verify`, docs/evidence.md "Verify"):
 *
 * - an index row against its record: the row's status, media type and
 *   urlkey are those the record calls for (index-row.ts, as ingest made
 *   them), so a row rewritten to another status or type, or moved under
 *   another urlkey, is named;
 * - a revisit row against its original: the row it refers to is a
 *   response whose record is the one the revisit record names (its
 *   `WARC-Refers-To` record id — which the revisit's evidence log entry
 *   binds —, `WARC-Refers-To-Target-URI` and `-Date`) with the payload
 *   digest it states;
 * - a record without a row: explained when a memento of its urlkey is
 *   indexed at the same second (a same-second capture that superseded it,
 *   or, on replicas, one that won the race for the key); otherwise it is
 *   an orphan — a capture never acknowledged, or one whose row (and
 *   entry) were deleted.
 */
import { exactUrlkey } from '#shared/uri.js';
import { digestRecord } from '../../evidence/record-digest.js';
import type { MementoRow } from '../index/memento-row.js';
import type { MementoIndex } from '../index/memento-index.js';
import { rowFromRecords } from './record-rows.js';
import type { ScannedRecord } from '../warcs/warc-scan.js';
import type { WarcStore } from '../warcs/warc-store.js';

/** Most originals' record ids kept while verifying (revisits of one page repeat one original). */
const MAX_IDS = 10_000;

/** See the module comment. */
export class RecordChecks {
  /** Originals' `WARC-Record-ID` by row id, as read. */
  private readonly ids = new Map<number, string | Error>();

  constructor(
    private readonly index: MementoIndex,
    private readonly warcs: WarcStore,
  ) {}

  /** What is wrong with `row`'s status, media type or urlkey for its record `r` of `file`, one line each. */
  rowFields(file: string, r: ScannedRecord, row: MementoRow): string[] {
    let want;
    try {
      want = rowFromRecords(row.archive_id, file, r, null);
    } catch (err) {
      return [(err as Error).message];
    }
    const out: string[] = [];
    if (want.status !== row.status) out.push(`index status ${row.status}, the record's ${want.status}`);
    if (want.mime !== row.mime) out.push(`index media type ${JSON.stringify(row.mime)}, the record's ${JSON.stringify(want.mime)}`);
    if (want.urlkey !== row.urlkey) out.push(`index urlkey ${JSON.stringify(row.urlkey)}, the record's ${JSON.stringify(want.urlkey)}`);
    return out;
  }

  /**
   * What is wrong with the index row `row` of the response or revisit
   * record `r`, as a revisit (see the module comment); a response row
   * refers to nothing. `undefined` when it is right.
   */
  async revisit(r: ScannedRecord, row: MementoRow): Promise<string | undefined> {
    if (r.type === 'response') return row.refers_to === null ? undefined : `a response record, but its index row refers to row ${row.refers_to}`;
    if (row.refers_to === null) return 'a revisit record, but its index row refers to no original';
    const original = await this.index.byId(row.refers_to);
    if (!original) return `revisit of row ${row.refers_to}, which is missing from the index (its payload is gone)`;
    if (original.refers_to !== null) return `revisit of row ${row.refers_to}, which is itself a revisit`;
    const stated = r.headers.get('warc-payload-digest');
    if (stated !== original.digest) return `revisit record's WARC-Payload-Digest ${stated} differs from its original's ${original.digest} (row ${original.id})`;
    const named = r.headers.get('warc-refers-to-target-uri');
    const date = Math.floor(Date.parse(r.headers.get('warc-refers-to-date') ?? '') / 1000);
    if (named !== original.uri_r || date !== original.datetime)
      return `revisit record names ${named} at ${r.headers.get('warc-refers-to-date')} (WARC-Refers-To-Target-URI, -Date), but its index row refers to ${original.uri_r} at ${new Date(original.datetime * 1000).toISOString()} (row ${original.id})`;
    const refersTo = r.headers.get('warc-refers-to');
    if (refersTo === undefined) return undefined; // written before revisit records named their original's record id
    const id = await this.recordIdOf(original);
    if (id instanceof Error) return `its original (row ${original.id}) has no readable record: ${id.message}`;
    if (id !== refersTo)
      return `revisit record's WARC-Refers-To ${refersTo} is not the record of the memento its index row refers to (row ${original.id}, record ${id})`;
    return undefined;
  }

  /** The `WARC-Record-ID` of `row`'s record (its header read), or why it cannot be read. */
  private async recordIdOf(row: MementoRow): Promise<string | Error> {
    let id = this.ids.get(row.id);
    if (id === undefined) {
      id = await digestRecord(this.warcs, row.warc_file, row.warc_offset, row.warc_length, { headOnly: true }).then(
        (h) => (h.type === 'response' ? (h.field('warc-record-id') ?? new Error('no WARC-Record-ID')) : new Error(`a ${h.type} record, not a response`)),
        (err: Error) => err,
      );
      if (this.ids.size >= MAX_IDS) this.ids.clear();
      this.ids.set(row.id, id);
    }
    return id;
  }

  /**
   * Whether a memento record of `archiveId` that no row names is explained
   * by a same-second memento of its urlkey in the index (module comment).
   */
  async superseded(archiveId: string, r: ScannedRecord): Promise<boolean> {
    const uri = r.headers.get('warc-target-uri');
    const t = Math.floor(Date.parse(r.headers.get('warc-date') ?? '') / 1000);
    if (!uri || Number.isNaN(t)) return false;
    let urlkey: string;
    try {
      urlkey = exactUrlkey(uri);
    } catch {
      return false;
    }
    return (await this.index.rowAt(archiveId, urlkey, t)) !== undefined;
  }
}
