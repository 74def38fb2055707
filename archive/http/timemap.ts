/**
 * One archive's TimeMaps (URI-T, RFC 7089 §5): link-format and JSON,
 * streamed from the index a page at a time; and its timebundle (303 to the
 * link-format TimeMap, RFC 7089 §4.1 pattern's `timebundle` relation).
 */
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { uris } from '../memento/navigation.js';
import { jsonTimemap, LINK_FORMAT, linkFormat, type Span, timemapHead, timemapMementoLinks } from '../memento/timemap.js';
import type { ArchiveSpan } from '../spans.js';
import { localArchive, readRoute, redirect } from './context.js';

type Req = FastifyRequest<{ Params: Record<string, string> }>;

/** The TimeMap and timebundle plugin. */
export async function timemapRoutes(app: FastifyInstance): Promise<void> {
  readRoute(app, '/:archive/timemap/link/*', (req, reply) => linkTimemap(app, req, reply), { uriR: true, resource: 'timemap' });
  readRoute(app, '/:archive/timemap/json/*', (req, reply) => json(app, req, reply), { uriR: true, resource: 'timemap' });
  readRoute(app, '/:archive/timebundle/*', (req, reply) => timebundle(app, req, reply), { uriR: true, resource: 'timebundle' });
}

/**
 * The archive named in the address, the span of its mementos of the URI-R
 * that the access rules show.
 *
 * @throws HttpError 404 when there is no such local archive, or it has no
 *   memento of the URI-R; 451 when it has only hidden ones and some are blocked
 */
async function archiveAndSpan(app: FastifyInstance, req: Req): Promise<{ archive: ArchiveSpan; span: Span }> {
  const archive = localArchive(app.config, req.params.archive);
  const span = (await app.visible.spans(req.urlkey)).find((x) => x.archive_id === archive.id);
  if (!span) throw await app.visible.absent(req.urlkey, req.uriR, req.base, `no memento of ${req.uriR} in archive "${archive.id}"`, archive.id);
  return { archive, span };
}

/**
 * `GET/HEAD /<id>/timemap/link/<URI-R>`: `application/link-format`, head
 * then every memento oldest first (RFC 7089 §5.1). The address names its
 * format, so every client gets that format whatever its `Accept` says (as
 * pywb and the Wayback Machine answer), as the index TimeMap does.
 */
async function linkTimemap(app: FastifyInstance, req: Req, reply: FastifyReply): Promise<unknown> {
  const { archive, span } = await archiveAndSpan(app, req);
  reply.type(LINK_FORMAT);
  if (req.method === 'HEAD') return reply.send();
  const links = async function* () {
    for await (const page of app.visible.timemapPages(archive.id, req.urlkey)) yield timemapMementoLinks(page, req.base, archive.id, span);
  };
  return reply.send(Readable.from(linkFormat(timemapHead(req.base, archive.id, req.uriR, span), links())));
}

/** `GET/HEAD /<id>/timemap/json/<URI-R>`: the same as mementoweb.org timemap-json. */
async function json(app: FastifyInstance, req: Req, reply: FastifyReply): Promise<unknown> {
  const { archive } = await archiveAndSpan(app, req);
  reply.type('application/json');
  if (req.method === 'HEAD') return reply.send();
  return reply.send(Readable.from(jsonTimemap(app.visible.timemapPages(archive.id, req.urlkey), req.base, archive.id, req.uriR)));
}

/** `GET/HEAD /<id>/timebundle/<URI-R>`: 303 to the link-format TimeMap. */
async function timebundle(app: FastifyInstance, req: Req, reply: FastifyReply): Promise<unknown> {
  const { archive } = await archiveAndSpan(app, req);
  return redirect(reply, 303, uris.timemap(req.base, archive.id, req.uriR));
}
