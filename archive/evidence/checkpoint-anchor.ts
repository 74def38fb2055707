/**
 * The log's anchor outside the database (docs/evidence.md "The anchor"):
 * the last checkpoint published of each archive's log is kept beside the
 * signing key file (`<signing_key_file>.checkpoints/<archive id>`, the
 * signed note as served), and before the daemon signs anything (a tree
 * head, a checkpoint) it checks that the log in the database still holds
 * that tree: at least as many entries, and the same root over the first
 * ones. Someone who can write the database alone (delete the newest
 * entries and mementos) can then no longer make the archive sign a log
 * that was cut back: it refuses, says why in one line, and reports
 * itself unhealthy. A checkpoint another daemon of the archive published
 * (it is in the database) is taken as the anchor once it checks out.
 */
import { OperatorError } from '#shared/operator-error.js';
import { mkdirSync, openSync, readFileSync, renameSync, writeSync, closeSync, fsyncSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { readCheckpoint } from './checkpoint.js';
import { type LogStore, rootOf } from './log.js';
import type { SigningKey } from './signing-key.js';
import { MAX_NOTE_BYTES } from './signed-note.js';

/** The log in the database does not hold the tree of its last published checkpoint: the one-line reason. */
export class LogAnchorError extends OperatorError {
  override name = 'LogAnchorError';
}

/** The tree a log was last published at. */
export interface Anchor {
  size: number;
  root: Buffer;
  /** the checkpoint note, as published */
  note: string;
}

/** The folder of the anchors of the logs signed with `keyFile`: `<keyFile>.checkpoints`. */
export function anchorDir(keyFile: string): string {
  return `${keyFile}.checkpoints`;
}

/**
 * The anchor of `archive` kept in `dir`, checked (the log's signature
 * with `key`); `undefined` when there is none.
 * @throws LogAnchorError when the file cannot be read, or holds no checkpoint the key signed
 */
export function readAnchorFile(dir: string, archive: string, key: Pick<SigningKey, 'publicKeyDer'>): Anchor | undefined {
  const file = path.join(dir, archive);
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new LogAnchorError(`${file}: ${(err as Error).message}`);
  }
  if (bytes.length > MAX_NOTE_BYTES) throw new LogAnchorError(`${file}: ${bytes.length} bytes is too large for a checkpoint`);
  try {
    const c = readCheckpoint(bytes, key);
    return { size: c.treeSize, root: c.rootHash, note: bytes.toString('utf8') };
  } catch (err) {
    throw new LogAnchorError(`${file}: not a checkpoint signed with this archive's key: ${(err as Error).message}`);
  }
}

/** Writes `note` as the anchor of `archive` in `dir`: a temporary file, fsynced, renamed over the old one, the folder fsynced. */
function writeAnchorFile(dir: string, archive: string, note: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  const file = path.join(dir, archive);
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = openSync(tmp, 'w', 0o644);
  try {
    writeSync(fd, note);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    renameSync(tmp, file);
  } catch (err) {
    unlinkSync(tmp);
    throw err;
  }
  const d = openSync(dir, 'r');
  try {
    fsyncSync(d);
  } finally {
    closeSync(d);
  }
}

/** The anchors of one key's logs (see the module comment). */
export class LogAnchors {
  /** The largest anchor seen per archive (the file may be replaced by another daemon's, never by a smaller one of ours). */
  private readonly known = new Map<string, Anchor>();
  readonly dir: string;

  constructor(
    keyFile: string,
    private readonly key: Pick<SigningKey, 'publicKeyDer'>,
    private readonly log: LogStore,
  ) {
    this.dir = anchorDir(keyFile);
  }

  /** The anchor of `archive`: the larger of the file's and the last one this process saw. */
  current(archive: string): Anchor | undefined {
    const file = readAnchorFile(this.dir, archive, this.key);
    const mem = this.known.get(archive);
    const best = !file ? mem : !mem || file.size >= mem.size ? file : mem;
    if (best) this.known.set(archive, best);
    return best;
  }

  /**
   * Checks that `archive`'s log holds the tree of its anchor, and takes a
   * larger checkpoint published in the database (by another daemon) as
   * the anchor when the log holds its tree too.
   * @param size the size about to be signed (default: the log's)
   * @throws LogAnchorError (one line) when the log is shorter than the anchor, or its root there differs
   */
  async check(archive: string, size?: number): Promise<void> {
    const n = size ?? (await this.log.size(archive));
    let anchor = this.current(archive);
    const published = await this.log.checkpoint(archive);
    if (published && (!anchor || published.tree_size > anchor.size)) {
      const c = (() => {
        try {
          return readCheckpoint(published.note, this.key);
        } catch (err) {
          throw new LogAnchorError(
            `evidence log of archive ${archive}: its published checkpoint of size ${published.tree_size} in the database is not signed with this archive's key (${(err as Error).message}); not signing`,
          );
        }
      })();
      await this.holds(archive, n, { size: c.treeSize, root: c.rootHash, note: published.note }, 'the database');
      if (anchor) await this.holds(archive, n, anchor, this.dir);
      anchor = { size: c.treeSize, root: c.rootHash, note: published.note };
      this.advance(archive, anchor);
      return;
    }
    if (anchor) await this.holds(archive, n, anchor, this.dir);
  }

  /** Keeps `anchor` as `archive`'s anchor (file and memory) unless a larger one is kept. */
  advance(archive: string, anchor: Anchor): void {
    const now = this.current(archive);
    if (now && now.size >= anchor.size) return;
    writeAnchorFile(this.dir, archive, anchor.note);
    this.known.set(archive, anchor);
  }

  /** Whether the log of `size` entries extends the tree of `anchor`. @throws LogAnchorError */
  private async holds(archive: string, size: number, anchor: Anchor, where: string): Promise<void> {
    const name = `evidence log of archive ${archive}`;
    if (size < anchor.size)
      throw new LogAnchorError(
        `${name}: the database holds ${size} entries, fewer than the ${anchor.size} of its last published checkpoint (${where}): the log was cut back; not signing`,
      );
    const root = await rootOf(this.log, archive, anchor.size).catch((err: Error) => {
      throw new LogAnchorError(`${name}: ${err.message}; not signing`);
    });
    if (!root.equals(anchor.root))
      throw new LogAnchorError(
        `${name}: its first ${anchor.size} entries do not have the root of its last published checkpoint (${where}): the log was rewritten; not signing`,
      );
  }
}
