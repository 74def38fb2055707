/**
 * The replay's fallback for requests a replayed page sends to the
 * archive's own origin with a root-relative URL the replay did not map
 * (a script the replay shim missed, `location.href = '/next'`): the
 * browser resolved `/api/items.json` against the page's archive address,
 * so the request reaches `{base}/api/items.json`, which is no address of
 * the archive. When its `Referer` is a Memento of this archive
 * (`{base}/<id>/memento/<ts>[mod]/<URI-R>`), the path meant the URI-R's
 * site: a 302 to the Memento of that URL at the Referer's time
 * (`{base}/<id>/memento/<ts>/<URI-R origin><path>`), as pywb does. Only
 * GET and HEAD, only for paths no route of the archive answers (the
 * not-found handler calls it); the Memento it names applies the access
 * rules as ever.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { httpError } from '#shared/http-error.js';
import { buildUriM, parseUriM } from '#shared/uri-m.js';
import { isLocal } from '../spans.js';
import { redirect } from './context.js';

/** The scheme and authority an http(s) URI-R starts with. */
const SITE = /^https?:\/\/[^/?#]+/i;

/**
 * Where a request that matched no route is sent, from its `Referer`: the
 * Memento address of `target` (path and query, as the request line has
 * them) on the site of the Referer's URI-R, in the same archive at the
 * same time, in the replay form; `undefined` when the Referer is not a
 * Memento address under `base` of a local archive, or `target` is not a
 * path.
 *
 * @param base the archive's public base URL for this request, no trailing slash
 * @param target the request target (`/api/items.json?page=2`)
 * @param referer the request's `Referer` header
 * @param isArchive whether an id names a local archive
 */
export function refererTarget(base: string, target: string, referer: string | undefined, isArchive: (id: string) => boolean): string | undefined {
  if (!referer || !referer.startsWith(base + '/') || !target.startsWith('/') || target.startsWith('//')) return undefined;
  const m = parseUriM(referer.slice(base.length));
  const siteOf = m && m.base === '' && isArchive(m.archive) ? SITE.exec(m.uriR) : null;
  if (!m || !siteOf) return undefined;
  let origin: string;
  try {
    const site = new URL(siteOf[0]);
    if (site.protocol !== 'http:' && site.protocol !== 'https:') return undefined;
    origin = site.origin;
  } catch {
    return undefined;
  }
  return buildUriM(base, { archive: m.archive, timestamp: m.timestamp, modifier: '', uriR: origin + target });
}

/**
 * The archive's answer to a request no route matched: a 302 into the
 * replay ({@link refererTarget}) for a GET or HEAD from a replayed page,
 * open to CORS (the page's origin is opaque); else 404 as before. Both
 * depend on the `Referer`: `Vary: Referer`.
 *
 * @throws HttpError 404 when it is not a replayed page's request
 */
export async function notFound(req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const { archives } = req.server.config;
  const location =
    req.method === 'GET' || req.method === 'HEAD'
      ? refererTarget(req.base, req.url, req.headers.referer, (id) => archives.some((a) => a.id === id && isLocal(a)))
      : undefined;
  if (location === undefined)
    throw httpError(404, `nothing here: ${req.method} ${req.url.slice(0, 200)} is not an address of this archive`, { headers: { vary: 'referer' } });
  reply.header('vary', 'referer').header('access-control-allow-origin', '*');
  return redirect(reply, 302, location);
}
