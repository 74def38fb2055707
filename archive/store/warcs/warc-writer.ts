/**
 * Writes the archive's WARC 1.1 files (WARC 1.1 §4, §5.7, §9 record-at-time
 * compression). Each capture becomes a `response` record (block: the
 * response head and body exactly as captured) and a `request` record
 * (block: the request head exactly as captured) linked by
 * `WARC-Concurrent-To`; a revisit capture (identical to the memento it
 * follows) a `revisit` record (block: the response head alone) and a
 * `request` record. Each record is its own gzip member so that a record can be
 * read at its offset. Each file starts with a `warcinfo` record and is
 * rolled over at a size limit. Our own serializer with Node's zlib: warcio
 * (which the tests use to check the files) costs the daemon memory and
 * time for what these few functions do.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { type FileHandle, mkdir, open, readdir } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import { ScavengeCounter } from '#shared/gc.js';
import { formatIsoSeconds, toTimestamp14 } from '#shared/http-date.js';
import { VIA_FIELD } from '../../evidence/leaf.js';
import { warcFileSerial } from './warc-files.js';

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
  /** How the capture came in (archive/evidence/leaf.ts `Via`), written as the record's `Archive-Capture-Via`; none when absent. */
  via?: string;
}

/** Where a written response (or revisit) record is, and what the evidence log names it by. */
export interface WrittenRecord {
  file: string;
  offset: number;
  length: number;
  /** Its `WARC-Record-ID`, angle brackets included. */
  recordId: string;
  /** Its `WARC-Block-Digest`: `sha256:<hex>` of its block as written. */
  blockDigest: string;
}

const EMPTY_DIGEST = 'sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
const RECORD_END = Buffer.from('\r\n\r\n');
/** Records up to this size are gzipped in one call; larger ones stream through zlib. */
export const ONE_SHOT = 1024 * 1024;

/**
 * gzip in one call, with a window and hash table no larger than the input
 * needs (same output size for a small record; zlib's default state is
 * ~256 KiB to set up, which dominates the cost for a 10 KB capture).
 */
export function gzipRecord(buf: Buffer, level: number): Buffer {
  const windowBits = Math.max(9, Math.min(15, Math.ceil(Math.log2(buf.length + 262))));
  return zlib.gzipSync(buf, { level, windowBits, memLevel: Math.max(1, Math.min(8, windowBits - 7)) });
}

/** The header block of a WARC 1.1 record (WARC 1.1 §4): version line, named fields, blank line. */
function warcHeader(fields: [string, string][]): Buffer {
  let s = 'WARC/1.1\r\n';
  for (const [k, v] of fields) s += `${k}: ${v}\r\n`;
  return Buffer.from(s + '\r\n', 'utf8');
}

/** `sha256:<hex>` of the bytes of `parts`, in order. */
export const sha256 = (...parts: Buffer[]) => {
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

/** A capture's record pair, each record its own gzip member, ready to append ({@link WarcWriter.appendEncoded}). */
export interface EncodedPair {
  /** The response (or revisit) record's gzip member (the index row points at it). */
  response: Buffer;
  /** The request record's gzip member. */
  request: Buffer;
  /** The response (or revisit) record's `WARC-Record-ID` and `WARC-Block-Digest`. */
  recordId: string;
  blockDigest: string;
}

/**
 * A capture's record pair before compression: the response (or revisit)
 * record as its parts in order (WARC header, HTTP head, body, record end),
 * and the whole request record.
 */
export interface RawPair {
  response: Buffer[];
  request: Buffer;
  recordId: string;
  blockDigest: string;
}

/** The WARC headers of a capture's response record and the whole request record (header, block, end), uncompressed. */
export function pairHeaders(pair: CapturePair, bodyLength: number, blockDigest: string): { response: Buffer; request: Buffer; recordId: string } {
  const date = formatIsoSeconds(pair.datetime);
  const responseId = `<urn:uuid:${randomUUID()}>`;
  const response = warcHeader([
    ['WARC-Type', 'response'],
    ['WARC-Record-ID', responseId],
    ['WARC-Date', date],
    ['WARC-Target-URI', pair.uriR],
    ...viaField(pair.via),
    ['Content-Type', 'application/http; msgtype=response'],
    ['WARC-Payload-Digest', pair.payloadDigest],
    ['WARC-Block-Digest', blockDigest],
    ['Content-Length', String(pair.responseHead.length + bodyLength)],
  ]);
  return { response, request: requestRecord(pair, date, responseId), recordId: responseId };
}

/** The `Archive-Capture-Via` field of a capture's own record (archive/evidence/leaf.ts `VIA_FIELD`), when `via` is given. */
function viaField(via: string | undefined): [string, string][] {
  return via === undefined ? [] : [[VIA_FIELD, via]];
}

/** The whole request record (header, block, end) of a capture, uncompressed, linked to the record `concurrentTo` (WARC 1.1 §5.7). */
function requestRecord(pair: { uriR: string; requestHead: Buffer }, date: string, concurrentTo: string): Buffer {
  // The request record's payload (the request body) is empty: captures are GETs.
  const header = warcHeader([
    ['WARC-Type', 'request'],
    ['WARC-Record-ID', `<urn:uuid:${randomUUID()}>`],
    ['WARC-Date', date],
    ['WARC-Target-URI', pair.uriR],
    ['WARC-Concurrent-To', concurrentTo],
    ['Content-Type', 'application/http; msgtype=request'],
    ['WARC-Payload-Digest', EMPTY_DIGEST],
    ['WARC-Block-Digest', sha256(pair.requestHead)],
    ['Content-Length', String(pair.requestHead.length)],
  ]);
  return Buffer.concat([header, pair.requestHead, RECORD_END]);
}

/** The WARC-Profile of a revisit record whose payload equals its original's (WARC 1.1 §6.7.2). */
export const IDENTICAL_PAYLOAD_DIGEST = 'http://netpreserve.org/warc/1.1/revisit/identical-payload-digest';

/** What a revisit capture needs to become a WARC request/revisit record pair: the capture without its body, and its original. */
export interface RevisitPair {
  uriR: string;
  /** Memento-Datetime of the revisit (when it was served); also the WARC-Date of both records. */
  datetime: Date;
  /** Request line + headers + blank line, as captured. */
  requestHead: Buffer;
  /** Status line + headers + blank line, as captured: the revisit record's whole block. */
  responseHead: Buffer;
  /** `sha256:<hex>` of the payload: the original's, which this capture's body equals. */
  payloadDigest: string;
  /**
   * The memento whose `response` record holds the payload: its URI-R and
   * Memento-Datetime, and its record's `WARC-Record-ID` (written as
   * `WARC-Refers-To`, WARC 1.1 §5.13, when given).
   */
  original: { uriR: string; datetime: Date; recordId?: string };
  /** How the capture came in, as for {@link CapturePair}. */
  via?: string;
}

/**
 * Builds a revisit capture's two records, each its own gzip member: a
 * `revisit` record (WARC 1.1 §6.7, profile identical-payload-digest) whose
 * block is the captured HTTP response head alone, naming its original by
 * `WARC-Refers-To` (its record id), `WARC-Refers-To-Target-URI` and
 * `WARC-Refers-To-Date` and carrying the original's `WARC-Payload-Digest`
 * (which the revisit's evidence log entry binds, archive/evidence/leaf.ts);
 * then the `request` record, linked to it
 * by `WARC-Concurrent-To`.
 *
 * @param level zlib level, 1 (fastest) … 9 (smallest)
 */
export function encodeRevisit(pair: RevisitPair, level: number): EncodedPair {
  return gzipPair(revisitRecords(pair), level);
}

/** The records of {@link encodeRevisit}, uncompressed. */
export function revisitRecords(pair: RevisitPair): RawPair {
  const date = formatIsoSeconds(pair.datetime);
  const revisitId = `<urn:uuid:${randomUUID()}>`;
  const blockDigest = sha256(pair.responseHead);
  const header = warcHeader([
    ['WARC-Type', 'revisit'],
    ['WARC-Record-ID', revisitId],
    ['WARC-Date', date],
    ['WARC-Target-URI', pair.uriR],
    ['WARC-Profile', IDENTICAL_PAYLOAD_DIGEST],
    ...(pair.original.recordId === undefined ? [] : ([['WARC-Refers-To', pair.original.recordId]] as [string, string][])),
    ['WARC-Refers-To-Target-URI', pair.original.uriR],
    ['WARC-Refers-To-Date', formatIsoSeconds(pair.original.datetime)],
    ...viaField(pair.via),
    ['Content-Type', 'application/http; msgtype=response'],
    ['WARC-Payload-Digest', pair.payloadDigest],
    ['WARC-Block-Digest', blockDigest],
    ['Content-Length', String(pair.responseHead.length)],
  ]);
  return {
    response: [header, pair.responseHead, RECORD_END],
    request: requestRecord(pair, date, revisitId),
    recordId: revisitId,
    blockDigest,
  };
}

/**
 * Builds a capture's two records (WARC 1.1 §5.7: response, then request
 * with `WARC-Concurrent-To`) and gzips each into its own member, all in
 * memory: for a body whole in memory (at most 1 MiB), in this thread.
 * The write queue instead builds a batch's records with {@link pairRecords}
 * and gzips them all in one task of a work pool's thread (gzip-batch.ts).
 *
 * @param level zlib level, 1 (fastest) … 9 (smallest)
 */
export function encodePair(pair: CapturePair & { bodyBuffer: Buffer; blockDigest: string }, level: number): EncodedPair {
  return gzipPair(pairRecords(pair), level);
}

/** The records of {@link encodePair}, uncompressed. */
export function pairRecords(pair: CapturePair & { bodyBuffer: Buffer; blockDigest: string }): RawPair {
  const h = pairHeaders(pair, pair.bodyBuffer.length, pair.blockDigest);
  return { response: [h.response, pair.responseHead, pair.bodyBuffer, RECORD_END], request: h.request, recordId: h.recordId, blockDigest: pair.blockDigest };
}

/** Each record of `raw` gzipped into its own member, in this thread. */
function gzipPair(raw: RawPair, level: number): EncodedPair {
  return {
    response: gzipRecord(Buffer.concat(raw.response), level),
    request: gzipRecord(raw.request, level),
    recordId: raw.recordId,
    blockDigest: raw.blockDigest,
  };
}

/** The gzip member of the `warcinfo` record (WARC 1.1 §6.2) that begins the WARC file `name`. */
export function warcinfoMember(name: string): Buffer {
  const block = Buffer.from(
    'software: memento-archive\r\nformat: WARC File Format 1.1\r\nconformsTo: https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r\n',
  );
  return zlib.gzipSync(
    Buffer.concat([
      warcHeader([
        ['WARC-Type', 'warcinfo'],
        ['WARC-Record-ID', `<urn:uuid:${randomUUID()}>`],
        ['WARC-Date', formatIsoSeconds(new Date())],
        ['WARC-Filename', name],
        ['Content-Type', 'application/warc-fields'],
        ['Content-Length', String(block.length)],
      ]),
      block,
      RECORD_END,
    ]),
  );
}

/**
 * The uncompressed bytes of a capture's response record, streamed: its
 * WARC header (`pairHeaders`), the response head, the body, the record end.
 * For a record too large to build in memory.
 */
export async function* responseRecordParts(header: Buffer, pair: CapturePair): AsyncGenerator<Uint8Array> {
  const gc = new ScavengeCounter();
  yield header;
  yield pair.responseHead;
  for await (const c of pair.body()) {
    gc.add(c.length);
    yield c;
  }
  yield RECORD_END;
}

/**
 * The body length and WARC-Block-Digest (over response head + body) of a
 * capture: as given, else counted and hashed with an extra read of its body.
 */
export async function blockOf(pair: CapturePair): Promise<{ bodyLength: number; blockDigest: string }> {
  if (pair.bodyLength !== undefined && pair.blockDigest !== undefined) return { bodyLength: pair.bodyLength, blockDigest: pair.blockDigest };
  const h = createHash('sha256').update(pair.responseHead);
  let bodyLength = 0;
  for await (const c of pair.body()) {
    h.update(c);
    bodyLength += c.length;
  }
  return { bodyLength, blockDigest: 'sha256:' + h.digest('hex') };
}

/** One open WARC file being appended to. */
class OpenWarc {
  dirty = false;
  /** Compressed records appended but not yet written (written together before the batch's fsync). */
  pending: Buffer[] = [];
  pendingBytes = 0;
  /** Bytes on disk; `size` counts the pending ones too. */
  flushed: number;
  constructor(
    readonly name: string,
    readonly fh: FileHandle,
    public size: number,
  ) {
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
   * @param gzipLevel zlib level of each record's gzip member, 1 (fastest) … 9 (smallest); default 6, zlib's own
   */
  constructor(
    private readonly warcsDir: string,
    private readonly archiveId: string,
    private readonly maxBytes: number,
    private readonly gzipLevel = 6,
  ) {
    this.dir = path.join(warcsDir, archiveId);
  }

  private async file(): Promise<OpenWarc> {
    if (this.current && this.current.size < this.maxBytes) return this.current;
    if (this.current) await this.closeCurrent();
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    if (this.seq < 0) {
      // Continue the serials of the files already there, so that file order survives restarts.
      this.seq = 1 + Math.max(-1, ...(await readdir(this.dir)).map(warcFileSerial));
    }
    const name = `${this.archiveId}-${toTimestamp14(new Date())}-${String(this.seq++).padStart(5, '0')}-${randomBytes(3).toString('hex')}.warc.gz`;
    const fh = await open(path.join(this.dir, name), 'wx', 0o600);
    const w = new OpenWarc(name, fh, 0);
    this.current = w;
    const info = warcinfoMember(name);
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
   * Appends the response and request records of one capture: built here
   * ({@link encodePair}) when its body is whole in memory, else streamed
   * through zlib into the file.
   *
   * @returns the file (relative to `warcs/`), offset and length of the
   *   response record's gzip member.
   * @throws on a write error, after truncating the file back to where the
   *   pair began (no partial record is left behind).
   */
  async append(pair: CapturePair): Promise<WrittenRecord> {
    const whole = pair.bodyBuffer;
    if (whole && whole.length <= ONE_SHOT) {
      const blockDigest = pair.blockDigest ?? sha256(pair.responseHead, whole);
      return this.appendEncoded(encodePair({ ...pair, bodyBuffer: whole, blockDigest }, this.gzipLevel));
    }
    const w = await this.file();
    const start = w.size;
    try {
      await w.flush();
      const { bodyLength, blockDigest } = await blockOf(pair);
      const { response: resHeader, request, recordId } = pairHeaders(pair, bodyLength, blockDigest);
      const requestMember = gzipRecord(request, this.gzipLevel);
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
      await pipeline(Readable.from(responseRecordParts(resHeader, pair)), zlib.createGzip({ level: this.gzipLevel, chunkSize: 64 * 1024 }), sink);
      const length = pos - start;
      await writeAll(w.fh, requestMember, pos);
      w.size = w.flushed = start + length + requestMember.length;
      w.dirty = true;
      return { file: path.posix.join(this.archiveId, w.name), offset: start, length, recordId, blockDigest };
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

  /**
   * Appends a record pair built by {@link encodePair}: kept in memory and
   * written with the rest of the batch before its fsync ({@link sync}), or
   * at once past 8 MiB pending.
   */
  async appendEncoded(e: EncodedPair): Promise<WrittenRecord> {
    const w = await this.file();
    const start = w.size;
    w.pending.push(e.response, e.request);
    w.pendingBytes += e.response.length + e.request.length;
    w.size = start + e.response.length + e.request.length;
    w.dirty = true;
    if (w.pendingBytes > MAX_PENDING) await w.flush();
    return { file: path.posix.join(this.archiveId, w.name), offset: start, length: e.response.length, recordId: e.recordId, blockDigest: e.blockDigest };
  }

  /**
   * Appends the revisit and request records of one revisit capture
   * ({@link encodeRevisit}), as {@link appendEncoded}.
   *
   * @returns the file (relative to `warcs/`), offset and length of the revisit record's gzip member.
   */
  appendRevisit(pair: RevisitPair): Promise<WrittenRecord> {
    return this.appendEncoded(encodeRevisit(pair, this.gzipLevel));
  }

  /** fsyncs the current file if anything was written since the last sync. */
  async sync(): Promise<void> {
    const w = this.current;
    if (w?.failed) throw w.failed;
    if (w?.dirty) {
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
