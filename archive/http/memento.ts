/**
 * The Memento (URI-M, RFC 7089 §4.2.1 and §2.1.1):
 * `/<id>/memento/<ts><modifier>/<URI-R>` serves the stored capture at that
 * Memento-Datetime in one of three forms (no modifier, or one of the
 * Wayback context modifiers `im_`, `js_`, `cs_`, `oe_`, `if_`, `fw_`: the
 * archival replay; `ol_`: original links; `id_`: the stored bytes), Prefer
 * variant 2 at any of them. A timestamp that is not stored redirects to the
 * nearest stored memento of the URI-R in any archive, as Wayback-style
 * archives do: that is how a replayed page's embedded resources come from
 * the archive at the nearest time; `<T>if_` (the `/web/` banner page's
 * frame) is answered at the reader's time. The answer is the reader's
 * (archive/read/reader.ts `memento`); a URI-R never captured is 404 — for a
 * browser's navigation a small page saying so, with a link to the live URL.
 */
import type { FastifyInstance } from 'fastify';
import { httpError } from '#shared/http-error.js';
import { notArchivedData } from '../web/not-archived.js';
import { errorPage } from '../web/page.js';
import { sendAnswer } from './answer.js';
import { takeMadeAnswer } from './fast-path.js';
import { archiveRead, localArchive, readRoute, wantsPage } from './context.js';

const SHAPE = 'a Memento address is /<archive>/memento/<14-digit timestamp>/<URL>';

/**
 * The Memento plugin: `GET/HEAD /<id>/memento/<ts>[modifier]/<URI-R>`.
 * 302 to the nearest shown URI-M for a timestamp that is not stored; 400
 * for a malformed timestamp; 404 when no archive shows the URI-R; 451 for
 * a blocked memento (archive/read/access-rules.ts).
 */
export async function mementoRoutes(app: FastifyInstance): Promise<void> {
  readRoute(
    app,
    '/:archive/memento/:ts/*',
    async (req, reply) => {
      const read = archiveRead(app.config, req);
      const answer = takeMadeAnswer(req.raw) ?? (await app.reader.memento({ ...read, ts: req.params.ts, prefer: req.headers.prefer, client: req.socket }));
      const page =
        answer.notArchived && wantsPage(req) ? errorPage(app.config, req, 404, await notArchivedData(app, read.uriR), undefined, 'not-archived') : undefined;
      // The archive's "Not archived" page (web/not-archived.ts) for a browser's navigation, sent as an error page (in
      // the banner page's frame it tells the banner, which then says so too); no Memento headers: there is no memento.
      if (page) return reply.code(404).header('access-control-allow-origin', '*').headers(page.headers).send(page.html);
      return sendAnswer(req, reply, answer);
    },
    { uriR: true, resource: 'memento' },
  );
  // No timestamp segment at all.
  readRoute(
    app,
    '/:archive/memento/*',
    async (req) => {
      localArchive(app.config, req.params.archive);
      throw httpError(400, SHAPE);
    },
    { resource: 'memento' },
  );
}
