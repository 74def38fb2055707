/**
 * The capture proxy's configuration (DESIGN.md "Command line and
 * configuration"): `conf/proxy.yaml`, and the vhost files in the folder it
 * names. Every key, its default and its meaning are in the two tables below;
 * the README copies them, keep them in step.
 *
 * `conf/proxy.yaml`:
 *
 * | key      | default         | meaning |
 * |----------|-----------------|---------|
 * | `listen` | `127.0.0.1:8080`| `host:port` the proxy listens on (`0` = any free port) |
 * | `vhosts` | `vhosts/`       | folder of vhost files (`*.yaml`, `*.yml`), watched and hot-reloaded |
 * | `spool`  | `../data/spool` | folder of the durable spool: captures waiting for the archive (proxy/spool.ts) |
 * | `spool_max_bytes` | `4294967296` (4 GiB, the archive's default `max_capture_bytes`) | most bytes the spool holds (queued captures plus captures being teed); a capture that would pass it is not spooled (refuse-new: logged, counted as dropped) |
 * | `spool_slow_disk` | `wait` | when the spool's disk falls 8 MiB behind a response: `wait` = read that response only as fast as the disk writes (the capture is kept, that client is slowed to disk speed); `drop` = give up spooling it (logged, counted; the client is never slowed) |
 * | `spool_retry_min` | `1` | seconds before the first re-send after the archive failed; doubles on each failure |
 * | `spool_retry_max` | `60` | longest wait between re-sends, seconds |
 * | `admin_listen` | `off` | `host:port` of the admin server (`GET /metrics`, Prometheus text); `off` = none |
 * | `tls_cert`, `tls_key` | (none) | PEM certificate chain and private key: the proxy listens with TLS (HTTPS); both or neither |
 * | `request_timeout` | `300` | seconds a client has to send a whole request (head and body; the head alone gets at most 60); 408 after that |
 * | `upstream_timeout` | `60` | seconds the content server may stay silent; 504 (or a cut response) after that |
 * | `archive_timeout` | `60` | seconds the archive may stay silent during a PUT; the capture is spooled after that |
 *
 * Relative paths are relative to the folder of `proxy.yaml`.
 *
 * A vhost file holds one vhost (a mapping), a YAML list of vhosts, or
 * several YAML documents (`---`), each a vhost or a list. Settings:
 *
 * | setting           | default                              | meaning |
 * |-------------------|--------------------------------------|---------|
 * | `server_name`     | (required)                           | host name this vhost answers (matched against the request's `Host`, case-insensitive, port ignored) |
 * | `server_aliases`  | `[]`                                 | more host names (a list, or one space-separated string) |
 * | `upstream`        | (required)                           | content server, `http://host[:port]` |
 * | `default`         | `false`                              | answers requests whose `Host` matches no vhost (otherwise 421); at most one vhost |
 * | `EnableArchiving` | `On`                                 | `On`/`Off` (`true`/`false`): send captures to the archive |
 * | `ArchiveHost`     | `127.0.0.1`                          | host of the archive's PUT endpoint (no scheme, no port) |
 * | `ArchivePort`     | `8090`                               | port of the PUT endpoint, 1–65535 |
 * | `ArchivePath`     | `/put/`                              | path prefix of the PUT endpoint; starts with `/`, last segment `put/` |
 * | `ArchiveTimeGate` | `${ArchiveHost}:${ArchivePort}/tg/`  | TimeGate address without scheme, ending in `/`; announced as `Link: <http://{ArchiveTimeGate}{URI-R}>; rel="timegate"` |
 * | `EnableIP`        | `Off`                                | `On`: the capture's request carries `X-Client-IP: <client address>` |
 * | `Excluded`        | (none)                               | space-separated paths (or a list) never captured; prefix match on segment boundaries |
 * | `ArchiveToken`    | (none)                               | sent as `Authorization: Bearer <token>` on each PUT |
 * | `ArchivePrivate`  | `Off`                                | `On`: also capture requests with `Authorization` and responses with `Cache-Control: private` or `no-store` |
 * | `ArchiveCookies`  | `Off`                                | `On`: keep `Cookie`/`Set-Cookie` values in captures (`Off`: names kept, values removed) |
 *
 * The plug-in's settings keep the Apache module's names and spelling (so
 * that anyone who knows the module recognises them); the proxy's own keys
 * are lower-case. Any other key is an error.
 */
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import {
  ConfigError,
  isPlainObject,
  loadYamlFile,
  parseOnOff,
  parseYamlText,
  resolveConfigPath,
  type YamlSource,
} from '../shared/config.js';
import { parseListen, type HostPort as ListenAddress } from '../shared/net.js';
import { normalizeMatchPath } from './capture/verdict.js';

/** The settings of `conf/proxy.yaml`, resolved. */
export interface ProxyConfig {
  /** Absolute path of the file it was read from (or `<inline>`). */
  file: string;
  listen: ListenAddress;
  /** Absolute path of the vhosts folder. */
  vhostsDir: string;
  /** Absolute path of the spool folder (proxy/spool.ts). */
  spoolDir: string;
  /** Bound of the spool, bytes (default 4 GiB). */
  spoolMaxBytes?: number;
  /** What a spool tee does when the disk falls behind (default `wait`; proxy/spool.ts). */
  spoolSlowDisk?: 'wait' | 'drop';
  /** First re-send delay after a failure, ms (default 1000); doubles up to {@link spoolRetryMaxMs}. */
  spoolRetryMinMs?: number;
  /** Longest delay between re-sends, ms (default 60 000). */
  spoolRetryMaxMs?: number;
  /** Admin server (`/metrics`) address; `undefined` = none. */
  adminListen?: ListenAddress;
  /** TLS listener: absolute paths of the PEM certificate (chain) and key. */
  tls?: { cert: string; key: string };
  /** Whole-request receive timeout for clients, ms (default 60 000). */
  requestTimeoutMs?: number;
  /** Content server silence timeout, ms (default 60 000). */
  upstreamTimeoutMs?: number;
  /** Archive silence timeout during a PUT, ms (default 60 000). */
  archiveTimeoutMs?: number;
}

/** Defaults of `conf/proxy.yaml` (see the module's table). */
export const PROXY_DEFAULTS = {
  listen: '127.0.0.1:8080',
  vhosts: 'vhosts/',
  spool: '../data/spool',
  spool_max_bytes: 4 * 1024 * 1024 * 1024,
  spool_slow_disk: 'wait',
  spool_retry_min: 1,
  spool_retry_max: 60,
  admin_listen: 'off',
  request_timeout: 300,
  upstream_timeout: 60,
  archive_timeout: 60,
} as const;

/** Defaults of the plug-in settings of a vhost (see the module's table). */
export const VHOST_DEFAULTS = {
  EnableArchiving: true,
  ArchiveHost: '127.0.0.1',
  ArchivePort: 8090,
  ArchivePath: '/put/',
  /** `null` = derived: `${ArchiveHost}:${ArchivePort}/tg/`. */
  ArchiveTimeGate: null,
  EnableIP: false,
  Excluded: [] as readonly string[],
  ArchiveToken: null,
  ArchivePrivate: false,
  ArchiveCookies: false,
} as const;

/**
 * One virtual host, resolved and frozen. Requests hold on to the object they
 * started with, so a reload never changes a request in flight.
 */
export interface Vhost {
  /** `file:line` where the vhost is defined, for logs and errors. */
  source: string;
  /** Absolute path of its file. */
  file: string;
  /** `server_name`, lower-case. */
  serverName: string;
  /** `server_aliases`, lower-case. */
  aliases: readonly string[];
  /** `server_name` and aliases, lower-case, brackets of IPv6 literals removed: the keys of the Host table. */
  names: readonly string[];
  /** Content server, normalised `http://host:port` (no trailing slash). */
  upstream: string;
  /** `default: true`: answers requests whose Host matches no vhost. */
  isDefault: boolean;
  enableArchiving: boolean;
  archiveHost: string;
  archivePort: number;
  /** Starts with `/`, ends with `put/`. */
  archivePath: string;
  /** TimeGate address without scheme, ending in `/` (e.g. `127.0.0.1:8090/tg/`). */
  archiveTimeGate: string;
  enableIP: boolean;
  /** Excluded path prefixes, normalised (see `normalizeMatchPath`, proxy/capture/verdict.ts); no trailing `/` except for `/` itself. */
  excluded: readonly string[];
  /** `ArchiveToken`: sent as `Authorization: Bearer <token>` on each PUT; `undefined` = none. */
  archiveToken?: string;
  /** `ArchivePrivate On`: capture requests with Authorization and responses marked private/no-store. */
  archivePrivate: boolean;
  /** `ArchiveCookies On`: keep Cookie/Set-Cookie values in captures. */
  archiveCookies: boolean;
}

const PROXY_KEYS = new Set([
  'listen',
  'vhosts',
  'spool',
  'spool_max_bytes',
  'spool_slow_disk',
  'spool_retry_min',
  'spool_retry_max',
  'admin_listen',
  'tls_cert',
  'tls_key',
  'request_timeout',
  'upstream_timeout',
  'archive_timeout',
]);
const VHOST_KEYS = [
  'server_name',
  'server_aliases',
  'upstream',
  'default',
  'EnableArchiving',
  'ArchiveHost',
  'ArchivePort',
  'ArchivePath',
  'ArchiveTimeGate',
  'EnableIP',
  'Excluded',
  'ArchiveToken',
  'ArchivePrivate',
  'ArchiveCookies',
];

/** Files in a vhosts folder that are read: `*.yaml` and `*.yml` (not hidden files). */
export function isVhostFileName(name: string): boolean {
  const base = path.basename(name);
  return !base.startsWith('.') && /\.ya?ml$/i.test(base);
}

function unknownKey(key: string, known: Iterable<string>): string {
  const lower = key.toLowerCase();
  for (const k of known) if (k.toLowerCase() === lower) return `unknown setting "${key}" (did you mean "${k}"? names are case-sensitive)`;
  return `unknown setting "${key}"; known settings: ${[...known].join(', ')}`;
}

/**
 * Reads `conf/proxy.yaml`.
 *
 * @param file path of the file (relative to the working directory or absolute)
 * @throws ConfigError `file:line: reason` when the file cannot be read or
 *   parsed, has an unknown key, a bad `listen`, a non-string path, or its
 *   `vhosts` folder does not exist.
 */
export function loadProxyConfig(file: string): ProxyConfig {
  const abs = path.resolve(file);
  return proxyConfigFrom(loadYamlFile(abs));
}

/** As {@link loadProxyConfig}, from YAML text; `file` names it in errors and anchors relative paths. */
export function parseProxyConfig(text: string, file: string): ProxyConfig {
  return proxyConfigFrom(parseYamlText(text, path.resolve(file)));
}

function proxyConfigFrom(src: YamlSource): ProxyConfig {
  if (src.values.length > 1) throw new ConfigError(`${src.file}: proxy config must be one YAML document, found ${src.values.length}`);
  const raw = src.values[0] ?? {};
  if (!isPlainObject(raw)) throw new ConfigError(`${src.where(0, [])}: proxy config must be a mapping of settings (listen, vhosts, spool, …)`);
  for (const key of Object.keys(raw)) {
    if (!PROXY_KEYS.has(key)) throw new ConfigError(`${src.where(0, [key])}: ${unknownKey(key, PROXY_KEYS)}`);
  }
  const listenRaw = raw.listen ?? PROXY_DEFAULTS.listen;
  const listen = parseListen(listenRaw);
  if (!listen) throw new ConfigError(`${src.where(0, ['listen'])}: listen must be host:port with a port 0-65535, not ${JSON.stringify(listenRaw)}`);
  const pathSetting = (key: 'vhosts' | 'spool'): string => {
    const v = raw[key] ?? PROXY_DEFAULTS[key];
    if (typeof v !== 'string' || v.trim() === '') throw new ConfigError(`${src.where(0, [key])}: ${key} must be a folder path, not ${JSON.stringify(v)}`);
    return resolveConfigPath(src.file, v.trim());
  };
  const vhostsDir = pathSetting('vhosts');
  const spoolDir = pathSetting('spool');
  let isDir = false;
  try {
    isDir = statSync(vhostsDir).isDirectory();
  } catch {
    isDir = false;
  }
  if (!isDir) throw new ConfigError(`${src.where(0, ['vhosts'])}: vhosts folder ${vhostsDir} does not exist or is not a folder`);

  const number = (key: 'spool_max_bytes' | 'spool_retry_min' | 'spool_retry_max' | 'request_timeout' | 'upstream_timeout' | 'archive_timeout', what: string, integer = false): number => {
    const v = raw[key] ?? PROXY_DEFAULTS[key];
    const n = typeof v === 'number' ? v : typeof v === 'string' && /^\d+(\.\d+)?$/.test(v.trim()) ? Number(v) : NaN;
    if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) throw new ConfigError(`${src.where(0, [key])}: ${key} must be ${what}, not ${JSON.stringify(v)}`);
    return n;
  };
  const spoolMaxBytes = number('spool_max_bytes', 'a number of bytes greater than 0', true);
  const spoolRetryMinMs = Math.round(number('spool_retry_min', 'a number of seconds greater than 0') * 1000);
  const spoolRetryMaxMs = Math.round(number('spool_retry_max', 'a number of seconds greater than 0') * 1000);
  if (spoolRetryMaxMs < spoolRetryMinMs) throw new ConfigError(`${src.where(0, ['spool_retry_max'])}: spool_retry_max must not be less than spool_retry_min`);
  const requestTimeoutMs = Math.round(number('request_timeout', 'a number of seconds greater than 0') * 1000);
  const upstreamTimeoutMs = Math.round(number('upstream_timeout', 'a number of seconds greater than 0') * 1000);
  const archiveTimeoutMs = Math.round(number('archive_timeout', 'a number of seconds greater than 0') * 1000);

  const slowRaw = raw.spool_slow_disk ?? PROXY_DEFAULTS.spool_slow_disk;
  if (slowRaw !== 'wait' && slowRaw !== 'drop') throw new ConfigError(`${src.where(0, ['spool_slow_disk'])}: spool_slow_disk must be wait or drop, not ${JSON.stringify(slowRaw)}`);
  const spoolSlowDisk: 'wait' | 'drop' = slowRaw;

  let adminListen: ListenAddress | undefined;
  const adminRaw = raw.admin_listen ?? PROXY_DEFAULTS.admin_listen;
  if (adminRaw !== false && !(typeof adminRaw === 'string' && adminRaw.trim().toLowerCase() === 'off')) {
    adminListen = parseListen(adminRaw);
    if (!adminListen) throw new ConfigError(`${src.where(0, ['admin_listen'])}: admin_listen must be host:port (port 0-65535) or off, not ${JSON.stringify(adminRaw)}`);
  }

  let tls: { cert: string; key: string } | undefined;
  if (raw.tls_cert !== undefined || raw.tls_key !== undefined) {
    const missing = raw.tls_cert === undefined ? 'tls_cert' : raw.tls_key === undefined ? 'tls_key' : undefined;
    if (missing) throw new ConfigError(`${src.where(0, [missing === 'tls_cert' ? 'tls_key' : 'tls_cert'])}: ${missing} is missing (TLS needs both tls_cert and tls_key)`);
    const file = (key: 'tls_cert' | 'tls_key'): string => {
      const v = raw[key];
      if (typeof v !== 'string' || v.trim() === '') throw new ConfigError(`${src.where(0, [key])}: ${key} must be a file path, not ${JSON.stringify(v)}`);
      const abs = resolveConfigPath(src.file, v.trim());
      let ok = false;
      try {
        ok = statSync(abs).isFile();
      } catch {
        ok = false;
      }
      if (!ok) throw new ConfigError(`${src.where(0, [key])}: ${key} file ${abs} does not exist`);
      return abs;
    };
    tls = { cert: file('tls_cert'), key: file('tls_key') };
  }
  const out: ProxyConfig = { file: src.file, listen, vhostsDir, spoolDir, spoolMaxBytes, spoolSlowDisk, spoolRetryMinMs, spoolRetryMaxMs, requestTimeoutMs, upstreamTimeoutMs, archiveTimeoutMs };
  if (adminListen) out.adminListen = adminListen;
  if (tls) out.tls = tls;
  return out;
}

// A DNS name (labels of letters, digits, hyphens; `_` tolerated as legacy
// intranet names have it), an IPv4 address, or an IPv6 literal with or without brackets.
const HOST_NAME = /^(?:[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?)(?:\.[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?)*\.?$/i;
const IPV6 = /^\[[0-9a-f:.]+\]$|^[0-9a-f.]*:[0-9a-f.]*:[0-9a-f:.]*$/i;

/**
 * A host name as a key of the Host table: lower-case, IPv6 brackets and a
 * trailing dot removed. `undefined` when it is not a host name.
 */
export function normalizeHostName(name: string): string | undefined {
  const n = name.trim().toLowerCase();
  if (IPV6.test(n)) return n.replace(/^\[|\]$/g, '');
  if (!HOST_NAME.test(n)) return undefined;
  return n.endsWith('.') ? n.slice(0, -1) : n;
}

function normalizeExcluded(entry: string): string {
  let p = normalizeMatchPath(entry);
  if (p.length > 1 && p.endsWith('/')) p = p.slice(0, -1);
  return p;
}

/**
 * Parses the vhosts of one vhost file.
 *
 * @param file path of the file
 * @returns the vhosts it defines, in file order (an empty file gives `[]`)
 * @throws ConfigError `file:line: reason` for unreadable or unparsable YAML,
 *   an unknown setting, a missing `server_name` or `upstream`, a bad value
 *   (On/Off misspelt, port outside 1–65535, ArchivePath not ending in
 *   `put/`, ArchiveTimeGate with a scheme, an upstream that is not
 *   `http://host[:port]`), a name given twice, or two default vhosts.
 */
export function loadVhostFile(file: string): Vhost[] {
  return vhostsFrom(loadYamlFile(path.resolve(file)));
}

/** As {@link loadVhostFile}, from YAML text; `file` names it in errors. */
export function parseVhostText(text: string, file: string): Vhost[] {
  return vhostsFrom(parseYamlText(text, path.resolve(file)));
}

function vhostsFrom(src: YamlSource): Vhost[] {
  const out: Vhost[] = [];
  src.values.forEach((value, doc) => {
    if (value === null || value === undefined) return; // empty document
    if (Array.isArray(value)) {
      value.forEach((item, i) => out.push(parseVhost(src, doc, [i], item)));
    } else {
      out.push(parseVhost(src, doc, [], value));
    }
  });
  const seen = new Map<string, Vhost>();
  let def: Vhost | undefined;
  for (const v of out) {
    for (const n of v.names) {
      const other = seen.get(n);
      if (other) throw new ConfigError(`${v.source}: host name "${n}" is already served by the vhost at ${other.source}`);
      seen.set(n, v);
    }
    if (v.isDefault) {
      if (def) throw new ConfigError(`${v.source}: a second vhost with default: true (the first is at ${def.source})`);
      def = v;
    }
  }
  return out;
}

function parseVhost(src: YamlSource, doc: number, at: (string | number)[], raw: unknown): Vhost {
  const here = src.where(doc, at);
  if (!isPlainObject(raw)) throw new ConfigError(`${here}: a vhost must be a mapping of settings (server_name, upstream, …), not ${Array.isArray(raw) ? 'a list' : JSON.stringify(raw)}`);
  const where = (key: string) => src.where(doc, [...at, key]);
  for (const key of Object.keys(raw)) {
    if (!VHOST_KEYS.includes(key)) throw new ConfigError(`${where(key)}: ${unknownKey(key, VHOST_KEYS)}`);
  }

  const hostSetting = (key: string, value: unknown): string => {
    const n = typeof value === 'string' || typeof value === 'number' ? normalizeHostName(String(value)) : undefined;
    if (n === undefined || n === '') {
      const hint = typeof value === 'string' && /[:/*]/.test(value) ? ' (a host name only: no scheme, port, path or wildcard)' : '';
      throw new ConfigError(`${where(key)}: ${key} must be a host name${hint}, not ${JSON.stringify(value)}`);
    }
    return n;
  };

  if (raw.server_name === undefined || raw.server_name === null) throw new ConfigError(`${here}: server_name is missing (the host name this vhost answers)`);
  const serverName = hostSetting('server_name', raw.server_name);

  let aliasList: unknown[] = [];
  if (typeof raw.server_aliases === 'string') aliasList = raw.server_aliases.split(/\s+/).filter(Boolean);
  else if (Array.isArray(raw.server_aliases)) aliasList = raw.server_aliases;
  else if (raw.server_aliases !== undefined && raw.server_aliases !== null) {
    throw new ConfigError(`${where('server_aliases')}: server_aliases must be a list of host names, not ${JSON.stringify(raw.server_aliases)}`);
  }
  const aliases = aliasList.map((a, i) => {
    const n = typeof a === 'string' || typeof a === 'number' ? normalizeHostName(String(a)) : undefined;
    if (!n) {
      const w = Array.isArray(raw.server_aliases) ? src.where(doc, [...at, 'server_aliases', i]) : where('server_aliases');
      throw new ConfigError(`${w}: server_aliases entry must be a host name (no scheme, port or wildcard), not ${JSON.stringify(a)}`);
    }
    return n;
  });

  if (raw.upstream === undefined || raw.upstream === null) throw new ConfigError(`${here}: upstream is missing (the content server, e.g. upstream: http://127.0.0.1:8081)`);
  const upstream = parseUpstream(raw.upstream);
  if (!upstream) throw new ConfigError(`${where('upstream')}: upstream must be http://host[:port] (no path), not ${JSON.stringify(raw.upstream)}`);

  const onOff = (key: string, dflt: boolean): boolean => {
    if (raw[key] === undefined || raw[key] === null) return dflt;
    const b = parseOnOff(raw[key]);
    if (b === undefined) throw new ConfigError(`${where(key)}: ${key} must be On or Off (or true/false), not ${JSON.stringify(raw[key])}`);
    return b;
  };
  const isDefault = onOff('default', false);
  const enableArchiving = onOff('EnableArchiving', VHOST_DEFAULTS.EnableArchiving);
  const enableIP = onOff('EnableIP', VHOST_DEFAULTS.EnableIP);

  const archiveHost = raw.ArchiveHost === undefined || raw.ArchiveHost === null ? VHOST_DEFAULTS.ArchiveHost : hostSetting('ArchiveHost', raw.ArchiveHost);

  let archivePort: number = VHOST_DEFAULTS.ArchivePort;
  if (raw.ArchivePort !== undefined && raw.ArchivePort !== null) {
    const p = typeof raw.ArchivePort === 'number' ? raw.ArchivePort : typeof raw.ArchivePort === 'string' && /^\d+$/.test(raw.ArchivePort.trim()) ? Number(raw.ArchivePort) : NaN;
    if (!Number.isInteger(p) || p < 1 || p > 65535) throw new ConfigError(`${where('ArchivePort')}: ArchivePort must be a port number 1-65535, not ${JSON.stringify(raw.ArchivePort)}`);
    archivePort = p;
  }

  let archivePath: string = VHOST_DEFAULTS.ArchivePath;
  if (raw.ArchivePath !== undefined && raw.ArchivePath !== null) {
    const p = raw.ArchivePath;
    if (typeof p !== 'string' || !/^\/(?:[A-Za-z0-9\-._~!$&'()*+,;=:@%]+\/)*put\/$/.test(p)) {
      throw new ConfigError(`${where('ArchivePath')}: ArchivePath must be a path starting with / whose last segment is put/ (e.g. /put/ or /archive/put/), not ${JSON.stringify(p)}`);
    }
    archivePath = p;
  }

  const hostPort = `${archiveHost.includes(':') ? `[${archiveHost}]` : archiveHost}:${archivePort}`;
  let archiveTimeGate = `${hostPort}/tg/`;
  if (raw.ArchiveTimeGate !== undefined && raw.ArchiveTimeGate !== null) {
    const tg = raw.ArchiveTimeGate;
    if (typeof tg !== 'string' || /^[a-z][a-z0-9+.-]*:\/\//i.test(tg)) {
      throw new ConfigError(`${where('ArchiveTimeGate')}: ArchiveTimeGate is an address without scheme, like ${hostPort}/tg/, not ${JSON.stringify(tg)}`);
    }
    let ok = false;
    try {
      const u = new URL('http://' + tg);
      ok = u.hostname !== '' && !u.username && !u.password && !u.search && !u.hash && tg.endsWith('/') && !/\s/.test(tg);
    } catch {
      ok = false;
    }
    if (!ok) throw new ConfigError(`${where('ArchiveTimeGate')}: ArchiveTimeGate must be host[:port]/path/ ending in / (the URL is appended to it), like ${hostPort}/tg/, not ${JSON.stringify(tg)}`);
    archiveTimeGate = tg;
  }

  let excludedList: unknown[] = [];
  if (typeof raw.Excluded === 'string') excludedList = raw.Excluded.split(/\s+/).filter(Boolean);
  else if (Array.isArray(raw.Excluded)) excludedList = raw.Excluded;
  else if (raw.Excluded !== undefined && raw.Excluded !== null) {
    throw new ConfigError(`${where('Excluded')}: Excluded must be space-separated paths (e.g. Excluded: /private /search), not ${JSON.stringify(raw.Excluded)}`);
  }
  const excluded = excludedList.map((e) => {
    if (typeof e !== 'string' || !e.startsWith('/') || /\s/.test(e)) {
      throw new ConfigError(`${where('Excluded')}: each Excluded entry must be a path starting with /, not ${JSON.stringify(e)}`);
    }
    return normalizeExcluded(e);
  });

  let archiveToken: string | undefined;
  if (raw.ArchiveToken !== undefined && raw.ArchiveToken !== null) {
    const tok = typeof raw.ArchiveToken === 'number' ? String(raw.ArchiveToken) : raw.ArchiveToken;
    // RFC 6750 §2.1 b64token
    if (typeof tok !== 'string' || !/^[A-Za-z0-9\-._~+/]+=*$/.test(tok)) {
      throw new ConfigError(`${where('ArchiveToken')}: ArchiveToken must be a bearer token (letters, digits and - . _ ~ + / then any =; RFC 6750 b64token)`);
    }
    archiveToken = tok;
  }
  const archivePrivate = onOff('ArchivePrivate', VHOST_DEFAULTS.ArchivePrivate);
  const archiveCookies = onOff('ArchiveCookies', VHOST_DEFAULTS.ArchiveCookies);

  const names = [...new Set([serverName, ...aliases])];
  return Object.freeze({
    source: here,
    file: src.file,
    serverName,
    aliases: Object.freeze(aliases),
    names: Object.freeze(names),
    upstream,
    isDefault,
    enableArchiving,
    archiveHost,
    archivePort,
    archivePath,
    archiveTimeGate,
    enableIP,
    excluded: Object.freeze(excluded),
    ...(archiveToken !== undefined ? { archiveToken } : {}),
    archivePrivate,
    archiveCookies,
  });
}

/** `http://host[:port][/]` → `http://host:port`; `undefined` for anything else. */
function parseUpstream(v: unknown): string | undefined {
  if (typeof v !== 'string') return undefined;
  let u: URL;
  try {
    u = new URL(v.trim());
  } catch {
    return undefined;
  }
  if (u.protocol !== 'http:' || !u.hostname || u.username || u.password || u.search || u.hash || (u.pathname !== '/' && u.pathname !== '')) return undefined;
  return `http://${u.hostname}:${u.port || '80'}`;
}

/** The vhost files of a folder (`*.yaml`, `*.yml`), absolute paths, sorted by name. */
export function listVhostFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((d) => (d.isFile() || d.isSymbolicLink()) && isVhostFileName(d.name))
    .map((d) => path.join(dir, d.name))
    .sort();
}
