/**
 * Operations: `GET /healthz` (can the daemon take captures and serve what
 * it holds: the index, the WARC store, the evidence log's signing, each
 * named; archive/health.ts) and `GET /metrics` (Prometheus text format,
 * archive/metrics.ts), as the capture proxy has them on its admin address.
 */
import type { FastifyInstance } from 'fastify';
import { Health, healthText } from '../health.js';
import type { ArchiveMetrics } from '../metrics.js';
import { readRoute, TEXT } from './context.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The daemon's metrics. */
    metrics: ArchiveMetrics;
  }
}

/** The health and metrics plugin. */
export async function opsRoutes(app: FastifyInstance): Promise<void> {
  // The log's check: the signer's problem (a failed round, another key's head), else the anchor's refusal of a
  // log cut back below its last published checkpoint (archive/evidence/checkpoint-anchor.ts).
  const signing = {
    get problem() {
      return app.treeHeads.problem ?? app.tlog.publisher.refusals()[0];
    },
  };
  const health = new Health(app.store, app.config.dataDir, signing);
  readRoute(
    app,
    '/healthz',
    async (_req, reply) => {
      const report = await health.report();
      reply.header('cache-control', 'no-store').type(TEXT);
      return reply.code(report.ok ? 200 : 503).send(healthText(report));
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
