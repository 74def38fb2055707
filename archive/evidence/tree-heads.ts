/**
 * Signed tree heads (STH) of the evidence logs (docs/evidence.md "Signed
 * tree heads"): the daemon looks at each local archive's log once a
 * second and, when it has entries its newest head does not cover (or no
 * head at all: an empty log has one of size 0), signs the tree as it
 * stands: Ed25519 (signing-key.ts) over the UTF-8 of
 * `<origin>
<tree_size>
<root_hash base64>
<timestamp ms>`, the
 * origin naming the archive's log (tlog-config.ts `logOrigin`), so that
 * one archive's head never verifies as another's. Heads signed before
 * heads named their log have no origin and cover the three lines after
 * it. Heads are kept forever (`log_head`), one per size: every replica of
 * an archive may sign, the first to store a size keeps it (insert if
 * absent). Before signing, the tree is checked against the log's last
 * published checkpoint (checkpoint-anchor.ts): a log cut back is never
 * signed.
 *
 * One log has one key: a daemon whose key did not sign the newest head of
 * a log (a replica given another `signing_key_file`) does not start
 * ({@link TreeHeadSigner.checkKey}); one that finds such a head later
 * (another replica, started at the same time on an empty log, signed
 * first) signs no more heads of that log, serves none of them (503: it
 * could only name its own key beside them), and says so in
 * {@link TreeHeadSigner.problem}, which `/healthz` reports.
 */
import { httpError } from '#shared/http-error.js';
import { type LogStore, rootOf, type TreeHead } from './log.js';
import { type SigningKey, SigningKeyError, verifySignature } from './signing-key.js';

/** A tree head as the `/log` JSON gives it. */
export interface TreeHeadJson {
  /** the log's origin the signature covers; `null` for a head signed before heads named their log */
  origin: string | null;
  tree_size: number;
  /** base64 */
  root_hash: string;
  /** ms since the epoch */
  timestamp: number;
  /** base64 Ed25519 over {@link signedText} */
  signature: string;
  /** base64 SPKI DER of the key */
  public_key: string;
}

/**
 * The bytes a tree head's signature covers: UTF-8 of
 * `<origin>\n<tree_size>\n<root_hash base64>\n<timestamp>`; for a head
 * without an origin (`null`: signed before heads named their log),
 * `<tree_size>\n<root_hash base64>\n<timestamp>`.
 */
export function signedText(treeSize: number, rootHash: Buffer, timestamp: number, origin: string | null = null): string {
  const text = `${treeSize}\n${rootHash.toString('base64')}\n${timestamp}`;
  return origin === null ? text : `${origin}\n${text}`;
}

/** The JSON of a stored head, with the key's public half. */
export function headJson(h: TreeHead, publicKeyBase64: string): TreeHeadJson {
  return {
    origin: h.origin ?? null,
    tree_size: h.tree_size,
    root_hash: h.root_hash.toString('base64'),
    timestamp: h.timestamp,
    signature: h.signature.toString('base64'),
    public_key: publicKeyBase64,
  };
}

/** Whether `h`'s signature is the one of its size, root and timestamp by the key `publicKeyDer`. */
export function headSignatureOk(h: TreeHead, publicKeyDer: Buffer): boolean {
  return verifySignature(publicKeyDer, signedText(h.tree_size, h.root_hash, h.timestamp, h.origin ?? null), h.signature);
}

/** What a signer needs to know of each archive's log besides its entries. */
export interface HeadSigning {
  /** The origin of `archive`'s log (tlog-config.ts `logOrigin`). */
  origin(archive: string): string;
  /** Checks the tree about to be signed (size and root) against the log's last published checkpoint; throws to refuse (checkpoint-anchor.ts). */
  check?(archive: string, size: number, root: Buffer): Promise<void>;
}

/**
 * Why a daemon with `key` must neither sign nor serve the log of `archive`
 * whose newest head is `head`: the head does not verify with that key
 * (another daemon signed it with another one); `undefined` when it does,
 * or when there is no head yet.
 */
export function foreignKeyProblem(archive: string, head: TreeHead | undefined, key: SigningKey): string | undefined {
  if (!head || headSignatureOk(head, key.publicKeyDer)) return undefined;
  return `the evidence log of archive ${archive} has a tree head (size ${head.tree_size}) signed with another key than this daemon's signing_key_file: it neither signs nor serves that log; give every daemon of the archive the same signing_key_file and restart this one`;
}

/** How often the daemon looks for entries to sign, ms. */
const INTERVAL_MS = 1000;

/** Signs the tree heads of the `archives` named (see the module comment). */
export class TreeHeadSigner {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> = Promise.resolve();
  private closed = false;
  /** Per archive, why this daemon must not sign or serve its log ({@link foreignKeyProblem}). */
  private readonly foreign = new Map<string, string>();
  /** Per archive, the signature of the newest head found to verify with this key (so that it is checked once). */
  private readonly verified = new Map<string, Buffer>();
  /** Why the last round failed; `undefined` after one that did not. */
  private failed: string | undefined;

  /**
   * @param onError what a failed round says (the next round tries again)
   * @param signing the logs' origins, and the check of a tree against the log's last published checkpoint
   */
  constructor(
    private readonly log: LogStore,
    readonly key: SigningKey,
    private readonly archives: readonly string[],
    private readonly onError: (err: Error) => void = () => undefined,
    readonly signing: HeadSigning = { origin: (a) => a },
  ) {}

  /**
   * Checks that the newest kept head of each archive's log verifies with
   * this daemon's key, so that a daemon given another key file (a replica
   * set up without the shared one, an archive moved by `migrate` to a new
   * data folder) does not start signing a log that others signed.
   * @param keyFile the key's path, for the message
   * @throws SigningKeyError naming the archive and the setting to fix
   */
  async checkKey(keyFile: string): Promise<void> {
    for (const a of this.archives) {
      const head = await this.log.head(a);
      if (head && !headSignatureOk(head, this.key.publicKeyDer))
        throw new SigningKeyError(
          `${keyFile}: the evidence log of archive ${a} was signed with another key (its tree head of size ${head.tree_size}); give this daemon the signing_key_file the log was signed with`,
        );
    }
  }

  /**
   * What keeps this daemon from signing its logs, one line; `undefined`
   * when nothing does: a log whose newest head another key signed, or the
   * last round's failure (the index unreachable…).
   */
  get problem(): string | undefined {
    const [foreign] = this.foreign.values();
    return foreign ?? (this.failed === undefined ? undefined : `the evidence log could not be signed: ${this.failed}`);
  }

  /**
   * `head` of `archive`'s log, when this daemon's key signed it; else the
   * log is marked as another key's ({@link problem}).
   * @throws HttpError 503 when this key did not sign it: the daemon would name the wrong public key beside it
   */
  servable(archive: string, head: TreeHead): TreeHead {
    if (this.verified.get(archive)?.equals(head.signature)) return head;
    const problem = foreignKeyProblem(archive, head, this.key);
    if (problem) {
      this.foreign.set(archive, problem);
      throw httpError(503, problem);
    }
    this.verified.set(archive, head.signature);
    return head;
  }

  /** Starts looking once a second (the timer keeps no process alive). */
  start(): void {
    if (this.timer || this.closed) return;
    this.timer = setInterval(() => {
      this.running = this.running.then(() => this.round()).catch((err: Error) => this.onError(err));
    }, INTERVAL_MS);
    this.timer.unref();
  }

  /**
   * One round: each archive whose log its newest head does not cover gets
   * a new head, unless another key signed that head (then the log is
   * marked, once, and left alone).
   */
  private async round(): Promise<void> {
    try {
      for (const a of this.archives) {
        if (this.closed) return;
        const problem = foreignKeyProblem(a, await this.log.head(a), this.key);
        if (problem) {
          if (!this.foreign.has(a)) this.onError(new SigningKeyError(problem));
          this.foreign.set(a, problem);
          continue;
        }
        await this.newest(a);
      }
      this.failed = undefined;
    } catch (err) {
      this.failed = (err as Error).message;
      throw err;
    }
  }

  /**
   * The newest head of `archive`'s log: the kept one when it covers at
   * least `atLeast` entries (default: every entry committed now), else
   * one signed now over the tree as it stands.
   * @throws HttpError 503 when another key signed it ({@link servable})
   */
  async newest(archive: string, atLeast?: number): Promise<TreeHead> {
    const head = await this.log.head(archive);
    // Never signed after, nor served beside this key, a head another key signed.
    if (head) this.servable(archive, head);
    if (head && atLeast !== undefined && head.tree_size >= atLeast) return head;
    const size = await this.log.size(archive);
    if (head && head.tree_size >= size) return head;
    return this.servable(archive, await this.sign(archive, size));
  }

  /** Signs the tree of `archive` of size `size` (its entries committed), keeps the head unless one of that size is kept, and returns the kept one. */
  private async sign(archive: string, size: number): Promise<TreeHead> {
    // Another daemon of this archive may have been given another key: never sign after a head this key did not sign.
    const prev = await this.log.head(archive);
    if (prev) this.servable(archive, prev);
    const root = await rootOf(this.log, archive, size);
    await this.signing.check?.(archive, size, root);
    const origin = this.signing.origin(archive);
    const timestamp = Date.now();
    const signature = this.key.sign(signedText(size, root, timestamp, origin));
    const made = { archive_id: archive, tree_size: size, root_hash: root, timestamp, signature, origin };
    await this.log.addHead(made);
    // The kept head of that size (another daemon's, when it stored one first); this one when the write is not visible to reads yet.
    return (await this.log.head(archive, size)) ?? made;
  }

  /** Stops the timer and waits for a round in progress. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }
}
