/**
 * The TimeGate redirector over every archive (`/tg/<URI-R>`, 302 to the
 * chosen archive's TimeGate, RFC 7089 §4.2 pattern 2.1 in front of several
 * archives) and the index TimeMap (`/tg/timemap/<URI-R>`, RFC 7089 §5:
 * every archive's TimeMap, then the local mementos; the same as JSON at
 * `/tg/timemap/json/<URI-R>`). The answers are the reader's
 * (archive/read/reader.ts `redirector`, `indexTimemap`; made in
 * archive/read/across-archives.ts).
 */
import type { FastifyInstance } from 'fastify';
import { sendAnswer } from './answer.js';
import { acceptDatetime, readRoute } from './context.js';

/**
 * The redirector and index TimeMap plugin: `GET/HEAD /tg/<URI-R>` (302;
 * `Vary: accept-datetime`; `Link` with the memento links across
 * archives), `/tg/timemap/<URI-R>` and `/tg/timemap/json/<URI-R>`; 404
 * when no archive has the URI-R; 400 for an Accept-Datetime that is not an
 * HTTP-date.
 */
export async function redirectorRoutes(app: FastifyInstance): Promise<void> {
  for (const [url, format] of [
    ['/tg/timemap/json/*', 'json'],
    ['/tg/timemap/*', 'link'],
  ] as const) {
    readRoute(
      app,
      url,
      async (req, reply) => sendAnswer(req, reply, await app.reader.indexTimemap({ uriR: req.uriR, urlkey: req.urlkey, base: req.base, format })),
      { uriR: true, resource: 'index-timemap' },
    );
  }
  readRoute(
    app,
    '/tg/*',
    async (req, reply) => {
      const seconds = acceptDatetime(req);
      const q = { uriR: req.uriR, urlkey: req.urlkey, base: req.base };
      const at = seconds === undefined ? undefined : { seconds, header: String(req.headers['accept-datetime']) };
      return sendAnswer(req, reply, await app.reader.redirector({ ...q, acceptDatetime: at }));
    },
    { uriR: true, resource: 'redirector' },
  );
}
