/**
 * An outsider's verifier of the archive's evidence in the transparency-log
 * formats, written from the specs alone (C2SP signed-note, tlog-checkpoint,
 * tlog-cosignature, tlog-tiles, tlog-proof; RFC 9162 §2.1; RFC 3161) and
 * sharing no code with the archive: nothing here imports from archive/ or
 * shared/, only node:crypto, Node's fetch, and `openssl` for timestamp
 * tokens. So a mistake in the archive's own code is not repeated here.
 *
 * - signed notes against verifier keys (key ID = SHA-256(name ‖ 0x0A ‖
 *   type ‖ key)[:4]), Ed25519 (0x01) and timestamped cosignatures (0x04);
 * - tiles fetched over HTTP from a log's prefix → the root of a tree size;
 *   every level-0 tile → every leaf hash; an entry bundle → its leaf
 *   hashes (a zero-length entry is an erased one: its hash is the tile's);
 * - a tlog-proof receipt, offline;
 * - an RFC 3161 token, with `openssl ts -verify` against the TSA's CA.
 *
 * Every function throws an Error with a one-line reason when a check fails.
 */
import { execFile } from 'node:child_process';
import { createHash, createPublicKey, verify } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

// ---------------------------------------------------------------- hashing (RFC 9162 §2.1.1)

function sha256(...parts: Uint8Array[]): Buffer {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
}

/** SHA-256(0x00 ‖ leaf). */
export function leafHashOf(leaf: Uint8Array): Buffer {
  return sha256(Buffer.of(0), leaf);
}

/** SHA-256(0x01 ‖ left ‖ right). */
function nodeHashOf(left: Uint8Array, right: Uint8Array): Buffer {
  return sha256(Buffer.of(1), left, right);
}

/** The Merkle Tree Hash of a list of leaf hashes (RFC 9162 §2.1.1, recursively). */
export function rootOfLeafHashes(hashes: readonly Buffer[]): Buffer {
  if (hashes.length === 0) return sha256();
  if (hashes.length === 1) return hashes[0];
  let k = 1;
  while (k * 2 < hashes.length) k *= 2;
  return nodeHashOf(rootOfLeafHashes(hashes.slice(0, k)), rootOfLeafHashes(hashes.slice(k)));
}

/** RFC 9162 §2.1.3.2: whether `path` proves `leafHash` is entry `index` of the tree of `size` with root `root`. */
export function inclusionHolds(leafHash: Buffer, index: number, size: number, path: readonly Buffer[], root: Buffer): boolean {
  if (!(index >= 0 && index < size)) return false;
  let fn = index;
  let sn = size - 1;
  let r = leafHash;
  for (const p of path) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHashOf(p, r);
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else r = nodeHashOf(r, p);
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && r.equals(root);
}

// ---------------------------------------------------------------- signed notes (C2SP signed-note, tlog-cosignature)

/** A verifier key: name, signature type, raw Ed25519 public key, key ID. */
export interface Vkey {
  readonly name: string;
  readonly type: number;
  readonly publicKey: Buffer;
  readonly keyId: Buffer;
}

/** Reads `<name>+<hex key ID>+<base64(type ‖ key)>` and checks that the key ID is the one of the name, type and key. */
export function parseVkey(text: string): Vkey {
  const parts = text.trim().split('+');
  if (parts.length < 3) throw new Error(`vkey ${text}: not <name>+<id>+<key>`);
  const [name, id] = parts;
  const material = Buffer.from(parts.slice(2).join('+'), 'base64');
  const type = material[0];
  const publicKey = material.subarray(1);
  if (publicKey.length !== 32 || (type !== 0x01 && type !== 0x04)) throw new Error(`vkey ${name}: not an Ed25519 key of type 1 or 4`);
  const keyId = sha256(Buffer.from(`${name}\n`), Buffer.of(type), publicKey).subarray(0, 4);
  if (keyId.toString('hex') !== id) throw new Error(`vkey ${name}: key ID ${id} is not ${keyId.toString('hex')}`);
  return { name, type, publicKey, keyId };
}

/** One signature line of a note. */
export interface NoteLine {
  readonly name: string;
  readonly keyId: Buffer;
  readonly signature: Buffer;
}

/** Splits a note at its last blank line: the text (with its final newline) and the signature lines. */
export function splitNote(note: string): { text: string; lines: NoteLine[] } {
  if (!note.endsWith('\n')) throw new Error('a note ends with a newline');
  const at = note.lastIndexOf('\n\n');
  if (at < 0) throw new Error('a note has a blank line before its signatures');
  const text = note.slice(0, at + 1);
  const lines = note
    .slice(at + 2, -1)
    .split('\n')
    .map((l) => {
      const m = /^\u2014 (\S+) ([A-Za-z0-9+/=]+)$/.exec(l);
      if (!m) throw new Error(`not a signature line: ${l.slice(0, 80)}`);
      const raw = Buffer.from(m[2], 'base64');
      return { name: m[1], keyId: raw.subarray(0, 4), signature: raw.subarray(4) };
    });
  return { text, lines };
}

function ed25519(publicKey: Buffer, message: Buffer, signature: Buffer): boolean {
  const spki = Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), publicKey]);
  try {
    return signature.length === 64 && verify(null, message, createPublicKey({ key: spki, format: 'der', type: 'spki' }), signature);
  } catch {
    return false;
  }
}

/** What a verified signature line says: the key's name, and for a cosignature its time (POSIX seconds). */
export interface Verified {
  readonly name: string;
  readonly time?: number;
}

/**
 * Verifies the lines of `note` made by each of `vkeys` (name and key ID
 * match): type 0x01 over the text, type 0x04 over `cosignature/v1\ntime
 * <t>\n` ‖ text with the 8-byte big-endian time first in the signature.
 * Lines of other keys are ignored.
 * @returns one entry per key whose line verified, in the order of `vkeys`
 * @throws when a known key's line does not verify, or no known key signed
 */
export function verifyNote(note: string, vkeys: readonly Vkey[]): { text: string; verified: Verified[] } {
  const { text, lines } = splitNote(note);
  const verified: Verified[] = [];
  for (const k of vkeys) {
    const line = lines.find((l) => l.name === k.name && l.keyId.equals(k.keyId));
    if (!line) continue;
    if (k.type === 0x01) {
      if (!ed25519(k.publicKey, Buffer.from(text), line.signature)) throw new Error(`the signature of ${k.name} does not verify`);
      verified.push({ name: k.name });
    } else {
      if (line.signature.length !== 72) throw new Error(`the cosignature of ${k.name} is not 72 bytes`);
      const time = Number(line.signature.readBigUInt64BE(0));
      if (!ed25519(k.publicKey, Buffer.from(`cosignature/v1\ntime ${time}\n${text}`), line.signature.subarray(8)))
        throw new Error(`the cosignature of ${k.name} does not verify`);
      verified.push({ name: k.name, time });
    }
  }
  if (verified.length === 0) throw new Error('no signature by a known key');
  return { text, verified };
}

/** A checkpoint's first three lines (C2SP tlog-checkpoint). */
export interface CheckpointBody {
  readonly origin: string;
  readonly size: number;
  readonly rootHash: Buffer;
}

/** Reads a checkpoint's note text. */
export function parseCheckpoint(text: string): CheckpointBody {
  const [origin, size, root] = text.split('\n');
  const rootHash = Buffer.from(root ?? '', 'base64');
  if (!origin || !/^(0|[1-9][0-9]*)$/.test(size ?? '') || rootHash.length !== 32) throw new Error('not a checkpoint: origin, size, base64 root hash');
  return { origin, size: Number(size), rootHash };
}

/**
 * Verifies a signed checkpoint: signed by `logKey`, with origin `origin`
 * when given, and the cosignatures of `witnessKeys` it carries (each
 * that is there must verify; none is required).
 */
export function verifyCheckpoint(note: string, logKey: Vkey, witnessKeys: readonly Vkey[] = [], origin?: string): CheckpointBody & { cosigners: Verified[] } {
  if (logKey.type !== 0x01) throw new Error(`${logKey.name} is not a log key (Ed25519 note signatures, type 1)`);
  const { text } = verifyNote(note, [logKey]);
  const body = parseCheckpoint(text);
  if (origin !== undefined && body.origin !== origin) throw new Error(`the checkpoint is of ${body.origin}, not ${origin}`);
  let cosigners: Verified[] = [];
  try {
    cosigners = verifyNote(note, witnessKeys).verified;
  } catch (err) {
    if ((err as Error).message !== 'no signature by a known key') throw err;
  }
  return { ...body, cosigners };
}

// ---------------------------------------------------------------- tiles (C2SP tlog-tiles)

/** `<N>` of a tile path: 3-digit elements, all but the last with an `x` (1234067 → `x001/x234/067`). */
export function tileIndexPath(n: number): string {
  const parts: string[] = [];
  do {
    parts.unshift(String(n % 1000).padStart(3, '0'));
    n = Math.floor(n / 1000);
  } while (n > 0);
  return parts.map((p, i) => (i < parts.length - 1 ? `x${p}` : p)).join('/');
}

/** The path of tile `level`/`n` of a tree of `size` under the log's prefix (`tile/0/x001/x234/067`, `.p/<W>` when partial); `undefined` when the tree has no such tile. */
export function tilePathFor(level: number | 'entries', n: number, size: number): string | undefined {
  const perEntry = level === 'entries' ? 1 : 256 ** level;
  const entries = Math.floor(size / perEntry);
  const full = Math.floor(entries / 256);
  const base = `tile/${level}/${tileIndexPath(n)}`;
  if (n < full) return base;
  if (n === full && entries % 256 > 0) return `${base}.p/${entries % 256}`;
  return undefined;
}

/**
 * GETs `<base>/<p>`: the body; throws on anything but 200. A connection
 * that fails is tried once more (a kept-alive connection the server
 * closed just as it was reused; a GET of a tile is safe to repeat).
 */
async function get(base: string, p: string): Promise<Buffer> {
  const url = `${base.replace(/\/+$/, '')}/${p}`;
  const res = await fetch(url, { redirect: 'manual' }).catch(() => fetch(url, { redirect: 'manual' }));
  if (res.status !== 200) throw new Error(`GET ${p}: ${res.status}`);
  return Buffer.from(await res.arrayBuffer());
}

/** A tile's hashes, checked to be the width its path says. */
async function fetchTile(base: string, level: number, n: number, size: number, cache: Map<string, Buffer[]>): Promise<Buffer[]> {
  const p = tilePathFor(level, n, size);
  if (!p) throw new Error(`a tree of ${size} has no tile ${level}/${n}`);
  const hit = cache.get(p);
  if (hit) return hit;
  const body = await get(base, p);
  const width = /\.p\/(\d+)$/.exec(p) ? Number(/\.p\/(\d+)$/.exec(p)![1]) : 256;
  if (body.length !== width * 32) throw new Error(`${p}: ${body.length} bytes, not ${width * 32}`);
  const hashes = Array.from({ length: width }, (_, i) => body.subarray(i * 32, i * 32 + 32));
  cache.set(p, hashes);
  return hashes;
}

/**
 * The root hash of the tree of `size` from the tiles at `base` (the log's
 * prefix): the tree is the perfect subtrees its size's binary digits give,
 * left to right; a subtree of 2^h leaves, h = 8L + r, is the 2^r hashes of
 * a level-L tile hashed up r levels. Tiles are fetched once each.
 */
export async function rootFromTiles(base: string, size: number): Promise<Buffer> {
  if (size === 0) return sha256();
  const cache = new Map<string, Buffer[]>();
  const subtrees: Buffer[] = [];
  let start = 0;
  for (let h = 52; h >= 0; h--) {
    if (Math.floor(size / 2 ** h) % 2 === 0) continue;
    const level = Math.floor(h / 8);
    const r = h % 8;
    const first = start / 256 ** level; // the subtree's first hash at that level
    const tile = await fetchTile(base, level, Math.floor(first / 256), size, cache);
    const at = first % 256;
    let hashes = tile.slice(at, at + 2 ** r);
    if (hashes.length !== 2 ** r) throw new Error(`tile ${level}/${Math.floor(first / 256)} holds too few hashes`);
    while (hashes.length > 1) hashes = Array.from({ length: hashes.length / 2 }, (_, i) => nodeHashOf(hashes[2 * i], hashes[2 * i + 1]));
    subtrees.push(hashes[0]);
    start += 2 ** h;
  }
  let root = subtrees[subtrees.length - 1];
  for (let i = subtrees.length - 2; i >= 0; i--) root = nodeHashOf(subtrees[i], root);
  return root;
}

/**
 * Every leaf hash of the tree of `size`, from all its level-0 tiles, after
 * checking that they hash to `root` (a whole mirror's check) and that
 * every full level-0 tile is the hash its level-1 entry gives.
 */
export async function leafHashesFromTiles(base: string, size: number, root: Buffer): Promise<Buffer[]> {
  const cache = new Map<string, Buffer[]>();
  const leaves: Buffer[] = [];
  for (let n = 0; n * 256 < size; n++) leaves.push(...(await fetchTile(base, 0, n, size, cache)));
  if (!rootOfLeafHashes(leaves).equals(root)) throw new Error(`the level-0 tiles do not hash to the root of size ${size}`);
  const fullTiles = Math.floor(size / 256);
  if (fullTiles > 0) {
    for (let n = 0; n < fullTiles; n++) {
      const above = (await fetchTile(base, 1, Math.floor(n / 256), size, cache))[n % 256];
      if (!rootOfLeafHashes(leaves.slice(n * 256, n * 256 + 256)).equals(above)) throw new Error(`tile 1 entry ${n} is not the hash of tile 0/${n}`);
    }
  }
  return leaves;
}

/** One entry bundle read: each entry's bytes (empty for an erased one) and its leaf hash. */
export interface BundleEntry {
  readonly entry: Buffer;
  readonly leafHash: Buffer;
  readonly erased: boolean;
}

/**
 * Reads an entry bundle (big-endian uint16 length and bytes per entry)
 * against its level-0 tile: as many entries as the tile has hashes; each
 * entry's leaf hash must be the tile's; a zero-length entry is an erased
 * one and takes the tile's hash.
 */
export function readEntryBundle(bundle: Buffer, level0Tile: readonly Buffer[]): BundleEntry[] {
  const out: BundleEntry[] = [];
  let at = 0;
  while (at < bundle.length) {
    if (at + 2 > bundle.length) throw new Error(`entry ${out.length}: a length cut off`);
    const len = bundle.readUInt16BE(at);
    if (at + 2 + len > bundle.length) throw new Error(`entry ${out.length}: ${len} bytes announced, fewer there`);
    const entry = bundle.subarray(at + 2, at + 2 + len);
    at += 2 + len;
    const tileHash = level0Tile[out.length];
    if (!tileHash) throw new Error(`the bundle has more entries than the tile's ${level0Tile.length}`);
    if (len === 0) out.push({ entry, leafHash: tileHash, erased: true });
    else {
      const h = leafHashOf(entry);
      if (!h.equals(tileHash)) throw new Error(`entry ${out.length} does not hash to the tile's leaf hash`);
      out.push({ entry, leafHash: h, erased: false });
    }
  }
  if (out.length !== level0Tile.length) throw new Error(`the bundle has ${out.length} entries, the tile ${level0Tile.length}`);
  return out;
}

/** Fetches entry bundle `n` of the tree of `size` and its level-0 tile, and reads it ({@link readEntryBundle}). */
export async function fetchEntryBundle(base: string, n: number, size: number): Promise<BundleEntry[]> {
  const p = tilePathFor('entries', n, size);
  if (!p) throw new Error(`a tree of ${size} has no entry bundle ${n}`);
  return readEntryBundle(await get(base, p), await fetchTile(base, 0, n, size, new Map()));
}

// ---------------------------------------------------------------- receipts (C2SP tlog-proof)

/** A tlog-proof read and checked. */
export interface Receipt extends CheckpointBody {
  readonly index: number;
  /** the `extra` data (the leaf text, for this archive), when there is one */
  readonly extra?: Buffer;
  readonly cosigners: Verified[];
}

/**
 * Verifies a tlog-proof offline: its form, the checkpoint signed by
 * `logKey` (and the cosignatures of `witnessKeys` it carries), and the
 * inclusion proof of the leaf (`leaf`, or the `extra` data when no leaf is
 * given) at its index in the checkpoint's tree.
 */
export function verifyReceipt(text: string, logKey: Vkey, opts: { leaf?: Buffer; witnessKeys?: readonly Vkey[]; origin?: string } = {}): Receipt {
  const lines = text.split('\n');
  if (lines[0] !== 'c2sp.org/tlog-proof@v1') throw new Error('not a c2sp.org/tlog-proof@v1');
  let i = 1;
  let extra: Buffer | undefined;
  if (lines[i]?.startsWith('extra ')) extra = Buffer.from(lines[i++].slice(6), 'base64');
  const m = /^index (0|[1-9][0-9]*)$/.exec(lines[i++] ?? '');
  if (!m) throw new Error('no index line');
  const proof: Buffer[] = [];
  for (; lines[i] !== ''; i++) {
    if (lines[i] === undefined) throw new Error('no blank line before the checkpoint');
    const h = Buffer.from(lines[i], 'base64');
    if (h.length !== 32 || h.toString('base64') !== lines[i]) throw new Error(`proof line ${proof.length + 1} is not a base64 hash`);
    proof.push(h);
  }
  const checkpoint = verifyCheckpoint(lines.slice(i + 1).join('\n'), logKey, opts.witnessKeys, opts.origin);
  const leaf = opts.leaf ?? extra;
  if (!leaf) throw new Error('no leaf to check: none given and no extra data');
  const index = Number(m[1]);
  if (!inclusionHolds(leafHashOf(leaf), index, checkpoint.size, proof, checkpoint.rootHash))
    throw new Error(`the inclusion proof of entry ${index} does not lead to the checkpoint's root`);
  return { ...checkpoint, index, extra };
}

// ---------------------------------------------------------------- RFC 3161 (openssl)

/**
 * Verifies an RFC 3161 TimeStampResp over `data` with `openssl ts
 * -verify` against `caPem` (the imprint, the signature, the chain, the
 * TSA certificate's purpose) and reads its time and serial with `openssl
 * ts -reply -text`.
 */
export async function verifyTimestampToken(tsr: Buffer, data: Buffer, caPem: string): Promise<{ time: Date; serial: string }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'c2sp-verifier-'));
  try {
    const f = (n: string) => path.join(dir, n);
    writeFileSync(f('resp.tsr'), tsr);
    writeFileSync(f('data'), data);
    writeFileSync(f('ca.pem'), caPem);
    const v = await run('openssl', ['ts', '-verify', '-in', f('resp.tsr'), '-data', f('data'), '-CAfile', f('ca.pem')]).catch(
      (e: { stdout?: string; stderr?: string }) => {
        // `<id>:error:<code>:<library>:<function>:<reason>:<file>:<line>:<details>`
        const parts =
          (e.stderr ?? '')
            .split('\n')
            .find((l) => /:error:/.test(l))
            ?.split(':') ?? [];
        const why = parts.length > 5 ? [parts[5], parts.slice(8).join(':')].filter(Boolean).join(': ') : 'Verification: FAILED';
        throw new Error(`openssl ts -verify: ${why}`);
      },
    );
    if (!/Verification: OK/.test(v.stdout)) throw new Error(`openssl ts -verify: ${v.stdout.trim()}`);
    const text = (await run('openssl', ['ts', '-reply', '-in', f('resp.tsr'), '-text'])).stdout;
    const time = /^Time stamp: (.+)$/m.exec(text)?.[1];
    const serial = /^Serial number: (.+)$/m.exec(text)?.[1];
    if (!time || !serial) throw new Error('openssl ts -reply -text: no time or serial');
    return { time: new Date(time), serial };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
