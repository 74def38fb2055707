/**
 * `verify`'s checks of the published checkpoints (docs/evidence.md
 * "Verify"): each kept checkpoint is signed by the archive's key under
 * its log's origin, its root is the root of the log's first entries of
 * its size, each cosignature of a configured witness on it verifies, and
 * its RFC 3161 token (if any) is over its note text, checks, and was not
 * made before the checkpoint could exist nor after it was published; and
 * the anchor beside the key file (checkpoint-anchor.ts) is a tree the log
 * still holds, and so is the checkpoint each witness last cosigned of
 * each log (asked for at the witness: C2SP tlog-witness's monitoring
 * address), so that a log cut back in the database (its entries,
 * mementos, heads and checkpoints deleted, the anchor too) is found. One
 * line per problem.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { boundedGet } from './bounded-post.js';
import { readAnchorFile } from './checkpoint-anchor.js';
import { readCheckpoint } from './checkpoint.js';
import type { WitnessSetting } from './tlog-config.js';
import { type CheckpointRow, type LogStore, rootOf } from './log.js';
import { MAX_NOTE_BYTES, type Note, parseCheckpointText, parseNote, verifyNote } from './signed-note.js';

/** What the checks are given. */
export interface CheckpointVerifyOptions {
  /** The archive's key (SPKI DER); `null`: there is none (each checkpoint is a problem); `undefined`: signatures not checked. */
  publicKeyDer: Buffer | null | undefined;
  /** The folder of the anchors (`<signing_key_file>.checkpoints`). */
  anchorDir?: string;
  /** The witnesses the config lists. */
  witnesses: readonly WitnessSetting[];
  /** Each local archive's log origin, to ask the witnesses about (none: they are not asked). */
  origins?: ReadonlyMap<string, string>;
}

/** Counts of what was checked. */
export interface CheckpointVerifyCounts {
  checkpoints: number;
  timestamps: number;
  anchors: number;
  /** Checkpoints the witnesses gave of the logs, checked. */
  witnessed: number;
  /** What could not be checked (a witness that did not answer), one line each. */
  notes: string[];
}

/** Rows read per query. */
const PAGE = 200;
/** Clock skew allowed between a token's time and the checkpoint's publication, ms. */
const SKEW_MS = 10 * 60_000;

/** Checks one kept checkpoint. */
async function checkOne(log: LogStore, c: CheckpointRow, size: number, o: CheckpointVerifyOptions, problem: (line: string) => void): Promise<boolean> {
  const name = `log ${c.archive_id} checkpoint of size ${c.tree_size}`;
  if (o.publicKeyDer === null) {
    problem(`${name}: no signing key file to check its signature with`);
    return false;
  }
  let cp: { treeSize: number; rootHash: Buffer; note: Note };
  try {
    if (o.publicKeyDer === undefined) {
      const note = parseNote(c.note);
      cp = { ...parseCheckpointText(note.text), note };
    } else cp = readCheckpoint(c.note, { publicKeyDer: o.publicKeyDer });
  } catch (err) {
    problem(`${name}: ${(err as Error).message}`);
    return false;
  }
  if (cp.treeSize !== c.tree_size) problem(`${name}: its note says size ${cp.treeSize}`);
  if (cp.treeSize > size) problem(`${name}: the log holds only ${size} entries: it was cut back below a published checkpoint`);
  else {
    const root = await rootOf(log, c.archive_id, cp.treeSize).catch(() => null);
    if (!root || !root.equals(cp.rootHash)) problem(`${name}: its root is not the root of the log's first ${cp.treeSize} entries`);
  }
  for (const w of o.witnesses) {
    try {
      verifyNote(cp.note, [w.key]);
    } catch (err) {
      if (!/no signature by a known key/.test((err as Error).message)) problem(`${name}: the cosignature of witness ${w.name} does not verify`);
    }
  }
  if (!c.tsr) return false;
  try {
    // Loaded here, not with the module: the daemon loads this module, and pkijs costs it memory.
    const { checkTimestamp } = await import('./timestamp.js');
    const info = await checkTimestamp(c.tsr, Buffer.from(cp.note.text, 'utf8'));
    if (info.genTime.getTime() > c.published + SKEW_MS) problem(`${name}: its time-stamp (${info.genTime.toISOString()}) is later than its publication`);
  } catch (err) {
    problem(`${name}: its time-stamp token: ${(err as Error).message}`);
  }
  return true;
}

/**
 * Checks every kept checkpoint of every archive, and each anchor file.
 * @param problem called with one line per problem
 */
export async function verifyCheckpoints(log: LogStore, o: CheckpointVerifyOptions, problem: (line: string) => void): Promise<CheckpointVerifyCounts> {
  const counts: CheckpointVerifyCounts = { checkpoints: 0, timestamps: 0, anchors: 0, witnessed: 0, notes: [] };
  const archives = new Set(await log.archives());
  const anchored =
    o.anchorDir && existsSync(o.anchorDir) ? readdirSync(o.anchorDir, { withFileTypes: true }).filter((e) => e.isFile() && !e.name.endsWith('.tmp')) : [];
  for (const e of anchored) archives.add(e.name);
  for (const archive of archives) {
    const size = await log.size(archive);
    for (let after = -1; ;) {
      const page = await log.checkpoints(archive, after, PAGE);
      for (const c of page) {
        counts.checkpoints++;
        if (await checkOne(log, c, size, o, problem)) counts.timestamps++;
      }
      if (page.length < PAGE) break;
      after = page[page.length - 1].tree_size;
    }
    if (!o.anchorDir || !o.publicKeyDer || !anchored.some((e) => e.name === archive)) continue;
    counts.anchors++;
    try {
      const anchor = readAnchorFile(o.anchorDir, archive, { publicKeyDer: o.publicKeyDer });
      if (!anchor) continue;
      const where = `the last published checkpoint kept in ${o.anchorDir}`;
      if (size < anchor.size) problem(`log ${archive}: ${size} entries, fewer than the ${anchor.size} of ${where}: the log was cut back`);
      else if (!(await rootOf(log, archive, anchor.size)).equals(anchor.root))
        problem(`log ${archive}: its first ${anchor.size} entries do not have the root of ${where}: the log was rewritten`);
    } catch (err) {
      problem(`log ${archive}: ${(err as Error).message}`);
    }
  }
  if (o.publicKeyDer && o.origins) await askWitnesses(log, { ...o, publicKeyDer: o.publicKeyDer, origins: o.origins }, counts, problem);
  return counts;
}

/** How long a witness may take to answer `verify`, ms. */
const WITNESS_TIMEOUT_MS = 10_000;

/**
 * Asks each witness for the checkpoint it last cosigned of each log
 * (`GET <url>/<SHA-256 of the origin, hex>/checkpoint`), and checks that
 * the log still holds its tree: as many entries at least, the same root.
 * A witness that does not answer, or never cosigned the log (404), is a
 * note, not a problem.
 */
async function askWitnesses(
  log: LogStore,
  o: { publicKeyDer: Buffer; witnesses: readonly WitnessSetting[]; origins: ReadonlyMap<string, string> },
  counts: CheckpointVerifyCounts,
  problem: (line: string) => void,
): Promise<void> {
  for (const [archive, origin] of o.origins) {
    for (const w of o.witnesses) {
      const url = `${w.url}/${createHash('sha256').update(origin).digest('hex')}/checkpoint`;
      const a = await boundedGet(url, { timeoutMs: WITNESS_TIMEOUT_MS, maxBytes: MAX_NOTE_BYTES }).catch((err: Error) => err);
      if (a instanceof Error || a.status !== 200) {
        if (a instanceof Error || a.status !== 404)
          counts.notes.push(`witness ${w.name}: its checkpoint of log ${origin} not read: ${a instanceof Error ? a.message : a.status}`);
        continue;
      }
      const name = `log ${archive}: the checkpoint witness ${w.name} last cosigned`;
      let cp;
      try {
        cp = readCheckpoint(a.body, { publicKeyDer: o.publicKeyDer }, origin);
        verifyNote(cp.note, [w.key]);
      } catch (err) {
        problem(`${name}: ${(err as Error).message}`);
        continue;
      }
      counts.witnessed++;
      const size = await log.size(archive);
      if (size < cp.treeSize) problem(`${name} has ${cp.treeSize} entries, the log ${size}: the log was cut back`);
      else if (!(await rootOf(log, archive, cp.treeSize)).equals(cp.rootHash))
        problem(`${name} (${cp.treeSize} entries) has another root than the log's first ${cp.treeSize} entries: the log was rewritten`);
    }
  }
}
