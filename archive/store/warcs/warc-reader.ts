/**
 * Reads response records back from the archive's WARC files, for the
 * Memento side: the captured status line, headers and body of one record
 * at its offset (one gzip member, WARC 1.1 §9). A revisit record reads
 * the same way, with an empty body (its block is the HTTP head alone): the
 * store takes the body from its original's response record (store.ts
 * `readResponse`). Small records are read and
 * inflated in one call; larger ones stream, in bounded memory.
 */
import { createReadStream, readSync } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';
import { ScavengeCounter } from '#shared/gc.js';
import { getHeader, parseHead, parseStatusLine } from '#shared/http-head.js';
import { RecordCache } from './record-cache.js';
import type { StoredResponse } from './stored-response.js';

export type { StoredResponse };

const CRLFCRLF = Buffer.from('\r\n\r\n');
const MAX_HTTP_HEAD = 1024 * 1024;
/** Response records up to this many bytes (gzip member) are read with one positioned read and inflated in one call. */
export const SMALL_RECORD = 1024 * 1024;
/** …as long as the inflated record is no larger than this; a larger one is streamed (bounded memory per request). */
const SMALL_RECORD_INFLATED = 4 * 1024 * 1024;

/**
 * The WARC header block `buf[0, warcEnd)` of a response record, or of a
 * revisit record (whose block is an HTTP head alone): its block length.
 * @throws via `fail` when it is neither.
 */
function warcBlockLength(buf: Buffer, warcEnd: number, fail: (why: string) => Error): number {
  const { startLine, fields } = parseHead(buf.subarray(0, warcEnd));
  const type = getHeader(fields, 'warc-type');
  const blockLength = Number(getHeader(fields, 'content-length') ?? -1);
  if (!/^WARC\/1\.[01]$/.test(startLine) || (type !== 'response' && type !== 'revisit') || !(blockLength >= 0)) throw fail('not a response record');
  return blockLength;
}

/** The HTTP response head `buf[from, to)`: status line, status, reason and headers as captured (bytes as latin1, so that values go out as stored). */
function httpHead(buf: Buffer, from: number, to: number): Pick<StoredResponse, 'statusLine' | 'status' | 'reason' | 'headers'> {
  const { startLine, fields } = parseHead(buf.subarray(from, to));
  const line = parseStatusLine(startLine);
  return { statusLine: startLine, status: line?.status ?? 200, reason: line?.reason ?? '', headers: fields };
}

const noop = () => undefined;

/** An async iterable of one buffer (none when empty). */
async function* once(buf: Buffer): AsyncGenerator<Uint8Array> {
  if (buf.length) yield buf;
}

/**
 * WARC files read by byte range from elsewhere than a local folder (an
 * object store: archive/store/warcs/s3-warcs.ts). Names are as the index has them.
 */
export interface RangeSource {
  /** The bytes `[offset, offset + length)` of `file`, whole. @throws when the file is missing or shorter */
  bytes(file: string, offset: number, length: number): Promise<Buffer>;
  /** The same bytes as a stream (the caller destroys it when it stops early). */
  stream(file: string, offset: number, length: number): Promise<Readable>;
}

/**
 * Reads response records of the WARC files under `<data_dir>/warcs`
 * (docs/storage.md), or, given a {@link RangeSource}, of the objects of a
 * bucket (ranged GETs; no descriptors then), keeping a read-only file descriptor open per WARC
 * file (at most `maxOpen`, least recently used closed first). WARC files
 * are append-only (a rollback only truncates the unacknowledged tail), so
 * a descriptor stays valid while records are appended to its file. Hot
 * small records are answered from memory (record-cache.ts).
 */
export class WarcReader {
  private readonly handles = new Map<string, { fh: Promise<FileHandle>; users: number; evicted: boolean }>();
  private closed = false;

  /**
   * @param warcsDir `<data_dir>/warcs`
   * @param maxOpen how many WARC files stay open for reading
   * @param cacheBytes bytes of hot small records kept in memory (`record_cache_bytes`; 0: none)
   * @param remote where the files are when not in `warcsDir` (an object store), read by byte range
   */
  constructor(
    readonly warcsDir: string,
    private readonly maxOpen = 64,
    cacheBytes = 0,
    private readonly remote?: RangeSource,
  ) {
    this.cache = new RecordCache(cacheBytes);
  }

  /** Hot small records, read and inflated (record-cache.ts). */
  readonly cache: RecordCache;

  /**
   * Reads the response record at `offset`/`length` of `file` (relative to
   * `warcsDir`; one gzip member). A small record ({@link SMALL_RECORD})
   * is read with one synchronous positioned read and inflated in one call, its body
   * returned whole in `bodyBuffer` too, and one of up to 64 KiB inflated is
   * kept in {@link cache} for the next read; a larger one streams
   * ({@link readResponseRecord}).
   *
   * @throws when the bytes there are not a WARC response record with an
   *   HTTP head, or end before the record's Content-Length.
   */
  async read(file: string, offset: number, length: number): Promise<StoredResponse> {
    if (length > SMALL_RECORD || this.closed) return this.readStreamed(file, offset, length);
    const hit = this.cache.get(file, offset, length);
    if (hit) return hit;
    const fail = (why: string) => new Error(`no WARC response record at ${file}:${offset}: ${why}`);
    let member: Buffer;
    if (this.remote) member = await this.remote.bytes(file, offset, length);
    else {
      member = Buffer.allocUnsafe(length);
      const entry = this.acquire(file);
      try {
        const fh = await entry.fh;
        let got = 0;
        while (got < length) {
          // A synchronous pread: a few KiB from the page cache cost microseconds, a hop through
          // libuv's thread pool (what fh.read is) costs tens under load. (A cold read blocks the
          // event loop for one disk read; records of up to SMALL_RECORD only.)
          const bytesRead = readSync(fh.fd, member, got, length - got, offset + got);
          if (bytesRead === 0) throw fail(`the file ends ${length - got} bytes before the record's end`);
          got += bytesRead;
        }
      } finally {
        this.release(file, entry);
      }
    }
    const stored = inflateRecord(member, file, offset);
    if (!stored) return this.readStreamed(file, offset, length);
    // Answered with the record cache's own copy when it kept one (one copy of the body in memory, whoever else keeps it).
    const kept = this.cache.set(file, offset, length, stored);
    return kept ? { ...stored, body: once(kept), bodyBuffer: kept } : stored;
  }

  /**
   * The first `max` bytes (all when shorter) of the gzip member at
   * `offset`/`length` of `file`, raw, in an ArrayBuffer of their own (to
   * be moved to another thread): for whoever inflates and parses the
   * record elsewhere ({@link streamRecord} over them). Up to
   * {@link SMALL_RECORD} bytes with one synchronous positioned read, as
   * {@link read}; more through libuv's thread pool. Not the record cache.
   *
   * @throws when the file is missing or ends before those bytes
   */
  async memberBytes(file: string, offset: number, length: number, max: number): Promise<Uint8Array> {
    const n = Math.min(length, max);
    const fail = (why: string) => new Error(`no WARC response record at ${file}:${offset}: ${why}`);
    if (this.remote) {
      const got = await this.remote.bytes(file, offset, n);
      if (got.length < n) throw fail(`the object ends ${n - got.length} bytes before the record's end`);
      return new Uint8Array(got.subarray(0, n));
    }
    const member = new Uint8Array(n);
    // Once closed, a read opens its file for itself (as readStreamed), keeping no descriptor.
    const entry = this.closed ? { fh: open(path.join(this.warcsDir, file), 'r'), users: 1, evicted: true } : this.acquire(file);
    try {
      const fh = await entry.fh;
      let got = 0;
      while (got < n) {
        // Synchronous for a small record, as read() (a few KiB from the page cache cost microseconds).
        const bytesRead =
          n <= SMALL_RECORD ? readSync(fh.fd, member, got, n - got, offset + got) : (await fh.read(member, got, n - got, offset + got)).bytesRead;
        if (bytesRead === 0) throw fail(`the file ends ${n - got} bytes before the record's end`);
        got += bytesRead;
      }
    } finally {
      this.release(file, entry);
    }
    return member;
  }

  /** A record read as a stream ({@link streamRecord}): from the folder, or from the remote store. */
  private async readStreamed(file: string, offset: number, length: number): Promise<StoredResponse> {
    if (!this.remote) return readResponseRecord(this.warcsDir, file, offset, length);
    return streamRecord(await this.remote.stream(file, offset, length), file, offset);
  }

  private acquire(file: string) {
    let e = this.handles.get(file);
    if (e) {
      // Most recently used last.
      this.handles.delete(file);
      this.handles.set(file, e);
    } else {
      const fh = open(path.join(this.warcsDir, file), 'r');
      e = { fh, users: 0, evicted: false };
      this.handles.set(file, e);
      const entry = e;
      // A file that cannot be opened is not kept (the next read tries again).
      fh.catch(() => {
        if (this.handles.get(file) === entry) this.handles.delete(file);
      });
      while (this.handles.size > this.maxOpen) {
        const [oldest, old] = this.handles.entries().next().value!;
        this.handles.delete(oldest);
        old.evicted = true;
        if (old.users === 0) void closeHandle(old.fh);
      }
    }
    e.users++;
    return e;
  }

  private release(_file: string, e: { fh: Promise<FileHandle>; users: number; evicted: boolean }) {
    e.users--;
    if (e.evicted && e.users === 0) void closeHandle(e.fh);
  }

  /** Closes the cached descriptors (reads in flight finish first); later reads open their file per read. */
  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.handles.values()];
    this.handles.clear();
    for (const e of all) {
      e.evicted = true;
      if (e.users === 0) await closeHandle(e.fh);
    }
  }
}

async function closeHandle(fh: Promise<FileHandle>): Promise<void> {
  try {
    await (await fh).close();
  } catch {
    /* never opened, or closed already */
  }
}

/**
 * The response (or revisit) record of a whole gzip member held in memory
 * (`file`/`offset` name it in errors), inflated in one call: its HTTP head,
 * and its body whole in `bodyBuffer`. `null` when it inflates to more than
 * {@link SMALL_RECORD_INFLATED} bytes (read it as a stream instead:
 * {@link streamRecord}).
 *
 * @throws when the bytes are not a gzipped WARC response record with an
 *   HTTP head, or end before the record's Content-Length.
 */
export function inflateRecord(member: Buffer, file: string, offset: number): StoredResponse | null {
  const fail = (why: string) => new Error(`no WARC response record at ${file}:${offset}: ${why}`);
  let rec: Buffer;
  try {
    rec = zlib.gunzipSync(member, { maxOutputLength: SMALL_RECORD_INFLATED });
  } catch (err) {
    // Inflates to more than we hold for one request: stream it instead.
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError) return null;
    throw err;
  }
  const warcEnd = rec.indexOf(CRLFCRLF);
  if (warcEnd < 0 || warcEnd > 64 * 1024) throw fail('no WARC header block');
  const blockLength = warcBlockLength(rec, warcEnd, fail);
  const blockStart = warcEnd + 4;
  const headEnd = rec.indexOf(CRLFCRLF, blockStart);
  if (headEnd < 0 || headEnd + 4 - blockStart > blockLength) throw fail('the block has no HTTP head');
  const bodyLength = blockLength - (headEnd + 4 - blockStart);
  const bodyStart = headEnd + 4;
  if (rec.length < bodyStart + bodyLength) {
    throw new Error(`WARC record at ${file}:${offset} ends ${bodyStart + bodyLength - rec.length} bytes before its Content-Length`);
  }
  const bodyBuffer = rec.subarray(bodyStart, bodyStart + bodyLength);
  return { ...httpHead(rec, blockStart, headEnd), body: once(bodyBuffer), bodyBuffer, bodyLength, close: noop };
}

/**
 * Reads the response record at `offset`/`length` of `<warcsDir>/<file>`
 * (one gzip member), streaming its payload: the member is gunzipped as it
 * is read; the WARC header block and then the HTTP head are split off at
 * their blank lines; the rest, up to the record's Content-Length, is the
 * body. {@link WarcReader.read} uses this for large records.
 *
 * @throws when the bytes there are not a WARC response record with an HTTP head.
 */
export function readResponseRecord(warcsDir: string, file: string, offset: number, length: number): Promise<StoredResponse> {
  const raw = createReadStream(path.join(warcsDir, file), { start: offset, end: offset + length - 1, highWaterMark: 64 * 1024 });
  return streamRecord(raw, file, offset);
}

/**
 * `raw` (the bytes of a gzip member) piped into a gunzip stream of 64 KiB
 * chunks; an error of `raw` ends the gunzip with it, and `close` lets go
 * of both (a record not read to its end).
 */
export function gunzipOf(raw: Readable): { gunzip: zlib.Gunzip; close(): void } {
  const gunzip = zlib.createGunzip({ chunkSize: 64 * 1024 });
  raw.on('error', (err) => gunzip.destroy(err));
  raw.pipe(gunzip);
  return {
    gunzip,
    close: () => {
      raw.destroy();
      gunzip.destroy();
    },
  };
}

/**
 * The response (or revisit) record whose gzip member `raw` streams (from
 * its first byte; `file`/`offset` name it in errors): gunzipped as it is
 * read, the WARC header block and the HTTP head split off, the rest up to
 * the record's Content-Length streamed as the body.
 *
 * @throws when the bytes are not a WARC response record with an HTTP head.
 */
export async function streamRecord(raw: Readable, file: string, offset: number): Promise<StoredResponse> {
  const { gunzip, close } = gunzipOf(raw);
  const fail = (why: string) => {
    close();
    return new Error(`no WARC response record at ${file}:${offset}: ${why}`);
  };
  const it = gunzip[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let buf: Buffer = Buffer.alloc(0);
  /** Reads until `buf` holds a blank line after `from`; returns its index or -1. */
  const until = async (from: number, max: number): Promise<number> => {
    for (;;) {
      const end = buf.indexOf(CRLFCRLF, from);
      if (end >= 0) return end;
      if (buf.length - from > max) return -1;
      const { value, done } = await it.next();
      if (done) return -1;
      buf = buf.length ? Buffer.concat([buf, value]) : value;
    }
  };
  const warcEnd = await until(0, 64 * 1024);
  if (warcEnd < 0) throw fail('no WARC header block');
  const blockLength = warcBlockLength(buf, warcEnd, fail);
  const blockStart = warcEnd + 4;
  const headEnd = await until(blockStart, MAX_HTTP_HEAD);
  if (headEnd < 0 || headEnd + 4 - blockStart > blockLength) throw fail('the block has no HTTP head');
  const head = httpHead(buf, blockStart, headEnd);
  const bodyLength = blockLength - (headEnd + 4 - blockStart);
  const first = buf.subarray(headEnd + 4);
  async function* body(): AsyncGenerator<Uint8Array> {
    let left = bodyLength;
    const gc = new ScavengeCounter();
    try {
      if (first.length && left > 0) {
        const c = first.subarray(0, left);
        left -= c.length;
        yield c;
      }
      while (left > 0) {
        const { value, done } = await it.next();
        if (done) throw new Error(`WARC record at ${file}:${offset} ends ${left} bytes before its Content-Length`);
        const c = value.length > left ? value.subarray(0, left) : value;
        left -= c.length;
        gc.add(c.length);
        yield c;
      }
    } finally {
      close();
    }
  }
  return { ...head, body: body(), bodyBuffer: null, bodyLength, close };
}
