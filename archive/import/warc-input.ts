/**
 * Reading WARC files for `memento-archive import`, with warcio (WARC 1.0
 * and 1.1, plain or gzip, one member per record or not): record by
 * record, each block streamed and checked, never held whole.
 *
 * warcio is lenient where an import must not be: it ends quietly on a gzip
 * member or a record cut short, and hangs when asked for the record after
 * a cut one. So each record is checked here — a `WARC/1.0` or `WARC/1.1`
 * version line, a Content-Length, a block of exactly that length, the
 * `WARC-Block-Digest` when it states one (WARC 1.1 §5.8) — and the file
 * must end where its last record ends; the first failure is a
 * {@link WarcDamage} naming the file and the record's offset, and nothing
 * after it is read.
 *
 * warcio also reads a WARC header line, and the header block, until it
 * ends, holding it all: a file with a line that never ends would fill the
 * memory. Here a WARC header stops at {@link MAX_WARC_HEAD} bytes (what the
 * archive's own reader allows; a real one is a few hundred bytes), a
 * {@link WarcDamage} too. The HTTP head inside a record is read by
 * {@link readHead}, within the importer's `max_head_bytes`.
 */
import { OperatorError } from '#shared/operator-error.js';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { AsyncIterReader, WARCParser, type WARCRecord } from 'warcio';
import { ScavengeCounter } from '#shared/gc.js';
import { DigestCheck, MAX_WARC_HEAD } from '../store/warcs/warc-scan.js';

/** The file is damaged at `offset` (a record cut short, gzip data that does not inflate, bytes that are not a WARC record): nothing after it can be read. */
export class WarcDamage extends OperatorError {
  constructor(
    readonly file: string,
    readonly offset: number,
    readonly reason: string,
  ) {
    super(`${file}: damaged at offset ${offset}: ${reason}`);
    this.name = 'WarcDamage';
  }
}

/** A record whose block does not match its `WARC-Block-Digest`: the record is not to be trusted, the file goes on. */
export class RecordDigestError extends Error {
  constructor(
    readonly file: string,
    readonly offset: number,
  ) {
    super(`${file}:${offset}: the record's block does not match its WARC-Block-Digest`);
    this.name = 'RecordDigestError';
  }
}

/** A WARC header longer than {@link MAX_WARC_HEAD}: thrown by {@link HeadBoundReader}, reported as a {@link WarcDamage} at `offset` (set by {@link HeadBoundParser}). */
class WarcHeadTooLong extends Error {
  offset = 0;
}

/**
 * warcio's reader (plain or gzip), bounded while a WARC header is read:
 * between {@link beginHead} and {@link endHead}, once the header has taken
 * more than {@link MAX_WARC_HEAD} bytes, the next read throws
 * {@link WarcHeadTooLong} instead of taking one more chunk. warcio reads a
 * header line (`readlineRaw`) and the header block by iterating this
 * reader, and gives back what it read past the line (`unread`), so the
 * read offset counts exactly what the header has taken; it holds that,
 * and at most one chunk more.
 */
class HeadBoundReader extends AsyncIterReader {
  /** Read offset (decoded bytes) where the header began; -1 outside a header. */
  private headStart = -1;
  /** Offset in the file where the line being read began, and where the record's first line began (-1 before it). */
  private lineStart = 0;
  private recordStart = -1;
  /** Every byte read passes here: a scavenge every few MiB keeps the read buffers of a large block from piling up (shared/gc.ts). */
  private readonly scavenge = new ScavengeCounter();

  beginHead(): void {
    this.headStart = this.getReadOffset();
    this.recordStart = -1;
  }

  /** @throws WarcHeadTooLong when the header read took more than {@link MAX_WARC_HEAD} bytes */
  endHead(): void {
    const took = this.getReadOffset() - this.headStart;
    this.headStart = -1;
    if (took > MAX_WARC_HEAD) throw new WarcHeadTooLong();
  }

  /** Where the record whose header is being read begins in a plain file: at its first line that is not blank. */
  get headOffset(): number {
    return this.recordStart >= 0 ? this.recordStart : this.lineStart;
  }

  override async readlineRaw(maxLength?: number): Promise<Uint8Array | null> {
    if (this.headStart >= 0 && this.recordStart < 0) this.lineStart = this.getRawOffset();
    const line = await super.readlineRaw(maxLength);
    if (this.headStart >= 0 && this.recordStart < 0 && line?.some((b) => b !== 0x0d && b !== 0x0a)) this.recordStart = this.lineStart;
    return line;
  }

  override async *[Symbol.asyncIterator](): AsyncGenerator<Uint8Array, void, unknown> {
    const it = super[Symbol.asyncIterator]();
    try {
      for (;;) {
        if (this.headStart >= 0 && this.getReadOffset() - this.headStart > MAX_WARC_HEAD) throw new WarcHeadTooLong();
        const r = await it.next();
        if (r.done) return;
        this.scavenge.add(r.value.length);
        yield r.value;
      }
    } finally {
      await it.return();
    }
  }
}

/**
 * Compressed bytes handed to warcio at a time. warcio's inflater (pako)
 * inflates all it is given at once and holds the output until it is read:
 * deflate expands at most 1032 times, so this bounds what one step holds
 * to some 8 MiB, where a 256 KiB read of a gzip bomb (a member of zeros)
 * would hold a quarter of a GiB.
 */
const GZIP_PIECE = 8 * 1024;

/** The chunks of `source`, counted in `read.bytes`. */
async function* counting(source: AsyncIterable<Buffer>, read: { bytes: number }): AsyncGenerator<Buffer> {
  for await (const chunk of source) {
    read.bytes += chunk.length;
    yield chunk;
  }
}

/** The chunks of `source` cut into pieces of at most `size` bytes. */
async function* pieces(source: AsyncIterable<Buffer>, size: number): AsyncGenerator<Buffer> {
  for await (const chunk of source) for (let i = 0; i < chunk.length; i += size) yield chunk.subarray(i, i + size);
}

/** warcio's parser on a {@link HeadBoundReader}: each WARC header read within its bound (the block before it has been read: records() drains each). */
class HeadBoundParser extends WARCParser {
  constructor(private readonly reader: HeadBoundReader) {
    super(reader, { parseHttp: false });
  }

  /** @throws WarcHeadTooLong with the offset of the record (of its gzip member: warcio's own offset, set before the header is read) */
  override async parse(): Promise<WARCRecord | null> {
    this.reader.beginHead();
    try {
      const record = await super.parse();
      this.reader.endHead();
      return record;
    } catch (err) {
      if (err instanceof WarcHeadTooLong) err.offset = this.reader.compressed ? this.offset : this.reader.headOffset;
      throw err;
    }
  }
}

/** The algorithms whose digests can be checked; others are taken on trust. */
const CHECKED = /^(?:sha1|sha-1|sha256|sha-256|sha512|sha-512|md5):/i;

/**
 * The block of one record as a stream of bytes, read once. Iterating it
 * more than once, or {@link drain}ing it after a consumer stopped, goes on
 * where the last read ended. At its end the length and the stated block
 * digest are checked; a failure is thrown to whoever reads the last chunk,
 * and kept in {@link error}.
 */
export class Block implements AsyncIterable<Buffer> {
  private got = 0;
  private ended = false;
  private readonly iter: AsyncIterator<Uint8Array>;
  private readonly digest: DigestCheck | null;
  /** Serializes reads, so that a consumer being stopped and {@link drain} never read at once. */
  private chain: Promise<unknown> = Promise.resolve();
  /** The check that failed at the end, once the end is reached. */
  error: WarcDamage | RecordDigestError | null = null;

  constructor(
    source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
    /** The record's Content-Length. */
    readonly length: number,
    statedDigest: string | undefined,
    private readonly where: { file: string; offset: number },
    check = true,
  ) {
    this.iter =
      Symbol.asyncIterator in source
        ? source[Symbol.asyncIterator]()
        : (async function* () {
            yield* source;
          })();
    this.digest = check && statedDigest && CHECKED.test(statedDigest) ? new DigestCheck(statedDigest) : null;
  }

  /** The next chunk, `null` at the end. @throws WarcDamage (short block) or RecordDigestError, once, at the end. */
  next(): Promise<Buffer | null> {
    const p = this.chain.then(() => this.read());
    this.chain = p.catch(() => undefined);
    return p;
  }

  private async read(): Promise<Buffer | null> {
    if (this.ended) return null;
    const r = await this.iter.next().catch((err: Error) => {
      throw new WarcDamage(this.where.file, this.where.offset, `the data does not read: ${err.message}`);
    });
    if (!r.done) {
      const c = Buffer.from(r.value.buffer, r.value.byteOffset, r.value.byteLength);
      this.got += c.length;
      this.digest?.update(c);
      return c;
    }
    this.ended = true;
    if (this.got < this.length) {
      this.error = new WarcDamage(this.where.file, this.where.offset, `the file ends inside this record: its block has ${this.got} of ${this.length} bytes`);
    } else if (this.digest && this.digest.result()[0] === false) {
      this.error = new RecordDigestError(this.where.file, this.where.offset);
    }
    if (this.error) throw this.error;
    return null;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Buffer> {
    for (;;) {
      const c = await this.next();
      if (!c) return;
      yield c;
    }
  }

  /** Reads what is left. Never throws: a failed check is in {@link error}. */
  async drain(): Promise<void> {
    try {
      while (await this.next());
    } catch {
      // kept in this.error
    }
  }
}

/** One WARC record as the import sees it; its {@link Block} must be read or drained before the next record is asked for. */
export interface WarcItem {
  /** The file, as given. */
  file: string;
  /** Byte offset of the record in the file (of its gzip member in a gzip-per-record file). */
  offset: number;
  /** `WARC-Type`, lower case (`response`, `request`, `revisit`, `resource`, `metadata`, `warcinfo`…). */
  type: string;
  /** `WARC-Record-ID` (`<urn:uuid:…>`), `''` when missing. */
  id: string;
  /** `WARC-Target-URI` without the angle brackets some tools (wget) put around it; `''` when missing. */
  targetUri: string;
  /** `WARC-Date`, `null` when missing or not a date. */
  date: Date | null;
  /** The ids named by `WARC-Concurrent-To` (WARC 1.1 §5.7). */
  concurrentTo: string[];
  /** A WARC named field (case-insensitive), `undefined` when missing. */
  field(name: string): string | undefined;
  block: Block;
}

/** Where the request record of a response record is, from a first pass over the file (see {@link pairRequests}). */
export interface RequestPairs {
  /** response/revisit record id → offset of the request record that names it (`WARC-Concurrent-To`) or follows it for the same URI. */
  requestOf: Map<string, number>;
  /** request record id → its offset. */
  requestById: Map<string, number>;
}

const bare = (uri: string | undefined | null) => (uri ?? '').trim().replace(/^<(.*)>$/, '$1');

/** Where a WARC file's bytes come from: a file on disk, or an entry of a WACZ package (wacz-input.ts). */
export interface ByteSource {
  /** Bytes in the WARC file. */
  readonly size: number;
  /** Its bytes from `start` to the end, as a stream (the caller destroys it when it stops early). */
  open(start: number): Promise<Readable>;
}

/** The bytes of the file at `file`. */
function fileSource(file: string, size: number): ByteSource {
  return { size, open: async (start) => createReadStream(file, { start, highWaterMark: 256 * 1024 }) };
}

/** Whether the bytes begin with a gzip member (RFC 1952 magic bytes). */
async function startsWithGzip(source: ByteSource): Promise<boolean> {
  if (source.size < 2) return false;
  const stream = await source.open(0);
  try {
    let head = Buffer.alloc(0);
    for await (const c of stream) {
      head = Buffer.concat([head, c as Buffer]);
      if (head.length >= 2) break;
    }
    return head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b;
  } finally {
    stream.destroy();
  }
}

/** A WARC file read with warcio; {@link bytesRead} counts what its passes read, for a progress bar. */
export class WarcFile {
  /** Bytes read by the pass under way, and by the passes before it. */
  private current: { bytes: number } | null = null;
  private passBytes = 0;

  private constructor(
    /** The file's name in messages: its path, or `<package>.wacz:archive/<name>`. */
    readonly file: string,
    readonly size: number,
    /** The file begins with a gzip member (RFC 1952 magic bytes). */
    private readonly gzip: boolean,
    private readonly source: ByteSource,
  ) {}

  /** @throws the file system's error (ENOENT, EISDIR…) */
  static async open(file: string): Promise<WarcFile> {
    const st = await stat(file);
    if (!st.isFile()) throw Object.assign(new Error(`${file} is not a file`), { code: 'EISDIR' });
    return WarcFile.of(file, fileSource(file, st.size));
  }

  /** The WARC file whose bytes `source` gives, named `name` in messages. */
  static async of(name: string, source: ByteSource): Promise<WarcFile> {
    return new WarcFile(name, source.size, await startsWithGzip(source), source);
  }

  /** Bytes of the file read so far by the import's pass over it (not counting the first pass, {@link pairRequests}). */
  get bytesRead(): number {
    return this.passBytes + (this.current?.bytes ?? 0);
  }

  /**
   * The records of the file, in order, each checked (module comment).
   * With `check: false`, block digests are not computed (a quick pass).
   *
   * @throws WarcDamage at the first record that fails a check, or when the
   *   file does not end where its last record ends (a member cut short,
   *   trailing bytes that are not a record)
   */
  async *records(opts: { check?: boolean; start?: number; quiet?: boolean } = {}): AsyncGenerator<WarcItem> {
    const whole = opts.start === undefined && !opts.quiet;
    const stream = await this.source.open(opts.start ?? 0);
    const read = { bytes: 0 };
    if (whole) this.current = read;
    const counted = counting(stream, read);
    const reader = new HeadBoundReader(this.gzip ? pieces(counted, GZIP_PIECE) : counted);
    const parser = new HeadBoundParser(reader);
    const base = opts.start ?? 0;
    let offset = base;
    try {
      for await (const rec of parser) {
        offset = base + parser.offset;
        const h = rec.warcHeaders.headers;
        const version = rec.warcHeaders.statusline.trim();
        const damaged = (why: string) => new WarcDamage(this.file, offset, why);
        if (!/^WARC\/1\.[01]$/.test(version)) throw damaged(`not a WARC record (it begins "${version.slice(0, 24).replace(/[^\x20-\x7e]/g, '?')}")`);
        const cl = h.get('content-length') ?? '';
        if (!/^\d+$/.test(cl)) throw damaged('the WARC record has no valid Content-Length');
        const date = new Date(h.get('warc-date') ?? '');
        const item: WarcItem = {
          file: this.file,
          offset,
          type: (h.get('warc-type') ?? '').toLowerCase(),
          id: (h.get('warc-record-id') ?? '').trim(),
          targetUri: bare(h.get('warc-target-uri')),
          date: Number.isNaN(date.getTime()) ? null : date,
          concurrentTo: (h.get('warc-concurrent-to') ?? '')
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean),
          field: (name) => h.get(name) ?? undefined,
          block: new Block(rec.reader, Number(cl), h.get('warc-block-digest') ?? undefined, { file: this.file, offset }, opts.check ?? true),
        };
        if (!item.type) throw damaged('the WARC record has no WARC-Type');
        yield item;
        await item.block.drain();
        if (item.block.error instanceof WarcDamage) throw item.block.error;
      }
    } catch (err) {
      if (err instanceof WarcDamage) throw err;
      if (err instanceof WarcHeadTooLong)
        throw new WarcDamage(this.file, err.offset, `the WARC header is longer than ${MAX_WARC_HEAD} bytes (a line without end?)`);
      throw new WarcDamage(this.file, offset, `the data does not read: ${(err as Error).message}`);
    } finally {
      stream.destroy();
      if (whole) {
        this.passBytes += read.bytes;
        this.current = null;
      }
    }
    // warcio ends quietly on a cut member or leftover bytes: the last record must end at the end of the file.
    const end = base + parser.offset;
    if (end < this.size && opts.start === undefined)
      throw new WarcDamage(this.file, end, `${this.size - end} bytes at the end of the file are not a complete WARC record (a file cut short?)`);
  }

  /**
   * First pass: where each response's request record is, so that a
   * response written before its request (as this archive, Heritrix and
   * most crawlers do) can be imported with it. Reads every record without
   * checking digests, on a stream of its own (the import's pass may be
   * under way); stops quietly at damage (the import's pass reports it).
   */
  async pairRequests(): Promise<RequestPairs> {
    const pairs: RequestPairs = { requestOf: new Map(), requestById: new Map() };
    let prev: WarcItem | null = null;
    try {
      for await (const r of this.records({ check: false, quiet: true })) {
        if (r.type === 'request') {
          if (r.id) pairs.requestById.set(r.id, r.offset);
          for (const id of r.concurrentTo) pairs.requestOf.set(id, r.offset);
          const unlinked = prev && !prev.concurrentTo.length && !r.concurrentTo.length;
          if (prev && unlinked && (prev.type === 'response' || prev.type === 'revisit') && prev.targetUri === r.targetUri && prev.id)
            pairs.requestOf.set(prev.id, r.offset);
        }
        prev = r;
      }
    } catch (err) {
      if (!(err instanceof WarcDamage)) throw err;
    }
    return pairs;
  }

  /**
   * The HTTP head of the request record at `offset` (a positioned read),
   * or `null` when there is no request record there.
   */
  async requestHeadAt(offset: number, maxBytes: number): Promise<Buffer | null> {
    try {
      for await (const r of this.records({ check: false, start: offset })) {
        return r.type === 'request' ? await readHead(r.block, maxBytes).then((h) => h?.head ?? null) : null;
      }
      return null;
    } catch {
      return null;
    }
  }
}

const CRLFCRLF = Buffer.from('\r\n\r\n');

/**
 * Reads the HTTP head at the start of a block: the bytes up to and
 * including the first blank line, and the bytes after it that were read
 * with it. `null` when the block has no blank line within `maxBytes` (no
 * HTTP head, or one too large).
 */
export async function readHead(block: Block, maxBytes: number): Promise<{ head: Buffer; rest: Buffer } | null> {
  let buf: Buffer = Buffer.alloc(0);
  for (;;) {
    const end = buf.indexOf(CRLFCRLF);
    if (end >= 0) return { head: buf.subarray(0, end + 4), rest: buf.subarray(end + 4) };
    if (buf.length > maxBytes) return null;
    const c = await block.next();
    if (!c) return null;
    buf = buf.length ? Buffer.concat([buf, c]) : c;
  }
}
