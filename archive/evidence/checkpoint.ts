/**
 * The evidence log's checkpoints (docs/evidence.md "Checkpoints"): the
 * tree of an archive's log at a size, as a C2SP tlog-checkpoint (origin,
 * size, base64 root) signed as a C2SP signed note by the archive's
 * Ed25519 key (signing-key.ts) under the origin's name; witnesses'
 * cosignature lines follow the log's own. And the one signature line
 * this archive adds of its own kind: an RFC 3161 time-stamp token over
 * the note text, carried in receipts as a note signature of type 0xff
 * (signed-note's "signature types without an identifier byte"), which
 * every other note reader ignores as a signature of an unknown key.
 */
import { createHash } from 'node:crypto';
import type { SigningKey } from './signing-key.js';
import {
  type Checkpoint,
  checkpointText,
  formatNote,
  keyIdOf,
  type Note,
  type NoteSignature,
  parseCheckpointText,
  parseNote,
  SIG_ED25519,
  SignedNoteError,
  type VerifierKey,
  verifyNote,
} from './signed-note.js';

/** Signature type byte of the time-stamp line: 0xff, followed in the key ID's hash by {@link TIMESTAMP_IDENTIFIER}. */
export const SIG_UNASSIGNED = 0xff;
/** The identifier after 0xff in the key ID's hash of a time-stamp line (signed-note: "followed by a longer identifier"). */
export const TIMESTAMP_IDENTIFIER = 'rfc3161-timestamp-response';

/** The raw 32-byte Ed25519 public key of an SPKI DER one (RFC 8410 §4: a fixed 12-byte prefix, then the key). */
export function rawPublicKey(publicKeyDer: Buffer): Buffer {
  return publicKeyDer.subarray(publicKeyDer.length - 32);
}

/** The verifier key (signed-note "vkey") of the log `origin` for the archive's key: type 0x01, named by the origin. */
export function logVerifierKey(origin: string, key: Pick<SigningKey, 'publicKeyDer'>): VerifierKey {
  const publicKey = rawPublicKey(key.publicKeyDer);
  return { name: origin, type: SIG_ED25519, publicKey, keyId: keyIdOf(origin, SIG_ED25519, publicKey) };
}

/**
 * The checkpoint of `origin`'s tree of `treeSize` entries with root
 * `rootHash`, signed by `key`: its note text, and the whole note (the
 * text, a blank line, `— <origin> base64(key ID ‖ Ed25519 signature)`).
 * Ed25519 is deterministic: the same tree always gets the same note.
 * @throws SignedNoteError when the origin is not a key name (empty, a space or a "+")
 */
export function signCheckpoint(key: Pick<SigningKey, 'publicKeyDer' | 'sign'>, c: Checkpoint): { text: string; note: string } {
  const text = checkpointText(c);
  const v = logVerifierKey(c.origin, key);
  const line = `— ${c.origin} ${Buffer.concat([v.keyId, key.sign(text)]).toString('base64')}\n`;
  return { text, note: `${text}\n${line}` };
}

/** A checkpoint note read back and checked: its three lines and its signature lines. */
export interface ReadCheckpoint extends Checkpoint {
  readonly note: Note;
}

/**
 * Reads a checkpoint note and checks the log's signature on it: its
 * origin's key name with the key `publicKeyDer` (and, when given, that
 * the origin is `origin`).
 * @throws SignedNoteError naming what does not hold
 */
export function readCheckpoint(note: string | Buffer, key: Pick<SigningKey, 'publicKeyDer'>, origin?: string): ReadCheckpoint {
  const n = parseNote(note);
  const c = parseCheckpointText(n.text);
  if (origin !== undefined && c.origin !== origin) throw new SignedNoteError(`the checkpoint names the log ${c.origin}, not ${origin}`);
  verifyNote(n, [logVerifierKey(c.origin, key)]);
  return { ...c, note: n };
}

/** The key name of a time-stamping authority's line: its URL (`tsa_url`) without the scheme, query or trailing slash (`tsa.example.org/tsr`); `rfc3161` without one. */
export function timestampKeyName(tsaUrl: string | undefined): string {
  if (tsaUrl === undefined) return 'rfc3161';
  const u = new URL(tsaUrl);
  return `${u.host}${u.pathname.replace(/\/+$/, '')}`.replace(/[\s+]/g, '_');
}

/** The key ID of a time-stamp line named `name`: SHA-256(name ‖ 0x0A ‖ 0xff ‖ {@link TIMESTAMP_IDENTIFIER})[:4]. */
export function timestampKeyId(name: string): Buffer {
  return createHash('sha256').update(`${name}\n`, 'utf8').update(Buffer.of(SIG_UNASSIGNED)).update(TIMESTAMP_IDENTIFIER, 'latin1').digest().subarray(0, 4);
}

/** The time-stamp line of a checkpoint: `— <name> base64(key ID ‖ DER TimeStampResp)\n` (RFC 3161 §2.4.2). */
export function timestampLine(name: string, tsr: Buffer): string {
  return `— ${name} ${Buffer.concat([timestampKeyId(name), tsr]).toString('base64')}\n`;
}

/** The time-stamp lines of a note: signature lines whose key ID is the one {@link timestampKeyId} gives their name; the DER TimeStampResp of each. */
export function timestampsOf(note: Note): { name: string; tsr: Buffer }[] {
  return note.signatures.filter((s: NoteSignature) => s.keyId.equals(timestampKeyId(s.name))).map((s) => ({ name: s.name, tsr: s.signature }));
}

/** A note with one more signature line (`line`, ending in a newline). */
export function withLine(note: string, line: string): string {
  return formatNote(parseNote(note + line));
}
