/**
 * The archive's Ed25519 signing key: it signs the evidence log's tree
 * heads and the WACZ packages the archive writes. Kept in one PKCS#8 PEM
 * file (`signing_key_file`, default `log-signing-key.pem` in `data_dir`),
 * made on first start with mode 0600; daemons that share one index and
 * bucket are given the same file, so that one log has one key.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject, sign, verify } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { secretFileRefusal } from '../config.js';

/** The most bytes a key file may have: a PEM Ed25519 key is 119. */
const MAX_KEY_FILE_BYTES = 16 * 1024;

/** An Ed25519 key pair, loaded. */
export interface SigningKey {
  /** The public key as SubjectPublicKeyInfo DER (RFC 8410 §4), 44 bytes. */
  readonly publicKeyDer: Buffer;
  /** {@link publicKeyDer} as standard base64 with padding (the `public_key` of the log's JSON). */
  readonly publicKeyBase64: string;
  /** The Ed25519 signature (RFC 8032, 64 bytes) of `data`. */
  sign(data: Buffer | string): Buffer;
}

/** The key file cannot be read or made, or holds no Ed25519 private key: the path and why, in one line. */
export class SigningKeyError extends Error {}

/**
 * Loads the signing key from `file`, making it first when the file does
 * not exist (a new Ed25519 key, PKCS#8 PEM, mode 0600, written to a
 * temporary name and renamed, so that a crash leaves no half a key).
 * @throws SigningKeyError when the file cannot be read or written, is over
 *   16 KiB, can be read by its group or by every user (`chmod 600 <file>`
 *   fixes that), or holds anything but an Ed25519 private key.
 */
export function openSigningKey(file: string): SigningKey {
  let privateKey: KeyObject;
  try {
    privateKey = readKey(file) ?? makeKey(file);
  } catch (err) {
    if (err instanceof SigningKeyError) throw err;
    throw new SigningKeyError(`${file}: ${(err as Error).message}`);
  }
  if (privateKey.asymmetricKeyType !== 'ed25519')
    throw new SigningKeyError(`${file}: holds a ${privateKey.asymmetricKeyType ?? 'symmetric'} key, not an Ed25519 private key`);
  const publicKeyDer = createPublicKey(privateKey).export({ type: 'spki', format: 'der' });
  return {
    publicKeyDer,
    publicKeyBase64: publicKeyDer.toString('base64'),
    sign: (data) => sign(null, typeof data === 'string' ? Buffer.from(data, 'utf8') : data, privateKey),
  };
}

/**
 * Whether `signature` is the Ed25519 signature of `data` by the key whose
 * SubjectPublicKeyInfo DER is `publicKeyDer`. False (never throws) for a
 * malformed key or signature.
 */
export function verifySignature(publicKeyDer: Buffer, data: Buffer | string, signature: Buffer): boolean {
  try {
    const key = createPublicKey({ key: publicKeyDer, format: 'der', type: 'spki' });
    return verify(null, typeof data === 'string' ? Buffer.from(data, 'utf8') : data, key, signature);
  } catch {
    return false;
  }
}

/** The private key in `file`; `undefined` when there is no such file. */
function readKey(file: string): KeyObject | undefined {
  let size: number;
  try {
    size = statSync(file).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  if (size > MAX_KEY_FILE_BYTES) throw new SigningKeyError(`${file}: ${size} bytes is too large for a key file (at most ${MAX_KEY_FILE_BYTES})`);
  // A private key others may read is not this archive's alone: refused, as a config with put_tokens is (config.ts).
  const refused = secretFileRefusal(file, 'the evidence log’s signing key', 0o044, `run chmod 600 ${file} (and keep it owned by the daemon's user)`);
  if (refused) throw new SigningKeyError(refused);
  try {
    return createPrivateKey(readFileSync(file));
  } catch {
    throw new SigningKeyError(`${file}: not a PEM or DER private key`);
  }
}

/**
 * Makes a new Ed25519 key in `file` (mode 0600) and returns it; when
 * another process made the file first (two daemons starting on one shared
 * key file), that key: a hard link never replaces an existing file.
 */
function makeKey(file: string): KeyObject {
  const { privateKey } = generateKeyPairSync('ed25519');
  mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600, flag: 'wx' });
  try {
    linkSync(tmp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return readKey(file)!;
  } finally {
    unlinkSync(tmp);
  }
  return privateKey;
}
