/**
 * Writes a WACZ 1.1.1 package (Webrecorder's "Web Archive Collection
 * Zipped": a ZIP holding WARC data, a CDXJ index, a page list and a
 * Frictionless data package manifest) of the mementos a selection names,
 * for `memento-archive wacz` (docs/evidence.md "WACZ packages"):
 *
 *   archive/data.warc.gz      the mementos' WARC records, each gzip member copied as stored (ZIP STORE);
 *                             no request record (what a visitor sent), unless `publish_requests` (then its published form)
 *   indexes/index.cdx         CDXJ of those records, sorted, offsets into data.warc.gz
 *   pages/pages.jsonl         the HTML 200 mementos, one page each
 *   proofs/proofs.jsonl       inclusion proofs of the mementos in the archive's evidence log
 *   receipts/receipts.jsonl   their receipts (C2SP tlog-proof) in its published checkpoints (receipts.ts)
 *   datapackage.json          every other file's path, size and SHA-256
 *   datapackage-digest.json   the SHA-256 of datapackage.json, signed with the archive's Ed25519 key
 *
 * Everything streams: records are copied member by member, the CDXJ
 * lines are sorted in bounded memory (archive/store/upkeep/cdxj.ts), the page
 * and proof lines go through temporary files; the package is written to a
 * temporary name beside the output and renamed when complete.
 */
import { createHash } from 'node:crypto';
import { createWriteStream, readFileSync, type WriteStream } from 'node:fs';
import { once } from 'node:events';
import { mkdtemp, rename, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type Readable, Transform, type TransformCallback } from 'node:stream';
import { finished, pipeline } from 'node:stream/promises';
import { ZipFile } from 'yazl';
import { formatIsoSeconds } from '#shared/http-date.js';
import { afterPrefix, type UrlPattern } from '../read/access-rules.js';
import type { VisibleIndex } from '../read/visible-index.js';
import { parseCaptureLeaf } from '../evidence/leaf.js';
import { inclusionOf, type LogStore, type TreeHead } from '../evidence/log.js';
import type { SigningKey } from '../evidence/signing-key.js';
import { headJson, type TreeHeadSigner } from '../evidence/tree-heads.js';
import { cdxWalk, type UrlkeyRange } from '../store/index/cdx-walk.js';
import { writeCdxj } from '../store/upkeep/cdxj.js';
import type { IndexDb, MementoRow, NewMementoRow } from '../store/index/index-db.js';
import { readMementoResponse } from '../store/warcs/stored-response.js';
import { readResponseRecord } from '../store/warcs/warc-reader.js';
import { pageTitle } from './page-title.js';
import { copyMember, mementoRecords, publishedRequestMember } from './records.js';
import { PackageReceipts } from './receipts.js';

/** The WACZ version written (datapackage.json `wacz_version`). */
export const WACZ_VERSION = '1.1.1';
/** The name of the one WARC file in a package, under `archive/`. */
const WARC_NAME = 'data.warc.gz';
const VERSION: string = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
/** `software` of datapackage.json and of the signature. */
export const SOFTWARE = `memento-archive ${VERSION}`;

/** Which mementos go into a package. */
export interface WaczSelection {
  /** One URL's urlkey, or a urlkey prefix (archive/read/access-rules.ts `urlPattern`); every URL when absent. */
  pattern?: UrlPattern;
  /** Only mementos with `from <= Memento-Datetime <= to` (epoch s; open when absent). */
  from?: number;
  to?: number;
}

/** What went into a package. */
export interface WaczReport {
  /** Mementos whose records are in the package (revisits' originals included). */
  mementos: number;
  /** Of those, originals of revisits outside the selection, added so that the revisits replay. */
  originals: number;
  /** Mementos of the selection the access rules hide at the moment: left out. */
  hidden: number;
  /** Revisits left out because the memento holding their payload is hidden. */
  revisitsOfHidden: number;
  /** Lines of pages/pages.jsonl. */
  pages: number;
  /** Lines of proofs/proofs.jsonl: mementos with an inclusion proof. */
  proofs: number;
  /** Lines of receipts/receipts.jsonl: mementos with a receipt (a published checkpoint covers their entry). */
  receipts: number;
  /** Mementos in the package without an entry in the evidence log (indexed before the log was kept): no proof. */
  unlogged: number;
  /** Mementos left out because they were committed after the package's tree head of their archive was taken (captured while it was written). */
  later: number;
  /** Bytes of the package. */
  bytes: number;
}

/** What {@link writeWacz} needs. */
export interface WaczInput {
  index: IndexDb;
  /** `<data_dir>/warcs`. */
  warcsDir: string;
  /** The index through the access rules: what they hide at `now` is left out. */
  visible: VisibleIndex;
  key: SigningKey;
  selection: WaczSelection;
  /** The package's path (`.wacz`). */
  out: string;
  /** The package's creation time (datapackage.json `created`), also the instant the access rules are applied at. */
  now?: Date;
  /**
   * The archive's evidence log (the index's, `IndexDb.log`) and its tree head signer: each memento's inclusion proof
   * goes in proofs/proofs.jsonl, its receipt in receipts/receipts.jsonl (`tsaUrl`: the archive's `tsa_url`).
   */
  log: { store: LogStore; heads: TreeHeadSigner; tsaUrl?: string };
  /** The `publish_requests` setting: each memento's request record goes in, in its published form (archive/evidence/published-request.ts); none when false. */
  publishRequests: boolean;
}

/** A pass-through that counts and hashes what passes (SHA-256). */
class Tally extends Transform {
  bytes = 0;
  private readonly hash = createHash('sha256');
  private digest: string | null = null;
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.bytes += chunk.length;
    this.hash.update(chunk);
    cb(null, chunk);
  }
  /** `sha256:<hex>` of everything that passed; only once it has all passed. */
  get sha256(): string {
    return (this.digest ??= 'sha256:' + this.hash.digest('hex'));
  }
}

/** Lines written to a temporary file, counted and hashed. */
class LineFile {
  private readonly tally = new Tally();
  private readonly file: WriteStream;
  private readonly done: Promise<void>;
  lines = 0;
  constructor(readonly path: string) {
    this.file = createWriteStream(path, { mode: 0o600 });
    this.done = pipeline(this.tally, this.file);
    this.done.catch(() => undefined);
  }
  async write(value: object): Promise<void> {
    this.lines++;
    if (!this.tally.write(JSON.stringify(value) + '\n')) await once(this.tally, 'drain');
  }
  /** Closes the file; its size and hash then. */
  async close(): Promise<{ bytes: number; hash: string }> {
    this.tally.end();
    await this.done;
    return { bytes: this.tally.bytes, hash: this.tally.sha256 };
  }
}

/**
 * The inclusion proofs of the package's mementos: per archive, the newest
 * signed tree head when its first memento is met (one is signed then if
 * the newest does not cover every entry: tree-heads.ts), kept for the
 * whole package, so that every proof of an archive is in the same tree.
 */
class Evidence {
  private readonly heads = new Map<string, TreeHead>();
  constructor(
    private readonly store: LogStore,
    private readonly signer: TreeHeadSigner,
    private readonly publicKey: string,
  ) {}

  /**
   * The memento's line of proofs/proofs.jsonl: the `/proof` answer's
   * fields (`leaf`, `leaf_index`, `tree_size`, `audit_path`, `sth`) and
   * `archive`; `null` when it has no log entry; `'later'` when its entry
   * is not in the archive's tree head taken for the package.
   */
  async proof(row: MementoRow): Promise<object | null | 'later'> {
    const leaf = await this.store.leafOf(row.archive_id, row.urlkey, row.datetime);
    const fields = leaf?.leaf_text ? parseCaptureLeaf(leaf.leaf_text) : undefined;
    if (!leaf || !fields) return null;
    let head = this.heads.get(row.archive_id);
    if (!head) this.heads.set(row.archive_id, (head = await this.signer.newest(row.archive_id)));
    if (leaf.leaf_index >= head.tree_size) return 'later';
    const path = await inclusionOf(this.store, row.archive_id, leaf.leaf_index, head.tree_size);
    return {
      archive: row.archive_id,
      leaf: fields,
      leaf_index: leaf.leaf_index,
      tree_size: head.tree_size,
      audit_path: path.map((h) => h.toString('base64')),
      sth: headJson(head, this.publicKey),
    };
  }
}

/**
 * Writes a memento's line of proofs/proofs.jsonl (`proof`) and, when a
 * published checkpoint covers its entry, of receipts/receipts.jsonl
 * (receipts.ts), and counts them in `report` (no proof: `unlogged`).
 */
async function writeEvidence(
  files: { proofs: LineFile; receipts: LineFile; maker: PackageReceipts },
  row: MementoRow,
  proof: object | null,
  report: WaczReport,
): Promise<void> {
  if (!proof) {
    report.unlogged++;
    return;
  }
  await files.proofs.write(proof);
  report.proofs++;
  const line = await files.maker.line(row);
  if (!line) return;
  await files.receipts.write(line);
  report.receipts++;
}

/**
 * A page's line of pages/pages.jsonl: `id`, `url`, `ts` and, when the page
 * has one, its `title` (page-title.ts), read from its stored response (a
 * revisit's from its original's payload) in the data folder's WARC files.
 * A page whose record cannot be read for its title is listed without one
 * (its records are copied and checked on their own).
 */
async function pageLine(input: WaczInput, row: MementoRow): Promise<{ id: string; url: string; ts: string; title?: string }> {
  const line = { id: `${row.archive_id}-${row.id}`, url: row.uri_r, ts: formatIsoSeconds(row.datetime) };
  let title: string | undefined;
  try {
    const read = (file: string, offset: number, length: number) => readResponseRecord(input.warcsDir, file, offset, length);
    title = await pageTitle(await readMementoResponse(read, (id) => input.index.byId(id), row));
  } catch {
    title = undefined;
  }
  return title === undefined ? line : { ...line, title };
}

/** The urlkeys a selection walks. */
function rangeOf(sel: WaczSelection): UrlkeyRange {
  if (!sel.pattern) return { from: '', to: '\u{10ffff}' };
  return sel.pattern.prefix ? { from: sel.pattern.key, to: afterPrefix(sel.pattern.key) } : { from: sel.pattern.key };
}

const COLUMNS = ['archive_id', 'uri_r', 'status', 'mime', 'digest', 'warc_file', 'warc_offset', 'warc_length', 'refers_to'] as const;

/** An HTML page that answered 200: what pages/pages.jsonl lists. */
const isPage = (row: MementoRow) => row.status === 200 && (row.mime === 'text/html' || row.mime === 'application/xhtml+xml');

/**
 * Writes the package of the selected mementos to `input.out` (see the
 * module comment). A memento the access rules hide at `now` is left out,
 * and so is a revisit whose original they hide; a revisit's original
 * outside the selection goes in with it (ReplayWeb.page looks the original
 * up in the package's index to replay a revisit).
 *
 * @throws RecordDamage when a memento's record is not intact at its place
 *   (nothing is left at `out` then), and what writing the file throws
 */
export async function writeWacz(input: WaczInput): Promise<WaczReport> {
  const now = input.now ?? new Date();
  const nowS = Math.floor(now.getTime() / 1000);
  const { index, visible, selection } = input;
  const report: WaczReport = { mementos: 0, originals: 0, hidden: 0, revisitsOfHidden: 0, pages: 0, proofs: 0, receipts: 0, unlogged: 0, later: 0, bytes: 0 };
  const tmpDir = await mkdtemp(path.join(os.tmpdir(), 'memento-wacz-'));
  const partial = `${input.out}.${process.pid}.partial`;
  const zip = new ZipFile();
  const zipFile = createWriteStream(partial, { flags: 'wx' });
  const written = pipeline(zip.outputStream, zipFile);
  written.catch(() => undefined);
  const mtime = now;
  try {
    const warc = new Tally();
    zip.addReadStream(warc, `archive/${WARC_NAME}`, { compress: false, mtime });
    const cdx = new Tally();
    zip.addReadStream(cdx, 'indexes/index.cdx', { mtime });
    const pages = new LineFile(path.join(tmpDir, 'pages.jsonl'));
    await pages.write({ format: 'json-pages-1.0', id: 'pages', title: 'All Pages' });
    const proofs = new LineFile(path.join(tmpDir, 'proofs.jsonl'));
    const receipts = new LineFile(path.join(tmpDir, 'receipts.jsonl'));
    const receiptMaker = new PackageReceipts(input.log.store, input.log.tsaUrl);
    const exported = new Set<number>();
    let warcBytes = 0;

    const evidence = new Evidence(input.log.store, input.log.heads, input.key.publicKeyBase64);

    /** Copies a memento's records into data.warc.gz, its proof into proofs.jsonl; its CDXJ row (offsets in the package). */
    const put = async (row: MementoRow, page: boolean, proof: object | null): Promise<NewMementoRow> => {
      const file = path.join(input.warcsDir, row.warc_file);
      const recs = await mementoRecords(file, row.warc_offset, row.warc_length);
      const offset = warcBytes;
      await copyMember(file, recs.own, warc);
      warcBytes += recs.own.length;
      const request = input.publishRequests && recs.request ? await publishedRequestMember(file, recs.request, recs.recordId) : null;
      if (request) {
        if (!warc.write(request)) await once(warc, 'drain');
        warcBytes += request.length;
      }
      exported.add(row.id);
      report.mementos++;
      if (page && isPage(row)) {
        await pages.write(await pageLine(input, row));
        report.pages++;
      }
      await writeEvidence({ proofs, receipts, maker: receiptMaker }, row, proof, report);
      return { ...row, warc_file: WARC_NAME, warc_offset: offset, warc_length: row.warc_length };
    };

    const rows = async function* (): AsyncGenerator<NewMementoRow> {
      const walk = cdxWalk(index, rangeOf(selection), { since: selection.from, until: selection.to, columns: COLUMNS });
      for await (const r of walk) {
        const row = r as MementoRow;
        if (exported.has(row.id)) continue;
        if (!visible.shows(row.urlkey, row.datetime, nowS)) {
          report.hidden++;
          continue;
        }
        const proof = await evidence.proof(row);
        if (proof === 'later') {
          report.later++;
          continue;
        }
        if (row.refers_to !== null && !exported.has(row.refers_to)) {
          const original = await index.byId(row.refers_to);
          if (!original || !visible.shows(original.urlkey, original.datetime, nowS)) {
            report.revisitsOfHidden++;
            continue;
          }
          const originalProof = await evidence.proof(original);
          if (originalProof === 'later') {
            report.later++;
            continue;
          }
          const inSelection =
            (!selection.pattern ||
              (selection.pattern.prefix ? original.urlkey.startsWith(selection.pattern.key) : original.urlkey === selection.pattern.key)) &&
            original.datetime >= (selection.from ?? -Infinity) &&
            original.datetime <= (selection.to ?? Infinity);
          if (!inSelection) report.originals++;
          yield await put(original, inSelection, originalProof);
        }
        yield await put(row, true, proof);
      }
      warc.end();
    };
    await writeCdxj(rows(), cdx);
    cdx.end();
    await finished(cdx);
    const resources = [
      { name: WARC_NAME, path: `archive/${WARC_NAME}`, hash: warc.sha256, bytes: warc.bytes },
      { name: 'index.cdx', path: 'indexes/index.cdx', hash: cdx.sha256, bytes: cdx.bytes },
    ];
    for (const [f, name] of [
      [pages, 'pages/pages.jsonl'],
      [proofs, 'proofs/proofs.jsonl'],
      [receipts, 'receipts/receipts.jsonl'],
    ] as const) {
      const { bytes, hash } = await f.close();
      zip.addFile(f.path, name, { mtime, mode: 0o100644 });
      resources.push({ name: path.basename(name), path: name, hash, bytes });
    }
    const datapackage = Buffer.from(JSON.stringify(dataPackage(resources, now), null, 2) + '\n', 'utf8');
    zip.addBuffer(datapackage, 'datapackage.json', { mtime });
    zip.addBuffer(Buffer.from(JSON.stringify(digestFile(datapackage, input.key, now), null, 2) + '\n', 'utf8'), 'datapackage-digest.json', { mtime });
    zip.end();
    await written;
    await rename(partial, input.out);
    report.bytes = zipFile.bytesWritten;
    return report;
  } catch (err) {
    (zip.outputStream as Readable).destroy();
    zipFile.destroy();
    await rm(partial, { force: true });
    throw err;
  } finally {
    await rm(tmpDir, { recursive: true, force: true });
  }
}

/** One file of the package as datapackage.json lists it. */
export interface Resource {
  name: string;
  path: string;
  /** `sha256:<hex>` of its bytes. */
  hash: string;
  bytes: number;
}

/** The manifest, datapackage.json (WACZ 1.1.1 "datapackage.json"; a Frictionless Data Package). */
export function dataPackage(resources: Resource[], created: Date): object {
  return {
    profile: 'data-package',
    wacz_version: WACZ_VERSION,
    title: 'memento-archive export',
    created: formatIsoSeconds(created),
    software: SOFTWARE,
    resources,
  };
}

/**
 * datapackage-digest.json: `path` and `hash` (`sha256:<hex>` of the
 * datapackage.json bytes), and `signedData` in the shape of the WACZ
 * signing recommendation's anonymous signature: the same `hash`,
 * `created`, `software`, `signature` (base64 Ed25519 over the UTF-8 bytes
 * of the `hash` string) and `publicKey` (base64 SubjectPublicKeyInfo DER
 * of the archive's key, the `public_key` of its log's tree heads).
 */
export function digestFile(datapackage: Buffer, key: SigningKey, created: Date): object {
  const hash = 'sha256:' + createHash('sha256').update(datapackage).digest('hex');
  return {
    path: 'datapackage.json',
    hash,
    signedData: {
      hash,
      created: formatIsoSeconds(created),
      software: SOFTWARE,
      signature: key.sign(hash).toString('base64'),
      publicKey: key.publicKeyBase64,
    },
  };
}
