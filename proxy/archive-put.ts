/**
 * The PUT of a capture record to the archive, as both senders make it (the
 * live PUT, proxy/capture/upload.ts, and the spool's re-send,
 * proxy/spool/queue.ts): one place builds the request (on a kept-alive
 * connection of the proxy's {@link archiveAgent}, `Authorization: Bearer
 * <ArchiveToken>`, RFC 6750 §2.1) and one place reads the archive's answer
 * (its status, the first line of its text, whether it broke off). The
 * design: docs/architecture.md.
 */

import type { IncomingMessage } from 'node:http';
import http from 'node:http';
import { parseHttpDate, toEpochSeconds } from '#shared/http-date.js';
import { originOf } from '#shared/net.js';
import type { Vhost } from './config/vhost-file.js';

/** Where a capture goes: the archive's host and port, and the PUT path (`ArchivePath` + URI-R). */
export interface PutTarget {
  host: string;
  port: number;
  path: string;
}

/** Where a vhost's capture of `uriR` goes: `ArchiveHost`, `ArchivePort`, and `ArchivePath` + URI-R as the path. */
export function putTargetOf(vhost: Vhost, uriR: string): PutTarget {
  return { host: vhost.archiveHost, port: vhost.archivePort, path: vhost.archivePath + uriR };
}

/** `http://host:port/path` of a PUT (IPv6 in brackets), for logs and outcomes. */
export function putUrl(target: PutTarget): string {
  return originOf('http', target) + target.path;
}

/**
 * The connections to the archives: HTTP/1.1 keep-alive (RFC 9112 §9.3),
 * at most `maxSockets` per archive (`host:port`; `archive_connections`);
 * a PUT that finds them all busy waits for one. The most recently used
 * idle connection is taken first (`lifo`), so that the others time out;
 * an idle connection is closed after 60 s, or a second before the
 * archive's own keep-alive timeout when it announces one (`Keep-Alive:
 * timeout=5`), so that a PUT never races the archive closing it.
 */
export function archiveAgent(maxSockets = 64): http.Agent {
  return new http.Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets, scheduling: 'lifo', timeout: 60_000 });
}

/**
 * Opens a PUT to the archive with `headers` plus `Authorization: Bearer
 * <token>` when a token is given: on a connection of `agent` (kept open
 * after the answer), or without one on a new connection closed after it
 * (`Connection: close`, as the Apache plug-in did). The caller writes the
 * body, listens for `'error'` and `'response'`, and passes the response to
 * {@link readArchiveAnswer}.
 */
export function archivePut(target: PutTarget, token: string | undefined, headers: Record<string, string | number>, agent?: http.Agent): http.ClientRequest {
  const all: Record<string, string | number> = { ...headers };
  if (token) all.Authorization = `Bearer ${token}`;
  if (!agent) all.Connection = 'close';
  return http.request({ host: target.host, port: target.port, method: 'PUT', path: target.path, agent: agent ?? false, headers: all });
}

/** The archive's answer to a PUT. */
export interface ArchiveAnswer {
  status: number;
  /** First line of the answer's text, at most 300 characters (the archive answers one line). */
  firstLine: string;
  /** False when the answer broke off before its end. */
  complete: boolean;
  /** Its `ETag`: the capture tag of the memento the capture stored or matched (200, 201; shared/capture-tag.ts). */
  etag?: string;
  /** Its `Archive-Revisit-After`, epoch seconds (200, 201; archive/http/ingest.ts); absent or unparsable: `undefined`. */
  revisitAfter?: number;
}

/** True for a 2xx answer: the archive has the capture. */
export function isStored(answer: ArchiveAnswer): boolean {
  return answer.status >= 200 && answer.status < 300;
}

/**
 * True for a 409: the archive already holds a different capture of the
 * URI-R at the same second (Memento-Datetime has one-second resolution) and
 * never replaces a stored memento. Final, and no fault of the proxy's nor
 * of the capture's: it is logged and counted, then dropped (never re-sent,
 * not kept in `rejected/`); the archive counts as up.
 */
export function isConflict(status: number): boolean {
  return status === 409;
}

/**
 * True for a refusal that no re-send can change: a 4xx other than 401,
 * 403, 408 and 429 (RFC 9110 §15.5: those may pass with new credentials,
 * in time, or later) and other than a 409 ({@link isConflict}). The
 * capture goes to `rejected/`, and the archive counts as up: the captures
 * behind it are not held back.
 */
export function isPermanentRefusal(status: number): boolean {
  return status >= 400 && status < 500 && ![401, 403, 408, 409, 429].includes(status);
}

/**
 * Reads the archive's answer and calls `done` once, from the answer's
 * `'end'` (whole) or `'close'` (broken off) event: its status, first line
 * of text (at most about 1 KiB is read), and for a capture the archive
 * took, its `ETag` and `Archive-Revisit-After`. Never throws.
 */
export function readArchiveAnswer(res: IncomingMessage, done: (answer: ArchiveAnswer) => void): void {
  const status = res.statusCode ?? 0;
  let text = '';
  let called = false;
  const finish = (complete: boolean) => {
    if (called) return;
    called = true;
    const answer: ArchiveAnswer = { status, firstLine: text.split('\n')[0].slice(0, 300), complete };
    const { etag } = res.headers;
    if (etag !== undefined) answer.etag = etag;
    const after = parseHttpDate(res.headers['archive-revisit-after'] as string | undefined);
    if (after) answer.revisitAfter = toEpochSeconds(after);
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
export function answerFailure(answer: ArchiveAnswer): string {
  return answer.complete ? `the archive answered ${answer.status}: ${answer.firstLine}` : `the archive's answer (${answer.status}) broke off`;
}
