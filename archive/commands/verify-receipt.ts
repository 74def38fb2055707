/**
 * `memento-archive verify-receipt FILE [--record WARC] [--key KEY]
 * [--witness VKEY]... [--quorum N] [--tsa-ca PEM]`: checks a capture's
 * receipt offline (archive/evidence/receipt-check.ts) with the log's key
 * given (a verifier key, a PEM public key or `/log`'s base64
 * `public_key`, on the command line or in a file), or, without `--key`,
 * the archive's own `signing_key_file` and `witnesses` of `--config`.
 * Nothing is fetched from the archive.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { inContext } from '#shared/operator-error.js';
import { loadArchiveConfig } from '../config.js';
import { checkReceipt, logKeyOf, type ReceiptTrust } from '../evidence/receipt-check.js';
import { MAX_RECEIPT_BYTES, ReceiptError } from '../evidence/receipt.js';
import { openSigningKey } from '../evidence/signing-key.js';
import { parseVerifierKey, SIG_COSIGNATURE_V1 } from '../evidence/signed-note.js';
import { say } from './terminal.js';

/** The options `verify-receipt` reads. */
export interface VerifyReceiptOptions {
  config?: string;
  record?: string;
  key?: string;
  witness?: string[];
  quorum?: string;
  'tsa-ca'?: string;
}

/** A value given inline, or the text of the file it names (bounded). */
function inlineOrFile(v: string, what: string): string {
  if (existsSync(v) && statSync(v).isFile()) {
    if (statSync(v).size > 64 * 1024) throw new ReceiptError(`${what} ${v}: over 64 KiB`);
    return readFileSync(v, 'utf8');
  }
  return v;
}

/** The trust of the checker: from the options, else from the archive's config. @throws ReceiptError, ConfigError, SigningKeyError */
function trustOf(o: VerifyReceiptOptions): ReceiptTrust {
  const witnesses = (o.witness ?? []).map((w) => {
    const v = parseVerifierKey(inlineOrFile(w, '--witness'));
    if (v.type !== SIG_COSIGNATURE_V1) throw new ReceiptError(`--witness ${v.name}: not a cosignature key (type 0x04)`);
    return v;
  });
  let trust: ReceiptTrust;
  if (o.key !== undefined) trust = { logKey: logKeyOf(inlineOrFile(o.key, '--key')), witnesses, quorum: witnesses.length };
  else {
    const config = loadArchiveConfig(o.config ?? 'conf/archive.yaml');
    if (!existsSync(config.signingKeyFile)) throw new ReceiptError(`${config.signingKeyFile}: no signing key there; give the log's key with --key`);
    const key = openSigningKey(config.signingKeyFile);
    const all = witnesses.length ? witnesses : config.witnesses.map((w) => w.key);
    trust = { logKey: key, witnesses: all, quorum: witnesses.length ? witnesses.length : config.witnessQuorum };
  }
  const origin = (trust.logKey as { origin?: string }).origin;
  if (origin !== undefined) trust.origin = origin;
  if (o.quorum !== undefined) {
    if (!/^\d{1,2}$/.test(o.quorum) || Number(o.quorum) > trust.witnesses.length)
      throw new ReceiptError(`--quorum ${o.quorum}: a whole number up to the ${trust.witnesses.length} witness(es) given`);
    trust.quorum = Number(o.quorum);
  }
  if (o['tsa-ca'] !== undefined) trust.tsaCertsPem = readFileSync(o['tsa-ca'], 'utf8');
  return trust;
}

/**
 * Checks the receipt `file` and prints what it proves (one line per fact)
 * on stdout.
 * @returns 0 when it checks out, 2 for bad arguments
 * @throws OperatorError (exit status 1, `verify-receipt: FILE: FAILED: why`) when it does not check out
 */
export async function runVerifyReceipt(files: string[], o: VerifyReceiptOptions): Promise<number> {
  if (files.length !== 1) {
    say('verify-receipt: give one receipt file (memento-archive verify-receipt FILE [--record WARC] [--key KEY])');
    return 2;
  }
  const file = files[0];
  let trust: ReceiptTrust;
  let bytes: Buffer;
  try {
    trust = trustOf(o);
    if (statSync(file).size > MAX_RECEIPT_BYTES) throw new ReceiptError(`${file}: over ${MAX_RECEIPT_BYTES} bytes, not a receipt`);
    bytes = readFileSync(file);
  } catch (err) {
    // Whatever it is (a config, a key, an option, a file): the trust or the receipt cannot be read.
    say(`verify-receipt: ${(err as Error).message}`);
    return 2;
  }
  try {
    const r = await checkReceipt(bytes, trust, o.record);
    const [uri, datetime, recordId, digest] = r.leaf.split('\n');
    const lines = [
      `verify-receipt: ${file}: OK`,
      `entry ${r.index} of the log ${r.origin} (a checkpoint of ${r.treeSize} entries signed by its key)`,
      `capture: ${uri} at ${datetime}, record ${recordId}, ${digest}`,
      `witnesses: ${r.witnesses.length ? r.witnesses.join(', ') : 'none checked'}${trust.quorum ? ` (${trust.quorum} needed)` : ''}`,
      ...r.timestamps.map(
        (t) =>
          `time-stamp: ${t.time.toISOString()} by ${t.signer} (${t.name})${t.chained ? ', chained to --tsa-ca' : '; its certificate is not checked against a trusted one (give --tsa-ca)'}`,
      ),
      ...(r.record ? [`record: ${o.record} is the record the entry names (${r.record}, its block's SHA-256 recomputed)`] : []),
    ];
    process.stdout.write(lines.join('\n') + '\n');
    return 0;
  } catch (err) {
    throw inContext(err, {
      before: `verify-receipt: ${file}: FAILED: `,
      status: 1,
      otherwise: (e) => (e.code && e.syscall ? `verify-receipt: ${file}: FAILED: ${e.message}` : undefined),
    });
  }
}
