/**
 * Where `memento-archive import` sends each capture record: straight into
 * the store under the data folder's lock (no daemon running), or as a
 * capture PUT to the daemon that holds the lock. Either way the capture
 * takes the path of a PUT (archive/store/store.ts `ingest`: the same
 * refusals, span, dedup and same-second rules, durable before it counts),
 * with its Memento-Datetime given (the WARC-Date of the record).
 */
import { uriMPath } from '#shared/uri-m.js';
import http from 'node:http';
import type { Readable } from 'node:stream';
import { mementoOfLocation, sendCapture } from '#shared/capture-put.js';
import { formatHttpDate, toTimestamp14 } from '#shared/http-date.js';
import { isHttpError } from '#shared/http-error.js';
import { formatHostPort } from '#shared/net.js';
import type { ArchiveConfig } from '../config.js';
import { VIA_FIELD, type Via } from '../evidence/leaf.js';
import type { MementoRow } from '../store/index/index-db.js';
import type { MementoIndex } from '../store/index/memento-index.js';
import type { ArchiveStore } from '../store/store.js';
import { formatRevisitOf, REVISIT_OF } from '../store/ingest/revisit-of.js';
import { readMementoResponse } from '../store/warcs/stored-response.js';
import type { StoredResponse, WarcReader } from '../store/warcs/warc-reader.js';
import { openWarcStore } from '../store/warcs/open-warcs.js';
import { openIndex } from '../store/index/open-index.js';
import type { WarcStore } from '../store/warcs/warc-store.js';

/** What the archive did with one capture. */
export type SinkResult =
  /**
   * Stored as a new memento (`new`), as a revisit of the memento it is
   * identical to (`revisit`: a new memento whose record is a WARC revisit
   * record), or identical to the memento it follows within the revisit
   * interval (`duplicate`: nothing stored): the answered memento's archive
   * and datetime (epoch s).
   */
  | { kind: 'new' | 'revisit' | 'duplicate'; archiveId: string; datetime: number }
  /** Refused by the archive's rules, with the status a PUT would get and its one-line reason. */
  | { kind: 'refused'; status: number; reason: string };

/** A way into the archive for imported captures; see the module comment. */
export interface CaptureSink {
  /** How captures go in, for the summary line. */
  readonly via: string;
  /** The index, for finding the memento a revisit record refers to. */
  readonly index: MementoIndex;
  /**
   * Stores one capture record (heads and body, streamed from `capture`)
   * whose Memento-Datetime is `datetime`, saying it came in `via`
   * (archive/evidence/leaf.ts `Via`: into its record and log entry); with
   * `revisitOf`, as a revisit of that memento (archive/store/ingest/revisit-of.ts:
   * a revisit record's).
   * @throws what the capture stream throws; an Error for a failure that is
   *   not a refusal (the daemon unreachable or answering 5xx, a disk error)
   */
  put(capture: Readable, datetime: Date, uriR: string, via: Via, revisitOf?: MementoRow): Promise<SinkResult>;
  /** The stored response of a memento (for a revisit record's payload). */
  readResponse(row: MementoRow): Promise<StoredResponse>;
  close(): Promise<void>;
}

/** Captures into an {@link ArchiveStore} this process opened (and so holds the data folder's lock). */
export class StoreSink implements CaptureSink {
  readonly via = 'with the data folder locked (no daemon running)';
  constructor(private readonly store: ArchiveStore) {}

  /** The store's own index. */
  get index(): MementoIndex {
    return this.store.index;
  }

  /** {@link ArchiveStore.ingest} with `datetime` given; a 4xx it throws, and a same-second conflict (409), is a refusal. See {@link CaptureSink.put}. */
  async put(capture: Readable, datetime: Date, _uriR: string, via: Via, revisitOf?: MementoRow): Promise<SinkResult> {
    try {
      const r = await this.store.ingest(capture, new Date(), { datetime, via, revisitOf });
      if (r.conflict) {
        const stored = uriMPath({ archive: r.row.archive_id, timestamp: toTimestamp14(r.row.datetime), modifier: '', uriR: r.row.uri_r });
        return { kind: 'refused', status: 409, reason: `conflict: a different capture of this URI-R is stored at the same second, ${stored}; nothing stored` };
      }
      return { kind: r.kind === 'revisit' ? 'revisit' : r.created ? 'new' : 'duplicate', archiveId: r.row.archive_id, datetime: r.row.datetime };
    } catch (err) {
      if (isHttpError(err) && err.status < 500) return { kind: 'refused', status: err.status, reason: err.message };
      throw err;
    }
  }

  /** The memento's stored response, read by the store. */
  readResponse(row: MementoRow): Promise<StoredResponse> {
    return this.store.readResponse(row);
  }

  /** Waits for the writes, closes the store and lets go of the data folder. */
  close(): Promise<void> {
    return this.store.close();
  }
}

/** The daemon's address for PUTs from this machine: its `listen` address, a wildcard host read as loopback. */
export function daemonAddress(config: ArchiveConfig): string | null {
  const { host, port } = config.listen;
  if (port === 0) return null;
  const h = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${formatHostPort(h, port)}`;
}

/**
 * Captures PUT to a running daemon at `base` (`http://host:port`), a few at
 * a time over kept-alive connections, each with `Memento-Datetime` and,
 * when the config has `put_tokens`, the first token, through the one
 * capture-PUT client (shared/capture-put.ts); what the daemon did with each
 * is its answer's `Archive-Capture`. For revisit records only, it reads the
 * index the config names and the WARC files directly (read only, as
 * `verify` does): the memento a revisit record repeats, and its body.
 */
export class DaemonSink implements CaptureSink {
  readonly via: string;
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  private readonly reader: WarcReader;

  private constructor(
    private readonly base: URL,
    private readonly config: ArchiveConfig,
    readonly index: MementoIndex,
    private readonly warcs: WarcStore,
  ) {
    this.via = `through the running daemon at ${base.origin}`;
    this.reader = this.warcs.reader(0);
  }

  /**
   * Opens the index the config names (archive/store/index/open-index.ts: SQLite in
   * the data folder, or PostgreSQL; never a new file of its own) and the
   * WARC files, for reading.
   * @throws when either cannot be opened
   */
  static async open(base: string, config: ArchiveConfig): Promise<DaemonSink> {
    const index = await openIndex(config);
    return new DaemonSink(new URL(base), config, index, await openWarcStore(config));
  }

  /**
   * `PUT <put_prefix>put/<uriR>` with `capture` as the chunked body,
   * `Archive-Capture-Via: <via>` (and `Archive-Revisit-Of` naming
   * `revisitOf`): a 201 or 200 is what its `Archive-Capture` says (`new`,
   * `revisit`, `duplicate`) of the memento its `Location` names, another
   * 4xx a refusal with the answer's first line. See
   * {@link CaptureSink.put}.
   * @throws an Error for a 5xx, a 200/201 without a memento `Location`, or
   *   a daemon that cannot be reached; what `capture` fails with
   */
  async put(capture: Readable, datetime: Date, uriR: string, via: Via, revisitOf?: MementoRow): Promise<SinkResult> {
    const headers: Record<string, string> = { 'Memento-Datetime': formatHttpDate(datetime), [VIA_FIELD]: via };
    if (revisitOf) headers[REVISIT_OF] = formatRevisitOf(revisitOf);
    const { hostname, port, origin } = this.base;
    const target = { host: hostname.replace(/^\[|\]$/g, ''), port: Number(port || 80), path: `${this.config.putPrefix}put/${uriR}` };
    const peer = `the daemon at ${origin}`;
    const answer = await sendCapture(target, capture, { token: this.config.putTokens[0], headers, agent: this.agent, maxLine: 1024, peer });
    const { status, capture: kind } = answer;
    if (kind) {
      const memento = mementoOfLocation(answer.location);
      if (!memento) throw new Error(`${peer} answered ${status} without a memento Location`);
      return { kind, archiveId: memento.archiveId, datetime: memento.datetime };
    }
    if (status >= 400 && status < 500) return { kind: 'refused', status, reason: answer.firstLine.trim() };
    throw new Error(`${peer} answered ${status}: ${answer.firstLine.trim()}`);
  }

  /**
   * The memento's stored response, read from the daemon's WARC files (read
   * only), as the store reads it: a revisit's own head with its original's
   * body.
   * @throws when a record is missing or damaged, or a revisit's original row is gone
   */
  readResponse(row: MementoRow): Promise<StoredResponse> {
    return readMementoResponse(
      (f, o, n) => this.reader.read(f, o, n),
      (id) => this.index.byId(id),
      row,
    );
  }

  /** Closes the kept-alive connections, the WARC files and the index. */
  async close(): Promise<void> {
    this.agent.destroy();
    await this.reader.close();
    await this.warcs.close();
    await this.index.close();
  }
}
