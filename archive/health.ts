/**
 * The archive's health as a load balancer needs it (`GET /healthz`,
 * archive/http/ops.ts): can this daemon take a capture and serve what it
 * holds? Three checks, each named in the answer:
 *
 * - `index`: the index answers a query on its read and write sides and
 *   can take writes (SQLite: the file and its folder writable;
 *   PostgreSQL: not a standby, not read-only);
 * - `warcs`: the WARC store can take records (the folder writable and a
 *   file written and removed in `tmp/`, where captures arrive; a bucket:
 *   `HeadBucket` answered);
 * - `log`: the evidence log can be signed (the signer's last round did
 *   not fail, and no log's newest head was signed with another key than
 *   this daemon's: archive/evidence/tree-heads.ts).
 *
 * Each check has {@link CHECK_TIMEOUT_MS} to answer; the outcome is kept
 * for {@link HEALTH_TTL_MS}, and checks asked for meanwhile share the one
 * running, so that a load balancer (or anyone: `/healthz` is public)
 * asking often costs the stores at most one check each per second.
 */
import { randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { TreeHeadSigner } from './evidence/tree-heads.js';
import type { ArchiveStore } from './store/store.js';

/** Most time one check may take, ms; slower is a failure ("no answer within …"). */
export const CHECK_TIMEOUT_MS = 2000;
/** How long an outcome is kept, ms. */
export const HEALTH_TTL_MS = 1000;

/** One check: its name and, when it failed, why (one line). */
export interface HealthCheck {
  name: 'index' | 'warcs' | 'log';
  problem?: string;
}

/** The outcome of the checks. */
export interface HealthReport {
  ok: boolean;
  checks: HealthCheck[];
}

/** Runs `check` with an abort signal; its error's message, or a timeout's, as the problem. */
async function within(name: HealthCheck['name'], check: (signal: AbortSignal) => Promise<void>): Promise<HealthCheck> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string>((resolve) => {
    timer = setTimeout(() => {
      controller.abort();
      resolve(`no answer within ${CHECK_TIMEOUT_MS / 1000} s`);
    }, CHECK_TIMEOUT_MS);
  });
  try {
    const problem = await Promise.race([
      check(controller.signal).then(
        () => undefined,
        (err: Error) => String(err?.message ?? err).split('\n')[0],
      ),
      late,
    ]);
    return problem === undefined ? { name } : { name, problem };
  } finally {
    clearTimeout(timer);
  }
}

/** The checks of one daemon (see the module comment). */
export class Health {
  private kept: { at: number; report: Promise<HealthReport> } | undefined;

  constructor(
    private readonly store: ArchiveStore,
    private readonly dataDir: string,
    private readonly signer: Pick<TreeHeadSigner, 'problem'>,
  ) {}

  /** The outcome of the checks: kept for {@link HEALTH_TTL_MS}, shared while it runs. */
  report(): Promise<HealthReport> {
    const now = Date.now();
    if (!this.kept || now - this.kept.at >= HEALTH_TTL_MS) this.kept = { at: now, report: this.run() };
    return this.kept.report;
  }

  private async run(): Promise<HealthReport> {
    const checks = await Promise.all([
      within('index', async () => {
        await this.store.index.ping();
        await this.store.index.writable();
      }),
      within('warcs', async (signal) => {
        await this.store.warcs.check(signal);
        await this.tmpWritable();
      }),
      within('log', async () => {
        const problem = this.signer.problem;
        if (problem) throw new Error(problem);
      }),
    ]);
    return { ok: checks.every((c) => !c.problem), checks };
  }

  /** A file written and removed in the data folder's `tmp/`, where captures arrive. @throws naming the folder */
  private async tmpWritable(): Promise<void> {
    const probe = path.join(this.dataDir, 'tmp', `health-${process.pid}-${randomBytes(4).toString('hex')}.tmp`);
    try {
      await writeFile(probe, 'ok', { mode: 0o600 });
    } catch (err) {
      throw new Error(`cannot write in ${path.dirname(probe)}: ${(err as Error).message}`, { cause: err });
    } finally {
      await rm(probe, { force: true }).catch(() => undefined);
    }
  }
}

/**
 * The text of a report: `ok` then a line per check (`index: ok`), or a
 * line per check with the problem of each that failed
 * (`warcs: the WARC store s3://… cannot be reached: …`).
 */
export function healthText(r: HealthReport): string {
  const lines = r.checks.map((c) => `${c.name}: ${c.problem ?? 'ok'}`);
  return (r.ok ? ['ok', ...lines] : lines).join('\n') + '\n';
}
