/**
 * One HTTP POST (or GET) to a service the evidence log depends on (a witness, a
 * timestamping authority), with its answer bounded: the whole exchange
 * within a time limit, at most so many bytes of body read, no redirect
 * followed. What such a service answers is hostile input; this module only
 * bounds it, the callers read it.
 */

/** The answer of {@link boundedPost}: status, the media type (lower case, no parameters) and the body. */
export interface BoundedAnswer {
  readonly status: number;
  /** `Content-Type` without parameters, lower case; `''` when absent */
  readonly contentType: string;
  readonly body: Buffer;
}

/** Limits of {@link boundedPost}. */
export interface BoundedPostOptions {
  /** the request's media type */
  readonly contentType: string;
  /** `Accept` of the request, when the service should be told */
  readonly accept?: string;
  /** the whole exchange (connect, send, read the answer), ms */
  readonly timeoutMs: number;
  /** the most bytes of answer body read; past it the exchange fails */
  readonly maxBytes: number;
  /** ends the exchange early (e.g. the daemon stopping) */
  readonly signal?: AbortSignal;
}

/** The service could not be asked, did not answer in time, or answered too much: the one-line reason. */
export class BoundedPostError extends Error {
  override name = 'BoundedPostError';
}

/**
 * POSTs `body` to `url` and reads the answer, within the bounds of `opts`.
 * A redirect is an answer like any other (its status), never followed.
 *
 * @throws BoundedPostError when the URL is not http(s), the connection
 *   fails, the time runs out, the body is longer than `maxBytes`, or
 *   `signal` aborts (its reason's message)
 */
export function boundedPost(url: string, body: Buffer | string, opts: BoundedPostOptions): Promise<BoundedAnswer> {
  return boundedRequest(url, body, opts);
}

/** GETs `url` and reads the answer, within the bounds of `opts` (as {@link boundedPost}; `contentType` is ignored). @throws BoundedPostError */
export function boundedGet(url: string, opts: Omit<BoundedPostOptions, 'contentType'>): Promise<BoundedAnswer> {
  return boundedRequest(url, null, opts);
}

/** A GET (`body` null) or a POST of `body`, bounded. */
async function boundedRequest(
  url: string,
  body: Buffer | string | null,
  opts: Omit<BoundedPostOptions, 'contentType'> & { contentType?: string },
): Promise<BoundedAnswer> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new BoundedPostError(`${url}: not a URL`);
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:') throw new BoundedPostError(`${url}: not an http or https URL`);
  const timeout = AbortSignal.timeout(opts.timeoutMs);
  const signal = opts.signal ? AbortSignal.any([timeout, opts.signal]) : timeout;
  const why = (err: unknown): BoundedPostError => {
    if (timeout.aborted) return new BoundedPostError(`${url}: no answer within ${opts.timeoutMs} ms`);
    if (opts.signal?.aborted) return new BoundedPostError(`${url}: ${String((opts.signal.reason as Error | undefined)?.message ?? opts.signal.reason)}`);
    const e = err as Error & { cause?: Error };
    return new BoundedPostError(`${url}: ${e.cause?.message ?? e.message}`);
  };
  let res: Response;
  try {
    res = await fetch(target, {
      method: body === null ? 'GET' : 'POST',
      body: body === null ? undefined : typeof body === 'string' ? body : new Uint8Array(body),
      headers: { ...(body !== null && opts.contentType ? { 'content-type': opts.contentType } : {}), ...(opts.accept ? { accept: opts.accept } : {}) },
      redirect: 'manual',
      signal,
    });
  } catch (err) {
    throw why(err);
  }
  const declared = Number(res.headers.get('content-length') ?? '0');
  if (declared > opts.maxBytes) {
    await res.body?.cancel().catch(() => undefined);
    throw new BoundedPostError(`${url}: an answer of ${declared} bytes (at most ${opts.maxBytes} are read)`);
  }
  const chunks: Buffer[] = [];
  let length = 0;
  if (res.body) {
    const reader = res.body.getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        length += value.byteLength;
        if (length > opts.maxBytes) throw new BoundedPostError(`${url}: an answer of over ${opts.maxBytes} bytes`);
        chunks.push(Buffer.from(value));
      }
    } catch (err) {
      if (err instanceof BoundedPostError) throw err;
      throw why(err);
    } finally {
      await reader.cancel().catch(() => undefined);
    }
  }
  const contentType = (res.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase();
  return { status: res.status, contentType, body: Buffer.concat(chunks, length) };
}
