/**
 * Reads WARC files record by record for crash recovery, `verify` and
 * `reindex`: each record is one gzip member (RFC 1952) holding one WARC
 * record (WARC 1.1 §4, §9 "record-at-time compression").
 *
 * Those three jobs need what a WARC library such as warcio (which the tests
 * use to read our files) does not give: the exact byte bounds of
 * each gzip member, a clear "partial" answer for a member cut short by a
 * crash (instead of silently stopping), the gzip CRC-32 checked, and the
 * block and payload digests recomputed in the same pass. It streams: a
 * record of any size costs a bounded amount of memory.
 */
import { createHash, type Hash } from 'node:crypto';
import { type FileHandle, open } from 'node:fs/promises';
import zlib from 'node:zlib';
import { parseHead } from '#shared/http-head.js';

/** One complete WARC record found in a file. */
export interface ScannedRecord {
  /** Byte offset of the record's gzip member in the file. */
  offset: number;
  /** Byte length of that gzip member. */
  length: number;
  /** WARC version line, e.g. `WARC/1.1`. */
  version: string;
  /** WARC named fields, names lower-cased, first value kept. */
  headers: Map<string, string>;
  /** `WARC-Type` (`response`, `request`, `warcinfo`, …). */
  type: string;
  /** The HTTP head of an `application/http` block (status or request line through the blank line); null otherwise or when the block has none. */
  httpHead: Buffer | null;
  /** Block length from `Content-Length`. */
  blockLength: number;
  /** `WARC-Block-Digest` recomputed matches the stated one; `null` when none is stated. */
  blockDigestOk: boolean | null;
  /** `sha256:` + lower-case hex of SHA-256 over the block as read (what the evidence log's leaf names), whatever digest is stated. */
  blockSha256: string;
  /** `WARC-Payload-Digest` recomputed (over the block after the HTTP head) matches; `null` when none is stated, and for a `revisit` record (its payload is its original's). */
  payloadDigestOk: boolean | null;
  /** The recomputed payload digest in the stated form (`sha256:<hex>` for this archive's records); `null` for a `revisit` record. */
  payloadDigest: string | null;
}

/** What the scan finds at a position: a record, a member cut short (crash), or bytes that are not a valid record. */
export type ScanItem =
  { kind: 'record'; record: ScannedRecord } | { kind: 'partial'; offset: number; reason: string } | { kind: 'corrupt'; offset: number; reason: string };

const READ_CHUNK = 1024 * 1024;
/** Longest WARC header (version line, named fields, blank line) read, bytes: a WARC record's header is a few hundred bytes; one longer is damage. */
export const MAX_WARC_HEAD = 64 * 1024;
const MAX_HTTP_HEAD = 1024 * 1024;
const CRLFCRLF = Buffer.from('\r\n\r\n');

/** Reads of a WARC file at positions, mostly forward: a file on disk ({@link FileWindow}) or a stream of an object ({@link StreamWindow}). */
interface Window {
  /** Bytes in the file. */
  readonly size: number;
  /** Up to `n` bytes at `pos` (fewer at the end of the file). The buffer returned is never changed afterwards. */
  at(pos: number, n: number): Promise<Buffer>;
}

/** Positional reads with one cached window. */
class FileWindow implements Window {
  private buf = Buffer.alloc(0);
  private bufStart = 0;
  constructor(
    private readonly fh: FileHandle,
    readonly size: number,
  ) {}

  /** Up to `n` bytes at `pos` (fewer at the end of the file). */
  async at(pos: number, n: number): Promise<Buffer> {
    if (pos >= this.bufStart && pos + n <= this.bufStart + this.buf.length) return this.buf.subarray(pos - this.bufStart, pos - this.bufStart + n);
    const want = Math.max(n, READ_CHUNK);
    const b = Buffer.allocUnsafe(Math.min(want, Math.max(0, this.size - pos)));
    let got = 0;
    while (got < b.length) {
      const { bytesRead } = await this.fh.read(b, got, b.length - got, pos + got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    this.buf = b.subarray(0, got);
    this.bufStart = pos;
    return this.buf.subarray(0, Math.min(n, got));
  }
}

/**
 * The bytes of a file arriving as a stream (an object read from a bucket):
 * positions at or after the start of the last read are answered, earlier
 * ones are gone (the scan reads forward, and looks back only within its
 * last read, at a gzip trailer). Holds about one read (`READ_CHUNK`).
 */
class StreamWindow implements Window {
  private buf: Buffer = Buffer.alloc(0);
  private bufStart = 0;
  private readonly it: AsyncIterator<Buffer>;
  private ended = false;
  private lastPos = 0;
  constructor(
    stream: AsyncIterable<Buffer>,
    readonly size: number,
  ) {
    this.it = stream[Symbol.asyncIterator]();
  }

  async at(pos: number, n: number): Promise<Buffer> {
    if (pos < this.bufStart) throw new Error(`scan of a stream went back from ${this.bufStart} to ${pos}`);
    const want = Math.min(Math.max(n, READ_CHUNK), Math.max(0, this.size - pos));
    if (pos + want > this.bufStart + this.buf.length && !this.ended) {
      // Keep from the previous read's position on (a gzip trailer may be just before `pos`), read on to `pos + want`.
      const keep = Math.max(this.bufStart, Math.min(pos, this.lastPos));
      const end = this.bufStart + this.buf.length;
      const parts: Buffer[] = [this.buf.subarray(Math.min(this.buf.length, keep - this.bufStart))];
      let have = parts[0].length;
      let skip = Math.max(0, keep - end);
      while (have < pos - keep + want) {
        const { value, done } = await this.it.next();
        if (done) {
          this.ended = true;
          break;
        }
        const c = skip ? value.subarray(Math.min(skip, value.length)) : value;
        skip -= value.length - c.length;
        parts.push(c);
        have += c.length;
      }
      this.buf = parts.length === 1 ? parts[0] : Buffer.concat(parts);
      this.bufStart = keep;
      this.lastPos = pos;
    }
    const from = pos - this.bufStart;
    return this.buf.subarray(from, from + Math.min(n, Math.max(0, this.buf.length - from)));
  }
}

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
/** RFC 4648 base32 (upper case, no padding): the form of `sha1:` WARC digests and of CDX digests. */
export function base32(buf: Buffer): string {
  let bits = 0,
    value = 0,
    out = '';
  for (const byte of buf) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

/** A stated WARC digest (`sha256:<hex>`, `sha1:<base32>`, …) and a hasher to check it (WARC 1.1 §5.8, §5.9). */
export class DigestCheck {
  private readonly hash: Hash | null;
  constructor(private readonly stated: string | undefined) {
    const algo = stated ? stated.slice(0, stated.indexOf(':')).toLowerCase().replace('-', '') : '';
    this.hash = algo === 'sha256' || algo === 'sha1' || algo === 'sha512' || algo === 'md5' ? createHash(algo) : null;
  }
  update(b: Buffer): void {
    this.hash?.update(b);
  }
  /** [ok, recomputed in the stated form]; ok null when nothing (or an unknown algorithm) is stated. */
  result(): [boolean | null, string | null] {
    if (!this.stated || !this.hash) return [this.stated ? false : null, null];
    const colon = this.stated.indexOf(':');
    const prefix = this.stated.slice(0, colon + 1);
    const value = this.stated.slice(colon + 1);
    const d = this.hash.digest();
    const form = /^[0-9a-f]+$/i.test(value) && value.length === d.length * 2 ? d.toString('hex') : base32(d);
    return [form.toLowerCase() === value.replace(/=+$/, '').toLowerCase(), prefix + form];
  }
}

/** Parses the decompressed bytes of one member as one WARC record, incrementally. */
class RecordBytes {
  private state: 'head' | 'block' | 'tail' | 'done' = 'head';
  private head: Buffer[] = [];
  private headLen = 0;
  version = '';
  headers = new Map<string, string>();
  blockLength = 0;
  private blockSeen = 0;
  private http = false;
  private httpHeadParts: Buffer[] | null = null;
  private httpHeadLen = 0;
  httpHead: Buffer | null = null;
  private blockCheck: DigestCheck | null = null;
  /** SHA-256 of the block, when the stated block digest is not one already (its check computes it then). */
  private blockSha: Hash | null = null;
  private payloadCheck: DigestCheck | null = null;
  private tail = Buffer.alloc(0);
  error: string | null = null;

  push(chunk: Buffer): void {
    while (chunk.length && !this.error) {
      if (this.state === 'head') chunk = this.pushHead(chunk);
      else if (this.state === 'block') chunk = this.pushBlock(chunk);
      else if (this.state === 'tail') {
        const need = 4 - this.tail.length;
        this.tail = Buffer.concat([this.tail, chunk.subarray(0, need)]);
        chunk = chunk.subarray(need);
        if (this.tail.length === 4) {
          if (!this.tail.equals(CRLFCRLF)) this.error = 'WARC record block is not followed by CRLF CRLF (Content-Length wrong)';
          this.state = 'done';
        }
      } else {
        this.error = 'more than one WARC record in one gzip member';
      }
    }
  }

  private pushHead(chunk: Buffer): Buffer {
    this.head.push(chunk);
    this.headLen += chunk.length;
    const all = Buffer.concat(this.head);
    const end = all.indexOf(CRLFCRLF);
    if (end < 0) {
      if (this.headLen > MAX_WARC_HEAD) this.error = 'WARC header block is larger than 64 KiB or has no blank line';
      else this.head = [all];
      return Buffer.alloc(0);
    }
    const { startLine, fields } = parseHead(all.subarray(0, end), { encoding: 'utf8' });
    this.version = startLine;
    if (!/^WARC\/1\.[01]$/.test(this.version)) {
      this.error = `not a WARC record (version line ${JSON.stringify(this.version.slice(0, 20))})`;
      return Buffer.alloc(0);
    }
    for (const [name, value] of fields) {
      const k = name.toLowerCase();
      if (!this.headers.has(k)) this.headers.set(k, value);
    }
    const cl = this.headers.get('content-length');
    if (!cl || !/^\d+$/.test(cl)) {
      this.error = 'WARC record has no valid Content-Length';
      return Buffer.alloc(0);
    }
    this.blockLength = Number(cl);
    this.http = /^application\/http\b/i.test(this.headers.get('content-type') ?? '');
    if (this.http) this.httpHeadParts = [];
    this.blockCheck = new DigestCheck(this.headers.get('warc-block-digest'));
    this.blockSha = /^sha256:[0-9a-f]{64}$/i.test(this.headers.get('warc-block-digest') ?? '') ? null : createHash('sha256');
    // A revisit record's payload is its original's, not in its block (WARC 1.1 §6.7.2): nothing here to check it against.
    this.payloadCheck = new DigestCheck(this.headers.get('warc-type') === 'revisit' ? undefined : this.headers.get('warc-payload-digest'));
    this.state = this.blockLength === 0 ? 'tail' : 'block';
    this.head = [];
    return all.subarray(end + 4);
  }

  private pushBlock(chunk: Buffer): Buffer {
    const take = chunk.subarray(0, this.blockLength - this.blockSeen);
    this.blockSeen += take.length;
    this.blockCheck!.update(take);
    this.blockSha?.update(take);
    if (this.httpHeadParts) {
      this.httpHeadParts.push(take);
      this.httpHeadLen += take.length;
      const all = Buffer.concat(this.httpHeadParts);
      const end = all.indexOf(CRLFCRLF);
      if (end >= 0) {
        this.httpHead = Buffer.from(all.subarray(0, end + 4));
        this.payloadCheck!.update(all.subarray(end + 4));
        this.httpHeadParts = null;
      } else if (this.httpHeadLen > MAX_HTTP_HEAD || this.blockSeen === this.blockLength) {
        // No HTTP head: the payload is the whole block.
        this.payloadCheck!.update(all);
        this.httpHeadParts = null;
      } else this.httpHeadParts = [all];
    } else {
      this.payloadCheck!.update(take);
    }
    if (this.blockSeen === this.blockLength) this.state = 'tail';
    return chunk.subarray(take.length);
  }

  get complete(): boolean {
    return this.state === 'done';
  }

  digests(): { block: boolean | null; blockSha256: string; payload: boolean | null; payloadDigest: string | null } {
    const [block, recomputed] = this.blockCheck!.result();
    const [payload, payloadDigest] = this.payloadCheck!.result();
    const blockSha256 = this.blockSha ? 'sha256:' + this.blockSha.digest('hex') : recomputed!.toLowerCase();
    return { block, blockSha256, payload, payloadDigest };
  }
}

/**
 * Reads the gzip member at `offset` and the WARC record in it.
 *
 * @returns a record, or `partial` (the file ends inside the member: a write
 *   cut short), or `corrupt` (not gzip, bad CRC-32, not a WARC record, or a
 *   block that disagrees with its Content-Length); `null` at the end of the file.
 */
async function readMember(win: Window, offset: number): Promise<ScanItem | null> {
  if (offset >= win.size) return null;
  const h = await win.at(offset, 10);
  if (h.length < 10) return { kind: 'partial', offset, reason: `the file ends inside a gzip header (${win.size - offset} bytes)` };
  if (h[0] !== 0x1f || h[1] !== 0x8b || h[2] !== 8) return { kind: 'corrupt', offset, reason: 'not the start of a gzip member' };
  const flags = h[3];
  let p = offset + 10;
  if (flags & 4) {
    const x = await win.at(p, 2);
    if (x.length < 2) return { kind: 'partial', offset, reason: 'the file ends inside a gzip header' };
    p += 2 + x.readUInt16LE(0);
  }
  for (const bit of [8, 16]) {
    if (!(flags & bit)) continue;
    for (;;) {
      const s = await win.at(p, 4096);
      if (s.length === 0) return { kind: 'partial', offset, reason: 'the file ends inside a gzip header' };
      const z = s.indexOf(0);
      if (z >= 0) {
        p += z + 1;
        break;
      }
      p += s.length;
    }
  }
  if (flags & 2) p += 2;

  const rec = new RecordBytes();
  let crc = 0;
  let outLen = 0;
  const inflate = zlib.createInflateRaw();
  const ended = new Promise<string | null>((resolve) => {
    inflate.on('data', (c: Buffer) => {
      crc = zlib.crc32(c, crc);
      outLen += c.length;
      rec.push(c);
    });
    inflate.once('end', () => resolve(null));
    inflate.once('error', (e) => resolve(e.message));
  });
  let fed = p;
  let finished = false;
  void ended.then(() => (finished = true));
  while (!finished && fed < win.size) {
    const chunk = await win.at(fed, READ_CHUNK);
    fed += chunk.length;
    if (!inflate.write(chunk) && !finished) {
      await new Promise<void>((r) => {
        inflate.once('drain', () => r());
        void ended.then(() => r());
      });
    }
    if (rec.error) break;
  }
  if (!finished) inflate.end();
  const err = await ended;
  inflate.destroy();
  if (rec.error) return { kind: 'corrupt', offset, reason: rec.error };
  if (err) {
    if (fed >= win.size && /unexpected end/i.test(err)) return { kind: 'partial', offset, reason: 'the file ends inside a gzip member (a record cut short)' };
    return { kind: 'corrupt', offset, reason: `gzip data is damaged: ${err}` };
  }
  const deflateEnd = p + inflate.bytesWritten;
  const trailer = await win.at(deflateEnd, 8);
  if (trailer.length < 8) return { kind: 'partial', offset, reason: 'the file ends inside a gzip trailer' };
  if (trailer.readUInt32LE(0) !== crc >>> 0 || trailer.readUInt32LE(4) !== outLen % 2 ** 32)
    return { kind: 'corrupt', offset, reason: 'gzip CRC-32 or length does not match the data' };
  if (!rec.complete) return { kind: 'corrupt', offset, reason: `the WARC record is shorter than its Content-Length (${rec.blockLength})` };
  const d = rec.digests();
  return {
    kind: 'record',
    record: {
      offset,
      length: deflateEnd + 8 - offset,
      version: rec.version,
      headers: rec.headers,
      type: rec.headers.get('warc-type') ?? '',
      httpHead: rec.httpHead,
      blockLength: rec.blockLength,
      blockDigestOk: d.block,
      blockSha256: d.blockSha256,
      payloadDigestOk: d.payload,
      payloadDigest: d.payloadDigest,
    },
  };
}

/**
 * Scans a gzip-per-record WARC file from `start`, one item per gzip member.
 * The scan stops after the first `partial` or `corrupt` item (what follows
 * cannot be trusted to start on a member boundary).
 */
export async function* scanWarcFile(file: string, start = 0): AsyncGenerator<ScanItem> {
  const fh = await open(file, 'r');
  try {
    yield* scanWindow(new FileWindow(fh, (await fh.stat()).size), start);
  } finally {
    await fh.close();
  }
}

/**
 * Scans a gzip-per-record WARC file that arrives as a stream of `size`
 * bytes (an object read from a bucket, from its first byte), as
 * {@link scanWarcFile}, in bounded memory. The caller ends the stream when
 * it stops early.
 */
export function scanWarcStream(stream: AsyncIterable<Buffer>, size: number): AsyncGenerator<ScanItem> {
  return scanWindow(new StreamWindow(stream, size), 0);
}

async function* scanWindow(win: Window, start: number): AsyncGenerator<ScanItem> {
  let offset = start;
  for (;;) {
    const item = await readMember(win, offset);
    if (!item) return;
    yield item;
    if (item.kind !== 'record') return;
    offset += item.record.length;
  }
}
