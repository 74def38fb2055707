/**
 * What a witness remembers of each log: the latest checkpoint it cosigned
 * (size, root hash, and the note it serves to monitors: the checkpoint
 * with the log's signatures it verified and its own cosignature). One
 * JSON file per log in the state folder, named by the SHA-256 of the
 * origin (as tlog-witness's monitoring URL names it). A check-and-update
 * runs under that log's lock, one at a time, and a new state is written
 * to a temporary file, fsynced, renamed over the old one and the folder
 * fsynced: a crash leaves the old state or the new one, never a mix, and
 * nothing is cosigned before its state is on disk.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { open, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';

/** The latest checkpoint a witness cosigned for one log. */
export interface LogState {
  readonly origin: string;
  readonly size: number;
  /** 32 bytes */
  readonly rootHash: Buffer;
  /** the cosigned checkpoint as served to monitors (note text, the log's verified signatures, the witness's cosignature) */
  readonly note: string;
}

/** A state file that cannot be read or trusted: the file and why (the witness refuses that log until someone looks). */
export class WitnessStateError extends Error {
  override name = 'WitnessStateError';
}

/** The most bytes a state file may have (a note is at most 64 KiB). */
const MAX_STATE_BYTES = 256 * 1024;

/** The lower-case hex SHA-256 of an origin: the name of its state and of its monitoring URL (tlog-witness). */
export function originHash(origin: string): string {
  return createHash('sha256').update(origin, 'utf8').digest('hex');
}

/** One log's state files, read and written only under its lock. */
export class WitnessState {
  private readonly tails = new Map<string, Promise<unknown>>();
  private serial = 0;

  /**
   * @param dir the state folder (made when missing, mode 0700); temporary
   *   files a crash left in it are removed (call it only with the folder's
   *   lock held)
   */
  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    for (const f of readdirSync(dir)) if (/^[0-9a-f]{64}\.json\.\d+\.\d+\.tmp$/.test(f)) rmSync(path.join(dir, f), { force: true });
  }

  private file(origin: string): string {
    return path.join(this.dir, `${originHash(origin)}.json`);
  }

  /**
   * Runs `fn` while no other `locked` call of the same origin runs (calls
   * of one origin run in the order they were made; other origins are not
   * held up).
   */
  async locked<T>(origin: string, fn: () => Promise<T> | T): Promise<T> {
    const before = this.tails.get(origin) ?? Promise.resolve();
    const run = before.then(fn);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(origin, tail);
    try {
      return await run;
    } finally {
      if (this.tails.get(origin) === tail) this.tails.delete(origin);
    }
  }

  /**
   * The state of `origin` on disk; `undefined` when the witness never
   * cosigned for it. Call under {@link locked}.
   * @throws WitnessStateError when the file exists but cannot be read, is
   *   too large, is not a state, or names another origin
   */
  async read(origin: string): Promise<LogState | undefined> {
    const file = this.file(origin);
    let text: string;
    try {
      const buf = await readFile(file);
      if (buf.length > MAX_STATE_BYTES) throw new WitnessStateError(`${file}: ${buf.length} bytes, more than a state file has`);
      text = buf.toString('utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      if (err instanceof WitnessStateError) throw err;
      throw new WitnessStateError(`${file}: cannot read: ${(err as Error).message}`);
    }
    let v: { origin?: unknown; size?: unknown; root_hash?: unknown; note?: unknown };
    try {
      v = JSON.parse(text) as typeof v;
    } catch {
      throw new WitnessStateError(`${file}: not JSON`);
    }
    const root = typeof v.root_hash === 'string' ? Buffer.from(v.root_hash, 'base64') : Buffer.alloc(0);
    if (v.origin !== origin || !Number.isSafeInteger(v.size) || (v.size as number) < 0 || root.length !== 32 || typeof v.note !== 'string')
      throw new WitnessStateError(`${file}: not the state of ${origin}`);
    return { origin, size: v.size as number, rootHash: root, note: v.note };
  }

  /**
   * Replaces the state of `s.origin` on disk, durably (temporary file,
   * fsync, rename, fsync of the folder). Call under {@link locked}.
   */
  async write(s: LogState): Promise<void> {
    const file = this.file(s.origin);
    const tmp = `${file}.${process.pid}.${++this.serial}.tmp`;
    const body = `${JSON.stringify({ origin: s.origin, size: s.size, root_hash: s.rootHash.toString('base64'), note: s.note, updated: new Date().toISOString() })}\n`;
    const fh = await open(tmp, 'wx', 0o600);
    try {
      await fh.writeFile(body);
      await fh.sync();
    } catch (err) {
      await fh.close();
      await rm(tmp, { force: true });
      throw err;
    }
    await fh.close();
    await rename(tmp, file);
    const dir = await open(this.dir, 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  }
}
