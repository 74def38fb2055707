/**
 * The archive daemon's metrics (prom-client), served as Prometheus text at
 * `GET /metrics`; each daemon has its own registry. The table of metrics is
 * in docs/operations.md ("The archive's log, health and metrics").
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/** Which resource of the URL space a request was for (a label of {@link ArchiveMetrics.requests}). */
export type Resource =
  | 'redirector'
  | 'index-timemap'
  | 'cdx'
  | 'timegate'
  | 'memento'
  | 'timemap'
  | 'timebundle'
  | 'log'
  | 'host-meta'
  | 'put'
  | 'health'
  | 'metrics'
  | 'static'
  | 'web'
  | 'search'
  | 'feed'
  | 'record'
  | 'other';

/** What the read caches say at a scrape: per cache (`index`, `record`), answers from memory, lookups that missed, bytes held. */
export type CacheStats = () => Record<'index' | 'record', { hits: number; misses: number; bytes: number }>;

/** The counters, gauges and histograms of one archive daemon. */
export class ArchiveMetrics {
  readonly registry = new Registry();
  readonly captures = new Counter({
    name: 'memento_archive_captures_total',
    help: 'Capture PUTs by result: stored (201, a new response record), revisit (201, identical to the memento it follows and revisit_interval after it: a WARC revisit record), duplicate (200: identical to the memento it follows, nothing stored), conflict (409: a different memento of the URI-R is stored at that second), refused (other 4xx)',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly refused = new Counter({
    name: 'memento_archive_captures_refused_total',
    help: 'Capture PUTs refused, by status (400 malformed, 401/403 access, 411, 413, 422 no archive, 431)',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });
  readonly ingestBytes = new Counter({
    name: 'memento_archive_ingest_bytes_total',
    help: 'Bytes of capture records received by PUT',
    registers: [this.registry],
  });
  readonly batchSize = new Histogram({
    name: 'memento_archive_batch_captures',
    help: 'Captures per stored batch (group commit: one fsync and one index transaction per batch)',
    buckets: [1, 2, 4, 8, 16, 32, 64, 128],
    registers: [this.registry],
  });
  readonly fsyncSeconds = new Histogram({
    name: 'memento_archive_fsync_seconds',
    help: 'Time to fsync the WARC files of a batch',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [this.registry],
  });
  readonly requests = new Counter({
    name: 'memento_archive_requests_total',
    help: 'Requests answered, by resource and status',
    labelNames: ['resource', 'status'] as const,
    registers: [this.registry],
  });
  readonly decodes = new Counter({
    name: 'memento_archive_decodes_total',
    help: 'Streamed decodings of a content-coded stored body (the links and replay forms of a large gzip/deflate/br page), by how they ended: end, stopped (the client left, or a HEAD), limit (more than max_decoded_bytes: the body was cut), corrupt',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly decodedBytes = new Counter({
    name: 'memento_archive_decoded_bytes_total',
    help: 'Bytes produced by the streamed decodings of content-coded stored bodies',
    registers: [this.registry],
  });
  readonly work = new Counter({
    name: 'memento_archive_work_total',
    help: 'Tasks of the work pools (the text comparison of /web/diff/, the resources of the replay panel, the rewrites of archival replay pages that do not fit in a slice of the event loop), by pool and how they ended: done, busy (refused: the queue was full), deadline (stopped at its deadline), failed (the thread died)',
    labelNames: ['pool', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly connectionsRefused = new Counter({
    name: 'memento_archive_connections_refused_total',
    help: 'Connections answered 503 and closed on accept, by the share that was full: all (max_connections) or readers (every connection but put_reserved_connections)',
    labelNames: ['share'] as const,
    registers: [this.registry],
  });
  readonly indexRows: Gauge;
  /** {@link requests}' counter of each resource and status, looked up once (prom-client hashes the labels on each `inc`). */
  private readonly requestCounters = new Map<string, Map<number, { inc(): void }>>();
  readonly cacheLookups?: Counter<'cache' | 'result'>;
  readonly cacheBytes?: Gauge<'cache'>;

  /**
   * @param countRows reads the number of index rows (mementos) at each scrape
   * @param defaults also collect prom-client's default process metrics (default `true`)
   * @param caches reads the read caches' counters at each scrape (archive/store/read-cache.ts, record-cache.ts)
   */
  constructor(countRows: () => Promise<number>, defaults = true, caches?: CacheStats) {
    if (defaults) collectDefaultMetrics({ register: this.registry, prefix: '' });
    this.indexRows = new Gauge({
      name: 'memento_archive_index_rows',
      help: 'Mementos in the index',
      registers: [this.registry],
      async collect() {
        this.set(await countRows());
      },
    });
    for (const result of ['stored', 'revisit', 'duplicate', 'conflict', 'refused']) this.captures.inc({ result }, 0);
    for (const outcome of ['end', 'stopped', 'limit', 'corrupt']) this.decodes.inc({ outcome }, 0);
    for (const share of ['all', 'readers']) this.connectionsRefused.inc({ share }, 0);
    if (!caches) return;
    this.cacheLookups = new Counter({
      name: 'memento_archive_read_cache_lookups_total',
      help: 'Lookups of the read caches (index: neighbourhoods and spans; record: small response records), by cache and result (hit, miss)',
      labelNames: ['cache', 'result'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [cache, s] of Object.entries(caches())) {
          this.inc({ cache, result: 'hit' }, s.hits);
          this.inc({ cache, result: 'miss' }, s.misses);
        }
      },
    });
    this.cacheBytes = new Gauge({
      name: 'memento_archive_read_cache_bytes',
      help: 'Bytes held by the read caches (index: an estimate), by cache',
      labelNames: ['cache'] as const,
      registers: [this.registry],
      collect() {
        for (const [cache, s] of Object.entries(caches())) this.set({ cache }, s.bytes);
      },
    });
  }

  /** A gauge of the connections open now, by peer (`writer`: in `put_allow`; `reader`), read from `open` at each scrape. */
  countConnections(open: () => { writers: number; readers: number }): void {
    new Gauge({
      name: 'memento_archive_connections',
      help: 'Connections open now, by peer: writer (its address in put_allow) or reader',
      labelNames: ['peer'] as const,
      registers: [this.registry],
      collect() {
        const o = open();
        this.set({ peer: 'writer' }, o.writers);
        this.set({ peer: 'reader' }, o.readers);
      },
    });
  }

  /** Counts one answered request in {@link requests}: its resource, and its HTTP status code. */
  countRequest(resource: string, status: number): void {
    let byStatus = this.requestCounters.get(resource);
    if (!byStatus) this.requestCounters.set(resource, (byStatus = new Map()));
    let c = byStatus.get(status);
    if (!c) byStatus.set(status, (c = this.requests.labels(resource, String(status))));
    c.inc();
  }

  /** The Prometheus text exposition of every metric. */
  text(): Promise<string> {
    return this.registry.metrics();
  }
}
