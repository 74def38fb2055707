/**
 * `verify`'s checks of the evidence log (docs/evidence.md "Verify"):
 * each capture entry against the WARC record it names (its WARC-Record-ID
 * and the SHA-256 of its block recomputed from the stored bytes, with the
 * memento's URI-R and datetime), each entry's leaf hash against its text,
 * each purge entry against the entry it names, each stored node against
 * its two children, and each kept signed tree head's root against the
 * tree and its signature against the key. Every problem is one line
 * naming the entry, node or head (and the record) that does not match.
 */
import { type CaptureLeaf, captureLeafText, parseCaptureLeaf } from './leaf.js';
import { type LeafRow, type LogStore, rootOf } from './log.js';
import { leafHash, nodeHash, type NodeKey } from './merkle.js';
import { headSignatureOk } from './tree-heads.js';

/** Rows read per query. */
const PAGE = 1000;

/** What a memento's own WARC record says, as the scan read it. */
export interface ReadRecord {
  /** The memento key of the index row that points at the record. */
  archive_id: string;
  urlkey: string;
  datetime: number;
  /** Where: `file:offset`. */
  where: string;
  /** The leaf fields the record calls for (URI-R of the row, 14-digit datetime, WARC-Record-ID, sha256 of the block as read). */
  expected: CaptureLeaf;
}

/** Counts of what the log checks looked at. */
export interface LogVerifyCounts {
  entries: number;
  nodes: number;
  heads: number;
}

/** The entry text `l` calls for, or why none can be made (a record that lacks a field its entry needs). */
function textOf(l: CaptureLeaf): string {
  try {
    return captureLeafText(l);
  } catch (err) {
    return `(no entry can be made of the record: ${(err as Error).message})`;
  }
}

/**
 * Checks capture entries against the records the WARC scan read, a file
 * at a time ({@link check}), and then ({@link finish}) that every capture
 * entry still holding its text was matched by a record. A memento row
 * without an entry is a problem when it was indexed while the log was
 * kept: when a record before it (in its archive's writing order) has an
 * entry, or its Memento-Datetime is after the log was begun (the log's
 * first signed tree head); the others (indexed before the log was kept)
 * are counted in {@link unlogged}.
 */
export class LeafRecordCheck {
  /** Rows without an entry indexed before the log was kept. */
  unlogged = 0;
  /** Per archive: a record with an entry has been read. */
  private readonly logSeen = new Set<string>();
  /** Per archive, when its log was begun (its first kept head's timestamp, ms). */
  private readonly starts = new Map<string, number>();
  /** Per archive, the leaf indexes matched by a record. */
  private readonly matched = new Map<string, Set<number>>();
  /** Per archive, the log's size when the check began ({@link snapshot}). */
  private readonly sizes = new Map<string, number>();

  constructor(
    private readonly log: LogStore,
    private readonly problem: (line: string) => void,
  ) {}

  /**
   * Notes each log's size; call before the WARC files are listed, so that
   * {@link finish} looks for the records of those entries only (a daemon
   * running beside `verify` commits more, in files the scan may not see).
   */
  async snapshot(): Promise<void> {
    for (const archive of await this.log.archives()) {
      this.sizes.set(archive, await this.log.size(archive));
      const first = await this.log.firstHead(archive);
      if (first) this.starts.set(archive, first.timestamp);
    }
  }

  /** Checks the entries of the mementos whose records are `records` (one WARC file's). */
  async check(records: readonly ReadRecord[]): Promise<void> {
    for (let from = 0; from < records.length; from += PAGE) {
      const part = records.slice(from, from + PAGE);
      const archive = part[0].archive_id;
      const leaves = await this.log.leavesOf(archive, part);
      const byKey = new Map(leaves.map((l) => [`${l.urlkey} ${l.datetime}`, l]));
      let seen = this.matched.get(archive);
      if (!seen) this.matched.set(archive, (seen = new Set()));
      for (const r of part) {
        const leaf = byKey.get(`${r.urlkey} ${r.datetime}`);
        if (!leaf) {
          this.noEntry(r);
          continue;
        }
        this.logSeen.add(archive);
        seen.add(leaf.leaf_index);
        const want = textOf(r.expected);
        if (leaf.leaf_text !== want)
          this.problem(
            `log ${archive} entry ${leaf.leaf_index} (${r.expected.uri} ${r.expected.datetime}) does not match its WARC record at ${r.where}: ` +
              `the entry says ${JSON.stringify(leaf.leaf_text)}, the record ${JSON.stringify(want)}`,
          );
      }
    }
  }

  /** A row without an entry: a problem when indexed while the log was kept (see the class comment), else counted. */
  private noEntry(r: ReadRecord): void {
    const start = this.starts.get(r.archive_id);
    const after = start !== undefined && r.datetime * 1000 >= start;
    if (!this.logSeen.has(r.archive_id) && !after) {
      this.unlogged++;
      return;
    }
    const why = this.logSeen.has(r.archive_id)
      ? 'though records written before it have theirs'
      : `though it is dated after the log was begun (${new Date(start!).toISOString()})`;
    this.problem(
      `${r.where}: the memento of ${r.expected.uri} at ${r.expected.datetime} has no entry in the evidence log of archive ${r.archive_id}, ${why}: ` +
        'its entry is missing (the log was cut back, or the entry deleted)',
    );
  }

  /** Every capture entry with its text that no record matched: its record is gone or damaged. */
  async finish(): Promise<void> {
    for (const [archive, size] of this.sizes) {
      const seen = this.matched.get(archive) ?? new Set<number>();
      for (let from = 0; from < size; from += PAGE) {
        const page = await this.log.leaves(archive, from, Math.min(PAGE, size - from));
        for (const l of page) {
          if (l.kind !== 'capture' || l.leaf_text === null || seen.has(l.leaf_index)) continue;
          const f = parseCaptureLeaf(l.leaf_text);
          this.problem(`log ${archive} entry ${l.leaf_index} (${f?.uri} ${f?.datetime}, record ${f?.record_id}) names no complete WARC record that matches it`);
        }
        if (page.length < Math.min(PAGE, size - from)) break;
      }
    }
  }
}

/** Checks one entry's hash against its text, and a purge entry against the entry it names. */
async function checkEntry(log: LogStore, l: LeafRow, problem: (line: string) => void): Promise<void> {
  const name = `log ${l.archive_id} entry ${l.leaf_index}`;
  if (l.leaf_text === null) {
    if (l.kind !== 'capture') problem(`${name}: a ${l.kind} entry without its text`);
    return;
  }
  if (!leafHash(l.leaf_text).equals(l.leaf_hash)) problem(`${name}: its leaf hash is not SHA-256(0x00 ‖ its text)`);
  if (l.kind !== 'purge') return;
  const [, , index, hash] = l.leaf_text.split('\n');
  const [named] = await log.leaves(l.archive_id, Number(index), 1);
  if (!named || named.leaf_index !== Number(index) || named.leaf_hash.toString('base64') !== hash)
    problem(`${name}: purge entry names entry ${index} with a leaf hash the log does not hold there`);
  else if (named.leaf_text !== null) problem(`${name}: purge entry names entry ${index}, which still holds its text`);
}

/**
 * Checks the log tables of every archive: entries (hash, purge entries),
 * stored nodes against their children, kept tree heads against the tree
 * and, with `publicKeyDer`, their signatures (`null`: there is no key,
 * each head is a problem; `undefined`: signatures are not checked).
 */
export async function verifyLogTables(log: LogStore, publicKeyDer: Buffer | null | undefined, problem: (line: string) => void): Promise<LogVerifyCounts> {
  const counts: LogVerifyCounts = { entries: 0, nodes: 0, heads: 0 };
  for (const archive of await log.archives()) {
    let next = 0;
    // Capture entries whose text is erased, and the entries purge entries name: a removal must be recorded.
    const erased: number[] = [];
    const named = new Set<number>();
    for (let from = 0; ; from += PAGE) {
      const page = await log.leaves(archive, from, PAGE);
      for (const l of page) {
        if (l.leaf_index !== next) problem(`log ${archive}: entry ${next} is missing`);
        next = l.leaf_index + 1;
        counts.entries++;
        if (l.kind === 'capture' && l.leaf_text === null) erased.push(l.leaf_index);
        if (l.kind === 'purge' && l.leaf_text !== null) named.add(Number(l.leaf_text.split('\n')[2]));
        await checkEntry(log, l, problem);
      }
      if (page.length < PAGE) break;
    }
    for (const i of erased)
      if (!named.has(i)) problem(`log ${archive} entry ${i}: its text is erased, but no purge entry names it (a removal the log does not record)`);
    let after: NodeKey = { level: 0, index: -1 };
    for (;;) {
      const page = await log.storedNodes(archive, after, PAGE);
      if (!page.length) break;
      const kids = await log
        .nodes(
          archive,
          page.flatMap((n) => [
            { level: n.level - 1, index: 2 * n.index },
            { level: n.level - 1, index: 2 * n.index + 1 },
          ]),
        )
        .catch((err: Error) => {
          problem(`log ${archive}: ${err.message}`);
          return null;
        });
      for (const [i, n] of page.entries()) {
        counts.nodes++;
        if (kids && !nodeHash(kids[2 * i], kids[2 * i + 1]).equals(n.hash))
          problem(
            `log ${archive} node ${n.level}/${n.index} (entries ${n.index * 2 ** n.level}…${(n.index + 1) * 2 ** n.level - 1}) is not the hash of its children`,
          );
      }
      after = page[page.length - 1];
    }
    for (const h of await log.heads(archive)) {
      counts.heads++;
      const name = `log ${archive} signed tree head of size ${h.tree_size}`;
      const root = await rootOf(log, archive, h.tree_size).catch((err: Error) => {
        problem(`${name}: ${err.message}`);
        return null;
      });
      if (root && !root.equals(h.root_hash)) problem(`${name}: its root hash is not the root of the log's first ${h.tree_size} entries`);
      if (publicKeyDer === undefined) continue;
      if (publicKeyDer === null) problem(`${name}: no signing key file to check its signature with`);
      else if (!headSignatureOk(h, publicKeyDer)) problem(`${name}: its signature does not verify with the archive's signing key`);
    }
  }
  return counts;
}
