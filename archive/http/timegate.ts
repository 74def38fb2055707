/**
 * The TimeGate of one archive (URI-G, RFC 7089 §4.2.1, pattern 2.1):
 * datetime negotiation by 302 to the URI-M closest to Accept-Datetime, and
 * Prefer variant 1 (the URI-M of the variant that satisfies the most
 * preferences, with Preference-Applied; docs/architecture.md "Replay and
 * Prefer"). The answer is the reader's (archive/read/reader.ts `timegate`).
 */
import type { FastifyInstance } from 'fastify';
import { sendAnswer } from './answer.js';
import { takeMadeAnswer } from './fast-path.js';
import { acceptDatetime, archiveRead, readRoute } from './context.js';

/**
 * The TimeGate plugin: `GET/HEAD /<id>/timegate/<URI-R>`, 302 to the
 * chosen URI-M; 404 when the archive has no memento of the URI-R, 451 when
 * it has only hidden ones and some are blocked; 400 for an Accept-Datetime
 * that is not an HTTP-date.
 */
export async function timegateRoutes(app: FastifyInstance): Promise<void> {
  readRoute(
    app,
    '/:archive/timegate/*',
    async (req, reply) => {
      const q = { ...archiveRead(app.config, req), acceptDatetime: acceptDatetime(req), prefer: req.headers.prefer };
      return sendAnswer(req, reply, takeMadeAnswer(req.raw) ?? (await app.reader.timegate(q)));
    },
    { uriR: true, resource: 'timegate' },
  );
}
