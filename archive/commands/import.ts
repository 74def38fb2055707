/**
 * `memento-archive import [--config FILE] [--daemon URL] FILE.warc[.gz]|FILE.wacz...`:
 * WARC files (wget --warc-file, Heritrix, browsertrix, other archives,
 * this archive's own), and the WARC files inside WACZ packages
 * (archive/import/wacz-input.ts), → mementos (archive/import/importer.ts).
 *
 * With no daemon running, it takes the data folder's lock and stores
 * captures itself (crash recovery first, as the daemon would). When the
 * daemon holds the lock, it PUTs the captures to it at the config's
 * `listen` address (or `--daemon URL`), so that the daemon serves them at
 * once; `reindex` or `purge` holding the lock is an error. Either way each
 * capture is durable before it counts.
 *
 * Prints a line per record not imported (refused, unresolved revisit,
 * damaged) and a summary line on stdout; a damaged file is one line on
 * stderr naming the file and the offset (what was imported before the
 * damage stays; the next file is read). A progress bar on stderr when it
 * is a terminal. A WACZ package is checked first (its hashes, signature and
 * proofs: archive/import/wacz-integrity.ts) and refused when anything does
 * not match, unless `acceptDamaged` (`--accept-damaged`), which imports it
 * and marks its captures (their log entries say so). Exit status 0, 1 when
 * a file or record was damaged or the import stopped, 2 for a file that
 * cannot be opened or a package refused (nothing imported).
 */
import { existsSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { inContext } from '#shared/operator-error.js';
import { VisibleIndex } from '../read/visible-index.js';
import type { ArchiveConfig } from '../config.js';
import { type Via, waczVia } from '../evidence/leaf.js';
import { openSigningKey } from '../evidence/signing-key.js';
import { Importer } from '../import/importer.js';
import { checkWaczIntegrity, integrityLine } from '../import/wacz-integrity.js';
import { type CaptureSink, DaemonSink, daemonAddress, StoreSink } from '../import/sinks.js';
import { WarcDamage, WarcFile } from '../import/warc-input.js';
import { isZip, openWacz, type WaczPackage } from '../import/wacz-input.js';
import { DataDirBusyError, lockHolder } from '../store/lock.js';
import { ArchiveStore } from '../store/store.js';
import { mib, progressBar, say } from './terminal.js';

const count = (n: number, one: string, many = one + 's') => `${n} ${n === 1 ? one : many}`;

/**
 * Runs `fn` with warcio's `console.warn` about stray bytes after a record
 * ("Content-Length Too Small…") silenced: such damage is reported as one
 * line per file here.
 */
async function withoutWarcioWarnings<T>(fn: () => Promise<T>): Promise<T> {
  const warn = console.warn;
  console.warn = (...args: unknown[]) => {
    if (!String(args[0]).startsWith('Content-Length Too Small')) warn(...args);
  };
  try {
    return await fn();
  } finally {
    console.warn = warn;
  }
}

/** The first `n` bytes of the file at `file` (fewer when it is shorter). @throws the file system's error */
async function firstBytes(file: string, n: number): Promise<Buffer> {
  const fh = await open(file, 'r');
  try {
    const { buffer, bytesRead } = await fh.read(Buffer.alloc(n), 0, n, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

/** The way in: the store under the lock (its index SQLite or PostgreSQL, as the config says), or the daemon holding it; `null` after saying why neither (exit 1). @throws an OperatorError when the store cannot be opened */
async function openSink(config: ArchiveConfig, daemon: string | undefined): Promise<CaptureSink | null> {
  try {
    return await chooseSink(config, daemon);
  } catch (err) {
    throw inContext(err, { otherwise: (e) => (e.code ? `${config.dataDir}: ${e.message}` : undefined) });
  }
}

async function chooseSink(config: ArchiveConfig, daemon: string | undefined): Promise<CaptureSink | null> {
  let url = daemon;
  if (!url) {
    try {
      const store = await ArchiveStore.open(config, { holder: 'import', log: (line) => process.stdout.write(line + '\n') });
      return new StoreSink(store);
    } catch (err) {
      if (!(err instanceof DataDirBusyError)) throw err;
      const holder = await lockHolder(config.dataDir);
      if (holder && holder.what !== 'daemon') {
        say(`${err.message}; wait until it has finished`);
        return null;
      }
      url = daemonAddress(config) ?? undefined;
      if (!url) {
        say(`${err.message} and listens on port 0 (any free port): give its address with --daemon http://HOST:PORT`);
        return null;
      }
    }
  }
  if (!/^http:\/\/[^/]+\/?$/.test(url)) {
    say(`--daemon ${JSON.stringify(url)} is not http://HOST:PORT`);
    return null;
  }
  return DaemonSink.open(url, config);
}

/** This archive's public key (SPKI DER), when its key file is there and readable; `null` otherwise (the check then cannot say whether a package is this archive's). */
function ownPublicKey(config: ArchiveConfig): Buffer | null {
  try {
    return existsSync(config.signingKeyFile) ? openSigningKey(config.signingKeyFile).publicKeyDer : null;
  } catch {
    return null;
  }
}

/**
 * The integrity check of each WACZ package (archive/import/wacz-integrity.ts),
 * before anything is imported: one `wacz:` line each on stdout (what was
 * and was not checked). A package that fails it is refused in one line on
 * stderr (`null`: nothing is imported), unless `acceptDamaged`: then each
 * mismatch is a `damaged:` line and its captures are marked.
 * @returns how the captures of each WARC file in a package came in (leaf.ts `waczVia`), by the file's name
 */
async function checkPackages(config: ArchiveConfig, packages: WaczPackage[], acceptDamaged: boolean): Promise<Map<string, Via> | null> {
  const vias = new Map<string, Via>();
  const own = packages.length ? ownPublicKey(config) : null;
  for (const p of packages) {
    const r = await checkWaczIntegrity(p, own);
    process.stdout.write(`wacz: ${integrityLine(r)}\n`);
    if (r.damage.length && !acceptDamaged) {
      const more = r.damage.length > 1 ? ` (and ${r.damage.length - 1} more mismatch(es))` : '';
      say(`${p.file}: ${r.damage[0]}${more}; nothing imported (--accept-damaged imports it all the same, its captures marked as from a damaged package)`);
      return null;
    }
    for (const d of r.damage) process.stdout.write(`damaged: ${p.file}: ${d}\n`);
    for (const w of p.warcs) vias.set(w.file, waczVia(r.packageDigest, r.damage.length > 0));
  }
  return vias;
}

/**
 * Runs the import of `files` (see the module comment).
 * @returns the exit code
 */
export async function runImport(config: ArchiveConfig, files: string[], opts: { daemon?: string; acceptDamaged?: boolean } = {}): Promise<number> {
  if (!files.length) {
    say('import needs one or more WARC files or WACZ packages: memento-archive import [--config FILE] FILE.warc[.gz]|FILE.wacz...');
    return 2;
  }
  const warcs: WarcFile[] = [];
  const packages: WaczPackage[] = [];
  const closePackages = () => packages.forEach((p) => p.close());
  for (const f of files) {
    try {
      if (isZip(await firstBytes(f, 4))) {
        const p = await openWacz(f);
        packages.push(p);
        warcs.push(...p.warcs);
      } else warcs.push(await WarcFile.open(f));
    } catch (err) {
      closePackages();
      throw inContext(err, { after: '; nothing imported', status: 2, otherwise: (e) => `${f}: cannot read it (${e.code ?? e.message}); nothing imported` });
    }
  }
  const vias = await checkPackages(config, packages, opts.acceptDamaged === true).catch((err: unknown) => {
    closePackages();
    throw err;
  });
  if (!vias) {
    closePackages();
    return 2;
  }
  const sink = await openSink(config, opts.daemon).catch((err: unknown) => {
    closePackages();
    throw err;
  });
  if (!sink) {
    closePackages();
    return 1;
  }
  const total = warcs.reduce((n, w) => n + w.size, 0);
  const bar = progressBar('import');
  let before = 0;
  let current: WarcFile | null = null;
  const importer = new Importer(sink, {
    maxHeadBytes: config.maxHeadBytes,
    visible: await VisibleIndex.open(sink.index, config.access, config.archives, false),
    note: (line) => process.stdout.write(line + '\n'),
    viaOf: (file) => vias.get(file),
    progress: () => {
      const c = importer.counts;
      bar.update(before + (current?.bytesRead ?? 0), total, `${c.imported} new, ${c.revisits} revisits, ${c.duplicates} duplicates`);
    },
  });
  const started = performance.now();
  let stopped: string | null = null;
  try {
    for (const w of warcs) {
      current = w;
      try {
        await withoutWarcioWarnings(() => importer.importFile(w));
      } catch (err) {
        if (!(err instanceof WarcDamage)) throw err;
        importer.counts.errors++;
        say(`${err.message}; what comes before that offset is imported, nothing after it is read`);
      }
      before += w.size;
    }
    await withoutWarcioWarnings(() => importer.finish());
  } catch (err) {
    stopped = (err as Error).message;
    importer.counts.errors++;
  } finally {
    bar.stop(!stopped);
    closePackages();
    await sink.close();
  }
  if (stopped) say(`import stopped: ${stopped}`);
  const c = importer.counts;
  const seconds = (performance.now() - started) / 1000;
  process.stdout.write(
    `import: ${count(c.files, 'file')}, ${count(c.records, 'WARC record')} (${mib(total)} MiB, ${seconds.toFixed(1)} s): ` +
      `${count(c.imported, 'new memento')}, ${count(c.revisits, 'revisit memento')}, ${count(c.duplicates, 'duplicate')}, ` +
      `${count(c.revisitsResolved, 'revisit record')} resolved, ${count(c.revisitsUnresolved, 'revisit record')} unresolved (skipped), ${c.refused} refused; ` +
      `skipped ${c.skipped.resource} resource, ${c.skipped.metadata} metadata, ${c.skipped.other} other; ` +
      `${count(c.errors, 'error')}; ${sink.via}\n`,
  );
  return c.errors ? 1 : 0;
}
