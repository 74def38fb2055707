/**
 * The original headers of a stored response (docs/architecture.md "Replay
 * and Prefer", echo-original-headers): each as `X-Archive-Orig-<name>`, and
 * the few a Memento answer also acts on (Content-Type, Content-Encoding,
 * Location, Refresh), as Node can send them.
 */
import http from 'node:http';
import type { StoredResponse } from '../store/warcs/warc-reader.js';
import { storedContentEncoding } from '../replay/content-coding.js';

function validHeaderName(name: string): boolean {
  try {
    http.validateHeaderName(name);
    return true;
  } catch {
    return false;
  }
}

/** A stored header value as Node can send it: characters outside latin-1 or control characters are percent-encoded. */
function headerValue(value: string): string {
  try {
    http.validateHeaderValue('x', value);
    return value;
  } catch {
    return value.replace(/[^\t\x20-\x7e\x80-\xff]/gu, (c) => encodeURIComponent(c));
  }
}

/** Response headers of a Memento answer (lower-case names; repeated ones as lists). */
export type HeaderMap = Record<string, string | string[]>;

/**
 * The original headers of a stored response as `X-Archive-Orig-<name>` (a
 * name Node cannot send is left out; a value with characters it cannot send
 * has them percent-encoded), and the first value of each of the few a
 * Memento answer also acts on; `contentEncoding` lower case, `undefined` for
 * none or identity.
 */
export function originalHeaders(stored: Pick<StoredResponse, 'headers'>): {
  headers: HeaderMap;
  contentType?: string;
  contentEncoding?: string;
  location?: string;
  refresh?: string;
} {
  const headers: HeaderMap = {};
  let contentType: string | undefined;
  let location: string | undefined;
  let refresh: string | undefined;
  for (const [name, value] of stored.headers) {
    const lower = name.toLowerCase();
    if (!validHeaderName(lower)) continue;
    const v = headerValue(value);
    const k = `x-archive-orig-${lower}`;
    const cur = headers[k];
    headers[k] = cur === undefined ? v : Array.isArray(cur) ? [...cur, v] : [cur, v];
    if (lower === 'content-type') contentType ??= v;
    if (lower === 'location') location ??= v;
    if (lower === 'refresh') refresh ??= v;
  }
  return { headers, contentType, contentEncoding: storedContentEncoding(stored), location, refresh };
}
