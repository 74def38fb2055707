/**
 * The archive's Ed25519 signing key: it signs the evidence log's tree
 * heads and the WACZ packages the archive writes. Kept in one PKCS#8 PEM
 * file (`signing_key_file`, default `log-signing-key.pem` in `data_dir`),
 * made on first start with mode 0600; daemons that share one index and
 * bucket are given the same file, so that one log has one key. A
 * witness's key (`memento-archive witness`) is kept the same way, in a
 * file only its owner may read.
 */
import { OperatorError } from '#shared/operator-error.js';
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject, sign, verify } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

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
export class SigningKeyError extends OperatorError {}

/**
 * Loads the signing key from `file`, making it first when the file does
 * not exist (a new Ed25519 key, PKCS#8 PEM, mode 0600, written to a
 * temporary name and renamed, so that a crash leaves no half a key).
 * @throws SigningKeyError when the file cannot be read or written, is over
 *   16 KiB, can be read by its group or by every user (`chmod 600 <file>`
 *   fixes that), or holds anything but an Ed25519 private key.
 */
export function openSigningKey(file: string): SigningKey {
  const privateKey = openKey(file, 'the evidence log’s signing key');
  const publicKeyDer = createPublicKey(privateKey).export({ type: 'spki', format: 'der' });
  return {
    publicKeyDer,
    publicKeyBase64: publicKeyDer.toString('base64'),
    sign: (data) => sign(null, typeof data === 'string' ? Buffer.from(data, 'utf8') : data, privateKey),
  };
}

/**
 * Loads a witness's Ed25519 private key from `file` as
 * {@link openSigningKey} does (made when missing; refused when its group or
 * every user may read it).
 * @throws SigningKeyError as {@link openSigningKey}
 */
export function openOwnerOnlyKey(file: string): KeyObject {
  return openKey(file, 'the witness’s signing key');
}

/** The Ed25519 private key in `file` (`what` names it in errors), made first when the file does not exist. */
function openKey(file: string, what: string): KeyObject {
  let privateKey: KeyObject;
  try {
    privateKey = readKey(file, what) ?? makeKey(file, what);
  } catch (err) {
    if (err instanceof SigningKeyError) throw err;
    throw new SigningKeyError(`${file}: ${(err as Error).message}`);
  }
  if (privateKey.asymmetricKeyType !== 'ed25519')
    throw new SigningKeyError(`${file}: holds a ${privateKey.asymmetricKeyType ?? 'symmetric'} key, not an Ed25519 private key`);
  return privateKey;
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

/**
 * The private key in `file` (`what` names it in errors); `undefined` when
 * there is no such file. A file its group or every user may read is
 * refused: the key is this daemon's alone (the config's `put_tokens` are
 * refused the same way when every user may read them).
 */
function readKey(file: string, what: string): KeyObject | undefined {
  let size: number;
  let mode: number;
  try {
    const st = statSync(file);
    size = st.size;
    mode = st.mode & 0o777;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  if (size > MAX_KEY_FILE_BYTES) throw new SigningKeyError(`${file}: ${size} bytes is too large for a key file (at most ${MAX_KEY_FILE_BYTES})`);
  if (mode & 0o044) {
    const who = mode & 0o004 ? 'every user' : "the file's group";
    throw new SigningKeyError(
      `${file}: holds ${what} but ${who} can read it (mode ${mode.toString(8).padStart(4, '0')}); run chmod 600 ${file} (and keep it owned by the daemon's user)`,
    );
  }
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
function makeKey(file: string, what: string): KeyObject {
  const { privateKey } = generateKeyPairSync('ed25519');
  mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600, flag: 'wx' });
  try {
    linkSync(tmp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return readKey(file, what)!;
  } finally {
    unlinkSync(tmp);
  }
  return privateKey;
}
