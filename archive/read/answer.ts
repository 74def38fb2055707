/**
 * What the reader (reader.ts) gives a route to send: a plain HTTP answer,
 * status, headers and body, with nothing of the HTTP server in it. The
 * routes (archive/http/answer.ts `sendAnswer`) turn it into a fastify
 * reply, so that every header passes the one path that spells its name
 * (archive/http/field-names.ts).
 */

/** Header values by lower-case name (a list for a repeated field; `undefined`: not sent). */
export type HeaderValues = Record<string, string | string[] | undefined>;

/** A read answer. */
export interface Answer {
  status: number;
  /** Lower-case names, in the order they are sent. */
  headers: HeaderValues;
  /**
   * The body: `null` for none; a buffer (its `Content-Length` is sent
   * when `headers` names none); or its chunks as they are read (a stream
   * of the stored record, a TimeMap a page at a time). Not sent to HEAD.
   */
  body: Buffer | AsyncIterable<Uint8Array | string> | null;
  /**
   * Lets go of what the body holds (a stored record, a decoder): called
   * once, when the body has been sent, failed, or is not sent (HEAD, a
   * client that left).
   */
  close?: () => void;
  /**
   * A 404 for a URI-R no archive has: a browser asking for a page gets the
   * archive's "Not archived" page in place of the text body (the route
   * decides, it knows the request's `Accept`).
   */
  notArchived?: true;
}

/** Media type of every text answer (errors, the bodies of redirects). */
export const TEXT = 'text/plain; charset=UTF-8';

/**
 * A redirect: `status`, `Location`, and the location as a one-line text
 * body (a client that does not follow it sees where it leads).
 *
 * @param headers headers sent before `Location` (`Vary`, `Link`…)
 */
export function redirectAnswer(status: 302 | 303, location: string, headers: HeaderValues = {}): Answer & { body: Buffer } {
  return { status, headers: { ...headers, location, 'content-type': TEXT }, body: Buffer.from(location + '\n') };
}

/** An iterable whose source is made when it is first iterated (a body that reads nothing until it is sent; a HEAD reads nothing). */
export function lazy<T>(make: () => AsyncIterable<T>): AsyncIterable<T> {
  return { [Symbol.asyncIterator]: () => make()[Symbol.asyncIterator]() };
}
