/**
 * The archive daemon's HTTP side (fastify): capture ingest by PUT and the
 * Memento read side (RFC 7089) — redirector, TimeGates, Mementos, TimeMaps,
 * timebundle and host-meta discovery. URL space: DESIGN.md "Archive daemon
 * URL space".
 */
import http from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { formatHttpDate, parseHttpDate, parseTimestamp14, toEpochSeconds } from '../shared/http-date.js';
import { formatLink, formatLinkHeader, hasRel, parseLinks, type Link } from '../shared/link.js';
import { normalizeUriR, exactUrlkey, UriError } from '../shared/uri.js';
import { clientErrorHandler, putAuthHook } from './auth.js';
import { archiveForInstant, type ArchiveConfig, type ArchiveSpan } from './config.js';
import { canDecode, decodeBody, decodedLength } from './memento/content-coding.js';
import { isHtml, withBaseElement, withBaseElementBuffer } from './memento/html-base.js';
import { mementoLinks, select, uris, type Selection } from './memento/navigation.js';
import { hasPreference, parsePrefer, preferenceApplied, type PreferRequest } from './memento/prefer.js';
import type { MementoRow } from './store/index-db.js';
import type { StoredResponse } from './store/warc.js';
import { IngestError, type ArchiveStore } from './store/store.js';

const TEXT = 'text/plain; charset=UTF-8';
const LINK_FORMAT = 'application/link-format';
const READ_METHODS = 'GET, HEAD';

/** A client error with a one-line reason; rendered as text/plain. */
class HttpError extends Error {
  constructor(readonly status: number, message: string, readonly headers: Record<string, string> = {}) {
    super(message);
  }
}

export interface ServerOptions {
  /** fastify/pino logger setting; false in tests. */
  logger?: boolean | object;
}

/**
 * Builds the archive's fastify instance (not listening yet).
 *
 * @param config validated archive config
 * @param store an open store over `config.dataDir`
 */
export async function buildArchiveServer(config: ArchiveConfig, store: ArchiveStore, opts: ServerOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger: opts.logger ?? false,
    // Request targets carry whole URI-Rs (query included); allow long ones.
    routerOptions: { maxParamLength: 100_000 },
    return503OnClosing: true,
    // Limits and timeouts from the config (README "Archive configuration"); broken requests get a one-line reason.
    http: {
      maxHeaderSize: config.maxHttpHeaderBytes,
      headersTimeout: config.headersTimeout * 1000,
      connectionsCheckingInterval: Math.max(100, Math.min(30_000, config.headersTimeout * 500)),
    },
    requestTimeout: config.requestTimeout * 1000,
    connectionTimeout: config.idleTimeout * 1000,
    keepAliveTimeout: config.keepAliveTimeout * 1000,
    clientErrorHandler: clientErrorHandler(config),
  });

  const local = new Map(config.archives.filter((a) => !a.timegate).map((a) => [a.id, a]));

  /** Public base URL: configured, else from the request's Host. */
  function baseOf(req: FastifyRequest): string {
    if (config.baseUrl) return config.baseUrl;
    const host = req.headers.host;
    if (host && /^[A-Za-z0-9.\-:[\]]+$/.test(host)) return `http://${host}`;
    return `http://${config.listen.host.includes(':') ? `[${config.listen.host}]` : config.listen.host}:${config.listen.port}`;
  }

  /** The URI-R that follows `prefix` in the raw request target. */
  function uriROf(req: FastifyRequest, prefix: string): { uriR: string; urlkey: string } {
    let rest = req.raw.url!.slice(prefix.length);
    if (/^https?%3a/i.test(rest)) rest = decodeURIComponent(rest);
    if (!rest) throw new HttpError(400, 'no URL given after ' + prefix);
    try {
      const uriR = normalizeUriR(rest);
      return { uriR, urlkey: exactUrlkey(uriR) };
    } catch (err) {
      if (err instanceof UriError) throw new HttpError(400, err.message);
      throw err;
    }
  }

  function archiveOf(id: string): ArchiveSpan {
    const a = local.get(id);
    if (a) return a;
    const remote = config.archives.find((x) => x.id === id);
    if (remote) throw new HttpError(404, `archive "${id}" is served by ${remote.timegate}`);
    throw new HttpError(404, `no archive named "${id}" here (archives: ${config.archives.map((x) => x.id).join(', ')})`);
  }

  /** Accept-Datetime as epoch seconds; `undefined` when absent. @throws HttpError 400 when unparsable. */
  function acceptDatetime(req: FastifyRequest, uriR: string): number | undefined {
    const h = req.headers['accept-datetime'];
    if (h === undefined) return undefined;
    const d = parseHttpDate(Array.isArray(h) ? h[0] : h);
    if (!d) {
      throw new HttpError(400, `Accept-Datetime is not an HTTP date like "Tue, 20 Mar 2001 20:35:00 GMT": ${JSON.stringify(String(h).slice(0, 80))}`, {
        vary: 'accept-datetime',
        link: formatLinkHeader([{ uri: uriR, rel: 'original' }]),
      });
    }
    return toEpochSeconds(d);
  }

  function sendText(reply: FastifyReply, status: number, text: string) {
    return reply.code(status).type(TEXT).send(text + '\n');
  }

  app.setErrorHandler((err, req, reply) => {
    if (err instanceof HttpError) {
      reply.headers(err.headers);
      return sendText(reply, err.status, err.message);
    }
    if (err instanceof IngestError) {
      reply.header('connection', 'close');
      return sendText(reply, err.status, err.message);
    }
    const status = (err as { statusCode?: number }).statusCode;
    if (status && status >= 400 && status < 500) return sendText(reply, status, (err as Error).message);
    req.log.error({ err }, 'request failed');
    return sendText(reply, 500, 'internal error: ' + (err as Error).message);
  });

  app.setNotFoundHandler((req, reply) => sendText(reply, 404, `nothing here: ${req.method} ${req.url.slice(0, 200)} is not an address of this archive`));

  /** Registers GET/HEAD `url` and answers 405 with Allow to other methods. */
  function read(url: string, handler: (req: FastifyRequest<{ Params: Record<string, string> }>, reply: FastifyReply) => Promise<unknown>) {
    app.route({ method: ['GET', 'HEAD'], url, exposeHeadRoute: false, handler });
    // Answered in onRequest, before any body parsing: a POST with a body of any type is 405, not 415.
    const notAllowed = async (req: FastifyRequest, reply: FastifyReply) => {
      reply.header('allow', READ_METHODS);
      if (req.method === 'OPTIONS') return reply.code(204).send();
      return sendText(reply, 405, `${req.method} is not allowed here; use GET or HEAD`);
    };
    app.route({ method: ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'], url, onRequest: notAllowed, handler: notAllowed });
  }

  // ---- capture ingest ------------------------------------------------------
  await app.register(async (put) => {
    put.addHook('onRequest', putAuthHook(config));
    put.removeAllContentTypeParsers();
    put.addContentTypeParser('*', (_req, _payload, done) => done(null));
    put.put(`${config.putPrefix}put/*`, async (req, reply) => {
      const te = req.headers['transfer-encoding'];
      const cl = req.headers['content-length'];
      if (cl === undefined && !te) {
        reply.header('connection', 'close');
        return sendText(reply, 411, 'a capture PUT needs Content-Length or Transfer-Encoding: chunked');
      }
      if (cl !== undefined && Number(cl) > config.maxCaptureBytes) {
        reply.header('connection', 'close');
        return sendText(reply, 413, `capture record of ${cl} bytes is larger than the limit of ${config.maxCaptureBytes} bytes`);
      }
      const result = await store.ingest(req.raw, new Date());
      const uriM = uris.memento(baseOf(req), result.row.archive_id, result.row);
      reply.header('location', uriM);
      return sendText(reply, result.created ? 201 : 200, uriM);
    });
  });

  // ---- discovery (RFC 6415 host-meta) --------------------------------------
  read('/.well-known/host-meta', async (req, reply) => {
    const base = xmlAttr(baseOf(req));
    const xml = `<?xml version="1.0" encoding="UTF-8"?>
<XRD xmlns="http://docs.oasis-open.org/ns/xri/xrd-1.0">
  <Link rel="timegate" template="${base}/tg/{uri}"/>
  <Link rel="timemap" type="${LINK_FORMAT}" template="${base}/tg/timemap/{uri}"/>
</XRD>
`;
    return reply.type('application/xrd+xml; charset=UTF-8').send(xml);
  });
  read('/.well-known/host-meta.json', async (req, reply) => {
    const base = baseOf(req);
    return reply.type('application/jrd+json; charset=utf-8').send(JSON.stringify({
      links: [
        { rel: 'timegate', template: `${base}/tg/{uri}` },
        { rel: 'timemap', type: LINK_FORMAT, template: `${base}/tg/timemap/{uri}` },
      ],
    }, null, 2) + '\n');
  });

  // ---- redirector ----------------------------------------------------------
  read('/tg/*', async (req, reply) => {
    const { uriR, urlkey } = uriROf(req, '/tg/');
    const base = baseOf(req);
    const t = acceptDatetime(req, uriR);
    const ad = req.headers['accept-datetime'];
    // Remote archives are asked only when the choice depends on them.
    let holdings = await holdingsOf(urlkey, null);
    let target = clearChoice(config.archives, holdings, t);
    if (!target) {
      holdings = await holdingsOf(urlkey, { url: (a) => a.timegate! + uriR, how: 'HEAD', acceptDatetime: t === undefined ? undefined : String(ad) });
      target = pickArchive(config.archives, holdings, t);
    }
    if (!target) return sendText(reply, 404, `no memento of ${uriR} in any archive`);
    const location = target.timegate ? target.timegate + uriR : uris.timegate(base, target.id, uriR);
    // The memento links the chosen TimeGate will send, so that a client that reads the first
    // TimeGate of the redirect chain (py-memento-client's rule) gets first/prev/next/last too.
    let mementos: Link[] = holdings.get(target.id)?.links ?? [];
    if (!target.timegate) {
      const n = await store.index.neighbourhood(target.id, urlkey, t ?? Number.MAX_SAFE_INTEGER);
      mementos = n ? mementoLinks(base, target.id, select(n, t ?? Number.MAX_SAFE_INTEGER)) : [];
    }
    reply.header('location', location);
    reply.header('vary', 'accept-datetime');
    reply.header('link', formatLinkHeader([
      { uri: uriR, rel: 'original' },
      { uri: uris.indexTimemap(base, uriR), rel: 'timemap index', type: LINK_FORMAT },
      ...mementos,
    ]));
    return sendText(reply, 302, location);
  });

  /**
   * What each archive holds of a URI-R: local archives from the index
   * (first/last datetime), remote ones by asking them (`HEAD`: HEAD their
   * TimeGate, with the client's Accept-Datetime when it sent one; `self`:
   * GET their TimeMap and read its `self` link). A remote that does not
   * answer in time is `unknown`; with `remote` null they are not asked
   * (and absent from the map).
   */
  async function holdingsOf(urlkey: string, remote: { url: (a: ArchiveSpan) => string; how: 'HEAD' | 'self'; acceptDatetime?: string } | null): Promise<Map<string, Holding>> {
    const out = new Map<string, Holding>();
    for (const s of await store.index.spans(urlkey)) if (local.has(s.archive_id)) out.set(s.archive_id, { state: 'yes', first: s.first, last: s.last });
    if (!remote) return out;
    await Promise.all(config.archives.filter((a) => a.timegate).map(async (a) => {
      out.set(a.id, remote.how === 'HEAD' ? await probeRemote(remote.url(a), remote.acceptDatetime) : await remoteTimemapSpan(remote.url(a)));
    }));
    return out;
  }

  // ---- TimeGate (RFC 7089 §4.2.1, pattern 2.1) ----------------------------
  read('/:archive/timegate/*', async (req, reply) => {
    const archive = archiveOf(req.params.archive);
    const { uriR, urlkey } = uriROf(req, `/${req.params.archive}/timegate/`);
    const base = baseOf(req);
    const t = acceptDatetime(req, uriR) ?? Number.MAX_SAFE_INTEGER;
    const n = await store.index.neighbourhood(archive.id, urlkey, t);
    if (!n) return sendText(reply, 404, `no memento of ${uriR} in archive "${archive.id}"`);
    const s = select(n, t);
    const prefer = parsePrefer(req.headers.prefer);
    // Variant 1: the URI-M that satisfies the most dimensions asked for.
    const raw = prefer.dims.has('original-content');
    const location = uris.memento(base, archive.id, s.memento, raw);
    reply.header('location', location);
    reply.header('vary', 'accept-datetime, prefer');
    if (hasPreference(prefer)) {
      const row = raw ? undefined : await store.index.byId(s.memento.id);
      reply.header('preference-applied', preferenceApplied(prefer, raw, row !== undefined && await defaultVariantChanges(row)));
    }
    reply.header('link', formatLinkHeader([
      { uri: uriR, rel: 'original' },
      { uri: uris.timemap(base, archive.id, uriR), rel: 'timemap', type: LINK_FORMAT },
      { uri: uris.timebundle(base, archive.id, uriR), rel: 'timebundle' },
      ...mementoLinks(base, archive.id, s, raw),
    ]));
    return sendText(reply, 302, location);
  });

  // ---- Memento (RFC 7089 §4.2.1, §2.1.1) -----------------------------------
  read('/:archive/memento/*', async (req, reply) => {
    const archive = archiveOf(req.params.archive);
    const prefix = `/${req.params.archive}/memento/`;
    const after = req.raw.url!.slice(prefix.length);
    const slash = after.indexOf('/');
    if (slash < 0) throw new HttpError(400, 'a Memento address is /<archive>/memento/<14-digit timestamp>/<URL>');
    let ts = after.slice(0, slash);
    const idMode = ts.endsWith('id_');
    if (idMode) ts = ts.slice(0, -3);
    const when = parseTimestamp14(ts);
    if (!when) throw new HttpError(400, `malformed Memento timestamp ${JSON.stringify(ts.slice(0, 40))}; it is 14 digits YYYYMMDDhhmmss (UTC)`);
    const { uriR, urlkey } = uriROf(req, prefix + after.slice(0, slash + 1));
    const base = baseOf(req);
    const t = toEpochSeconds(when);
    // The navigation links (id, datetime, URI-R of first/last/prev/next), and the whole row of the
    // memento at or before `t` (the one served when its datetime is `t`), in one lookup.
    const n = await store.index.neighbourhood(archive.id, urlkey, t, true);
    if (!n) return sendText(reply, 404, `no memento of ${uriR} in archive "${archive.id}"`);
    const s = select(n, t);
    const row = n.atOrBefore[0] as MementoRow | undefined;
    if (!row || s.memento.datetime !== t || ts.length !== 14) {
      // Not a stored datetime (or a timestamp prefix): the nearest URI-M, as Wayback-style archives do.
      const location = uris.memento(base, archive.id, s.memento, idMode);
      reply.header('location', location);
      return sendText(reply, 302, location);
    }
    const prefer = parsePrefer(req.headers.prefer);
    return serveMemento(req, reply, base, archive.id, row, s, { idMode, raw: idMode || prefer.dims.has('original-content'), prefer }, uriR);
  });

  /**
   * The body of a Memento as it will be sent (DESIGN.md "Prefer"): the raw
   * variant, a non-HTML page, a bodyless answer, or an HTML page that
   * already has a base element goes out as stored; an HTML page gets its
   * base element, a gzip/deflate/br-encoded one after decoding (its decoded
   * length is counted in a second pass, so Content-Length stays exact; a
   * corrupt encoded body goes out as stored). Holds at most the first
   * 64 KiB of the page.
   *
   * @param stored the opened response record; it may be replaced (closed and reopened)
   * @returns the body stream, its exact length in bytes, whether it differs
   *   from the stored bytes, and the (possibly reopened) record to close
   */
  async function defaultBody(row: MementoRow, stored: StoredResponse, contentEncoding: string | undefined, raw: boolean):
    Promise<{ stored: StoredResponse; body: AsyncIterable<Uint8Array>; bodyBuffer: Buffer | null; length: number; changed: boolean; bodyless: boolean }> {
    const bodyless = stored.status === 204 || stored.status === 304 || stored.status < 200 || stored.bodyLength === 0;
    const asStored = { stored, body: stored.body, bodyBuffer: stored.bodyBuffer, length: stored.bodyLength, changed: false, bodyless };
    if (raw || !isHtml(row.mime) || bodyless) return asStored;
    if (!contentEncoding && stored.bodyBuffer) {
      // A small record, read whole: insert in memory.
      const r = withBaseElementBuffer(stored.bodyBuffer, row.uri_r);
      return { ...asStored, bodyBuffer: r.body, length: r.body.length, changed: r.added > 0 };
    }
    if (!contentEncoding) {
      const r = await withBaseElement(stored.body, row.uri_r);
      return { ...asStored, body: r.body, bodyBuffer: null, length: stored.bodyLength + r.added, changed: r.added > 0 };
    }
    if (!canDecode(contentEncoding)) return asStored;
    const r = await withBaseElement(decodeBody(stored.body, contentEncoding), row.uri_r).catch(() => null);
    if (r?.added) {
      const again = await store.readResponse(row);
      const total = await decodedLength(again.body, contentEncoding).finally(() => again.close());
      if (total !== null) return { ...asStored, body: r.body, bodyBuffer: null, length: total + r.added, changed: true };
    }
    // Nothing to insert, or the encoded body is corrupt: it goes out as stored.
    stored.close();
    const fresh = await store.readResponse(row);
    return { stored: fresh, body: fresh.body, bodyBuffer: fresh.bodyBuffer, length: fresh.bodyLength, changed: false, bodyless };
  }

  /**
   * Whether the default variant of a Memento differs from its stored body
   * (the base element goes in), for the TimeGate's Preference-Applied.
   */
  async function defaultVariantChanges(row: MementoRow): Promise<boolean> {
    if (!isHtml(row.mime)) return false;
    const stored = await store.readResponse(row);
    const enc = stored.headers.find(([k]) => k.toLowerCase() === 'content-encoding')?.[1].trim().toLowerCase();
    const plan = await defaultBody(row, stored, enc === 'identity' || enc === '' ? undefined : enc, false);
    plan.stored.close();
    return plan.changed;
  }

  /**
   * Sends one Memento: the stored status; the original headers as
   * `X-Archive-Orig-<name>`, plus Content-Type (and Content-Encoding /
   * Content-Length when the body goes out as stored) as themselves, and
   * Location for a 3xx; Memento-Datetime, Link, Vary, Preference-Applied,
   * Content-Location. The default variant of an HTML page gets its base
   * element (decoding a gzip/deflate/br body first); HEAD computes the same
   * headers as GET and sends no body.
   */
  async function serveMemento(req: FastifyRequest, reply: FastifyReply, base: string, archiveId: string, row: MementoRow, s: Selection,
    mode: { idMode: boolean; raw: boolean; prefer: PreferRequest }, uriR: string) {
    let stored = await store.readResponse(row);
    const headers: Record<string, string | string[]> = {};
    const add = (k: string, v: string) => {
      const cur = headers[k];
      headers[k] = cur === undefined ? v : Array.isArray(cur) ? [...cur, v] : [cur, v];
    };
    let contentType: string | undefined, contentEncoding: string | undefined, location: string | undefined;
    for (const [name, value] of stored.headers) {
      const lower = name.toLowerCase();
      if (!validHeaderName(lower)) continue;
      const v = headerValue(value);
      add(`x-archive-orig-${lower}`, v);
      if (lower === 'content-type') contentType ??= v;
      if (lower === 'content-encoding') contentEncoding ??= v.trim().toLowerCase();
      if (lower === 'location') location ??= v;
    }
    if (contentEncoding === 'identity' || contentEncoding === '') contentEncoding = undefined;

    const plan = await defaultBody(row, stored, contentEncoding, mode.raw);
    stored = plan.stored;
    const { body, bodyBuffer, length, changed, bodyless } = plan;
    if (contentType) headers['content-type'] = contentType;
    if (contentEncoding && !changed) headers['content-encoding'] = contentEncoding;
    headers['content-length'] = String(length);
    // As stored, even when relative: original-links means no URI is rewritten, to the archive or to the live web.
    if (location !== undefined && stored.status >= 300 && stored.status < 400) headers.location = location;
    headers['memento-datetime'] = formatHttpDate(row.datetime);
    headers.link = formatLinkHeader([
      { uri: row.uri_r, rel: 'original' },
      { uri: uris.timegate(base, archiveId, uriR), rel: 'timegate' },
      { uri: uris.timemap(base, archiveId, uriR), rel: 'timemap', type: LINK_FORMAT },
      ...mementoLinks(base, archiveId, s, mode.idMode),
    ]);
    headers.vary = 'prefer';
    headers['preference-applied'] = preferenceApplied(mode.prefer, mode.raw, changed);
    headers['content-location'] = uris.memento(base, archiveId, row, mode.raw);
    reply.code(stored.status);
    reply.headers(headers);
    if (req.method === 'HEAD' || bodyless) {
      stored.close();
      return reply.send();
    }
    // fastify gives a Buffer without Content-Type one (application/octet-stream); a stream it leaves alone.
    if (bodyBuffer && headers['content-type'] !== undefined) return reply.send(bodyBuffer);
    const stream = Readable.from(bodyBuffer ? [bodyBuffer] : body);
    const done = stored;
    stream.once('close', () => done.close());
    return reply.send(stream);
  }

  // ---- TimeMaps (RFC 7089 §5) ---------------------------------------------
  /** The span of one local archive's mementos of `urlkey`. @throws HttpError 404 when it has none. */
  async function spanOf(archive: ArchiveSpan, urlkey: string, uriR: string): Promise<{ first: number; last: number }> {
    const span = (await store.index.spans(urlkey)).find((x) => x.archive_id === archive.id);
    if (!span) throw new HttpError(404, `no memento of ${uriR} in archive "${archive.id}"`);
    return span;
  }

  read('/:archive/timemap/link/*', async (req, reply) => {
    const archive = archiveOf(req.params.archive);
    const { uriR, urlkey } = uriROf(req, `/${req.params.archive}/timemap/link/`);
    const base = baseOf(req);
    const span = await spanOf(archive, urlkey, uriR);
    const head: Link[] = [
      { uri: uriR, rel: 'original' },
      { uri: uris.timemap(base, archive.id, uriR), rel: 'self', type: LINK_FORMAT, from: formatHttpDate(span.first), until: formatHttpDate(span.last) },
      { uri: uris.timegate(base, archive.id, uriR), rel: 'timegate' },
    ];
    reply.type(LINK_FORMAT);
    if (req.method === 'HEAD') return reply.send();
    return reply.send(Readable.from(linkFormat(head, mementoLinkStream(store, base, archive.id, urlkey, span))));
  });

  read('/:archive/timemap/json/*', async (req, reply) => {
    const archive = archiveOf(req.params.archive);
    const { uriR, urlkey } = uriROf(req, `/${req.params.archive}/timemap/json/`);
    const base = baseOf(req);
    const span = await spanOf(archive, urlkey, uriR);
    reply.type('application/json');
    if (req.method === 'HEAD') return reply.send();
    return reply.send(Readable.from(jsonTimemap(store, base, archive.id, uriR, urlkey)));
  });

  read('/:archive/timebundle/*', async (req, reply) => {
    const archive = archiveOf(req.params.archive);
    const { uriR, urlkey } = uriROf(req, `/${req.params.archive}/timebundle/`);
    await spanOf(archive, urlkey, uriR);
    const location = uris.timemap(baseOf(req), archive.id, uriR);
    reply.header('location', location);
    return sendText(reply, 303, location);
  });

  read('/tg/timemap/*', async (req, reply) => {
    const { uriR, urlkey } = uriROf(req, '/tg/timemap/');
    const base = baseOf(req);
    const holdings = await holdingsOf(urlkey, { url: (a) => a.timemap! + uriR, how: 'self' });
    const listed = config.archives.filter((a) => holdings.get(a.id) && holdings.get(a.id)!.state !== 'no');
    if (!listed.length) return sendText(reply, 404, `no memento of ${uriR} in any archive`);
    const bounds = (a: ArchiveSpan) => {
      const h = holdings.get(a.id)!;
      if (h.first !== undefined && h.last !== undefined) return { from: formatHttpDate(h.first), until: formatHttpDate(h.last) };
      return spanBounds(a);
    };
    const known = [...holdings.values()].filter((h) => h.first !== undefined);
    const localSpans = config.archives.filter((a) => !a.timegate && holdings.has(a.id));
    const head: Link[] = [
      { uri: uriR, rel: 'original' },
      {
        uri: uris.indexTimemap(base, uriR), rel: 'self', type: LINK_FORMAT,
        ...(known.length ? { from: formatHttpDate(Math.min(...known.map((h) => h.first!))), until: formatHttpDate(Math.max(...known.map((h) => h.last!))) } : {}),
      },
      { uri: uris.redirector(base, uriR), rel: 'timegate' },
      ...listed.map((a): Link => ({ uri: a.timemap ? a.timemap + uriR : uris.timemap(base, a.id, uriR), rel: 'timemap', type: LINK_FORMAT, ...bounds(a) })),
    ];
    reply.type(LINK_FORMAT);
    if (req.method === 'HEAD') return reply.send();
    // The local mementos themselves, oldest first; first/last over all of them.
    const first = localSpans.length ? holdings.get(localSpans[0].id)!.first : undefined;
    const last = localSpans.length ? holdings.get(localSpans[localSpans.length - 1].id)!.last : undefined;
    const all = async function* () {
      for (const a of localSpans) yield* mementoLinkStream(store, base, a.id, urlkey, { first: first!, last: last! });
    };
    return reply.send(Readable.from(linkFormat(head, all())));
  });

  return app;
}

/** What one archive holds of a URI-R; `first`/`last` epoch seconds when known. */
interface Holding {
  state: 'yes' | 'no' | 'unknown';
  first?: number;
  last?: number;
  /** A remote TimeGate's memento links (rel containing `memento`) from its 302. */
  links?: Link[];
}

/** How long the redirector and the index TimeMap wait for a remote archive. */
const REMOTE_TIMEOUT_MS = 3000;

/**
 * One request to a remote archive: `HEAD` of its TimeGate for a URI-R
 * (RFC 7089 §4.2.1: 302 = it has mementos, 404 = none), with
 * `acceptDatetime` when given; the memento links of its answer are kept.
 */
function probeRemote(url: string, acceptDatetime?: string): Promise<Holding> {
  return remoteRequest(url, 'HEAD', acceptDatetime ? { 'accept-datetime': acceptDatetime } : {}, async (res) => {
    res.resume();
    const st = res.statusCode ?? 0;
    if (st === 404 || st === 410) return { state: 'no' };
    if (st >= 400) return { state: 'unknown' };
    const link = res.headers.link;
    return { state: 'yes', links: link ? parseLinks(Array.isArray(link) ? link.join(', ') : link).filter((l) => hasRel(l, 'memento')) : [] };
  });
}

/**
 * GETs a remote link-format TimeMap and reads only up to its `self` link
 * (RFC 7089 §5: `from`/`until` give the span of its mementos); the rest is
 * not downloaded.
 */
function remoteTimemapSpan(url: string): Promise<Holding> {
  return remoteRequest(url, 'GET', {}, async (res) => {
    const st = res.statusCode ?? 0;
    if (st === 404 || st === 410) {
      res.resume();
      return { state: 'no' };
    }
    if (st !== 200) {
      res.resume();
      return { state: 'unknown' };
    }
    let text = '';
    for await (const chunk of res) {
      text += (chunk as Buffer).toString('utf8');
      const self = parseLinks(text).find((l) => hasRel(l, 'self') && l.from !== undefined && l.until !== undefined);
      const from = self && parseHttpDate(self.from), until = self && parseHttpDate(self.until);
      if (from && until) {
        res.destroy();
        return { state: 'yes', first: toEpochSeconds(from), last: toEpochSeconds(until) };
      }
      if (text.length > 64 * 1024) break;
    }
    res.destroy();
    return { state: 'yes' };
  });
}

/** One request to a remote archive with {@link REMOTE_TIMEOUT_MS}; any failure is `unknown`. */
function remoteRequest(url: string, method: string, headers: Record<string, string>, onResponse: (res: http.IncomingMessage) => Promise<Holding>): Promise<Holding> {
  return new Promise((resolve) => {
    let settled = false;
    const finish = (h: Holding) => {
      if (!settled) {
        settled = true;
        resolve(h);
      }
    };
    let req: http.ClientRequest;
    try {
      req = (url.startsWith('https:') ? https : http).request(url, { method, headers, agent: false, timeout: REMOTE_TIMEOUT_MS }, (res) => {
        onResponse(res).then(finish, () => finish({ state: 'unknown' }));
      });
    } catch {
      return finish({ state: 'unknown' });
    }
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => finish({ state: 'unknown' }));
    req.end();
  });
}

/** The archive whose span holds `t`; outside every span the first (before), the last (after), or the nearest (in a gap). */
function primaryArchive(archives: ArchiveSpan[], t: number): ArchiveSpan {
  return archiveForInstant(archives, t)
    ?? (t < archives[0].from ? archives[0] : t >= archives[archives.length - 1].until ? archives[archives.length - 1]
      : archives.reduce((best, a) => (distance(a, t) < distance(best, t) ? a : best)));
}

/**
 * The redirector's choice when local holdings alone decide it (so that no
 * remote archive need be asked): without Accept-Datetime, a local archive
 * that has the URI-R and is newer than every remote one; with it, the
 * archive of its span when that is local and has the URI-R.
 *
 * @returns the archive, or `undefined` when remote archives must be asked
 */
function clearChoice(archives: ArchiveSpan[], local: Map<string, Holding>, t: number | undefined): ArchiveSpan | undefined {
  if (t === undefined) {
    for (const a of [...archives].reverse()) {
      if (a.timegate) return undefined;
      if (local.has(a.id)) return a;
    }
    return undefined;
  }
  const primary = primaryArchive(archives, t);
  return !primary.timegate && local.has(primary.id) ? primary : undefined;
}

/**
 * The redirector's choice (DESIGN.md "Archives and time spans"):
 * - without Accept-Datetime, the newest archive that has the URI-R;
 * - with it, the archive whose span holds it, or, outside every span, the
 *   first (before) or the last (after) archive, or the nearest across a gap;
 * - when that archive does not have the URI-R, the archive with mementos
 *   nearest in time (local: their first/last; remote: its span).
 * An archive that could not be asked (`unknown`) is used only when no
 * archive is known to have the URI-R.
 *
 * @param t Accept-Datetime, epoch seconds; `undefined` when absent
 * @returns the archive, or `undefined` when none has the URI-R
 */
function pickArchive(archives: ArchiveSpan[], holdings: Map<string, Holding>, t: number | undefined): ArchiveSpan | undefined {
  const state = (a: ArchiveSpan) => holdings.get(a.id)?.state ?? 'no';
  const newestFirst = [...archives].reverse();
  if (t === undefined) return newestFirst.find((a) => state(a) === 'yes') ?? newestFirst.find((a) => state(a) === 'unknown');
  const primary = primaryArchive(archives, t);
  const dist = (a: ArchiveSpan) => {
    const h = holdings.get(a.id);
    return h?.first !== undefined && h.last !== undefined ? spanDistance({ first: h.first, last: h.last }, t) : distance(a, t);
  };
  const nearest = (want: Holding['state']) => archives.filter((a) => state(a) === want).reduce<ArchiveSpan | undefined>((b, a) => (!b || dist(a) < dist(b) ? a : b), undefined);
  if (state(primary) === 'yes') return primary;
  return nearest('yes') ?? (state(primary) === 'unknown' ? primary : nearest('unknown'));
}

function validHeaderName(name: string): boolean {
  try {
    http.validateHeaderName(name);
    return true;
  } catch {
    return false;
  }
}

/** A stored header value as Node can send it: characters outside latin-1 or control characters are percent-encoded. */
function headerValue(value: string): string {
  try {
    http.validateHeaderValue('x', value);
    return value;
  } catch {
    return value.replace(/[^\t\x20-\x7e\x80-\xff]/gu, (c) => encodeURIComponent(c));
  }
}

function xmlAttr(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
}

function distance(a: ArchiveSpan, t: number): number {
  return t < a.from ? a.from - t : t >= a.until ? t - a.until + 1 : 0;
}

function spanDistance(s: { first: number; last: number }, t: number): number {
  return t < s.first ? s.first - t : t > s.last ? t - s.last : 0;
}

function spanBounds(a: ArchiveSpan): { from?: string; until?: string } {
  return {
    ...(Number.isFinite(a.from) ? { from: formatHttpDate(a.from) } : {}),
    ...(Number.isFinite(a.until) ? { until: formatHttpDate(a.until) } : {}),
  };
}

/** Rows per index query when streaming a TimeMap (keyset paging on datetime). */
const PAGE = 1000;

/** The mementos of one archive for `urlkey`, oldest first, read from the index a page at a time. */
async function* mementoRows(store: ArchiveStore, archiveId: string, urlkey: string): AsyncGenerator<MementoRow> {
  let after = Number.MIN_SAFE_INTEGER;
  for (;;) {
    const rows: MementoRow[] = await store.index.page(archiveId, urlkey, after, PAGE);
    yield* rows;
    if (rows.length < PAGE) return;
    after = rows[rows.length - 1].datetime;
  }
}

/** Memento links of one archive's mementos (RFC 7089 §5), `first`/`last` marked at the given datetimes. */
async function* mementoLinkStream(store: ArchiveStore, base: string, archiveId: string, urlkey: string, span: { first: number; last: number }): AsyncGenerator<Link> {
  for await (const row of mementoRows(store, archiveId, urlkey)) {
    const rels = [row.datetime === span.first ? 'first' : '', row.datetime === span.last ? 'last' : '', 'memento'].filter(Boolean).join(' ');
    yield { uri: uris.memento(base, archiveId, row), rel: rels, datetime: formatHttpDate(row.datetime) };
  }
}

/** link-format document (RFC 6690 §2): links separated by `,` and a line end, sent 32 KiB at a time. */
async function* linkFormat(head: Link[], rest: AsyncIterable<Link>): AsyncGenerator<string> {
  let buf = head.map(formatLink).join(',\n');
  for await (const l of rest) {
    buf += ',\n' + formatLink(l);
    if (buf.length > 32 * 1024) {
      yield buf;
      buf = '';
    }
  }
  yield buf + '\n';
}

/**
 * The mementoweb.org timemap-json shape, streamed:
 * `{original_uri, timegate_uri, timemap_uri: {link_format, json_format},
 * mementos: {first: {datetime, uri}, last: {…}, list: [{datetime, uri}…]}}`,
 * datetimes as ISO 8601 UTC (`2001-03-20T20:35:00Z`).
 */
async function* jsonTimemap(store: ArchiveStore, base: string, archiveId: string, uriR: string, urlkey: string): AsyncGenerator<string> {
  const iso = (t: number) => new Date(t * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const m = (row: MementoRow) => JSON.stringify({ datetime: iso(row.datetime), uri: uris.memento(base, archiveId, row) });
  const head = JSON.stringify({
    original_uri: uriR,
    timegate_uri: uris.timegate(base, archiveId, uriR),
    timemap_uri: { link_format: uris.timemap(base, archiveId, uriR), json_format: uris.timemapJson(base, archiveId, uriR) },
  }).slice(0, -1);
  let out = head + ',"mementos":{"list":[';
  let first: MementoRow | undefined, last: MementoRow | undefined;
  for await (const row of mementoRows(store, archiveId, urlkey)) {
    out += (first ? ',' : '') + m(row);
    first ??= row;
    last = row;
    if (out.length > 32 * 1024) {
      yield out;
      out = '';
    }
  }
  yield out + `],"first":${first ? m(first) : 'null'},"last":${last ? m(last) : 'null'}}}\n`;
}
