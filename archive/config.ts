/**
 * `archive.yaml`, the archive daemon's settings: the schema of the file
 * (each key's type, default, meaning and refusal reason, in one place) and
 * the resolved {@link ArchiveConfig} the code uses. Sizes are bytes and
 * times are seconds in the file; in code, time fields carry their unit in
 * their name (`requestTimeoutMs`). docs/configuration.md's archive table
 * is generated from {@link ARCHIVE_FILE_SCHEMA}.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, loadYamlFile, resolveConfigPath, type YamlSource } from '#shared/config.js';
import { type ConfigOf, type ConfigSchema, checkConfig, defaultsOf, defineCheck } from '#shared/config-schema.js';
import { parseTimestamp14 } from '#shared/http-date.js';
import { BEARER_TOKEN, formatHostPort, type HostPort, isLoopbackHost, parseAddressBlock, parseListen } from '#shared/net.js';
import { type AccessRule, urlPattern } from './access.js';
import type { ArchiveSpan } from './spans.js';
import { type S3WarcsConfig, s3WarcsConfig, WARC_STORAGE_DOC, WARC_STORAGE_PROPERTIES } from './storage-config.js';

export type { ArchiveSpan } from './spans.js';

/** The archive daemon's settings, resolved (absolute paths, epoch seconds, milliseconds). */
export interface ArchiveConfig {
  listen: HostPort;
  /** Public address used in Location and Link; `undefined` = from the request's Host. No trailing slash. */
  baseUrl?: string;
  /**
   * A second origin (`scheme://host[:port]`, no trailing slash) from which the
   * pages for people frame mementos; `undefined` = the archive's own.
   */
  replayOrigin?: string;
  /** Folder for WARC files and the SQLite index (absolute). */
  dataDir: string;
  /** Path before `put/` of the capture endpoint; starts and ends with `/`. */
  putPrefix: string;
  /** Archives, oldest first; spans do not overlap. */
  archives: ArchiveSpan[];
  /** A WARC file is closed and a new one started once it is larger than this (bytes). */
  warcMaxBytes: number;
  /** zlib level (1 fastest … 9 smallest) of each WARC record's gzip member. */
  warcGzipLevel: number;
  /** Largest capture record accepted on PUT (bytes, whole body); larger → 413. */
  maxCaptureBytes: number;
  /** Largest request + response head of a capture record (bytes); larger → 431. */
  maxHeadBytes: number;
  /** Most header lines in each head of a capture record; more → 431. */
  maxHeaders: number;
  /** Longest URI-R (and embedded request target) accepted, in characters; longer → 400. */
  maxUrlLength: number;
  /** Largest HTTP request head of any request to the daemon, bytes; larger → 431 (Node's maxHeaderSize). */
  maxHttpHeaderBytes: number;
  /** Time to receive a whole request, head and body (Node's requestTimeout), ms; 408 after. */
  requestTimeoutMs: number;
  /** Time to receive a request head (Node's headersTimeout), ms; 408 after. */
  headersTimeoutMs: number;
  /** Time a connection may stay silent (no bytes either way) before it is closed, ms. */
  idleTimeoutMs: number;
  /** Time an idle keep-alive connection is kept open for the next request, ms. */
  keepAliveTimeoutMs: number;
  /** Bearer tokens allowed to PUT; empty = no token needed (the address check still applies). */
  putTokens: string[];
  /** Address blocks allowed to PUT (`127.0.0.0/8`, `::1`, `10.1.0.0/16`). */
  putAllow: string[];
  /** Bytes of replayed (rewritten) bodies kept in memory for the next request; 0 = none. */
  replayCacheBytes: number;
  /** Bytes (estimated) of the read cache: per URL its mementos and the answers made from them (archive/store/read-cache.ts); 0 = none. */
  indexCacheBytes: number;
  /** Bytes of hot small response records kept in memory, inflated (archive/store/record-cache.ts); 0 = none. */
  recordCacheBytes: number;
  /** Most bytes one Memento answer decodes from a content-coded stored body (archive/memento/content-coding.ts); past it the body is cut. */
  maxDecodedBytes: number;
  /** Access rules (archive/access.ts), in the order listed; reloaded on SIGHUP. */
  access: AccessRule[];
  /**
   * Seconds after a memento before an identical capture of its URI-R is
   * recorded again, as a WARC revisit record and an index row
   * (archive/store/capture-is-new.ts); `0`: at every new second; `null`
   * (`off`): never (identical captures store nothing).
   */
  revisitIntervalS: number | null;
  /**
   * The PostgreSQL database of the index (`storage.index`, a
   * `postgres://user@host:port/db` URL), shared by every daemon given it;
   * `undefined`: the SQLite file `index.sqlite3` in `dataDir` (the default).
   */
  indexPostgres?: string;
  /** WARC files in an S3-compatible bucket (`storage.warcs`); `undefined`: the folder `warcs/` in `dataDir` (the default). */
  warcStore?: S3WarcsConfig;
  /**
   * The evidence log's Ed25519 signing key (`signing_key_file`, absolute),
   * a PKCS#8 PEM file made on first start (mode 0600); replicas of one
   * archive are given the same file.
   */
  signingKeyFile: string;
}

/** Path segments an archive id may not take: they are fixed words of the URL space. */
const RESERVED_IDS = new Set(['tg', 'put', '.well-known', 'timegate', 'memento', 'timemap', 'timebundle', 'web', 'cdx', 'healthz', 'metrics']);

/**
 * An instant in the config: ISO 8601 (`2026-01-01T00:00:00Z`, a date alone
 * = its midnight UTC, no zone = UTC) or 14 digits (a prefix of 4 or more
 * works, as in a URI-M).
 *
 * @returns epoch seconds, or `undefined` when it is neither
 */
export function parseInstant(v: unknown): number | undefined {
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

defineCheck('listen', (v) => parseListen(v) !== undefined);
defineCheck('instant', (v) => parseInstant(v) !== undefined);
defineCheck('put-token', (v) => (typeof v === 'string' || typeof v === 'number') && BEARER_TOKEN.test(String(v)) && String(v).replace(/=+$/, '').length >= 16);
defineCheck('address-block', (v) => typeof v === 'string' && parseAddressBlock(v) !== undefined);
defineCheck('access-url', (v) => {
  try {
    return typeof v === 'string' && urlPattern(v) !== undefined;
  } catch {
    return false;
  }
});
defineCheck('age', (v) => parseAge(v) !== undefined);
defineCheck('revisit-interval', (v) => parseRevisitInterval(v) !== undefined);
defineCheck('index-location', (v) => v === 'sqlite' || (typeof v === 'string' && /^postgres(ql)?:\/\/\S+$/.test(v)));

/** Seconds in each unit of an age: seconds, minutes, hours, days, weeks, years of 365 days. */
const AGE_UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400, w: 7 * 86400, y: 365 * 86400 };

/**
 * An age in the config: a number and a unit, `30d`, `12h`, `2w`, `1y`
 * (`s`, `m` minutes, `h`, `d`, `w`, `y` = 365 days).
 *
 * @returns seconds, or `undefined` when it is not one
 */
export function parseAge(v: unknown): number | undefined {
  const m = typeof v === 'string' ? /^(\d+(?:\.\d+)?)\s*([smhdwy])$/.exec(v.trim()) : null;
  return m ? Math.round(Number(m[1]) * AGE_UNITS[m[2]]) : undefined;
}

/**
 * The `revisit_interval` setting: an age ({@link parseAge}), `0` (every
 * identical capture at a new second is a revisit) or `off`.
 *
 * @returns seconds, `null` for `off`, `undefined` when it is none of these
 */
export function parseRevisitInterval(v: unknown): number | null | undefined {
  if (v === 0 || v === '0') return 0;
  if (v === 'off') return null;
  return parseAge(v);
}

/** A positive count or size (bytes) setting. */
const bytes = <D extends number>(dflt: D, description: string, docDefault?: string) =>
  ({
    type: 'integer',
    minimum: 1,
    maximum: Number.MAX_SAFE_INTEGER,
    default: dflt,
    description,
    errorMessage: 'must be a positive whole number of bytes or a count',
    ...(docDefault ? { docDefault } : {}),
  }) as const;

/** The size of an in-memory cache, bytes: `mib` MiB by default (32), `0` for none. */
const cacheBytes = (description: string, mib = 32) =>
  ({
    type: 'integer',
    minimum: 0,
    maximum: Number.MAX_SAFE_INTEGER,
    default: mib * 1024 ** 2,
    docDefault: `\`${mib * 1024 ** 2}\` (${mib} MiB)`,
    description,
    errorMessage: 'must be a whole number of bytes, 0 or more',
  }) as const;

/** A time setting, seconds (fractions allowed). */
const seconds = <D extends number>(dflt: D, description: string) =>
  ({
    type: 'number',
    exclusiveMinimum: 0,
    maximum: 86400 * 7,
    default: dflt,
    description,
    errorMessage: 'must be a number of seconds (e.g. 30 or 0.5)',
  }) as const;

/** One entry of `archives:`. */
const ARCHIVE_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['id'],
  errorMessage: 'each archive is a mapping {id, from, until}, not {value}',
  properties: {
    id: {
      type: ['string', 'integer'],
      description: 'path segment naming the archive (`/<id>/timegate/…`): letters, digits, `.` `_` `~` `-`, not one of the fixed words of the URL space',
      errorMessage: 'archive id must be one path segment of letters, digits, . _ ~ -, not {value}',
      missingMessage: 'a path segment naming the archive',
    },
    from: {
      check: 'instant',
      description: 'inclusive start (ISO 8601 or 14 digits); open when left out',
      errorMessage: 'from must be a date like 2026-01-01T00:00:00Z, not {value}',
    },
    until: { check: 'instant', description: 'exclusive end; open when left out', errorMessage: 'until must be a date like 2026-01-01T00:00:00Z, not {value}' },
    timegate: {
      type: 'string',
      pattern: '^https?://\\S+/$',
      description: 'a remote archive: base address of its TimeGate (`http://host:port/<id>/timegate/`)',
      errorMessage: 'timegate must be an http(s) base address ending in /, e.g. http://host:8090/<id>/timegate/',
    },
    timemap: {
      type: 'string',
      pattern: '^https?://\\S+/$',
      description: "a remote archive's link-format TimeMap base address; default: the timegate address with `timemap/link/` in place of `timegate/`",
      errorMessage: 'timemap must be an http(s) base address ending in /, e.g. http://host:8090/<id>/timemap/link/',
    },
  },
} as const satisfies ConfigSchema;

/** One entry of `access:` (archive/access.ts; docs/operations.md "Access rules and takedown"). */
const ACCESS_RULE_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['url', 'action'],
  errorMessage: 'each access rule is a mapping {url, action, before, after, embargo}, not {value}',
  properties: {
    url: {
      type: 'string',
      check: 'access-url',
      description: 'a URL, or a URL prefix ending in `*`',
      errorMessage: 'url must be an http(s) URL (http://host/page) or a prefix ending in * (http://host/dir/*), not {value}',
      missingMessage: 'the URL, or a prefix ending in *, the rule is for',
    },
    action: {
      type: 'string',
      enum: ['allow', 'block', 'exclude'],
      description: '`block` (451), `exclude` (as if never captured) or `allow`',
      errorMessage: 'action must be block, exclude or allow, not {value}',
      missingMessage: 'block, exclude or allow',
    },
    before: {
      check: 'instant',
      description: 'only mementos earlier than this instant',
      errorMessage: 'before must be a date like 2026-01-01T00:00:00Z, not {value}',
    },
    after: {
      check: 'instant',
      description: 'only mementos at or after this instant',
      errorMessage: 'after must be a date like 2026-01-01T00:00:00Z, not {value}',
    },
    embargo: {
      type: 'string',
      check: 'age',
      description: 'only mementos younger than this age (`30d`)',
      errorMessage: 'embargo must be an age like 30d, 12h or 1y (units s, m, h, d, w, y), not {value}',
    },
  },
} as const satisfies ConfigSchema;

/** The schema of `archive.yaml`: keys in documentation order. */
export const ARCHIVE_FILE_SCHEMA = {
  $id: 'archive.yaml',
  type: 'object',
  additionalProperties: false,
  required: ['archives'],
  errorMessage: 'the file must be a mapping of settings, not {value}',
  properties: {
    listen: {
      check: 'listen',
      default: '127.0.0.1:8090',
      description:
        '`host:port` to listen on (`port` 0: any free port). An address that is not loopback (`0.0.0.0`, `::`, a LAN address, a host name other than `localhost`) needs `put_tokens` or a `put_allow` written in the file, else the daemon does not start',
      errorMessage: 'must be host:port',
    },
    base_url: {
      type: 'string',
      pattern: '^https?://[^/\\s]+(/\\S*)?$',
      docDefault: "from the request's `Host`",
      description: 'public address used in `Location` and `Link`, e.g. `https://archive.example.org`',
      errorMessage: 'must be an http(s) URL',
    },
    replay_origin: {
      type: 'string',
      pattern: '^https?://[^/\\s?#@]+/?$',
      docDefault: 'none: mementos are framed from `base_url`',
      description:
        'a second origin, e.g. `https://replay.example.org`, that reaches this daemon under the same path as `base_url` (which must be set, on another host name); the replay page `/web/<ts>/<url>` frames mementos from it, and it serves no page for people (404), so that a stored page never shares an origin with the archive\'s pages. Mementos stay sandboxed either way (see "Pages for people")',
      errorMessage: 'must be an origin like https://replay.example.org (scheme, host, optional port; no path)',
    },
    data_dir: {
      type: 'string',
      minLength: 1,
      default: '../data/archive',
      description: 'folder for `warcs/`, `index.sqlite3` and `tmp/`',
      errorMessage: '{key} must be a folder path',
    },
    signing_key_file: {
      type: 'string',
      minLength: 1,
      docDefault: '`log-signing-key.pem` in `data_dir`',
      description:
        "the evidence log's Ed25519 signing key (PKCS#8 PEM): made on first start if missing (mode 0600), and used to sign the log's tree heads and WACZ packages; daemons that share `storage:` must be given the same file",
      errorMessage: '{key} must be a file path',
    },
    storage: {
      type: 'object',
      additionalProperties: false,
      default: {},
      docDefault: '`index: sqlite`, `warcs: folder`',
      description:
        'where the index of mementos lives: `index: sqlite` (the file `index.sqlite3` in `data_dir`) or `index: postgres://user@host:5432/database`, a PostgreSQL database several daemons behind one load balancer may share (the password, if any, in the URL or in `PGPASSWORD`/`~/.pgpass`). `verify`, `reindex`, `purge`, `cdxj` and `import` work on either; `migrate` moves a SQLite index (and the WARC folder) there. And ' +
        WARC_STORAGE_DOC,
      errorMessage: '{key} must be a mapping like {index: postgres://user@host:5432/archive, warcs: s3://bucket/prefix/}',
      properties: {
        index: {
          type: 'string',
          check: 'index-location',
          errorMessage: 'storage.index must be sqlite or a URL like postgres://user@host:5432/archive, not {value}',
        },
        ...WARC_STORAGE_PROPERTIES,
      },
    },
    put_prefix: {
      type: 'string',
      pattern: '^/?([A-Za-z0-9._~-]+/?)*$',
      default: '/',
      description: 'captures arrive as `PUT <put_prefix>put/<URL>` (e.g. `/archive/` → `PUT /archive/put/…`)',
      errorMessage: 'must be a path like / or /archive/',
    },
    archives: {
      type: 'array',
      minItems: 1,
      items: ARCHIVE_SCHEMA,
      description:
        'time spans, oldest first: `{id, from, until}`; `from` inclusive, `until` exclusive, either open when left out; dates as ISO 8601 (`2026-01-01T00:00:00Z`) or 14 digits. A remote archive adds `timegate:` (and `timemap:` when its TimeGate address does not end in `/timegate/`)',
      errorMessage: '{key} must list at least one archive ({id, from, until})',
      missingMessage: 'list at least one archive: {id, from, until}',
    },
    warc_max_bytes: bytes(1024 ** 3, 'a WARC file is closed and a new one begun once it is larger', '`1073741824` (1 GiB)'),
    warc_gzip_level: {
      type: 'integer',
      minimum: 1,
      maximum: 9,
      default: 6,
      description:
        "gzip level of each WARC record (zlib's, 1 fastest … 9 smallest): `1` compresses an HTML page about 2× as fast for records about 13% larger (the Apache manual's pages; docs/benchmarks.md); any level is read back alike",
      errorMessage: 'must be a whole number from 1 (fastest) to 9 (smallest)',
    },
    max_capture_bytes: bytes(4 * 1024 ** 3, 'largest PUT body; larger → 413', '`4294967296` (4 GiB)'),
    max_head_bytes: bytes(64 * 1024, 'largest request + response head in a capture record; larger → 431'),
    max_headers: bytes(200, 'most header lines in each head; more → 431'),
    max_url_length: bytes(
      2048,
      'longest URI-R / embedded request target, in characters ("," and ";" count three, as written in Link headers); longer → 400. At this default every answer of the archive, whose head repeats the URI-R (Location, Link), fits a client that reads 16 KiB of head (see docs/url-space.md)',
    ),
    replay_cache_bytes: cacheBytes(
      'bytes of replayed pages and stylesheets (their URLs rewritten) kept in memory, so that one asked for again is not rewritten again; `0` keeps none',
    ),
    index_cache_bytes: cacheBytes(
      "bytes (an estimate of the memory used) of the read cache: for each recently asked URL, the datetimes of all its mementos per archive (about 1.1 KB for a URL of 10), so that a TimeGate, Memento or redirect of it asks the index nothing, and with them the whole answers made from them (a TimeGate's 302, a Memento's 200 with a body of up to 64 KiB), so that the same request again is answered as it was; a capture of the URL drops all of it before its PUT is answered; `0` keeps none. The default holds the mementos of about 30,000 URLs of 10 mementos each",
    ),
    record_cache_bytes: cacheBytes(
      'bytes of small stored responses (up to 64 KiB each, inflated) kept in memory, so that a Memento asked for again is not read and inflated again; `0` keeps none',
    ),
    max_decoded_bytes: bytes(
      256 * 1024 ** 2,
      'most bytes one Memento answer decodes from a gzip/deflate/br-encoded stored page (its `ol_` and replay forms, which are sent decoded): a larger one streams without a length and is cut there (the client sees a body that ends early), so that a small compressed body cannot make the archive decode gigabytes',
      '`268435456` (256 MiB)',
    ),
    max_http_header_bytes: bytes(16 * 1024, 'largest request line + headers of any HTTP request to the daemon (the PUT itself, a GET); larger → 431'),
    request_timeout: seconds(
      600,
      'seconds to receive a whole request, head and body (a capture PUT streams while the proxied page streams: allow slow pages); later → 408',
    ),
    headers_timeout: seconds(30, "seconds to receive a request's head; later → 408. Not longer than `request_timeout`"),
    idle_timeout: seconds(60, 'seconds a connection may stay silent (no byte either way) before it is closed'),
    keep_alive_timeout: seconds(5, 'seconds an idle keep-alive connection is kept for the next request'),
    revisit_interval: {
      type: ['string', 'integer'],
      check: 'revisit-interval',
      default: '1d',
      description:
        'a capture identical to the memento it follows (payload digest, status, media type) stores no second copy of the body; once this long has passed since that memento it is recorded as a WARC `revisit` record and a memento of its own (the page was served then), else it stores nothing. An age (`1d`, `12h`, `30m`), `0` (a revisit at every new second) or `off` (identical captures never store anything)',
      errorMessage: '{key} must be an age like 1d, 12h or 30m (units s, m, h, d, w, y), 0 or off, not {value}',
    },
    put_tokens: {
      type: 'array',
      items: { check: 'put-token', errorMessage: '{key} entry {value} must be a bearer token of at least 16 characters (letters, digits, -._~+/)' },
      default: [],
      description:
        'bearer tokens (≥ 16 characters of `A-Za-z0-9-._~+/`); when any is listed, a PUT also needs `Authorization: Bearer <token>` with one of them, else 401. A file that lists any must not be readable by every user (e.g. 0640 root:memento), else the daemon does not start',
      errorMessage: '{key} must be a list',
    },
    put_allow: {
      type: 'array',
      items: { type: 'string', check: 'address-block', errorMessage: '{key} entry {value} is not an IP address or CIDR block like 10.0.0.0/8 or fd00::/8' },
      default: ['127.0.0.0/8', '::1/128'],
      description:
        'addresses / CIDR blocks allowed to PUT (default: this host only: then any process of this host may add captures unless `put_tokens` is set); others → 403',
      errorMessage: '{key} must be a list',
    },
    access: {
      type: 'array',
      items: ACCESS_RULE_SCHEMA,
      default: [],
      description:
        'access rules, read again on SIGHUP: `{url, action, before, after, embargo}`; `url` a URL or a prefix ending in `*`; `action` `block` (451, left out of TimeMaps), `exclude` (as if never captured: 404) or `allow`; optionally only for mementos `before`/`after` an instant or younger than an `embargo` age (`30d`). The most specific rule wins (see "Access rules and takedown")',
      errorMessage: '{key} must be a list of rules {url, action}',
    },
  },
} as const satisfies ConfigSchema;

/** `archive.yaml` as checked against {@link ARCHIVE_FILE_SCHEMA}, defaults filled in. */
export type ArchiveFile = ConfigOf<typeof ARCHIVE_FILE_SCHEMA>;

/** The defaults of `archive.yaml`, from its schema. */
export const DEFAULTS = defaultsOf(ARCHIVE_FILE_SCHEMA) as Omit<ArchiveFile, 'archives' | 'base_url' | 'replay_origin'>;

/**
 * Validates the parsed YAML of an archive config (a string `put_tokens` or
 * `put_allow` is a list of one).
 *
 * @throws ConfigError `file:line: reason` for unknown keys, a bad listen
 *   address, bad base_url, archive ids that are not path segments or are
 *   reserved words, unparsable or overlapping spans, no archives,
 *   `headers_timeout` longer than `request_timeout`, a `listen` address
 *   that is not loopback without `put_tokens` or a `put_allow` of its own
 *   ({@link checkWriteAccess}).
 */
export function validateArchiveConfig(src: YamlSource): ArchiveConfig {
  const value = src.values[0] ?? {};
  for (const k of ['put_tokens', 'put_allow']) {
    const v = (value as Record<string, unknown>)[k];
    if (typeof v === 'string') (value as Record<string, unknown>)[k] = [v];
  }
  const raw = checkConfig(ARCHIVE_FILE_SCHEMA, src, 0, [], value);
  const config: ArchiveConfig = {
    listen: parseListen(raw.listen)!,
    baseUrl: raw.base_url?.replace(/\/+$/, ''),
    replayOrigin: raw.replay_origin?.replace(/\/+$/, ''),
    dataDir: resolveConfigPath(src.file, raw.data_dir),
    putPrefix: ('/' + raw.put_prefix + '/').replace(/\/+/g, '/'),
    archives: archiveSpans(src, raw.archives),
    warcMaxBytes: raw.warc_max_bytes,
    warcGzipLevel: raw.warc_gzip_level,
    maxCaptureBytes: raw.max_capture_bytes,
    maxHeadBytes: raw.max_head_bytes,
    maxHeaders: raw.max_headers,
    maxUrlLength: raw.max_url_length,
    maxHttpHeaderBytes: raw.max_http_header_bytes,
    requestTimeoutMs: raw.request_timeout * 1000,
    headersTimeoutMs: raw.headers_timeout * 1000,
    idleTimeoutMs: raw.idle_timeout * 1000,
    keepAliveTimeoutMs: raw.keep_alive_timeout * 1000,
    putTokens: raw.put_tokens.map(String),
    putAllow: raw.put_allow,
    replayCacheBytes: raw.replay_cache_bytes,
    indexCacheBytes: raw.index_cache_bytes,
    recordCacheBytes: raw.record_cache_bytes,
    maxDecodedBytes: raw.max_decoded_bytes,
    access: accessRules(src, raw.access),
    revisitIntervalS: parseRevisitInterval(raw.revisit_interval)!,
    indexPostgres: raw.storage.index === undefined || raw.storage.index === 'sqlite' ? undefined : raw.storage.index,
    warcStore: s3WarcsConfig(raw.storage, parseListen(raw.listen)!.port),
    signingKeyFile:
      raw.signing_key_file === undefined
        ? path.join(resolveConfigPath(src.file, raw.data_dir), 'log-signing-key.pem')
        : resolveConfigPath(src.file, raw.signing_key_file),
  };
  if (config.warcStore === undefined) delete config.warcStore;
  if (config.baseUrl === undefined) delete config.baseUrl;
  if (config.indexPostgres === undefined) delete config.indexPostgres;
  if (config.replayOrigin === undefined) delete config.replayOrigin;
  else replayOriginCheck(src, config);
  checkWriteAccess(src, config, (value as Record<string, unknown>).put_allow !== undefined);
  if (config.headersTimeoutMs > config.requestTimeoutMs) {
    throw new ConfigError(
      `${src.where(0, ['headers_timeout'])}: headers_timeout (${raw.headers_timeout} s) must not be longer than request_timeout (${raw.request_timeout} s)`,
    );
  }
  return config;
}

/** `replay_origin` needs `base_url` (where the pages are) on another host name (cookies are shared across ports). @throws ConfigError */
function replayOriginCheck(src: YamlSource, config: ArchiveConfig): void {
  const at = src.where(0, ['replay_origin']);
  if (!config.baseUrl) throw new ConfigError(`${at}: replay_origin needs base_url too (the address of the archive's own pages)`);
  const replay = new URL(config.replayOrigin!);
  if (replay.hostname === new URL(config.baseUrl).hostname)
    throw new ConfigError(`${at}: replay_origin must be another host name than base_url's (${replay.hostname}): cookies do not tell ports apart`);
}

/**
 * Who may write, when the daemon listens beyond this host: with the default
 * `put_allow` (loopback) and no `put_tokens`, any process of this host can
 * add captures; that is the one-host setup. A `listen` that is not a
 * loopback address ({@link isLoopbackHost}: `0.0.0.0`, `::`, a LAN address,
 * a host name) says the archive is meant to be reached from elsewhere, so
 * the write side must be set on purpose: `put_tokens`, or a `put_allow`
 * written in the file (even the default one).
 *
 * @throws ConfigError `file:line: reason` at `listen`
 */
function checkWriteAccess(src: YamlSource, config: ArchiveConfig, putAllowWritten: boolean): void {
  if (isLoopbackHost(config.listen.host) || config.putTokens.length || putAllowWritten) return;
  throw new ConfigError(
    `${src.where(0, ['listen'])}: listen ${formatHostPort(config.listen.host, config.listen.port)} is not a loopback address, so the archive can be reached from other machines, but who may PUT captures is not set: add put_tokens (a bearer token the capture proxy sends as its ArchiveToken), or write put_allow explicitly (e.g. put_allow: [127.0.0.0/8, ::1/128] to keep writes to this host)`,
  );
}

/** The `archives:` list as spans: ids unique and not reserved, spans in order without overlap, remote TimeMap addresses derived. */
function archiveSpans(src: YamlSource, list: ArchiveFile['archives']): ArchiveSpan[] {
  const spans: ArchiveSpan[] = [];
  const seen = new Set<string>();
  list.forEach((a, i) => {
    const at = src.where(0, ['archives', i]);
    const here = (k: string) => src.where(0, ['archives', i, k]);
    const id = String(a.id);
    if (!/^[A-Za-z0-9][A-Za-z0-9._~-]*$/.test(id))
      throw new ConfigError(`${here('id')}: archive id must be one path segment of letters, digits, . _ ~ -, not ${JSON.stringify(a.id)}`);
    if (RESERVED_IDS.has(id)) throw new ConfigError(`${here('id')}: archive id "${id}" is a fixed word of the URL space`);
    if (seen.has(id)) throw new ConfigError(`${here('id')}: archive id "${id}" is listed twice`);
    seen.add(id);
    const from = a.from === undefined ? -Infinity : parseInstant(a.from)!;
    const until = a.until === undefined ? Infinity : parseInstant(a.until)!;
    if (from >= until) throw new ConfigError(`${at}: archive "${id}" ends (until) before it starts (from)`);
    const span: ArchiveSpan = { id, from, until };
    if (a.timegate) span.timegate = a.timegate;
    if (a.timemap) span.timemap = a.timemap;
    if (span.timemap && !span.timegate) throw new ConfigError(`${here('timemap')}: timemap is only for remote archives, which also set timegate`);
    if (span.timegate && !span.timemap) {
      // This daemon's own shape: …/<id>/timegate/ → …/<id>/timemap/link/. Other archives name theirs.
      if (!/\/timegate\/$/.test(span.timegate)) {
        throw new ConfigError(
          `${here('timegate')}: archive "${id}": timegate does not end in /timegate/, so its TimeMap address cannot be derived; set timemap: too (the base address of its link-format TimeMap, ending in /)`,
        );
      }
      span.timemap = span.timegate.replace(/\/timegate\/$/, '/timemap/link/');
    }
    const prev = spans[spans.length - 1];
    if (prev && from < prev.until)
      throw new ConfigError(`${at}: archive "${id}" starts before archive "${prev.id}" ends; list archives oldest first with spans that do not overlap`);
    spans.push(span);
  });
  return spans;
}

/** The `access:` list as rules: instants and ages in seconds; a rule whose `after` is not before its `before` applies to nothing and is refused. */
function accessRules(src: YamlSource, list: ArchiveFile['access']): AccessRule[] {
  return list.map((r, i) => {
    const rule: AccessRule = { url: r.url, action: r.action };
    if (r.before !== undefined) rule.before = parseInstant(r.before)!;
    if (r.after !== undefined) rule.after = parseInstant(r.after)!;
    if (r.embargo !== undefined) rule.embargo = parseAge(r.embargo)!;
    if (rule.before !== undefined && rule.after !== undefined && rule.after >= rule.before)
      throw new ConfigError(`${src.where(0, ['access', i])}: access rule for ${r.url}: after must be earlier than before, or the rule applies to nothing`);
    return rule;
  });
}

/**
 * Reads and validates an archive config file. A file that holds
 * `put_tokens` must not be readable by every user of the machine (the
 * tokens are the write side's secret): `chmod o-r`, e.g. 0640 root:memento.
 *
 * @throws ConfigError `file:line: reason`; `file: reason` for a file with
 *   `put_tokens` that other users can read
 */
export function loadArchiveConfig(file: string): ArchiveConfig {
  const abs = path.resolve(file);
  const config = validateArchiveConfig(loadYamlFile(abs));
  const refused = config.putTokens.length
    ? secretFileRefusal(abs, 'put_tokens', 0o004, "make it readable by the daemon's user only, e.g. chmod 0640 and chgrp to the daemon's group")
    : undefined;
  if (refused) throw new ConfigError(refused);
  return config;
}

/**
 * The one check of a file that holds a secret (the config's `put_tokens`,
 * the evidence log's signing key): the refusal, one line naming the file,
 * who can read it, its mode and `fix`, when users it should not reach may
 * read it (`mask`: 0o004 others; 0o044 group or others); `undefined` when
 * it is fine.
 * @throws the file system's error when `file` cannot be looked at
 */
export function secretFileRefusal(file: string, what: string, mask: number, fix: string): string | undefined {
  const mode = statSync(file).mode & 0o777;
  if (!(mode & mask)) return undefined;
  const who = mode & 0o004 ? 'every user' : "the file's group";
  return `${file}: holds ${what} but ${who} can read it (mode ${mode.toString(8).padStart(4, '0')}); ${fix}`;
}
