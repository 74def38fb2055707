/**
 * The replay banner's "Verify this capture" (archive/web/views/banner.eta):
 * where anyone can fetch what proves the capture (its inclusion proof, its
 * WARC records, the log's signed tree head), and the archive's own check
 * of that proof, said in one line. The banner is the archive's page, not
 * the memento's (the memento is in a sandboxed frame below it), so
 * nothing a stored page holds can write or change this line.
 */

/** What the banner's line says: the proof checked (`ok`), a short summary, and the line. */
export interface CaptureCheck {
  ok: boolean;
  summary: string;
  line: string;
}

/**
 * The addresses of a memento's evidence (docs/evidence.md): `proof` (JSON),
 * `record` (application/warc), `log` (the newest signed tree head), and
 * `name`, a file name for downloads (`<id>-<ts>`).
 */
export function evidenceLinks(base: string, archiveId: string, ts: string, uriR: string): { proof: string; record: string; log: string; name: string } {
  return {
    proof: `${base}/${archiveId}/proof/${ts}/${uriR}`,
    record: `${base}/${archiveId}/record/${ts}/${uriR}`,
    log: `${base}/${archiveId}/log`,
    name: `${archiveId}-${ts}`,
  };
}
