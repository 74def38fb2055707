/**
 * The fast path of the two hottest reads: `GET`/`HEAD` of a TimeGate
 * (`/<id>/timegate/<URI-R>`) and of a Memento (`/<id>/memento/<ts>/<URI-R>`)
 * whose answer the reader has in memory (a 302, a kept 200, any answer
 * with its body in a buffer) are answered by a plain `node:http` handler in
 * front of fastify, without fastify's routing, hooks, child logger and
 * reply. The reader (archive/read/reader.ts) decides the answer as it does
 * for the routes (timegate.ts, memento.ts): access and selection stay
 * decided in one place; only the sending differs.
 *
 * Everything else goes to fastify untouched, and so does every request the
 * fast path cannot answer as the route would: an address the route would
 * refuse (malformed, a remote or unknown archive, a bad Accept-Datetime:
 * the route refuses it), and any request while the daemon closes
 * (fastify's 503). When the reader's answer is one fastify must send — a
 * read that throws (a 404, a 451: the error handler answers it, with its
 * page for a browser), a "Not archived" 404 for a browser's navigation
 * (its page), a body that streams — the route takes that answer
 * ({@link takeMadeAnswer}) instead of asking the reader again.
 */
import { createServer, type IncomingMessage, type Server, type ServerOptions, type ServerResponse } from 'node:http';
import type pino from 'pino';
import { clientAddress } from '#shared/net.js';
import type { ArchiveConfig } from '../config.js';
import type { ArchiveMetrics } from '../metrics.js';
import type { Answer } from '../read/answer.js';
import type { Reader } from '../read/reader.js';
import { isLocal } from '../spans.js';
import { acceptDatetimeSeconds, baseOf, uriRAfter, wantsPageAccept } from './context.js';
import { fieldName } from './field-names.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The hot TimeGate and Memento reads answered in front of fastify; none when turned off. */
    fastPath: FastPath | undefined;
  }
}

/** What the fast path got from the reader for a request it leaves to fastify: the route sends it instead of reading again. */
const made = new WeakMap<IncomingMessage, { answer?: Answer; error?: unknown }>();

/**
 * The reader's answer to this request that the fast path got but left to
 * fastify to send (a body that streams, the "Not archived" page), taken
 * once; `undefined` when there is none (then the route asks the reader).
 *
 * @throws what the reader threw for this request (an HttpError: the route's error answer)
 */
export function takeMadeAnswer(raw: IncomingMessage): Answer | undefined {
  const m = made.get(raw);
  if (!m) return undefined;
  made.delete(raw);
  if (m.error !== undefined) throw m.error;
  return m.answer;
}

/** `/<id>/timegate/…` or `/<id>/memento/<ts>/…`, an archive id and a timestamp segment with nothing to percent-decode. */
const ADDRESS = /^\/([A-Za-z0-9._~-]+)\/(?:timegate\/|memento\/([0-9]{1,14}[a-z_]{0,3})\/)/;

/** What the fast path answers with and reports to. */
export interface FastPathParts {
  config: ArchiveConfig;
  reader: Reader;
  metrics: ArchiveMetrics;
  /** Where the request lines go (the routes' `{type: "request"}` line); none: not logged. */
  log?: pino.Logger;
}

/** The fast path; `handle` is the HTTP server's request listener, `next` fastify's. */
export class FastPath {
  /** Set when the daemon starts closing: every request then goes to fastify (which answers 503). */
  closing = false;
  /** How many requests it has answered itself. */
  answered = 0;
  private readonly local: Set<string>;

  constructor(private readonly parts: FastPathParts) {
    this.local = new Set(parts.config.archives.filter(isLocal).map((a) => a.id));
  }

  /**
   * Answers `req` when it is a TimeGate or Memento read the reader answers
   * from memory, else hands it to `next` (fastify) as it came.
   */
  handle(req: IncomingMessage, res: ServerResponse, next: (req: IncomingMessage, res: ServerResponse) => void): void {
    const url = req.url ?? '';
    const m = this.closing || (req.method !== 'GET' && req.method !== 'HEAD') ? null : ADDRESS.exec(url);
    if (!m || !this.local.has(m[1]!)) return next(req, res);
    this.answer(req, res, m[1]!, m[2], url).then(
      (sent) => sent || next(req, res),
      () => next(req, res),
    );
  }

  /** Sends the reader's answer when it can be sent here; `false` (nothing sent) when fastify should answer. */
  private async answer(req: IncomingMessage, res: ServerResponse, archiveId: string, ts: string | undefined, url: string): Promise<boolean> {
    const { config, reader } = this.parts;
    const started = this.parts.log ? performance.now() : 0;
    const { uriR, urlkey } = uriRAfter(url, ts === undefined ? '/:archive/timegate/*' : '/:archive/memento/:ts/*', config.maxUrlLength);
    const socket = req.socket;
    const local = socket.localAddress && socket.localPort ? { host: socket.localAddress, port: socket.localPort } : undefined;
    const base = baseOf(config, req.headers.host, local);
    const prefer = req.headers.prefer;
    let a: Answer;
    try {
      if (ts === undefined) {
        const acceptDatetime = acceptDatetimeSeconds(req.headers['accept-datetime']);
        if (acceptDatetime === null) return false;
        a = await reader.timegate({ archiveId, uriR, urlkey, base, acceptDatetime, prefer });
      } else a = await reader.memento({ archiveId, uriR, urlkey, base, ts, prefer, client: socket });
    } catch (error) {
      made.set(req, { error });
      return false;
    }
    const { body } = a;
    if ((body !== null && !Buffer.isBuffer(body)) || (a.notArchived && wantsPageAccept(req.headers.accept))) {
      made.set(req, { answer: a });
      // Released here if no route takes it (the route that does sends and closes it).
      res.once('close', () => made.get(req)?.answer?.close?.());
      return false;
    }
    a.close?.();
    send(res, req.method === 'HEAD', a.status, a.headers, body);
    this.answered++;
    const resource = ts === undefined ? 'timegate' : 'memento';
    this.parts.metrics.countRequest(resource, a.status);
    if (this.parts.log) this.logLine(req, a.status, started);
    return true;
  }

  /** The request's log line, as the routes write it (server.ts `logRequest`). */
  private logLine(req: IncomingMessage, status: number, started: number): void {
    const target = req.url ?? '';
    const entry = {
      type: 'request',
      method: req.method,
      target: target.length > 300 ? target.slice(0, 300) + '…' : target,
      status,
      ms: Math.round(performance.now() - started),
      client: clientAddress(req.socket.remoteAddress),
    };
    this.parts.log!.info(entry, 'request');
  }
}

/**
 * Writes an answer whose body is in memory (or none): its headers under
 * their registered names (field-names.ts), `Content-Length` (the answer's,
 * else the body's length), and the body except to HEAD (RFC 9110 §9.3.2).
 */
function send(res: ServerResponse, head: boolean, status: number, headers: Answer['headers'], body: Buffer | null): void {
  const raw: string[] = [];
  for (const name of Object.keys(headers)) {
    const value = headers[name];
    if (value === undefined || name === 'content-length') continue;
    const spelt = fieldName(name);
    if (Array.isArray(value)) for (const v of value) raw.push(spelt, v);
    else raw.push(spelt, value);
  }
  const length = headers['content-length'] ?? (body ? String(body.length) : undefined);
  if (length !== undefined) raw.push('content-length', String(length));
  res.writeHead(status, raw);
  if (head || !body) res.end();
  else res.end(body);
}

/**
 * fastify's `serverFactory`: the HTTP server whose request listener is
 * the fast path (`fast()`, once the daemon has made it; until then, and
 * when it is off, fastify's handler alone), with the timeouts fastify sets
 * on a server it makes itself (`keep_alive_timeout`, `request_timeout`,
 * `idle_timeout`).
 */
export function serverWithFastPath(
  config: Pick<ArchiveConfig, 'keepAliveTimeoutMs' | 'requestTimeoutMs' | 'idleTimeoutMs'>,
  fast: () => FastPath | undefined,
): (handler: (req: IncomingMessage, res: ServerResponse) => void, opts: { http?: ServerOptions }) => Server {
  return (handler, opts) => {
    const server = createServer(opts.http ?? {}, (req, res) => {
      const f = fast();
      if (f) f.handle(req, res, handler);
      else handler(req, res);
    });
    server.keepAliveTimeout = config.keepAliveTimeoutMs;
    server.requestTimeout = config.requestTimeoutMs;
    server.setTimeout(config.idleTimeoutMs);
    return server;
  };
}
