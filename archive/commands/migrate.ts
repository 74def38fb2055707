/**
 * `memento-archive migrate [--config FILE] [--from sqlite] --to postgres://… [--warcs s3://bucket/prefix/]`:
 * moves a one-host archive (the SQLite index and the WARC folder of the
 * config's `data_dir`) to the shared setup (docs/scale-out.md "Moving a
 * one-host archive"): with `--warcs`, every WARC file is uploaded,
 * unchanged, as the object `<prefix>migrated/<file name>` (streamed; a
 * multipart upload when large); then every index row is copied into the
 * PostgreSQL database in one transaction (copy-index.ts), `warc_file`
 * renamed to the object's name, with the full-text index's texts (so the
 * new daemons search at once instead of extracting every text again from
 * the bucket). The source is only read: a failure leaves
 * it as it was (and the database as it was; objects uploaded stay and are
 * uploaded again by the next run).
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { inContext } from '#shared/operator-error.js';
import type { ArchiveConfig } from '../config.js';
import { copyIndexToPostgres, targetHolds } from '../store/index/copy-index.js';
import { IndexDb } from '../store/index/index-db.js';
import { DataDirLock } from '../store/lock.js';
import { sqliteIndexFile } from '../store/index/open-index.js';
import { checkNoPurgePending } from '../store/upkeep/purge.js';
import { parseS3Url, withoutPassword } from '../storage-config.js';
import { listWarcFiles } from '../store/warcs/warc-files.js';
import { mib, progressBar, say } from './terminal.js';

/** The folder of the bucket prefix the migrated WARC files go to. */
export const MIGRATED_FOLDER = 'migrated';

/** The options of `migrate` as parsed from the command line. */
export interface MigrateOptions {
  from?: string;
  to?: string;
  warcs?: string;
  's3-endpoint'?: string;
  's3-region'?: string;
}

/**
 * The `next:` advice `migrate` prints after a copy: one line, then the
 * exact block of `archive.yaml` to paste into the config of every daemon
 * on the shared setup (YAML; the keys of archive/storage-config.ts):
 * `signing_key_file` (the key the moved evidence log is signed with),
 * `storage.index` (the database URL with its password left out, and a
 * comment saying where it goes), and with `--warcs` `storage.warcs` and
 * `storage.s3` as the upload used them (`endpoint` and
 * `force_path_style: true` when `--s3-endpoint` was given, else none: AWS
 * S3), so that the daemon reads the bucket the files went to.
 */
export function nextAdvice(o: MigrateOptions & { to: string }, signingKeyFile: string): string {
  const lines = [
    'next: paste this into the config (archive.yaml) of every daemon of the shared setup, start one, run memento-archive verify:',
    `signing_key_file: ${JSON.stringify(signingKeyFile)}   # the key the evidence log is signed with (keep it mode 0600; the same file for every daemon)`,
    'storage:',
  ];
  const shown = new URL(o.to);
  const hadPassword = shown.password !== '';
  shown.password = '';
  lines.push(`  index: ${shown.href}${hadPassword ? '   # password left out: give it as PGPASSWORD or in ~/.pgpass, or write it in here' : ''}`);
  if (o.warcs !== undefined) {
    const endpoint = o['s3-endpoint']?.replace(/\/+$/, '');
    lines.push(`  warcs: ${o.warcs}`, '  s3:');
    if (endpoint !== undefined) lines.push(`    endpoint: ${endpoint}`);
    else lines.push('    # no endpoint: AWS S3 itself');
    lines.push(`    region: ${o['s3-region'] ?? 'us-east-1'}`, `    force_path_style: ${endpoint !== undefined}`);
    lines.push('  # replica: web1   # one name per daemon (default <host name>-<listen port>); set it when several run on one host');
  }
  return lines.join('\n') + '\n';
}

/** The checked options, or the one-line reason they are wrong. */
function checkOptions(config: ArchiveConfig, o: MigrateOptions): { to: string; warcs?: { bucket: string; prefix: string } } | string {
  if (o.from !== undefined && o.from !== 'sqlite') return `--from ${JSON.stringify(o.from)}: the only source is sqlite (the index file in data_dir)`;
  if (o.to === undefined) return 'give the target index: --to postgres://user@host:5432/database';
  if (!/^postgres(ql)?:\/\/\S+$/.test(o.to)) return `--to must be a URL like postgres://user@host:5432/archive, not ${JSON.stringify(o.to)}`;
  if (o.warcs === undefined) {
    if (o['s3-endpoint'] !== undefined || o['s3-region'] !== undefined) return '--s3-endpoint and --s3-region go with --warcs s3://bucket/prefix/';
    return { to: o.to };
  }
  const where = parseS3Url(o.warcs);
  if (!where) return `--warcs must be a URL like s3://bucket/prefix/, not ${JSON.stringify(o.warcs)}`;
  if (config.warcStore)
    return `the WARC files are already in s3://${config.warcStore.bucket}/${config.warcStore.prefix} (storage.warcs): migrate the index alone (no --warcs)`;
  if (o['s3-endpoint'] !== undefined && !/^https?:\/\/[^/\s?#@]+\/?$/.test(o['s3-endpoint']))
    return `--s3-endpoint must be a URL like http://127.0.0.1:9000, not ${JSON.stringify(o['s3-endpoint'])}`;
  return { to: o.to, warcs: where };
}

/**
 * The WARC files of the data folder, each with its object name
 * (`migrated/<file name>`) and size.
 * @returns the files, or the one-line reason one cannot be moved
 */
async function filesToMove(warcsDir: string): Promise<{ file: string; object: string; size: number }[] | string> {
  const out: { file: string; object: string; size: number }[] = [];
  const { objectArchive } = await import('../store/warcs/s3-warcs.js');
  for (const [archiveId, files] of await listWarcFiles(warcsDir)) {
    for (const file of files) {
      const name = path.posix.basename(file);
      if (objectArchive(`${MIGRATED_FOLDER}/${name}`) !== archiveId)
        return `${path.join(warcsDir, file)}: not a name this archive writes (<archive id>-<14 digits>-<serial>-<hex>.warc.gz) in its archive's folder; the daemon could not find it in the bucket`;
      out.push({ file, object: `${MIGRATED_FOLDER}/${name}`, size: (await stat(path.join(warcsDir, file))).size });
    }
  }
  return out;
}

/**
 * Runs `migrate` (module comment). Prints a progress bar on stderr when it
 * is a terminal, then one summary line and what to change in the config on
 * stdout; a refusal is one line on stderr.
 *
 * @returns the exit status: 0 done; 1 nothing done (the target holds rows,
 *   an upload failed); 2 bad options
 * @throws OperatorError (exit status 1, nothing done) when the data folder
 *   is in use, a purge is unfinished, the index is stale, the target cannot
 *   be reached or refuses the copy
 */
export async function runMigrate(config: ArchiveConfig, o: MigrateOptions): Promise<number> {
  const opts = checkOptions(config, o);
  if (typeof opts === 'string') {
    say(`migrate: ${opts}`);
    return 2;
  }
  const indexFile = sqliteIndexFile(config.dataDir);
  const warcsDir = path.join(config.dataDir, 'warcs');
  let lock: DataDirLock;
  try {
    lock = await DataDirLock.acquire(config.dataDir, 'migrate');
  } catch (err) {
    throw inContext(err, { before: 'migrate: ', after: '; stop it before migrate' });
  }
  const bar = progressBar('migrate WARC files');
  const started = performance.now();
  try {
    checkNoPurgePending(config.dataDir);
    // Opened once as the daemon would: refused when its urlkeys are stale; its files checked against the folder.
    const source = await IndexDb.open(indexFile);
    const rows = await source.count();
    const named = await source.files();
    await source.close();
    // Refused before anything is uploaded (the copy checks again in its transaction).
    const held = await targetHolds(opts.to);
    if (held) {
      say(`migrate: ${withoutPassword(opts.to)}: ${held}; migrate copies into an empty index only; nothing was changed`);
      return 1;
    }
    let moved = 0;
    let bytes = 0;
    const objects = new Map<string, string>();
    if (opts.warcs) {
      const files = await filesToMove(warcsDir);
      if (typeof files === 'string') {
        say(`migrate: ${files}; nothing was changed`);
        return 1;
      }
      const have = new Set(files.map((f) => f.file));
      const gone = named.filter((n) => !have.has(n.warc_file));
      if (gone.length) {
        say(
          `migrate: ${gone.length} WARC file(s) named by index rows are missing from ${warcsDir} (${gone[0].warc_file}, …): run memento-archive verify; nothing was changed`,
        );
        return 1;
      }
      const total = files.reduce((n, f) => n + f.size, 0);
      const { S3WarcStore } = await import('../store/warcs/s3-warcs.js');
      const endpoint = o['s3-endpoint']?.replace(/\/+$/, '');
      const bucket = new S3WarcStore({
        ...opts.warcs,
        ...(endpoint ? { endpoint } : {}),
        region: o['s3-region'] ?? 'us-east-1',
        forcePathStyle: endpoint !== undefined,
        replica: MIGRATED_FOLDER,
      });
      try {
        for (const f of files) {
          await bucket.putStream(f.object, createReadStream(path.join(warcsDir, f.file)), (sent) => bar.update(bytes + sent, total));
          bytes += f.size;
          moved++;
          objects.set(f.file, f.object);
        }
      } catch (err) {
        bar.stop(false);
        say(
          `migrate: upload to ${bucket.location} failed after ${moved} file(s): ${(err as Error).name} ${(err as Error).message}; the index was not copied (run migrate again)`,
        );
        return 1;
      } finally {
        await bucket.close();
      }
      bar.stop();
    }
    const rowBar = progressBar('migrate index rows', 'rows');
    const counts = await copyIndexToPostgres(indexFile, opts.to, {
      rewrite: (table, row) => {
        if (table === 'memento' && objects.size) row.warc_file = objects.get(row.warc_file as string) ?? row.warc_file;
      },
      progress: rowBar.update,
    }).finally(() => rowBar.stop());
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    const tables = [...counts].map(([t, n]) => `${n} ${t} row(s)`).join(', ');
    const target = opts.warcs ? `s3://${opts.warcs.bucket}/${opts.warcs.prefix}${MIGRATED_FOLDER}/` : '';
    process.stdout.write(
      `migrate: ${tables} (of ${rows} mementos) to ${withoutPassword(opts.to)}` +
        (opts.warcs ? `; ${moved} WARC file(s) (${mib(bytes)} MiB) to ${target}` : '; the WARC files stay in ' + warcsDir) +
        ` (${seconds} s)\n` +
        nextAdvice({ ...o, to: opts.to }, config.signingKeyFile),
    );
    return 0;
  } catch (err) {
    bar.stop(false);
    throw inContext(err, {
      before: 'migrate: ',
      after: '; the index was not copied',
      otherwise: (e) => (e.code ? `migrate: ${e.message}; the index was not copied` : undefined),
    });
  } finally {
    await lock.release();
  }
}
