/**
 * `memento-archive`: the archive daemon's command line.
 *
 *   memento-archive [serve] [--config conf/archive.yaml]
 *
 * Prints one line with the address it listens on, logs requests to stdout
 * (JSON lines), exits cleanly on SIGTERM/SIGINT.
 */
import { parseArgs } from 'node:util';
import { ConfigError } from '../shared/config.js';
import { loadArchiveConfig } from './config.js';
import { buildArchiveServer } from './server.js';
import { ArchiveStore } from './store/store.js';

const HELP = `usage: memento-archive [serve] [--config FILE]

Runs the archive daemon: capture ingest by PUT, and the Memento (RFC 7089)
redirector, TimeGates, Mementos, TimeMaps and host-meta discovery.

commands:
  serve            run the daemon (the default)

options:
  -c, --config FILE   archive config (YAML), default conf/archive.yaml;
                      relative paths inside it are relative to its folder
  -q, --quiet         do not log each request
  -h, --help          show this text
`;

/** Runs the CLI with `argv` (without node and script). Exits the process on fatal errors. */
export async function main(argv: string[]): Promise<void> {
  let args;
  try {
    args = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { config: { type: 'string', short: 'c', default: 'conf/archive.yaml' }, quiet: { type: 'boolean', short: 'q' }, help: { type: 'boolean', short: 'h' } },
    });
  } catch (err) {
    process.stderr.write(`memento-archive: ${(err as Error).message}\n\n${HELP}`);
    process.exit(2);
  }
  if (args.values.help) {
    process.stdout.write(HELP);
    return;
  }
  const command = args.positionals[0] ?? 'serve';
  if (command !== 'serve') {
    process.stderr.write(`memento-archive: unknown command "${command}"\n\n${HELP}`);
    process.exit(2);
  }
  let config;
  try {
    config = loadArchiveConfig(args.values.config!);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`memento-archive: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const store = await ArchiveStore.open(config);
  const app = await buildArchiveServer(config, store, { logger: args.values.quiet ? false : { level: 'info' } });
  const address = await app.listen({ host: config.listen.host, port: config.listen.port });
  process.stdout.write(`memento-archive listening on ${address}\n`);
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await app.close();
    await store.close();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
