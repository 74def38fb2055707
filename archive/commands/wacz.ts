/**
 * `memento-archive wacz [--config F] [--url URL|PREFIX*] [--from D] [--to D] -o FILE.wacz`:
 * the selected mementos as a signed WACZ 1.1.1 package (archive/wacz/package.ts,
 * docs/evidence.md "WACZ packages"). It only reads the index and the WARC
 * files and takes no lock, so it runs beside the daemon (as `cdxj` and
 * `verify` do).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { inContext, OperatorError } from '#shared/operator-error.js';
import { urlPattern } from '../read/access-rules.js';
import { VisibleIndex } from '../read/visible-index.js';
import { type ArchiveConfig } from '../config.js';
import { dateRange } from './date-range.js';
import { openSigningKey } from '../evidence/signing-key.js';
import { isLocal } from '../spans.js';
import { TreeHeadSigner } from '../evidence/tree-heads.js';
import { LogAnchors } from '../evidence/checkpoint-anchor.js';
import { logOrigin } from '../evidence/tlog-config.js';
import { IndexDb } from '../store/index/index-db.js';
import { lockHolder } from '../store/lock.js';
import { type WaczSelection, writeWacz } from '../wacz/package.js';
import { say } from './terminal.js';

/** The options of `wacz` as parsed from the command line. */
export interface WaczOptions {
  url?: string;
  from?: string;
  to?: string;
  output?: string;
}

/**
 * The selection the options name.
 * @returns the selection, or the one-line reason it cannot be made
 */
export function waczSelection(o: WaczOptions): WaczSelection | string {
  const sel: WaczSelection = {};
  if (o.url !== undefined) {
    try {
      sel.pattern = urlPattern(o.url);
    } catch (err) {
      if (err instanceof OperatorError) return `--url ${JSON.stringify(o.url)}: ${err.message}`;
      throw err;
    }
  }
  const range = dateRange(o);
  if (typeof range === 'string') return range;
  if (range.from !== undefined) sel.from = range.from;
  if (range.to !== undefined) sel.to = range.to;
  return sel;
}

/**
 * Runs `wacz`: writes the package and one summary line on stdout.
 *
 * @returns the exit status: 0 written (possibly with no memento: a
 *   package of nothing), 2 bad options (nothing written), 1 the package
 *   cannot be made (no data folder, `reindex` or `purge` at work, the
 *   WARC files in a bucket, a damaged record, a key file that does not
 *   read, an output that cannot be written); one line on stderr. The
 *   last three are thrown as an OperatorError (exit status 1), said by the
 *   command line.
 */
export async function runWacz(config: ArchiveConfig, o: WaczOptions): Promise<number> {
  const sel = waczSelection(o);
  if (typeof sel === 'string') {
    say(`wacz: ${sel}`);
    return 2;
  }
  if (!o.output) {
    say('wacz: give the package to write with -o FILE.wacz');
    return 2;
  }
  if (!o.output.endsWith('.wacz')) {
    say(`wacz: -o ${JSON.stringify(o.output)}: a WACZ package's name ends in .wacz`);
    return 2;
  }
  if (existsSync(o.output)) {
    say(`wacz: ${o.output} exists; give a new name (nothing is overwritten)`);
    return 2;
  }
  if (config.warcStore) {
    say(
      `wacz: the WARC files are in s3://${config.warcStore.bucket}/${config.warcStore.prefix} (storage.warcs); wacz reads the data folder's WARC files only for now`,
    );
    return 1;
  }
  if (config.indexPostgres !== undefined) {
    say('wacz: the index is in PostgreSQL (storage.index); wacz reads the SQLite index of the data folder only for now');
    return 1;
  }
  const indexFile = path.join(config.dataDir, 'index.sqlite3');
  if (!existsSync(indexFile)) {
    say(`wacz: ${config.dataDir}: no index there (no archive yet?)`);
    return 1;
  }
  const holder = await lockHolder(config.dataDir);
  if (holder && (holder.what === 'reindex' || holder.what === 'purge')) {
    say(`wacz: ${holder.what} (pid ${holder.pid}) is rewriting the data folder; wait until it has finished`);
    return 1;
  }
  if (!existsSync(config.signingKeyFile)) {
    say(
      `wacz: ${config.signingKeyFile}: no signing key there; give wacz the signing_key_file the archive's log is signed with (the daemon makes it on its first start)`,
    );
    return 1;
  }
  let key;
  try {
    key = openSigningKey(config.signingKeyFile);
  } catch (err) {
    throw inContext(err, { before: 'wacz: ' });
  }
  let index: IndexDb;
  try {
    index = await IndexDb.open(indexFile);
  } catch (err) {
    say(`wacz: cannot open the index in ${config.dataDir}: ${(err as Error).message}`);
    return 1;
  }
  try {
    // A tree head is signed for the package when the newest does not cover the log (as any replica may sign).
    // Never after the log was cut back below its last published checkpoint (the anchor beside the key file).
    const anchors = new LogAnchors(config.signingKeyFile, key, index.log);
    const heads = new TreeHeadSigner(
      index.log,
      key,
      config.archives.filter(isLocal).map((a) => a.id),
      undefined,
      {
        origin: (a) => logOrigin(config, a),
        check: (a, size) => anchors.check(a, size),
      },
    );
    await heads.checkKey(config.signingKeyFile);
    const r = await writeWacz({
      index,
      warcsDir: path.join(config.dataDir, 'warcs'),
      visible: await VisibleIndex.open(index, config.access, config.archives, false),
      key,
      selection: sel,
      out: o.output,
      log: { store: index.log, heads, tsaUrl: config.tsaUrl },
      publishRequests: config.publishRequests,
    });
    const extra = [
      r.originals ? `${r.originals} revisited original(s) outside the selection added` : '',
      r.hidden ? `${r.hidden} memento(s) the access rules hide left out` : '',
      r.revisitsOfHidden ? `${r.revisitsOfHidden} revisit(s) of hidden mementos left out` : '',
      r.unlogged ? `${r.unlogged} memento(s) without an evidence log entry (indexed before the log was kept): no proof` : '',
      r.later ? `${r.later} memento(s) captured while the package was written left out` : '',
    ].filter(Boolean);
    process.stdout.write(
      `wacz: ${o.output}: ${r.mementos} memento(s), ${r.pages} page(s), ${r.proofs} proof(s), ${r.receipts} receipt(s), ${r.bytes} bytes${extra.length ? '; ' + extra.join('; ') : ''}\n`,
    );
    return 0;
  } catch (err) {
    throw inContext(err, {
      before: 'wacz: ',
      after: '; no package written',
      otherwise: (e) => (e.code && e.syscall ? `wacz: ${o.output}: ${e.message}; no package written` : undefined),
    });
  } finally {
    await index.close();
  }
}
