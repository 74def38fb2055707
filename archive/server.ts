/**
 * The archive daemon's HTTP side: a fastify instance with one plugin per
 * resource group (archive/http/): capture ingest, discovery, the redirector
 * and index TimeMap, TimeGates, Mementos, TimeMaps, the replay's static
 * files, the pages for people (archive/web/). Query APIs are further
 * plugins registered the same way. Every error is
 * an HttpError (shared/http-error.ts), answered here in one place as one
 * line of text. URL space: docs/url-space.md.
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type pino from 'pino';
import { clientAddress } from '#shared/net.js';
import { errorAnswer, errorText, httpError, isHttpError } from '#shared/http-error.js';
import { openSigningKey } from './evidence/signing-key.js';
import { TreeHeadSigner } from './evidence/tree-heads.js';
import { isLocal } from './spans.js';
import type { ArchiveConfig } from './config.js';
import { cdxRoutes } from './http/cdx.js';
import { decorateArchive, pagesOrigin, TEXT, wantsPage } from './http/context.js';
import { discoveryRoutes } from './http/discovery.js';
import { notFound } from './http/fallback.js';
import { sendRegisteredFieldNames, useRegisteredFieldNames } from './http/field-names.js';
import { clientErrorHandler } from './http/guards.js';
import { ConnectionGate, connectionBound, openFileLimit } from './http/connections.js';
import { FastPath, serverWithFastPath } from './http/fast-path.js';
import { ingestRoutes, revisitPuts } from './http/ingest.js';
import { logRoutes } from './http/log.js';
import { makeTlog, tlogRoutes } from './http/tlog.js';
import { tlogClients } from './evidence/tlog-clients.js';
import type { TlogClients } from './evidence/checkpoint-publisher.js';
import { mementoRoutes } from './http/memento.js';
import { opsRoutes } from './http/ops.js';
import { redirectorRoutes } from './http/redirector.js';
import { staticRoutes } from './http/static.js';
import { timegateRoutes } from './http/timegate.js';
import { timemapRoutes } from './http/timemap.js';
import type { DecodeOptions } from './replay/content-coding.js';
import { ArchiveMetrics } from './metrics.js';
import { Reader } from './read/reader.js';
import { ReplayCache } from './replay/cache.js';
import { recordRoutes } from './http/record.js';
import { VisibleIndex } from './read/visible-index.js';
import { errorPage } from './web/page.js';
import { webRoutes } from './web/routes.js';
import { searchRoutes } from './web/search-routes.js';
import { feedRoutes } from './feed/routes.js';
import { WorkPool } from './work/pool.js';
import type { ArchiveStore } from './store/store.js';

export interface ServerOptions {
  /** Metrics to count into (default: a new {@link ArchiveMetrics} over the store). */
  metrics?: ArchiveMetrics;
  /** Where to log: errors, and one line per request (`msg: "request"`) unless `quiet`; none when absent (tests). */
  log?: pino.Logger;
  /** No line per request (errors are still logged). */
  quiet?: boolean;
  /** The witness and time-stamping clients of the checkpoint publisher (default: the real ones; tests stand in). */
  tlogClients?: TlogClients;
  /** Answer the hot TimeGate and Memento reads in front of fastify (http/fast-path.ts; default true; false: tests compare). */
  fastPath?: boolean;
}

/** The plugins of the archive, in registration order; each is encapsulated (its hooks stay its own). */
const PLUGINS = [
  ingestRoutes,
  discoveryRoutes,
  redirectorRoutes,
  timegateRoutes,
  mementoRoutes,
  timemapRoutes,
  logRoutes,
  cdxRoutes,
  staticRoutes,
  webRoutes,
  searchRoutes,
  feedRoutes,
  opsRoutes,
  recordRoutes,
  tlogRoutes,
];

/**
 * Builds the archive's fastify instance (not listening yet): limits and
 * timeouts from the config, the store and config as decorators, the
 * plugins, and the one error handler.
 *
 * @param config validated archive config
 * @param store an open store over `config.dataDir`
 */
export async function buildArchiveServer(config: ArchiveConfig, store: ArchiveStore, opts: ServerOptions = {}): Promise<FastifyInstance> {
  // The hot reads are answered before fastify sees them (set once the reader exists, below).
  let fast: FastPath | undefined;
  const app = Fastify({
    serverFactory: serverWithFastPath(config, () => fast),
    loggerInstance: opts.log as FastifyBaseLogger | undefined,
    // Our own line per request (logRequest), not fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    // Request targets carry whole URI-Rs (query included); allow long ones.
    routerOptions: { maxParamLength: 100_000 },
    return503OnClosing: true,
    http: {
      maxHeaderSize: config.maxHttpHeaderBytes,
      headersTimeout: config.headersTimeoutMs,
      // A late head is found within a second (Node looks at every open connection at this interval).
      connectionsCheckingInterval: Math.max(100, Math.min(1000, config.headersTimeoutMs / 4)),
    },
    requestTimeout: config.requestTimeoutMs,
    connectionTimeout: config.idleTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    clientErrorHandler: clientErrorHandler(config),
    // Errors of fastify's router (a malformed percent-encoding in the address) are answered as every other error.
    frameworkErrors: (err, req, reply) => answerError(err, req, reply),
  });
  decorateArchive(app, config, store);
  // The index through the access rules, with the stored keys they name in their folded form only (archive/read/visible-index.ts).
  const visible = await VisibleIndex.open(store.index, config.access, config.archives);
  app.decorate('visible', visible);
  store.hidden = (urlkey, datetime) => !visible.shows(urlkey, datetime);
  sendRegisteredFieldNames(app);
  // The evidence logs' tree heads: signed within ~a second of new entries, by whichever replica looks first.
  const key = openSigningKey(config.signingKeyFile);
  const tlog = await makeTlog(app, config, store.index.log, key, opts.tlogClients ?? tlogClients);
  const treeHeads = new TreeHeadSigner(
    store.index.log,
    key,
    config.archives.filter(isLocal).map((a) => a.id),
    (err) => opts.log?.error({ error: err.message }, 'evidence log: signing a tree head failed; trying again'),
    tlog.signing,
  );
  await treeHeads.checkKey(config.signingKeyFile);
  await tlog.checkAnchors();
  app.decorate('treeHeads', treeHeads);
  treeHeads.start();
  app.addHook('onClose', async () => treeHeads.close());
  // Checkpoints in the C2SP formats: witnessed, time-stamped, published (archive/http/tlog.ts).
  app.decorate('tlog', tlog);
  tlog.publisher.start();
  app.addHook('onClose', async () => tlog.publisher.close());
  const caches = () => ({
    index: { ...store.index.cache.stats, bytes: store.index.cache.bytes },
    record: { ...store.recordCache.stats, bytes: store.recordCache.bytes },
  });
  const metrics = opts.metrics ?? new ArchiveMetrics(() => store.index.count(), true, caches);
  app.decorate('metrics', metrics);
  // At most max_connections open, put_reserved_connections of them for the writers (http/connections.ts).
  const bound = connectionBound(config);
  if (bound < config.maxConnections)
    opts.log?.warn(
      { max_connections: config.maxConnections, open_file_limit: openFileLimit(), bound },
      `max_connections lowered to ${bound}: the open-file limit leaves no more (raise LimitNOFILE)`,
    );
  const gate = new ConnectionGate(app.server, bound, config.putReservedConnections, config.putAllow, (share) => metrics.connectionsRefused.inc({ share }));
  metrics.countConnections(() => gate.open);
  const work = workPools(metrics);
  app.decorate('work', work);
  app.addHook('onClose', async () => void (await Promise.all(Object.values(work).map((pool) => pool.close()))));
  const decode: DecodeOptions = {
    maxBytes: config.maxDecodedBytes,
    onEnd: (bytes, outcome) => {
      metrics.decodes.inc({ outcome });
      metrics.decodedBytes.inc(bytes);
    },
  };
  // The Memento protocol's reads, and the caches on a memento's way (archive/read/reader.ts).
  const replayCache = new ReplayCache(config.replayCacheBytes);
  app.decorate(
    'reader',
    new Reader({
      visible,
      store,
      replayCache,
      decode,
      work,
      publishRequests: config.publishRequests,
      archives: config.archives,
      pagesOrigin: (base) => pagesOrigin(config, base),
    }),
  );
  if (opts.fastPath !== false) {
    fast = new FastPath({ config, reader: app.reader, metrics, log: opts.quiet ? undefined : opts.log });
    app.addHook('preClose', async () => void (fast!.closing = true));
  }
  app.decorate('fastPath', fast);
  store.onBatch = (captures, _written, syncSeconds) => {
    metrics.batchSize.observe(captures);
    metrics.fsyncSeconds.observe(syncSeconds);
  };
  // A plain callback, not an async function: no promise per request.
  app.addHook('onResponse', (req, reply, done) => {
    countRequest(metrics, req, reply.statusCode);
    done();
  });
  if (opts.log && !opts.quiet) app.addHook('onResponse', logRequest);
  app.addHook('preClose', async () => closeIdleUntilClosed(app));
  app.setErrorHandler(answerError);
  // A path no route answers: 404, or, for a replayed page's root-relative request, into the replay (http/fallback.ts).
  app.setNotFoundHandler(notFound);
  for (const plugin of PLUGINS) await app.register(plugin);
  return app;
}

/**
 * The daemon's work pools (work/pool.ts), for work that grows with stored
 * content, off the event loop: comparisons in one thread, the replay
 * panel's resource lists in another, the replay's rewrites that do not fit
 * in a slice of the loop in a third (so that a slow comparison never
 * delays a replay page), and the full-text index's parse of each new page
 * (archive/search/indexer.ts, one page at a time) in a fourth.
 */
function workPools(metrics: ArchiveMetrics): FastifyInstance['work'] {
  const counted = (pool: string) => (_task: string, outcome: string) => metrics.work.inc({ pool, outcome });
  return {
    diff: new WorkPool('diff', { queue: 8, onOutcome: counted('diff') }),
    panel: new WorkPool('panel', { queue: 32, onOutcome: counted('panel') }),
    replay: new WorkPool('replay', { queue: 64, onOutcome: counted('replay') }),
    text: new WorkPool('text', { queue: 4, onOutcome: counted('text') }),
  };
}

/**
 * While the server closes, closes each kept-alive connection as soon as it
 * is idle. Node's `server.close()` closes the idle ones once; a connection
 * whose request ends just after (a capture PUT still streaming in when the
 * close began) would otherwise stay open until
 * `keep_alive_timeout`, and with it the daemon.
 */
function closeIdleUntilClosed(app: FastifyInstance): void {
  if (!app.server.listening) return;
  const timer = setInterval(() => app.server.closeIdleConnections(), 50);
  timer.unref();
  app.server.once('close', () => clearInterval(timer));
}

/** Counts an answered request by resource and status, and a capture PUT by its result. */
function countRequest(metrics: ArchiveMetrics, req: FastifyRequest, status: number): void {
  const resource = req.routeOptions.config?.resource ?? 'other';
  metrics.countRequest(resource, status);
  if (resource !== 'put') return;
  if (status === 409) metrics.captures.inc({ result: 'conflict' });
  else if (status >= 400) {
    metrics.captures.inc({ result: 'refused' });
    metrics.refused.inc({ status: String(status) });
  } else metrics.captures.inc({ result: status !== 201 ? 'duplicate' : revisitPuts.has(req.raw) ? 'revisit' : 'stored' });
}

/** The request's log line, as the proxy writes its own: method, target, status, time, client. */
async function logRequest(req: FastifyRequest, reply: FastifyReply): Promise<void> {
  const entry = {
    type: 'request',
    method: req.method,
    target: req.url.length > 300 ? req.url.slice(0, 300) + '…' : req.url,
    status: reply.statusCode,
    ms: Math.round(reply.elapsedTime),
    client: clientAddress(req.socket.remoteAddress),
  };
  if (reply.statusCode >= 500) req.log.warn(entry, 'request');
  else req.log.info(entry, 'request');
}

/**
 * The one place errors become answers: an HttpError with its status,
 * headers and one-line reason (`text/plain`; to a browser's navigation,
 * `Accept: text/html`, the same reason in an error page, web/page.ts); a 4xx of fastify's own (a
 * body it could not parse) as itself; anything else a logged 500.
 */
function answerError(err: FastifyError, req: FastifyRequest, reply: FastifyReply): FastifyReply {
  const status = err.statusCode;
  const e = !isHttpError(err) && status && status >= 400 && status < 500 ? httpError(status, err.message) : err;
  const a = errorAnswer(e);
  if (a.status >= 500) req.log.error({ err }, 'request failed');
  // An answer that failed before it was sent (a stored body that cannot be read): its headers go, the error's are sent.
  if (reply.headersPlaced && !reply.raw.headersSent) {
    for (const name of reply.raw.getHeaderNames()) reply.raw.removeHeader(name);
    reply.headersPlaced = false;
  }
  if (a.close) reply.header('connection', 'close');
  // A browser's navigation gets the same answer as a page (Vary: Accept added); every other client the one line.
  const page = wantsPage(req) ? errorPage(req.server.config, req, a.status, { reason: a.reason }, a.headers.vary) : undefined;
  reply.code(a.status).headers(a.headers);
  if (page) reply.headers(page.headers);
  else reply.type(TEXT);
  // Here too: fastify's router errors (frameworkErrors) run no onSend hook.
  useRegisteredFieldNames(reply);
  return reply.send(page ? page.html : errorText(a.status, a.reason));
}
