/**
 * Full-text search and phrase history (`GET /search`, `GET /history`):
 * what the visible index's search answers (archive/read/search.ts), as a
 * page for people under the `/web/` look (snippets with the matched words
 * marked, counts by year and month, a link to each memento's
 * `/web/<ts>/<url>`) or as JSON (`output=json`). The text in a snippet or
 * title is stored content: it is escaped here, and only the archive's own
 * `<mark>` is added. Also starts the daemon's text indexer
 * (archive/search/indexer.ts), which each commit of the store nudges.
 *
 * Parameters: `q` (words, "phrases", prefix*: archive/search/query.ts),
 * `from`/`to` (1–14 digits, a whole period inclusive, as `/cdx`), `url` (a
 * URL, a prefix ending in `*`, or `*.host` for a domain), `type` (a media
 * type), `page` (from 1), `output` (`json`; `html` the default). Every bad
 * parameter is a 400 with one line.
 */
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { toTimestamp14 } from '#shared/http-date.js';
import { httpError } from '#shared/http-error.js';
import { buildUriM } from '#shared/uri-m.js';
import { timestampBound, urlkeyRanges, urlWildcard } from '../cdx/query.js';
import { parseUriR } from '../http/context.js';
import { TextIndexer } from '../search/indexer.js';
import { parseTextQuery } from '../search/query.js';
import { SEARCH_MS, SEARCH_PAGE, type SearchAnswer, type UrlHistory } from '../read/search.js';
import { sendPage } from './page.js';
import { ATOM_TYPE, type AtomEntry, type AtomLink, atomDocument } from '../feed/atom.js';
import { archiveAuthor } from '../feed/routes.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The text indexer (archive/search/indexer.ts). */
    textIndexer: TextIndexer;
  }
}

/** The highest page number asked for (past the end is an empty page). */
const MAX_PAGE = 10_000;

type Query = Record<string, string | string[] | undefined>;

/** The one value of parameter `name` ('' as absent). @throws HttpError 400 when given twice */
function one(query: Query, name: string): string | undefined {
  const v = query[name];
  if (Array.isArray(v)) throw httpError(400, `${name}= is given ${v.length} times; give it once`);
  return v === '' ? undefined : v;
}

/** `from`/`to`: 1–14 digits as the first or last second of the period they name. */
function bound(query: Query, name: 'from' | 'to'): number | undefined {
  const v = one(query, name);
  if (v === undefined) return undefined;
  const t = timestampBound(v, name === 'from' ? 'first' : 'last');
  if (t === undefined) throw httpError(400, `${name}=${v.slice(0, 40)} is not a timestamp: 1 to 14 digits of yyyyMMddhhmmss (UTC) that begin a date`);
  return t;
}

/** `url`: a URL, a prefix ending in `*`, or `*.host`, as urlkey ranges. */
function urlRanges(url: string, max: number): { from: string; to?: string }[] {
  const wild = urlWildcard(url);
  return urlkeyRanges(parseUriR(wild.url, max).urlkey, wild.type ?? 'exact');
}

/** What the page or JSON answer names of the request. */
function output(query: Query): 'html' | 'json' | 'atom' {
  const o = one(query, 'output');
  if (o === undefined || o === 'html') return 'html';
  if (o === 'json' || o === 'atom') return o;
  throw httpError(400, `output=${o.slice(0, 40)} is not json, atom or html`);
}

/** The marks around a snippet's matched words (text-queries.ts `snippets`). */
const MARK_START = '\u0001';
const MARK_END = '\u0002';

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** A snippet as HTML: its text escaped, the matched words (between \u0001 and \u0002) in `<mark>`. */
export function snippetHtml(snippet: string): string {
  const escaped = snippet.replace(/[&<>"']/g, (c) => ESCAPES[c]);
  return escaped.split(MARK_START).join('<mark>').split(MARK_END).join('</mark>');
}

/** A snippet as plain text (the marks taken out). */
const plain = (snippet: string) => snippet.split(MARK_START).join('').split(MARK_END).join('');

/** Most time the extraction of one page's text (inflate, decode, parse) may take in the text pool's thread (ms); past it the page gets no text. */
const TEXT_DEADLINE_MS = 10_000;

/** The search and history plugin (see the module comment). */
export async function searchRoutes(app: FastifyInstance): Promise<void> {
  // Reads started (GET and HEAD, the fast path's included): a catch-up walk yields to them.
  let reads = 0;
  app.server.on('request', (req: IncomingMessage) => {
    if (req.method === 'GET' || req.method === 'HEAD') reads++;
  });
  const indexer = new TextIndexer(
    app.store.index,
    (row, max) => app.store.readRecordBytes(row, max),
    (row, err) => app.log.warn({ id: row.id, err: err instanceof Error ? err.message : String(err) }, 'text not indexed'),
    // Inflate, decode and parse in the text pool's thread: the event loop only reads the record's raw bytes, moved there uncopied.
    (input) => app.work.text.run('text', input, TEXT_DEADLINE_MS, undefined, [input.record.buffer as ArrayBuffer]),
    { readsStarted: () => reads },
  );
  app.decorate('textIndexer', indexer);
  app.store.onCommitted = () => indexer.nudge();
  app.addHook('onReady', async () => indexer.nudge());
  app.addHook('onClose', async () => indexer.close());
  const max = app.config.maxUrlLength;

  app.get('/search', { config: { resource: 'search' } }, async (req: FastifyRequest, reply: FastifyReply) => {
    const query = req.query as Query;
    const out = output(query);
    const q = one(query, 'q');
    const terms = parseTextQuery(q);
    const pageParam = one(query, 'page') ?? '1';
    if (!/^\d{1,6}$/.test(pageParam) || Number(pageParam) < 1 || Number(pageParam) > MAX_PAGE)
      throw httpError(400, `page=${pageParam.slice(0, 20)} is not a page number (1 to ${MAX_PAGE})`);
    const type = one(query, 'type')?.toLowerCase();
    if (type !== undefined && !/^[a-z0-9][a-z0-9.+-]*\/[a-z0-9][a-z0-9.+-]*$/.test(type)) throw httpError(400, `type=${type.slice(0, 40)} is not a media type`);
    const url = one(query, 'url');
    const since = bound(query, 'from');
    const until = bound(query, 'to');
    const page = Number(pageParam);
    const r = await app.visible.search.search({ terms, since, until, ranges: url ? urlRanges(url, max) : undefined, mime: type, page });
    const base = req.base;
    if (out === 'json') {
      return reply.type('application/json').send({
        total: r.total,
        capped: r.capped,
        cut: r.cut,
        page,
        page_size: SEARCH_PAGE,
        hits: r.hits.map((h) => ({
          uri_r: h.uri_r,
          uri_m: buildUriM(base, { archive: h.archive_id, timestamp: toTimestamp14(h.datetime), modifier: '', uriR: h.uri_r }),
          datetime: toTimestamp14(h.datetime),
          title: h.title,
          snippet: plain(h.snippet),
        })),
        facets: r.facets,
      });
    }
    if (out === 'atom') return sendSearchFeed(reply, base, req.url, q ?? '', r, page);
    return sendPage(reply, 200, 'search', searchData(r, { q: q ?? '', url, type, from: one(query, 'from'), to: one(query, 'to'), page }), {
      base,
      frames: "'none'",
    });
  });

  app.get('/history', { config: { resource: 'search' } }, async (req: FastifyRequest, reply: FastifyReply) => {
    const query = req.query as Query;
    const out = output(query);
    const q = one(query, 'q');
    const terms = parseTextQuery(q);
    const url = one(query, 'url');
    if (url === undefined) throw httpError(400, 'url= is required: the URL, or URL prefix ending in *, whose text to follow');
    const { urls, capped } = await app.visible.search.history(terms, urlRanges(url, max));
    const base = req.base;
    const step = (s: { archive_id: string; uri_r: string; datetime: number }) => ({
      uri_m: buildUriM(base, { archive: s.archive_id, timestamp: toTimestamp14(s.datetime), modifier: '', uriR: s.uri_r }),
      datetime: toTimestamp14(s.datetime),
    });
    if (out === 'json') {
      return reply.type('application/json').send({
        capped,
        urls: urls.map((u) => ({
          uri_r: u.uri_r,
          periods: u.periods.map((p) => ({ from: step(p.from), until: step(p.until), gone: p.gone && step(p.gone) })),
        })),
      });
    }
    return sendPage(reply, 200, 'history', historyData(urls, capped, q ?? '', url), { base, frames: "'none'" });
  });
}
// Not encapsulated (as fastify-plugin does): `app.textIndexer` is the daemon's, for its tests and metrics.
(searchRoutes as unknown as Record<symbol, boolean>)[Symbol.for('skip-override')] = true;

/** The template data of a search page. */
function searchData(r: SearchAnswer, ask: { q: string; url?: string; type?: string; from?: string; to?: string; page: number }): Record<string, unknown> {
  const link = (over: Record<string, string | number | undefined>) => {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries({ q: ask.q, url: ask.url, type: ask.type, from: ask.from, to: ask.to, ...over }))
      if (v !== undefined && v !== '') p.set(k, String(v));
    return `/search?${p.toString()}`;
  };
  const years = Object.entries(r.facets.year)
    .sort(([a], [b]) => b.localeCompare(a))
    .map(([y, n]) => ({
      label: y,
      n,
      href: link({ from: y, to: y, page: undefined }),
      months: Object.entries(r.facets.month)
        .filter(([m]) => m.startsWith(y))
        .sort(([a], [b]) => b.localeCompare(a))
        .map(([m, k]) => ({ label: m, n: k, href: link({ from: m.replace('-', ''), to: m.replace('-', ''), page: undefined }) })),
    }));
  const pages = Math.max(1, Math.ceil(r.total / SEARCH_PAGE));
  return {
    title: `Search: ${ask.q}`,
    text: ask.q,
    ask,
    total: r.total,
    capped: r.capped,
    timeCut: r.cut === 'time' ? SEARCH_MS / 1000 : undefined,
    hits: r.hits.map((h) => ({ ...h, snippetHtml: snippetHtml(h.snippet) })),
    years,
    page: ask.page,
    pages,
    prev: ask.page > 1 ? link({ page: ask.page - 1 }) : undefined,
    next: ask.page < pages ? link({ page: ask.page + 1 }) : undefined,
    history: ask.url ? `/history?${new URLSearchParams({ q: `"${ask.q.replace(/"/g, '')}"`, url: ask.url }).toString()}` : undefined,
    wide: ask.from !== undefined || ask.to !== undefined ? link({ from: undefined, to: undefined, page: undefined }) : undefined,
  };
}

/** The template data of a history page. */
function historyData(urls: UrlHistory[], capped: boolean, q: string, url: string): Record<string, unknown> {
  return { title: `History of ${q}`, text: q, url, urls, capped };
}

/**
 * The hits of one page of a search as an Atom feed (RFC 4287; `output=atom`,
 * to follow a search in a feed reader): one entry per hit, newest first, its
 * URI-M as `id`, its Memento-Datetime as `updated`, its `/web/` page as
 * `alternate`, its snippet as `summary`; the feed links `self`, the HTML
 * results as `alternate`, and the next page as `next` (RFC 5005 §3) when
 * there is one.
 */
function sendSearchFeed(reply: FastifyReply, base: string, target: string, q: string, r: SearchAnswer, page: number): FastifyReply {
  const self = `${base}${target}`;
  const at = (p: number | undefined, out: string | undefined) => {
    const u = new URL(self);
    if (p === undefined) u.searchParams.delete('page');
    else u.searchParams.set('page', String(p));
    if (out === undefined) u.searchParams.delete('output');
    else u.searchParams.set('output', out);
    return u.href;
  };
  const links: AtomLink[] = [
    { rel: 'self', href: self, type: ATOM_TYPE },
    { rel: 'alternate', href: at(page, undefined), type: 'text/html' },
  ];
  if (r.total > page * SEARCH_PAGE) links.push({ rel: 'next', href: at(page + 1, 'atom'), type: ATOM_TYPE });
  const entries: AtomEntry[] = r.hits.map((h) => {
    const ts = toTimestamp14(h.datetime);
    return {
      id: buildUriM(base, { archive: h.archive_id, timestamp: ts, modifier: '', uriR: h.uri_r }),
      title: h.title || h.uri_r,
      updated: h.datetime,
      links: [{ rel: 'alternate', href: `${base}/web/${ts}/${h.uri_r}`, type: 'text/html' }],
      summary: plain(h.snippet),
    };
  });
  const feed = {
    id: at(undefined, 'atom'),
    title: `Search: ${q}`,
    // The newest hit's Memento-Datetime (hits are newest first); with none, now.
    updated: r.hits[0]?.datetime ?? Math.floor(Date.now() / 1000),
    author: archiveAuthor(base),
    links,
    archive: false,
    entries,
  };
  return reply.type(`${ATOM_TYPE}; charset=utf-8`).header('x-content-type-options', 'nosniff').send(atomDocument(feed));
}
