/**
 * The spool's files on disk: a spool file is one line
 * `CAPTURE-SPOOL/1 {json}\n` ({@link SpoolMeta}) followed by the capture
 * record exactly as the live PUT sent it (or would have); the names of the
 * files and folders of the spool folder. The `ArchiveToken` is never
 * written: the re-send takes the vhost's current one.
 */
import { open } from 'node:fs/promises';

/** What a spool file says about its capture (the JSON of its first line). */
export interface SpoolMeta {
  /** ArchiveHost */
  host: string;
  /** ArchivePort */
  port: number;
  /** PUT path: ArchivePath + URI-R. */
  path: string;
  uriR: string;
  /** `server_name` of the vhost (its current ArchiveToken is used on re-send). */
  vhost: string;
  /** When the capture started, ISO 8601. */
  capturedAt: string;
}

const MAGIC = 'CAPTURE-SPOOL/1 ';
const FILE_RE = /^(\d{16})\.capture$/;

/** Folder of the captures being teed (emptied at start: a crash left them half-written). */
export const TMP_DIR = 'tmp';
/** Folder of the captures the archive refused for good (kept for the sysadmin). */
export const REJECTED_DIR = 'rejected';
/** The name of the spool folder of worker 2, 3, … (`worker-2`), inside the spool folder (proxy/spool/workers.ts); group 1 is the number. */
export const WORKER_DIR_RE = /^worker-(\d+)$/;

/** A spool file that is not one: no `CAPTURE-SPOOL/1` line, or a bad one. */
export class SpoolFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SpoolFileError';
  }
}

/** The first line of a spool file, with its line feed. */
export function metaLine(meta: SpoolMeta): Buffer {
  return Buffer.from(MAGIC + JSON.stringify(meta) + '\n', 'utf8');
}

/**
 * Reads the meta line of a spool file.
 *
 * @returns the meta and the byte offset of the capture record after it
 * @throws SpoolFileError when the first line is not a spool header; the
 *   file system error when the file cannot be read (`ENOENT`, …)
 */
export async function readMeta(file: string): Promise<{ meta: SpoolMeta; offset: number }> {
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.alloc(16 * 1024);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    const nl = buf.subarray(0, bytesRead).indexOf(0x0a);
    const line = nl >= 0 ? buf.subarray(0, nl).toString('utf8') : '';
    if (!line.startsWith(MAGIC)) throw new SpoolFileError(`no spool header (${MAGIC.trim()}) in ${file}`);
    let meta: SpoolMeta;
    try {
      meta = JSON.parse(line.slice(MAGIC.length)) as SpoolMeta;
    } catch (err) {
      throw new SpoolFileError(`bad spool header in ${file}: ${(err as Error).message}`);
    }
    if (typeof meta.host !== 'string' || typeof meta.port !== 'number' || typeof meta.path !== 'string')
      throw new SpoolFileError(`bad spool header in ${file}`);
    return { meta, offset: nl + 1 };
  } finally {
    await fh.close();
  }
}

/** The name of the queue folder of the archive at `host:port` (`127.0.0.1_8090`; characters other than `A-Za-z0-9.-` become `_`). */
export function queueDirName(host: string, port: number): string {
  return `${host.replace(/[^A-Za-z0-9.-]/g, '_')}_${port}`;
}

/** The name of the queued file of sequence number `seq`: 16 digits, `.capture`. */
export function spoolFileName(seq: number): string {
  return `${String(seq).padStart(16, '0')}.capture`;
}

/** The sequence number of a queued file's name; `undefined` for any other name. */
export function seqOfFileName(name: string): number | undefined {
  const m = FILE_RE.exec(name);
  return m ? Number(m[1]) : undefined;
}

/** A fresh name for a file in {@link TMP_DIR}: `<pid>-<ms>-<n>.part`. */
export function tmpFileName(n: number): string {
  return `${process.pid}-${Date.now()}-${n}.part`;
}
