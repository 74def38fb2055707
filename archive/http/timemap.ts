/**
 * One archive's TimeMaps (URI-T, RFC 7089 §5): link-format and JSON,
 * streamed from the index a page at a time; and its timebundle (303 to the
 * link-format TimeMap). The answers are the reader's
 * (archive/read/reader.ts `timemap`, `timebundle`).
 */
import type { FastifyInstance } from 'fastify';
import { sendAnswer } from './answer.js';
import { archiveRead, readRoute } from './context.js';

/**
 * The TimeMap and timebundle plugin: `GET/HEAD /<id>/timemap/link/<URI-R>`,
 * `/<id>/timemap/json/<URI-R>` and `/<id>/timebundle/<URI-R>`; 404 when the
 * archive has no memento of the URI-R, 451 when it has only hidden ones and
 * some are blocked.
 */
export async function timemapRoutes(app: FastifyInstance): Promise<void> {
  for (const format of ['link', 'json'] as const) {
    readRoute(
      app,
      `/:archive/timemap/${format}/*`,
      async (req, reply) => {
        return sendAnswer(req, reply, await app.reader.timemap({ ...archiveRead(app.config, req), format }));
      },
      { uriR: true, resource: 'timemap' },
    );
  }
  readRoute(
    app,
    '/:archive/timebundle/*',
    async (req, reply) => {
      return sendAnswer(req, reply, await app.reader.timebundle(archiveRead(app.config, req)));
    },
    { uriR: true, resource: 'timebundle' },
  );
}
