/**
 * A capture's receipt (docs/evidence.md "Receipts"): a C2SP tlog-proof
 * that the capture's entry is in the archive's log, checkable offline
 * with the log's public key alone:
 *
 *   c2sp.org/tlog-proof@v1
 *   extra <base64 of the entry's text (the leaf)>
 *   index <leaf index>
 *   <inclusion proof: one base64 hash per line, from the leaf's sibling up>
 *   (blank line)
 *   <the published checkpoint: text, the log's signature, the witnesses'
 *    cosignatures, and, with tsa_url, the time-stamp line (checkpoint.ts)>
 *
 * Everything read here is hostile input: bounded, refused with one line.
 */
import { OperatorError } from '#shared/operator-error.js';
import { leafHash } from './merkle.js';
import { readCheckpoint, timestampLine, timestampsOf } from './checkpoint.js';
import { type CheckpointRow, inclusionOf, type LeafRow, type LogStore } from './log.js';
import { type Checkpoint, MAX_NOTE_BYTES, type Note, SignedNoteError, type VerifierKey, verifyNote } from './signed-note.js';

/** The first line of a receipt. */
export const RECEIPT_HEADER = 'c2sp.org/tlog-proof@v1';
/** The most bytes a receipt may have: a checkpoint note and 64 hashes. */
export const MAX_RECEIPT_BYTES = MAX_NOTE_BYTES + 8 * 1024;

/** A receipt, read. */
export interface Receipt {
  /** The entry's text (the `extra` data). */
  leaf: Buffer;
  index: number;
  proof: Buffer[];
  /** The checkpoint note as it stands in the receipt. */
  checkpointNote: string;
}

/** A receipt that is malformed or does not verify: the one-line reason. */
export class ReceiptError extends OperatorError {
  override name = 'ReceiptError';
}

/** The receipt of entry `index` with text `leaf`, by `proof` in the tree of the checkpoint `note` (with its signature lines). */
export function formatReceipt(r: Receipt): string {
  const lines = [RECEIPT_HEADER, `extra ${r.leaf.toString('base64')}`, `index ${r.index}`, ...r.proof.map((h) => h.toString('base64'))];
  return `${lines.join('\n')}\n\n${r.checkpointNote}`;
}

/**
 * The receipt of a capture entry in the published checkpoint `c` of its
 * archive's log: its text, its inclusion proof into `c`'s tree, and `c`'s
 * note with, when it has a token, the time-stamp line named `tsaName`
 * (checkpoint.ts `timestampKeyName` of the authority's URL); `undefined`
 * when the entry has no text (purged) or `c` does not cover it.
 */
export async function receiptOf(log: LogStore, leaf: LeafRow, c: CheckpointRow, tsaName: string): Promise<string | undefined> {
  if (leaf.leaf_text === null || leaf.leaf_index >= c.tree_size) return undefined;
  const proof = await inclusionOf(log, leaf.archive_id, leaf.leaf_index, c.tree_size);
  const note = c.note + (c.tsr ? timestampLine(tsaName, c.tsr) : '');
  return formatReceipt({ leaf: Buffer.from(leaf.leaf_text, 'utf8'), index: leaf.leaf_index, proof, checkpointNote: note });
}

const B64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Reads a receipt (C2SP tlog-proof).
 * @throws ReceiptError when it is over {@link MAX_RECEIPT_BYTES}, lacks
 *   its header, its `extra` line (the leaf) or `index`, a proof line is
 *   not a base64 hash, or more than 64 of them
 */
export function parseReceipt(input: Buffer | string): Receipt {
  const bytes = typeof input === 'string' ? Buffer.from(input, 'utf8') : input;
  if (bytes.length > MAX_RECEIPT_BYTES) throw new ReceiptError(`a receipt of ${bytes.length} bytes (at most ${MAX_RECEIPT_BYTES})`);
  const s = bytes.toString('utf8');
  const blank = s.indexOf('\n\n');
  if (blank < 0) throw new ReceiptError('a receipt has a blank line between its proof and its checkpoint');
  const lines = s.slice(0, blank).split('\n');
  if (lines[0] !== RECEIPT_HEADER) throw new ReceiptError(`a receipt begins with ${RECEIPT_HEADER}`);
  const extra = /^extra (\S+)$/.exec(lines[1] ?? '');
  if (!extra || !B64.test(extra[1])) throw new ReceiptError("this archive's receipts carry the entry's text as base64 on their extra line");
  const index = /^index (0|[1-9][0-9]{0,15})$/.exec(lines[2] ?? '');
  if (!index || !Number.isSafeInteger(Number(index[1]))) throw new ReceiptError('a receipt names its entry on an index line (a decimal number)');
  const proof = lines.slice(3).map((l) => {
    const h = B64.test(l) ? Buffer.from(l, 'base64') : Buffer.alloc(0);
    if (h.length !== 32) throw new ReceiptError(`not a base64 SHA-256 hash in the inclusion proof: ${JSON.stringify(l.slice(0, 60))}`);
    return h;
  });
  if (proof.length > 64) throw new ReceiptError(`an inclusion proof of ${proof.length} hashes (at most 64)`);
  return { leaf: Buffer.from(extra[1], 'base64'), index: Number(index[1]), proof, checkpointNote: s.slice(blank + 2) };
}

/** What a receipt proves, once {@link verifyReceipt} checked it. */
export interface ReceiptVerdict {
  checkpoint: Checkpoint;
  /** The witnesses whose cosignatures verified (of those trusted). */
  witnesses: string[];
  /** The DER TimeStampResp of each time-stamp line (checked by the caller: RFC 3161 needs the authority's certificate). */
  timestamps: { name: string; tsr: Buffer }[];
  note: Note;
}

/**
 * Checks a receipt offline: the checkpoint is signed by the log's key
 * under its origin (and `origin` when given), at least `quorum` of the
 * trusted `witnesses` cosigned it, and the inclusion proof takes the
 * entry's leaf hash (RFC 9162 `SHA-256(0x00 ‖ leaf)`) to the
 * checkpoint's root (RFC 9162 §2.1.3.2).
 * @param verifyInclusion the inclusion check (merkle.ts)
 * @throws ReceiptError saying what does not hold
 */
export function verifyReceipt(
  r: Receipt,
  trust: { logKey: { publicKeyDer: Buffer }; origin?: string; witnesses?: readonly VerifierKey[]; quorum?: number },
  verifyInclusion: (leaf: Buffer, index: number, size: number, proof: readonly Buffer[], root: Buffer) => boolean,
): ReceiptVerdict {
  let c;
  try {
    c = readCheckpoint(r.checkpointNote, trust.logKey, trust.origin);
  } catch (err) {
    throw new ReceiptError(`its checkpoint: ${(err as Error).message}`);
  }
  const witnesses: string[] = [];
  for (const w of trust.witnesses ?? []) {
    try {
      verifyNote(c.note, [w]);
      witnesses.push(w.name);
    } catch (err) {
      if (err instanceof SignedNoteError && /no signature by a known key/.test(err.message)) continue;
      throw new ReceiptError(`its checkpoint: ${(err as Error).message}`);
    }
  }
  const quorum = trust.quorum ?? 0;
  if (witnesses.length < quorum) throw new ReceiptError(`its checkpoint has ${witnesses.length} cosignature(s) of the witnesses trusted, fewer than ${quorum}`);
  if (r.index >= c.treeSize) throw new ReceiptError(`entry ${r.index} is not in the checkpoint's tree of ${c.treeSize} entries`);
  if (!verifyInclusion(leafHash(r.leaf), r.index, c.treeSize, r.proof, c.rootHash))
    throw new ReceiptError(`the inclusion proof does not take entry ${r.index} to the checkpoint's root`);
  return { checkpoint: c, witnesses, timestamps: timestampsOf(c.note), note: c.note };
}
