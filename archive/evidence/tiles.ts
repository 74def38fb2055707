/**
 * The evidence log as C2SP tlog-tiles (docs/evidence.md "Tiles"): tiles
 * of height 8, each the 256 (or, for a partial tile, the first W) hashes
 * of one level of the Merkle tree, and entry bundles, the entries behind
 * a level-0 tile, so that anyone can mirror the whole log and recompute
 * every root and proof without asking the archive anything.
 *
 * A tile at level L, index N holds the hashes of the perfect subtrees of
 * height 8·L (level 0: leaf hashes) N·256 … N·256+255: exactly the nodes
 * the index stores (`log_node`, and `log_leaf` for level 0), read in one
 * range query. An entry bundle holds each entry as a big-endian uint16
 * length and its bytes (the leaf text); an entry whose text the archive
 * does not publish (purged, or hidden by the access rules) has a
 * zero-length slot, its hash staying in the level-0 tile.
 *
 * Paths (relative to `/<id>/tlog/tile/`): `<L>/<N>[.p/<W>]` and
 * `entries/<N>[.p/<W>]`, N in 3-digit groups, all but the last prefixed
 * with `x` (`x001/x234/067`).
 */
import type { BundleEntry, LogStore } from './log.js';

/** Hashes per full tile (2^8). */
export const TILE_WIDTH = 256;
/** The longest entry a bundle can hold (uint16 length). */
export const MAX_ENTRY_BYTES = 0xffff;

/** A tile or bundle address, parsed. */
export interface TileAddress {
  /** `undefined` for an entry bundle. */
  level?: number;
  index: number;
  /** 1…255 for a partial tile; `undefined` for a full one. */
  width?: number;
}

/** A path that is not a tile address: the one-line reason. */
export class TilePathError extends Error {
  override name = 'TilePathError';
}

/** The path elements of a tile index: `x001/x234/067` for 1234067, `000` for 0. */
export function formatTileIndex(n: number): string {
  const digits = String(n);
  const groups: string[] = [];
  for (let end = digits.length; end > 0; end -= 3) groups.unshift(digits.slice(Math.max(0, end - 3), end).padStart(3, '0'));
  return groups.map((g, i) => (i < groups.length - 1 ? `x${g}` : g)).join('/');
}

/** The path of a tile or bundle below `tile/`: `<L>/<N>[.p/<W>]` or `entries/<N>[.p/<W>]`. */
export function formatTilePath(a: TileAddress): string {
  return `${a.level === undefined ? 'entries' : a.level}/${formatTileIndex(a.index)}${a.width === undefined ? '' : `.p/${a.width}`}`;
}

/**
 * Reads a path below `tile/` in its one canonical form (a path of
 * another form names no tile).
 * @throws TilePathError
 */
export function parseTilePath(path: string): TileAddress {
  if (path.length > 100) throw new TilePathError('a tile path of over 100 characters');
  const m = /^(entries|0|[1-9][0-9]?)\/((?:x[0-9]{3}\/)*)([0-9]{3})(?:\.p\/([1-9][0-9]{0,2}))?$/.exec(path);
  if (!m) throw new TilePathError(`not a tile path <level>/<index>[.p/<width>] or entries/<index>[.p/<width>]: ${JSON.stringify(path.slice(0, 60))}`);
  const level = m[1] === 'entries' ? undefined : Number(m[1]);
  if (level !== undefined && level > 63) throw new TilePathError(`tile level ${level} is over 63`);
  const digits = m[2].replace(/x|\//g, '') + m[3];
  if (digits.length > 15) throw new TilePathError('a tile index of over 15 digits');
  const index = Number(digits);
  const width = m[4] === undefined ? undefined : Number(m[4]);
  if (width !== undefined && width > 255) throw new TilePathError(`a partial tile's width is 1 to 255, not ${width}`);
  const a: TileAddress = { index };
  if (level !== undefined) a.level = level;
  if (width !== undefined) a.width = width;
  if (formatTilePath(a) !== path) throw new TilePathError(`not the canonical tile path (${formatTilePath(a)}): ${JSON.stringify(path.slice(0, 60))}`);
  return a;
}

/** 256^L, the entries one hash of a level-L tile spans. */
function span(level: number): number {
  return TILE_WIDTH ** level;
}

/**
 * Whether a tree of `size` entries holds the tile `a`: a full tile when
 * all its 256 hashes are of complete subtrees, a partial one of width W
 * when its first W are (a partial tile of any width up to the tree's
 * stays served, as earlier trees had it).
 */
export function treeHolds(size: number, a: TileAddress): boolean {
  const level = a.level ?? 0;
  const hashes = Math.floor(size / span(level));
  const first = a.index * TILE_WIDTH;
  return hashes >= first + (a.width ?? TILE_WIDTH);
}

/** The hashes of tile `a` (level given) of `archive`'s log, concatenated: 32 bytes each. The caller checked {@link treeHolds}. */
export async function readTile(log: LogStore, archive: string, a: TileAddress & { level: number }): Promise<Buffer> {
  const count = a.width ?? TILE_WIDTH;
  return Buffer.concat(await log.levelHashes(archive, 8 * a.level, a.index * TILE_WIDTH, count));
}

/**
 * The entry bundle `a` of `archive`'s log: each entry's text (UTF-8) after
 * its big-endian uint16 length; zero-length for an entry `shown` says is
 * not published (purged: no text; or hidden now). The caller checked
 * {@link treeHolds}.
 * @param shown whether a capture entry's memento (urlkey, Memento-Datetime epoch s) may be shown
 * @throws Error when the log lacks an entry, or an entry is over 65,535 bytes
 */
export async function readBundle(log: LogStore, archive: string, a: TileAddress, shown: (urlkey: string, datetime: number) => boolean): Promise<Buffer> {
  const count = a.width ?? TILE_WIDTH;
  const first = a.index * TILE_WIDTH;
  const rows: BundleEntry[] = await log.bundleEntries(archive, first, count);
  const parts: Buffer[] = [];
  rows.forEach((r, i) => {
    if (r.leaf_index !== first + i) throw new Error(`the evidence log of archive ${archive} lacks its entry ${first + i}`);
    const text = r.leaf_text !== null && (r.urlkey === null || r.datetime === null || shown(r.urlkey, r.datetime)) ? Buffer.from(r.leaf_text, 'utf8') : null;
    if (text && text.length > MAX_ENTRY_BYTES)
      throw new Error(`entry ${r.leaf_index} of the evidence log of archive ${archive} is over ${MAX_ENTRY_BYTES} bytes`);
    const len = Buffer.alloc(2);
    len.writeUInt16BE(text ? text.length : 0);
    parts.push(len);
    if (text) parts.push(text);
  });
  if (rows.length !== count) throw new Error(`the evidence log of archive ${archive} lacks entries of bundle ${formatTilePath(a)}`);
  return Buffer.concat(parts);
}
