/**
 * The TimeGate of one archive (URI-G, RFC 7089 §4.2.1, pattern 2.1):
 * datetime negotiation by 302 to the URI-M closest to Accept-Datetime, and
 * Prefer variant 1 (the URI-M of the variant that satisfies the most
 * preferences, with Preference-Applied; docs/architecture.md "Replay and
 * Prefer").
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { httpError } from '../../shared/http-error.js';
import { formatLinkHeader } from '../../shared/link.js';
import { mementoLinks, select, uris } from '../memento/navigation.js';
import { hasPreference, parsePrefer, preferenceApplied } from '../memento/prefer.js';
import { defaultVariantChanges } from '../memento/response.js';
import { LINK_FORMAT } from '../memento/timemap.js';
import { acceptDatetime, localArchive, readRoute, redirect } from './context.js';

/** The TimeGate plugin. */
export async function timegateRoutes(app: FastifyInstance): Promise<void> {
  readRoute(app, '/:archive/timegate/*', (req, reply) => timegate(app, req, reply), { uriR: true });
}

/**
 * `GET/HEAD /<id>/timegate/<URI-R>`: 302 to the chosen URI-M (the raw one
 * for Prefer: original-content); `Vary: accept-datetime, prefer`; one Link
 * line: original, timemap, timebundle and the memento links around the
 * choice; Preference-Applied when Prefer was sent. 404 when the archive
 * has no memento of the URI-R.
 */
async function timegate(app: FastifyInstance, req: FastifyRequest<{ Params: Record<string, string> }>, reply: FastifyReply): Promise<unknown> {
  const { store } = app;
  const archive = localArchive(app.config, req.params.archive);
  const { uriR, urlkey, base } = req;
  const t = acceptDatetime(req) ?? Number.MAX_SAFE_INTEGER;
  const n = await store.index.neighbourhood(archive.id, urlkey, t);
  if (!n) throw httpError(404, `no memento of ${uriR} in archive "${archive.id}"`);
  const s = select(n, t);
  const prefer = parsePrefer(req.headers.prefer);
  // Variant 1: the URI-M that satisfies the most dimensions asked for.
  const raw = prefer.dims.has('original-content');
  reply.header('vary', 'accept-datetime, prefer');
  if (hasPreference(prefer)) {
    const row = raw ? undefined : await store.index.byId(s.memento.id);
    const changed = row !== undefined && (await defaultVariantChanges(row, (r) => store.readResponse(r)));
    reply.header('preference-applied', preferenceApplied(prefer, raw, changed));
  }
  reply.header(
    'link',
    formatLinkHeader([
      { uri: uriR, rel: 'original' },
      { uri: uris.timemap(base, archive.id, uriR), rel: 'timemap', type: LINK_FORMAT },
      { uri: uris.timebundle(base, archive.id, uriR), rel: 'timebundle' },
      ...mementoLinks(base, archive.id, s, raw),
    ]),
  );
  return redirect(reply, 302, uris.memento(base, archive.id, s.memento, raw));
}
