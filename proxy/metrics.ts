/**
 * The capture proxy's counters and gauges (prom-client), in a registry of
 * their own per proxy, so that several proxies can run in one process;
 * the admin server (proxy/admin.ts) serves them as Prometheus text, with
 * prom-client's default process metrics. The series whose labels are
 * known in advance start at 0, so that a scrape shows them from the start.
 */
import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';

/** The counters and gauges of one proxy, in their own registry. */
export class ProxyMetrics {
  readonly registry = new Registry();
  /**
   * Requests answered so far, by `<vhost> <status>`; {@link requests}
   * takes them over when it is read (a scrape). Counted here because
   * prom-client's `inc` with labels (it hashes the label set on every
   * call) was a measurable share of the proxy's own time per request.
   */
  private readonly requestCounts = new Map<string, { vhost: string; status: string; n: number }>();
  readonly requests = new Counter({
    name: 'capture_proxy_requests_total',
    help: 'Requests answered, by vhost and status',
    labelNames: ['vhost', 'status'] as const,
    registers: [this.registry],
    collect: () => {
      for (const c of this.requestCounts.values()) if (c.n) this.requests.inc({ vhost: c.vhost, status: c.status }, c.n);
      for (const c of this.requestCounts.values()) c.n = 0;
    },
  });
  readonly capturesSent = new Counter({
    name: 'capture_proxy_captures_sent_total',
    help: 'Captures acknowledged by the archive (2xx), live or re-sent from the spool',
    labelNames: ['via'] as const,
    registers: [this.registry],
  });
  readonly unchanged = new Counter({
    name: 'capture_proxy_captures_unchanged_total',
    help: 'Captures not stored because they equal the memento they would follow: the archive answered 200 to the PUT (via="archive"), or the cache of its answers knew (via="cache", no PUT sent)',
    labelNames: ['via'] as const,
    registers: [this.registry],
  });
  readonly conflicts = new Counter({
    name: 'capture_proxy_captures_conflict_total',
    help: 'Captures the archive answered 409: it already holds a different capture of the URI-R at that second (one-second resolution) and keeps it; dropped, never re-sent (live or from the spool)',
    labelNames: ['via'] as const,
    registers: [this.registry],
  });
  readonly spooled = new Counter({ name: 'capture_proxy_captures_spooled_total', help: 'Captures written to the durable spool', registers: [this.registry] });
  readonly dropped = new Counter({
    name: 'capture_proxy_captures_dropped_total',
    help: 'Captures lost, by reason',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly refused = new Counter({
    name: 'capture_proxy_captures_refused_total',
    help: 'Exchanges not captured because the archive would refuse the capture (never sent, never spooled)',
    registers: [this.registry],
  });
  readonly putFailures = new Counter({
    name: 'capture_proxy_put_failures_total',
    help: 'Capture PUTs that failed (no answer, timeout, non-2xx, cut)',
    labelNames: ['via'] as const,
    registers: [this.registry],
  });
  readonly spoolDepth = new Gauge({ name: 'capture_proxy_spool_depth', help: 'Captures waiting in the spool', registers: [this.registry] });
  readonly spoolBytes = new Gauge({ name: 'capture_proxy_spool_bytes', help: 'Bytes held by the spool (queued and being teed)', registers: [this.registry] });
  readonly reloads = new Counter({
    name: 'capture_proxy_reloads_total',
    help: 'Vhost file loads after start, by result',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly vhostFilesRejected = new Gauge({
    name: 'capture_proxy_vhost_files_rejected',
    help: 'Vhost files whose version on disk is refused (since start, or since their last good version, which keeps serving)',
    registers: [this.registry],
  });

  /**
   * @param defaults also collect prom-client's default process metrics (default `true`)
   * @param labels labels on every series (a worker's `{ worker: "2" }`, proxy/workers.ts)
   */
  constructor(defaults = true, labels?: Record<string, string>) {
    if (labels) this.registry.setDefaultLabels(labels);
    if (defaults) collectDefaultMetrics({ register: this.registry, prefix: '' });
    // Zero series, so that a scrape shows every metric from the start.
    this.capturesSent.inc({ via: 'live' }, 0);
    this.capturesSent.inc({ via: 'spool' }, 0);
    this.unchanged.inc({ via: 'archive' }, 0);
    this.unchanged.inc({ via: 'cache' }, 0);
    this.putFailures.inc({ via: 'live' }, 0);
    this.putFailures.inc({ via: 'spool' }, 0);
    this.conflicts.inc({ via: 'live' }, 0);
    this.conflicts.inc({ via: 'spool' }, 0);
    this.reloads.inc({ result: 'ok' }, 0);
    this.reloads.inc({ result: 'rejected' }, 0);
    this.spooled.inc(0);
    this.refused.inc(0);
  }

  /** Counts one request answered for `vhost` (`-`: none) with `status` into `capture_proxy_requests_total`. */
  countRequest(vhost: string, status: number): void {
    const key = `${vhost} ${status}`;
    const c = this.requestCounts.get(key);
    if (c) c.n++;
    else this.requestCounts.set(key, { vhost, status: String(status), n: 1 });
  }

  /** The `Content-Type` of {@link text}'s answer (Prometheus text format 0.0.4). */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** The Prometheus text exposition of every metric. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  /** The current value of a counter or gauge (summed over the labels that match `labels`), for tests and logs. */
  async value(name: string, labels: Record<string, string> = {}): Promise<number> {
    const m = this.registry.getSingleMetric(name);
    if (!m) return NaN;
    const got = await m.get();
    return got.values
      .filter((v) => Object.entries(labels).every(([k, want]) => String((v.labels as Record<string, unknown>)[k]) === want))
      .reduce((sum, v) => sum + v.value, 0);
  }
}
