/**
 * `memento-archive verify [--config FILE]`: checks that the index (the
 * SQLite file, or the PostgreSQL database of `storage.index`) and the
 * WARC files (in the data folder, or the bucket of `storage.warcs`) agree
 * (archive/store/upkeep/maintenance.ts `verify`), and that the evidence log
 * matches both and its signed tree heads (archive/evidence/log-verify.ts),
 * its published checkpoints and the anchor beside the key file
 * (archive/evidence/checkpoint-verify.ts).
 * It only reads, so it runs beside the daemon.
 */
import { existsSync } from 'node:fs';
import { inContext } from '#shared/operator-error.js';
import { openSigningKey } from '../evidence/signing-key.js';
import { anchorDir } from '../evidence/checkpoint-anchor.js';
import { logOrigin } from '../evidence/tlog-config.js';
import { isLocal } from '../spans.js';
import type { ArchiveConfig } from '../config.js';
import { verify } from '../store/upkeep/maintenance.js';
import type { MementoIndex } from '../store/index/memento-index.js';
import { openIndex } from '../store/index/open-index.js';
import { openWarcStore } from '../store/warcs/open-warcs.js';
import { progressBar } from './terminal.js';

/**
 * Prints each problem (`problem: …`, or `note: …` when the check passes
 * anyway) and a summary line on stdout, with a progress bar on stderr
 * when it is a terminal.
 *
 * @returns the exit code: 0 no problems, 1 problems
 * @throws OperatorError (exit status 1) for a key file that does not read,
 *   an index written with other urlkey rules, or a PostgreSQL index that
 *   cannot be reached
 */
export async function runVerify(config: ArchiveConfig): Promise<number> {
  // The key that signed the tree heads; none made yet (no daemon ever ran here): heads cannot be checked.
  let publicKeyDer: Buffer | null;
  try {
    publicKeyDer = existsSync(config.signingKeyFile) ? openSigningKey(config.signingKeyFile).publicKeyDer : null;
  } catch (err) {
    throw inContext(err, {});
  }
  let index: MementoIndex;
  try {
    index = await openIndex(config);
  } catch (err) {
    throw inContext(err, {});
  }
  const bar = progressBar('verify');
  const warcs = await openWarcStore(config);
  try {
    // Each local log's origin: that of its newest head (the name the witnesses know it by), else the config's.
    const origins = new Map<string, string>();
    for (const a of config.archives.filter(isLocal)) origins.set(a.id, (await index.log.head(a.id))?.origin ?? logOrigin(config, a.id));
    const checkpoints = { anchorDir: anchorDir(config.signingKeyFile), witnesses: config.witnesses, origins };
    const r = await verify(index, warcs, { progress: bar.update, publicKeyDer, checkpoints });
    bar.stop();
    for (const p of r.problems) process.stdout.write(`${r.ok ? 'note' : 'problem'}: ${p}\n`);
    for (const n of r.checkpoints?.notes ?? []) process.stdout.write(`note: ${n}\n`);
    for (const f of r.orphans)
      process.stdout.write(
        `note: ${f}: orphan, none of its records is indexed (uploaded by a daemon stopped before its index commit, never acknowledged; may be deleted)\n`,
      );
    process.stdout.write(
      `verify: ${r.ok ? 'OK' : 'FAILED'}: ${r.rows} index rows, ${r.records} WARC records in ${r.files} files (${r.bytes} bytes); ` +
        `${r.unindexed} response/revisit records not in the index (${r.superseded} of them superseded by a capture of the same URL and second that is indexed); ` +
        `${r.unlogged} mementos indexed before the evidence log was kept (no entry; memento-archive reindex gives them one); ` +
        `evidence log: ${r.log.entries} entries, ${r.log.nodes} nodes, ${r.log.heads} signed tree heads, ` +
        `${r.checkpoints?.checkpoints ?? 0} published checkpoints (${r.checkpoints?.timestamps ?? 0} time-stamped), ${r.checkpoints?.anchors ?? 0} anchor(s), ${r.checkpoints?.witnessed ?? 0} witness checkpoint(s); ` +
        `${r.ok ? 'no problems' : `${r.problems.length} problem(s)`}\n`,
    );
    return r.ok ? 0 : 1;
  } finally {
    bar.stop(false);
    await warcs.close();
    await index.close();
  }
}
