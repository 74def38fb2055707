/**
 * Capture ingest: `PUT <put_prefix>put/<anything>` with a capture record
 * body (docs/capture-record.md). The URI-R comes from the embedded request,
 * never from the PUT address. Answers: 201 (new memento) or 200 (identical
 * to the memento it follows), each with `Location:` the URI-M; errors as
 * the store refuses them; 411 without a body length or chunked (RFC 9112
 * §6.3), 413 over `max_capture_bytes` by its Content-Length.
 *
 * A PUT may carry `Memento-Datetime: <HTTP-date>`, the capture's datetime
 * when its sender knows it (`memento-archive import` sends each WARC
 * record's WARC-Date): it is used instead of the response's Date; one that
 * is not an HTTP-date is 400.
 */
import type { FastifyInstance } from 'fastify';
import { parseHttpDate } from '../../shared/http-date.js';
import { httpError } from '../../shared/http-error.js';
import { uris } from '../memento/navigation.js';
import { TEXT } from './context.js';
import { putAccessHook } from './guards.js';

/** The capture PUT plugin: the access hook, a body left unparsed for the store to stream, the route. */
export async function ingestRoutes(app: FastifyInstance): Promise<void> {
  const { config, store } = app;
  app.addHook('onRequest', putAccessHook(config));
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, _payload, done) => done(null));
  app.put(`${config.putPrefix}put/*`, { config: { resource: 'put' } }, async (req, reply) => {
    const te = req.headers['transfer-encoding'];
    const cl = req.headers['content-length'];
    if (cl === undefined && !te) throw httpError(411, 'a capture PUT needs Content-Length or Transfer-Encoding: chunked', { close: true });
    if (cl !== undefined && Number(cl) > config.maxCaptureBytes) {
      throw httpError(413, `capture record of ${cl} bytes is larger than the limit of ${config.maxCaptureBytes} bytes`, { close: true });
    }
    const given = req.headers['memento-datetime'];
    const datetime = given === undefined ? undefined : parseHttpDate(String(given));
    if (datetime === null) throw httpError(400, "the PUT's Memento-Datetime is not an HTTP-date (e.g. Tue, 20 Mar 2001 20:35:00 GMT)", { close: true });
    const result = await store.ingest(req.raw, new Date(), { datetime });
    app.metrics.ingestBytes.inc(result.bytes);
    const uriM = uris.memento(req.base, result.row.archive_id, result.row);
    return reply
      .code(result.created ? 201 : 200)
      .header('location', uriM)
      .type(TEXT)
      .send(uriM + '\n');
  });
}
