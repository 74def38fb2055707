/**
 * The feeds of changes: `GET /feed/<URL>` and `GET /feed/<prefix>*` answer
 * an Atom feed (RFC 4287, `application/atom+xml`) with one entry per new
 * memento of the URL, or of every URL under the prefix (a revisit, the
 * same payload served again, is no change and no entry), newest first,
 * paged as an archived feed (RFC 5005 §4): this document, the subscription
 * document, holds the newest entries and links `prev-archive` to
 * `/feed/archive/<page>/<URL or prefix*>`, whose pages are counted from
 * the oldest entry and never change once full (archive/read/feeds.ts).
 *
 * Each entry: `id` the URI-M, `updated` its Memento-Datetime, `link
 * rel="alternate"` the `/web/<ts>/<URL>` page, `link rel="related"` the
 * `/web/diff/<previous ts>/<ts>/<URL>` page against the entry before it of
 * the same URL (none for the first), the archive as `author`. What the
 * access rules hide is in no feed (read through `app.visible`); a URL with
 * no entry is a 404 (451 when the rules block its mementos), as its
 * TimeMap is.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { toTimestamp14 } from '#shared/http-date.js';
import { httpError } from '#shared/http-error.js';
import { buildUriM } from '#shared/uri-m.js';
import { parseUriR, readRoute, refuseOnReplayHost } from '../http/context.js';
import type { FeedDocument, FeedRow } from '../read/feeds.js';
import { ATOM_TYPE, type AtomEntry, type AtomLink, atomDocument } from './atom.js';

/** A feed address: the URL (normalised) or prefix, and the archive page asked for (undefined: the subscription document). */
interface FeedAddress {
  uriR: string;
  urlkey: string;
  prefix: boolean;
  page?: number;
}

/** The feeds plugin: `/feed/*`. */
export async function feedRoutes(app: FastifyInstance): Promise<void> {
  // Not on replay_origin: a stored page there never reaches the archive's own addresses in its origin.
  app.addHook('onRequest', async (req) => refuseOnReplayHost(app.config, req));
  readRoute(app, '/feed/*', (req, reply) => feed(app, req, reply), { resource: 'feed' });
}

/**
 * The address after `/feed/`: `[archive/<page>/]<URL>[*]`.
 * @throws HttpError 400 for a malformed page number or URL
 */
export function parseFeedAddress(rest: string, maxLength: number): FeedAddress {
  let page: number | undefined;
  const m = /^archive\/(\d{1,9})\//.exec(rest);
  if (m) {
    page = Number(m[1]);
    rest = rest.slice(m[0].length);
  } else if (/^archive\/[^/]*\//.test(rest)) throw httpError(400, 'an archive page of a feed is /feed/archive/<page number>/<URL>');
  const prefix = rest.endsWith('*');
  const { uriR, urlkey } = parseUriR(prefix ? rest.slice(0, -1) : rest, maxLength);
  return { uriR, urlkey, prefix, page };
}

/** `GET /feed/…`: a feed document. */
async function feed(app: FastifyInstance, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const a = parseFeedAddress((req.raw.url ?? '/feed/').slice('/feed/'.length), app.config.maxUrlLength);
  const doc = await app.visible.feeds.document(a.urlkey, a.prefix, a.page);
  if (!doc.total) {
    const notFound = `no capture of ${a.uriR}${a.prefix ? '*' : ''} is archived here`;
    throw a.prefix ? httpError(404, notFound) : await app.visible.absent(a.urlkey, a.uriR, req.base, notFound);
  }
  return reply
    .code(200)
    .header('content-type', `${ATOM_TYPE}; charset=utf-8`)
    .header('x-content-type-options', 'nosniff')
    .send(atomDocument(feedDocument(req.base, a, doc)));
}

/** The Atom document of `doc` at address `a` (RFC 4287; RFC 5005 §4 links and `fh:archive`). */
function feedDocument(base: string, a: FeedAddress, doc: FeedDocument) {
  const target = `${a.uriR}${a.prefix ? '*' : ''}`;
  const subscription = `${base}/feed/${target}`;
  const archivePage = (p: number) => `${base}/feed/archive/${p}/${target}`;
  const links: AtomLink[] = [
    { rel: 'self', href: a.page === undefined ? subscription : archivePage(a.page), type: ATOM_TYPE },
    { rel: 'alternate', href: `${base}/web/*/${target}`, type: 'text/html' },
  ];
  if (a.page === undefined) {
    if (doc.archives) links.push({ rel: 'prev-archive', href: archivePage(doc.archives), type: ATOM_TYPE });
  } else {
    links.push({ rel: 'current', href: subscription, type: ATOM_TYPE });
    if (a.page > 1) links.push({ rel: 'prev-archive', href: archivePage(a.page - 1), type: ATOM_TYPE });
    if (a.page < doc.archives) links.push({ rel: 'next-archive', href: archivePage(a.page + 1), type: ATOM_TYPE });
  }
  const what = a.prefix ? `under ${a.uriR}` : `of ${a.uriR}`;
  return {
    id: subscription,
    title: `Changes ${what}${a.page === undefined ? '' : ` (archive page ${a.page})`}`,
    // Entries are newest first: the first one's Memento-Datetime is the last change this document shows.
    updated: doc.entries[0].datetime,
    author: archiveAuthor(base),
    links,
    archive: a.page !== undefined,
    entries: doc.entries.map((e) => feedEntry(base, e)),
  };
}

/** The author of the archive's feeds (RFC 4287 §4.2.1): the archive at `base`, its pages for people. */
export function archiveAuthor(base: string): { name: string; uri: string } {
  return { name: `memento-archive at ${new URL(base).host}`, uri: `${base}/web/` };
}

/** One entry: the memento `e` as a change of its URL. */
function feedEntry(base: string, e: FeedRow): AtomEntry {
  const ts = toTimestamp14(e.datetime);
  const links: AtomLink[] = [{ rel: 'alternate', href: `${base}/web/${ts}/${e.uri_r}`, type: 'text/html' }];
  if (e.prev !== null) links.push({ rel: 'related', href: `${base}/web/diff/${toTimestamp14(e.prev)}/${ts}/${e.uri_r}`, type: 'text/html' });
  return {
    id: buildUriM(base, { archive: e.archive_id, timestamp: ts, modifier: '', uriR: e.uri_r }),
    title: `${e.uri_r} ${e.prev === null ? 'first archived' : 'changed'}`,
    updated: e.datetime,
    links,
    summary: `Archived ${ts.slice(0, 4)}-${ts.slice(4, 6)}-${ts.slice(6, 8)} ${ts.slice(8, 10)}:${ts.slice(10, 12)}:${ts.slice(12)} UTC: HTTP ${e.status}${e.mime ? `, ${e.mime}` : ''}`,
  };
}
