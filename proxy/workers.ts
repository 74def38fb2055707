/**
 * `workers:` (proxy.yaml): the capture proxy in several processes
 * (node:cluster). The first process (the primary) serves no request: it
 * moves the captures of workers that no longer run into worker 1's spool
 * (proxy/spool/workers.ts), listens on `admin_listen`, starts the workers,
 * prints `capture-proxy listening on <url>` once every one listens, passes
 * SIGHUP on to them, starts another in place of one that dies, and on
 * SIGTERM/SIGINT stops them all and exits once the last one is gone.
 *
 * Each worker is the whole proxy (proxy/server.ts) on the same listener
 * (node:cluster hands each new connection to one of them in turn): its own
 * vhost table, watching the vhosts folder itself (so an edit reaches every
 * worker), its own spool folder holding at most `spool_max_bytes` / workers
 * (one writer and one sender per queue: the spool's order and "none lost,
 * none sent twice" stay what they are for one process), its own log lines
 * on the same stdout, and its own metrics, every series labelled
 * `worker="<k>"`. The primary's `/metrics` asks every worker for its
 * metrics and serves them as one page (a worker that does not answer
 * within 2 s makes it a 503); `/healthz` is every worker's lines, and one
 * for each worker not running.
 */
import cluster, { type Worker } from 'node:cluster';
import { once } from 'node:events';
import type http from 'node:http';
import { AggregatorRegistry, Registry } from 'prom-client';
import { createAdminServer, type MetricsSource } from './admin.js';
import { PROXY_DEFAULTS, type ProxyConfig } from './config/proxy-file.js';
import type { Logger } from './log.js';
import type { RunningProxy } from './server.js';
import { workerSpoolDir } from './spool/workers.js';

/** A worker's place among the workers: `k` of `workers` (1-based). */
export interface WorkerIdentity {
  k: number;
  workers: number;
}

/** The messages between the primary and a worker (node:cluster's IPC channel). */
type Message =
  | { type: 'capture-proxy:ready'; url: string }
  | { type: 'capture-proxy:ask'; id: number }
  | { type: 'capture-proxy:answer'; id: number; metrics: object[]; health: string[] };

/** How long the primary waits for a worker's metrics, ms. */
const ASK_TIMEOUT_MS = 2000;
/** How long the primary waits for its workers to stop before it kills them, ms (each has 5 s of grace, then closes its spool). */
const STOP_TIMEOUT_MS = 30_000;
/** How long after a worker died another is started in its place, ms. */
const RESTART_DELAY_MS = 1000;

/** In a worker: which one it is (from the environment its primary gave it); `undefined` in the primary or without workers. */
export function workerIdentity(): WorkerIdentity | undefined {
  if (!cluster.isWorker) return undefined;
  const k = Number(process.env.CAPTURE_PROXY_WORKER);
  const workers = Number(process.env.CAPTURE_PROXY_WORKERS);
  return k >= 1 && workers >= k ? { k, workers } : undefined;
}

/** The config worker `id` runs: its own spool folder and share of `spool_max_bytes`, no admin server (the primary's). */
export function workerConfig(config: ProxyConfig, id: WorkerIdentity): ProxyConfig {
  const spoolMaxBytes = Math.max(1, Math.floor((config.spoolMaxBytes ?? Number(PROXY_DEFAULTS.spool_max_bytes)) / id.workers));
  return { ...config, spoolDir: workerSpoolDir(config.spoolDir, id.k, id.workers), spoolMaxBytes, adminListen: undefined, workers: 1 };
}

/** In a worker: tells the primary it listens, and answers the primary's questions (metrics and health) from then on. */
export function serveWorker(proxy: RunningProxy): void {
  process.on('message', (m: Message) => {
    if (m?.type !== 'capture-proxy:ask') return;
    void proxy.metrics.registry.getMetricsAsJSON().then((metrics: object[]) => {
      const answer: Message = { type: 'capture-proxy:answer', id: m.id, metrics, health: proxy.spool.health() };
      process.send?.(answer);
    });
  });
  process.send?.({ type: 'capture-proxy:ready', url: proxy.url } satisfies Message);
}

/** What the primary keeps of its workers. */
interface Workers {
  /** The running worker of each number. */
  byK: Map<number, Worker>;
  stopping: boolean;
}

/** Asks every running worker for its metrics and health; rejects naming a worker that does not answer within 2 s. */
async function askWorkers(ws: Workers, seq: { n: number }): Promise<{ k: number; metrics: object[]; health: string[] }[]> {
  const asks = [...ws.byK].map(
    ([k, w]) =>
      new Promise<{ k: number; metrics: object[]; health: string[] }>((resolve, reject) => {
        const id = ++seq.n;
        const timer = setTimeout(() => {
          w.off('message', onMessage);
          reject(new Error(`worker ${k} did not answer within ${ASK_TIMEOUT_MS / 1000} s`));
        }, ASK_TIMEOUT_MS);
        const onMessage = (m: Message) => {
          if (m?.type !== 'capture-proxy:answer' || m.id !== id) return;
          clearTimeout(timer);
          w.off('message', onMessage);
          resolve({ k, metrics: m.metrics, health: m.health });
        };
        w.on('message', onMessage);
        w.send({ type: 'capture-proxy:ask', id } satisfies Message);
      }),
  );
  return Promise.all(asks);
}

/** The primary's `/metrics` (every worker's series, each labelled with its worker) and `/healthz`. */
function workersAdmin(ws: Workers, workers: number): http.Server {
  const seq = { n: 0 };
  const metrics: MetricsSource = {
    contentType: Registry.PROMETHEUS_CONTENT_TYPE,
    async text() {
      const answers = await askWorkers(ws, seq);
      return AggregatorRegistry.aggregate(answers.map((a) => a.metrics)).metrics();
    },
  };
  const health = async () => {
    const lines: string[] = [];
    for (let k = 1; k <= workers; k++) if (!ws.byK.has(k)) lines.push(`worker ${k} is not running`);
    const answers = await askWorkers(ws, seq).catch((err: Error) => (lines.push(err.message), []));
    for (const a of answers) for (const l of a.health) if (!lines.includes(l)) lines.push(l);
    return lines;
  };
  return createAdminServer(metrics, health);
}

/**
 * Forks worker `k` of `workers`; resolves with its URL once it listens. A
 * worker of the start (`initial`) that exits before it listens rejects
 * with its exit code; any other that exits while the proxy runs is
 * replaced after {@link RESTART_DELAY_MS}.
 */
function fork(ws: Workers, k: number, workers: number, log: Logger, initial: boolean): Promise<string> {
  const w = cluster.fork({ CAPTURE_PROXY_WORKER: String(k), CAPTURE_PROXY_WORKERS: String(workers) });
  ws.byK.set(k, w);
  return new Promise<string>((resolve, reject) => {
    let ready = false;
    w.on('message', (m: Message) => {
      if (m?.type !== 'capture-proxy:ready') return;
      ready = true;
      if (!initial) log({ msg: 'worker listening again', worker: k, pid: w.process.pid });
      resolve(m.url);
    });
    w.on('exit', (code, signal) => {
      if (ws.byK.get(k) === w) ws.byK.delete(k);
      if (!ready && initial) return reject(Object.assign(new Error(`worker ${k} exited before it listened`), { exitCode: code || 1 }));
      if (ws.stopping) return;
      log({ level: 'error', msg: 'worker exited; starting another in its place', worker: k, pid: w.process.pid, code, signal });
      setTimeout(() => {
        if (!ws.stopping) void fork(ws, k, workers, log, false);
      }, RESTART_DELAY_MS).unref();
    });
  });
}

/** Sends `signal` to every running worker and resolves once all have exited (SIGKILL for those still there after 30 s). */
async function stopWorkers(ws: Workers, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  ws.stopping = true;
  const running = [...ws.byK.values()].filter((w) => w.process.exitCode === null && w.process.signalCode === null);
  const exited = running.map((w) => once(w, 'exit'));
  for (const w of running) w.process.kill(signal);
  const backstop = setTimeout(() => running.forEach((w) => w.process.kill('SIGKILL')), STOP_TIMEOUT_MS);
  await Promise.all(exited);
  clearTimeout(backstop);
}

/**
 * Runs the primary of `config.workers` workers (see the module's comment).
 * Resolves once every worker listens, having printed
 * `capture-proxy listening on <url>`; the admin server (if any) listens
 * before the first worker starts.
 *
 * @param listenAdmin listens the admin server on `config.adminListen` (the CLI's, with its errors)
 * @returns exit code and message when a worker fails to start (the others are stopped first): the worker has said why on stderr
 */
export async function runPrimary(
  config: ProxyConfig,
  log: Logger,
  listenAdmin: (server: http.Server) => Promise<string | undefined>,
): Promise<{ failed?: number }> {
  const workers = config.workers ?? 1;
  const ws: Workers = { byK: new Map(), stopping: false };
  const admin = workersAdmin(ws, workers);
  const adminUrl = await listenAdmin(admin);
  let url: string;
  try {
    const urls = await Promise.all(Array.from({ length: workers }, (_, i) => fork(ws, i + 1, workers, log, true)));
    url = urls[0];
  } catch (err) {
    await stopWorkers(ws);
    admin.close();
    return { failed: (err as { exitCode?: number }).exitCode ?? 1 };
  }
  process.stdout.write(`capture-proxy listening on ${url}\n`);
  log({ msg: 'workers listening', workers, pids: [...ws.byK.values()].map((w) => w.process.pid) });
  if (adminUrl) log({ msg: 'admin server listening', url: adminUrl, metrics: `${adminUrl}/metrics` });

  let stopping: Promise<void> | undefined;
  const stop = (signal: string) =>
    (stopping ??= (async () => {
      log({ msg: 'stopping: every worker stops accepting; requests and captures in flight get 5 s', signal });
      await stopWorkers(ws);
      admin.closeAllConnections();
      admin.close();
      log({ msg: 'stopped', workers });
      await log.end?.();
      process.exit(0);
    })());
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGHUP', () => {
    for (const w of ws.byK.values()) w.process.kill('SIGHUP');
    log({ msg: 'SIGHUP: passed on to the workers', workers: ws.byK.size });
  });
  return {};
}
