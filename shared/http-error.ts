/**
 * The one error type of both daemons' HTTP answers (http-errors'
 * `HttpError`): a status, a one-line reason, optional headers, and whether
 * the connection must close after the answer. Code throws it; each daemon
 * turns it into its text answer in one place ({@link errorText}): the
 * archive's fastify error handler, the proxy's `sendError`.
 */
import http from 'node:http';
import createError from 'http-errors';

export type HttpError = createError.HttpError;

/** Options of {@link httpError}. */
export interface HttpErrorOptions {
  /** Headers of the answer (lower-case names), e.g. `allow`, `www-authenticate`, `vary`. */
  headers?: Record<string, string>;
  /** Close the connection after the answer (the request body may be unread). */
  close?: boolean;
}

/**
 * An error answer: `status` (4xx or 5xx) and a one-line `reason` saying
 * what was wrong (CR and LF are replaced, so the text stays one line).
 */
export function httpError(status: number, reason: string, opts: HttpErrorOptions = {}): HttpError {
  const err = createError(status, reason.replace(/[\r\n]+/g, ' '));
  if (opts.headers) err.headers = opts.headers;
  if (opts.close) err.close = true;
  return err;
}

/** True for errors made by {@link httpError} (or any http-errors error). */
export const isHttpError = createError.isHttpError;

/** The answer an error becomes: an {@link HttpError} as itself, anything else a 500 naming it. */
export function errorAnswer(err: unknown): { status: number; reason: string; headers: Record<string, string>; close: boolean } {
  if (isHttpError(err) && err.status >= 400 && err.status < 600) {
    return { status: err.status, reason: err.message, headers: { ...(err.headers ?? {}) }, close: err.close === true };
  }
  return { status: 500, reason: `internal error: ${(err as Error)?.message ?? String(err)}`.replace(/[\r\n]+/g, ' '), headers: {}, close: false };
}

/**
 * The one-line text body of an error answer, ending in a line feed: the
 * reason alone (the archive), or with the status and its reason phrase in
 * front (`421 Misdirected Request: …`, the proxy, whose own answers must
 * stand out from the content server's).
 */
export function errorText(status: number, reason: string, opts: { withStatus?: boolean } = {}): string {
  return opts.withStatus ? `${status} ${http.STATUS_CODES[status] ?? 'Error'}: ${reason}\n` : `${reason}\n`;
}
