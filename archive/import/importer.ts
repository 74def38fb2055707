/**
 * `memento-archive import`: WARC records → mementos, through a
 * {@link CaptureSink} (the store, or the running daemon), with the rules
 * of a capture PUT. Per record type (WARC 1.1 §6):
 *
 * - `response` (with its `request` record, found before or after it):
 *   one capture record (archive/import/capture.ts), Memento-Datetime =
 *   `WARC-Date`. Only `application/http` blocks of http(s) URIs; other
 *   responses (`dns:`, `ftp:`…) are skipped and counted as "other".
 * - `revisit`: resolved to the memento it repeats — by `WARC-Refers-To`
 *   or the payload digest among the records of this import, else by
 *   `WARC-Refers-To-Target-URI` + `WARC-Refers-To-Date` in the archive,
 *   else the latest memento of its own URI whose SHA-256 payload digest is
 *   the one it states; the first of these the access rules show (it and
 *   its payload: archive/store/ingest/revisit-of.ts, asked as every read asks) —
 *   and imported as a capture with that memento's body (and its own HTTP
 *   head, unless that is a 304: then the memento's) that names the
 *   memento as its original: the store writes it as a revisit of it (never
 *   a second copy of another URL's body, which a purge of that URL would
 *   miss) unless it is a duplicate or revisit of its own URI's newest
 *   memento. One that resolves to nothing when read is read again at
 *   the end of the run ({@link Importer.finish}: its memento may be in a
 *   file given after it, as another archive's folder of this archive's
 *   `warcs/` may be); one that still resolves to nothing, or only to
 *   hidden mementos, is skipped and counted.
 * - `resource`, `metadata`, and any other type: skipped and counted;
 *   `warcinfo` and `request` records are read and not counted.
 *
 * Captures are pipelined: the next record is read while the ones before
 * are stored (the store's group commit puts them in one fsync), but two
 * captures of one URI-R go in file order, so that dedup and the
 * same-second rule see them as a PUT sequence would.
 */
import { Readable } from 'node:stream';
import { parseHead, parseStatusLine } from '#shared/http-head.js';
import { exactUrlkey } from '#shared/uri.js';
import type { VisibleIndex } from '../read/visible-index.js';
import type { Via } from '../evidence/leaf.js';
import type { MementoRow } from '../store/index/index-db.js';
import type { StoredResponse } from '../store/warcs/warc-reader.js';
import { ChunkedError, dechunk, isChunked, requestHeadFor, withoutTransferEncoding } from './capture.js';
import type { CaptureSink, SinkResult } from './sinks.js';
import { readHead, RecordDigestError, type RequestPairs, WarcDamage, type WarcFile, type WarcItem } from './warc-input.js';

/** What an import did, summed over its files. */
export interface ImportCounts {
  files: number;
  /** WARC records read (every type). */
  records: number;
  /** New mementos with a body of their own (a WARC response record written). */
  imported: number;
  /**
   * New mementos identical to the memento they follow, past the archive's
   * `revisit_interval`: a WARC revisit record and an index row written.
   */
  revisits: number;
  /** Captures identical to the memento they follow, within the revisit interval (dedup): nothing written. */
  duplicates: number;
  /** Revisit records resolved to a memento and imported (counted in `imported`, `revisits` or `duplicates` too). */
  revisitsResolved: number;
  /** Revisit records whose memento was found nowhere: skipped. */
  revisitsUnresolved: number;
  /** Records the archive's rules refuse (a capture PUT would get a 4xx). */
  refused: number;
  skipped: { resource: number; metadata: number; other: number };
  /** Damaged records (a block that does not match its digest) and damaged files. */
  errors: number;
}

/** Options of an {@link Importer}. */
export interface ImportOptions {
  /** Largest HTTP head read from a record, bytes (the archive's `max_head_bytes` refuses what is over it anyway). */
  maxHeadBytes: number;
  /** Gets one line for each record not imported (refused, unresolved, damaged). */
  note: (line: string) => void;
  /** Called after each record. */
  progress?: () => void;
  /** Captures being stored at once (default 16). */
  inflight?: number;
  /** The archive's index through the access rules (the config's `access`): a revisit record resolves only to a memento they show. */
  visible: VisibleIndex;
  /** How the captures of a file (its name as given) came in (archive/evidence/leaf.ts `Via`; default `import`). */
  viaOf?: (file: string) => Via | undefined;
}

/** Where a memento is, as far as revisit records need it. */
interface Ref {
  urlkey: string;
  datetime: number;
}

/**
 * Most revisit records kept to be tried again at the end of a run (a few
 * hundred bytes each: the file, the offset, the request head); past it, one
 * not resolved when read is skipped at once.
 */
const MAX_LATER = 100_000;

/** A revisit record not resolved when read: where it is, its WARC-Date (epoch ms) and its request record's HTTP head. */
interface Later {
  file: WarcFile;
  offset: number;
  date: number;
  request: Buffer | null;
}

/** The request record just read, for the response that follows it. */
interface RecentRequest {
  id: string;
  targetUri: string;
  concurrentTo: string[];
  head: Buffer | null;
}

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** A stated payload digest as this archive writes SHA-256 (`sha256:<hex>`), or `null` for another algorithm. */
export function sha256Hex(digest: string | undefined): string | null {
  const m = /^sha-?256:([0-9a-f]{64}|[A-Z2-7]{52}=*)$/i.exec((digest ?? '').trim());
  if (!m) return null;
  if (m[1].length === 64) return m[1].toLowerCase();
  let bits = 0,
    value = 0,
    out = '';
  for (const ch of m[1].replace(/=+$/, '').toUpperCase()) {
    value = (value << 5) | BASE32.indexOf(ch);
    bits += 5;
    if (bits >= 8) {
      out += ((value >>> (bits - 8)) & 255).toString(16).padStart(2, '0');
      bits -= 8;
    }
  }
  return out;
}

/** The memento's HTTP head as stored (status line and headers), for a revisit record without a usable head of its own. */
function storedHead(s: StoredResponse): Buffer {
  return Buffer.from(s.statusLine + '\r\n' + s.headers.map(([k, v]) => `${k}: ${v}\r\n`).join('') + '\r\n', 'latin1');
}

/** `rest` (bytes read with the head) followed by what is left of the block. */
async function* bodyAfter(rest: Buffer, block: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  if (rest.length) yield rest;
  yield* block;
}

/** Imports the WARC files it is given one by one into one sink; see the module comment. */
export class Importer {
  readonly counts: ImportCounts = {
    files: 0,
    records: 0,
    imported: 0,
    revisits: 0,
    duplicates: 0,
    revisitsResolved: 0,
    revisitsUnresolved: 0,
    refused: 0,
    skipped: { resource: 0, metadata: 0, other: 0 },
    errors: 0,
  };
  private readonly inflight = new Set<Promise<void>>();
  private readonly byKey = new Map<string, Promise<void>>();
  /** Mementos of the records imported so far, by WARC-Record-ID and by stated payload digest: what revisit records point at. */
  private readonly byId = new Map<string, Ref>();
  private readonly byDigest = new Map<string, Ref>();
  /** Revisit records not resolved when read, to be tried again by {@link finish}. */
  private readonly later: Later[] = [];
  /** A failure that is no record's fault (the daemon gone, a disk error): the import stops. */
  private fatal: unknown = null;

  constructor(
    private readonly sink: CaptureSink,
    private readonly opts: ImportOptions,
  ) {}

  /**
   * Imports the records of one file, in order. Returns once every capture
   * of it is stored (or refused).
   *
   * @throws WarcDamage where the file is damaged (the records before it
   *   are imported); the first failure that is no record's fault.
   */
  async importFile(file: WarcFile): Promise<void> {
    this.counts.files++;
    // The first pass runs only for a file whose responses do not follow their requests (read when first needed).
    let pairs: Promise<RequestPairs> | null = null;
    const pairing = () => (pairs ??= file.pairRequests());
    let recent: RecentRequest | null = null;
    try {
      for await (const item of file.records()) {
        this.counts.records++;
        if (this.fatal) throw this.fatal;
        if (item.type === 'request') {
          const head = (await readHead(item.block, this.opts.maxHeadBytes))?.head ?? null;
          recent = { id: item.id, targetUri: item.targetUri, concurrentTo: item.concurrentTo, head };
          continue;
        }
        if (item.type === 'response') await this.importResponse(file, item, this.requestOf(file, item, recent, pairing));
        else if (item.type === 'revisit') await this.importRevisit(file, item, this.requestOf(file, item, recent, pairing));
        else if (item.type === 'resource' || item.type === 'metadata') this.counts.skipped[item.type]++;
        else if (item.type !== 'warcinfo') this.counts.skipped.other++;
        recent = null;
        this.opts.progress?.();
      }
    } finally {
      await this.flush();
      this.opts.progress?.();
    }
    if (this.fatal) throw this.fatal;
  }

  /** Waits until every capture sent so far is stored or refused. */
  async flush(): Promise<void> {
    while (this.inflight.size) await Promise.all(this.inflight);
  }

  /** The HTTP head of the request record of `item`: the one just read, or one found by the first pass. */
  private async requestOf(file: WarcFile, item: WarcItem, recent: RecentRequest | null, pairing: () => Promise<RequestPairs>): Promise<Buffer | null> {
    if (recent) {
      const linked = (item.id && recent.concurrentTo.includes(item.id)) || item.concurrentTo.includes(recent.id);
      const unlinked = !recent.concurrentTo.length && !item.concurrentTo.length && recent.targetUri === item.targetUri;
      if (linked || unlinked) return recent.head;
    }
    const pairs = await pairing();
    const at = (item.id ? pairs.requestOf.get(item.id) : undefined) ?? item.concurrentTo.map((id) => pairs.requestById.get(id)).find((o) => o !== undefined);
    return at === undefined ? null : file.requestHeadAt(at, this.opts.maxHeadBytes);
  }

  /** The record's target as an http(s) URL of an HTTP block, or `null` (counted as skipped "other"). */
  private target(item: WarcItem): URL | null {
    let uri: URL;
    try {
      uri = new URL(item.targetUri);
    } catch {
      return null;
    }
    const http = /^application\/http\b/i.test(item.field('content-type') ?? 'application/http');
    return (uri.protocol === 'http:' || uri.protocol === 'https:') && http ? uri : null;
  }

  private refuse(item: WarcItem, uri: string, reason: string): void {
    this.counts.refused++;
    this.opts.note(`refused: ${item.file}:${item.offset} ${uri}: ${reason}`);
  }

  private async importResponse(file: WarcFile, item: WarcItem, request: Promise<Buffer | null>): Promise<void> {
    const uri = this.target(item);
    if (!uri) return void this.counts.skipped.other++;
    const reqHead = await request;
    if (!item.date) return this.refuse(item, uri.href, 'the record has no valid WARC-Date');
    const got = await readHead(item.block, this.opts.maxHeadBytes);
    if (!got)
      return this.refuse(item, uri.href, `the response record has no HTTP head (status line, headers, blank line) within ${this.opts.maxHeadBytes} bytes`);
    let head = got.head;
    let body: AsyncIterable<Buffer> = bodyAfter(got.rest, item.block);
    if (isChunked(head)) {
      head = withoutTransferEncoding(head);
      body = dechunk(body);
    }
    await this.submit(item, uri, Buffer.concat([requestHeadFor(uri, reqHead), head]), body, item.date);
  }

  private async importRevisit(file: WarcFile, item: WarcItem, request: Promise<Buffer | null>, last = false): Promise<void> {
    const uri = this.target(item);
    if (!uri) return void this.counts.skipped.other++;
    const reqHead = await request;
    if (!item.date) return this.refuse(item, uri.href, 'the record has no valid WARC-Date');
    const own = await readHead(item.block, this.opts.maxHeadBytes);
    await this.flush();
    const { row, hidden } = await this.resolve(item, uri, item.date);
    if (!row && !hidden && !last && this.later.length < MAX_LATER) {
      // Its memento may be in a file read after this one (another archive's folder of this archive's warcs/): tried again at the end.
      this.later.push({ file, offset: item.offset, date: item.date.getTime(), request: reqHead });
      return;
    }
    if (!row) {
      this.counts.revisitsUnresolved++;
      const of = item.field('warc-refers-to-target-uri') ?? item.field('warc-refers-to') ?? item.field('warc-payload-digest') ?? '(nothing named)';
      const why = hidden ? 'a memento the access rules hide' : 'neither in this import nor in the archive';
      this.opts.note(`unresolved: ${item.file}:${item.offset} ${uri.href}: revisit of ${of.trim()}, which is ${why}; skipped`);
      return;
    }
    this.counts.revisitsResolved++;
    const stored = await this.sink.readResponse(row);
    const status = own ? parseStatusLine(parseHead(own.head).startLine)?.status : undefined;
    let head = own && status !== undefined && status !== 304 ? own.head : storedHead(stored);
    if (isChunked(head)) head = withoutTransferEncoding(head); // the stored body is de-chunked already
    const body = async function* () {
      try {
        for await (const c of stored.body) yield Buffer.from(c);
      } finally {
        stored.close();
      }
    };
    await this.submit(item, uri, Buffer.concat([requestHeadFor(uri, reqHead), head]), body(), item.date, row);
  }

  /**
   * Once every file is read: the revisit records whose memento was found
   * nowhere when they were read, read again at their offsets, oldest first,
   * and resolved now that every file's captures are stored; those still
   * unresolved are skipped and counted.
   *
   * @throws the first failure that is no record's fault
   */
  async finish(): Promise<void> {
    const later = this.later.splice(0).sort((a, b) => a.date - b.date);
    try {
      for (const r of later) {
        let read = false;
        try {
          for await (const item of r.file.records({ start: r.offset })) {
            read = true;
            await this.importRevisit(r.file, item, Promise.resolve(r.request), true);
            break;
          }
        } catch (err) {
          if (!(err instanceof WarcDamage) && !(err instanceof RecordDigestError)) throw err;
        }
        if (!read) {
          this.counts.revisitsUnresolved++;
          this.opts.note(
            `unresolved: ${r.file.file}:${r.offset}: a revisit record that cannot be read again at its offset (a file gzipped as one whole); skipped`,
          );
        }
      }
    } finally {
      await this.flush();
    }
    if (this.fatal) throw this.fatal;
  }

  /**
   * The memento a revisit record repeats (module comment): the first
   * candidate the access rules show; `row` null with `hidden` when every
   * candidate found is hidden.
   */
  private async resolve(item: WarcItem, uri: URL, date: Date): Promise<{ row: MementoRow | null; hidden: boolean }> {
    const at = async (urlkey: string, t: number) => (await this.sink.index.atOrBeforeMany([{ urlkey, t }]))[0]?.row ?? null;
    const digest = item.field('warc-payload-digest')?.trim();
    const stated = sha256Hex(digest);
    const sameDigest = (row: MementoRow) => stated !== null && row.digest === 'sha256:' + stated;
    let hidden = false;
    const shown = async (row: MementoRow | null) => {
      if (row && (await this.opts.visible.revisitTargetShown(row))) return true;
      hidden ||= row !== null;
      return false;
    };
    const ref = this.byId.get(item.field('warc-refers-to')?.trim() ?? '') ?? (digest ? this.byDigest.get(digest.toLowerCase()) : undefined);
    if (ref) {
      const row = await at(ref.urlkey, ref.datetime);
      if (row?.datetime === ref.datetime && (await shown(row))) return { row, hidden };
    }
    const refUri = (item.field('warc-refers-to-target-uri') ?? '').trim().replace(/^<(.*)>$/, '$1');
    const refDate = Date.parse(item.field('warc-refers-to-date') ?? '');
    if (refUri && !Number.isNaN(refDate)) {
      const t = Math.floor(refDate / 1000);
      const row = await at(this.urlkey(refUri), t).catch(() => null);
      if (row && (row.datetime === t || sameDigest(row)) && (await shown(row))) return { row, hidden };
    }
    const row = await at(this.urlkey(uri.href), Math.floor(date.getTime() / 1000)).catch(() => null);
    return row && sameDigest(row) && (await shown(row)) ? { row, hidden } : { row: null, hidden };
  }

  /** The archive's key of a URI (shared/uri.ts); `''` for one it would not store. */
  private urlkey(uri: string): string {
    try {
      return exactUrlkey(uri);
    } catch {
      return '';
    }
  }

  /**
   * Sends one capture record (`head` then `body`; naming `revisitOf` as
   * its original, for a revisit record) to the sink, after the
   * captures of the same URI-R sent before it, and returns once its body
   * is read (or the sink gave up on it early); the outcome is counted when
   * it comes.
   */
  private async submit(item: WarcItem, uri: URL, head: Buffer, body: AsyncIterable<Buffer>, date: Date, revisitOf?: MementoRow): Promise<void> {
    const key = this.urlkey(uri.href);
    await this.byKey.get(key);
    while (this.inflight.size >= (this.opts.inflight ?? 16)) await Promise.race(this.inflight);
    let consumed = false;
    let markConsumed: () => void = () => undefined;
    const whenConsumed = new Promise<void>((r) => (markConsumed = r));
    const capture = Readable.from(
      (async function* () {
        yield head;
        yield* body;
        consumed = true;
        markConsumed();
      })(),
      { objectMode: false, highWaterMark: 64 * 1024 },
    );
    const done: Promise<void> = this.sink
      .put(capture, date, uri.href, this.opts.viaOf?.(item.file) ?? 'import', revisitOf)
      .then(
        (r) => this.settle(item, uri, r),
        (err) => this.failed(item, uri, err),
      )
      .finally(() => {
        this.inflight.delete(done);
        if (this.byKey.get(key) === done) this.byKey.delete(key);
      });
    this.inflight.add(done);
    this.byKey.set(key, done);
    await Promise.race([whenConsumed, done]);
    if (!consumed) capture.destroy();
  }

  private settle(item: WarcItem, uri: URL, r: SinkResult): void {
    if (r.kind === 'refused') return this.refuse(item, uri.href, `${r.status} ${r.reason}`);
    if (r.kind === 'new') this.counts.imported++;
    else if (r.kind === 'revisit') this.counts.revisits++;
    else this.counts.duplicates++;
    const ref = { urlkey: this.urlkey(uri.href), datetime: r.datetime };
    if (item.id) this.byId.set(item.id, ref);
    const digest = item.field('warc-payload-digest')?.trim();
    if (digest && item.type === 'response') this.byDigest.set(digest.toLowerCase(), ref);
  }

  private failed(item: WarcItem, uri: URL, err: unknown): void {
    if (err instanceof WarcDamage) return; // the file's damage: records() reports it
    if (err instanceof ChunkedError) return this.refuse(item, uri.href, err.message);
    if (err instanceof RecordDigestError) {
      this.counts.errors++;
      this.opts.note(`damaged: ${item.file}:${item.offset} ${uri.href}: the record's block does not match its WARC-Block-Digest; not imported`);
      return;
    }
    this.fatal ??= err;
  }
}
