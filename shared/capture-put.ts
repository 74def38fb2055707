/**
 * The one client of the archive's capture PUT (docs/http-api.md "Capture
 * API (PUT)"), for every sender: the capture proxy's live PUT and its
 * spool's re-send (proxy/capture/upload.ts, proxy/spool/queue.ts) and
 * `memento-archive import --daemon` (archive/import/sinks.ts). One place
 * opens the request (`PUT` of a capture record, `Authorization: Bearer
 * <token>` when the sender has one, RFC 6750 §2.1) and one place reads the
 * archive's answer into a {@link CaptureAnswer}: its status, first line,
 * whether it broke off, and for a capture the archive took (200, 201) the
 * memento it names (`Location`), its capture tag (`ETag`),
 * `Archive-Revisit-After` and what the archive did with it
 * (`Archive-Capture: new | revisit | duplicate`).
 */
import http, { type IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseHttpDate, parseTimestamp14, toEpochSeconds } from './http-date.js';
import { originOf } from './net.js';
import { parseUriM } from './uri-m.js';

/**
 * The field of a PUT answered 200 or 201 that says what the archive did
 * with the capture (archive/http/ingest.ts): `new` (a new memento with a
 * body of its own), `revisit` (a new memento written as a WARC revisit
 * record of the memento holding its payload) or `duplicate` (identical to
 * the memento it follows, within `revisit_interval`: nothing stored).
 */
export const CAPTURE_FIELD = 'Archive-Capture';

/** A value of {@link CAPTURE_FIELD}. */
export type CaptureKind = 'new' | 'revisit' | 'duplicate';

const KINDS: readonly string[] = ['new', 'revisit', 'duplicate'];

/** Where a capture goes: the archive's host (an IPv6 address without brackets) and port, and the PUT path (with the URI-R). */
export interface PutTarget {
  host: string;
  port: number;
  path: string;
}

/** `http://host:port/path` of a PUT (IPv6 in brackets), for logs and outcomes. */
export function putUrl(target: PutTarget): string {
  return originOf('http', target) + target.path;
}

/**
 * Opens a capture PUT to `target` with `headers` (the framing, `Content-Length`
 * or `Transfer-Encoding: chunked`, and any other field the sender sends)
 * plus `Authorization: Bearer <token>` when a token is given: on a
 * connection of `agent` (kept open after the answer), or without one on a
 * new connection closed after it (`Connection: close`). The caller writes
 * the body, listens for `'error'` (always: a late error must not become an
 * uncaught one) and `'response'`, and passes the response to
 * {@link readCaptureAnswer}; {@link sendCapture} does all of it for a stream.
 */
export function openCapturePut(target: PutTarget, token: string | undefined, headers: Record<string, string | number>, agent?: http.Agent): http.ClientRequest {
  const all: Record<string, string | number> = { ...headers };
  if (token) all.Authorization = `Bearer ${token}`;
  if (!agent) all.Connection = 'close';
  return http.request({ host: target.host, port: target.port, method: 'PUT', path: target.path, agent: agent ?? false, headers: all });
}

/** The archive's answer to a capture PUT. */
export interface CaptureAnswer {
  status: number;
  /** First line of the answer's text, at most `maxLine` characters of {@link readCaptureAnswer} (the archive answers one line). */
  firstLine: string;
  /** False when the answer broke off before its end. */
  complete: boolean;
  /** Its `Location`: the URI-M of the memento the capture stored or matched (200, 201). */
  location?: string;
  /** Its `ETag`: the capture tag of that memento (200, 201; shared/capture-tag.ts). */
  etag?: string;
  /** Its `Archive-Revisit-After`, epoch seconds (200, 201); absent or unparsable: `undefined`. */
  revisitAfter?: number;
  /**
   * What the archive did with a capture it answered 200 or 201 for: its
   * {@link CAPTURE_FIELD}; from an archive that does not send it (or sends
   * another value), `new` for 201 and `duplicate` for 200 (a revisit is
   * then told apart from a new memento by nothing in the answer).
   */
  capture?: CaptureKind;
}

/** True for a 2xx answer: the archive has the capture. */
export function isStored(answer: Pick<CaptureAnswer, 'status'>): boolean {
  return answer.status >= 200 && answer.status < 300;
}

/**
 * True for a 409: the archive already holds a different capture of the
 * URI-R at the same second (Memento-Datetime has one-second resolution) and
 * never replaces a stored memento. Final, and no fault of the sender's nor
 * of the capture's: re-sending it changes nothing.
 */
export function isConflict(status: number): boolean {
  return status === 409;
}

/**
 * True for a refusal that no re-send can change: a 4xx other than 401,
 * 403, 408 and 429 (RFC 9110 §15.5: those may pass with new credentials,
 * in time, or later) and other than a 409 ({@link isConflict}).
 */
export function isPermanentRefusal(status: number): boolean {
  return status >= 400 && status < 500 && ![401, 403, 408, 409, 429].includes(status);
}

/**
 * Reads the archive's answer `res` and calls `done` once, from the
 * answer's `'end'` (whole) or `'close'` (broken off) event: its status, the
 * first line of its text (at most `maxLine` characters, default 300; about
 * 1 KiB of text is read), and for a 200 or 201 its `Location`, `ETag`,
 * `Archive-Revisit-After` and what the archive did ({@link CaptureAnswer}).
 * Never throws.
 */
export function readCaptureAnswer(res: IncomingMessage, done: (answer: CaptureAnswer) => void, maxLine = 300): void {
  const status = res.statusCode ?? 0;
  let text = '';
  let called = false;
  const finish = (complete: boolean) => {
    if (called) return;
    called = true;
    const answer: CaptureAnswer = { status, firstLine: text.split('\n')[0].slice(0, maxLine), complete };
    const { etag, location } = res.headers;
    if (location !== undefined) answer.location = location;
    if (etag !== undefined) answer.etag = etag;
    const after = parseHttpDate(res.headers['archive-revisit-after'] as string | undefined);
    if (after) answer.revisitAfter = toEpochSeconds(after);
    if (status === 200 || status === 201) {
      const said = String(res.headers[CAPTURE_FIELD.toLowerCase()] ?? '').trim();
      answer.capture = KINDS.includes(said) ? (said as CaptureKind) : status === 201 ? 'new' : 'duplicate';
    }
    done(answer);
  };
  res.setEncoding('utf8');
  res.on('data', (d: string) => {
    if (text.length < 1024) text += d;
  });
  res.on('error', () => {}); // 'close' follows
  res.on('end', () => finish(true));
  res.on('close', () => finish(false));
}

/** One line saying why an answer is not a success: `the archive answered 503: …`, or that it broke off. */
export function answerFailure(answer: CaptureAnswer): string {
  return answer.complete ? `the archive answered ${answer.status}: ${answer.firstLine}` : `the archive's answer (${answer.status}) broke off`;
}

/**
 * The memento a URI-M of this archive names (`…/<archive id>/memento/<14
 * digits>/<URI-R>`, as a PUT's `Location`): its archive id, Memento-Datetime
 * (epoch s) and URI-R; `null` for anything else.
 */
export function mementoOfLocation(location: string | undefined): { archiveId: string; datetime: number; uriR: string } | null {
  const m = parseUriM(location ?? '');
  const t = m && m.modifier === '' && m.timestamp.length === 14 ? parseTimestamp14(m.timestamp) : null;
  if (!m || !t) return null;
  return { archiveId: decodeURIComponent(m.archive), datetime: t.getTime() / 1000, uriR: m.uriR };
}

/** How {@link sendCapture} sends. */
export interface SendCaptureOptions {
  /** `Authorization: Bearer <token>` when given. */
  token?: string;
  /** More fields of the PUT (e.g. `Memento-Datetime`, `Archive-Capture-Via`, `Archive-Revisit-Of`). */
  headers?: Record<string, string>;
  /** Kept-alive connections to use; without it, a new connection per PUT, `Connection: close`. */
  agent?: http.Agent;
  /** Largest first line of the answer kept, characters (default 300). */
  maxLine?: number;
  /** How an error names the archive: `cannot reach <peer>: …` (default its origin, `http://host:port`). */
  peer?: string;
}

/**
 * PUTs the capture record streamed from `body` to `target` with
 * `Transfer-Encoding: chunked` (RFC 9112 §7.1: a PUT cut before its last
 * chunk leaves the archive nothing to store) and resolves with the
 * archive's answer ({@link readCaptureAnswer}). An answer that comes before
 * the body is sent (an early refusal) counts, even when the connection
 * then closes under the body.
 *
 * @throws (rejects with) what `body` fails with (the PUT is then cut, so
 *   the archive stores nothing); an Error `cannot reach <peer>: <why>`
 *   when the request fails before any answer
 */
export function sendCapture(target: PutTarget, body: Readable, options: SendCaptureOptions = {}): Promise<CaptureAnswer> {
  const headers = { ...options.headers, 'Transfer-Encoding': 'chunked' };
  return new Promise<CaptureAnswer>((resolve, reject) => {
    let answered = false;
    const req = openCapturePut(target, options.token, headers, options.agent);
    req.on('response', (res) => {
      answered = true;
      readCaptureAnswer(res, resolve, options.maxLine);
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (answered) return; // an early answer and then the connection closed under the body: the answer counts
      reject(body.errored ?? new Error(`cannot reach ${options.peer ?? originOf('http', target)}: ${err.message}`));
    });
    pipeline(body, req).catch((err: unknown) => {
      // The body failed (a damaged record): the archive sees a cut PUT and stores nothing.
      if (body.errored && !answered) {
        req.destroy();
        reject(err);
      }
    });
  });
}
