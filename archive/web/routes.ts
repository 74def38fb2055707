/**
 * The pages for people, under `/web/`, in the Wayback Machine's URL shapes
 * (the table is in docs/url-space.md): the home page with its search box;
 * the calendar of a URL (a `*` selector before the URL: all years, one
 * year, or one day with its list of captures); the archived URLs under a
 * prefix (a URL ending in `*`), paged; the archival replay of the capture
 * nearest to a timestamp under a banner (`/web/<ts>/<url>`, an iframe;
 * `<ts>id_` and `<ts>ol_` redirect to the raw and original-links forms,
 * `<ts>im_`, `js_`, `cs_`, `oe_`, `if_`, `fw_` to the archival replay
 * without the banner);
 * and what changed between two captures (`/web/diff/<ts1>/<ts2>/<url>`).
 *
 * Server-rendered with Eta templates (archive/web/views/, sent by
 * page.ts, which also renders the archive's error pages for browsers);
 * the one stylesheet and one script are the archive's own
 * (`/_static/web.css`, `/_static/web.js`); the pages work without the
 * script (it keeps the banner in step with navigation inside the frame and
 * adds the reader's local time on hover).
 *
 * A stored page is hostile input, and these pages never act for one: no
 * markup of a memento is ever put into them (the banner is rendered here
 * from the index); their Content-Security-Policy allows only their own
 * stylesheet and script, by a nonce fresh for each answer (never by
 * `'self'`: every memento is on the archive's origin), and frames only from
 * where mementos are served; no page may be framed. On `replay_origin`
 * (archive/http/context.ts) none is served.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { toTimestamp14 } from '#shared/http-date.js';
import { httpError, isHttpError } from '#shared/http-error.js';
import { uris } from '../memento/navigation.js';
import { instant, type Period, timestampPeriod } from '../read/nearest.js';
import { formOfModifier, type MementoForm } from '../memento/prefer.js';
import { buildUriM, parseUriMTimestamp } from '#shared/uri-m.js';
import { timestampBound } from '../cdx/query.js';
import { localArchive, parseUriR, readRoute, redirect, refuseOnReplayHost, replayBase } from '../http/context.js';
import { evidenceLinks } from '../evidence/banner-check.js';
import { captureCheck } from '../evidence/capture-check.js';
import { type CoherencePanel, coherencePanel } from './coherence.js';
import { DIFF_BUDGET, DIFF_DEADLINE_MS, type DiffResult } from './diff.js';
import { displayUrl, longDate, monthName } from './format.js';
import { type SameMachine, notArchivedData, sameMachineCaptures, sameMachineNames } from './not-archived.js';
import { errorTitle, sendPage } from './page.js';
import { DAY_LIMIT } from '../read/pages.js';
import type { Capture, Nearest, Site } from '../read/pages.js';
import { captureText, type CaptureText } from './text.js';
import { WorkRefused } from '../work/pool.js';

/** URLs per page of a prefix listing. */
export const PREFIX_PAGE = 100;
/** Sites listed on the home page, and how long that list is reused (it scans the whole index). */
const HOME_SITES = 50;
const SITES_TTL_MS = 10_000;

type Req = FastifyRequest<{ Params: Record<string, string> }>;

/** The pages-for-people plugin. */
export async function webRoutes(app: FastifyInstance): Promise<void> {
  let siteCache: { at: number; rules: number; sites: Site[] } | undefined;
  const homeSites = async () => {
    // Kept for SITES_TTL_MS, and computed again at once when the access rules change (SIGHUP).
    const rules = app.visible.generation;
    if (!siteCache || siteCache.rules !== rules || Date.now() - siteCache.at > SITES_TTL_MS)
      siteCache = { at: Date.now(), rules, sites: await app.visible.pages.sites(HOME_SITES) };
    return siteCache.sites;
  };
  // None of these pages on replay_origin: a stored page there never reaches them in its own origin.
  app.addHook('onRequest', async (req) => refuseOnReplayHost(app.config, req));
  readRoute(app, '/', async (req, reply) => redirect(reply, 302, `${req.base}/web/`), { resource: 'web' });
  readRoute(app, '/web', async (req, reply) => redirect(reply, 302, `${req.base}/web/`), { resource: 'web' });
  readRoute(
    app,
    '/web/*',
    async (req, reply) => {
      try {
        return await dispatch(app, req, reply, homeSites);
      } catch (err) {
        if (!isHttpError(err) || err.status >= 500) throw err;
        if (err.headers) reply.headers(err.headers);
        return render(app, req, reply, err.status, 'error', { title: errorTitle(err.status), reason: err.message });
      }
    },
    { resource: 'web' },
  );
}

/** Where this request's pages frame mementos from: `replay_origin` when set, else the request's base. */
function mementoBase(app: FastifyInstance, req: FastifyRequest): string {
  return replayBase(app.config) ?? req.base;
}

/** Sends a `/web/` page (page.ts): its frames only from where mementos are served, framed by no one. */
function render(app: FastifyInstance, req: FastifyRequest, reply: FastifyReply, status: number, view: string, data: Record<string, unknown>): FastifyReply {
  return sendPage(reply, status, view, data, { base: req.base, frames: new URL(mementoBase(app, req)).origin });
}

/**
 * A 1-14 digit timestamp as the period it names (navigation.ts
 * `timestampPeriod`: `2024` is that year, whose last capture is shown; digits
 * beyond the present, `99999999999999` or `2`, the newest capture). @throws HttpError 400
 */
function parseTs(ts: string): Period {
  const p = timestampPeriod(ts);
  if (!p) throw httpError(400, `malformed timestamp ${JSON.stringify(ts.slice(0, 40))}; it is up to 14 digits YYYYMMDDhhmmss (UTC)`);
  return p;
}

/**
 * The instant the address's timestamp `ts` (its period `p`) is read as in the banner's "how far from the time
 * asked for": its first second (the Wayback Machine's reading), also when that lies in the future (a capture
 * is then that far before the time asked, not before now); now for a period that has begun and is not over
 * (this year), or digits that are no date (`99999999999999`): the capture shown is then the newest.
 */
function askedInstant(ts: string, p: Period): number {
  const now = Math.floor(Date.now() / 1000);
  const first = timestampBound(ts, 'first');
  if (first !== undefined && first > now) return first;
  return p.end >= now ? now : p.start;
}

/** Routes a `/web/…` address to its page. */
async function dispatch(app: FastifyInstance, req: Req, reply: FastifyReply, homeSites: () => Promise<Site[]>): Promise<unknown> {
  const raw = (req.raw.url ?? '/web/').slice('/web/'.length);
  const slash = raw.indexOf('/');
  const head = slash < 0 ? raw : raw.slice(0, slash);
  const rest = slash < 0 ? '' : raw.slice(slash + 1);
  const max = app.config.maxUrlLength;
  if (raw === '' || raw.startsWith('?')) return home(app, req, reply, homeSites);
  if (head.startsWith('search')) return search(app, req, reply, max);
  if (head === 'diff') return diffPage(app, req, reply, rest, max);
  if (head === 'verify') return verifyPage(app, req, reply, rest, max);
  const calendarSel = /^(\d{0,8})\*$/.exec(head);
  if (calendarSel) {
    const prefix = prefixOf(rest);
    if (prefix) return prefixPage(app, req, reply, prefix.url, prefix.after, max);
    return calendarPage(app, req, reply, calendarSel[1], rest, max);
  }
  const replaySel = parseUriMTimestamp(head);
  const form = replaySel && formOfModifier(replaySel.modifier);
  if (replaySel && form) {
    if (replaySel.modifier) return formRedirect(app, req, reply, replaySel.timestamp, form, rest, max);
    return replayPage(app, req, reply, replaySel.timestamp, rest, max);
  }
  throw httpError(404, `nothing here: /web/${head.slice(0, 40)} is not a page of this archive (see ${req.base}/web/)`);
}

/**
 * `GET /web/verify/<id>/<ts>/<url>`: the archive's check of one capture's entry in its signed log
 * (evidence/capture-check.ts: the record as stored, its entry, the signed tree, the key), with the downloads that let anyone check it again; linked from the replay
 * banner's "Verify this capture". Errors as at the capture's `/record` (404, 451).
 */
async function verifyPage(app: FastifyInstance, req: Req, reply: FastifyReply, rest: string, max: number): Promise<FastifyReply> {
  const [id, afterId] = splitFirst(rest);
  const [ts, url] = splitFirst(afterId);
  const archive = localArchive(app.config, id).id;
  const { uriR, urlkey } = parseUriR(url, max);
  const row = await app.reader.exact({ archiveId: archive, uriR, urlkey, base: req.base }, ts);
  return render(app, req, reply, 200, 'verify', {
    title: `Verify ${displayUrl(row.uri_r)} — ${longDate(row.datetime)}`,
    capture: row,
    page: `${req.base}/web/${ts}/${row.uri_r}`,
    links: evidenceLinks(req.base, archive, ts, row.uri_r),
    publishRequests: app.config.publishRequests,
    check: await captureCheck(app, row),
  });
}

/** `a/b/c` → `['a', 'b/c']`. */
function splitFirst(s: string): [string, string] {
  const i = s.indexOf('/');
  return i < 0 ? [s, ''] : [s.slice(0, i), s.slice(i + 1)];
}

/**
 * A prefix query: a URL ending in `*`, optionally followed by the paging
 * cursor `?after=<cursor>` (archive/read/cursor.ts); `undefined` when
 * `rest` is a plain URL.
 */
function prefixOf(rest: string): { url: string; after: string } | undefined {
  if (rest.endsWith('*')) return { url: rest.slice(0, -1), after: '' };
  const m = /\*\?after=([^&]*)$/.exec(rest);
  if (!m) return undefined;
  try {
    return { url: rest.slice(0, m.index), after: decodeURIComponent(m[1]) };
  } catch {
    throw httpError(400, 'the paging cursor has a malformed percent-encoding');
  }
}

/** `GET /web/`: search box, sites, latest captures. */
async function home(app: FastifyInstance, req: Req, reply: FastifyReply, homeSites: () => Promise<Site[]>): Promise<FastifyReply> {
  // Counts, dates and lists over the captures the access rules show: a hidden one is in none of them.
  const [sites, recent, total] = await Promise.all([homeSites(), app.visible.pages.recent(20), app.visible.pages.count()]);
  return render(app, req, reply, 200, 'home', { title: 'Web archive', sites, recent, total, archives: app.config.archives.map((a) => a.id) });
}

/** The error when the rules show no capture of the URL: 451 when some is blocked, else the 404 page's. */
async function hidden(app: FastifyInstance, req: FastifyRequest, reply: FastifyReply, urlkey: string, uriR: string): Promise<FastifyReply> {
  const err = await app.visible.absent(urlkey, uriR, req.base, `no memento of ${uriR} in any archive`);
  if (err.status === 404) return render(app, req, reply, 404, 'not-archived', await notArchivedData(app, uriR));
  throw err;
}

/**
 * The text searched for: `q` as a form sends it (percent-encoded), or, when
 * a URL was pasted or typed after `q=` as it is (it holds a `/`, `?`, `&`,
 * `:` or `=` that a form would have encoded), everything after `q=`, so that
 * the URL's own query is kept whole. In that text the part before the path
 * (scheme and host, which hold no percent-escape of their own) is decoded:
 * `q=host%3A8080/x`, half encoded by hand, is `host:8080/x`; the path and
 * query keep their escapes, which are the URL's.
 */
function searchText(req: Req): string {
  const raw = req.raw.url ?? '';
  const at = raw.indexOf('?');
  const pasted = at < 0 ? null : /(?:^|&)q=(.*)$/s.exec(raw.slice(at + 1));
  if (pasted && /[/?&:=]/.test(pasted[1])) {
    const text = pasted[1].trim();
    const lead = /^[^/?#]*/.exec(text)![0];
    let decoded = lead;
    try {
      decoded = decodeURIComponent(lead);
    } catch {
      // a stray % is left as typed: the URL parser says what is wrong with it
    }
    // Decoded, the lead may now hold the `//` of a scheme: the rest is still the URL's path and query.
    return decoded + text.slice(lead.length);
  }
  return String((req.query as Record<string, unknown>).q ?? '').trim();
}

/**
 * `GET /web/search?q=…`: a URL → its calendar (with or without scheme,
 * with its query; the calendar holds the captures of both schemes, as the
 * index keys a URL without its scheme, and a URL never captured as written,
 * `https` where the captures are `http`, goes to the calendar of the URL as
 * captured); a prefix ending in `*` → its listing; `*.example.com` → the
 * listing of the domain and its subdomains; a bare host (`example.com`) →
 * the calendar of its home page when that has captures (or this machine
 * has them under another loopback name), else the listing of the domain.
 * 400 page for what is not a URL.
 */
async function search(app: FastifyInstance, req: Req, reply: FastifyReply, max: number): Promise<FastifyReply> {
  const q = searchText(req);
  if (!q) return redirect(reply, 302, `${req.base}/web/`);
  const domainListing = (uriR: string) => redirect(reply, 302, `${req.base}/web/*/*.${new URL(uriR).hostname}/*`);
  if (q.startsWith('*.')) return domainListing(parseUriR(q.slice(2).replace(/\/?\*?$/, ''), max).uriR);
  const isPrefix = q.endsWith('*');
  const { uriR, urlkey } = parseUriR(isPrefix ? q.slice(0, -1) : q, max);
  if (isPrefix) return redirect(reply, 302, `${req.base}/web/*/${uriR}*`);
  const captured = await app.visible.pages.nearest(urlkey, instant(0));
  // A bare host never captured goes to its domain's listing, unless this machine holds it under another loopback
  // name: then its calendar, whose "Not archived" page offers that history.
  if (!captured && !/[/?#]/.test(q) && !(await sameMachineCaptures(app, uriR)).length) return domainListing(uriR);
  const asCaptured = !captured || (await app.visible.pages.hasCaptureOf(urlkey, uriR)) ? uriR : captured.last.uri_r;
  return redirect(reply, 302, `${req.base}/web/*/${asCaptured}`);
}

// `GET /web/<sel>*/<url>`: the calendar of every capture of the URL. `sel`
// empty: the year of the last capture; `YYYY`: that year; `YYYYMM`: that
// year; `YYYYMMDD`: that year and the list of that day's captures.
async function calendarPage(app: FastifyInstance, req: Req, reply: FastifyReply, sel: string, url: string, max: number): Promise<FastifyReply> {
  const { uriR, urlkey } = parseUriR(url, max);
  const summary = await app.visible.pages.calendar(urlkey);
  if (!summary) return hidden(app, req, reply, urlkey, uriR);
  if (sel && sel.length !== 4 && sel.length !== 6 && sel.length !== 8)
    throw httpError(400, `a calendar is /web/*/<url>, /web/<YYYY>*/<url> or /web/<YYYYMMDD>*/<url>`);
  const year = sel ? Number(sel.slice(0, 4)) : new Date(summary.last * 1000).getUTCFullYear();
  const days = await app.visible.pages.daysOfYear(urlkey, year);
  let day: { label: string; captures: (Capture & { prev?: number })[]; more: boolean } | undefined;
  if (sel.length === 8) {
    const from = timestampBound(sel, 'first');
    if (from === undefined) throw httpError(400, `no day ${sel}: a day is YYYYMMDD`);
    const { captures, before } = await app.visible.pages.capturesBetween(urlkey, from, from + 86400);
    let prev = before;
    const withPrev = captures.map((c) => {
      const out = { ...c, prev };
      prev = c.datetime;
      return out;
    });
    day = { label: longDate(from).replace(/, .*/, ''), captures: withPrev, more: captures.length === DAY_LIMIT };
  }
  const months = Array.from({ length: 12 }, (_, m) => monthGrid(year, m, days));
  const maxYear = Math.max(...summary.years.map((y) => y.n));
  return render(app, req, reply, 200, 'calendar', {
    title: `Captures of ${displayUrl(uriR)}`,
    uriR,
    summary,
    year,
    maxYear,
    maxMonth: Math.max(1, ...summary.years.flatMap((y) => y.months)),
    months,
    daySel: sel.length === 8 ? sel : '',
    day,
    timemap: uris.indexTimemap(req.base, uriR),
  });
}

/** One month of a year as weeks of days (Monday first), each day with its capture count. */
function monthGrid(year: number, month: number, days: Map<string, number>) {
  const first = new Date(Date.UTC(year, month, 1));
  const length = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  const lead = (first.getUTCDay() + 6) % 7;
  const cells: ({ day: number; n: number; key: string } | null)[] = new Array(lead).fill(null);
  for (let d = 1; d <= length; d++) {
    const mm = String(month + 1).padStart(2, '0');
    const dd = String(d).padStart(2, '0');
    cells.push({ day: d, n: days.get(`${mm}-${dd}`) ?? 0, key: `${year}${mm}${dd}` });
  }
  while (cells.length % 7) cells.push(null);
  const weeks = [];
  for (let i = 0; i < cells.length; i += 7) weeks.push(cells.slice(i, i + 7));
  const total = [...days.entries()].filter(([k]) => Number(k.slice(0, 2)) === month + 1).reduce((a, [, n]) => a + n, 0);
  return { month, name: monthName(month), weeks, total };
}

// `GET /web/*/<prefix>*[?after=<cursor>]`: the archived URLs under a prefix, PREFIX_PAGE a page; `/web/*/*.<host>/*`:
// those of a domain (the host, any port of it, its subdomains). The cursor (archive/read/cursor.ts) is the urlkey of
// the last URL a page shows, or sealed when the page was cut short among hidden URLs; a sealed one that does not open
// (made before a restart, altered, of another list) is a 400 thrown by urlsUnder.
async function prefixPage(app: FastifyInstance, req: Req, reply: FastifyReply, url: string, after: string, max: number): Promise<FastifyReply> {
  const domain = url.startsWith('*.');
  const parsed = parseUriR(domain ? url.slice(2) : url, max);
  const uriR = domain ? `*.${new URL(parsed.uriR).hostname}/` : parsed.uriR;
  // `next` past the last URL shown; or, when the examining budget cut the page short (maybe empty), past the last
  // examined, sealed when that one is hidden.
  const { page, more, next: cursor } = await app.visible.pages.urlsUnder(parsed.urlkey, domain, after, PREFIX_PAGE);
  const next = more && cursor ? `${req.base}/web/*/${uriR}*?after=${encodeURIComponent(cursor)}` : undefined;
  const status = page.length || after || next ? 200 : 404;
  const sameMachine = status === 404 ? await sameMachinePrefixes(app, parsed.uriR) : [];
  return render(app, req, reply, status, 'prefix', {
    title: `Archived URLs under ${displayUrl(uriR)}`,
    prefix: uriR,
    rows: page,
    next,
    first: !after,
    sameMachine,
  });
}

/**
 * The instant (14 digits) the banner page's frame replays at: the reader's, when the address names one (14
 * digits, or digits beyond the present: now); for a period (`2024`), whose shown capture is its last, that
 * capture's own.
 */
function frameTime(p: Period, chosen: number): number {
  return p.start === p.end ? p.end : chosen;
}

/**
 * The banner's view of the capture nearest to `<ts>`, and the address of its frame (under `frameBase`, where
 * mementos are served): `<T>if_`, the replay at the reader's time T (archive/http/memento.ts), so that the
 * page's embedded resources come as they were at T.
 */
function bannerData(
  req: FastifyRequest,
  frameBase: string,
  uriR: string,
  found: { period: Period; asked: number; n: Nearest },
  panel: CoherencePanel | undefined,
) {
  const { period, n } = found;
  const m = n.memento;
  const at = toTimestamp14(frameTime(period, m.datetime));
  const web = (c: Capture | undefined) => (c && c.datetime !== m.datetime ? `${req.base}/web/${toTimestamp14(c.datetime)}/${c.uri_r}` : undefined);
  return {
    uriR: m.uri_r,
    asked: found.asked,
    memento: m,
    ts: toTimestamp14(m.datetime),
    at,
    atTime: frameTime(period, m.datetime),
    frame: buildUriM(frameBase, { archive: m.archive_id, timestamp: at, modifier: 'if_', uriR: m.uri_r }),
    frameBase,
    nav: { first: web(n.first), prev: web(n.prev), next: web(n.next), last: web(n.last) },
    calendar: `${req.base}/web/${toTimestamp14(m.datetime).slice(0, 8)}*/${uriR}`,
    raw: uris.memento(req.base, m.archive_id, m, 'raw'),
    timemap: uris.indexTimemap(req.base, uriR),
    panel,
    diffPrev: n.prev ? `${req.base}/web/diff/${toTimestamp14(n.prev.datetime)}/${toTimestamp14(m.datetime)}/${uriR}` : undefined,
    verify: { ...evidenceLinks(req.base, m.archive_id, toTimestamp14(m.datetime), m.uri_r), publishRequests: req.server.config.publishRequests },
  };
}

/**
 * `GET /web/<ts>/<url>`: the banner (with its "About this capture" panel, coherence.ts) and, in a sandboxed
 * frame, the archival replay of the capture nearest to `<ts>` in any archive, at the reader's time.
 */
async function replayPage(app: FastifyInstance, req: Req, reply: FastifyReply, ts: string, url: string, max: number): Promise<FastifyReply> {
  const found = await nearestAsked(app, req, reply, ts, url, max);
  if (!('n' in found)) return found;
  const { period, uriR, n } = found;
  const panel = await coherencePanel(app, n.memento, frameTime(period, n.memento.datetime));
  const banner = bannerData(req, mementoBase(app, req), uriR, found, panel);
  return render(app, req, reply, 200, 'replay', { title: `${displayUrl(uriR)} — ${longDate(n.memento.datetime)}`, banner });
}

/**
 * `GET /web/<ts>id_/<url>`, `…ol_/…`: 302 to that form of the capture nearest to `<ts>`; `…im_/…` and the other
 * context modifiers (prefer.ts `CONTEXT_MODIFIERS`): 302 to its archival replay, the memento without the banner.
 */
async function formRedirect(app: FastifyInstance, req: Req, reply: FastifyReply, ts: string, form: MementoForm, url: string, max: number) {
  const found = await nearestAsked(app, req, reply, ts, url, max);
  if (!('n' in found)) return found;
  return redirect(reply, 302, uris.memento(req.base, found.n.memento.archive_id, found.n.memento, form));
}

/**
 * The capture of `url` shown nearest to the period `ts` names, in any
 * archive, with that period and the URI-R; when the access rules show
 * none, the reply sent (the "Not archived" page, or the error of a
 * hidden URL). @throws HttpError 400 for a malformed timestamp or URL
 */
async function nearestAsked(
  app: FastifyInstance,
  req: Req,
  reply: FastifyReply,
  ts: string,
  url: string,
  max: number,
): Promise<{ period: Period; asked: number; uriR: string; n: Nearest } | FastifyReply> {
  const period = parseTs(ts);
  const { uriR, urlkey } = parseUriR(url, max);
  const n = await app.visible.pages.nearest(urlkey, period);
  return n ? { period, asked: askedInstant(ts, period), uriR, n } : hidden(app, req, reply, urlkey, uriR);
}

/** {@link sameMachineNames} of a prefix with URLs the access rules show (the first {@link PREFIX_PAGE} of them counted). */
async function sameMachinePrefixes(app: FastifyInstance, prefix: string): Promise<SameMachine[]> {
  const out: SameMachine[] = [];
  for (const other of sameMachineNames(app, prefix)) {
    const { page, more } = await app.visible.pages.urlsUnder(other.urlkey, false, '', PREFIX_PAGE);
    if (page.length) out.push({ uriR: other.uriR, path: `/web/*/${other.uriR}*`, total: page.length, more });
  }
  return out;
}

/** `GET /web/diff/<ts1>/<ts2>/<url>`: the text of the captures nearest to each timestamp, compared line by line, the older one first. */
async function diffPage(app: FastifyInstance, req: Req, reply: FastifyReply, rest: string, max: number): Promise<FastifyReply> {
  const [t1s, afterFirst] = splitFirst(rest);
  const [t2s, url] = splitFirst(afterFirst);
  const p1 = parseTs(t1s);
  const p2 = parseTs(t2s);
  const { uriR, urlkey } = parseUriR(url, max);
  const found = await Promise.all([app.visible.pages.nearest(urlkey, p1), app.visible.pages.nearest(urlkey, p2)]);
  if (!found[0] || !found[1]) return hidden(app, req, reply, urlkey, uriR);
  // The older capture on the left whichever order the address names them in (`/web/diff/<newer>/<older>/…` too).
  const [n1, n2] = found[0].memento.datetime <= found[1].memento.datetime ? [found[0], found[1]] : [found[1], found[0]];
  const [a, b] = await Promise.all([readText(app, n1.memento), readText(app, n2.memento)]);
  const version = (c: Capture, text: CaptureText) => ({
    capture: c,
    page: `${req.base}/web/${toTimestamp14(c.datetime)}/${c.uri_r}`,
    raw: uris.memento(req.base, c.archive_id, c, 'raw'),
    lines: text.lines.length,
    truncated: text.truncated,
    kind: text.kind,
  });
  const same = n1.memento.digest === n2.memento.digest && n1.memento.status === n2.memento.status;
  const result = a.kind === 'none' || b.kind === 'none' ? undefined : await compare(app, req, a.lines, b.lines);
  return render(app, req, reply, 200, 'diff', {
    title: `Changes to ${displayUrl(uriR)}`,
    uriR,
    older: version(n1.memento, a),
    newer: version(n2.memento, b),
    same,
    diff: result?.kind === 'lines' ? result.diff : undefined,
    tooDifferent: result?.kind === 'too-different' ? result.why : undefined,
    budget: DIFF_BUDGET,
    calendar: `${req.base}/web/*/${uriR}`,
  });
}

/**
 * The comparison of two texts' lines (diff.ts) in the `diff` work pool's thread, within its budget and
 * deadline; a comparison stopped at its deadline (or whose thread died) is "too different" for its time.
 * @throws HttpError 503 with `Retry-After` when the pool's queue is full
 */
async function compare(app: FastifyInstance, req: FastifyRequest, a: string[], b: string[]): Promise<DiffResult> {
  // A reader who leaves while the comparison waits for the thread takes it out of the queue.
  const gone = new AbortController();
  const onClose = () => gone.abort();
  req.socket.once('close', onClose);
  try {
    return await app.work.diff.run('diff', { a, b }, DIFF_DEADLINE_MS, gone.signal);
  } catch (err) {
    if (!(err instanceof WorkRefused)) throw err;
    if (err.outcome === 'busy')
      throw httpError(503, 'the archive is comparing other captures just now; try again in a few seconds', { headers: { 'retry-after': '5' } });
    return { kind: 'too-different', why: 'time' };
  } finally {
    req.socket.off('close', onClose);
  }
}

/** The text of one capture (text.ts), read from its WARC record. */
async function readText(app: FastifyInstance, c: Capture): Promise<CaptureText> {
  const row = await app.visible.rowOf(c);
  if (!row) return { kind: 'none', lines: [], truncated: false };
  return captureText(await app.store.readResponse(row), c.mime);
}
