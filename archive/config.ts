/**
 * `conf/archive.yaml`: the archive daemon's settings (DESIGN.md "Command
 * line and configuration"). Every key, its default and its meaning are in
 * README.md "Archive configuration"; keep the two in step.
 */
import { isIP } from 'node:net';
import path from 'node:path';
import { ConfigError, isPlainObject, loadYamlFile, resolveConfigPath, type YamlSource } from '../shared/config.js';
import { parseListen, type HostPort as ListenAddress } from '../shared/net.js';
import { parseTimestamp14 } from '../shared/http-date.js';

/** One time-span archive behind the redirector. */
export interface ArchiveSpan {
  /** Path segment naming the archive (`/<id>/timegate/…`). */
  id: string;
  /** Inclusive start, epoch seconds; `-Infinity` when open. */
  from: number;
  /** Exclusive end, epoch seconds; `Infinity` when open. */
  until: number;
  /** Base address of a TimeGate on another host (`http://h:p/id/timegate/`); absent for local archives. */
  timegate?: string;
  /** Base address of that host's link-format TimeMap; derived from `timegate` when absent. */
  timemap?: string;
}

export interface ArchiveConfig {
  listen: ListenAddress;
  /** Public address used in Location and Link; `undefined` = from the request's Host. No trailing slash. */
  baseUrl?: string;
  /** Folder for WARC files and the SQLite index (absolute). */
  dataDir: string;
  /** Path before `put/` of the capture endpoint; starts and ends with `/`. */
  putPrefix: string;
  /** Archives, oldest first; spans do not overlap. */
  archives: ArchiveSpan[];
  /** A WARC file is closed and a new one started once it is larger than this (bytes). */
  warcMaxBytes: number;
  /** Largest capture record accepted on PUT (bytes, whole body); larger → 413. */
  maxCaptureBytes: number;
  /** Largest request + response head of a capture record (bytes); larger → 431. */
  maxHeadBytes: number;
  /** Most header lines in each head of a capture record; more → 431. */
  maxHeaders: number;
  /** Longest URI-R (and embedded request target) accepted, in characters; longer → 400. */
  maxUrlLength: number;
  /** Largest HTTP request head (request line + headers) of any request to the daemon, bytes; larger → 431 (Node's maxHeaderSize). */
  maxHttpHeaderBytes: number;
  /** Seconds to receive a whole request, head and body (Node's requestTimeout); 408 after. */
  requestTimeout: number;
  /** Seconds to receive a request head (Node's headersTimeout); 408 after. */
  headersTimeout: number;
  /** Seconds a connection may stay silent (no bytes either way) before it is closed (socket timeout). */
  idleTimeout: number;
  /** Seconds an idle keep-alive connection is kept open for the next request. */
  keepAliveTimeout: number;
  /** Bearer tokens allowed to PUT; empty = no token needed (the address check still applies). */
  putTokens: string[];
  /** Addresses/CIDR blocks allowed to PUT (`127.0.0.0/8`, `::1`, `10.1.0.0/16`). */
  putAllow: string[];
}

export const DEFAULTS = {
  listen: '127.0.0.1:8090',
  data_dir: '../data/archive',
  put_prefix: '/',
  warc_max_bytes: 1024 * 1024 * 1024,
  max_capture_bytes: 4 * 1024 * 1024 * 1024,
  max_head_bytes: 64 * 1024,
  max_headers: 200,
  max_url_length: 8192,
  max_http_header_bytes: 16 * 1024,
  request_timeout: 600,
  headers_timeout: 30,
  idle_timeout: 60,
  keep_alive_timeout: 5,
  put_tokens: [] as string[],
  put_allow: ['127.0.0.0/8', '::1/128'],
};

const KEYS = new Set(['listen', 'base_url', 'data_dir', 'put_prefix', 'archives', 'warc_max_bytes', 'max_capture_bytes', 'max_head_bytes', 'max_headers',
  'max_url_length', 'max_http_header_bytes', 'request_timeout', 'headers_timeout', 'idle_timeout', 'keep_alive_timeout', 'put_tokens', 'put_allow']);
const ARCHIVE_KEYS = new Set(['id', 'from', 'until', 'timegate', 'timemap']);
/** Path segments an archive id may not take: they are fixed words of the URL space. */
const RESERVED_IDS = new Set(['tg', 'put', '.well-known', 'timegate', 'memento', 'timemap', 'timebundle']);

function parseInstant(v: unknown): number | undefined {
  if (v instanceof Date) return Math.floor(v.getTime() / 1000);
  if (typeof v === 'number' && /^\d{4,14}$/.test(String(v))) v = String(v);
  if (typeof v !== 'string') return undefined;
  if (/^\d{4,14}$/.test(v)) {
    const d = parseTimestamp14(v);
    return d ? Math.floor(d.getTime() / 1000) : undefined;
  }
  if (!/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2})?(\.\d+)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(v)) return undefined;
  const t = Date.parse(/T|\s/.test(v) && !/Z|[+-]\d{2}:?\d{2}$/.test(v) ? v + 'Z' : v);
  return Number.isNaN(t) ? undefined : Math.floor(t / 1000);
}

function positiveInt(src: YamlSource, raw: Record<string, unknown>, key: string, dflt: number): number {
  const v = raw[key];
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v <= 0) throw new ConfigError(`${src.where(0, [key])}: ${key} must be a positive whole number of bytes or a count, not ${JSON.stringify(v)}`);
  return v;
}

function seconds(src: YamlSource, raw: Record<string, unknown>, key: string, dflt: number): number {
  const v = raw[key];
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0 || v > 86400 * 7) throw new ConfigError(`${src.where(0, [key])}: ${key} must be a number of seconds (e.g. 30 or 0.5), not ${JSON.stringify(v)}`);
  return v;
}

/** A CIDR block or single address as `[address, prefix, family]`, or undefined when it is not one. */
export function parseCidr(s: string): [string, number, 'ipv4' | 'ipv6'] | undefined {
  const m = /^([^/\s]+)(?:\/(\d{1,3}))?$/.exec(s.trim());
  if (!m) return undefined;
  const family = isIP(m[1]);
  if (!family) return undefined;
  const max = family === 4 ? 32 : 128;
  const prefix = m[2] === undefined ? max : Number(m[2]);
  if (prefix > max) return undefined;
  return [m[1], prefix, family === 4 ? 'ipv4' : 'ipv6'];
}

function stringList(src: YamlSource, raw: Record<string, unknown>, key: string, dflt: string[], check: (s: string) => string | null): string[] {
  const v = raw[key];
  if (v === undefined) return dflt;
  const list = typeof v === 'string' ? [v] : v;
  if (!Array.isArray(list)) throw new ConfigError(`${src.where(0, [key])}: ${key} must be a list`);
  return list.map((item, i) => {
    const s = typeof item === 'number' ? String(item) : item;
    const why = typeof s === 'string' ? check(s) : 'must be a string';
    if (why) throw new ConfigError(`${src.where(0, [key, i])}: ${key} entry ${JSON.stringify(item)} ${why}`);
    return s as string;
  });
}

/**
 * Validates the parsed YAML of an archive config.
 *
 * @throws ConfigError `file:line: reason` for unknown keys, bad listen
 *   address, bad base_url, archive ids that are not path segments or are
 *   reserved words, unparsable or overlapping spans, no archives.
 */
export function validateArchiveConfig(src: YamlSource): ArchiveConfig {
  const raw = src.values[0] ?? {};
  if (!isPlainObject(raw)) throw new ConfigError(`${src.file}: the file must be a mapping of settings`);
  for (const k of Object.keys(raw)) if (!KEYS.has(k)) throw new ConfigError(`${src.where(0, [k])}: unknown setting "${k}" (known: ${[...KEYS].join(', ')})`);

  const listen = parseListen(raw.listen ?? DEFAULTS.listen);
  if (!listen) throw new ConfigError(`${src.where(0, ['listen'])}: listen must be host:port, not ${JSON.stringify(raw.listen)}`);

  let baseUrl: string | undefined;
  if (raw.base_url !== undefined) {
    if (typeof raw.base_url !== 'string' || !/^https?:\/\/[^/\s]+(\/[^\s]*)?$/.test(raw.base_url)) throw new ConfigError(`${src.where(0, ['base_url'])}: base_url must be an http(s) URL, not ${JSON.stringify(raw.base_url)}`);
    baseUrl = raw.base_url.replace(/\/+$/, '');
  }

  const dataDirRaw = raw.data_dir ?? DEFAULTS.data_dir;
  if (typeof dataDirRaw !== 'string' || !dataDirRaw) throw new ConfigError(`${src.where(0, ['data_dir'])}: data_dir must be a folder path`);
  const dataDir = resolveConfigPath(src.file, dataDirRaw);

  const putPrefixRaw = raw.put_prefix ?? DEFAULTS.put_prefix;
  if (typeof putPrefixRaw !== 'string' || !/^\/?([A-Za-z0-9._~-]+\/?)*$/.test(putPrefixRaw)) throw new ConfigError(`${src.where(0, ['put_prefix'])}: put_prefix must be a path like / or /archive/, not ${JSON.stringify(putPrefixRaw)}`);
  const putPrefix = ('/' + putPrefixRaw + '/').replace(/\/+/g, '/');

  const list = raw.archives;
  if (!Array.isArray(list) || list.length === 0) throw new ConfigError(`${src.where(0, ['archives'])}: archives must list at least one archive ({id, from, until})`);
  const archives: ArchiveSpan[] = [];
  const seen = new Set<string>();
  list.forEach((a, i) => {
    const at = src.where(0, ['archives', i]);
    if (!isPlainObject(a)) throw new ConfigError(`${at}: each archive is a mapping {id, from, until}`);
    for (const k of Object.keys(a)) if (!ARCHIVE_KEYS.has(k)) throw new ConfigError(`${src.where(0, ['archives', i, k])}: unknown archive setting "${k}" (known: ${[...ARCHIVE_KEYS].join(', ')})`);
    const id = typeof a.id === 'number' ? String(a.id) : a.id;
    if (typeof id !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9._~-]*$/.test(id)) throw new ConfigError(`${src.where(0, ['archives', i, 'id'])}: archive id must be one path segment of letters, digits, . _ ~ -, not ${JSON.stringify(a.id)}`);
    if (RESERVED_IDS.has(id)) throw new ConfigError(`${src.where(0, ['archives', i, 'id'])}: archive id "${id}" is a fixed word of the URL space`);
    if (seen.has(id)) throw new ConfigError(`${src.where(0, ['archives', i, 'id'])}: archive id "${id}" is listed twice`);
    seen.add(id);
    const from = a.from === undefined || a.from === null ? -Infinity : parseInstant(a.from);
    if (from === undefined) throw new ConfigError(`${src.where(0, ['archives', i, 'from'])}: from must be a date like 2026-01-01T00:00:00Z, not ${JSON.stringify(a.from)}`);
    const until = a.until === undefined || a.until === null ? Infinity : parseInstant(a.until);
    if (until === undefined) throw new ConfigError(`${src.where(0, ['archives', i, 'until'])}: until must be a date like 2026-01-01T00:00:00Z, not ${JSON.stringify(a.until)}`);
    if (from >= until) throw new ConfigError(`${at}: archive "${id}" ends (until) before it starts (from)`);
    const span: ArchiveSpan = { id, from, until };
    for (const k of ['timegate', 'timemap'] as const) {
      if (a[k] === undefined) continue;
      if (typeof a[k] !== 'string' || !/^https?:\/\/\S+\/$/.test(a[k] as string)) throw new ConfigError(`${src.where(0, ['archives', i, k])}: ${k} must be an http(s) base address ending in /, e.g. http://host:8090/${id}/${k === 'timegate' ? 'timegate' : 'timemap/link'}/`);
      span[k] = a[k] as string;
    }
    if (span.timemap && !span.timegate) throw new ConfigError(`${src.where(0, ['archives', i, 'timemap'])}: timemap is only for remote archives, which also set timegate`);
    if (span.timegate && !span.timemap) {
      // This daemon's own shape: …/<id>/timegate/ → …/<id>/timemap/link/. Other archives name theirs.
      if (!/\/timegate\/$/.test(span.timegate)) throw new ConfigError(`${src.where(0, ['archives', i, 'timegate'])}: archive "${id}": timegate does not end in /timegate/, so its TimeMap address cannot be derived; set timemap: too (the base address of its link-format TimeMap, ending in /)`);
      span.timemap = span.timegate.replace(/\/timegate\/$/, '/timemap/link/');
    }
    const prev = archives[archives.length - 1];
    if (prev && from < prev.until) throw new ConfigError(`${at}: archive "${id}" starts before archive "${prev.id}" ends; list archives oldest first with spans that do not overlap`);
    archives.push(span);
  });

  const config: ArchiveConfig = {
    listen,
    baseUrl,
    dataDir,
    putPrefix,
    archives,
    warcMaxBytes: positiveInt(src, raw, 'warc_max_bytes', DEFAULTS.warc_max_bytes),
    maxCaptureBytes: positiveInt(src, raw, 'max_capture_bytes', DEFAULTS.max_capture_bytes),
    maxHeadBytes: positiveInt(src, raw, 'max_head_bytes', DEFAULTS.max_head_bytes),
    maxHeaders: positiveInt(src, raw, 'max_headers', DEFAULTS.max_headers),
    maxUrlLength: positiveInt(src, raw, 'max_url_length', DEFAULTS.max_url_length),
    maxHttpHeaderBytes: positiveInt(src, raw, 'max_http_header_bytes', DEFAULTS.max_http_header_bytes),
    requestTimeout: seconds(src, raw, 'request_timeout', DEFAULTS.request_timeout),
    headersTimeout: seconds(src, raw, 'headers_timeout', DEFAULTS.headers_timeout),
    idleTimeout: seconds(src, raw, 'idle_timeout', DEFAULTS.idle_timeout),
    keepAliveTimeout: seconds(src, raw, 'keep_alive_timeout', DEFAULTS.keep_alive_timeout),
    putTokens: stringList(src, raw, 'put_tokens', DEFAULTS.put_tokens, (s) => (/^[A-Za-z0-9\-._~+/]{16,}=*$/.test(s) ? null : 'must be a bearer token of at least 16 characters (letters, digits, -._~+/)')),
    putAllow: stringList(src, raw, 'put_allow', DEFAULTS.put_allow, (s) => (parseCidr(s) ? null : 'is not an IP address or CIDR block like 10.0.0.0/8 or fd00::/8')),
  };
  if (config.headersTimeout > config.requestTimeout) throw new ConfigError(`${src.where(0, ['headers_timeout'])}: headers_timeout (${config.headersTimeout} s) must not be longer than request_timeout (${config.requestTimeout} s)`);
  return config;
}

/** Reads and validates an archive config file. @throws ConfigError `file:line: reason`. */
export function loadArchiveConfig(file: string): ArchiveConfig {
  return validateArchiveConfig(loadYamlFile(path.resolve(file)));
}

/** The archive whose span holds `t` (epoch seconds), local or remote; `undefined` in a gap. */
export function archiveForInstant(archives: ArchiveSpan[], t: number): ArchiveSpan | undefined {
  return archives.find((a) => a.from <= t && t < a.until);
}
