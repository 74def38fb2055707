/**
 * Signed notes (C2SP signed-note v1.0.0) with Ed25519 keys, and the two
 * note bodies the evidence log signs: checkpoints (C2SP tlog-checkpoint)
 * and their timestamped witness cosignatures (C2SP tlog-cosignature,
 * signature type 0x04).
 *
 * A note is its text (ending in a newline), a blank line, then one or
 * more lines `— <key name> base64(key ID ‖ signature)`. A key is known to
 * a verifier by its verifier key ("vkey"), `<name>+<hex key ID>+base64(type ‖ public key)`.
 * Everything read here (a note from a witness, a receipt, a vkey in a
 * config file) is hostile input: bounded in size and number of lines,
 * refused with one line saying why.
 */
import { createHash, createPrivateKey, createPublicKey, type KeyObject, sign, verify } from 'node:crypto';

/** Signature type of plain Ed25519 note signatures (signed-note §"Signature types"). */
export const SIG_ED25519 = 0x01;
/** Signature type of timestamped Ed25519 checkpoint cosignatures (tlog-cosignature). */
export const SIG_COSIGNATURE_V1 = 0x04;

/** The most bytes a note may have (text and signatures): far above a checkpoint with 16 cosignatures. */
export const MAX_NOTE_BYTES = 64 * 1024;
/** The most signature lines read from a note (signed-note asks verifiers to accept at least 16). */
export const MAX_NOTE_SIGNATURES = 64;

/** A note, a vkey or a checkpoint that is not well formed: the one-line reason. */
export class SignedNoteError extends Error {
  override name = 'SignedNoteError';
}

/** One signature line of a note. */
export interface NoteSignature {
  /** the key name */
  readonly name: string;
  /** the 4-byte key ID */
  readonly keyId: Buffer;
  /** what follows the key ID: the signature (for type 0x04: u64 timestamp ‖ 64-byte Ed25519 signature) */
  readonly signature: Buffer;
}

/** A note read back: its text (ending in `\n`) and its signature lines, in order. */
export interface Note {
  readonly text: string;
  readonly signatures: readonly NoteSignature[];
}

/** A public key a verifier trusts: its name, signature type and raw key (32 bytes for Ed25519). */
export interface VerifierKey {
  readonly name: string;
  readonly type: number;
  readonly publicKey: Buffer;
  /** SHA-256(name ‖ 0x0A ‖ type ‖ publicKey)[:4] */
  readonly keyId: Buffer;
}

/** A signer: a name and an Ed25519 private key. */
export interface NoteSigner {
  readonly name: string;
  readonly privateKey: KeyObject;
}

/**
 * The key ID of a key (signed-note "Signatures"): the first 4 bytes of
 * SHA-256(name ‖ 0x0A ‖ type ‖ public key).
 */
export function keyIdOf(name: string, type: number, publicKey: Buffer): Buffer {
  return createHash('sha256')
    .update(Buffer.from(`${name}\n`, 'utf8'))
    .update(Buffer.from([type]))
    .update(publicKey)
    .digest()
    .subarray(0, 4);
}

/** The raw 32-byte Ed25519 public key of a private or public key object (RFC 8032 encoding). */
export function rawEd25519PublicKey(key: KeyObject): Buffer {
  const pub = key.type === 'private' ? createPublicKey(key) : key;
  if (pub.asymmetricKeyType !== 'ed25519') throw new SignedNoteError(`not an Ed25519 key (${pub.asymmetricKeyType ?? 'symmetric'})`);
  // SPKI DER of an Ed25519 key is a fixed 12-byte prefix and the 32-byte key (RFC 8410 §4).
  return pub.export({ type: 'spki', format: 'der' }).subarray(12);
}

/** The Node key object of a raw 32-byte Ed25519 public key. */
function ed25519PublicKeyObject(raw: Buffer): KeyObject {
  const prefix = Buffer.from('302a300506032b6570032100', 'hex');
  return createPublicKey({ key: Buffer.concat([prefix, raw]), format: 'der', type: 'spki' });
}

/** The verifier key of `name` for an Ed25519 key pair or public key, with `type` 0x01 (notes) or 0x04 (cosignatures). */
export function verifierKeyOf(name: string, key: KeyObject, type: number = SIG_ED25519): VerifierKey {
  checkKeyName(name);
  const publicKey = rawEd25519PublicKey(key);
  return { name, type, publicKey, keyId: keyIdOf(name, type, publicKey) };
}

/** A verifier key as its text: `<name>+<hex key ID>+base64(type ‖ public key)` (signed-note "Verifier keys"). */
export function formatVerifierKey(v: VerifierKey): string {
  return `${v.name}+${v.keyId.toString('hex')}+${Buffer.concat([Buffer.from([v.type]), v.publicKey]).toString('base64')}`;
}

/**
 * Reads a verifier key's text. Only Ed25519 types (0x01, 0x04) with a
 * 32-byte key are accepted.
 * @throws SignedNoteError when it is not three `+`-separated parts, the
 *   key ID is not the one the name, type and key give, or the type or
 *   key length is not one this archive verifies
 */
export function parseVerifierKey(text: string): VerifierKey {
  if (text.length > 1024) throw new SignedNoteError('a verifier key of over 1024 characters');
  // The name has no "+", the key ID is hex; the base64 key may hold "+".
  const m = /^([^+]*)\+([^+]*)\+(.*)$/s.exec(text.trim());
  if (!m) throw new SignedNoteError('a verifier key is <name>+<hex key ID>+<base64 key>');
  const [, name, idHex, keyB64] = m as unknown as [string, string, string, string];
  checkKeyName(name);
  if (!/^[0-9a-f]{8}$/.test(idHex)) throw new SignedNoteError(`verifier key ${name}: the key ID is not 8 lower-case hex digits`);
  const material = strictBase64(keyB64, `verifier key ${name}`);
  const type = material[0];
  if (type !== SIG_ED25519 && type !== SIG_COSIGNATURE_V1)
    throw new SignedNoteError(`verifier key ${name}: signature type ${type} is not Ed25519 (0x01) or an Ed25519 cosignature (0x04)`);
  const publicKey = material.subarray(1);
  if (publicKey.length !== 32) throw new SignedNoteError(`verifier key ${name}: an Ed25519 key is 32 bytes, not ${publicKey.length}`);
  const keyId = keyIdOf(name, type, publicKey);
  if (keyId.toString('hex') !== idHex)
    throw new SignedNoteError(`verifier key ${name}: key ID ${idHex} is not the one of its name and key (${keyId.toString('hex')})`);
  return { name, type, publicKey, keyId };
}

/**
 * The signature line of `text` by `signer` (Ed25519, type 0x01):
 * `— <name> base64(key ID ‖ signature)\n`.
 */
export function noteSignatureLine(text: string, signer: NoteSigner): string {
  checkNoteText(text);
  const keyId = keyIdOf(signer.name, SIG_ED25519, rawEd25519PublicKey(signer.privateKey));
  const signature = sign(null, Buffer.from(text, 'utf8'), signer.privateKey);
  return `— ${signer.name} ${Buffer.concat([keyId, signature]).toString('base64')}\n`;
}

/** `text` signed by `signer`: the text, a blank line, the signature line. */
export function signNote(text: string, signer: NoteSigner): string {
  return `${text}\n${noteSignatureLine(text, signer)}`;
}

/** A note as text: its text, a blank line, its signature lines. */
export function formatNote(note: Note): string {
  return `${note.text}\n${note.signatures.map((s) => `— ${s.name} ${Buffer.concat([s.keyId, s.signature]).toString('base64')}\n`).join('')}`;
}

/**
 * Reads a signed note (signed-note "Format").
 * @throws SignedNoteError when it is over {@link MAX_NOTE_BYTES}, not
 *   UTF-8, holds a control character other than newline, has no blank
 *   line before its signatures, no signature, more than
 *   {@link MAX_NOTE_SIGNATURES}, or a malformed signature line
 */
export function parseNote(input: string | Buffer): Note {
  const bytes = typeof input === 'string' ? Buffer.from(input, 'utf8') : input;
  if (bytes.length > MAX_NOTE_BYTES) throw new SignedNoteError(`a note of ${bytes.length} bytes (at most ${MAX_NOTE_BYTES})`);
  let s: string;
  try {
    s = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new SignedNoteError('a note is not UTF-8');
  }
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0009\u000b-\u001f]/.test(s)) throw new SignedNoteError('a note holds a control character other than newline');
  if (!s.endsWith('\n')) throw new SignedNoteError('a note ends with a newline');
  const split = s.lastIndexOf('\n\n');
  if (split < 0) throw new SignedNoteError('a note has no blank line before its signatures');
  const text = s.slice(0, split + 1);
  const lines = s.slice(split + 2, -1).split('\n');
  if (lines.length > MAX_NOTE_SIGNATURES) throw new SignedNoteError(`a note with ${lines.length} signatures (at most ${MAX_NOTE_SIGNATURES})`);
  const signatures = lines.map((line) => {
    const m = /^— (\S+) (\S+)$/u.exec(line);
    if (!m) throw new SignedNoteError(`not a signature line: ${JSON.stringify(line.slice(0, 80))}`);
    const raw = strictBase64(m[2]!, `the signature of ${m[1]}`);
    if (raw.length < 5) throw new SignedNoteError(`the signature of ${m[1]} is too short`);
    return { name: m[1]!, keyId: raw.subarray(0, 4), signature: raw.subarray(4) };
  });
  return { text, signatures };
}

/** What {@link verifyNote} found: the verified keys' names, in the order of `verifiers`. */
export interface NoteVerdict {
  readonly verified: readonly VerifierKey[];
}

/**
 * Checks a note's signatures against the keys a verifier trusts
 * (signed-note "Signatures"): a line whose name and key ID match a known
 * key must verify (type 0x01 over the text; type 0x04 as a
 * tlog-cosignature v1 over the text); lines of unknown keys are ignored.
 * @returns the keys whose signatures verified
 * @throws SignedNoteError when a known key's signature fails, or no known key signed
 */
export function verifyNote(note: Note, verifiers: readonly VerifierKey[]): NoteVerdict {
  const verified: VerifierKey[] = [];
  for (const v of verifiers) {
    const line = note.signatures.find((s) => s.name === v.name && s.keyId.equals(v.keyId));
    if (!line) continue;
    const ok =
      v.type === SIG_COSIGNATURE_V1 ? cosignatureOk(note.text, line.signature, v) : ed25519Ok(Buffer.from(note.text, 'utf8'), line.signature, v.publicKey);
    if (!ok) throw new SignedNoteError(`the signature of ${v.name} does not verify`);
    verified.push(v);
  }
  if (verified.length === 0) throw new SignedNoteError('no signature by a known key');
  return { verified };
}

/**
 * The message a tlog-cosignature v1 (Ed25519, type 0x04) signs:
 * `cosignature/v1\ntime <seconds>\n` then the checkpoint's note text.
 */
export function cosignedMessage(noteText: string, timestampSeconds: number): string {
  return `cosignature/v1\ntime ${timestampSeconds}\n${noteText}`;
}

/**
 * A witness's cosignature line over a checkpoint's note text
 * (tlog-cosignature, Ed25519): key ID with type 0x04, then the u64
 * big-endian `timestampSeconds` and the Ed25519 signature of
 * {@link cosignedMessage}.
 */
export function cosignatureLine(noteText: string, signer: NoteSigner, timestampSeconds: number): string {
  checkNoteText(noteText);
  const keyId = keyIdOf(signer.name, SIG_COSIGNATURE_V1, rawEd25519PublicKey(signer.privateKey));
  const ts = Buffer.alloc(8);
  ts.writeBigUInt64BE(BigInt(timestampSeconds));
  const sig = sign(null, Buffer.from(cosignedMessage(noteText, timestampSeconds), 'utf8'), signer.privateKey);
  return `— ${signer.name} ${Buffer.concat([keyId, ts, sig]).toString('base64')}\n`;
}

/** The timestamp (POSIX seconds) of a type 0x04 cosignature's body; undefined when it is not 72 bytes. */
export function cosignatureTime(signature: Buffer): number | undefined {
  if (signature.length !== 72) return undefined;
  return Number(signature.readBigUInt64BE(0));
}

function cosignatureOk(text: string, body: Buffer, v: VerifierKey): boolean {
  const t = cosignatureTime(body);
  if (t === undefined || t > Number.MAX_SAFE_INTEGER) return false;
  return ed25519Ok(Buffer.from(cosignedMessage(text, t), 'utf8'), body.subarray(8), v.publicKey);
}

function ed25519Ok(message: Buffer, signature: Buffer, publicKey: Buffer): boolean {
  if (signature.length !== 64) return false;
  try {
    return verify(null, message, ed25519PublicKeyObject(publicKey), signature);
  } catch {
    return false;
  }
}

/** A checkpoint's three lines (tlog-checkpoint "Note text"). */
export interface Checkpoint {
  readonly origin: string;
  readonly treeSize: number;
  /** 32 bytes */
  readonly rootHash: Buffer;
}

/** The note text of a checkpoint: origin, tree size, base64 root hash, each ending in a newline. */
export function checkpointText(c: Checkpoint): string {
  checkKeyName(c.origin);
  if (!Number.isSafeInteger(c.treeSize) || c.treeSize < 0) throw new SignedNoteError(`tree size ${c.treeSize} is not a whole number`);
  if (c.rootHash.length !== 32) throw new SignedNoteError('a root hash is 32 bytes');
  return `${c.origin}\n${c.treeSize}\n${c.rootHash.toString('base64')}\n`;
}

/**
 * Reads a checkpoint's note text (extension lines are allowed and ignored).
 * @throws SignedNoteError when the origin is empty, the size is not
 *   decimal without leading zeros, or the root is not 32 bytes of base64
 */
export function parseCheckpointText(text: string): Checkpoint {
  const lines = text.split('\n');
  if (lines.length < 4 || lines[lines.length - 1] !== '') throw new SignedNoteError('a checkpoint is at least three lines, each ending in a newline');
  const [origin, size, root] = lines as [string, string, string];
  if (origin === '') throw new SignedNoteError('a checkpoint has an empty origin');
  if (!/^(0|[1-9][0-9]{0,15})$/.test(size) || !Number.isSafeInteger(Number(size)))
    throw new SignedNoteError(`checkpoint tree size ${JSON.stringify(size.slice(0, 20))} is not a decimal number`);
  const rootHash = strictBase64(root, 'the checkpoint root hash');
  if (rootHash.length !== 32) throw new SignedNoteError('a checkpoint root hash is 32 bytes');
  return { origin, treeSize: Number(size), rootHash };
}

/** Loads an Ed25519 private key (PEM or DER PKCS#8) as a {@link NoteSigner} named `name`. */
export function noteSignerOf(name: string, privateKey: KeyObject | Buffer | string): NoteSigner {
  checkKeyName(name);
  const key = typeof privateKey === 'string' || Buffer.isBuffer(privateKey) ? createPrivateKey(privateKey) : privateKey;
  if (key.asymmetricKeyType !== 'ed25519') throw new SignedNoteError(`not an Ed25519 private key (${key.asymmetricKeyType ?? 'symmetric'})`);
  return { name, privateKey: key };
}

/** A key name (and an origin) is non-empty, without spaces or `+` (signed-note "Format"). */
function checkKeyName(name: string): void {
  if (name === '' || /[\s+]/u.test(name) || name.length > 512)
    throw new SignedNoteError(`key name ${JSON.stringify(name.slice(0, 80))} is empty, too long, or holds a space or a "+"`);
}

/** A note text ends with a newline and holds no control character but newline. */
function checkNoteText(text: string): void {
  // eslint-disable-next-line no-control-regex
  if (!text.endsWith('\n') || /[\u0000-\u0009\u000b-\u001f]/.test(text))
    throw new SignedNoteError('a note text ends with a newline and holds no control character but newline');
}

/** Standard base64 with padding, nothing else (Buffer.from would skip bad characters). */
function strictBase64(s: string, what: string): Buffer {
  if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(s)) throw new SignedNoteError(`${what} is not standard base64`);
  return Buffer.from(s, 'base64');
}
