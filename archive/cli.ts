/**
 * `memento-archive`: the archive daemon's command line.
 *
 *   memento-archive [serve] [--config conf/archive.yaml]
 *   memento-archive verify  [--config conf/archive.yaml]
 *   memento-archive reindex [--config conf/archive.yaml]
 *   memento-archive purge   [--config conf/archive.yaml] --url URL | --prefix URL* [--before DATE] [--after DATE] [--dry-run]
 *   memento-archive import  [--config conf/archive.yaml] [--daemon URL] FILE.warc[.gz]...
 *   memento-archive cdxj    [--config conf/archive.yaml] [--archive ID]
 *
 * Prints one line with the address it listens on, logs to stdout as JSON
 * lines (shared/log.ts, the proxy's format), exits cleanly on SIGTERM/SIGINT;
 * SIGHUP reads the config again (systemd's reload).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import cliProgress from 'cli-progress';
import { ConfigError } from '#shared/config.js';
import { jsonLinesLogger } from '#shared/log.js';
import { formatHostPort } from '#shared/net.js';
import type { AccessRules } from './access.js';
import { type ArchiveConfig, loadArchiveConfig } from './config.js';
import { runPurge } from './purge-command.js';
import { runCdxj } from './commands/cdxj.js';
import { runImport } from './commands/import.js';
import { buildArchiveServer } from './server.js';
import { IndexDb, StaleIndexError } from './store/index-db.js';
import { DataDirBusyError, DataDirLock } from './store/lock.js';
import { type Progress, reindex, verify } from './store/maintenance.js';
import { PurgeInterruptedError } from './store/purge.js';
import { ArchiveStore } from './store/store.js';

const HELP = `usage: memento-archive [serve|verify|reindex|purge] [--config FILE]
       memento-archive import [--config FILE] [--daemon URL] FILE.warc[.gz]...
       memento-archive cdxj [--config FILE] [--archive ID]

Runs the archive daemon: capture ingest by PUT, and the Memento (RFC 7089)
redirector, TimeGates, Mementos, TimeMaps and host-meta discovery.

commands:
  serve            run the daemon (the default). On start it recovers from a
                   crash: a partial record at the end of a WARC file is
                   truncated, complete unacknowledged captures are indexed;
                   each action is logged.
  verify           check that the index and the WARC files agree: every index
                   row against its record, every record's gzip CRC and
                   WARC-Block-Digest / WARC-Payload-Digest recomputed. Prints a
                   summary; exit code 1 when anything is wrong. Safe while the
                   daemon runs.
  reindex          rebuild index.sqlite3 from the WARC files alone. Stop the
                   daemon first. Damaged or partial records are skipped and
                   listed. A progress bar is shown when stderr is a terminal.
  purge            erase captures for good (takedown, GDPR): every WARC file
                   holding one is rewritten without its records (and their
                   request records), the index follows, and verify passes
                   after. --url URL (one URL) or --prefix URL* (every URL
                   under it), optionally --before DATE / --after DATE (the
                   captures earlier than / at or after). Stop the daemon
                   first. --dry-run says what would go and changes nothing.
  import FILE...   WARC 1.0/1.1 files (plain or .gz) → mementos, with the
                   rules of a capture PUT (span, dedup, same second):
                   response records with their request records, revisit
                   records resolved to the memento they repeat; resource,
                   metadata and other records skipped and counted. With no
                   daemon running it locks the data folder and stores the
                   captures itself; when the daemon runs, it PUTs them to
                   the daemon. Prints refused records and a summary; a
                   damaged file is one line naming the file and offset
                   (what came before it stays imported), exit code 1.
  cdxj             the index as CDXJ on stdout (pywb / OutbackCDX format,
                   sorted bytewise); safe while the daemon runs.

options:
  -c, --config FILE   archive config (YAML), default conf/archive.yaml;
                      relative paths inside it are relative to its folder
  -q, --quiet         do not log each request
  --url URL           purge: the URL whose captures go
  --prefix URL*       purge: every URL beginning with this (SURT prefix)
  --before DATE       purge: only captures earlier than DATE (ISO 8601 or 14 digits)
  --after DATE        purge: only captures at or after DATE
  --dry-run           purge: list what would be erased, change nothing
  --daemon URL        import: PUT to the daemon at URL (http://HOST:PORT)
                      instead of finding out (default: the config's listen)
  --archive ID        cdxj: only the mementos of archive ID
  -h, --help          show this text
`;

const OPTIONS = {
  config: { type: 'string', short: 'c', default: 'conf/archive.yaml' },
  quiet: { type: 'boolean', short: 'q' },
  url: { type: 'string' },
  prefix: { type: 'string' },
  before: { type: 'string' },
  after: { type: 'string' },
  'dry-run': { type: 'boolean' },
  daemon: { type: 'string' },
  archive: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

function parseCliArgs(argv: string[]) {
  return parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
}

/** Runs the CLI with `argv` (without node and script). Exits the process on fatal errors. */
export async function main(argv: string[]): Promise<void> {
  let args: ReturnType<typeof parseCliArgs>;
  try {
    args = parseCliArgs(argv);
  } catch (err) {
    process.stderr.write(`memento-archive: ${(err as Error).message}\n\n${HELP}`);
    process.exit(2);
  }
  if (args.values.help) {
    process.stdout.write(HELP);
    return;
  }
  const command = args.positionals[0] ?? 'serve';
  if (!['serve', 'verify', 'reindex', 'purge', 'import', 'cdxj'].includes(command)) {
    process.stderr.write(`memento-archive: unknown command "${command}"\n\n${HELP}`);
    process.exit(2);
  }
  let config: ArchiveConfig;
  try {
    config = loadArchiveConfig(args.values.config!);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`memento-archive: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  if (command === 'verify') process.exit(await runVerify(config));
  if (command === 'reindex') process.exit(await runReindex(config));
  if (command === 'purge') {
    const bar = progressBar('purge');
    const say = (stream: NodeJS.WriteStream) => (line: string) => stream.write(line + '\n');
    process.exit(await runPurge(config, args.values, { out: say(process.stdout), err: say(process.stderr), progress: bar.progress, stopProgress: bar.stop }));
  }
  if (command === 'import') process.exit(await runImport(config, args.positionals.slice(1), { daemon: args.values.daemon }));
  if (command === 'cdxj') process.exit(await runCdxj(config, { archive: args.values.archive }));
  await serve(config, args.values.config!, args.values.quiet === true);
}

/** Says `line` on stderr (prefixed) and exits with `code`. */
function fail(line: string, code: number): never {
  process.stderr.write(`memento-archive: ${line}\n`);
  process.exit(code);
}

/**
 * `memento-archive serve`: opens the store (lock, crash recovery), listens,
 * prints where, logs one JSON line per request (unless `quiet`), and stops
 * on SIGTERM/SIGINT with a last log line. A data folder held by another
 * process, or an address in use, is one line on stderr and exit status 1.
 */
async function serve(config: ArchiveConfig, configFile: string, quiet: boolean): Promise<void> {
  const { logger: log, flush } = jsonLinesLogger(1);
  let store: ArchiveStore;
  try {
    // Recovery lines are logged even with --quiet: they say what happened to the data.
    store = await ArchiveStore.open(config, { log: (line) => log.info(line) });
  } catch (err) {
    if (err instanceof DataDirBusyError) fail(`${err.message}; a second daemon cannot share its data folder`, 1);
    if (err instanceof PurgeInterruptedError || err instanceof StaleIndexError) fail(err.message, 1);
    const e = err as NodeJS.ErrnoException;
    if (e.code && e.syscall) fail(`${config.dataDir}: ${e.message}`, 1);
    throw err;
  }
  const app = await buildArchiveServer(config, store, { log, quiet });
  let address: string;
  try {
    address = await app.listen({ host: config.listen.host, port: config.listen.port });
  } catch (err) {
    await store.close();
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'EADDRINUSE' || e.code === 'EADDRNOTAVAIL' || e.code === 'EACCES')
      fail(`cannot listen on ${formatHostPort(config.listen.host, config.listen.port)}: ${e.message}`, 1);
    throw err;
  }
  process.stdout.write(`memento-archive listening on ${address}\n`);
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping: no new connections; requests and captures in flight finish');
    await app.close();
    await store.close();
    log.info('stopped');
    flush();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGHUP', () => reread(configFile, config, log, app.access));
}

/**
 * SIGHUP (`systemctl reload`): reads the config file again and says what
 * it found: a mistake (`file:line: reason`; everything running stays), or
 * the access rules now in force (`access`: how many; they apply from the
 * next request on) and which other settings differ from the running ones
 * (`changed`: those take effect at the next start). Never stops the daemon.
 */
function reread(configFile: string, running: ArchiveConfig, log: ReturnType<typeof jsonLinesLogger>['logger'], access: AccessRules): void {
  try {
    const fresh = loadArchiveConfig(configFile);
    access.replace(fresh.access);
    const changed = (Object.keys(running) as (keyof ArchiveConfig)[]).filter((k) => k !== 'access' && JSON.stringify(running[k]) !== JSON.stringify(fresh[k]));
    log.info(
      { file: configFile, changed, access: fresh.access.length },
      changed.length
        ? 'SIGHUP: config read again; access rules in force; these settings take effect at the next start'
        : 'SIGHUP: config read again; access rules in force; nothing else changed',
    );
  } catch (err) {
    log.error({ file: configFile, error: (err as Error).message }, 'SIGHUP: config not read again; the running one stays');
  }
}

/** A cli-progress bar over bytes when stderr is a terminal; otherwise nothing. It ends at 100% when stopped. */
function progressBar(label: string): { progress?: Progress; stop(): void } {
  if (!process.stderr.isTTY) return { stop() {} };
  const bar = new cliProgress.SingleBar(
    {
      format: `${label} [{bar}] {percentage}% | {done}/{all} MiB | ETA {eta}s`,
      stream: process.stderr,
      hideCursor: true,
    },
    cliProgress.Presets.shades_classic,
  );
  const mib = (n: number) => (n / 1048576).toFixed(1);
  let total = 0;
  return {
    progress: (done, all) => {
      if (!total) bar.start(Math.max(1, all), 0, { done: mib(0), all: mib(all) });
      total = Math.max(1, all);
      bar.update(done, { done: mib(done), all: mib(all) });
    },
    stop: () => {
      if (!total) return;
      bar.update(total, { done: mib(total), all: mib(total) });
      bar.stop();
    },
  };
}

/** `memento-archive verify`: prints a summary and each problem; returns the exit code (0 ok, 1 problems). */
async function runVerify(config: ArchiveConfig): Promise<number> {
  let index: IndexDb;
  try {
    index = await IndexDb.open(path.join(config.dataDir, 'index.sqlite3'));
  } catch (err) {
    if (err instanceof StaleIndexError) fail(err.message, 1);
    throw err;
  }
  const bar = progressBar('verify');
  try {
    const r = await verify(index, path.join(config.dataDir, 'warcs'), { progress: bar.progress });
    bar.stop();
    for (const p of r.problems) process.stdout.write(`${r.ok ? 'note' : 'problem'}: ${p}\n`);
    process.stdout.write(
      `verify: ${r.ok ? 'OK' : 'FAILED'}: ${r.rows} index rows, ${r.records} WARC records in ${r.files} files (${r.bytes} bytes); ` +
        `${r.unindexed} response records not in the index (same-second captures superseded by a later one, in WARC files written before those were refused); ` +
        `${r.ok ? 'no problems' : `${r.problems.length} problem(s)`}\n`,
    );
    return r.ok ? 0 : 1;
  } finally {
    await index.close();
  }
}

/** `memento-archive reindex`: a new index from the WARC files, under the data folder's lock; returns the exit code. */
async function runReindex(config: ArchiveConfig): Promise<number> {
  let lock: DataDirLock;
  try {
    lock = await DataDirLock.acquire(config.dataDir, 'reindex');
  } catch (err) {
    if (err instanceof DataDirBusyError) fail(`${err.message}; stop it before reindex`, 1);
    throw err;
  }
  try {
    const indexFile = path.join(config.dataDir, 'index.sqlite3');
    const warcsDir = path.join(config.dataDir, 'warcs');
    let before = 0;
    if (existsSync(indexFile)) {
      const index = await IndexDb.open(indexFile, { anyUrlkeys: true });
      before = await index.count();
      await index.close();
    }
    const bar = progressBar('reindex');
    const r = await reindex(indexFile, warcsDir, { progress: bar.progress });
    bar.stop();
    for (const s of r.skipped) process.stdout.write(`skipped: ${s}\n`);
    process.stdout.write(`reindex: ${r.rows} mementos from ${r.records} WARC records in ${r.files} files (the old index had ${before} rows)\n`);
    return 0;
  } finally {
    await lock.release();
  }
}
