/**
 * WARC 1.1 files of the archive, written and read here: the record format
 * is a few header lines, and Node's zlib does the gzip (warcio, which the
 * tests use to check the files, would cost the daemon ~17 MiB of memory for
 * what these few functions do).
 *
 * Each capture becomes a `response` record (block: the response head and
 * body exactly as captured) and a `request` record (block: the request
 * head exactly as captured) linked by `WARC-Concurrent-To` (WARC 1.1
 * §5.7), each its own gzip member so that a record can be read at its
 * offset. Each file starts with a `warcinfo` record and is rolled over at
 * a size limit. Files live in `<data_dir>/warcs/<archive id>/`.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { createReadStream, readSync } from 'node:fs';
import { mkdir, open, readdir, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import { toTimestamp14 } from '../../shared/http-date.js';
import type { RawHeader } from '../../shared/capture-record.js';
import { ScavengeCounter } from './gc.js';

/** What a capture needs to become a WARC request/response record pair. */
export interface CapturePair {
  uriR: string;
  /** Memento-Datetime; also the WARC-Date of both records. */
  datetime: Date;
  /** Request line + headers + blank line, as captured (X-Client-IP included when the proxy sent it). */
  requestHead: Buffer;
  /** Status line + headers + blank line, as captured. */
  responseHead: Buffer;
  /** The response body, streamed (used when `bodyBuffer` is absent). */
  body: () => AsyncIterable<Uint8Array>;
  /** The whole body when it is small and in memory: the record is then compressed in one call. */
  bodyBuffer?: Buffer | null;
  /** Body length in bytes; counted with an extra read of `body` when absent. */
  bodyLength?: number;
  /** `sha256:<hex>` of the body, computed while it streamed in. */
  payloadDigest: string;
  /** `sha256:<hex>` of response head + body (the response record's block), computed while it streamed in; computed here when absent. */
  blockDigest?: string;
}

/** Where a written response record is. */
export interface WrittenRecord {
  file: string;
  offset: number;
  length: number;
}

const EMPTY_DIGEST = 'sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
const RECORD_END = Buffer.from('\r\n\r\n');
/** Records up to this size are gzipped in one call; larger ones stream through zlib. */
const ONE_SHOT = 1024 * 1024;

/**
 * gzip in one call, with a window and hash table no larger than the input
 * needs (same output size for a small record; zlib's default state is
 * ~256 KiB to set up, which dominates the cost for a 10 KB capture).
 */
function gzipRecord(buf: Buffer): Buffer {
  const windowBits = Math.max(9, Math.min(15, Math.ceil(Math.log2(buf.length + 262))));
  return zlib.gzipSync(buf, { windowBits, memLevel: Math.max(1, Math.min(8, windowBits - 7)) });
}

/** The header block of a WARC 1.1 record (WARC 1.1 §4): version line, named fields, blank line. */
function warcHeader(fields: [string, string][]): Buffer {
  let s = 'WARC/1.1\r\n';
  for (const [k, v] of fields) s += `${k}: ${v}\r\n`;
  return Buffer.from(s + '\r\n', 'utf8');
}

const sha256 = (...parts: Buffer[]) => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return 'sha256:' + h.digest('hex');
};

/** Writes all of `buf` at `pos`. */
async function writeAll(fh: FileHandle, buf: Uint8Array, pos: number): Promise<void> {
  let done = 0;
  while (done < buf.length) {
    const { bytesWritten } = await fh.write(buf, done, buf.length - done, pos + done);
    done += bytesWritten;
  }
}

function warcDate(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

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

/** One open WARC file being appended to. */
class OpenWarc {
  dirty = false;
  /** Compressed records appended but not yet written (written together before the batch's fsync). */
  pending: Buffer[] = [];
  pendingBytes = 0;
  /** Bytes on disk; `size` counts the pending ones too. */
  flushed: number;
  constructor(readonly name: string, readonly fh: FileHandle, public size: number) {
    this.flushed = size;
  }

  /** A write failed: what is pending is lost, so the batch must not be acknowledged (sync throws this). */
  failed: unknown = null;

  /** Writes the pending records in one call. */
  async flush(): Promise<void> {
    if (!this.pending.length) return;
    const buf = this.pending.length === 1 ? this.pending[0] : Buffer.concat(this.pending);
    try {
      await writeAll(this.fh, buf, this.flushed);
    } catch (err) {
      this.failed = err;
      throw err;
    }
    this.pending = [];
    this.pendingBytes = 0;
    this.flushed += buf.length;
  }
}

/** Pending bytes that make a writer write before the batch ends. */
const MAX_PENDING = 8 * 1024 * 1024;

/**
 * Appends record pairs to the WARC files of one archive. Not re-entrant:
 * the caller runs one `append` at a time (the store's write queue does).
 */
export class WarcWriter {
  private current: OpenWarc | null = null;
  private seq = -1;
  private readonly dir: string;
  /** Counts fsync calls on WARC files (files and their folder), for the store's stats. */
  fsyncs = 0;

  /**
   * @param warcsDir `<data_dir>/warcs`
   * @param archiveId the archive whose files these are (file name prefix and folder)
   * @param maxBytes roll over to a new file once the current one is larger
   */
  constructor(private readonly warcsDir: string, private readonly archiveId: string, private readonly maxBytes: number) {
    this.dir = path.join(warcsDir, archiveId);
  }

  private async file(): Promise<OpenWarc> {
    if (this.current && this.current.size < this.maxBytes) return this.current;
    if (this.current) await this.closeCurrent();
    await mkdir(this.dir, { recursive: true });
    if (this.seq < 0) {
      // Continue the serials of the files already there, so that file order survives restarts.
      this.seq = 1 + Math.max(-1, ...(await readdir(this.dir)).map(warcFileSerial));
    }
    const name = `${this.archiveId}-${toTimestamp14(new Date())}-${String(this.seq++).padStart(5, '0')}-${randomBytes(3).toString('hex')}.warc.gz`;
    const fh = await open(path.join(this.dir, name), 'wx');
    const w = new OpenWarc(name, fh, 0);
    this.current = w;
    const block = Buffer.from('software: memento-archive\r\nformat: WARC File Format 1.1\r\nconformsTo: https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r\n');
    const info = zlib.gzipSync(Buffer.concat([warcHeader([
      ['WARC-Type', 'warcinfo'], ['WARC-Record-ID', `<urn:uuid:${randomUUID()}>`], ['WARC-Date', warcDate(new Date())],
      ['WARC-Filename', name], ['Content-Type', 'application/warc-fields'], ['Content-Length', String(block.length)],
    ]), block, RECORD_END]));
    await writeAll(w.fh, info, 0);
    w.size = w.flushed = info.length;
    w.dirty = true;
    // Make the new file's directory entry durable too.
    const dirFh = await open(this.dir, 'r');
    this.fsyncs++;
    await dirFh.sync().finally(() => dirFh.close());
    return w;
  }

  /**
   * Appends the response and request records of one capture.
   *
   * @returns the file (relative to `warcs/`), offset and length of the
   *   response record's gzip member.
   * @throws on a write error, after truncating the file back to where the
   *   pair began (no partial record is left behind).
   */
  async append(pair: CapturePair): Promise<WrittenRecord> {
    const w = await this.file();
    const start = w.size;
    try {
      let { bodyLength, blockDigest } = pair;
      if (bodyLength === undefined || blockDigest === undefined) {
        const h = createHash('sha256').update(pair.responseHead);
        bodyLength = 0;
        for await (const c of pair.body()) {
          h.update(c);
          bodyLength += c.length;
        }
        blockDigest = 'sha256:' + h.digest('hex');
      }
      const date = warcDate(pair.datetime);
      const responseId = `<urn:uuid:${randomUUID()}>`;
      const resHeader = warcHeader([
        ['WARC-Type', 'response'], ['WARC-Record-ID', responseId], ['WARC-Date', date], ['WARC-Target-URI', pair.uriR],
        ['Content-Type', 'application/http; msgtype=response'], ['WARC-Payload-Digest', pair.payloadDigest],
        ['WARC-Block-Digest', blockDigest], ['Content-Length', String(pair.responseHead.length + bodyLength)],
      ]);
      // The request record's payload (the request body) is empty: captures are GETs.
      const reqHeader = warcHeader([
        ['WARC-Type', 'request'], ['WARC-Record-ID', `<urn:uuid:${randomUUID()}>`], ['WARC-Date', date], ['WARC-Target-URI', pair.uriR],
        ['WARC-Concurrent-To', responseId], ['Content-Type', 'application/http; msgtype=request'], ['WARC-Payload-Digest', EMPTY_DIGEST],
        ['WARC-Block-Digest', sha256(pair.requestHead)], ['Content-Length', String(pair.requestHead.length)],
      ]);
      const requestMember = gzipRecord(Buffer.concat([reqHeader, pair.requestHead, RECORD_END]));
      let length: number;
      if (pair.bodyBuffer && bodyLength <= ONE_SHOT) {
        const responseMember = gzipRecord(Buffer.concat([resHeader, pair.responseHead, pair.bodyBuffer, RECORD_END]));
        length = responseMember.length;
        // Written with the rest of the batch, before its fsync.
        w.pending.push(responseMember, requestMember);
        w.pendingBytes += length + requestMember.length;
        if (w.pendingBytes > MAX_PENDING) await w.flush();
      } else {
        await w.flush();
        let pos = start;
        const fh = w.fh;
        const sink = new Writable({
          highWaterMark: 128 * 1024,
          write(chunk: Buffer, _enc, cb) {
            writeAll(fh, chunk, pos).then(() => {
              pos += chunk.length;
              cb();
            }, cb);
          },
        });
        const gc = new ScavengeCounter();
        const parts = async function* () {
          yield resHeader;
          yield pair.responseHead;
          for await (const c of pair.body()) {
            gc.add(c.length);
            yield c;
          }
          yield RECORD_END;
        };
        await pipeline(Readable.from(parts()), zlib.createGzip({ chunkSize: 64 * 1024 }), sink);
        length = pos - start;
        await writeAll(w.fh, requestMember, pos);
      }
      w.size = start + length + requestMember.length;
      if (!w.pending.length) w.flushed = w.size;
      w.dirty = true;
      return { file: path.posix.join(this.archiveId, w.name), offset: start, length };
    } catch (err) {
      // A streamed record that failed half-way: cut it off. (Pending records of the
      // batch stay; a failed write of them is reported by sync.)
      if (!w.pending.length && w.flushed >= start) {
        await w.fh.truncate(start).catch(() => undefined);
        w.size = w.flushed = start;
      }
      throw err;
    }
  }

  /** fsyncs the current file if anything was written since the last sync. */
  async sync(): Promise<void> {
    const w = this.current;
    if (w?.failed) throw w.failed;
    if (w && w.dirty) {
      await w.flush();
      w.dirty = false;
      this.fsyncs++;
      // fdatasync: the data and the file size, which is what a reader needs.
      await w.fh.datasync();
    }
  }

  /**
   * Undoes appends that will not be acknowledged (their fsync or index
   * commit failed): truncates `file` (as returned by {@link append}) back to
   * `offset` and closes it, so that the next append begins a new file.
   */
  async rollback(file: string, offset: number): Promise<void> {
    const w = this.current;
    if (w && path.posix.join(this.archiveId, w.name) === file) {
      w.pending = [];
      w.pendingBytes = 0;
      await w.fh.truncate(offset).catch(() => undefined);
      w.size = w.flushed = offset;
      await this.closeCurrent().catch(() => undefined);
      return;
    }
    const fh = await open(path.join(this.warcsDir, file), 'r+');
    await fh.truncate(offset).finally(() => fh.close());
  }

  private async closeCurrent(): Promise<void> {
    const w = this.current;
    this.current = null;
    if (!w) return;
    await w.flush();
    if (w.dirty) {
      this.fsyncs++;
      await w.fh.sync();
    }
    await w.fh.close();
  }

  /** Syncs and closes the open file. */
  async close(): Promise<void> {
    await this.closeCurrent();
  }
}

/** A response record read back: the captured status line, headers and a stream of the stored body bytes. */
export interface StoredResponse {
  statusLine: string;
  status: number;
  reason: string;
  headers: RawHeader[];
  /** The payload exactly as stored (content-coding untouched). */
  body: AsyncIterable<Uint8Array>;
  /**
   * The same payload as one buffer when the record was small enough to be
   * read and inflated whole ({@link SMALL_RECORD}); `null` when it streams.
   */
  bodyBuffer: Buffer | null;
  /** Payload length in bytes (from the WARC Content-Length minus the HTTP head). */
  bodyLength: number;
  /** Releases the file when the body is not read to its end. */
  close(): void;
}

const CRLFCRLF = Buffer.from('\r\n\r\n');
const MAX_HTTP_HEAD = 1024 * 1024;
/** Response records up to this many bytes (gzip member) are read with one positioned read and inflated in one call. */
export const SMALL_RECORD = 1024 * 1024;
/** …as long as the inflated record is no larger than this; a larger one is streamed (bounded memory per request). */
const SMALL_RECORD_INFLATED = 4 * 1024 * 1024;

/** The WARC header block `buf[0, warcEnd)` of a response record: its block length. @throws via `fail` when it is not one. */
function warcBlockLength(buf: Buffer, warcEnd: number, fail: (why: string) => Error): number {
  const warcLines = buf.subarray(0, warcEnd).toString('utf8').split('\r\n');
  let type = '', blockLength = -1;
  for (let i = 1; i < warcLines.length; i++) {
    const line = warcLines[i];
    const colon = line.indexOf(':');
    const k = line.slice(0, colon).trim().toLowerCase();
    if (k === 'warc-type') type = line.slice(colon + 1).trim();
    if (k === 'content-length') blockLength = Number(line.slice(colon + 1).trim());
  }
  if (!/^WARC\/1\.[01]$/.test(warcLines[0]) || type !== 'response' || !(blockLength >= 0)) throw fail('not a response record');
  return blockLength;
}

/** The HTTP response head `buf[from, to)`: status line, status, reason and headers as captured. */
function httpHead(buf: Buffer, from: number, to: number): Pick<StoredResponse, 'statusLine' | 'status' | 'reason' | 'headers'> {
  const lines = buf.subarray(from, to).toString('utf8').split('\r\n');
  const statusLine = lines[0] ?? '';
  const headers: RawHeader[] = [];
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i];
    const colon = line.indexOf(':');
    if (colon > 0) headers.push([line.slice(0, colon), line.slice(colon + 1).trim()]);
  }
  const m = /^\S+ (\d{3})(?: (.*))?$/.exec(statusLine);
  return { statusLine, status: m ? Number(m[1]) : 200, reason: m?.[2] ?? '', headers };
}

const noop = () => undefined;

/** An async iterable of one buffer (none when empty). */
async function* once(buf: Buffer): AsyncGenerator<Uint8Array> {
  if (buf.length) yield buf;
}

/**
 * Reads response records of the WARC files under `<data_dir>/warcs`
 * (DESIGN.md "Storage"), keeping a read-only file descriptor open per WARC
 * file (at most `maxOpen`, least recently used closed first). WARC files
 * are append-only (a rollback only truncates the unacknowledged tail), so
 * a descriptor stays valid while records are appended to its file.
 */
export class WarcReader {
  private readonly handles = new Map<string, { fh: Promise<FileHandle>; users: number; evicted: boolean }>();
  private closed = false;

  /**
   * @param warcsDir `<data_dir>/warcs`
   * @param maxOpen how many WARC files stay open for reading
   */
  constructor(readonly warcsDir: string, private readonly maxOpen = 64) {}

  /**
   * Reads the response record at `offset`/`length` of `file` (relative to
   * `warcsDir`; one gzip member). A small record ({@link SMALL_RECORD})
   * is read with one synchronous positioned read and inflated in one call, its body
   * returned whole in `bodyBuffer` too; a larger one streams
   * ({@link readResponseRecord}).
   *
   * @throws when the bytes there are not a WARC response record with an
   *   HTTP head, or end before the record's Content-Length.
   */
  async read(file: string, offset: number, length: number): Promise<StoredResponse> {
    if (length > SMALL_RECORD || this.closed) return readResponseRecord(this.warcsDir, file, offset, length);
    const fail = (why: string) => new Error(`no WARC response record at ${file}:${offset}: ${why}`);
    const member = Buffer.allocUnsafe(length);
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
    let rec: Buffer;
    try {
      rec = zlib.gunzipSync(member, { maxOutputLength: SMALL_RECORD_INFLATED });
    } catch (err) {
      // Inflates to more than we hold for one request: stream it instead.
      if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError) return readResponseRecord(this.warcsDir, file, offset, length);
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
 * Reads the response record at `offset`/`length` of `<warcsDir>/<file>`
 * (one gzip member), streaming its payload: the member is gunzipped as it
 * is read; the WARC header block and then the HTTP head are split off at
 * their blank lines; the rest, up to the record's Content-Length, is the
 * body. {@link WarcReader.read} uses this for large records.
 *
 * @throws when the bytes there are not a WARC response record with an HTTP head.
 */
export async function readResponseRecord(warcsDir: string, file: string, offset: number, length: number): Promise<StoredResponse> {
  const raw = createReadStream(path.join(warcsDir, file), { start: offset, end: offset + length - 1, highWaterMark: 64 * 1024 });
  const gunzip = zlib.createGunzip({ chunkSize: 64 * 1024 });
  raw.on('error', (err) => gunzip.destroy(err));
  raw.pipe(gunzip);
  const close = () => {
    raw.destroy();
    gunzip.destroy();
  };
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
