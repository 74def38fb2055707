/**
 * The HTTP side of `memento-archive witness` (node:http): `POST
 * /add-checkpoint` and `GET /<origin hash>/checkpoint` (C2SP tlog-witness)
 * answered by a {@link WitnessService}, every other request 404 or 405.
 * A request body is read only up to 64 KiB, a request has 10 seconds, and
 * each request is one JSON log line (no client address: what a visitor
 * sends is private).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type pino from 'pino';
import { MAX_ADD_CHECKPOINT_BYTES, type WitnessAnswer, type WitnessService } from './witness-service.js';

/** How long a whole request may take, ms (a log's request is one small body). */
export const WITNESS_REQUEST_TIMEOUT_MS = 10_000;
/** Most connections open at once. */
const MAX_CONNECTIONS = 256;

/** Reads a request body of at most `max` bytes; `undefined` when it is longer (the rest is not read). */
function readBody(req: IncomingMessage, max: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length'] ?? '0');
    if (declared > max) {
      resolve(undefined);
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > max) {
        req.removeAllListeners('data');
        req.pause();
        resolve(undefined);
      } else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks, size)));
    req.on('error', reject);
  });
}

/** Sends `a` with `extra` headers (no body for HEAD). */
function send(req: IncomingMessage, res: ServerResponse, a: Pick<WitnessAnswer, 'status' | 'contentType' | 'body'>, extra: Record<string, string> = {}): void {
  const body = Buffer.from(a.body, 'utf8');
  res.writeHead(a.status, { 'content-type': a.contentType, 'content-length': body.length, 'cache-control': 'no-store', ...extra });
  res.end(req.method === 'HEAD' ? undefined : body);
}

/** The answer of one request, before it is sent and logged. */
async function route(service: WitnessService, req: IncomingMessage): Promise<{ answer: WitnessAnswer; headers?: Record<string, string> }> {
  const text = (status: number, reason: string): WitnessAnswer => ({
    status,
    contentType: 'text/plain; charset=utf-8',
    body: `${reason}\n`,
    reason,
    fields: {},
  });
  const path = (req.url ?? '').split('?')[0];
  const monitor = /^\/([0-9a-f]{64})\/checkpoint$/.exec(path);
  if (path === '/add-checkpoint') {
    if (req.method !== 'POST') return { answer: text(405, 'add-checkpoint is a POST'), headers: { allow: 'POST' } };
    const body = await readBody(req, MAX_ADD_CHECKPOINT_BYTES);
    if (!body) return { answer: text(413, `a request body over ${MAX_ADD_CHECKPOINT_BYTES} bytes`), headers: { connection: 'close' } };
    return { answer: await service.addCheckpoint(body) };
  }
  if (monitor) {
    if (req.method !== 'GET' && req.method !== 'HEAD') return { answer: text(405, 'a checkpoint is read with GET'), headers: { allow: 'GET, HEAD' } };
    return { answer: await service.checkpointOf(monitor[1]) };
  }
  return { answer: text(404, 'not a witness address (POST /add-checkpoint, GET /<origin SHA-256>/checkpoint)') };
}

/**
 * The witness's HTTP server (not listening yet). Each request is logged
 * on `log`: method, path (up to 200 characters), status, time, the
 * origin and sizes of a submission, the reason of a refusal; a 422 (a
 * checkpoint inconsistent with one cosigned: possible misbehaviour of the
 * log) at warn level with the note and proof it sent.
 */
export function createWitnessServer(service: WitnessService, log: pino.Logger): Server {
  const server = createServer(
    { requestTimeout: WITNESS_REQUEST_TIMEOUT_MS, headersTimeout: WITNESS_REQUEST_TIMEOUT_MS / 2, keepAliveTimeout: 5_000, maxHeaderSize: 16 * 1024 },
    (req, res) => {
      const started = process.hrtime.bigint();
      route(service, req)
        .then(({ answer, headers }) => {
          send(req, res, answer, headers);
          const ms = Number(process.hrtime.bigint() - started) / 1e6;
          const entry = {
            method: req.method,
            path: (req.url ?? '').slice(0, 200),
            status: answer.status,
            ms: Math.round(ms * 10) / 10,
            ...answer.fields,
            reason: answer.reason,
          };
          if (answer.status >= 500) log.error(entry, 'request');
          else if (answer.status === 422 || answer.status === 403) log.warn(entry, 'request');
          else log.info(entry, 'request');
        })
        .catch((err: Error) => {
          log.error({ method: req.method, path: (req.url ?? '').slice(0, 200), error: err.message }, 'request failed');
          if (!res.headersSent) send(req, res, { status: 500, contentType: 'text/plain; charset=utf-8', body: 'internal error\n' });
          else res.destroy();
        });
    },
  );
  server.maxConnections = MAX_CONNECTIONS;
  return server;
}
