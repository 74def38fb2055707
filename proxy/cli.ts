/**
 * `capture-proxy [--config conf/proxy.yaml]`: the capture proxy's command
 * line. Reads the config, starts the proxy, prints
 * `capture-proxy listening on <url>` and logs JSON lines to stdout;
 * SIGTERM/SIGINT drain and exit 0, SIGHUP reads the vhosts again. An
 * error in proxy.yaml is one line on stderr, `capture-proxy: file:line:
 * reason`, exit 2; a bad vhost file is logged and serves nothing, the
 * others serve (proxy/vhosts.ts).
 */
import { parseArgs } from 'node:util';
import { OperatorError } from '#shared/operator-error.js';
import { exitWithErrorLine } from '#shared/cli-error.js';
import { loadProxyConfig } from './config/proxy-file.js';
import { pinoLogger } from './log.js';
import { type RunningProxy, startProxy } from './server.js';

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
                      held_max_bytes. A bad vhost file is
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

/**
 * Runs the CLI with `argv` (without node and script). Resolves once the
 * proxy listens (or after `--help`); exits the process on a bad command
 * line (2), a bad config (2) or an address it cannot listen on (1).
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
  const log = pinoLogger(1);
  let proxy: RunningProxy;
  try {
    const config = loadProxyConfig(args.values.config!);
    proxy = await startProxy(config, { log });
  } catch (err) {
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
  process.stdout.write(`capture-proxy listening on ${proxy.url}\n`);
  if (proxy.adminUrl) log({ msg: 'admin server listening', url: proxy.adminUrl, metrics: `${proxy.adminUrl}/metrics` });

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log({ msg: 'stopping: no new connections; requests and captures in flight get 5 s', signal });
    await proxy.close();
    log({ msg: 'stopped', spoolDepth: proxy.spool.depth });
    log.flush?.();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGHUP', () => {
    const events = proxy.vhosts.reload();
    log({ msg: 'SIGHUP: vhosts read again', files: events.length, rejected: events.filter((e) => !e.ok).map((e) => e.error) });
  });
}
