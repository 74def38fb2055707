/**
 * Operations: `GET /healthz` (is the storage writable, does the index
 * answer) and `GET /metrics` (Prometheus text format, archive/metrics.ts),
 * as the capture proxy has them on its admin address.
 */
import { randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { ArchiveMetrics } from '../metrics.js';
import { readRoute, TEXT } from './context.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The daemon's metrics. */
    metrics: ArchiveMetrics;
  }
}

/**
 * What is wrong with the archive, one line per problem (empty when
 * healthy): the index does not answer a query; a file cannot be written
 * (and removed) in the data folder's `tmp/`, where captures arrive; an
 * evidence log was cut back or rewritten below its last published
 * checkpoint (archive/evidence/checkpoint-anchor.ts).
 */
export async function healthProblems(app: FastifyInstance): Promise<string[]> {
  const problems: string[] = [];
  await app.store.index.ping().catch((err: Error) => problems.push(`index: does not answer: ${err.message}`));
  const probe = path.join(app.config.dataDir, 'tmp', `health-${process.pid}-${randomBytes(4).toString('hex')}.tmp`);
  try {
    await writeFile(probe, 'ok', { mode: 0o600 });
  } catch (err) {
    problems.push(`storage: cannot write in ${path.dirname(probe)}: ${(err as Error).message}`);
  } finally {
    await rm(probe, { force: true }).catch(() => undefined);
  }
  problems.push(...app.tlog.publisher.refusals());
  return problems;
}

/** The health and metrics plugin. */
export async function opsRoutes(app: FastifyInstance): Promise<void> {
  readRoute(
    app,
    '/healthz',
    async (_req, reply) => {
      const problems = await healthProblems(app);
      reply.header('cache-control', 'no-store').type(TEXT);
      if (problems.length) return reply.code(503).send(problems.join('\n') + '\n');
      return reply.send('ok\n');
    },
    { resource: 'health' },
  );
  readRoute(
    app,
    '/metrics',
    async (_req, reply) => {
      const text = await app.metrics.text();
      return reply.header('cache-control', 'no-store').type(app.metrics.registry.contentType).send(text);
    },
    { resource: 'metrics' },
  );
}
