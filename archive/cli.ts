/**
 * `memento-archive`: the archive daemon's command line. It reads the
 * arguments and the config and hands them to the command, one module each
 * in archive/commands/:
 *
 *   memento-archive [serve] [--config conf/archive.yaml]
 *   memento-archive verify  [--config conf/archive.yaml]
 *   memento-archive reindex [--config conf/archive.yaml]
 *   memento-archive purge   [--config conf/archive.yaml] --url URL | --prefix URL* [--before DATE] [--after DATE] [--dry-run]
 *   memento-archive import  [--config conf/archive.yaml] [--daemon URL] [--accept-damaged] FILE.warc[.gz]|FILE.wacz...
 *   memento-archive cdxj    [--config conf/archive.yaml] [--archive ID]
 *   memento-archive migrate [--config conf/archive.yaml] [--from sqlite] --to postgres://… [--warcs s3://bucket/prefix/ [--s3-endpoint URL] [--s3-region R]]
 *   memento-archive wacz    [--config conf/archive.yaml] [--url URL|PREFIX*] [--from DATE] [--to DATE] -o FILE.wacz
 *
 * Bad arguments or a config with a mistake: one line on stderr, exit
 * status 2.
 */
import { parseArgs } from 'node:util';
import { ConfigError } from '#shared/config.js';
import { runCdxj } from './commands/cdxj.js';
import { runImport } from './commands/import.js';
import { runMigrate } from './commands/migrate.js';
import { runPurge } from './commands/purge.js';
import { runReindex } from './commands/reindex.js';
import { serve } from './commands/serve.js';
import { say } from './commands/terminal.js';
import { runVerify } from './commands/verify.js';
import { runWacz } from './commands/wacz.js';
import { type ArchiveConfig, loadArchiveConfig } from './config.js';

const HELP = `usage: memento-archive [serve|verify|reindex|purge] [--config FILE]
       memento-archive import [--config FILE] [--daemon URL] [--accept-damaged] FILE.warc[.gz]|FILE.wacz...
       memento-archive cdxj [--config FILE] [--archive ID]
       memento-archive migrate [--config FILE] [--from sqlite] --to postgres://...
                       [--warcs s3://bucket/prefix/ [--s3-endpoint URL] [--s3-region R]]
       memento-archive wacz [--config FILE] [--url URL|PREFIX*] [--from DATE] [--to DATE] -o FILE.wacz

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
  reindex          rebuild the index (index.sqlite3, or the rows of the
                   PostgreSQL index, replaced in one transaction) from the
                   WARC files alone. Stop the daemon first. Damaged or
                   partial records are skipped and listed. A progress bar is
                   shown when stderr is a terminal.
  purge            erase captures for good (takedown, GDPR): every WARC file
                   holding one is rewritten without its records (and their
                   request records; an object in a bucket is replaced by
                   one without them), the index follows, and verify passes
                   after. --url URL (one URL) or --prefix URL* (every URL
                   under it), optionally --before DATE / --after DATE (the
                   captures earlier than / at or after). Stop the daemon
                   first. --dry-run says what would go and changes nothing.
  import FILE...   WARC 1.0/1.1 files (plain or .gz), and the WARC files inside
                   WACZ packages (.wacz), → mementos, with the
                   rules of a capture PUT (span, dedup, same second):
                   response records with their request records, revisit
                   records resolved to the memento they repeat; resource,
                   metadata and other records skipped and counted. With no
                   daemon running it locks the data folder and stores the
                   captures itself; when the daemon runs, it PUTs them to
                   the daemon. Prints refused records and a summary; a
                   damaged file is one line naming the file and offset
                   (what came before it stays imported), exit code 1. A
                   WACZ package is checked first (the hashes of
                   datapackage.json, its signature, its inclusion proofs);
                   one that does not match is refused (exit code 2).
  cdxj             the index as CDXJ on stdout (pywb / OutbackCDX format,
                   sorted bytewise); safe while the daemon runs.
  migrate          move a one-host archive (index.sqlite3 and warcs/ of
                   data_dir) to the shared setup: every index row into the
                   empty PostgreSQL database of --to (one transaction), and
                   with --warcs every WARC file uploaded unchanged to
                   <prefix>migrated/ in the bucket. Stop the daemon first.
                   The source is only read. Then set storage.index (and
                   storage.warcs) in the config and run verify.
  wacz             write a WACZ 1.1.1 package (ReplayWeb.page opens it) of the
                   mementos of --url URL (or every URL under PREFIX*), from
                   --from DATE to --to DATE (both included; every memento when
                   none is given): their WARC records as stored, a CDXJ index,
                   the HTML pages, the evidence log's inclusion proofs, and a
                   manifest signed with the archive's Ed25519 key. What the
                   access rules hide is left out. Safe while the daemon runs.

options:
  -c, --config FILE   archive config (YAML), default conf/archive.yaml;
                      relative paths inside it are relative to its folder
  -q, --quiet         do not log each request
  --url URL           purge: the URL whose captures go (wacz: see below)
  --prefix URL*       purge: every URL beginning with this (SURT prefix)
  --before DATE       purge: only captures earlier than DATE (ISO 8601 or 14 digits)
  --after DATE        purge: only captures at or after DATE
  --dry-run           purge: list what would be erased, change nothing
  --daemon URL        import: PUT to the daemon at URL (http://HOST:PORT)
                      instead of finding out (default: the config's listen)
  --accept-damaged    import: import a WACZ package that fails its integrity
                      check all the same; its captures' log entries say so
  --archive ID        cdxj: only the mementos of archive ID
  --from sqlite       migrate: the source, the SQLite index (the only one)
  --to URL            migrate: the PostgreSQL database (postgres://...)
  --warcs URL         migrate: the bucket and prefix (s3://bucket/prefix/)
  --s3-endpoint URL   migrate: the S3-compatible store's URL (omit for AWS;
                      given, path-style requests are used)
  --s3-region R       migrate: the store's region (default us-east-1)
  --url URL|PREFIX*   wacz: one URL, or every URL beginning with PREFIX
  --from DATE         wacz: mementos at or after DATE (ISO 8601, or 1 to 14
                      digits yyyyMMddhhmmss: the first second they begin)
  --to DATE           wacz: mementos at or before DATE (digits: the last
                      second they begin, --to 2025 is all of 2025)
  -o, --output FILE   wacz: the package to write (a new file ending in .wacz)
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
  'accept-damaged': { type: 'boolean' },
  archive: { type: 'string' },
  from: { type: 'string' },
  to: { type: 'string' },
  warcs: { type: 'string' },
  's3-endpoint': { type: 'string' },
  's3-region': { type: 'string' },
  output: { type: 'string', short: 'o' },
  help: { type: 'boolean', short: 'h' },
} as const;

function parseCliArgs(argv: string[]) {
  return parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
}

type Args = ReturnType<typeof parseCliArgs>;

/** Each command: what it runs with the config and the arguments; a number is the exit code, `serve` runs until a signal. */
const COMMANDS: Record<string, (config: ArchiveConfig, args: Args) => Promise<number | void>> = {
  serve: (config, args) => serve(config, args.values.config!, args.values.quiet === true),
  verify: (config) => runVerify(config),
  reindex: (config) => runReindex(config),
  purge: (config, args) => runPurge(config, args.values),
  import: (config, args) => runImport(config, args.positionals.slice(1), { daemon: args.values.daemon, acceptDamaged: args.values['accept-damaged'] }),
  cdxj: (config, args) => runCdxj(config, { archive: args.values.archive }),
  migrate: (config, args) => runMigrate(config, args.values),
  wacz: (config, args) => runWacz(config, args.values),
};

/** Runs the CLI with `argv` (without node and script). Exits the process when a command returns its exit code. */
export async function main(argv: string[]): Promise<void> {
  let args: Args;
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
  if (!Object.hasOwn(COMMANDS, command)) {
    process.stderr.write(`memento-archive: unknown command "${command}"\n\n${HELP}`);
    process.exit(2);
  }
  let config: ArchiveConfig;
  try {
    config = loadArchiveConfig(args.values.config!);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    say(err.message);
    process.exit(2);
  }
  const code = await COMMANDS[command](config, args);
  if (code !== undefined) process.exit(code);
}
