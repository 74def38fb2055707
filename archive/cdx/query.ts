/**
 * The request of the CDX server API (`GET /cdx?url=…`): its parameters as
 * pywb, OutbackCDX and the Wayback CDX server take them, checked and turned
 * into what the index walk needs (urlkey ranges, a time window, an order,
 * where to resume) and what the answer shows (fields, form, limit). No I/O.
 * Every refusal is an HttpError 400 with a one-line reason. The contract:
 * docs/http-api.md "CDX server API", docs/url-space.md.
 */
import { toTimestamp14 } from '#shared/http-date.js';
import { httpError } from '#shared/http-error.js';
import { exactUrlkey, normalizeUriR, UriError } from '#shared/uri.js';
import { afterPrefix } from '../read/access-rules.js';
import type { CdxField } from '../store/index/cdx-line.js';
import type { UrlkeyRange } from '../store/index/cdx-walk.js';

/** Which urlkeys a query matches (pywb's `matchType`). */
export type MatchType = 'exact' | 'prefix' | 'host' | 'domain';

export type { CdxField };

/** The names `fl=` takes (pywb's and the Wayback CDX server's), to the field. */
export const FIELD_NAMES: Readonly<Record<string, CdxField>> = {
  urlkey: 'urlkey',
  timestamp: 'timestamp',
  url: 'url',
  original: 'url',
  mime: 'mime',
  mimetype: 'mime',
  status: 'status',
  statuscode: 'status',
  digest: 'digest',
  length: 'length',
  offset: 'offset',
  filename: 'filename',
  redirect: 'redirect',
  robotflags: 'robotflags',
  archive: 'archive',
};

/** Fields of a text line without `fl=`: the Wayback CDX server's public 7-field line, which pywb also parses. */
export const TEXT_FIELDS: readonly CdxField[] = ['urlkey', 'timestamp', 'url', 'mime', 'status', 'digest', 'length'];

/** Fields of a JSON line without `fl=`: pywb's, plus the archive id. */
export const JSON_FIELDS: readonly CdxField[] = ['urlkey', 'timestamp', 'url', 'mime', 'status', 'digest', 'length', 'offset', 'filename', 'archive'];

/** Most lines in one answer; a larger `limit` is lowered to it (the Wayback CDX server's default maximum). */
export const CDX_MAX_LINES = 150_000;

/** Parameters of other CDX servers that this one does not implement: asking for one is a 400, not a silently different answer. */
const UNSUPPORTED = ['filter', 'collapse', 'page', 'pageSize', 'showNumPages', 'showPagedIndex', 'offset', 'fastLatest', 'showDupeCount', 'showSkipCount'];
const KNOWN = ['url', 'matchType', 'from', 'to', 'limit', 'sort', 'closest', 'output', 'fl', 'showResumeKey', 'resumeKey'];

/** Where a paged answer continues: after a position of the index order, or (sort=closest) after the last memento taken on each side of the instant. */
export type ResumePoint =
  | { kind: 'linear'; urlkey: string; datetime: number; id: number }
  | { kind: 'closest'; urlkey: string; before?: { datetime: number; id: number }; after?: { datetime: number; id: number } };

/** A checked CDX request. Datetimes are epoch seconds (UTC). */
export interface CdxQuery {
  /** The URL asked for, normalised (wildcards taken off). */
  uriR: string;
  matchType: MatchType;
  /** The urlkeys it matches: disjoint ranges in ascending order. */
  ranges: UrlkeyRange[];
  /** `from=` / `to=` as an inclusive window. */
  since?: number;
  until?: number;
  /** `asc`: urlkey then oldest first (the default); `reverse`: the opposite; `closest`: nearest `closest` first (a tie: the earlier). */
  sort: 'asc' | 'reverse' | 'closest';
  closest?: number;
  /** Most lines (≤ {@link CDX_MAX_LINES}). */
  limit: number;
  output: 'text' | 'json';
  fields: CdxField[];
  showResumeKey: boolean;
  resume?: ResumePoint;
}

/** The one value of parameter `name` ('' and absent alike: undefined). */
function one(params: URLSearchParams, name: string): string | undefined {
  const all = params.getAll(name);
  if (all.length > 1) throw httpError(400, `${name}= is given ${all.length} times; give it once`);
  return all[0] === '' ? undefined : all[0];
}

/** Days in `month` (1–12) of `year` (proleptic Gregorian). */
function daysIn(year: number, month: number): number {
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  return month === 2 ? (leap ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/**
 * A 1–14 digit timestamp (`yyyyMMddhhmmss`, UTC) read as a prefix: the
 * first (`'first'`) or last (`'last'`) second whose 14-digit timestamp
 * begins with those digits (`2024` → 2024-01-01T00:00:00Z or
 * 2024-12-31T23:59:59Z; `202402` last → 2024-02-29T23:59:59Z).
 *
 * @returns epoch seconds; `undefined` when it is not 1–14 digits or no date begins with them (`201413`, `20230229`)
 */
export function timestampBound(ts: string, end: 'first' | 'last'): number | undefined {
  if (!/^\d{1,14}$/.test(ts)) return undefined;
  // A whole timestamp names one second, its own first and last: read it as it is (every Memento address has one).
  if (ts.length === 14) return wholeTimestamp(ts);
  const year = Number(ts.slice(0, 4).padEnd(4, end === 'first' ? '0' : '9'));
  // The first or last value in [lo, hi] whose two digits begin with the digits given for the field.
  const pick = (digits: string, lo: number, hi: number): number | undefined => {
    const fits: number[] = [];
    for (let v = lo; v <= hi; v++) if (String(v).padStart(2, '0').startsWith(digits)) fits.push(v);
    return end === 'first' ? fits[0] : fits[fits.length - 1];
  };
  const month = pick(ts.slice(4, 6), 1, 12);
  if (month === undefined) return undefined;
  const day = pick(ts.slice(6, 8), 1, daysIn(year, month));
  const hour = pick(ts.slice(8, 10), 0, 23);
  const minute = pick(ts.slice(10, 12), 0, 59);
  const second = pick(ts.slice(12, 14), 0, 59);
  if (day === undefined || hour === undefined || minute === undefined || second === undefined) return undefined;
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  d.setUTCHours(hour, minute, second, 0);
  return d.getTime() / 1000;
}

/** A 14-digit timestamp (yyyyMMddhhmmss, UTC) as epoch seconds; `undefined` when it names no second (`20230229…`, hour 24). */
function wholeTimestamp(ts: string): number | undefined {
  const year = Number(ts.slice(0, 4));
  const [month, day, hour, minute, second] = [4, 6, 8, 10, 12].map((i) => Number(ts.slice(i, i + 2)));
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month) || hour > 23 || minute > 59 || second > 59) return undefined;
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  d.setUTCHours(hour, minute, second, 0);
  return d.getTime() / 1000;
}

function instant(params: URLSearchParams, name: string, end: 'first' | 'last'): number | undefined {
  const v = one(params, name);
  if (v === undefined) return undefined;
  const t = timestampBound(v, end);
  if (t === undefined) throw httpError(400, `${name}=${v.slice(0, 40)} is not a timestamp: 1 to 14 digits of yyyyMMddhhmmss (UTC) that begin a date`);
  return t;
}

/**
 * The urlkey ranges a URL matches. `exact`: its urlkey; `prefix`: every
 * urlkey that begins with it; `host`: the same host and port (`com,example)`
 * and nothing else: not `com,example,www)`, not `com,example:8080)`);
 * `domain`: the host, any port of it, and every subdomain (`com,example)`,
 * `com,example:8080)`, `com,example,www)…`, but not `com,examples)`,
 * `com,example-cdn)` or `au,com,example)`).
 */
export function urlkeyRanges(urlkey: string, matchType: MatchType): UrlkeyRange[] {
  if (matchType === 'exact') return [{ from: urlkey }];
  if (matchType === 'prefix') return [{ from: urlkey, to: afterPrefix(urlkey) }];
  const host = urlkey.slice(0, urlkey.indexOf(')') + 1);
  if (matchType === 'host') return [{ from: host, to: afterPrefix(host) }];
  // The host without its port: `[v6]` whole, else what comes before `:`.
  const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.slice(0, -1).split(':')[0];
  // `)` < `,` < `:` in byte order: the host itself, its subdomains, its ports.
  return [')', ',', ':'].map((c) => ({ from: name + c, to: name + afterPrefix(c) }));
}

/** A resume key as the answer printed it (see {@link formatResumeKey}). */
export function parseResumeKey(key: string): ResumePoint | undefined {
  const at = (ts: string, id: string) => {
    const t = /^\d{14}$/.test(ts) ? timestampBound(ts, 'first') : undefined;
    return t !== undefined && /^-?\d{1,16}$/.test(id) && toTimestamp14(t) === ts ? { datetime: t, id: Number(id) } : undefined;
  };
  const p = key.split(' ');
  if (p.length === 3 && p[0]) {
    const a = at(p[1], p[2]);
    return a && { kind: 'linear', urlkey: p[0], ...a };
  }
  if (p.length === 6 && p[0] === 'closest' && p[1]) {
    const side = (ts: string, id: string) => (ts === '-' && id === '-' ? null : at(ts, id));
    const before = side(p[2], p[3]);
    const after = side(p[4], p[5]);
    if (before === undefined || after === undefined) return undefined;
    return { kind: 'closest', urlkey: p[1], ...(before ? { before } : {}), ...(after ? { after } : {}) };
  }
  return undefined;
}

/**
 * A resume key, percent-encoded as the Wayback CDX server prints it (so it
 * goes into `resumeKey=` as it is): `<urlkey> <timestamp> <row id>` of the
 * last line, or `closest <urlkey> <timestamp> <id> <timestamp> <id>` (the
 * last line taken before and after the instant; `- -` for none).
 */
export function formatResumeKey(p: ResumePoint): string {
  const side = (s?: { datetime: number; id: number }) => (s ? `${toTimestamp14(s.datetime)} ${s.id}` : '- -');
  const key = p.kind === 'linear' ? `${p.urlkey} ${toTimestamp14(p.datetime)} ${p.id}` : `closest ${p.urlkey} ${side(p.before)} ${side(p.after)}`;
  return encodeURIComponent(key).replace(/%20/g, '+');
}

/**
 * pywb's and Wayback's wildcards in a `url=`: `*.example.com` names the
 * domain, a trailing `*` a prefix; the URL without its wildcard, and the
 * match type it implies (`undefined`: none, the URL as it is).
 */
export function urlWildcard(url: string): { url: string; type?: MatchType } {
  if (url.startsWith('*.')) return { url: url.slice(2), type: 'domain' };
  if (url.endsWith('*')) return { url: url.slice(0, -1), type: 'prefix' };
  return { url };
}

/**
 * Reads the query string of a `/cdx` request into a {@link CdxQuery}.
 *
 * @param params the decoded query parameters (URLSearchParams: `+` is a space)
 * @param maxUrlLength the longest URL accepted (`max_url_length`)
 * @throws HttpError 400 naming the parameter: no `url`, a URL that is not
 *   http(s), a bad value, a parameter given twice, a combination that does
 *   not go (a wildcard and another matchType, sort=closest without an
 *   exact URL), a resume key this server did not print, or a parameter of
 *   other CDX servers that this one does not implement
 */
export function parseCdxQuery(params: URLSearchParams, maxUrlLength?: number): CdxQuery {
  for (const name of UNSUPPORTED) {
    if (params.has(name)) throw httpError(400, `${name}= is not supported by this CDX server (it takes ${KNOWN.join(', ')})`);
  }
  let url = one(params, 'url');
  if (url === undefined) throw httpError(400, 'url= is required: the URL (or URL prefix ending in *) to list captures of');
  const wild = urlWildcard(url);
  const implied = wild.type;
  url = wild.url;
  const asked = one(params, 'matchType');
  if (asked !== undefined && !['exact', 'prefix', 'host', 'domain'].includes(asked))
    throw httpError(400, `matchType=${asked.slice(0, 40)} is not one of exact, prefix, host, domain`);
  if (implied && asked && asked !== implied)
    throw httpError(400, `url=${url.slice(0, 80)} with a wildcard means matchType=${implied}, but matchType=${asked} is given`);
  const matchType = (asked ?? implied ?? 'exact') as MatchType;
  let uriR: string;
  let urlkey: string;
  try {
    uriR = normalizeUriR(url, maxUrlLength);
    urlkey = exactUrlkey(uriR);
  } catch (err) {
    if (err instanceof UriError) throw httpError(400, `url=: ${err.message}`);
    throw err;
  }

  const since = instant(params, 'from', 'first');
  const until = instant(params, 'to', 'last');

  const sortParam = one(params, 'sort');
  if (sortParam !== undefined && !['reverse', 'closest'].includes(sortParam)) throw httpError(400, `sort=${sortParam.slice(0, 40)} is not reverse or closest`);
  let sort: CdxQuery['sort'] = sortParam === 'reverse' ? 'reverse' : 'asc';
  let closest: number | undefined;
  if (sortParam === 'closest') {
    closest = instant(params, 'closest', 'first');
    // Without an instant (pywb's remote index sends `closest=&sort=closest` for a TimeMap) the order stays the default.
    if (closest !== undefined) {
      if (matchType !== 'exact') throw httpError(400, `sort=closest orders the captures of one URL (matchType=exact), not matchType=${matchType}`);
      sort = 'closest';
    }
  }

  const limitParam = one(params, 'limit');
  if (limitParam !== undefined && !/^\d{1,15}$/.test(limitParam)) throw httpError(400, `limit=${limitParam.slice(0, 40)} is not a positive whole number`);
  const limitAsked = limitParam === undefined ? CDX_MAX_LINES : Number(limitParam);
  if (limitAsked < 1) throw httpError(400, 'limit=0: the limit is a positive whole number');

  const outputParam = one(params, 'output');
  if (outputParam !== undefined && !['json', 'text', 'cdx'].includes(outputParam))
    throw httpError(400, `output=${outputParam.slice(0, 40)} is not json or text (this server does not write ${outputParam.slice(0, 40)})`);
  const output = outputParam === 'json' ? 'json' : 'text';

  const fl = one(params, 'fl');
  let fields = [...(output === 'json' ? JSON_FIELDS : TEXT_FIELDS)];
  if (fl !== undefined) {
    fields = [];
    for (const name of fl.split(',').map((f) => f.trim())) {
      const f = FIELD_NAMES[name];
      if (!f) throw httpError(400, `fl=: no field "${name.slice(0, 40)}" (fields: ${Object.keys(FIELD_NAMES).join(', ')})`);
      if (!fields.includes(f)) fields.push(f);
    }
  }

  const show = one(params, 'showResumeKey');
  if (show !== undefined && show !== 'true' && show !== 'false') throw httpError(400, `showResumeKey=${show.slice(0, 40)} is not true or false`);

  const key = one(params, 'resumeKey');
  let resume: ResumePoint | undefined;
  if (key !== undefined) {
    resume = parseResumeKey(key);
    // A key that was percent-encoded once more on its way back.
    if (!resume && key.includes('%')) {
      try {
        resume = parseResumeKey(decodeURIComponent(key.replace(/\+/g, ' ')));
      } catch {
        /* not percent-encoded: refused below */
      }
    }
    if (!resume) throw httpError(400, `resumeKey=${key.slice(0, 80)} is not a resume key this server printed`);
    if ((resume.kind === 'closest') !== (sort === 'closest'))
      throw httpError(
        400,
        `resumeKey=${key.slice(0, 80)} continues a query ${resume.kind === 'closest' ? 'with' : 'without'} sort=closest; repeat that query's parameters`,
      );
  }

  return {
    uriR,
    matchType,
    ranges: urlkeyRanges(urlkey, matchType),
    ...(since !== undefined ? { since } : {}),
    ...(until !== undefined ? { until } : {}),
    sort,
    ...(closest !== undefined && sort === 'closest' ? { closest } : {}),
    limit: Math.min(limitAsked, CDX_MAX_LINES),
    output,
    fields,
    showResumeKey: show === 'true',
    ...(resume ? { resume } : {}),
  };
}
