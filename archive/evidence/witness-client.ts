/**
 * The client side of C2SP tlog-witness: a log submits a new checkpoint
 * with a consistency proof from the size the witness last cosigned
 * (`POST <url>/add-checkpoint`), and keeps the witness's timestamped
 * cosignatures (C2SP tlog-cosignature, Ed25519, type 0x04) that verify
 * over that checkpoint. A witness's answer is hostile input: bounded in
 * bytes and time, and only lines of its own key that verify are kept.
 */
import { BoundedPostError, boundedPost } from './bounded-post.js';
import {
  cosignatureTime,
  formatNote,
  MAX_NOTE_BYTES,
  parseCheckpointText,
  parseNote,
  SIG_COSIGNATURE_V1,
  SignedNoteError,
  type VerifierKey,
  verifyNote,
} from './signed-note.js';

/** A witness as a log's config names it: its name, URL prefix (`<url>/add-checkpoint`) and cosignature key (type 0x04). */
export interface WitnessEndpoint {
  readonly name: string;
  readonly url: string;
  readonly key: VerifierKey;
}

/** What a log submits (tlog-witness "add-checkpoint"). */
export interface AddCheckpointRequest {
  /** the size of the checkpoint the witness last cosigned for this log (0 the first time) */
  readonly oldSize: number;
  /** the consistency proof from `oldSize` to the checkpoint's size (RFC 6962 §2.1.2), 32-byte hashes; empty when `oldSize` is 0 or equal */
  readonly proof: readonly Buffer[];
  /** the signed checkpoint note (text, blank line, the log's signature lines) */
  readonly note: string;
}

/** Limits of one submission. */
export interface AddCheckpointOptions {
  /** the whole exchange, ms (default {@link WITNESS_TIMEOUT_MS}) */
  readonly timeoutMs?: number;
  /** ends the exchange early */
  readonly signal?: AbortSignal;
}

/** How long a submission may take by default, ms. */
export const WITNESS_TIMEOUT_MS = 10_000;

/** The most consistency proof lines a request may carry (tlog-witness). */
export const MAX_PROOF_LINES = 63;

/**
 * A submission that failed: the one-line reason, and for an answer the
 * witness's HTTP status. With status 409 the witness has cosigned another
 * size for this log: `recordedSize` is that size (its `text/x.tlog.size`
 * answer), from which the log submits again with the proof from it.
 */
export class WitnessError extends Error {
  override name = 'WitnessError';
  constructor(
    message: string,
    /** the witness's HTTP status; undefined when it gave none (no connection, timeout, a bad request not sent) */
    readonly status?: number,
    /** with 409: the size of the latest checkpoint the witness cosigned for this log */
    readonly recordedSize?: number,
  ) {
    super(message);
  }
}

/** The request body of add-checkpoint: `old <size>`, the proof lines, a blank line, the note. */
function requestBody(req: AddCheckpointRequest, who: string): { body: string; text: string } {
  const bad = (why: string) => new WitnessError(`${who}: not sent: ${why}`);
  let text: string;
  let treeSize: number;
  try {
    text = parseNote(req.note).text;
    treeSize = parseCheckpointText(text).treeSize;
  } catch (err) {
    throw bad((err as Error).message);
  }
  if (!Number.isSafeInteger(req.oldSize) || req.oldSize < 0) throw bad(`old size ${req.oldSize} is not a whole number`);
  if (req.oldSize > treeSize) throw bad(`old size ${req.oldSize} is larger than the checkpoint's ${treeSize}`);
  if (req.proof.length > MAX_PROOF_LINES) throw bad(`a proof of ${req.proof.length} hashes (at most ${MAX_PROOF_LINES})`);
  if (req.proof.some((h) => h.length !== 32)) throw bad('a proof hash that is not 32 bytes');
  const lines = req.proof.map((h) => `${h.toString('base64')}\n`).join('');
  return { body: `old ${req.oldSize}\n${lines}\n${req.note}`, text };
}

/** At most 200 characters of an error answer, on one line. */
function gist(body: Buffer): string {
  // eslint-disable-next-line no-control-regex
  const controls = /[\u0000-\u001f\u007f]+/g;
  const s = body.subarray(0, 400).toString('utf8').replace(controls, ' ').trim();
  return s.length > 200 ? `${s.slice(0, 200)}…` : s;
}

/**
 * Submits a checkpoint to a witness (C2SP tlog-witness "add-checkpoint")
 * and returns its cosignatures: the signature lines of the answer made by
 * `witness.key` (name and key ID) that verify as tlog-cosignature v1 over
 * the checkpoint's note text with a non-zero timestamp, each as a whole
 * line `— <name> <base64>\n`, ready to append to the note. Lines of other
 * keys are ignored.
 *
 * @throws WitnessError with the witness's status when it refuses (403,
 *   404, 409 with `recordedSize`, 422, …), answers no verifying
 *   cosignature of its key, a cosignature of its key that does not verify,
 *   or an answer that is malformed or over 64 KiB; without a status when
 *   the request is malformed (not sent), the witness cannot be reached,
 *   or gives no answer within `timeoutMs`
 */
export async function addCheckpoint(witness: WitnessEndpoint, req: AddCheckpointRequest, opts: AddCheckpointOptions = {}): Promise<string[]> {
  const who = `witness ${witness.name}`;
  if (witness.key.type !== SIG_COSIGNATURE_V1) throw new WitnessError(`${who}: its key is not a cosignature key (signature type 0x04)`);
  const { body, text } = requestBody(req, who);
  let answer;
  try {
    answer = await boundedPost(`${witness.url.replace(/\/+$/, '')}/add-checkpoint`, body, {
      contentType: 'text/plain; charset=utf-8',
      timeoutMs: opts.timeoutMs ?? WITNESS_TIMEOUT_MS,
      maxBytes: MAX_NOTE_BYTES,
      signal: opts.signal,
    });
  } catch (err) {
    if (err instanceof BoundedPostError) throw new WitnessError(`${who}: ${err.message}`);
    throw err;
  }
  if (answer.status === 409) {
    const m = /^(0|[1-9][0-9]{0,15})\n$/.exec(answer.body.toString('latin1'));
    const size = m ? Number(m[1]) : NaN;
    if (answer.contentType !== 'text/x.tlog.size' || !Number.isSafeInteger(size))
      throw new WitnessError(`${who}: 409 without its size as text/x.tlog.size: ${gist(answer.body)}`, 409);
    throw new WitnessError(`${who}: 409: it last cosigned size ${size}, not ${req.oldSize}`, 409, size);
  }
  if (answer.status !== 200) throw new WitnessError(`${who}: ${answer.status}: ${gist(answer.body) || 'no reason given'}`, answer.status);
  return cosignaturesOf(answer.body, text, witness.key, who);
}

/** The verifying cosignature lines of `key` in a 200 answer (signature lines only) over `text`. */
function cosignaturesOf(body: Buffer, text: string, key: VerifierKey, who: string): string[] {
  const s = body.toString('utf8');
  if (s === '' || !s.endsWith('\n') || s.split('\n').some((l, i, all) => (i < all.length - 1 ? !l.startsWith('— ') : l !== '')))
    throw new WitnessError(`${who}: 200 but not signature lines: ${gist(body)}`, 200);
  let lines;
  try {
    lines = parseNote(Buffer.concat([Buffer.from(`${text}\n`, 'utf8'), body])).signatures;
  } catch (err) {
    if (err instanceof SignedNoteError) throw new WitnessError(`${who}: 200 but ${err.message}`, 200);
    throw err;
  }
  const mine = lines.filter((l) => l.name === key.name && l.keyId.equals(key.keyId));
  if (mine.length === 0) throw new WitnessError(`${who}: 200 but no cosignature by its key ${key.name}`, 200);
  return mine.map((line) => {
    const one = { text, signatures: [line] };
    try {
      verifyNote(one, [key]);
    } catch {
      throw new WitnessError(`${who}: its cosignature does not verify over the checkpoint`, 200);
    }
    if (cosignatureTime(line.signature) === 0) throw new WitnessError(`${who}: a cosignature with timestamp 0`, 200);
    return formatNote(one).slice(text.length + 1);
  });
}
