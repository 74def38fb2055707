/**
 * What every route of the archive's HTTP side shares: the store and config
 * as fastify decorators, the URI-R of the request read once by a hook (the
 * part of the request target after a route's fixed segments, query
 * included: `/tg/http://a.example/x?y=1` names `http://a.example/x?y=1`),
 * the public base URL, Accept-Datetime, and the helpers that register a
 * read-only resource and answer a redirect. URL space: docs/url-space.md.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { parseHttpDate, toEpochSeconds } from '#shared/http-date.js';
import { httpError } from '#shared/http-error.js';
import { formatLinkHeader } from '#shared/link.js';
import { formatHostPort, type HostPort } from '#shared/net.js';
import { isHostHeader, MAX_URI_LENGTH, normalizeUriR, UriError, urlkeyOfNormal } from '#shared/uri.js';
import type { ArchiveConfig } from '../config.js';
import type { Resource } from '../metrics.js';
import { type ArchiveSpan, isLocal } from '../spans.js';
import { TEXT } from '../read/answer.js';
import type { Reader, ReadRequest } from '../read/reader.js';
import type { VisibleIndex } from '../read/visible-index.js';
import type { ArchiveStore } from '../store/store.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The archive daemon's settings. */
    config: ArchiveConfig;
    /** The open store (WARC files and index). */
    store: ArchiveStore;
    /** The index as the public sees it, through the access rules in force (archive/read/visible-index.ts): every read path asks it. */
    visible: VisibleIndex;
    /** The Memento protocol's reads (TimeGate, Memento, TimeMap, record) as plain answers (archive/read/reader.ts). */
    reader: Reader;
  }
  interface FastifyRequest {
    /** The URI-R the request names (routes with `config: { uriR: true }`), normalised. */
    uriR: string;
    /** Its urlkey (shared/uri.ts `exactUrlkey`). */
    urlkey: string;
    /** The archive's public base URL for this request (no trailing slash). */
    readonly base: string;
  }
  interface FastifyContextConfig {
    /** The route's address ends in a URI-R (after its `*`): the hook reads it into `req.uriR`. */
    uriR?: boolean;
    /** The resource it serves, for the metrics (`memento_archive_requests_total`). */
    resource?: Resource;
  }
}

/** Media type of every text answer (errors, the bodies of redirects): archive/read/answer.ts. */
export { TEXT };
const READ_METHODS = 'GET, HEAD';

/**
 * Decorates `app` with the config, the store, and the request's `uriR`,
 * `urlkey` and `base` (`uriR` and `urlkey` are read by the `onRequest`
 * hook of the routes that ask for them: {@link readRoute}).
 */
export function decorateArchive(app: FastifyInstance, config: ArchiveConfig, store: ArchiveStore): void {
  app.decorate('config', config);
  app.decorate('store', store);
  app.decorateRequest('uriR', '');
  app.decorateRequest('urlkey', '');
  app.decorateRequest('base', {
    getter(this: FastifyRequest) {
      const { localAddress, localPort } = this.socket;
      return baseOf(config, this.headers.host, localAddress && localPort ? { host: localAddress, port: localPort } : undefined);
    },
  });
}

/**
 * Public base URL: the replay base ({@link replayBase}) when the request's
 * Host is `replay_origin`'s; else configured (`base_url`), else `http://` +
 * the request's Host when it is `host[:port]`, else the address the
 * request came in on (`local`, the socket's), else the configured listen
 * address.
 */
export function baseOf(config: Pick<ArchiveConfig, 'baseUrl' | 'listen' | 'replayOrigin'>, host: string | undefined, local?: HostPort): string {
  if (config.replayOrigin && host && onReplayHost(config, host)) return replayBase(config)!;
  if (config.baseUrl) return config.baseUrl;
  if (host && isHostHeader(host)) return `http://${host}`;
  const at = local ?? config.listen;
  return `http://${formatHostPort(at.host, at.port)}`;
}

/**
 * Where mementos are served for the pages for people to frame them, with
 * `replay_origin` set: that origin with `base_url`'s path
 * (`https://replay.example.org` + `/archive`); `undefined` without it.
 */
export function replayBase(config: Pick<ArchiveConfig, 'baseUrl' | 'replayOrigin'>): string | undefined {
  if (!config.replayOrigin) return undefined;
  return config.replayOrigin + (config.baseUrl ? new URL(config.baseUrl).pathname.replace(/\/+$/, '') : '');
}

/** Whether a `Host` header names `replay_origin`'s host and port (ASCII case-insensitive, default port implied). */
export function onReplayHost(config: Pick<ArchiveConfig, 'replayOrigin'>, host: string | undefined): boolean {
  if (!config.replayOrigin || !host) return false;
  const origin = new URL(config.replayOrigin);
  try {
    return new URL(`${origin.protocol}//${host}`).host === origin.host;
  } catch {
    return false;
  }
}

/**
 * The origin of the archive's pages for people, which alone may frame a
 * memento (its `frame-ancestors`): `base_url`'s when the request came in on
 * `replay_origin`, else the request's own base's.
 */
export function pagesOrigin(config: Pick<ArchiveConfig, 'baseUrl' | 'replayOrigin'>, base: string): string {
  const replay = replayBase(config);
  return new URL(replay !== undefined && base === replay && config.baseUrl ? config.baseUrl : base).origin;
}

/**
 * Refuses a page for people (or its script or stylesheet) asked for on
 * `replay_origin`: a stored page served there must not reach the
 * archive's pages in its own origin.
 *
 * @throws HttpError 404 naming where the pages are
 */
export function refuseOnReplayHost(config: Pick<ArchiveConfig, 'baseUrl' | 'replayOrigin'>, req: FastifyRequest): void {
  if (onReplayHost(config, req.headers.host))
    throw httpError(404, `${config.replayOrigin} serves mementos only; the archive's pages are at ${config.baseUrl}/web/`);
}

/**
 * The URI-R in a raw request target: what follows the route's fixed
 * segments (those before its `*`), query included; read by {@link parseUriR}.
 *
 * @param route the route's pattern, e.g. `/:archive/timegate/*`
 * @param maxLength the longest URI-R accepted (`max_url_length`)
 * @throws HttpError 400 when nothing follows, or it is not an http(s) URL
 */
export function uriRAfter(target: string, route: string, maxLength = MAX_URI_LENGTH): { uriR: string; urlkey: string } {
  const fixed = route.split('/').indexOf('*');
  let at = 0;
  for (let i = 0; i < fixed && at >= 0; i++) at = target.indexOf('/', at) + 1 || -1;
  return parseUriR(at > 0 ? target.slice(at) : '', maxLength, target.slice(0, Math.max(0, at)));
}

/**
 * A URI-R as an address of the archive carries it (the part after a
 * route's fixed segments, or the URL of a `/web/` page): a percent-encoded
 * `http%3A…` is decoded first, then normalised (shared/uri.ts).
 *
 * @param after what came before it in the address, named in the errors (none: not named)
 * @throws HttpError 400 when it is empty, its percent-encoding is malformed, or it is not an http(s) URL
 */
export function parseUriR(text: string, maxLength = MAX_URI_LENGTH, after?: string): { uriR: string; urlkey: string } {
  const where = after === undefined ? '' : ` after ${after}`;
  let rest = text;
  if (/^https?%3a/i.test(rest)) {
    try {
      rest = decodeURIComponent(rest);
    } catch {
      throw httpError(400, `the URL${where} has a malformed percent-encoding`);
    }
  }
  if (!rest) throw httpError(400, `no URL given${where}`);
  try {
    const uriR = normalizeUriR(rest, maxLength);
    return { uriR, urlkey: urlkeyOfNormal(uriR) };
  } catch (err) {
    if (err instanceof UriError) throw httpError(400, err.message);
    throw err;
  }
}

/**
 * The local archive named `id`.
 *
 * @throws HttpError 404 when no archive has that id, or it is a remote one (the message says where it is served)
 */
export function localArchive(config: ArchiveConfig, id: string): ArchiveSpan {
  const a = config.archives.find((x) => x.id === id);
  if (a && isLocal(a)) return a;
  if (a) throw httpError(404, `archive "${id}" is served by ${a.timegate}`);
  throw httpError(404, `no archive named "${id}" here (archives: ${config.archives.map((x) => x.id).join(', ')})`);
}

/**
 * The read a route's address names (`/<id>/…/<URI-R>`, a route with
 * `uriR: true`): its local archive, the URI-R and urlkey, the public base
 * URL, as the reader takes them (archive/read/reader.ts `ReadRequest`).
 *
 * @throws HttpError 404 when `<id>` is no local archive ({@link localArchive})
 */
export function archiveRead(config: ArchiveConfig, req: FastifyRequest<{ Params: Record<string, string> }>): ReadRequest {
  return { archiveId: localArchive(config, req.params.archive ?? '').id, uriR: req.uriR, urlkey: req.urlkey, base: req.base };
}

/**
 * Accept-Datetime (RFC 7089 §2.1.1) as epoch seconds; `undefined` when
 * absent or empty (a blank value asks for no datetime: it is answered as no
 * header, as Memento validators expect).
 *
 * @throws HttpError 400 when it is not an HTTP-date (with `Vary` and the `original` link)
 */
export function acceptDatetime(req: FastifyRequest): number | undefined {
  const h = req.headers['accept-datetime'];
  const seconds = acceptDatetimeSeconds(h);
  if (seconds === null) {
    throw httpError(400, `Accept-Datetime is not an HTTP date like "Tue, 20 Mar 2001 20:35:00 GMT": ${JSON.stringify(String(h).slice(0, 80))}`, {
      headers: { vary: 'accept-datetime', link: formatLinkHeader([{ uri: req.uriR, rel: 'original' }]) },
    });
  }
  return seconds;
}

/**
 * An Accept-Datetime header as sent, as epoch seconds: `undefined` when
 * absent or blank, `null` when it is not an HTTP-date ({@link acceptDatetime}
 * answers that with a 400).
 */
export function acceptDatetimeSeconds(h: string | string[] | undefined): number | undefined | null {
  if (h === undefined || String(h).trim() === '') return undefined;
  const d = parseHttpDate(Array.isArray(h) ? h[0] : h);
  return d ? toEpochSeconds(d) : null;
}

/**
 * Whether the request is a browser's navigation that wants a page for
 * people: its Accept names `text/html` (with a non-zero q) and does not
 * name `application/link-format` (a Memento client). Resources that answer
 * such a request differently send `Vary: Accept`.
 */
export function wantsPage(req: FastifyRequest): boolean {
  return wantsPageAccept(req.headers.accept);
}

/** {@link wantsPage} of a request's `Accept` header as sent. */
export function wantsPageAccept(header: string | undefined): boolean {
  const accept = header ?? '';
  if (/application\/link-format/i.test(accept)) return false;
  return accept.split(',').some((part) => {
    const [type, ...params] = part.split(';').map((x) => x.trim().toLowerCase());
    const q = params.find((p) => p.startsWith('q='));
    return type === 'text/html' && (!q || Number(q.slice(2)) > 0);
  });
}

/** Answers a redirect: `status`, `Location`, and the location as a one-line text body. */
export function redirect(reply: FastifyReply, status: 302 | 303, location: string): FastifyReply {
  return reply
    .code(status)
    .header('location', location)
    .type(TEXT)
    .send(location + '\n');
}

/** The handler of a read-only resource. */
export type ReadHandler = (req: FastifyRequest<{ Params: Record<string, string> }>, reply: FastifyReply) => Promise<unknown>;

/**
 * Registers GET and HEAD at `url` (HEAD answers as GET without the body,
 * RFC 9110 §9.3.2); POST, PUT, DELETE and PATCH get 405 with `Allow: GET,
 * HEAD` and OPTIONS 204 with the same `Allow` (RFC 9110 §15.5.6, §9.3.7),
 * answered before any body is read. OPTIONS is also a CORS preflight
 * answer open to any origin for GET and HEAD with any request headers (a
 * replayed page, sandboxed in an opaque origin, preflights its
 * script-made requests to the archive).
 *
 * @param opts.uriR the address ends in a URI-R (read into `req.uriR` by the hook)
 * @param opts.resource what it serves, for the metrics
 */
export function readRoute(app: FastifyInstance, url: string, handler: ReadHandler, opts: { uriR?: boolean; resource?: Resource } = {}): void {
  // The URI-R is parsed for each request by a hook of this route alone (a hook on every route costs every request a
  // call and a promise), a plain callback: no promise. Kept parses of recent targets (an LRU of 4 MiB) cost more than
  // they saved under a load spread over many URLs (bench/timegate.ts), for ~1 µs saved on a hot one.
  const maxLength = app.config.maxUrlLength;
  const onRequest = opts.uriR
    ? (req: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
        try {
          const r = uriRAfter(req.raw.url ?? '/', url, maxLength);
          req.uriR = r.uriR;
          req.urlkey = r.urlkey;
        } catch (err) {
          return done(err as Error);
        }
        done();
      }
    : undefined;
  app.route({ method: ['GET', 'HEAD'], url, exposeHeadRoute: false, config: { uriR: opts.uriR ?? false, resource: opts.resource }, onRequest, handler });
  const notAllowed = async (req: FastifyRequest, reply: FastifyReply) => {
    reply.header('allow', READ_METHODS);
    if (req.method === 'OPTIONS') {
      reply.header('access-control-allow-origin', '*').header('access-control-allow-methods', READ_METHODS).header('access-control-allow-headers', '*');
      return reply.code(204).send();
    }
    throw httpError(405, `${req.method} is not allowed here; use GET or HEAD`, { headers: { allow: READ_METHODS } });
  };
  app.route({ method: ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'], url, onRequest: notAllowed, handler: notAllowed });
}
