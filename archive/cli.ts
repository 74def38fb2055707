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
 *   memento-archive search-export [--config conf/archive.yaml] -o FILE.ndjson|- [--index NAME] [--base URL] [--archive ID] [--from DATE] [--to DATE] [--after-row N]
 *   memento-archive verify-receipt FILE [--record WARC] [--key KEY] [--witness VKEY]... [--quorum N] [--tsa-ca PEM]
 *   memento-archive witness [--config conf/witness.yaml]   (its own config file)
 *
 * Bad arguments or a config with a mistake: one line on stderr, exit
 * status 2. An error an operator can act on (shared/operator-error.ts,
 * thrown by a command with what it means there): its one line and its exit
 * status. A command that reads an archive, run where its data folder is
 * missing, and any error a command did not expect (a bug): one line on
 * stderr (shared/cli-error.ts; MEMENTO_DEBUG=1 adds the stack), exit status 1.
 */
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { exitWithErrorLine } from '#shared/cli-error.js';
import { OperatorError } from '#shared/operator-error.js';
import { say } from './commands/terminal.js';
import { type ArchiveConfig, loadArchiveConfig } from './config.js';
import { loadWitnessConfig } from './evidence/witness-config.js';

const HELP = `usage: memento-archive [serve|verify|reindex|purge] [--config FILE]
       memento-archive import [--config FILE] [--daemon URL] [--accept-damaged] FILE.warc[.gz]|FILE.wacz...
       memento-archive cdxj [--config FILE] [--archive ID]
       memento-archive migrate [--config FILE] [--from sqlite] --to postgres://...
                       [--warcs s3://bucket/prefix/ [--s3-endpoint URL] [--s3-region R]]
       memento-archive wacz [--config FILE] [--url URL|PREFIX*] [--from DATE] [--to DATE] -o FILE.wacz
       memento-archive search-export [--config FILE] -o FILE.ndjson|- [--index NAME] [--base URL]
                       [--archive ID] [--from DATE] [--to DATE] [--after-row N]
       memento-archive verify-receipt FILE [--record WARC] [--key KEY|--config FILE]
                       [--witness VKEY]... [--quorum N] [--tsa-ca PEM]
       memento-archive witness [--config FILE] [--quiet]

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
                   data_dir) to the shared setup: every index row (and the
                   full-text index's texts) into the empty PostgreSQL
                   database of --to (one transaction), and
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
  search-export    the full-text index as the NDJSON body of an OpenSearch /
                   Elasticsearch Bulk API request (POST /_bulk): an index
                   action and a document (URL, Memento-Datetime, URI-M,
                   title, text…) for each memento with a text that the
                   access rules show now; a stable _id per memento, so an
                   export sent again replaces the documents. Safe while the
                   daemon runs. Ends with the last row id read, for
                   --after-row next time.
  verify-receipt FILE
                   check a capture's receipt (GET /<id>/receipt/<ts>/<URL>)
                   offline: its checkpoint is signed by the log's key (--key,
                   else the config's signing_key_file), cosigned by the
                   witnesses trusted (--witness, else the config's), its
                   inclusion proof leads from the entry to the checkpoint's
                   root, its RFC 3161 time-stamps check (chained to --tsa-ca
                   when given); with --record, the WARC record (GET
                   /<id>/record/<ts>/<URL>) is the one the entry names.
                   Exit code 0 OK, 1 it does not check out.
  witness          run a C2SP tlog-witness for other archives' logs, with its
                   own config file (default conf/witness.yaml: listen, name,
                   key_file, state_dir, logs): it cosigns a log's checkpoint
                   only when it is consistent with the last one it cosigned
                   for that log (POST /add-checkpoint), and serves that
                   checkpoint to monitors (GET /<origin SHA-256>/checkpoint).
                   Prints its address and its verifier key, the line a log
                   lists under witnesses:. Its key file is made on first
                   start (mode 0600); one witness per state folder.

options:
  -c, --config FILE   archive config (YAML), default conf/archive.yaml (witness:
                      its own, default conf/witness.yaml); relative paths
                      inside it are relative to its folder
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
  --archive ID        cdxj, search-export: only the mementos of archive ID
  --from sqlite       migrate: the source, the SQLite index (the only one)
  --to URL            migrate: the PostgreSQL database (postgres://...)
  --warcs URL         migrate: the bucket and prefix (s3://bucket/prefix/)
  --s3-endpoint URL   migrate: the S3-compatible store's URL (omit for AWS;
                      given, path-style requests are used)
  --s3-region R       migrate: the store's region (default us-east-1)
  --url URL|PREFIX*   wacz: one URL, or every URL beginning with PREFIX
  --from DATE         wacz, search-export: mementos at or after DATE (ISO 8601,
                      or 1 to 14 digits yyyyMMddhhmmss: the first second they begin)
  --to DATE           wacz, search-export: mementos at or before DATE (digits:
                      the last second they begin, --to 2025 is all of 2025)
  -o, --output FILE   wacz: the package to write (a new file ending in .wacz);
                      search-export: a new file, or - for stdout
  --index NAME        search-export: the index the documents go to (default
                      memento-archive)
  --base URL          search-export: the archive's address before the URI-Ms
                      (default: base_url, else paths from the root)
  --after-row N       search-export: only texts of rows after N (the last row
                      a former export said)
  --record WARC       verify-receipt: the memento's WARC record, to check too
  --key KEY           verify-receipt: the log's key: its verifier key
                      (<origin>+<key ID>+<base64>), a PEM public key, or
                      /log's base64 public_key; inline or in a file
  --witness VKEY      verify-receipt: a witness's verifier key to trust
                      (repeat for each); --quorum N of them must have cosigned
                      (default: all given)
  --tsa-ca PEM        verify-receipt: certificates a time-stamping authority
                      must chain to
  -h, --help          show this text

Every error is one line on stderr (MEMENTO_DEBUG=1 in the environment adds
the stack trace, for a bug report).
`;

const OPTIONS = {
  config: { type: 'string', short: 'c' },
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
  record: { type: 'string' },
  key: { type: 'string' },
  witness: { type: 'string', multiple: true },
  quorum: { type: 'string' },
  'tsa-ca': { type: 'string' },
  index: { type: 'string' },
  base: { type: 'string' },
  'after-row': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

function parseCliArgs(argv: string[]) {
  return parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
}

type Args = ReturnType<typeof parseCliArgs>;

/**
 * Each command: what it runs with the config and the arguments; a number is the exit code, `serve` runs until a signal.
 * A command's module is loaded only when it runs: `verify` or `cdxj` need not load the HTTP server, the AWS SDK or pg.
 */
const COMMANDS: Record<string, (config: ArchiveConfig, args: Args) => Promise<number | void>> = {
  serve: async (config, args) => (await import('./commands/serve.js')).serve(config, args.values.config!, args.values.quiet === true),
  verify: async (config) => (await import('./commands/verify.js')).runVerify(config),
  reindex: async (config) => (await import('./commands/reindex.js')).runReindex(config),
  purge: async (config, args) => (await import('./commands/purge.js')).runPurge(config, args.values),
  import: async (config, args) =>
    (await import('./commands/import.js')).runImport(config, args.positionals.slice(1), {
      daemon: args.values.daemon,
      acceptDamaged: args.values['accept-damaged'],
    }),
  cdxj: async (config, args) => (await import('./commands/cdxj.js')).runCdxj(config, { archive: args.values.archive }),
  migrate: async (config, args) => (await import('./commands/migrate.js')).runMigrate(config, args.values),
  wacz: async (config, args) => (await import('./commands/wacz.js')).runWacz(config, args.values),
  'search-export': async (config, args) => (await import('./commands/search-export.js')).runSearchExport(config, args.values),
};

/** The commands that read an archive made before (serve and import make a data folder that is not there yet). */
const READS_AN_ARCHIVE = new Set(['verify', 'reindex', 'purge', 'cdxj', 'migrate', 'wacz', 'search-export']);

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
  // Offline, with or without an archive's config.
  // Loaded only for it: it brings pkijs and warcio, which the daemon does without.
  if (command === 'verify-receipt') {
    let code: number;
    try {
      code = await (await import('./commands/verify-receipt.js')).runVerifyReceipt(args.positionals.slice(1), args.values);
    } catch (err) {
      exitWithErrorLine('memento-archive', command, err);
    }
    process.exit(code);
  }
  if (!Object.hasOwn(COMMANDS, command) && command !== 'witness') {
    process.stderr.write(`memento-archive: unknown command "${command}"\n\n${HELP}`);
    process.exit(2);
  }
  if (command === 'witness') {
    args.values.config ??= 'conf/witness.yaml';
    try {
      const witness = loadWitnessConfig(args.values.config);
      return await (await import('./commands/witness.js')).runWitness(witness, args.values.quiet === true);
    } catch (err) {
      exitWithErrorLine('memento-archive', 'witness', err);
    }
  }
  args.values.config ??= 'conf/archive.yaml';
  let config: ArchiveConfig;
  try {
    config = loadArchiveConfig(args.values.config);
  } catch (err) {
    exitWithErrorLine('memento-archive', command, err);
  }
  let code: number | void;
  try {
    code = await COMMANDS[command](config, args);
  } catch (err) {
    // Options are checked first (exit 2); what failed after them, in a data folder that is not there, is said as such
    // (unless the command said in the whole line what it was).
    if (!(err instanceof OperatorError && err.whole) && READS_AN_ARCHIVE.has(command) && !existsSync(config.dataDir)) {
      say(`${command}: ${config.dataDir}: no such data folder (data_dir of ${args.values.config}); nothing was changed`);
      process.exit(1);
    }
    exitWithErrorLine('memento-archive', command, err);
  }
  if (code !== undefined) process.exit(code);
}
