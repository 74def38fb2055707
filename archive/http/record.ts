/**
 * `GET/HEAD /<id>/record/<ts>/<URI-R>`: the memento's own WARC record, as
 * it is stored, for anyone to check its entry in the log
 * (docs/evidence.md), as `application/warc`. The answer is the reader's
 * (archive/read/reader.ts `record`).
 */
import type { FastifyInstance } from 'fastify';
import { sendAnswer } from './answer.js';
import { archiveRead, readRoute } from './context.js';

/**
 * The `/record` plugin: `application/warc`, the memento's record (and its
 * published request record where the config says so), `Content-Disposition:
 * attachment; filename="<id>-<ts>.warc"`; 404 for a timestamp that is not
 * a shown memento's exact one, 451 for a blocked memento.
 */
export async function recordRoutes(app: FastifyInstance): Promise<void> {
  readRoute(
    app,
    '/:archive/record/:ts/*',
    async (req, reply) => {
      return sendAnswer(req, reply, await app.reader.record({ ...archiveRead(app.config, req), ts: req.params.ts }));
    },
    { uriR: true, resource: 'record' },
  );
}
