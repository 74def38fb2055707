/**
 * The integrity of a WACZ package before `memento-archive import` takes
 * anything from it (docs/evidence.md "Opening a package"): what the
 * package itself vouches for, checked against its bytes.
 *
 * - `datapackage.json` (WACZ 1.1.1): each resource it lists is in the ZIP
 *   with that size and SHA-256; every WARC file under `archive/` is listed
 *   (an unlisted one has no hash that vouches for it);
 * - `datapackage-digest.json`: its `hash` is the SHA-256 of
 *   `datapackage.json`, and its `signedData.signature` an Ed25519
 *   signature of that `hash` string by `signedData.publicKey` (the WACZ
 *   signing recommendation's anonymous form, as `memento-archive wacz`
 *   writes it; a key of another type is said to be unchecked);
 * - `proofs/proofs.jsonl` (this archive's packages): each line's entry
 *   (archive/evidence/leaf.ts) leads with its audit path to the root of
 *   its signed tree head (RFC 9162 §2.1.3.2), whose signature verifies with
 *   the head's own key (the package's archive's, which may be another
 *   archive than this one: said which), that key is the package
 *   signature's, and the record the entry names is in the package's WARC
 *   files with the block digest the entry holds.
 *
 * The package's digest (the SHA-256 of its `datapackage.json`) goes into
 * each imported capture's record and log entry (leaf.ts `waczVia`). Every
 * entry is read streamed; JSON files are bounded ({@link MAX_JSON}).
 */
import { createHash, createPublicKey } from 'node:crypto';
import { createInterface } from 'node:readline';
import { rootFromInclusionPath } from '../evidence/banner-check.js';
import { keyFingerprint } from '../evidence/capture-check.js';
import { type CaptureLeaf, captureLeafText } from '../evidence/leaf.js';
import { leafHash } from '../evidence/merkle.js';
import { verifySignature } from '../evidence/signing-key.js';
import { headSignatureOk } from '../evidence/tree-heads.js';
import type { WaczPackage } from './wacz-input.js';
import { WarcDamage } from './warc-input.js';

/** Largest `datapackage.json` / `datapackage-digest.json` read, bytes. */
const MAX_JSON = 16 * 1024 * 1024;
/** Longest line of `proofs/proofs.jsonl` read, characters (an audit path of 64 hashes and a long URL fit many times). */
const MAX_PROOF_LINE = 1024 * 1024;
/** Most proofs kept to be matched with their records (one per memento of the package). */
const MAX_PROOFS = 2_000_000;

/** What the check found. */
export interface WaczIntegrity {
  /** The package's path. */
  file: string;
  /** `sha256:<hex>` of its `datapackage.json`; `null` when it has none. */
  packageDigest: string | null;
  /** What does not match, one line each (most first-found first). */
  damage: string[];
  /** What was checked (whether it held is in {@link damage}), short phrases. */
  checked: string[];
  /** What could not be checked, short phrases. */
  notChecked: string[];
}

type Entry = WaczPackage['entries'][number];

/** SHA-256 and byte count of one entry's bytes, streamed. */
async function hashEntry(pkg: WaczPackage, e: Entry): Promise<{ digest: string; bytes: number }> {
  const h = createHash('sha256');
  let bytes = 0;
  for await (const c of await pkg.read(e)) {
    h.update(c as Buffer);
    bytes += (c as Buffer).length;
  }
  return { digest: 'sha256:' + h.digest('hex'), bytes };
}

/** One entry's bytes whole, at most {@link MAX_JSON}. @throws Error past it */
async function readSmall(pkg: WaczPackage, e: Entry): Promise<Buffer> {
  if (e.uncompressedSize > MAX_JSON) throw new Error(`${e.fileName} is ${e.uncompressedSize} bytes, more than ${MAX_JSON} a manifest may be`);
  const parts: Buffer[] = [];
  for await (const c of await pkg.read(e)) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

/** An Ed25519 key's type and fingerprint from base64 SPKI DER; `null` when it is no public key. */
function keyOf(b64: unknown): { der: Buffer; type: string; fingerprint: string } | null {
  if (typeof b64 !== 'string') return null;
  try {
    const der = Buffer.from(b64, 'base64');
    const type = createPublicKey({ key: der, format: 'der', type: 'spki' }).asymmetricKeyType ?? 'unknown';
    return { der, type, fingerprint: keyFingerprint(der) };
  } catch {
    return null;
  }
}

/** The manifest: resource hashes and sizes, unlisted WARC files. @returns the digest of datapackage.json, or null */
async function checkManifest(pkg: WaczPackage, byName: Map<string, Entry>, r: WaczIntegrity): Promise<void> {
  const dp = byName.get('datapackage.json');
  if (!dp) {
    r.damage.push('it has no datapackage.json: no hash vouches for its files');
    return;
  }
  const bytes = await readSmall(pkg, dp);
  r.packageDigest = 'sha256:' + createHash('sha256').update(bytes).digest('hex');
  let resources: { path?: unknown; hash?: unknown; bytes?: unknown }[];
  try {
    const json = JSON.parse(bytes.toString('utf8')) as { resources?: unknown };
    if (!Array.isArray(json.resources)) throw new Error('it has no resources list');
    resources = json.resources as typeof resources;
  } catch (err) {
    r.damage.push(`datapackage.json does not read as a WACZ manifest (${(err as Error).message.slice(0, 200)})`);
    return;
  }
  const listed = new Set<string>();
  let hashed = 0;
  for (const res of resources) {
    const name = typeof res.path === 'string' ? res.path : '';
    listed.add(name);
    const e = byName.get(name);
    if (!e) {
      r.damage.push(`datapackage.json lists ${JSON.stringify(name.slice(0, 200))}, which is not in the package`);
      continue;
    }
    if (typeof res.hash !== 'string' || !/^sha256:[0-9a-f]{64}$/.test(res.hash)) {
      r.notChecked.push(`${name} (its hash in datapackage.json is not sha256:<hex>)`);
      continue;
    }
    const got = await hashEntry(pkg, e);
    hashed++;
    if (got.digest !== res.hash) r.damage.push(`${name} does not match its hash in datapackage.json (${res.hash} stated, ${got.digest} read)`);
    else if (typeof res.bytes === 'number' && res.bytes !== got.bytes) r.damage.push(`${name} is ${got.bytes} bytes, datapackage.json says ${res.bytes}`);
  }
  for (const name of byName.keys()) {
    if (listed.has(name) || name === 'datapackage.json' || name === 'datapackage-digest.json') continue;
    if (name.startsWith('archive/')) r.damage.push(`${name} is not listed in datapackage.json: no hash vouches for it`);
    else r.notChecked.push(`${name} (not listed in datapackage.json)`);
  }
  r.checked.push(`the SHA-256 of ${hashed} file(s) listed in datapackage.json`);
}

/** datapackage-digest.json: the manifest's hash, and its signature. @returns the signing key, when an Ed25519 one verified */
async function checkSignature(pkg: WaczPackage, byName: Map<string, Entry>, r: WaczIntegrity, own: Buffer | null): Promise<Buffer | null> {
  const e = byName.get('datapackage-digest.json');
  if (!e) {
    r.notChecked.push('a signature (the package has no datapackage-digest.json)');
    return null;
  }
  let d: { hash?: unknown; signedData?: { hash?: unknown; signature?: unknown; publicKey?: unknown } };
  try {
    d = JSON.parse((await readSmall(pkg, e)).toString('utf8')) as typeof d;
  } catch (err) {
    r.damage.push(`datapackage-digest.json does not read as JSON (${(err as Error).message.slice(0, 200)})`);
    return null;
  }
  if (r.packageDigest && d.hash !== r.packageDigest)
    r.damage.push(`datapackage-digest.json says datapackage.json hashes to ${String(d.hash).slice(0, 80)}; it hashes to ${r.packageDigest}`);
  else if (r.packageDigest) r.checked.push('the hash of datapackage.json in datapackage-digest.json');
  const s = d.signedData;
  if (!s || s.signature === undefined) {
    r.notChecked.push('a signature (datapackage-digest.json is not signed)');
    return null;
  }
  const key = keyOf(s.publicKey);
  if (!key) {
    r.damage.push('datapackage-digest.json’s signedData.publicKey is not a public key');
    return null;
  }
  if (key.type !== 'ed25519') {
    r.notChecked.push(`its ${key.type} signature (import checks Ed25519 signatures), key SHA-256 ${key.fingerprint}`);
    return null;
  }
  if (s.hash !== d.hash || typeof s.hash !== 'string' || !verifySignature(key.der, s.hash, Buffer.from(String(s.signature), 'base64'))) {
    r.damage.push(`the signature in datapackage-digest.json does not verify with its key (SHA-256 ${key.fingerprint})`);
    return null;
  }
  r.checked.push(
    `the Ed25519 signature of the package by the key with SHA-256 ${key.fingerprint} (${own?.equals(key.der) ? 'this archive’s key' : 'not this archive’s key'})`,
  );
  return key.der;
}

/** One line of proofs/proofs.jsonl. */
interface ProofLine {
  archive?: string;
  leaf?: CaptureLeaf;
  leaf_index?: number;
  tree_size?: number;
  audit_path?: string[];
  sth?: { tree_size?: number; root_hash?: string; timestamp?: number; signature?: string; public_key?: string; origin?: string | null };
}

/** The problem with one proof line, or its entry's record id and digest. */
function checkProof(p: ProofLine, signer: Buffer | null): string | { record: string; digest: string; key: Buffer } {
  const sth = p.sth;
  if (!p.leaf || !sth || typeof p.leaf_index !== 'number' || !Array.isArray(p.audit_path)) return 'not a proof line';
  let text: string;
  try {
    text = captureLeafText(p.leaf);
  } catch (err) {
    return `its entry cannot be made: ${(err as Error).message}`;
  }
  const key = keyOf(sth.public_key);
  if (!key || key.type !== 'ed25519') return 'its tree head has no Ed25519 public_key';
  const root = Buffer.from(String(sth.root_hash), 'base64');
  const path = p.audit_path.map((h) => Buffer.from(String(h), 'base64'));
  if (p.tree_size !== sth.tree_size || !rootFromInclusionPath(leafHash(text), p.leaf_index, Number(sth.tree_size), path)?.equals(root))
    return `entry ${p.leaf_index} does not lead to the root of its signed tree head of ${sth.tree_size} entries`;
  const head = {
    archive_id: String(p.archive ?? ''),
    tree_size: Number(sth.tree_size),
    root_hash: root,
    timestamp: Number(sth.timestamp),
    signature: Buffer.from(String(sth.signature), 'base64'),
    origin: typeof sth.origin === 'string' ? sth.origin : null,
  };
  if (!headSignatureOk(head, key.der)) return `its tree head's signature does not verify with the head's key (SHA-256 ${key.fingerprint})`;
  if (signer && !signer.equals(key.der)) return `its tree head is signed by another key (SHA-256 ${key.fingerprint}) than the package`;
  return { record: p.leaf.record_id, digest: p.leaf.digest, key: key.der };
}

/** proofs/proofs.jsonl: each proof, and that its entry's record is in the package as the entry says. */
async function checkProofs(pkg: WaczPackage, byName: Map<string, Entry>, r: WaczIntegrity, signer: Buffer | null, own: Buffer | null): Promise<void> {
  const e = byName.get('proofs/proofs.jsonl');
  if (!e) {
    r.notChecked.push('inclusion proofs (the package has none)');
    return;
  }
  const inPackage = (name: string) => (name.startsWith(pkg.file + ':') ? name.slice(pkg.file.length + 1) : name);
  const wanted = new Map<string, { digest: string; line: number }>();
  const keys = new Set<string>();
  let n = 0;
  const lines = createInterface({ input: await pkg.read(e), crlfDelay: Infinity });
  for await (const line of lines) {
    n++;
    if (!line.trim()) continue;
    let p: ProofLine;
    try {
      if (line.length > MAX_PROOF_LINE) throw new Error(`longer than ${MAX_PROOF_LINE} characters`);
      p = JSON.parse(line) as ProofLine;
    } catch (err) {
      r.damage.push(`proofs/proofs.jsonl line ${n} does not read as JSON (${(err as Error).message.slice(0, 100)})`);
      continue;
    }
    const got = checkProof(p, signer);
    if (typeof got === 'string') r.damage.push(`proofs/proofs.jsonl line ${n}: ${got}`);
    else if (wanted.size < MAX_PROOFS) {
      wanted.set(got.record, { digest: got.digest, line: n });
      keys.add(keyFingerprint(got.key) + (own?.equals(got.key) ? ' (this archive’s key)' : ''));
    }
  }
  let records = 0;
  let unproved = 0;
  for (const w of pkg.warcs) {
    try {
      for await (const item of w.records({ check: false, quiet: true })) {
        if (item.type !== 'response' && item.type !== 'revisit') continue;
        records++;
        const want = wanted.get(item.id);
        if (!want) {
          unproved++;
          continue;
        }
        const h = createHash('sha256');
        for await (const c of item.block) h.update(c);
        const digest = 'sha256:' + h.digest('hex');
        if (digest !== want.digest)
          r.damage.push(`${inPackage(item.file)}:${item.offset}: record ${item.id} hashes to ${digest}; its proof (line ${want.line}) says ${want.digest}`);
        wanted.delete(item.id);
      }
    } catch (err) {
      if (!(err instanceof WarcDamage)) throw err;
      r.damage.push(inPackage(err.message));
    }
  }
  for (const [id, w] of wanted) r.damage.push(`proofs/proofs.jsonl line ${w.line} names record ${id}, which is not in the package`);
  r.checked.push(`${n} inclusion proof(s) against the package’s signed tree head(s), key SHA-256 ${[...keys].join(', ') || '(none)'}`);
  if (unproved) r.notChecked.push(`${unproved} of ${records} capture record(s) without a proof`);
}

/**
 * Checks the package `pkg` (see the module comment); `own` is this
 * archive's public key (SPKI DER), to say whether the package is signed by it.
 * @throws the ZIP reader's or the file system's error
 */
export async function checkWaczIntegrity(pkg: WaczPackage, own: Buffer | null): Promise<WaczIntegrity> {
  const r: WaczIntegrity = { file: pkg.file, packageDigest: null, damage: [], checked: [], notChecked: [] };
  const byName = new Map(pkg.entries.filter((e) => !e.fileName.endsWith('/')).map((e) => [e.fileName, e]));
  await checkManifest(pkg, byName, r);
  const signer = await checkSignature(pkg, byName, r, own);
  await checkProofs(pkg, byName, r, signer, own);
  return r;
}

/** The line `import` prints of a check: what held and what was not checked. */
export function integrityLine(r: WaczIntegrity): string {
  const checked = r.checked.length ? r.checked.join('; ') : 'nothing';
  const not = r.notChecked.length ? `; not checked: ${r.notChecked.join('; ')}` : '';
  return `${r.file}: package ${r.packageDigest ?? '(no datapackage.json)'}: checked ${checked}${not}`;
}
