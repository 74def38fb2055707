/**
 * `archive.yaml`, the archive daemon's settings: the schema of the file
 * (each key's type, default, meaning and refusal reason, in one place) and
 * the resolved {@link ArchiveConfig} the code uses. Sizes are bytes and
 * times are seconds in the file; in code, time fields carry their unit in
 * their name (`requestTimeoutMs`). docs/configuration.md's archive table
 * is generated from {@link ARCHIVE_FILE_SCHEMA}.
 */
import path from 'node:path';
import { ConfigError, loadYamlFile, positiveIntegerSchema, refuseReadableSecret, resolveConfigPath, type YamlSource } from '#shared/config.js';
import { type ConfigOf, type ConfigSchema, checkConfig, defaultsOf, defineCheck } from '#shared/config-schema.js';
import { BEARER_TOKEN, formatHostPort, type HostPort, isLoopbackHost, parseAddressBlock, parseListen } from '#shared/net.js';
import type { AccessRule } from './read/access-rules.js';
import { ACCESS_RULE_SCHEMA, accessRules, parseAge, parseInstant } from './access-config.js';
import { TLOG_FILE_PROPERTIES, type TlogSettings, tlogSettings } from './evidence/tlog-config.js';
import type { ArchiveSpan } from './spans.js';
import { type S3WarcsConfig, s3WarcsConfig, WARC_STORAGE_DOC, WARC_STORAGE_PROPERTIES } from './storage-config.js';
import { checkConnections, CONNECTION_PROPERTIES } from './connection-config.js';

export type { ArchiveSpan } from './spans.js';
export { parseAge, parseInstant } from './access-config.js';

/** The archive daemon's settings, resolved (absolute paths, epoch seconds, milliseconds). */
export interface ArchiveConfig extends TlogSettings {
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
  /** Most connections open at once, and of those the ones only peers in `putAllow` may take (archive/http/connections.ts). */
  maxConnections: number;
  putReservedConnections: number;
  /** Bearer tokens allowed to PUT; empty = no token needed (the address check still applies). */
  putTokens: string[];
  /** Address blocks allowed to PUT (`127.0.0.0/8`, `::1`, `10.1.0.0/16`). */
  putAllow: string[];
  /** Bytes of replayed (rewritten) bodies kept in memory for the next request; 0 = none. */
  replayCacheBytes: number;
  /** Bytes (estimated) of the read cache: per URL its mementos and the answers made from them (archive/store/read-cache.ts); 0 = none. */
  indexCacheBytes: number;
  /** Bytes of hot small response records kept in memory, inflated (archive/store/warcs/record-cache.ts); 0 = none. */
  recordCacheBytes: number;
  /** Most bytes one Memento answer decodes from a content-coded stored body (archive/replay/content-coding.ts); past it the body is cut. */
  maxDecodedBytes: number;
  /** Access rules (archive/read/access-rules.ts), in the order listed; reloaded on SIGHUP. */
  access: AccessRule[];
  /**
   * Seconds after a memento before an identical capture of its URI-R is
   * recorded again, as a WARC revisit record and an index row
   * (archive/store/ingest/capture-is-new.ts); `0`: at every new second; `null`
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
  /** `publish_requests`: serve and export request records, their allowed fields only (archive/evidence/published-request.ts); false: never. */
  publishRequests: boolean;
}

/** Path segments an archive id may not take: they are fixed words of the URL space. */
const RESERVED_IDS = new Set(['tg', 'put', '.well-known', 'timegate', 'memento', 'timemap', 'timebundle', 'web', 'cdx', 'healthz', 'metrics']);

defineCheck('listen', (v) => parseListen(v) !== undefined);
defineCheck('put-token', (v) => (typeof v === 'string' || typeof v === 'number') && BEARER_TOKEN.test(String(v)) && String(v).replace(/=+$/, '').length >= 16);
defineCheck('address-block', (v) => typeof v === 'string' && parseAddressBlock(v) !== undefined);
defineCheck('revisit-interval', (v) => parseRevisitInterval(v) !== undefined);
defineCheck('index-location', (v) => v === 'sqlite' || (typeof v === 'string' && /^postgres(ql)?:\/\/\S+$/.test(v)));

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
const bytes = positiveIntegerSchema;

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
        "gzip level of each WARC record (zlib's, 1 fastest … 9 smallest): `1` compresses an HTML page about 2× as fast for records about 13% larger (the Apache manual's pages; bench/results.md); any level is read back alike",
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
    headers_timeout: seconds(10, "seconds to receive a request's head (from the connection's start); later → 408, closed. Not longer than `request_timeout`"),
    idle_timeout: seconds(60, 'seconds a connection may stay silent (no byte either way) before it is closed'),
    keep_alive_timeout: seconds(5, 'seconds an idle keep-alive connection is kept for the next request'),
    ...CONNECTION_PROPERTIES,
    revisit_interval: {
      type: ['string', 'integer'],
      check: 'revisit-interval',
      default: '1d',
      description:
        'a capture identical to the memento it follows (payload digest, status, media type) stores no second copy of the body; once this long has passed since that memento it is recorded as a WARC `revisit` record and a memento of its own (the page was served then), else it stores nothing. An age (`1d`, `12h`, `30m`), `0` (a revisit at every new second) or `off` (identical captures never store anything)',
      errorMessage: '{key} must be an age like 1d, 12h or 30m (units s, m, h, d, w, y), 0 or off, not {value}',
    },
    publish_requests: {
      type: 'boolean',
      default: false,
      docDefault: '`false`',
      description:
        'what a visitor sent is private: by default the WARC `request` record of a capture (the visitor\'s `User-Agent`, `Referer`, cookie names, `X-Client-IP`…) stays in the WARC files for the operator and is never served (`/<id>/record/…` gives the response or revisit record alone) nor put in a WACZ package. `true` publishes it there, as a new request record with the request line and the fields `Host`, `Accept`, `Accept-Encoding`, `Accept-Language` and `X-Forwarded-Proto` only (see docs/threat-model.md "What a visitor\'s data becomes")',
      errorMessage: 'must be true or false',
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
    ...TLOG_FILE_PROPERTIES,
  },
} as const satisfies ConfigSchema;

/** `archive.yaml` as checked against {@link ARCHIVE_FILE_SCHEMA}, defaults filled in. */
export type ArchiveFile = ConfigOf<typeof ARCHIVE_FILE_SCHEMA>;

/** The defaults of `archive.yaml`, from its schema. */
export const DEFAULTS = defaultsOf(ARCHIVE_FILE_SCHEMA) as Omit<ArchiveFile, 'archives' | 'base_url' | 'replay_origin' | 'witness_quorum' | 'tsa_url'>;

/**
 * Validates the parsed YAML of an archive config (a string `put_tokens` or
 * `put_allow` is a list of one).
 *
 * @throws ConfigError `file:line: reason` for unknown keys, a bad listen
 *   address, bad base_url, archive ids that are not path segments or are
 *   reserved words, unparsable or overlapping spans, no archives,
 *   `headers_timeout` longer than `request_timeout`, `put_reserved_connections`
 *   not less than `max_connections`, a `listen` address
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
    maxConnections: raw.max_connections,
    putReservedConnections: raw.put_reserved_connections,
    putTokens: raw.put_tokens.map(String),
    putAllow: raw.put_allow,
    replayCacheBytes: raw.replay_cache_bytes,
    indexCacheBytes: raw.index_cache_bytes,
    recordCacheBytes: raw.record_cache_bytes,
    maxDecodedBytes: raw.max_decoded_bytes,
    access: accessRules(src, raw.access),
    revisitIntervalS: parseRevisitInterval(raw.revisit_interval)!,
    publishRequests: raw.publish_requests,
    indexPostgres: raw.storage.index === undefined || raw.storage.index === 'sqlite' ? undefined : raw.storage.index,
    warcStore: s3WarcsConfig(raw.storage, parseListen(raw.listen)!.port),
    signingKeyFile:
      raw.signing_key_file === undefined
        ? path.join(resolveConfigPath(src.file, raw.data_dir), 'log-signing-key.pem')
        : resolveConfigPath(src.file, raw.signing_key_file),
    ...tlogSettings(src, raw, raw.base_url),
  };
  if (config.warcStore === undefined) delete config.warcStore;
  if (config.baseUrl === undefined) delete config.baseUrl;
  if (config.tsaUrl === undefined) delete config.tsaUrl;
  if (config.indexPostgres === undefined) delete config.indexPostgres;
  if (config.replayOrigin === undefined) delete config.replayOrigin;
  else replayOriginCheck(src, config);
  checkWriteAccess(src, config, (value as Record<string, unknown>).put_allow !== undefined);
  checkConnections(src, config.maxConnections, config.putReservedConnections);
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

/**
 * Reads and validates an archive config file. A file that holds
 * `put_tokens` must not be readable by every user of the machine (the
 * tokens are the write side's secret): `chmod o-r`, e.g. 0640 root:memento
 * (shared/config.ts `refuseReadableSecret`, the check the capture proxy
 * applies to a vhost file with `ArchiveToken`).
 *
 * @throws ConfigError `file:line: reason`, for a file with `put_tokens`
 *   that other users can read with the `chmod` to run
 */
export function loadArchiveConfig(file: string): ArchiveConfig {
  const src = loadYamlFile(path.resolve(file));
  const config = validateArchiveConfig(src);
  if (config.putTokens.length) refuseReadableSecret(src, { doc: 0, keyPath: ['put_tokens'] }, 'put_tokens');
  return config;
}
