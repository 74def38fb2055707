/**
 * WARC files in a bucket of an S3-compatible object store (AWS S3, MinIO,
 * Ceph RGW), shared by several archive daemons (`storage.warcs:
 * s3://bucket/prefix/`, docs/scale-out.md).
 *
 * Objects are written once and never changed: each batch of the write
 * queue becomes one object `<prefix><replica>/<archive id>-<UTC
 * yyyymmddhhmmss>-<serial>-<random>.warc.gz` (a `warcinfo` record, then the
 * batch's record pairs, each its own gzip member, as in a WARC file on
 * disk), uploaded before the batch's index rows are committed and its PUTs
 * answered; a capture too large to hold in memory is streamed into an
 * object of its own (a multipart upload). Index rows name an object by its
 * key after the prefix. Records are read back with ranged GETs.
 */
import { randomBytes } from 'node:crypto';
import { PassThrough, Readable, pipeline } from 'node:stream';
import zlib from 'node:zlib';
import { DeleteObjectCommand, GetObjectCommand, HeadBucketCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { httpError } from '#shared/http-error.js';
import { toTimestamp14 } from '#shared/http-date.js';
import type { S3WarcsConfig } from '../../storage-config.js';
import { type RangeSource, WarcReader } from './warc-reader.js';
import { type ScanItem, scanWarcStream } from './warc-scan.js';
import type { WarcAppender, WarcFileInfo, WarcStore } from './warc-store.js';
import {
  type CapturePair,
  type EncodedPair,
  ONE_SHOT,
  type RevisitPair,
  type WrittenRecord,
  blockOf,
  encodePair,
  encodeRevisit,
  gzipRecord,
  pairHeaders,
  responseRecordParts,
  sha256,
  warcinfoMember,
} from './warc-writer.js';

/** An object of a batch is uploaded once it holds this many bytes; the batch's next records go to a new object. */
const MAX_HELD = 8 * 1024 * 1024;
/** Part size of a streamed (multipart) upload: about two parts are in memory at a time. */
const PART_SIZE = 8 * 1024 * 1024;

/** An object's name after the prefix: replica folder, archive id, 14-digit time, serial. */
const OBJECT_NAME = /^([A-Za-z0-9._-]+)\/(.+)-(\d{14})-(\d+)-[0-9a-f]+\.warc\.gz$/;

/** The archive id an object name (after the prefix: `<folder>/<archive id>-<14 digits>-<serial>-<hex>.warc.gz`) gives; `undefined` for a name {@link S3WarcStore.list} leaves out. */
export function objectArchive(file: string): string | undefined {
  return OBJECT_NAME.exec(file)?.[2];
}

/** The client of `c`: its endpoint, region, path style; credentials as the AWS SDK finds them (environment, files, instance role). */
export function s3Client(c: S3WarcsConfig): S3Client {
  return new S3Client({
    region: c.region,
    forcePathStyle: c.forcePathStyle,
    ...(c.endpoint ? { endpoint: c.endpoint } : {}),
    // Checksums only where the API requires them: S3-compatible stores that predate the SDK's
    // default ones (s3rver, older MinIO and RGW) store a streamed upload's checksum framing as data.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

/** The store failed: a 503 naming it (the capture is not acknowledged; the sender keeps it and retries). */
function unavailable(location: string, what: string, err: unknown): Error {
  const e = err as Error & { Code?: string };
  return httpError(503, `the WARC store ${location} ${what}: ${e?.name ?? ''} ${e?.message ?? String(err)}`.trim(), { headers: { 'retry-after': '5' } });
}

/** The WARC files of a bucket prefix: the write path's appenders, ranged reads, listing and scans. */
export class S3WarcStore implements WarcStore, RangeSource {
  readonly kind = 's3' as const;
  readonly location: string;
  readonly client: S3Client;

  constructor(readonly conf: S3WarcsConfig) {
    this.location = `s3://${conf.bucket}/${conf.prefix}`;
    this.client = s3Client(conf);
  }

  /** The object key of `file` (a name as the index keeps it). */
  key(file: string): string {
    return this.conf.prefix + file;
  }

  /** A ranged GET of `file`'s bytes `[offset, offset + length)`; its body stream. */
  private async get(file: string, offset: number, length: number): Promise<Readable> {
    try {
      const r = await this.client.send(
        new GetObjectCommand({ Bucket: this.conf.bucket, Key: this.key(file), Range: `bytes=${offset}-${offset + length - 1}` }),
      );
      return r.Body as Readable;
    } catch (err) {
      if ((err as Error).name === 'NoSuchKey') throw new Error(`WARC object ${this.location}${file} is missing`, { cause: err });
      throw unavailable(this.location, `could not be read (${file})`, err);
    }
  }

  async bytes(file: string, offset: number, length: number): Promise<Buffer> {
    const body = await this.get(file, offset, length);
    const parts: Buffer[] = [];
    let got = 0;
    for await (const c of body as AsyncIterable<Buffer>) {
      parts.push(c);
      got += c.length;
    }
    if (got !== length) throw new Error(`no WARC response record at ${file}:${offset}: the object ends ${length - got} bytes before the record's end`);
    return parts.length === 1 ? parts[0] : Buffer.concat(parts);
  }

  stream(file: string, offset: number, length: number): Promise<Readable> {
    return this.get(file, offset, length);
  }

  async readAt(file: string, offset: number, max: number): Promise<Buffer> {
    let body: Readable;
    try {
      const r = await this.client.send(new GetObjectCommand({ Bucket: this.conf.bucket, Key: this.key(file), Range: `bytes=${offset}-${offset + max - 1}` }));
      body = r.Body as Readable;
    } catch (err) {
      const e = err as Error & { $metadata?: { httpStatusCode?: number } };
      // A range that starts at or past the object's end: no bytes there.
      if (e.name === 'InvalidRange' || e.$metadata?.httpStatusCode === 416) return Buffer.alloc(0);
      if (e.name === 'NoSuchKey') throw new Error(`WARC object ${this.location}${file} is missing`, { cause: err });
      throw unavailable(this.location, `could not be read (${file})`, err);
    }
    const parts: Buffer[] = [];
    for await (const c of body as AsyncIterable<Buffer>) parts.push(c);
    return Buffer.concat(parts);
  }

  appender(archiveId: string, _maxBytes: number, gzipLevel: number): WarcAppender {
    return new S3Appender(this, archiveId, gzipLevel);
  }

  reader(cacheBytes: number): WarcReader {
    return new WarcReader('', 64, cacheBytes, this);
  }

  /**
   * Every object under `prefix` (relative to the store's prefix), with its size.
   * @throws HttpError 503 (`Retry-After`) when the store cannot be asked: unreachable, its name not resolved, an error answer
   */
  async *objects(prefix = ''): AsyncGenerator<WarcFileInfo> {
    let token: string | undefined;
    do {
      let r;
      try {
        r = await this.client.send(new ListObjectsV2Command({ Bucket: this.conf.bucket, Prefix: this.conf.prefix + prefix, ContinuationToken: token }));
      } catch (err) {
        throw unavailable(this.location, 'could not be listed', err);
      }
      for (const o of r.Contents ?? []) if (o.Key) yield { file: o.Key.slice(this.conf.prefix.length), size: o.Size ?? 0 };
      token = r.IsTruncated ? r.NextContinuationToken : undefined;
    } while (token);
  }

  /**
   * The objects of every replica, per archive id (from the name), ordered
   * by the time in their name, then serial, then name: the order they were
   * written in within a replica, and about that across replicas. Keys of
   * another shape are left out.
   */
  async list(): Promise<Map<string, WarcFileInfo[]>> {
    const found: { info: WarcFileInfo; archive: string; ts: string; serial: number }[] = [];
    for await (const info of this.objects()) {
      const m = OBJECT_NAME.exec(info.file);
      if (m) found.push({ info, archive: m[2], ts: m[3], serial: Number(m[4]) });
    }
    found.sort((a, b) => (a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : a.serial - b.serial || (a.info.file < b.info.file ? -1 : 1)));
    const out = new Map<string, WarcFileInfo[]>();
    for (const f of found) {
      if (!out.has(f.archive)) out.set(f.archive, []);
      out.get(f.archive)!.push(f.info);
    }
    return out;
  }

  /** Scans an object from its first byte (a GET streamed through warc-scan.ts, bounded memory). Objects are whole: `start` must be 0. */
  async *scan(file: string, start = 0): AsyncGenerator<ScanItem> {
    if (start !== 0) throw new Error(`a WARC object is scanned from its start, not from ${start}`);
    let body: Readable;
    let size: number;
    try {
      const r = await this.client.send(new GetObjectCommand({ Bucket: this.conf.bucket, Key: this.key(file) }));
      body = r.Body as Readable;
      size = r.ContentLength ?? 0;
    } catch (err) {
      throw unavailable(this.location, `could not be read (${file})`, err);
    }
    try {
      yield* scanWarcStream(body as AsyncIterable<Buffer>, size);
    } finally {
      body.destroy();
    }
  }

  /**
   * Uploads `body` as the object `file` (a name after the prefix), streamed:
   * one `PutObject` when it is smaller than a part, else a multipart upload
   * of {@link PART_SIZE} parts, two in flight (`migrate`, `purge`). An
   * object of that name is replaced.
   * @param onBytes bytes sent so far, as the upload goes
   * @throws the store's error (a multipart upload is aborted then)
   */
  async putStream(file: string, body: Readable, onBytes?: (sent: number) => void): Promise<void> {
    const up = new Upload({
      client: this.client,
      params: { Bucket: this.conf.bucket, Key: this.key(file), Body: body, ContentType: 'application/warc' },
      partSize: PART_SIZE,
      queueSize: 2,
    });
    if (onBytes) up.on('httpUploadProgress', (p) => onBytes(p.loaded ?? 0));
    await up.done();
  }

  /** Resolves when the bucket answers a `HeadBucket` (it exists, and the credentials may list it). @throws one line naming the store and why */
  async check(signal: AbortSignal): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.conf.bucket }), { abortSignal: signal });
    } catch (err) {
      const e = err as Error & { $metadata?: { httpStatusCode?: number } };
      const status = e.$metadata?.httpStatusCode;
      const why = status === 404 ? 'the bucket does not exist' : status === 403 ? 'the credentials may not use the bucket' : `${e.name}: ${e.message}`;
      throw new Error(`the WARC store ${this.location} cannot be reached: ${why}`, { cause: err });
    }
  }

  /** Deletes the object `file` (a name after the prefix); none of that name is not an error. */
  async remove(file: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.conf.bucket, Key: this.key(file) }));
  }

  async close(): Promise<void> {
    this.client.destroy();
  }
}

/** The object being filled by the current batch. */
interface HeldObject {
  file: string;
  parts: Buffer[];
  size: number;
}

/**
 * The write queue's appender of one archive on S3: the records of a batch
 * are held in memory (at most {@link MAX_HELD} per object) and uploaded as
 * one object by `sync`; a capture whose body is not whole in memory is
 * streamed into an object of its own at once (multipart upload, about two
 * parts in memory). An upload that fails makes `sync` throw (503): the
 * batch is not acknowledged and `rollback` deletes what it uploaded.
 */
class S3Appender implements WarcAppender {
  fsyncs = 0;
  private seq = -1;
  private held: HeldObject | null = null;
  /** Objects of the current batch (uploaded or held): what `rollback` takes back. */
  private batch = new Set<string>();
  private batchEnded = false;
  /** An upload of held records that failed during the batch: `sync` throws it. */
  private failed: unknown = null;

  constructor(
    private readonly store: S3WarcStore,
    private readonly archiveId: string,
    private readonly gzipLevel: number,
  ) {}

  /**
   * The name of a new object: `<replica>/<archive id>-<UTC 14 digits>-<serial>-<random>.warc.gz`;
   * serials go on from the replica's objects already there. The 64 random
   * bits keep two daemons given the same `replica` name (a mistake) from
   * writing over each other's objects.
   */
  private async newName(): Promise<string> {
    const dir = `${this.store.conf.replica}/`;
    if (this.seq < 0) {
      let max = -1;
      for await (const o of this.store.objects(`${dir}${this.archiveId}-`)) {
        const m = OBJECT_NAME.exec(o.file);
        if (m && m[2] === this.archiveId) max = Math.max(max, Number(m[4]));
      }
      this.seq = max + 1;
    }
    const name = `${dir}${this.archiveId}-${toTimestamp14(new Date())}-${String(this.seq++).padStart(5, '0')}-${randomBytes(8).toString('hex')}.warc.gz`;
    this.batch.add(name);
    return name;
  }

  /** The first append after a `sync` begins a new batch. */
  private begin(): void {
    if (!this.batchEnded) return;
    this.batch.clear();
    this.batchEnded = false;
  }

  async append(pair: CapturePair): Promise<WrittenRecord> {
    this.begin();
    const whole = pair.bodyBuffer;
    if (whole && whole.length <= ONE_SHOT) {
      const blockDigest = pair.blockDigest ?? sha256(pair.responseHead, whole);
      return this.hold(encodePair({ ...pair, bodyBuffer: whole, blockDigest }, this.gzipLevel));
    }
    return this.uploadStreamed(pair);
  }

  appendRevisit(pair: RevisitPair): Promise<WrittenRecord> {
    this.begin();
    return this.hold(encodeRevisit(pair, this.gzipLevel));
  }

  appendEncoded(e: EncodedPair): Promise<WrittenRecord> {
    this.begin();
    return this.hold(e);
  }

  /** Adds a record pair to the held object (begun with its `warcinfo` record); uploads it once it holds {@link MAX_HELD}. */
  private async hold(e: EncodedPair): Promise<WrittenRecord> {
    if (!this.held) {
      const file = await this.newName();
      const info = warcinfoMember(file.slice(file.lastIndexOf('/') + 1));
      this.held = { file, parts: [info], size: info.length };
    }
    const o = this.held;
    const rec = { file: o.file, offset: o.size, length: e.response.length, recordId: e.recordId, blockDigest: e.blockDigest };
    o.parts.push(e.response, e.request);
    o.size += e.response.length + e.request.length;
    if (o.size > MAX_HELD) await this.upload();
    return rec;
  }

  /** Uploads the held object (one PUT). A failure is kept for `sync` and thrown. */
  private async upload(): Promise<void> {
    const o = this.held;
    this.held = null;
    if (!o) return;
    const { bucket } = this.store.conf;
    try {
      await this.store.client.send(
        new PutObjectCommand({ Bucket: bucket, Key: this.store.key(o.file), Body: Buffer.concat(o.parts, o.size), ContentType: 'application/warc' }),
      );
      this.fsyncs++;
    } catch (err) {
      this.failed = unavailable(this.store.location, 'did not take the capture', err);
      throw this.failed;
    }
  }

  /**
   * A capture whose body is not whole in memory, streamed into an object
   * of its own: `warcinfo`, the response record gzipped as it streams, the
   * request record; a multipart upload (lib-storage) of {@link PART_SIZE}
   * parts, done before this returns.
   */
  private async uploadStreamed(pair: CapturePair): Promise<WrittenRecord> {
    const file = await this.newName();
    const info = warcinfoMember(file.slice(file.lastIndexOf('/') + 1));
    const { bodyLength, blockDigest } = await blockOf(pair);
    const { response: header, request, recordId } = pairHeaders(pair, bodyLength, blockDigest);
    const requestMember = gzipRecord(request, this.gzipLevel);
    let length = 0;
    const gz = pipeline(Readable.from(responseRecordParts(header, pair)), zlib.createGzip({ level: this.gzipLevel, chunkSize: 64 * 1024 }), () => undefined);
    const body = new PassThrough({ highWaterMark: 256 * 1024 });
    const feed = async () => {
      body.write(info);
      for await (const c of gz as AsyncIterable<Buffer>) {
        length += c.length;
        // Wait for the upload to take more, or to have failed (then it reads no more: stop).
        if (!body.write(c))
          await new Promise<void>((r) => {
            const go = () => {
              body.off('drain', go);
              body.off('close', go);
              r();
            };
            body.on('drain', go);
            body.on('close', go);
          });
        if (body.destroyed) throw new Error('the upload stopped');
      }
      body.end(requestMember);
    };
    const { bucket } = this.store.conf;
    const up = new Upload({
      client: this.store.client,
      params: { Bucket: bucket, Key: this.store.key(file), Body: body, ContentType: 'application/warc' },
      partSize: PART_SIZE,
      queueSize: 1,
    });
    const fed = feed().catch((err: unknown) => {
      body.destroy(err as Error);
      throw err;
    });
    try {
      await Promise.all([up.done(), fed]);
    } catch (err) {
      gz.destroy();
      body.destroy();
      await fed.catch(() => undefined);
      throw unavailable(this.store.location, 'did not take the capture', err);
    }
    this.fsyncs++;
    return { file, offset: info.length, length, recordId, blockDigest };
  }

  /** Uploads the held object: the batch's records are in the bucket when this returns. @throws 503 when an upload of the batch failed */
  async sync(): Promise<void> {
    this.batchEnded = true;
    if (this.failed) {
      const f = this.failed;
      this.failed = null;
      this.held = null;
      throw f;
    }
    await this.upload();
  }

  /** Deletes the object `file` if the current batch made it (the batch is not acknowledged); best effort: one left over is an orphan (`verify` lists it). */
  async rollback(file: string): Promise<void> {
    if (this.held?.file === file) this.held = null;
    if (!this.batch.delete(file)) return;
    await this.store.client.send(new DeleteObjectCommand({ Bucket: this.store.conf.bucket, Key: this.store.key(file) })).catch(() => undefined);
  }

  async close(): Promise<void> {
    this.held = null;
  }
}
