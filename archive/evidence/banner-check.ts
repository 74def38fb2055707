/**
 * The replay banner's "Verify this capture" (archive/web/views/banner.eta):
 * where anyone can fetch what proves the capture (its inclusion proof, its
 * WARC records, the log's signed tree head), and the page of the
 * archive's own check (capture-check.ts). The banner is the archive's
 * page, not the memento's (the memento is in a sandboxed frame below it,
 * and nothing of it goes into the banner), so a stored page can neither
 * write nor change what it says.
 */
import { nodeHash } from './merkle.js';

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
): { check: string; proof: string; receipt: string; record: string; log: string; name: string } {
  return {
    check: `${base}/web/verify/${archiveId}/${ts}/${uriR}`,
    proof: `${base}/${archiveId}/proof/${ts}/${uriR}`,
    receipt: `${base}/${archiveId}/receipt/${ts}/${uriR}`,
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
