/**
 * Checking a receipt offline (docs/evidence.md "Checking a receipt"), for
 * `memento-archive verify-receipt`: the receipt's proof and checkpoint
 * (receipt.ts), the witnesses' cosignatures the checker trusts, each RFC
 * 3161 time-stamp token over the checkpoint's note text (timestamp.ts:
 * its imprint, signature, and time, chained to trusted certificates when
 * given), and, with the memento's WARC record (`/record`), that the
 * record is the one the entry names: its `WARC-Target-URI`, the 14 digits
 * of its `WARC-Date`, its `WARC-Record-ID`, and the SHA-256 of its block
 * recomputed from the bytes.
 */
import { createHash, createPublicKey } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { WARCParser } from 'warcio';
import { verifyInclusion } from './merkle.js';
import { parseReceipt, ReceiptError, verifyReceipt } from './receipt.js';
import { parseVerifierKey, SIG_ED25519, type VerifierKey } from './signed-note.js';
import { checkTimestamp } from './timestamp.js';

/** Who the checker trusts. */
export interface ReceiptTrust {
  /** The log's Ed25519 key (SPKI DER), and, when known (a vkey), the origin it signs for. */
  logKey: { publicKeyDer: Buffer };
  origin?: string;
  witnesses: VerifierKey[];
  /** Cosignatures of `witnesses` needed. */
  quorum: number;
  /** Certificates (PEM) a time-stamping authority must chain to; none: the token's own certificate only. */
  tsaCertsPem?: string;
}

/** What a receipt showed. */
export interface ReceiptReport {
  origin: string;
  treeSize: number;
  index: number;
  /** The entry's text (its lines: URI-R, Memento-Datetime, WARC-Record-ID, digest, …). */
  leaf: string;
  witnesses: string[];
  timestamps: { name: string; time: Date; signer: string; chained: boolean }[];
  /** With a record given: its `WARC-Record-ID`. */
  record?: string;
}

/** Clock skew allowed for a token's time, ms. */
const SKEW_MS = 10 * 60_000;

/**
 * A key the checker is given: a signed-note verifier key of the log
 * (`<origin>+<key ID>+<base64>`, type 0x01: pins the origin too), or an
 * Ed25519 public key as PEM, or as base64 SPKI DER (`/log`'s `public_key`).
 * @throws ReceiptError when it is none of these
 */
export function logKeyOf(text: string): { publicKeyDer: Buffer; origin?: string } {
  const s = text.trim();
  if (/^[^\s+]+\+[0-9a-f]{8}\+/.test(s)) {
    let v: VerifierKey;
    try {
      v = parseVerifierKey(s);
    } catch (err) {
      throw new ReceiptError(`the log key: ${(err as Error).message}`);
    }
    if (v.type !== SIG_ED25519) throw new ReceiptError(`the log key ${v.name} is not an Ed25519 note key (type 0x01)`);
    return { publicKeyDer: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), v.publicKey]), origin: v.name };
  }
  try {
    const key = s.startsWith('-----BEGIN') ? createPublicKey(s) : createPublicKey({ key: Buffer.from(s, 'base64'), format: 'der', type: 'spki' });
    if (key.asymmetricKeyType !== 'ed25519') throw new Error(`a ${key.asymmetricKeyType} key`);
    return { publicKeyDer: key.export({ type: 'spki', format: 'der' }) };
  } catch (err) {
    throw new ReceiptError(`the log key is not a verifier key, a PEM or a base64 SPKI Ed25519 public key (${(err as Error).message})`);
  }
}

/**
 * Checks `receipt` against `trust` (and the memento's WARC record file
 * `recordFile`, when given).
 * @throws ReceiptError naming the first check that fails
 */
export async function checkReceipt(receipt: Buffer, trust: ReceiptTrust, recordFile?: string, now = Date.now()): Promise<ReceiptReport> {
  const r = parseReceipt(receipt);
  const v = verifyReceipt(r, trust, verifyInclusion);
  const timestamps: ReceiptReport['timestamps'] = [];
  for (const ts of v.timestamps) {
    let info;
    try {
      info = await checkTimestamp(ts.tsr, Buffer.from(v.note.text, 'utf8'), trust.tsaCertsPem ? { trustedCertsPem: trust.tsaCertsPem } : {});
    } catch (err) {
      throw new ReceiptError(`the time-stamp of ${ts.name}: ${(err as Error).message}`);
    }
    if (info.genTime.getTime() > now + SKEW_MS) throw new ReceiptError(`the time-stamp of ${ts.name} is in the future (${info.genTime.toISOString()})`);
    timestamps.push({ name: ts.name, time: info.genTime, signer: info.signer, chained: trust.tsaCertsPem !== undefined });
  }
  const leaf = r.leaf.toString('utf8');
  const report: ReceiptReport = { origin: v.checkpoint.origin, treeSize: v.checkpoint.treeSize, index: r.index, leaf, witnesses: v.witnesses, timestamps };
  if (recordFile !== undefined) report.record = await checkRecord(recordFile, leaf);
  return report;
}

/** The first `response` or `revisit` record of a WARC file (plain or gzip), checked against the entry `leaf`. @returns its WARC-Record-ID */
async function checkRecord(file: string, leaf: string): Promise<string> {
  const [uri, datetime, recordId, digest] = leaf.split('\n');
  const parser = new WARCParser(createReadStream(file), { parseHttp: false });
  for await (const rec of parser) {
    const type = rec.warcType;
    if (type !== 'response' && type !== 'revisit') {
      await rec.readFully(false);
      continue;
    }
    const h = createHash('sha256');
    for await (const chunk of rec) h.update(chunk);
    const got = {
      uri: rec.warcTargetURI ?? '',
      datetime: (rec.warcDate ?? '').replace(/\D/g, '').slice(0, 14),
      recordId: rec.warcHeader('WARC-Record-ID') ?? '',
      digest: `sha256:${h.digest('hex')}`,
    };
    const want = { uri, datetime, recordId, digest };
    for (const k of ['recordId', 'uri', 'datetime', 'digest'] as const)
      if (got[k] !== want[k]) throw new ReceiptError(`${file}: the record's ${k} is ${got[k]}, the entry's ${want[k]}`);
    return got.recordId;
  }
  throw new ReceiptError(`${file}: no WARC response or revisit record in it`);
}
