/**
 * What a C2SP tlog-witness decides for one add-checkpoint request, and
 * the checkpoint it serves to monitors. The checks, in the spec's order:
 * a body that is not `old <size>`, at most 63 proof lines, a blank line
 * and a signed checkpoint is 400; an origin it does not witness 404; no
 * signature of a key it trusts for that origin, or one that fails, 403;
 * an old size above the checkpoint's 400; an old size that is not the
 * size it last cosigned 409 (with that size, `text/x.tlog.size`); a
 * checkpoint of size 0 whose root is not the empty tree's, a proof with
 * old size 0, a same-size checkpoint with another root, or a consistency
 * proof (RFC 6962 §2.1.2) that does not verify, 422. Otherwise the new
 * state is on disk before the 200 and its cosignature line (type 0x04,
 * timestamp in seconds) are given. Check and update run under the log's
 * lock, so that two requests of one log never both pass on one old size.
 */
import { EMPTY_ROOT, verifyConsistency } from './merkle.js';
import {
  type Checkpoint,
  cosignatureLine,
  formatNote,
  type NoteSigner,
  parseCheckpointText,
  parseNote,
  SIG_COSIGNATURE_V1,
  type VerifierKey,
  verifierKeyOf,
  verifyNote,
} from './signed-note.js';
import { type LogState, originHash, type WitnessState, WitnessStateError } from './witness-state.js';

/** The most bytes of an add-checkpoint request body. */
export const MAX_ADD_CHECKPOINT_BYTES = 64 * 1024;
/** The most consistency proof lines of a request (tlog-witness). */
const MAX_PROOF_LINES = 63;

/** A witness's answer: status, media type, body; `reason` and the fields to log. */
export interface WitnessAnswer {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
  /** why it refused, one line (logged; sent as the body of a refusal) */
  readonly reason?: string;
  /** what the log line says of the request */
  readonly fields: Readonly<Record<string, unknown>>;
}

/** A parsed add-checkpoint request. */
interface Submission {
  readonly oldSize: number;
  readonly proof: Buffer[];
  readonly noteText: string;
  readonly checkpoint: Checkpoint;
  readonly note: ReturnType<typeof parseNote>;
}

/** A refusal before or during the checks. */
class Refusal extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** with 409: the size last cosigned */
    readonly recordedSize?: number,
  ) {
    super(message);
  }
}

/** Standard base64 of exactly 32 bytes. */
const HASH_LINE = /^[A-Za-z0-9+/]{43}=$/;

/** Reads an add-checkpoint body (tlog-witness "add-checkpoint"). @throws Refusal 400 */
function parseSubmission(body: Buffer): Submission {
  let s: string;
  try {
    s = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(body);
  } catch {
    throw new Refusal(400, 'the body is not UTF-8');
  }
  const first = s.indexOf('\n');
  const m = /^old (0|[1-9][0-9]{0,15})$/.exec(first < 0 ? s : s.slice(0, first));
  if (!m || !Number.isSafeInteger(Number(m[1]))) throw new Refusal(400, 'the body does not begin with "old <size>"');
  const proof: Buffer[] = [];
  let at = first + 1;
  for (;;) {
    const end = s.indexOf('\n', at);
    if (end < 0) throw new Refusal(400, 'no blank line before the checkpoint');
    const line = s.slice(at, end);
    at = end + 1;
    if (line === '') break;
    if (proof.length === MAX_PROOF_LINES) throw new Refusal(400, `more than ${MAX_PROOF_LINES} consistency proof lines`);
    if (!HASH_LINE.test(line)) throw new Refusal(400, `consistency proof line ${proof.length + 1} is not a base64 SHA-256 hash`);
    proof.push(Buffer.from(line, 'base64'));
  }
  try {
    const note = parseNote(s.slice(at));
    return { oldSize: Number(m[1]), proof, noteText: note.text, checkpoint: parseCheckpointText(note.text), note };
  } catch (err) {
    throw new Refusal(400, `the checkpoint: ${(err as Error).message}`);
  }
}

/** The consistency checks against the recorded state (422 and 409 refusals). @throws Refusal */
function checkConsistency(sub: Submission, recorded: LogState | undefined): void {
  const { oldSize, proof, checkpoint: c } = sub;
  const recordedSize = recorded?.size ?? 0;
  if (oldSize !== recordedSize) throw new Refusal(409, `old size ${oldSize} is not the size last cosigned, ${recordedSize}`, recordedSize);
  if (c.treeSize === 0 && !c.rootHash.equals(EMPTY_ROOT)) throw new Refusal(422, 'a checkpoint of size 0 whose root is not the empty tree hash');
  if (oldSize === 0) {
    if (proof.length) throw new Refusal(422, 'a consistency proof with old size 0');
    return;
  }
  if (oldSize === c.treeSize && !c.rootHash.equals(recorded!.rootHash))
    throw new Refusal(422, `size ${c.treeSize} again with another root hash than the one cosigned`);
  if (!verifyConsistency(oldSize, c.treeSize, recorded!.rootHash, c.rootHash, proof))
    throw new Refusal(422, `the consistency proof from size ${oldSize} to ${c.treeSize} does not verify`);
}

/** A C2SP tlog-witness: its key, the logs it accepts, its state. */
export class WitnessService {
  /** the witness's verifier key (type 0x04), as logs configure it */
  readonly verifierKey: VerifierKey;
  private readonly byHash: Map<string, string>;

  constructor(
    private readonly signer: NoteSigner,
    private readonly logs: ReadonlyMap<string, readonly VerifierKey[]>,
    private readonly state: WitnessState,
    /** the clock of cosignatures, ms since the epoch */
    private readonly now: () => number = Date.now,
  ) {
    this.verifierKey = verifierKeyOf(signer.name, signer.privateKey, SIG_COSIGNATURE_V1);
    this.byHash = new Map([...logs.keys()].map((o) => [originHash(o), o]));
  }

  /** Answers `POST /add-checkpoint` with `body` (at most {@link MAX_ADD_CHECKPOINT_BYTES}). Never throws. */
  async addCheckpoint(body: Buffer): Promise<WitnessAnswer> {
    let sub: Submission | undefined;
    const fields = () => (sub ? { origin: sub.checkpoint.origin, old: sub.oldSize, size: sub.checkpoint.treeSize } : {});
    try {
      sub = parseSubmission(body);
      const { checkpoint: c } = sub;
      const keys = this.logs.get(c.origin);
      if (!keys) throw new Refusal(404, `unknown log origin ${JSON.stringify(c.origin.slice(0, 200))}`);
      let verified: readonly VerifierKey[];
      try {
        verified = verifyNote(sub.note, keys).verified;
      } catch (err) {
        throw new Refusal(403, (err as Error).message);
      }
      if (sub.oldSize > c.treeSize) throw new Refusal(400, `old size ${sub.oldSize} is larger than the checkpoint's ${c.treeSize}`);
      const line = await this.state.locked(c.origin, () => this.cosign(sub!, verified));
      return { status: 200, contentType: 'text/plain; charset=utf-8', body: line, fields: { ...fields(), root: c.rootHash.toString('base64') } };
    } catch (err) {
      if (err instanceof Refusal) {
        const misbehaviour = err.status === 422 ? { note: sub && formatNote(sub.note), proof: sub?.proof.map((p) => p.toString('base64')) } : {};
        if (err.status === 409) return { status: 409, contentType: 'text/x.tlog.size', body: `${err.recordedSize}\n`, reason: err.message, fields: fields() };
        return {
          status: err.status,
          contentType: 'text/plain; charset=utf-8',
          body: `${err.message}\n`,
          reason: err.message,
          fields: { ...fields(), ...misbehaviour },
        };
      }
      const reason = err instanceof WitnessStateError ? err.message : `internal error: ${(err as Error).message}`;
      return { status: 500, contentType: 'text/plain; charset=utf-8', body: 'the witness cannot answer for this log now\n', reason, fields: fields() };
    }
  }

  /** Under the log's lock: the consistency checks, the new state on disk, the cosignature line. */
  private async cosign(sub: Submission, verified: readonly VerifierKey[]): Promise<string> {
    const { checkpoint: c } = sub;
    checkConsistency(sub, await this.state.read(c.origin));
    const seconds = Math.floor(this.now() / 1000);
    const line = cosignatureLine(sub.noteText, this.signer, seconds);
    const logLines = verified.map((v) => sub.note.signatures.find((s) => s.name === v.name && s.keyId.equals(v.keyId))!);
    const served = formatNote({ text: sub.noteText, signatures: logLines }) + line;
    await this.state.write({ origin: c.origin, size: c.treeSize, rootHash: c.rootHash, note: served });
    return line;
  }

  /**
   * Answers `GET /<origin hash>/checkpoint` (tlog-witness "Monitor
   * Retrieval"): the latest checkpoint cosigned for the log whose origin
   * has that lower-case hex SHA-256, with the log's signatures and the
   * witness's cosignature; 404 for a log it does not witness or never
   * cosigned.
   */
  async checkpointOf(hash: string): Promise<WitnessAnswer> {
    const origin = this.byHash.get(hash);
    const notFound = (reason: string): WitnessAnswer => ({ status: 404, contentType: 'text/plain; charset=utf-8', body: `${reason}\n`, reason, fields: {} });
    if (!origin) return notFound('no such log');
    try {
      const s = await this.state.locked(origin, () => this.state.read(origin));
      if (!s) return notFound('no checkpoint of this log cosigned yet');
      return { status: 200, contentType: 'text/plain; charset=utf-8', body: s.note, fields: { origin, size: s.size } };
    } catch (err) {
      return {
        status: 500,
        contentType: 'text/plain; charset=utf-8',
        body: 'the witness cannot answer for this log now\n',
        reason: (err as Error).message,
        fields: { origin },
      };
    }
  }
}
