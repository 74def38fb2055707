/**
 * `capture-proxy [--config conf/proxy.yaml]`: the capture proxy's command
 * line. Reads the config, starts the proxy, prints
 * `capture-proxy listening on <url>` and logs JSON lines to stdout;
 * SIGTERM/SIGINT drain and exit 0, SIGHUP reads the vhosts again. An
 * error in proxy.yaml is one line on stderr, `capture-proxy: file:line:
 * reason`, exit 2; a bad vhost file is logged and serves nothing, the
 * others serve (proxy/vhosts.ts).
 */
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { OperatorError } from '#shared/operator-error.js';
import { exitWithErrorLine } from '#shared/cli-error.js';
import { originOf } from '#shared/net.js';
import { loadProxyConfig, type ProxyConfig } from './config/proxy-file.js';
import { pinoLogger } from './log.js';
import { ProxyMetrics } from './metrics.js';
import { type RunningProxy, startProxy } from './server.js';
import { adoptLeftoverSpools } from './spool/workers.js';
import { runPrimary, serveWorker, workerConfig, workerIdentity } from './workers.js';

const HELP = `usage: capture-proxy [--config FILE]

Runs the capture proxy: a reverse proxy in front of content servers that
sends every captured request/response pair to the archive with HTTP PUT and
announces the archive's TimeGate in a Link header.

options:
  -c, --config FILE   proxy config (YAML), default conf/proxy.yaml (relative
                      to the working directory); relative paths inside it are
                      relative to its folder. Keys: listen (host:port),
                      vhosts (folder of vhost files, hot-reloaded), spool
                      (durable spool folder), spool_max_bytes,
                      spool_retry_min, spool_retry_max, admin_listen
                      (/metrics), tls_cert, tls_key, request_timeout,
                      headers_timeout, upstream_timeout, archive_timeout
                      (seconds), max_connections, archive_connections,
                      held_max_bytes, workers (processes; auto: one per
                      core above 2 cores, else 1). A bad vhost file is
                      logged and serves nothing; the others serve.
                      Every key and its default:
                      docs/configuration.md.
  -h, --help          show this text

signals:
  SIGTERM, SIGINT     stop accepting, let requests and captures in flight
                      finish (5 s; then captures still unsent are spooled),
                      exit 0
  SIGHUP              read the vhosts folder again (files are also watched)

Logs are JSON lines on stdout.
`;

function parseCliArgs(argv: string[]) {
  const options = { config: { type: 'string', short: 'c', default: 'conf/proxy.yaml' }, help: { type: 'boolean', short: 'h' } } as const;
  return parseArgs({ args: argv, allowPositionals: false, options });
}

/** Exits with one line on stderr for an error of startup: proxy.yaml's (2), an address in use, a spool folder, TLS files (1). */
function exitOnStartError(err: unknown): never {
  // An error an operator can act on (proxy.yaml's mistake: exit 2) is its own line, before any guess below.
  if (err instanceof OperatorError) exitWithErrorLine('capture-proxy', 'cannot start', err);
  const e = err as NodeJS.ErrnoException;
  if (e.syscall === 'listen' || e.code === 'EADDRINUSE' || e.code === 'EADDRNOTAVAIL') {
    process.stderr.write(`capture-proxy: cannot listen: ${e.message}\n`);
    process.exit(1);
  }
  if (e.code && e.syscall) {
    // The spool folder or the TLS files: a file system error, said in one line.
    process.stderr.write(`capture-proxy: ${e.message}\n`);
    process.exit(1);
  }
  if (/certificate|key|PEM/i.test(e.message)) {
    process.stderr.write(`capture-proxy: TLS: ${e.message}\n`);
    process.exit(1);
  }
  exitWithErrorLine('capture-proxy', 'cannot start', err);
}

/** Listens the admin server of the workers' primary on `config.adminListen`; its URL, or `undefined` without one. */
async function listenAdmin(config: ProxyConfig, server: http.Server): Promise<string | undefined> {
  if (!config.adminListen) return undefined;
  const { host, port } = config.adminListen;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const a = server.address() as AddressInfo;
  return originOf('http', { host: a.address, port: a.port });
}

/**
 * Runs the CLI with `argv` (without node and script). Resolves once the
 * proxy listens (or after `--help`); exits the process on a bad command
 * line (2), a bad config (2) or an address it cannot listen on (1). With
 * `workers:` above 1, this process is the workers' primary
 * (proxy/workers.ts), and each worker runs this same CLI.
 */
export async function main(argv: string[]): Promise<void> {
  let args: ReturnType<typeof parseCliArgs>;
  try {
    args = parseCliArgs(argv);
  } catch (err) {
    process.stderr.write(`capture-proxy: ${(err as Error).message}\n\n${HELP}`);
    process.exit(2);
  }
  if (args.values.help) {
    process.stdout.write(HELP);
    return;
  }
  const worker = workerIdentity();
  // Several processes write to one stdout: no write longer than a pipe writes at once (PIPE_BUF), so lines never mix.
  const log = pinoLogger(1, worker ? { maxWrite: 4096 } : {});
  let proxy: RunningProxy;
  try {
    const config = loadProxyConfig(args.values.config!);
    if (!worker) await adoptLeftoverSpools(config.spoolDir, config.workers ?? 1, log);
    if (!worker && (config.workers ?? 1) > 1) {
      const { failed } = await runPrimary(config, log, (server) => listenAdmin(config, server));
      if (failed !== undefined) process.exit(failed);
      return;
    }
    const metrics = worker ? new ProxyMetrics(true, { worker: String(worker.k) }) : undefined;
    proxy = await startProxy(worker ? workerConfig(config, worker) : config, { log, metrics });
  } catch (err) {
    exitOnStartError(err);
  }
  if (worker) serveWorker(proxy);
  else process.stdout.write(`capture-proxy listening on ${proxy.url}\n`);
  if (proxy.adminUrl) log({ msg: 'admin server listening', url: proxy.adminUrl, metrics: `${proxy.adminUrl}/metrics` });

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log({ msg: 'stopping: no new connections; requests and captures in flight get 5 s', signal, ...(worker && { worker: worker.k }) });
    await proxy.close();
    log({ msg: 'stopped', spoolDepth: proxy.spool.depth, ...(worker && { worker: worker.k }) });
    await log.end?.();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGHUP', () => {
    const events = proxy.vhosts.reload();
    log({ msg: 'SIGHUP: vhosts read again', files: events.length, rejected: events.filter((e) => !e.ok).map((e) => e.error) });
  });
}
