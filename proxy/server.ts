/**
 * The capture proxy: a reverse proxy (http-proxy, keep-alive connections
 * to the content servers) in front of the vhosts' content servers, whose
 * exchanges are captured to the archive (proxy/exchange.ts), with its
 * upgrades (proxy/upgrade.ts), its admin server (proxy/admin.ts) and its
 * shutdown (proxy/shutdown.ts). This module wires them together and
 * listens. The design: docs/architecture.md.
 */
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import httpProxy from 'http-proxy';
import { originOf } from '#shared/net.js';
import { createAdminServer } from './admin.js';
import { clientErrorHandler } from './answers.js';
import { archiveAgent } from './archive-put.js';
import type { Capture } from './capture/capture.js';
import { UnchangedCache } from './capture/is-it-new.js';
import type { ProxyConfig } from './config/proxy-file.js';
import type { Vhost } from './config/vhost-file.js';
import { exchangeHandler, requestLogger } from './exchange.js';
import { type Logger, silentLogger } from './log.js';
import { ProxyMetrics } from './metrics.js';
import { drainAndClose } from './shutdown.js';
import type { SpoolMeta } from './spool/file.js';
import { Spool, type SpoolOptions } from './spool/spool.js';
import { upgradeHandler } from './upgrade.js';
import { type ReloadEvent, VhostRegistry } from './vhosts.js';

/** Options of {@link startProxy}; every one has a default (the config's value, else the built-in one). */
export interface ProxyOptions {
  log?: Logger;
  /**
   * A vhost table to use instead of opening (and watching) `config.vhostsDir`.
   * The proxy does not close a registry it was given.
   */
  vhosts?: VhostRegistry;
  /** Hot-reload the vhosts folder (default `true`; ignored with `vhosts`). */
  watch?: boolean;
  /** Cut a live PUT once it has more than this many bytes waiting, and spool the capture (default 8 MiB). */
  maxCaptureBufferBytes?: number;
  /** Give up on an archive silent for this long, ms (default: config `archive_timeout`, 60 000). */
  archiveTimeoutMs?: number;
  /** Answer 504 when the content server is silent for this long, ms (default: config `upstream_timeout`, 60 000, as Apache's ProxyTimeout). */
  upstreamTimeoutMs?: number;
  /** A client must send its whole request within this, ms (default: config `request_timeout`, 300 000). */
  requestTimeoutMs?: number;
  /** A client must send a request's head within this, ms (default: config `headers_timeout`, 60 000; at most `requestTimeoutMs`). */
  headersTimeoutMs?: number;
  /** Most client connections open at once; one more is closed on accept (default: config `max_connections`, 4096). */
  maxConnections?: number;
  /** More spool settings (tests: `memoryBytes`, `paused`, …); the config's `spool_*` keys fill the rest. */
  spool?: Partial<SpoolOptions>;
  /** Metrics to count into (default: a new {@link ProxyMetrics}). */
  metrics?: ProxyMetrics;
}

/** A running proxy. */
export interface RunningProxy {
  /** Where it listens (the real port when `listen` asked for port 0). */
  address: { host: string; port: number };
  /** `http://host:port` (`https://` with TLS; IPv6 in brackets). */
  url: string;
  /** `http://host:port` of the admin server, when `admin_listen` is set. */
  adminUrl?: string;
  /** The vhost table in use (`reload()` for SIGHUP, `'reload'` events). */
  vhosts: VhostRegistry;
  /** The durable spool. */
  spool: Spool;
  metrics: ProxyMetrics;
  /**
   * Events: `'capture'` (a `CaptureOutcome`, proxy/capture/capture.ts) when a capture ends;
   * `'request'` (the request's log entry) when a request is done.
   */
  events: EventEmitter;
  /** Captures not settled yet. */
  readonly capturesInFlight: number;
  /**
   * Stops accepting connections, lets requests and captures in flight
   * finish for up to `graceMs` (default 5000), then cuts what is left
   * (a capture whose body was complete is spooled), stops the spool's
   * senders, closes the vhost watcher (unless the registry was passed in),
   * the admin server and the connections to the content servers. Idempotent.
   */
  close(graceMs?: number): Promise<void>;
}

/** The current ArchiveToken for a spooled capture: its vhost's, else any vhost's for that archive. */
function archiveTokenFor(vhosts: VhostRegistry): (meta: SpoolMeta) => string | undefined {
  return (meta) => {
    const same = (v: Vhost) => v.archiveHost === meta.host && v.archivePort === meta.port;
    const all = vhosts.vhosts;
    return (all.find((v) => v.serverName === meta.vhost && same(v)) ?? all.find((v) => same(v) && v.archiveToken))?.archiveToken;
  };
}

/**
 * The main listener, with TLS when `config.tls`: Node's head and whole-request
 * timeouts (a client late with either gets 408 and is closed, proxy/answers.ts),
 * checked every quarter of the shorter one (at least 50 ms, at most 30 s), and
 * at most `maxConnections` client connections (one more is closed on accept).
 */
function createMainServer(
  config: ProxyConfig,
  limits: { requestTimeoutMs: number; headersTimeoutMs: number; maxConnections: number },
  handler: http.RequestListener,
): http.Server {
  const headersTimeout = Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs);
  const serverOptions: http.ServerOptions = {
    requestTimeout: limits.requestTimeoutMs,
    headersTimeout,
    connectionsCheckingInterval: Math.max(50, Math.min(30_000, Math.floor(headersTimeout / 4))),
  };
  const server = config.tls
    ? https.createServer({ ...serverOptions, cert: readFileSync(config.tls.cert), key: readFileSync(config.tls.key) }, handler)
    : http.createServer(serverOptions, handler);
  server.maxConnections = limits.maxConnections;
  return server;
}

/** Listens on `host:port`; rejects with the listen error (`EADDRINUSE`, …). */
function listen(srv: http.Server, host: string, port: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    srv.once('error', onError);
    srv.listen(port, host, () => {
      srv.off('error', onError);
      resolve();
    });
  });
}

/**
 * The vhost registry of a proxy: the one in `options.vhosts`, else the
 * config's folder opened (and watched); its reloads counted in `metrics`.
 * `releaseVhosts` stops counting and closes a registry opened here.
 *
 * @throws ConfigError when the vhosts folder does not exist
 */
async function openVhosts(config: ProxyConfig, options: ProxyOptions, log: Logger, metrics: ProxyMetrics) {
  const ownRegistry = !options.vhosts;
  const vhosts = options.vhosts ?? (await VhostRegistry.open(config.vhostsDir, { log, watch: options.watch }));
  metrics.vhostFilesRejected.set(vhosts.rejectedFiles.size);
  const onReload = (e: ReloadEvent) => {
    metrics.reloads.inc({ result: e.ok ? 'ok' : 'rejected' });
    metrics.vhostFilesRejected.set(vhosts.rejectedFiles.size);
  };
  vhosts.on('reload', onReload);
  const releaseVhosts = async () => {
    vhosts.off('reload', onReload);
    if (ownRegistry) await vhosts.close();
  };
  return { vhosts, releaseVhosts };
}

/**
 * Starts the proxy: loads the vhosts (unless given), opens the spool (and
 * starts re-sending what an earlier run left there), listens on
 * `config.listen` (TLS when `config.tls`), and on `config.adminListen`;
 * resolves once listening.
 *
 * A bad vhost file does not stop it: it is logged and serves nothing
 * ({@link VhostRegistry.open}).
 *
 * @throws ConfigError when the vhosts folder does not exist;
 *   the file system error when the spool folder cannot be made or the TLS
 *   files cannot be read; the listen error (`EADDRINUSE`, …) when an
 *   address cannot be bound.
 */
export async function startProxy(config: ProxyConfig, options: ProxyOptions = {}): Promise<RunningProxy> {
  const log = options.log ?? silentLogger;
  const metrics = options.metrics ?? new ProxyMetrics();
  const { vhosts, releaseVhosts } = await openVhosts(config, options, log, metrics);
  const archiveTimeoutMs = options.archiveTimeoutMs ?? config.archiveTimeoutMs ?? 60_000;
  const upstreamTimeoutMs = options.upstreamTimeoutMs ?? config.upstreamTimeoutMs ?? 60_000;
  const requestTimeoutMs = options.requestTimeoutMs ?? config.requestTimeoutMs ?? 300_000;

  // The connections to the archives, kept open between PUTs: live PUTs and the spool's re-sends.
  const archives = archiveAgent(config.archiveConnections);
  let spool: Spool;
  try {
    spool = await Spool.open(config.spoolDir, {
      agent: archives,
      maxBytes: config.spoolMaxBytes,
      retryMinMs: config.spoolRetryMinMs,
      slowDisk: config.spoolSlowDisk,
      retryMaxMs: config.spoolRetryMaxMs,
      archiveTimeoutMs,
      log,
      metrics,
      tokenFor: archiveTokenFor(vhosts),
      ...options.spool,
    });
  } catch (err) {
    archives.destroy();
    await releaseVhosts();
    throw err;
  }

  const events = new EventEmitter();
  const agent = new http.Agent({ keepAlive: true });
  // X-Forwarded-* are set by the exchanges themselves (proxy/forwarding.ts `setForwarded`), and by http-proxy's `xfwd` for upgrades.
  const proxy = httpProxy.createProxyServer({ agent, preserveHeaderKeyCase: true, proxyTimeout: upstreamTimeoutMs });
  const captures = new Set<Capture>();
  const logRequest = requestLogger(log, metrics, events);
  const upload = {
    maxBufferedBytes: options.maxCaptureBufferBytes,
    archiveTimeoutMs,
    agent: archives,
    heldMaxBytes: config.heldMaxBytes,
    unchangedCache: new UnchangedCache(),
  };
  const exchanges = exchangeHandler({ vhosts, proxy, log, metrics, spool, captures, events, upload, logRequest });
  const upgrades = upgradeHandler({ vhosts, proxy, logRequest });
  proxy.on('error', (err: NodeJS.ErrnoException, req, target) => {
    if (target instanceof http.ServerResponse) exchanges.onError(err, req, target);
    else upgrades.onError(err, req, target);
  });

  let server: http.Server;
  try {
    server = createMainServer(
      config,
      {
        requestTimeoutMs,
        headersTimeoutMs: options.headersTimeoutMs ?? config.headersTimeoutMs ?? 60_000,
        maxConnections: options.maxConnections ?? config.maxConnections ?? 4096,
      },
      exchanges.handle,
    );
  } catch (err) {
    await spool.close();
    archives.destroy();
    await releaseVhosts();
    throw err;
  }
  server.on('upgrade', upgrades.handle);

  let admin: http.Server | undefined;
  try {
    await listen(server, config.listen.host, config.listen.port);
    if (config.adminListen) {
      admin = createAdminServer(metrics, () => spool.health());
      await listen(admin, config.adminListen.host, config.adminListen.port);
    }
  } catch (err) {
    server.close();
    await spool.close();
    await releaseVhosts();
    agent.destroy();
    archives.destroy();
    throw err;
  }
  server.on('error', (err) => log({ level: 'error', msg: 'server error', error: err.message }));
  server.on('clientError', clientErrorHandler(log));

  const addressOf = (srv: http.Server) => {
    const a = srv.address() as AddressInfo;
    return { host: a.address, port: a.port };
  };
  let closing: Promise<void> | undefined;
  const running: RunningProxy = {
    address: addressOf(server),
    url: originOf(config.tls ? 'https' : 'http', addressOf(server)),
    vhosts,
    spool,
    metrics,
    events,
    get capturesInFlight() {
      return captures.size;
    },
    close: (graceMs = 5000) => (closing ??= drainAndClose({ server, admin, captures, spool, proxy, agent, archives, releaseVhosts }, graceMs)),
  };
  if (admin) running.adminUrl = originOf('http', addressOf(admin));
  return running;
}
