/**
 * The WARC files of an archive on disk: `<data_dir>/warcs/<archive id>/`
 * holds `<id>-<14-digit open time>-<serial>-<rand>.warc.gz`, and the
 * serial gives the order the files were written in (docs/storage.md).
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';

/**
 * The serial number in a WARC file name `<id>-<14 digits>-<serial>-<rand>.warc.gz`.
 * Serials grow across restarts, so they give the order in which an archive's
 * files were written (the order `reindex` and recovery read them in);
 * `-1` for a name of another shape.
 */
export function warcFileSerial(name: string): number {
  const m = /-\d{14}-(\d+)-[0-9a-f]+\.warc\.gz$/.exec(name);
  return m ? Number(m[1]) : -1;
}

/** Sorts WARC file names in writing order (serial, then name). */
export function sortWarcFiles(names: string[]): string[] {
  return [...names].sort((a, b) => warcFileSerial(a) - warcFileSerial(b) || (a < b ? -1 : a > b ? 1 : 0));
}

/** The WARC files of each archive folder under `warcsDir`, in writing order (names relative to `warcsDir`). */
export async function listWarcFiles(warcsDir: string): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  const ids = await readdir(warcsDir, { withFileTypes: true }).catch(() => []);
  for (const d of ids) {
    if (!d.isDirectory()) continue;
    const names = (await readdir(path.join(warcsDir, d.name))).filter((n) => /\.warc(\.gz)?$/.test(n));
    out.set(
      d.name,
      sortWarcFiles(names).map((n) => path.posix.join(d.name, n)),
    );
  }
  return out;
}
