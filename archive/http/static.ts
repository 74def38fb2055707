/**
 * The archive's own static files, under `/_static/` (a path no archive id
 * can take: ids begin with a letter or digit): the script every replayed
 * page loads first (archive/replay/static/replay.js), the stylesheet
 * and script of the pages for people (archive/web/static/; not on
 * `replay_origin`, where they answer 404), and the archive's icon at
 * `/favicon.ico`, where browsers look for it (archive/web/static/favicon.ico,
 * drawn by bin/make-favicon.js). Read once at start; served with a strong
 * ETag and a day of caching.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import { httpError } from '#shared/http-error.js';
import { REPLAY_SCRIPT_PATH } from '../replay/urls.js';
import { readRoute, refuseOnReplayHost } from './context.js';

/** The static files: address → file, its media type, and whether it is the pages' own (not served on `replay_origin`). */
const FILES: Record<string, { file: URL; type: string; pages?: boolean }> = {
  [REPLAY_SCRIPT_PATH]: { file: new URL('../replay/static/replay.js', import.meta.url), type: 'text/javascript; charset=utf-8' },
  '/_static/web.css': { file: new URL('../web/static/web.css', import.meta.url), type: 'text/css; charset=utf-8', pages: true },
  '/_static/web.js': { file: new URL('../web/static/web.js', import.meta.url), type: 'text/javascript; charset=utf-8', pages: true },
  '/favicon.ico': { file: new URL('../web/static/favicon.ico', import.meta.url), type: 'image/x-icon' },
};

/** The static files plugin. */
export async function staticRoutes(app: FastifyInstance): Promise<void> {
  for (const [url, { file, type, pages }] of Object.entries(FILES)) {
    const body = await readFile(file);
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
    readRoute(
      app,
      url,
      async (req, reply) => {
        // The pages' own stylesheet and script are not served on replay_origin (replay.js is: the mementos there load it).
        if (pages) refuseOnReplayHost(app.config, req);
        reply.header('etag', etag).header('cache-control', 'public, max-age=86400').header('x-content-type-options', 'nosniff');
        // A replayed page's origin is opaque: its script loads are cross-origin.
        reply.header('access-control-allow-origin', '*');
        if (req.headers['if-none-match'] === etag) return reply.code(304).send();
        reply.type(type).header('content-length', String(body.length));
        return req.method === 'HEAD' ? reply.send() : reply.send(body);
      },
      { resource: 'static' },
    );
  }
  readRoute(
    app,
    '/_static/*',
    async (req) => {
      throw httpError(404, `no static file ${req.url.slice(0, 200)}`);
    },
    { resource: 'static' },
  );
}
