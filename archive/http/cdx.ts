/**
 * `GET/HEAD /cdx?url=…`: the CDX server API over every local archive, as
 * pywb, OutbackCDX and the Wayback CDX server answer it (the request:
 * archive/cdx/query.ts; the answer: archive/cdx/answer.ts), streamed from
 * the index. The contract: docs/http-api.md "CDX server API".
 */
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { cdxBody, cdxRows, NDJSON } from '../cdx/answer.js';
import { type CdxQuery, parseCdxQuery } from '../cdx/query.js';
import { type KeyRange, nowSeconds, subtractKeys, type UrlPolicy } from '../access.js';
import type { CdxColumn, CdxRow, CdxWalk, UrlkeyRange } from '../store/cdx-walk.js';
import { readRoute, TEXT } from './context.js';

/** The CDX plugin. */
export async function cdxRoutes(app: FastifyInstance): Promise<void> {
  readRoute(app, '/cdx', (req, reply) => cdx(app, req, reply), { resource: 'cdx' });
}

/**
 * The test of whether a memento may be listed in one CDX answer: the one
 * place CDX rows are filtered. A memento the access rules hide (block,
 * exclude, embargo; archive/access.ts) is not listed, as if never captured.
 * One policy per urlkey (rows come grouped by urlkey), all at the moment
 * the answer starts.
 */
export function cdxListed(app: FastifyInstance): (row: CdxRow) => boolean {
  if (!app.access.rules.length) return () => true;
  const now = nowSeconds();
  let policy: UrlPolicy | undefined;
  return (row) => {
    if (policy?.urlkey !== row.urlkey) policy = app.access.policy(row.urlkey, now);
    return policy.open || policy.visible(row.datetime);
  };
}

/** The index columns {@link cdxListed} reads beyond urlkey, datetime and id (each one is read for every row of an answer). */
export const LISTED_COLUMNS: readonly CdxColumn[] = [];

/**
 * The parameters are checked before anything is sent (a bad one is a 400
 * with its reason, for HEAD too); then `text/plain` (or NDJSON), streamed
 * (chunked). Every answer, errors included, is open to any origin.
 */
async function cdx(app: FastifyInstance, req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  // Open to scripts of any origin, the 400s too (so that a page can read why); never sniffed as another type, the 400s neither.
  reply.header('access-control-allow-origin', '*').header('x-content-type-options', 'nosniff');
  const target = req.raw.url ?? '';
  let q = parseCdxQuery(new URLSearchParams(target.includes('?') ? target.slice(target.indexOf('?') + 1) : ''), app.config.maxUrlLength);
  reply.type(q.output === 'json' ? NDJSON : TEXT);
  const listed = cdxListed(app);
  const within = shownSpans(app, q);
  if (q.matchType !== 'exact') q = { ...q, ranges: walkedRanges(q.ranges, app.access.wholeHiddenKeys()) };
  if (req.method === 'HEAD') {
    // As GET: an answer with no line is sent with `Content-Length: 0`, any other streamed (chunked).
    if (!(await anyRow(app, q, listed, within))) reply.header('content-length', '0');
    return reply.send();
  }
  return reply.send(Readable.from(cdxBody(cdxRows(app.store.index, q, LISTED_COLUMNS, within), q, listed)));
}

/**
 * What the index walk is limited to, so that hidden mementos are not even
 * handed to JavaScript: for a query of one URL (`matchType=exact`, also
 * `sort=closest`), the spans of datetimes the access rules show of it
 * (none at all when the URL is wholly hidden: an excluded URL with many
 * mementos is answered as fast as one never captured); for a query of many
 * URLs, the rules (as one SQL condition in the walk) (SQLite still steps over the hidden
 * rows of the range). {@link cdxListed} checks every row all the same.
 */
function shownSpans(app: FastifyInstance, q: CdxQuery): Pick<CdxWalk, 'within' | 'shown'> {
  if (q.matchType !== 'exact') {
    const shown = app.access.shownRules();
    return shown.length ? { shown } : {};
  }
  const policy = app.access.policy(q.ranges[0].from);
  return policy.open ? {} : { within: policy.ranges('allow') };
}

/** The urlkey ranges of a query over many urlkeys less those wholly hidden (AccessRules `wholeHiddenKeys`): the walk never reads their rows. */
function walkedRanges(ranges: readonly UrlkeyRange[], hidden: KeyRange[]): UrlkeyRange[] {
  if (!hidden.length) return [...ranges];
  return subtractKeys(
    ranges.map((r) => ({ from: r.from, to: r.to ?? r.from + '\0' })),
    hidden,
  );
}

/** Whether the answer to `q` has a line (for HEAD: one index query of two rows, not the answer). */
async function anyRow(app: FastifyInstance, q: CdxQuery, listed: (row: CdxRow) => boolean, within: Pick<CdxWalk, 'within' | 'shown'>): Promise<boolean> {
  for await (const p of cdxRows(app.store.index, { ...q, limit: 1 }, LISTED_COLUMNS, within)) if (listed(p.row)) return true;
  return false;
}
