/**
 * The Memento (URI-M, RFC 7089 §4.2.1 and §2.1.1):
 * `/<id>/memento/<ts><modifier>/<URI-R>` serves the stored capture at that
 * Memento-Datetime in one of three forms (no modifier, or one of the
 * Wayback context modifiers `im_`, `js_`, `cs_`, `oe_`, `if_`, `fw_`: the
 * archival replay; `ol_`: original links; `id_`: the stored bytes), Prefer
 * variant 2 at any of them (assembled by archive/memento/response.ts). A
 * timestamp that is not stored redirects to the nearest stored memento of
 * the URI-R in any archive, as Wayback-style archives do: that is how a
 * replayed page's embedded resources come from the archive at the nearest
 * time. So does a timestamp of 1-13 digits (the last memento of the period
 * it names, else the nearest), and one beyond the present
 * (`99999999999999`: the newest). One exception, the reader's time: at
 * `<T>if_` (the `/web/` banner page's frame) a 14-digit T that is not
 * stored is answered with the nearest memento's archival replay itself,
 * its URLs rewritten at T, so that the page's embedded resources come as
 * they were at T. A URI-R never captured is 404 — for a browser's
 * navigation a small page saying so, with a link to the live URL.
 */
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { toTimestamp14 } from '#shared/http-date.js';
import { httpError } from '#shared/http-error.js';
import type { DecodeOptions } from '../replay/content-coding.js';
import { uris } from '../memento/navigation.js';
import { instant, type Selection, select, timestampPeriod, type Period } from '../read/nearest.js';
import { blockedError } from '../read/visible-index.js';
import { formFor, formOfModifier, type MementoForm, parsePrefer, type PreferRequest } from '../memento/prefer.js';
import { assembleMemento } from '../memento/response.js';
import { buildUriM, parseUriMTimestamp } from '#shared/uri-m.js';
import { cacheKey, type ReplayCache } from '../replay/cache.js';
import type { Neighbourhood } from '../read/rows.js';
import { notArchivedData } from '../web/not-archived.js';
import { errorPage } from '../web/page.js';
import { localArchive, pagesOrigin, readRoute, redirect, TEXT, wantsPage } from './context.js';
import { type KeptAnswer, keptAnswer, sendKept } from './kept-answer.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Replayed bodies kept in memory (archive/replay/cache.ts). */
    replayCache: ReplayCache;
    /** The bound of a streamed decoding of a content-coded body (`max_decoded_bytes`), counted in the metrics. */
    decodeOptions: DecodeOptions;
  }
}

const SHAPE = 'a Memento address is /<archive>/memento/<14-digit timestamp>/<URL>';

/** The Memento plugin. */
export async function mementoRoutes(app: FastifyInstance): Promise<void> {
  readRoute(app, '/:archive/memento/:ts/*', (req, reply) => memento(app, req, reply), { uriR: true, resource: 'memento' });
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

/**
 * The timestamp segment: 14 digits, or 1-13 digits naming a period (navigation.ts `timestampPeriod`), and a
 * form modifier (`id_`, `ol_`, or one of the replay's context modifiers `im_`, `js_`…). @throws HttpError 400
 */
function parseTs(segment: string): { ts: string; period: Period; form: MementoForm; modifier: string } {
  const m = parseUriMTimestamp(segment);
  const form = m ? formOfModifier(m.modifier) : undefined;
  const period = m && form ? timestampPeriod(m.timestamp) : undefined;
  if (!m || !form || !period) throw httpError(400, `malformed Memento timestamp ${JSON.stringify(segment.slice(0, 40))}; it is 14 digits YYYYMMDDhhmmss (UTC)`);
  return { ts: m.timestamp, period, form, modifier: m.modifier };
}

type Req = FastifyRequest<{ Params: Record<string, string> }>;

/** The key of a kept Memento answer (kept-answer.ts): everything the answer depends on besides the URL's view. */
function keptKey(
  req: FastifyRequest,
  prefer: PreferRequest,
  id: number,
  rewriteAt: string,
  addressForm: MementoForm,
  form: MementoForm,
  archiveId: string,
): string {
  return `memento ${id} ${rewriteAt} ${addressForm} ${form} ${prefer.raw ? 'r' : ''}${prefer.rewritten ? 'w' : ''} ${archiveId} ${req.base} ${req.uriR}`;
}

/**
 * `GET/HEAD /<id>/memento/<ts>[ol_|id_]/<URI-R>`: the stored status,
 * headers and body in the form asked for; 302 to the nearest stored
 * URI-M for a timestamp that is not stored; 400 for a malformed timestamp;
 * 404 when no archive has the URI-R. Access rules (archive/read/access-rules.ts): a
 * stored memento they block is 451; one they exclude is as if not stored;
 * the nearest memento and the navigation links are among the shown ones;
 * nothing shown anywhere is 451 when some memento is blocked, else 404.
 * HEAD computes the same headers and sends no body. An answer whose body
 * is in memory is kept with the read cache's view of the URL it was made from and
 * written whole to the next request that asks the same (kept-answer.ts).
 *
 * The reader's time: at `<T>if_` (the banner page's frame, Wayback's
 * "iframe content"), a 14-digit T that is not stored serves the archival
 * replay of the nearest memento itself, its URLs rewritten at T (so its
 * embedded resources come as they were at T), with that memento's
 * Memento-Datetime and Content-Location; a nearest memento in another
 * archive is a 302 to `/<other>/memento/<T>if_/<URI-R>`. A Prefer for a
 * stored form there gets the 302 to the nearest, as every other address.
 */
async function memento(app: FastifyInstance, req: Req, reply: FastifyReply): Promise<unknown> {
  const archive = localArchive(app.config, req.params.archive);
  const { ts, period, form: addressForm, modifier } = parseTs(req.params.ts);
  const t = period.end;
  const { uriR, urlkey, base } = req;
  // The navigation links (id, datetime, URI-R of first/last/prev/next) and the memento at or before `t`
  // (the one served when its datetime is `t`); its whole row only when the answer is not kept.
  const n = await app.visible.neighbourhood(archive.id, urlkey, t);
  const s = n && select(n, instant(t));
  if (n && n.atOrBefore[0] && s && s.memento.datetime === t && ts.length === 14)
    return serve(app, req, reply, { archive: archive.id, n, s, addressForm, rewriteAt: ts });
  const prefer = parsePrefer(req.headers.prefer);
  const atT = modifier === 'if_' && ts.length === 14 && formFor(prefer, addressForm) === 'replay';
  // At the reader's time: an answer kept with the URL's view was made when `s` was the nearest in every archive (a write
  // of the URL, in any archive, drops the view with its answers).
  if (atT && n && s) {
    const kept = app.visible.kept<KeptAnswer>(n.view, keptKey(req, prefer, s.memento.id, ts, addressForm, 'replay', archive.id));
    if (kept && sendKept(req, reply, kept)) return;
  }
  // A memento stored at exactly this datetime that the access rules block.
  if (ts.length === 14 && (await app.visible.blockedAt(archive.id, urlkey, t))) throw blockedError(uriR, base);
  // Not a stored (shown) datetime here, or a timestamp prefix: the nearest URI-M in any archive.
  const nearest = await app.visible.nearest(urlkey, period);
  if (!nearest && (await app.visible.whyHidden(urlkey)) === 'block') throw blockedError(uriR, base);
  if (!nearest) return notArchived(app, req, reply, uriR);
  if (atT && nearest.archiveId === archive.id && n && s?.memento.id === nearest.selection.memento.id)
    return serve(app, req, reply, { archive: archive.id, n, s, addressForm, rewriteAt: ts });
  reply.header('access-control-allow-origin', '*');
  if (atT) return redirect(reply, 302, buildUriM(base, { archive: nearest.archiveId, timestamp: ts, modifier, uriR }));
  return redirect(reply, 302, uris.memento(base, nearest.archiveId, nearest.selection.memento, addressForm));
}

/**
 * Sends memento `s.memento` of `archive` in the form asked for (Prefer, else the address's), the replay form's
 * URLs rewritten at `rewriteAt` (14 digits: its own timestamp, or the reader's time); kept with the URL's view
 * when its body is in memory (kept-answer.ts).
 */
async function serve(
  app: FastifyInstance,
  req: Req,
  reply: FastifyReply,
  at: { archive: string; n: Neighbourhood; s: Selection; addressForm: MementoForm; rewriteAt: string },
): Promise<unknown> {
  const { store } = app;
  const { uriR, base } = req;
  const { n, s, addressForm, rewriteAt } = at;
  const prefer = parsePrefer(req.headers.prefer);
  const form = formFor(prefer, addressForm);
  // The whole answer, kept with the URL's view in the read cache (kept-answer.ts): its key names what else it depends on.
  const key = keptKey(req, prefer, s.memento.id, rewriteAt, addressForm, form, at.archive);
  const kept = app.visible.kept<KeptAnswer>(n.view, key);
  if (kept && sendKept(req, reply, kept)) return;
  // Rows are never changed while the daemon runs (purge and reindex run without it): a memento the index named is there.
  const row = await app.visible.row(s.memento.id);
  if (!row) throw httpError(404, `the memento of ${uriR} at ${toTimestamp14(s.memento.datetime)} is gone from the index`);
  // A reader who leaves while the page waits for the replay pool's thread takes it out of the queue.
  const gone = new AbortController();
  const onClose = () => gone.abort();
  req.socket.once('close', onClose);
  const answer = await assembleMemento(
    { base, archiveId: at.archive, uriR, row, selection: s, addressForm, form, prefer, pagesOrigin: pagesOrigin(app.config, base), rewriteAt },
    (r) => store.readResponse(r),
    app.replayCache,
    app.decodeOptions,
    { pool: app.work.replay, signal: gone.signal },
  ).finally(() => req.socket.off('close', onClose));
  const { plan } = answer;
  if (plan.bodyless || plan.bodyBuffer) {
    const body = plan.bodyless ? null : plan.bodyBuffer;
    // A body the replay cache or the record cache holds is found there again (and counted there), not kept twice.
    const replayKey = cacheKey(row, base, rewriteAt);
    const fromReplay = () => app.replayCache.get(replayKey)?.body;
    const fromRecord = () => store.recordCache.body(row.warc_file, row.warc_offset, row.warc_length);
    const source = !body
      ? undefined
      : form === 'replay' && app.replayCache.peek(replayKey)?.body === body
        ? fromReplay
        : store.recordCache.peek(row.warc_file, row.warc_offset, row.warc_length) === body
          ? fromRecord
          : undefined;
    const whole = keptAnswer(answer.status, answer.headers, body, source);
    if (whole) {
      plan.close();
      app.visible.keep(n.view, key, whole, whole.bytes);
      sendKept(req, reply, { ...whole, body, source: undefined });
      return;
    }
  }
  reply.code(answer.status).headers(answer.headers);
  if (req.method === 'HEAD' || plan.bodyless) {
    // A HEAD decodes nothing more than what the head needed: the decoder is stopped here.
    plan.close();
    return reply.send();
  }
  // fastify gives a Buffer without Content-Type one (application/octet-stream); a stream it leaves alone.
  if (plan.bodyBuffer && answer.headers['content-type'] !== undefined) return reply.send(plan.bodyBuffer);
  // The stream closes when the body is sent, when it fails (a decoding past max_decoded_bytes: the
  // client sees the body cut), or when the client leaves: then the record and any decoder are released.
  const stream = Readable.from(plan.bodyBuffer ? [plan.bodyBuffer] : plan.body);
  stream.once('close', () => plan.close());
  return reply.send(stream);
}

/**
 * 404 for a URI-R no archive has: to a browser asking for a page
 * ({@link wantsPage}), the archive's "Not archived" page
 * (web/not-archived.ts, sent as an error page by web/page.ts: in the
 * banner page's frame it tells the banner, which then says so too); to
 * anything else, the one-line text answer. No Memento headers: there is no
 * memento.
 */
async function notArchived(app: FastifyInstance, req: FastifyRequest, reply: FastifyReply, uriR: string): Promise<FastifyReply> {
  reply.header('access-control-allow-origin', '*');
  const page = wantsPage(req) ? errorPage(app.config, req, 404, await notArchivedData(app, uriR), undefined, 'not-archived') : undefined;
  if (page) return reply.code(404).headers(page.headers).send(page.html);
  return reply.code(404).type(TEXT).send(`no memento of ${uriR} in any archive\n`);
}
