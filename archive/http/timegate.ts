/**
 * The TimeGate of one archive (URI-G, RFC 7089 §4.2.1, pattern 2.1):
 * datetime negotiation by 302 to the URI-M closest to Accept-Datetime, and
 * Prefer variant 1 (the URI-M of the variant that satisfies the most
 * preferences, with Preference-Applied; docs/architecture.md "Replay and
 * Prefer").
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { toTimestamp14 } from '#shared/http-date.js';
import { formatLinkHeader, type Link } from '#shared/link.js';
import { FIXED_HEAD_BYTES, HEAD_BUDGET, headerBytes, linkWithin } from '../memento/head-budget.js';
import { LINK_DETAILS, mementoLinks, uris } from '../memento/navigation.js';
import { instant, select } from '../read/nearest.js';
import { formFor, hasPreference, parsePrefer } from '../memento/prefer.js';
import { predictPreferenceApplied } from '../memento/preference-applied.js';
import { LINK_FORMAT } from '../memento/timemap.js';
import { acceptDatetime, localArchive, readRoute, TEXT } from './context.js';
import { type KeptAnswer, keptAnswer, sendKept } from './kept-answer.js';

/** The TimeGate plugin. */
export async function timegateRoutes(app: FastifyInstance): Promise<void> {
  readRoute(app, '/:archive/timegate/*', (req, reply) => timegate(app, req, reply), { uriR: true, resource: 'timegate' });
}

/**
 * `GET/HEAD /<id>/timegate/<URI-R>`: 302 to the chosen URI-M (the raw one
 * for Prefer: original-content); `Vary: accept-datetime, prefer`; one Link
 * line: original, timemap, timebundle and the memento links around the
 * choice; Preference-Applied when Prefer was sent. The choice and the
 * links are among the mementos the access rules show (archive/read/visible-index.ts);
 * 404 when the archive has no memento of the URI-R, 451 when it has only
 * hidden ones and some are blocked. The answer is kept with the read
 * cache's view of the URL it was made from and written whole to the next request
 * that asks the same (kept-answer.ts).
 */
async function timegate(app: FastifyInstance, req: FastifyRequest<{ Params: Record<string, string> }>, reply: FastifyReply): Promise<unknown> {
  const { store } = app;
  const archive = localArchive(app.config, req.params.archive);
  const { uriR, urlkey, base } = req;
  const t = acceptDatetime(req) ?? Number.MAX_SAFE_INTEGER;
  const n = await app.visible.neighbourhood(archive.id, urlkey, t);
  if (!n) throw await app.visible.absent(urlkey, uriR, base, `no memento of ${uriR} in archive "${archive.id}"`, archive.id);
  const s = select(n, instant(t));
  const prefer = parsePrefer(req.headers.prefer);
  // Variant 1: the URI-M of the form that satisfies the most dimensions asked for.
  const form = formFor(prefer, 'replay');
  const preferred = hasPreference(prefer);
  // The whole answer, kept with the URL's view in the read cache (kept-answer.ts): its key names what else it depends on.
  const key = `timegate ${s.memento.id} ${form} ${preferred ? `p${prefer.raw ? 'r' : ''}${prefer.rewritten ? 'w' : ''}` : ''} ${archive.id} ${base} ${uriR}`;
  const kept = app.visible.kept<KeptAnswer>(n.view, key);
  if (kept) return sendKept(req, reply, kept);
  const vary = 'accept-datetime, prefer';
  let applied: string | undefined;
  if (preferred) {
    // What that URI-M will say it satisfies (Prefer rule 8), worked out as it will work it out.
    const row = await app.visible.row(s.memento.id);
    const target = { base, archiveId: archive.id, ts: toTimestamp14(s.memento.datetime) };
    applied = (await predictPreferenceApplied(row, prefer, form, (r) => store.readResponse(r), target, app.decodeOptions, { pool: app.work.replay }))
      .preferenceApplied;
  }
  const location = uris.memento(base, archive.id, s.memento, form);
  const used = FIXED_HEAD_BYTES + headerBytes('location', location) + headerBytes('vary', vary) + headerBytes('preference-applied', applied);
  const required: Link[] = [
    { uri: uriR, rel: 'original' },
    { uri: uris.timemap(base, archive.id, uriR), rel: 'timemap', type: LINK_FORMAT },
    { uri: uris.timebundle(base, archive.id, uriR), rel: 'timebundle' },
  ];
  const link = linkWithin(
    HEAD_BUDGET - used,
    required,
    LINK_DETAILS.map((d) => () => formatLinkHeader(mementoLinks(base, archive.id, s, form, d))),
  );
  // As context.ts `redirect` answers: Location, and the location as a one-line text body.
  const answer = keptAnswer(302, { vary, 'preference-applied': applied, link, location, 'content-type': TEXT }, Buffer.from(location + '\n'))!;
  app.visible.keep(n.view, key, answer, answer.bytes);
  return sendKept(req, reply, answer);
}
