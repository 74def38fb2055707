/**
 * The archive daemon's HTTP side (fastify): capture ingest by PUT and the
 * Memento read side (RFC 7089) — redirector, TimeGates, Mementos, TimeMaps,
 * timebundle and host-meta discovery. URL space: DESIGN.md "Archive daemon
 * URL space".
 */
import { Readable } from 'node:stream';
import zlib from 'node:zlib';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { formatHttpDate, parseHttpDate, parseTimestamp14, toEpochSeconds } from '../shared/http-date.js';
import { formatLink, formatLinkHeader, type Link } from '../shared/link.js';
import { normalizeUriR, surtUrlkey, UriError } from '../shared/uri.js';
import { archiveForInstant, type ArchiveConfig, type ArchiveSpan } from './config.js';
import { isHtml, withBaseElement } from './memento/html-base.js';
import { mementoLinks, select, uris } from './memento/navigation.js';
import { parsePrefer, satisfied } from './memento/prefer.js';
import type { MementoRow } from './store/index-db.js';
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
      return { uriR, urlkey: surtUrlkey(uriR) };
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
    app.route({
      method: ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'],
      url,
      handler: async (req, reply) => {
        reply.header('allow', READ_METHODS);
        return sendText(reply, req.method === 'OPTIONS' ? 204 : 405, `${req.method} is not allowed here; use GET or HEAD`);
      },
    });
  }

  // ---- capture ingest ------------------------------------------------------
  await app.register(async (put) => {
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

  // ---- discovery -----------------------------------------------------------
  read('/.well-known/host-meta', async (req, reply) => {
    const base = baseOf(req);
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
    return reply.type('application/jrd+json').send(JSON.stringify({
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
    const spans = await store.index.spans(urlkey);
    const has = new Map(spans.map((s) => [s.archive_id, s]));
    let target: ArchiveSpan | undefined;
    if (t === undefined) {
      // newest local archive that has the URL; else the newest archive
      target = [...config.archives].reverse().find((a) => has.has(a.id)) ?? config.archives[config.archives.length - 1];
    } else {
      target = archiveForInstant(config.archives, t);
      if (!target) {
        // before the first / after the last / in a gap: the archive nearest in time
        target = config.archives.reduce((best, a) => (distance(a, t) < distance(best, t) ? a : best));
      }
      if (!target.timegate && !has.has(target.id) && has.size) {
        // that archive has no memento of the URL: the local archive whose mementos are nearest
        const nearest = spans.reduce((b, s) => (spanDistance(s, t) < spanDistance(b, t) ? s : b));
        target = local.get(nearest.archive_id) ?? target;
      }
    }
    if (!target.timegate && !has.has(target.id) && !config.archives.some((a) => a.timegate)) {
      return sendText(reply, 404, `no memento of ${uriR} in any archive`);
    }
    const location = target.timegate ? target.timegate + uriR : uris.timegate(base, target.id, uriR);
    reply.header('location', location);
    reply.header('vary', 'accept-datetime');
    reply.header('link', formatLinkHeader([
      { uri: uriR, rel: 'original' },
      { uri: uris.indexTimemap(base, uriR), rel: 'timemap index', type: LINK_FORMAT },
    ]));
    return sendText(reply, 302, location);
  });

  // ---- TimeGate (RFC 7089 §4.1, pattern 2.1) ------------------------------
  read('/:archive/timegate/*', async (req, reply) => {
    const archive = archiveOf(req.params.archive);
    const { uriR, urlkey } = uriROf(req, `/${req.params.archive}/timegate/`);
    const base = baseOf(req);
    const t = acceptDatetime(req, uriR) ?? Number.MAX_SAFE_INTEGER;
    const n = await store.index.neighbourhood(archive.id, urlkey, t);
    if (!n) return sendText(reply, 404, `no memento of ${uriR} in archive "${archive.id}"`);
    const s = select(n, t);
    const prefer = parsePrefer(req.headers.prefer);
    const raw = prefer.has('original-content');
    const location = uris.memento(base, archive.id, s.memento, raw);
    reply.header('location', location);
    reply.header('vary', 'accept-datetime, prefer');
    if (prefer.size) reply.header('preference-applied', satisfied(raw, isHtml(s.memento.mime)).join(', '));
    reply.header('link', formatLinkHeader([
      { uri: uriR, rel: 'original' },
      { uri: uris.timemap(base, archive.id, uriR), rel: 'timemap', type: LINK_FORMAT },
      { uri: uris.timebundle(base, archive.id, uriR), rel: 'timebundle' },
      ...mementoLinks(base, archive.id, s, raw),
    ]));
    return sendText(reply, 302, location);
  });

  // ---- Memento -------------------------------------------------------------
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
    const n = await store.index.neighbourhood(archive.id, urlkey, t);
    if (!n) return sendText(reply, 404, `no memento of ${uriR} in archive "${archive.id}"`);
    const s = select(n, t);
    const prefer = parsePrefer(req.headers.prefer);
    const raw = idMode || prefer.has('original-content');
    if (s.memento.datetime !== t || ts.length !== 14) {
      const location = uris.memento(base, archive.id, s.memento, idMode);
      reply.header('location', location);
      return sendText(reply, 302, location);
    }
    return serveMemento(req, reply, base, archive.id, s, raw, uriR);
  });

  async function serveMemento(req: FastifyRequest, reply: FastifyReply, base: string, archiveId: string, s: ReturnType<typeof select>, raw: boolean, uriR: string) {
    const row = s.memento;
    const stored = await store.readResponse(row);
    const headers: Record<string, string | string[]> = {};
    const add = (k: string, v: string) => {
      const cur = headers[k];
      headers[k] = cur === undefined ? v : Array.isArray(cur) ? [...cur, v] : [cur, v];
    };
    let contentType: string | undefined, contentEncoding: string | undefined;
    for (const [name, value] of stored.headers) {
      const lower = name.toLowerCase();
      add(`x-archive-orig-${lower}`, value);
      if (lower === 'content-type') contentType ??= value;
      if (lower === 'content-encoding') contentEncoding ??= value.trim().toLowerCase();
      if (lower === 'location' && stored.status >= 300 && stored.status < 400) headers.location = value;
    }
    let body: AsyncIterable<Uint8Array> = stored.body;
    let length: number | undefined = stored.bodyLength;
    let changed = false;
    const bodyless = req.method === 'HEAD' || stored.status === 204 || stored.status === 304;
    if (!raw && isHtml(row.mime) && !bodyless) {
      const decoder = contentEncoding && contentEncoding !== 'identity' ? decoderFor(contentEncoding) : null;
      if (!contentEncoding || contentEncoding === 'identity' || decoder) {
        const source = decoder ? Readable.from(body).pipe(decoder) : body;
        const r = await withBaseElement(source, row.uri_r);
        if (r.added || decoder) {
          changed = true;
          body = r.body;
          length = decoder ? undefined : stored.bodyLength + r.added;
          contentEncoding = undefined;
        } else body = r.body;
      }
    }
    if (contentType) headers['content-type'] = contentType;
    if (contentEncoding && !changed) headers['content-encoding'] = contentEncoding;
    if (length !== undefined) headers['content-length'] = String(length);
    headers['memento-datetime'] = formatHttpDate(row.datetime);
    headers.link = formatLinkHeader([
      { uri: row.uri_r, rel: 'original' },
      { uri: uris.timegate(base, archiveId, uriR), rel: 'timegate' },
      { uri: uris.timemap(base, archiveId, uriR), rel: 'timemap', type: LINK_FORMAT },
      ...mementoLinks(base, archiveId, s),
    ]);
    headers.vary = 'prefer';
    headers['preference-applied'] = satisfied(raw, changed).join(', ');
    headers['content-location'] = uris.memento(base, archiveId, row, raw);
    reply.code(stored.status);
    reply.headers(headers);
    if (bodyless) {
      stored.close();
      return reply.send();
    }
    const stream = Readable.from(body);
    stream.once('close', () => stored.close());
    return reply.send(stream);
  }

  // ---- TimeMaps (RFC 7089 §5) ---------------------------------------------
  read('/:archive/timemap/link/*', async (req, reply) => {
    const archive = archiveOf(req.params.archive);
    const { uriR, urlkey } = uriROf(req, `/${req.params.archive}/timemap/link/`);
    const base = baseOf(req);
    const span = (await store.index.spans(urlkey)).find((s) => s.archive_id === archive.id);
    if (!span) return sendText(reply, 404, `no memento of ${uriR} in archive "${archive.id}"`);
    const head: Link[] = [
      { uri: uriR, rel: 'original' },
      { uri: uris.timemap(base, archive.id, uriR), rel: 'self', type: LINK_FORMAT, from: formatHttpDate(span.first), until: formatHttpDate(span.last) },
      { uri: uris.timegate(base, archive.id, uriR), rel: 'timegate' },
    ];
    reply.type(LINK_FORMAT);
    if (req.method === 'HEAD') return reply.send();
    return reply.send(Readable.from(linkFormat(head, mementoStream(store, base, archive.id, urlkey, span))));
  });

  read('/:archive/timemap/json/*', async (req, reply) => {
    const archive = archiveOf(req.params.archive);
    const { uriR, urlkey } = uriROf(req, `/${req.params.archive}/timemap/json/`);
    const base = baseOf(req);
    const span = (await store.index.spans(urlkey)).find((s) => s.archive_id === archive.id);
    if (!span) return sendText(reply, 404, `no memento of ${uriR} in archive "${archive.id}"`);
    reply.type('application/json');
    if (req.method === 'HEAD') return reply.send();
    return reply.send(Readable.from(jsonTimemap(store, base, archive.id, uriR, urlkey, span)));
  });

  read('/:archive/timebundle/*', async (req, reply) => {
    const archive = archiveOf(req.params.archive);
    const { uriR } = uriROf(req, `/${req.params.archive}/timebundle/`);
    const location = uris.timemap(baseOf(req), archive.id, uriR);
    reply.header('location', location);
    return sendText(reply, 303, location);
  });

  read('/tg/timemap/*', async (req, reply) => {
    const { uriR, urlkey } = uriROf(req, '/tg/timemap/');
    const base = baseOf(req);
    const spans = new Map((await store.index.spans(urlkey)).map((s) => [s.archive_id, s]));
    const remote = config.archives.filter((a) => a.timegate);
    if (!spans.size && !remote.length) return sendText(reply, 404, `no memento of ${uriR} in any archive`);
    const head: Link[] = [
      { uri: uriR, rel: 'original' },
      { uri: uris.indexTimemap(base, uriR), rel: 'self', type: LINK_FORMAT },
      { uri: uris.redirector(base, uriR), rel: 'timegate' },
    ];
    for (const a of config.archives) {
      const s = spans.get(a.id);
      if (a.timemap) head.push({ uri: a.timemap + uriR, rel: 'timemap', type: LINK_FORMAT, ...spanBounds(a) });
      else if (s) head.push({ uri: uris.timemap(base, a.id, uriR), rel: 'timemap', type: LINK_FORMAT, from: formatHttpDate(s.first), until: formatHttpDate(s.last) });
    }
    reply.type(LINK_FORMAT);
    if (req.method === 'HEAD') return reply.send();
    const all = async function* () {
      for (const a of config.archives) {
        const s = spans.get(a.id);
        if (s && !a.timegate) yield* mementoStream(store, base, a.id, urlkey, s);
      }
    };
    return reply.send(Readable.from(linkFormat(head, all())));
  });

  return app;
}

function decoderFor(encoding: string): zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress | null {
  if (encoding === 'gzip' || encoding === 'x-gzip') return zlib.createGunzip();
  if (encoding === 'deflate') return zlib.createInflate();
  if (encoding === 'br') return zlib.createBrotliDecompress();
  return null;
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

const PAGE = 1000;

/** Memento links of one archive's TimeMap, read from the index a page at a time (first/last marked). */
async function* mementoStream(store: ArchiveStore, base: string, archiveId: string, urlkey: string, span: { first: number; last: number }): AsyncGenerator<Link> {
  let after = -Infinity;
  for (;;) {
    const rows: MementoRow[] = await store.index.page(archiveId, urlkey, after === -Infinity ? Number.MIN_SAFE_INTEGER : after, PAGE);
    for (const row of rows) {
      const rels = [row.datetime === span.first ? 'first' : '', row.datetime === span.last ? 'last' : '', 'memento'].filter(Boolean).join(' ');
      yield { uri: uris.memento(base, archiveId, row), rel: rels, datetime: formatHttpDate(row.datetime) };
    }
    if (rows.length < PAGE) return;
    after = rows[rows.length - 1].datetime;
  }
}

/** link-format document (RFC 6690): one link per line, `,\n` between them. */
async function* linkFormat(head: Link[], rest: AsyncIterable<Link>): AsyncGenerator<string> {
  let first = true;
  let buf = '';
  for (const l of head) {
    buf += (first ? '' : ',\n') + formatLink(l);
    first = false;
  }
  for await (const l of rest) {
    buf += ',\n' + formatLink(l);
    if (buf.length > 32 * 1024) {
      yield buf;
      buf = '';
    }
  }
  yield buf + '\n';
}

/** The mementoweb.org timemap-json shape, streamed. */
async function* jsonTimemap(store: ArchiveStore, base: string, archiveId: string, uriR: string, urlkey: string, span: { first: number; last: number }): AsyncGenerator<string> {
  const iso = (t: number) => new Date(t * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const m = (t: number) => ({ datetime: iso(t), uri: uris.memento(base, archiveId, { datetime: t, uri_r: uriR }) });
  const headObj = {
    original_uri: uriR,
    timegate_uri: uris.timegate(base, archiveId, uriR),
    timemap_uri: { link_format: uris.timemap(base, archiveId, uriR), json_format: uris.timemapJson(base, archiveId, uriR) },
  };
  let out = JSON.stringify(headObj).slice(0, -1) + `,"mementos":{"first":${JSON.stringify(m(span.first))},"last":${JSON.stringify(m(span.last))},"list":[`;
  let first = true;
  for await (const l of mementoStream(store, base, archiveId, urlkey, span)) {
    out += (first ? '' : ',') + JSON.stringify({ datetime: iso(toEpochSeconds(parseHttpDate(l.datetime!)!)), uri: l.uri });
    first = false;
    if (out.length > 32 * 1024) {
      yield out;
      out = '';
    }
  }
  yield out + ']}}\n';
}
