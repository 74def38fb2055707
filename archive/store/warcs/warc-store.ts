/**
 * Where the archive's WARC files live, as the write path, the read path
 * and the upkeep commands see it: a folder on this host (the default,
 * `<data_dir>/warcs/`), or a bucket of an S3-compatible object store that
 * several daemons share (s3-warcs.ts); open-warcs.ts picks the one the
 * config names. docs/storage.md, docs/scale-out.md.
 */
import { createReadStream } from 'node:fs';
import { access, constants, open, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { listWarcFiles } from './warc-files.js';
import { WarcReader } from './warc-reader.js';
import { type ScanItem, scanWarcFile } from './warc-scan.js';
import { type CapturePair, type EncodedPair, type RevisitPair, WarcWriter, type WrittenRecord } from './warc-writer.js';

/**
 * Appends the record pairs of one archive for the store's write queue, one
 * call at a time. A batch is: `append`/`appendRevisit` per capture (each
 * returns where its response or revisit record is: file name as the index
 * keeps it, offset and length of its gzip member), then `sync` (the batch's
 * records are durable when it returns: fsynced in the folder, uploaded to
 * the bucket); if the batch is not to be acknowledged after all,
 * `rollback` of each record appended, newest first.
 */
export interface WarcAppender {
  /** Appends a capture's response and request records; a body not whole in memory is streamed. @throws when nothing is written for it */
  append(pair: CapturePair): Promise<WrittenRecord>;
  /** Appends a revisit capture's revisit and request records. */
  appendRevisit(pair: RevisitPair): Promise<WrittenRecord>;
  /** Appends a record pair already gzipped (warc-writer.ts `EncodedPair`, gzip-batch.ts), as `append` does a body whole in memory. */
  appendEncoded(e: EncodedPair): Promise<WrittenRecord>;
  /** Makes everything appended since the last sync durable. @throws when it is not (the batch must not be acknowledged) */
  sync(): Promise<void>;
  /** Takes back the record at `file`/`offset` and everything appended after it (not acknowledged). */
  rollback(file: string, offset: number): Promise<void>;
  /** Durable writes so far (fsync calls, or objects uploaded), for the store's stats. */
  readonly fsyncs: number;
  close(): Promise<void>;
}

/** A WARC file: its name (as the index rows name it) and size in bytes. */
export interface WarcFileInfo {
  file: string;
  size: number;
}

/** The WARC files of the archive, wherever they are. */
export interface WarcStore {
  /** `folder` (this host's disk) or `s3` (a shared bucket). */
  readonly kind: 'folder' | 's3';
  /** For messages: the folder's path, or `s3://bucket/prefix/`. */
  readonly location: string;
  /**
   * The appender of one archive's records.
   * @param maxBytes the folder's files roll over past this size (objects hold one batch each)
   * @param gzipLevel zlib level of each record's gzip member, 1 … 9
   */
  appender(archiveId: string, maxBytes: number, gzipLevel: number): WarcAppender;
  /** A reader of response records by file, offset and length (warc-reader.ts), with `cacheBytes` of hot small records in memory. */
  reader(cacheBytes: number): WarcReader;
  /** Every WARC file, per archive id, in writing order (the order reindex and verify read them in). */
  list(): Promise<Map<string, WarcFileInfo[]>>;
  /** The records of `file` from the byte `start` on (warc-scan.ts), streamed. */
  scan(file: string, start?: number): AsyncGenerator<ScanItem>;
  /** Up to `max` raw bytes of `file` from `offset` (fewer at its end, none past it). @throws when the file is missing */
  readAt(file: string, offset: number, max: number): Promise<Buffer>;
  /** The raw bytes `[offset, offset + length)` of `file` as a stream (the caller destroys it when it stops early). @throws when the file is missing */
  stream(file: string, offset: number, length: number): Promise<Readable>;
  /** Resolves when the store can take records (health check): the folder writable, the bucket answering. @throws why not */
  check(signal: AbortSignal): Promise<void>;
  /** Lets go of connections; the store is not used afterwards. */
  close(): Promise<void>;
}

/** WARC files in a folder, `<dir>/<archive id>/<archive id>-<ts>-<serial>-<rand>.warc.gz` (warc-files.ts). */
export class FolderWarcStore implements WarcStore {
  readonly kind = 'folder' as const;
  constructor(readonly dir: string) {}

  get location(): string {
    return this.dir;
  }

  appender(archiveId: string, maxBytes: number, gzipLevel: number): WarcAppender {
    return new WarcWriter(this.dir, archiveId, maxBytes, gzipLevel);
  }

  reader(cacheBytes: number): WarcReader {
    return new WarcReader(this.dir, 64, cacheBytes);
  }

  async list(): Promise<Map<string, WarcFileInfo[]>> {
    const out = new Map<string, WarcFileInfo[]>();
    for (const [id, files] of await listWarcFiles(this.dir)) {
      const infos: WarcFileInfo[] = [];
      for (const file of files) infos.push({ file, size: (await stat(path.join(this.dir, file))).size });
      out.set(id, infos);
    }
    return out;
  }

  scan(file: string, start = 0): AsyncGenerator<ScanItem> {
    return scanWarcFile(path.join(this.dir, file), start);
  }

  async readAt(file: string, offset: number, max: number): Promise<Buffer> {
    const fh = await open(path.join(this.dir, file), 'r');
    try {
      const buf = Buffer.allocUnsafe(max);
      let got = 0;
      while (got < max) {
        const { bytesRead } = await fh.read(buf, got, max - got, offset + got);
        if (bytesRead === 0) break;
        got += bytesRead;
      }
      return buf.subarray(0, got);
    } finally {
      await fh.close();
    }
  }

  async stream(file: string, offset: number, length: number): Promise<Readable> {
    const fh = await open(path.join(this.dir, file), 'r');
    return createReadStream('', { fd: fh, start: offset, end: offset + length - 1, highWaterMark: 64 * 1024 });
  }

  async check(): Promise<void> {
    await access(this.dir, constants.W_OK);
  }

  async close(): Promise<void> {}
}

/** A folder's path (taken as a {@link FolderWarcStore}) or a store. */
export function warcStoreOf(w: WarcStore | string): WarcStore {
  return typeof w === 'string' ? new FolderWarcStore(w) : w;
}
