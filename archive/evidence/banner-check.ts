/**
 * The replay banner's "Verify this capture" (archive/web/views/banner.eta):
 * where anyone can fetch what proves the capture (its inclusion proof, its
 * WARC records, the log's signed tree head), and the archive's own check
 * of that proof, said in one line: the capture's entry (leaf) hashes, with
 * its inclusion path (RFC 9162 §2.1.3.2), to the root of a tree head whose
 * Ed25519 signature is the archive key's. The banner is the archive's page,
 * not the memento's (the memento is in a sandboxed frame below it, and
 * nothing of it goes into the banner), so a stored page can neither write
 * nor change this line.
 */
import type { FastifyInstance } from 'fastify';
import { parseCaptureLeaf } from './leaf.js';
import { inclusionOf } from './log.js';
import { leafHash, nodeHash } from './merkle.js';
import { headSignatureOk } from './tree-heads.js';

/** What the banner says: whether the archive's check held (`ok`), a few words for the panel's summary, and the line. */
export interface CaptureCheck {
  ok: boolean;
  summary: string;
  line: string;
}

/**
 * The addresses of a memento's evidence (docs/evidence.md): `check` (the
 * page of the archive's check), `proof` (JSON), `record`
 * (application/warc), `log` (the newest signed tree head), and `name`, a
 * file name for downloads (`<id>-<ts>`).
 */
export function evidenceLinks(
  base: string,
  archiveId: string,
  ts: string,
  uriR: string,
): { check: string; proof: string; record: string; log: string; name: string } {
  return {
    check: `${base}/web/verify/${archiveId}/${ts}/${uriR}`,
    proof: `${base}/${archiveId}/proof/${ts}/${uriR}`,
    record: `${base}/${archiveId}/record/${ts}/${uriR}`,
    log: `${base}/${archiveId}/log`,
    name: `${archiveId}-${ts}`,
  };
}

/**
 * The root that leaf `index` of a tree of `size` leaves, hashed `hash`,
 * has with the inclusion path `path` (RFC 9162 §2.1.3.2); `undefined` when
 * the path cannot be one of that leaf in that tree.
 */
export function rootFromInclusionPath(hash: Buffer, index: number, size: number, path: readonly Buffer[]): Buffer | undefined {
  if (!(index >= 0 && index < size)) return undefined;
  let fn = index;
  let sn = size - 1;
  let r = hash;
  for (const p of path) {
    if (sn === 0) return undefined;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      while (fn % 2 === 0 && fn !== 0) [fn, sn] = [Math.floor(fn / 2), Math.floor(sn / 2)];
    } else r = nodeHash(r, p);
    [fn, sn] = [Math.floor(fn / 2), Math.floor(sn / 2)];
  }
  return sn === 0 ? r : undefined;
}

/** `ms` since the epoch as `YYYY-MM-DD hh:mm:ss UTC`. */
function utc(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 19) + ' UTC';
}

/**
 * The archive's check of the capture `m` of archive `m.archive_id` (its
 * urlkey and Memento-Datetime, epoch s): its entry in the log, the
 * inclusion path in the newest signed tree (one signed now when none
 * holds the entry yet, as `/proof` does), the root recomputed and the
 * head's signature checked with the archive's key. `undefined` when the
 * capture has no entry (indexed before the log was kept).
 */
export async function captureCheck(app: FastifyInstance, m: { archive_id: string; urlkey: string; datetime: number }): Promise<CaptureCheck | undefined> {
  const log = app.store.index.log;
  const leaf = await log.leafOf(m.archive_id, m.urlkey, m.datetime);
  const fields = leaf?.leaf_text ? parseCaptureLeaf(leaf.leaf_text) : undefined;
  if (!leaf || !leaf.leaf_text || !fields) return undefined;
  const head = await app.treeHeads.newest(m.archive_id, leaf.leaf_index + 1);
  const path = await inclusionOf(log, m.archive_id, leaf.leaf_index, head.tree_size);
  const hash = leafHash(leaf.leaf_text);
  const ok =
    hash.equals(leaf.leaf_hash) &&
    !!rootFromInclusionPath(hash, leaf.leaf_index, head.tree_size, path)?.equals(head.root_hash) &&
    headSignatureOk(head, app.treeHeads.key.publicKeyDer);
  const entries = head.tree_size === 1 ? 'entry' : 'entries';
  const what = `leaf ${leaf.leaf_index} of the log of archive ${m.archive_id}, included in the tree of ${head.tree_size} ${entries} signed ${utc(head.timestamp)}; record digest ${fields.digest}`;
  if (ok) return { ok, summary: 'in the signed log', line: what[0].toUpperCase() + what.slice(1) };
  return { ok, summary: 'the check FAILED', line: `The archive could not prove ${what}: the proof does not lead to the signed root.` };
}
