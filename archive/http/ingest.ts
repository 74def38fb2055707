/**
 * Capture ingest: `PUT <put_prefix>put/<anything>` with a capture record
 * body (docs/capture-record.md). The URI-R comes from the embedded request,
 * never from the PUT address. Answers: 201 (new memento) or 200 (identical
 * to the memento it follows), each with `Location:` the URI-M; 409 when a
 * different capture of the URI-R is stored at the same second (a stored
 * memento is never replaced; the body names its URI-M); errors as
 * the store refuses them; 411 without a body length or chunked (RFC 9112
 * §6.3), 413 over `max_capture_bytes` by its Content-Length.
 *
 * A PUT may carry `Memento-Datetime: <HTTP-date>`, the capture's datetime
 * when its sender knows it (`memento-archive import` sends each WARC
 * record's WARC-Date): it is used instead of the response's Date; one that
 * is not an HTTP-date is 400.
 *
 * Conditional captures: a PUT with `If-None-Match: "<capture tag>"`
 * (shared/capture-tag.ts) is answered 412 (RFC 9110 §13.1.2) when the
 * memento the capture would follow — for the URI-R of the PUT address, at
 * its `Memento-Datetime` — has that tag, i.e. the capture would be a
 * duplicate; with `Expect: 100-continue` (RFC 9110 §10.1.1) before any of
 * its body is sent. Otherwise it goes on as any PUT (`100 Continue`, then
 * ingest, whose own dedup still decides). Who may PUT is checked first: a
 * client without access gets 401/403, never 412.
 *
 * Several conditions at once: `POST <put_prefix>put/` with a `text/plain`
 * body of questions, one a line, `<capture tag> <Memento-Datetime as epoch
 * seconds, or -> <URI-R>`, is answered 200 with one line per question in
 * the same order: `unchanged` (a conditional PUT of that capture would be
 * answered 412) or `new` (it would not: PUT it). Nothing is stored; the
 * answers are evaluated as a conditional PUT's condition is, in the write
 * queue's order. The same access rules as PUTs; at most
 * {@link MAX_QUESTIONS} questions and {@link MAX_QUESTION_BYTES} bytes,
 * else 413; a malformed line is 400 and nothing is answered.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { captureEntityTag, ifNoneMatchMatches, parseIfNoneMatch } from '#shared/capture-tag.js';
import { parseHttpDate, toEpochSeconds } from '#shared/http-date.js';
import { httpError, isHttpError } from '#shared/http-error.js';
import { uris } from '../memento/navigation.js';
import { archiveForInstant, isLocal } from '../spans.js';
import type { MementoRow, NewMementoRow } from '../store/index-db.js';
import { parseUriR, TEXT, uriRAfter } from './context.js';
import { putAccessHook } from './guards.js';

/** The capture PUT plugin: the access hook, a body left unparsed for the store to stream, the route, `Expect: 100-continue`. */
export async function ingestRoutes(app: FastifyInstance): Promise<void> {
  const { config, store } = app;
  const route = `${config.putPrefix}put/*`;
  // Requests whose `100 Continue` is still owed (Expect: 100-continue, RFC 9110 §10.1.1): sent only once the body is wanted.
  const owed = new WeakSet<IncomingMessage>();
  app.server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    // A PUT is answered 401/403/411/413/412 before its body is asked for; anything else continues at once, as Node does.
    if (req.method === 'PUT') owed.add(req);
    else res.writeContinue();
    app.server.emit('request', req, res);
  });
  app.addHook('onRequest', putAccessHook(config));
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, _payload, done) => done(null));
  app.put(route, { config: { resource: 'put' } }, async (req, reply) => {
    const te = req.headers['transfer-encoding'];
    const cl = req.headers['content-length'];
    if (cl === undefined && !te) throw httpError(411, 'a capture PUT needs Content-Length or Transfer-Encoding: chunked', { close: true });
    if (cl !== undefined && Number(cl) > config.maxCaptureBytes) {
      throw httpError(413, `capture record of ${cl} bytes is larger than the limit of ${config.maxCaptureBytes} bytes`, { close: true });
    }
    const given = req.headers['memento-datetime'];
    const datetime = given === undefined ? undefined : parseHttpDate(String(given));
    if (datetime === null) throw httpError(400, "the PUT's Memento-Datetime is not an HTTP-date (e.g. Tue, 20 Mar 2001 20:35:00 GMT)", { close: true });
    const receivedAt = new Date();
    const condition = parseIfNoneMatch(req.headers['if-none-match']);
    if (condition) {
      const prev = await conditionMemento(app, req, route, receivedAt);
      if (ifNoneMatchMatches(condition, prev)) return unchanged(req, reply, prev!, owed.delete(req.raw));
    }
    if (owed.delete(req.raw)) reply.raw.writeContinue();
    const result = await store.ingest(req.raw, receivedAt, { datetime });
    app.metrics.ingestBytes.inc(result.bytes);
    const uriM = uris.memento(req.base, result.row.archive_id, result.row);
    if (result.conflict) {
      // The body has been read whole: the connection may stay open. A memento the access rules hide is not named.
      if (app.access.verdict(result.row.urlkey, result.row.datetime) !== 'allow')
        throw httpError(409, 'conflict: another capture of this URI-R is stored at the same second; nothing stored');
      throw httpError(409, `conflict: a different capture of this URI-R is stored at the same second, ${uriM}; nothing stored`);
    }
    return reply
      .code(result.created ? 201 : 200)
      .header('location', uriM)
      .type(TEXT)
      .send(uriM + '\n');
  });
  // Its own resource in the metrics: a question is not a capture (200 here is no duplicate stored).
  app.post(`${config.putPrefix}put/`, { config: { resource: 'questions' } }, async (req, reply) => {
    const cl = req.headers['content-length'];
    if (cl === undefined && !req.headers['transfer-encoding'])
      throw httpError(411, 'a POST of questions needs Content-Length or Transfer-Encoding: chunked', { close: true });
    if (cl !== undefined && Number(cl) > MAX_QUESTION_BYTES) throw httpError(413, `more than ${MAX_QUESTION_BYTES} bytes of questions`, { close: true });
    const questions = parseQuestions(await readBounded(req.raw, MAX_QUESTION_BYTES));
    const receivedAt = new Date();
    const answers = await Promise.all(questions.map((q) => answerQuestion(app, q, receivedAt)));
    for (const answer of answers) app.metrics.questions.inc({ answer });
    return reply
      .code(200)
      .type(TEXT)
      .send(answers.join('\n') + '\n');
  });
}

/** Most questions in one POST. */
export const MAX_QUESTIONS = 1000;
/** Most bytes of questions in one POST (1,000 lines of a 2,048-character URI-R and a tag). */
export const MAX_QUESTION_BYTES = 4 * 1024 * 1024;

/** One line of a POST of questions. */
interface Question {
  tag: string;
  /** Memento-Datetime, epoch seconds; `undefined` for `-` (the time the question is received). */
  datetime: number | undefined;
  uriR: string;
}

/**
 * The lines of a POST of questions (see the module comment): `<tag>
 * <epoch seconds or -> <URI-R>`, LF or CRLF after each; empty lines are
 * skipped.
 *
 * @throws HttpError 400 naming the first malformed line; 413 over {@link MAX_QUESTIONS}
 */
export function parseQuestions(text: string): Question[] {
  const out: Question[] = [];
  const lines = text.split('\n');
  for (const [i, raw] of lines.entries()) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line === '') continue;
    const m = /^("[^"\s]*") (-|\d{1,15}) (\S+)$/.exec(line);
    if (!m) throw httpError(400, `question ${i + 1} is not "<capture tag> <epoch seconds or -> <URI-R>": ${JSON.stringify(line.slice(0, 80))}`);
    if (out.length === MAX_QUESTIONS) throw httpError(413, `more than ${MAX_QUESTIONS} questions in one POST`);
    out.push({ tag: m[1], datetime: m[2] === '-' ? undefined : Number(m[2]), uriR: m[3] });
  }
  return out;
}

/** The body of `stream` as UTF-8 text. @throws HttpError 413 past `max` bytes. */
async function readBounded(stream: IncomingMessage, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of stream as AsyncIterable<Buffer>) {
    n += c.length;
    if (n > max) throw httpError(413, `more than ${max} bytes of questions`, { close: true });
    chunks.push(c);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * `unchanged` when a conditional PUT of the capture the question names
 * would be answered 412 (its tag is the one of the memento it would
 * follow, at its datetime; see {@link conditionMemento}), else `new`
 * (including a URI-R that is not one, and a datetime outside every local
 * archive: the PUT goes on and ingest answers it).
 */
async function answerQuestion(app: FastifyInstance, q: Question, receivedAt: Date): Promise<'unchanged' | 'new'> {
  let urlkey: string;
  try {
    urlkey = parseUriR(q.uriR, app.config.maxUrlLength).urlkey;
  } catch (err) {
    if (isHttpError(err)) return 'new';
    throw err;
  }
  const prev = await predecessorAt(app, urlkey, q.datetime === undefined ? undefined : new Date(q.datetime * 1000), receivedAt);
  return ifNoneMatchMatches([q.tag], prev) ? 'unchanged' : 'new';
}

/**
 * The memento a conditional PUT's capture would follow (the store's
 * `predecessor`): for the URI-R of the PUT address, at the PUT's
 * `Memento-Datetime` (an HTTP-date, what the capture's own `Date` says),
 * else at `receivedAt`. `undefined` — the condition is not evaluated, the
 * PUT goes on — when the address names no URI-R or the datetime is outside
 * every local archive (ingest then answers as it would).
 */
async function conditionMemento(app: FastifyInstance, req: FastifyRequest, route: string, receivedAt: Date): Promise<MementoRow | NewMementoRow | undefined> {
  const { config } = app;
  let urlkey: string;
  try {
    urlkey = uriRAfter(req.raw.url ?? '/', route, config.maxUrlLength).urlkey;
  } catch (err) {
    if (isHttpError(err)) return undefined;
    throw err;
  }
  const h = req.headers['memento-datetime'];
  return predecessorAt(app, urlkey, parseHttpDate(Array.isArray(h) ? h[0] : h) ?? undefined, receivedAt);
}

/**
 * The memento a capture of `urlkey` at `given` (else at `receivedAt`; also
 * when `given` is before 1970 or more than a day after `receivedAt`) would
 * follow; `undefined` when there is none, when that instant is outside every
 * local archive, or when the access rules hide it (archive/access.ts): a
 * hidden memento is as if never captured, so no question is answered
 * `unchanged` and no 412 names its digest or URI-M because of it.
 */
async function predecessorAt(app: FastifyInstance, urlkey: string, given: Date | undefined, receivedAt: Date): Promise<MementoRow | NewMementoRow | undefined> {
  const when = given && given.getTime() >= 0 && given.getTime() <= receivedAt.getTime() + 86_400_000 ? given : receivedAt;
  const datetime = toEpochSeconds(when);
  const archive = archiveForInstant(app.config.archives, datetime);
  if (!archive || !isLocal(archive)) return undefined;
  const prev = await app.store.predecessor(urlkey, datetime);
  return prev && app.access.verdict(urlkey, prev.datetime) === 'allow' ? prev : undefined;
}

/**
 * 412: the capture would be a duplicate of `prev`; nothing is read or
 * stored. `ETag` is `prev`'s capture tag, `Content-Location` its URI-M.
 * When the body was not asked for (`Expect: 100-continue`, `continueOwed`)
 * and is chunked, the connection stays open: the client ends the request
 * with the last chunk (`0\r\n\r\n`), which the server reads and drops, and
 * may send its next request on it; with `Content-Length` (a body the
 * client cannot cut short) Node closes the connection after the answer
 * (`Connection: close`). A body that was sent anyway is read and dropped.
 */
function unchanged(req: FastifyRequest, reply: FastifyReply, prev: MementoRow | NewMementoRow, continueOwed: boolean): FastifyReply {
  const uriM = uris.memento(req.base, prev.archive_id, prev);
  const chunked = /\bchunked\s*$/i.test(String(req.headers['transfer-encoding'] ?? ''));
  // Node closes a connection whose 100 Continue was not sent before a final answer (the client "may put extra bytes on
  // the wire"); a chunked body is framed either way, so that connection can stay (RFC 9110 §10.1.1: say which).
  if (continueOwed && chunked) (reply.raw as ServerResponse & { _expect_continue?: boolean })._expect_continue = false;
  return reply
    .code(412)
    .header('etag', captureEntityTag(prev))
    .header('content-location', uriM)
    .type(TEXT)
    .send(`unchanged: the memento ${uriM} has the same payload digest, status and media type; nothing stored\n`);
}
