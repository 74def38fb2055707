/**
 * The WARC files inside a WACZ package (a ZIP: WACZ 1.1.1 "archive"
 * directory), for `memento-archive import`: each `archive/*.warc` or
 * `archive/*.warc.gz` entry is read in place with yauzl, streamed, as a
 * {@link WarcFile}; the rest of the package (indexes, pages, manifest) is
 * not needed to import its records.
 *
 * A ZIP is untrusted input: a package is refused whole, before anything
 * is imported, when it has more than {@link MAX_ENTRIES} entries, an entry
 * name that is absolute or has a `..` segment, a WARC entry compressed
 * in the ZIP (WACZ stores WARC files with STORE; reading a deflated one at
 * many offsets would inflate it again each time), saying so first of one
 * that would inflate to more than {@link MAX_RATIO} times its size (a zip
 * bomb), or a central directory that names the same bytes twice
 * (entries whose byte ranges are the same or overlap: one WARC entry
 * listed under thousands of names would be read, and imported, once per
 * name).
 * yauzl checks each entry's bytes against the sizes the package states.
 */
import { OperatorError } from '#shared/operator-error.js';
import { Readable } from 'node:stream';
import yauzl from 'yauzl';
import { type ByteSource, WarcFile } from './warc-input.js';

/** Most entries a package may have (a WACZ has a handful of files, and its WARC files). */
export const MAX_ENTRIES = 10_000;
/** Most a deflated WARC entry may inflate to, as a multiple of its compressed size (text deflates 3–10×; a zip bomb 1000×). */
export const MAX_RATIO = 100;

/** The package cannot be imported: the file and why, in one line. */
export class WaczRefused extends OperatorError {}

/** Whether the file at `file` begins as a ZIP does (a local file header, `PK\3\4`). */
export function isZip(head: Buffer): boolean {
  return head.length >= 4 && head.readUInt32LE(0) === 0x04034b50;
}

/** An opened package: its WARC files, and the ZIP to close when they have been read. */
export interface WaczPackage {
  /** The package's path, as given. */
  file: string;
  warcs: WarcFile[];
  /** Every entry of the ZIP (for the integrity check, wacz-integrity.ts). */
  entries: yauzl.Entry[];
  /** The bytes of one entry, inflated when the ZIP deflated it; yauzl checks their count against the entry's size. */
  read(e: yauzl.Entry): Promise<Readable>;
  close(): void;
}

const ZIP_OPTIONS: yauzl.Options = { lazyEntries: true, autoClose: false, validateEntrySizes: true, strictFileNames: true };

/**
 * Opens the package at `file` and its WARC files (see the module comment).
 * @throws WaczRefused (nothing is read from it then); the file system's error when it cannot be opened
 */
export async function openWacz(file: string): Promise<WaczPackage> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.open(file, ZIP_OPTIONS, (err, z) => (err ? reject(new WaczRefused(`${file}: not a ZIP file we can read (${err.message})`)) : resolve(z))),
  );
  try {
    if (zip.entryCount > MAX_ENTRIES) throw new WaczRefused(`${file}: ${zip.entryCount} entries, more than a WACZ package has (at most ${MAX_ENTRIES})`);
    const entries = await listEntries(file, zip);
    refuseOverlaps(file, entries);
    const warcs: WarcFile[] = [];
    for (const e of entries) {
      if (!/^archive\/[^/]+\.warc(\.gz)?$/.test(e.fileName)) continue;
      if (e.compressionMethod === 8 && e.uncompressedSize > MAX_RATIO * Math.max(1, e.compressedSize))
        throw new WaczRefused(`${file}: ${e.fileName} would inflate ${e.compressedSize} bytes to ${e.uncompressedSize} (a zip bomb?)`);
      // Import reads a WARC file in place at many offsets (a request record after its response): a deflated entry would be inflated again from its start each time.
      if (e.compressionMethod !== 0)
        throw new WaczRefused(
          `${file}: ${e.fileName} is compressed in the ZIP (method ${e.compressionMethod}); WACZ stores WARC files uncompressed (STORE), which import reads in place`,
        );
      warcs.push(await WarcFile.of(`${file}:${e.fileName}`, entrySource(zip, e)));
    }
    if (!warcs.length) throw new WaczRefused(`${file}: no WARC file under archive/ (not a WACZ package?)`);
    const read = (e: yauzl.Entry) => new Promise<Readable>((resolve, reject) => zip.openReadStream(e, (err, st) => (err ? reject(err) : resolve(st))));
    return { file, warcs, entries, read, close: () => zip.close() };
  } catch (err) {
    zip.close();
    throw err;
  }
}

/** Every entry of the ZIP (central directory order). @throws WaczRefused for a name yauzl refuses (absolute, `..`, backslash) */
function listEntries(file: string, zip: yauzl.ZipFile): Promise<yauzl.Entry[]> {
  return new Promise((resolve, reject) => {
    const out: yauzl.Entry[] = [];
    zip.on('entry', (e: yauzl.Entry) => {
      if (e.fileName.split('/').includes('..')) return reject(new WaczRefused(`${file}: entry ${JSON.stringify(e.fileName)} has a .. segment`));
      out.push(e);
      zip.readEntry();
    });
    zip.once('end', () => resolve(out));
    zip.once('error', (err: Error) => reject(new WaczRefused(`${file}: ${err.message}`)));
    zip.readEntry();
  });
}

/**
 * Refuses a ZIP whose central directory names overlapping bytes (APPNOTE
 * 6.3.10 §4.3.6: each file is stored once, its local header then its
 * data): two entries whose local headers are at one offset, or one whose
 * local header lies inside another's header or data. An entry's bytes are
 * taken as at least its fixed 30-byte local header and its compressed
 * data, from the offset the central directory gives (its name and extra
 * field, whose lengths the local header may state otherwise, come on
 * top): a valid ZIP never fails this, and a ZIP that passes has entries
 * whose data add up to no more than the file, so reading them all reads
 * no byte twice over. Looks at the central directory only: runs before
 * any entry's bytes are read.
 *
 * @throws WaczRefused naming the package and the two entries
 */
export function refuseOverlaps(file: string, entries: readonly yauzl.Entry[]): void {
  const spans = entries
    .map((e) => ({ name: e.fileName, start: e.relativeOffsetOfLocalHeader, end: e.relativeOffsetOfLocalHeader + 30 + e.compressedSize }))
    .sort((a, b) => a.start - b.start || a.end - b.end);
  for (let i = 1; i < spans.length; i++) {
    const [p, q] = [spans[i - 1], spans[i]];
    if (q.start >= p.end) continue;
    const how = q.start === p.start ? `are the same bytes (from byte ${q.start})` : `overlap (at byte ${q.start})`;
    throw new WaczRefused(`${file}: entries ${JSON.stringify(p.name)} and ${JSON.stringify(q.name)} ${how}; a ZIP holds each file once`);
  }
}

/** The bytes of one stored (STORE) entry, read in place from `start`. */
function entrySource(zip: yauzl.ZipFile, e: yauzl.Entry): ByteSource {
  return {
    size: e.uncompressedSize,
    open: (start) =>
      new Promise<Readable>((resolve, reject) =>
        zip.openReadStream(e, { start, end: e.uncompressedSize } as yauzl.ZipFileOptions, (err, s) => (err ? reject(err) : resolve(s))),
      ),
  };
}
