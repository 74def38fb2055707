/**
 * `proxy.yaml`, the capture proxy's own settings: the schema of the file
 * ({@link PROXY_FILE_SCHEMA}: each key's type, default, meaning and the
 * reason a value is refused) and the resolved {@link ProxyConfig} the code
 * uses. Times are seconds in the file and milliseconds in code (fields
 * named with their unit, `requestTimeoutMs`); relative paths are relative
 * to the file's folder.
 */
import { statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { ConfigError, loadYamlFile, resolveConfigPath, type YamlSource } from '#shared/config.js';
import { type ConfigOf, type ConfigSchema, defaultsOf, defineCheck } from '#shared/config-schema.js';
import { type HostPort, parseListen } from '#shared/net.js';
import { checkSettings, numberOf } from './settings.js';

/** `admin_listen`: `off` (or `false`) for none, else a listen address; `undefined` = neither. */
function adminListenOf(value: unknown): HostPort | 'off' | undefined {
  if (value === false || (typeof value === 'string' && value.trim().toLowerCase() === 'off')) return 'off';
  return parseListen(value);
}

/** A number of seconds greater than 0 (see {@link numberOf}). */
function secondsOf(value: unknown): number | undefined {
  const n = numberOf(value);
  return n !== undefined && n > 0 ? n : undefined;
}

/** A whole number of bytes greater than 0 (see {@link numberOf}). */
function bytesOf(value: unknown): number | undefined {
  const n = numberOf(value);
  return n !== undefined && n > 0 && Number.isInteger(n) ? n : undefined;
}

defineCheck('proxy-listen', (v) => parseListen(v) !== undefined);
defineCheck('proxy-listen-or-off', (v) => adminListenOf(v) !== undefined);
defineCheck('proxy-seconds', (v) => secondsOf(v) !== undefined);
defineCheck('proxy-bytes', (v) => bytesOf(v) !== undefined);
defineCheck('proxy-count', (v) => bytesOf(v) !== undefined);
defineCheck('proxy-workers', (v) => workersOf(v) !== undefined);

/** `workers`: `auto`, or a whole number from 1 to 1024 (see {@link defaultWorkers}). */
function workersOf(value: unknown): number | 'auto' | undefined {
  if (typeof value === 'string' && value.trim().toLowerCase() === 'auto') return 'auto';
  const n = numberOf(value);
  return n !== undefined && Number.isInteger(n) && n >= 1 && n <= 1024 ? n : undefined;
}

/**
 * What `workers: auto` means on this machine: one process per core
 * (`os.availableParallelism()`) when there are more than 2, else 1. With
 * 2 cores, a second worker would take the core the content server, the
 * archive and the kernel's network work share with it.
 */
export function defaultWorkers(cores = availableParallelism()): number {
  return cores > 2 ? cores : 1;
}

/** A time setting: seconds greater than 0, fractions allowed, a number or a string of digits. */
const seconds = <D extends number>(dflt: D, description: string) =>
  ({ check: 'proxy-seconds', default: dflt, description, errorMessage: 'must be a number of seconds greater than 0' }) as const;
/** A folder path setting (relative to the file's folder). */
const folder = <D extends string>(dflt: D, description: string) =>
  ({ type: 'string', pattern: '\\S', default: dflt, description, errorMessage: 'must be a folder path' }) as const;
/** A file path setting (relative to the file's folder). */
const file = (description: string) => ({ type: 'string', pattern: '\\S', description, errorMessage: 'must be a file path' }) as const;

/** The schema of `proxy.yaml`, keys in documentation order. */
export const PROXY_FILE_SCHEMA = {
  $id: 'proxy.yaml',
  type: 'object',
  additionalProperties: false,
  errorMessage: 'proxy config must be a mapping of settings (listen, vhosts, spool, …), not {value}',
  properties: {
    listen: {
      check: 'proxy-listen',
      default: '127.0.0.1:8080',
      description: '`host:port` to listen on (port 0: any free port)',
      errorMessage: 'must be host:port with a port 0-65535',
    },
    vhosts: folder('vhosts/', 'folder of vhost files (`*.yaml`, `*.yml`), watched and hot-reloaded'),
    spool: folder('../data/spool', 'folder of the durable spool (captures waiting for the archive)'),
    spool_max_bytes: {
      check: 'proxy-bytes',
      default: 4294967296,
      docDefault: "`4294967296` (4 GiB, the archive's default `max_capture_bytes`)",
      description: 'most bytes the spool holds: queued captures plus captures being teed; past it, new captures are refused (see Spool)',
      errorMessage: 'must be a number of bytes greater than 0',
    },
    spool_slow_disk: {
      enum: ['wait', 'drop'],
      default: 'wait',
      description:
        "when the spool's disk falls 8 MiB behind a response: `wait` reads that response from the content server only as fast as the disk writes (the capture is kept; that one client is slowed to disk speed); `drop` gives up spooling it (logged, counted; the client is never slowed)",
      errorMessage: 'must be wait or drop',
    },
    spool_retry_min: seconds(1, 'seconds before the first re-send after a failure; doubles on each failure …'),
    spool_retry_max: seconds(60, '… up to this many seconds'),
    admin_listen: {
      check: 'proxy-listen-or-off',
      default: 'off',
      description: '`host:port` of the admin server: `GET /metrics` (Prometheus), `GET /healthz`; `off` = none. `conf/proxy.yaml` sets `127.0.0.1:8079`',
      errorMessage: 'must be host:port (port 0-65535) or off',
    },
    tls_cert: file('PEM certificate (chain) file: with `tls_key`, the proxy listens with TLS (HTTPS). Both or neither'),
    tls_key: file('PEM private key file of `tls_cert`'),
    request_timeout: seconds(300, 'seconds a client has to send its whole request; then **408** and the connection is closed'),
    headers_timeout: seconds(
      60,
      'seconds a client has to send the head of a request (request line and header fields), counted from the moment it connects or begins the request (at most `request_timeout`; between requests, an idle keep-alive connection is closed after 5 s); then **408** and the connection is closed. A client that connects and sends nothing, or sends its head byte by byte, holds a connection no longer than this',
    ),
    max_connections: {
      check: 'proxy-count',
      default: 4096,
      description:
        'most client connections open at once (keep-alive and WebSocket ones included); a connection past it is closed as soon as it is accepted. Each may hold up to three file descriptors (the client, the content server, a capture), so the process needs `LimitNOFILE` (conf/systemd/capture-proxy.service: 16384) of at least 3 × this + 1024',
      errorMessage: 'must be a whole number greater than 0',
    },
    upstream_timeout: seconds(60, 'seconds the content server may stay silent; then **504** (or, after the head, a cut response)'),
    archive_timeout: seconds(60, 'seconds the archive may stay silent during a PUT; then the capture is spooled'),
    archive_connections: {
      check: 'proxy-count',
      default: 64,
      description:
        "most connections to each archive (`ArchiveHost:ArchivePort`) for live PUTs and re-sends, kept open between PUTs (keep-alive); a capture that finds them all busy waits for one (a streamed one's bytes count in the 8 MiB a live PUT may hold), at most `archive_timeout`, then it is spooled",
      errorMessage: 'must be a whole number greater than 0',
    },
    held_max_bytes: {
      check: 'proxy-bytes',
      default: 65536,
      docDefault: '`65536` (64 KiB)',
      description:
        'largest response body held in memory: a capture whose body is complete within this many bytes is sent as one PUT with `Content-Length` once the response has ended (or not at all when `ArchiveUnchangedCache` knows the archive has it); a larger one streams to the archive from the moment it passes the bound. Per capture in flight, so at most this × concurrent captures of memory',
      errorMessage: 'must be a number of bytes greater than 0',
    },
    workers: {
      check: 'proxy-workers',
      default: 'auto',
      docDefault: '`auto`: one per core (`os.availableParallelism()`) on a machine with more than 2 cores, else 1',
      description:
        "processes that serve the proxy's listener (node:cluster; the first process starts them and serves `admin_listen`). Each has its own spool (worker 1 the `spool` folder, worker k `spool/worker-<k>/`) holding at most `spool_max_bytes` / workers, and its own metrics, served as one page with a `worker` label; each watches the vhosts folder. See docs/architecture.md",
      errorMessage: 'must be auto or a whole number from 1 to 1024',
    },
    conditional_max_bytes: {
      check: 'proxy-bytes',
      description: 'the former name of `held_max_bytes`, still read (`held_max_bytes` wins when both are set)',
      errorMessage: 'must be a number of bytes greater than 0',
    },
  },
} as const satisfies ConfigSchema;

/** `proxy.yaml` as checked against {@link PROXY_FILE_SCHEMA}, defaults filled in. */
type ProxyFile = ConfigOf<typeof PROXY_FILE_SCHEMA>;

/** The defaults of `proxy.yaml`, from its schema. */
export const PROXY_DEFAULTS = defaultsOf(PROXY_FILE_SCHEMA);

/** The settings of `proxy.yaml`, resolved. */
export interface ProxyConfig {
  /** Absolute path of the file it was read from. */
  file: string;
  listen: HostPort;
  /** Absolute path of the vhosts folder. */
  vhostsDir: string;
  /** Absolute path of the spool folder (proxy/spool/spool.ts). */
  spoolDir: string;
  /** Bound of the spool, bytes (default 4 GiB). */
  spoolMaxBytes?: number;
  /** What a spool tee does when the disk falls behind (default `wait`; proxy/spool/tee.ts). */
  spoolSlowDisk?: 'wait' | 'drop';
  /** First re-send delay after a failure, ms (default 1000); doubles up to {@link spoolRetryMaxMs}. */
  spoolRetryMinMs?: number;
  /** Longest delay between re-sends, ms (default 60 000). */
  spoolRetryMaxMs?: number;
  /** Admin server (`/metrics`) address; `undefined` = none. */
  adminListen?: HostPort;
  /** TLS listener: absolute paths of the PEM certificate (chain) and key. */
  tls?: { cert: string; key: string };
  /** Whole-request receive timeout for clients, ms (default 300 000). */
  requestTimeoutMs?: number;
  /** Request-head receive timeout for clients, ms (default 60 000; at most {@link requestTimeoutMs}). */
  headersTimeoutMs?: number;
  /** Most client connections open at once (default 4096). */
  maxConnections?: number;
  /** Content server silence timeout, ms (default 60 000). */
  upstreamTimeoutMs?: number;
  /** Archive silence timeout during a PUT, ms (default 60 000). */
  archiveTimeoutMs?: number;
  /** Most connections to each archive, kept open between PUTs (default 64). */
  archiveConnections?: number;
  /** Largest body held whole and sent with `Content-Length`, bytes (`held_max_bytes`, default 64 KiB). */
  heldMaxBytes?: number;
  /** Processes serving the listener (`workers`, `auto` resolved by {@link defaultWorkers}); absent or 1: no workers. */
  workers?: number;
}

/**
 * Reads `proxy.yaml`.
 *
 * @param file path of the file (relative to the working directory or absolute)
 * @throws ConfigError `file:line: reason` when the file cannot be read or
 *   parsed, has more than one document, an unknown key or a bad value (see
 *   {@link PROXY_FILE_SCHEMA}), `spool_retry_max` less than
 *   `spool_retry_min`, only one of `tls_cert` and `tls_key`, a TLS file or
 *   the `vhosts` folder that does not exist.
 */
export function loadProxyConfig(file: string): ProxyConfig {
  return proxyConfigFrom(loadYamlFile(path.resolve(file)));
}

/** True when `p` is a file (`folder`: a folder) that can be stat'ed. */
function exists(p: string, folder: boolean): boolean {
  try {
    const s = statSync(p);
    return folder ? s.isDirectory() : s.isFile();
  } catch {
    return false;
  }
}

function proxyConfigFrom(src: YamlSource): ProxyConfig {
  if (src.values.length > 1) throw new ConfigError(`${src.file}: proxy config must be one YAML document, found ${src.values.length}`);
  const raw = checkSettings(PROXY_FILE_SCHEMA, src, 0, [], src.values[0] ?? {});
  const written = (src.values[0] ?? {}) as Record<string, unknown>;
  const vhostsDir = resolveConfigPath(src.file, raw.vhosts.trim());
  if (!exists(vhostsDir, true)) throw new ConfigError(`${src.where(0, ['vhosts'])}: vhosts folder ${vhostsDir} does not exist or is not a folder`);
  const ms = (key: 'spool_retry_min' | 'spool_retry_max' | 'request_timeout' | 'headers_timeout' | 'upstream_timeout' | 'archive_timeout') =>
    Math.round(secondsOf(raw[key])! * 1000);
  const spoolRetryMinMs = ms('spool_retry_min');
  const spoolRetryMaxMs = ms('spool_retry_max');
  if (spoolRetryMaxMs < spoolRetryMinMs) throw new ConfigError(`${src.where(0, ['spool_retry_max'])}: spool_retry_max must not be less than spool_retry_min`);
  const out: ProxyConfig = {
    file: src.file,
    listen: parseListen(raw.listen)!,
    vhostsDir,
    spoolDir: resolveConfigPath(src.file, raw.spool.trim()),
    spoolMaxBytes: bytesOf(raw.spool_max_bytes),
    spoolSlowDisk: raw.spool_slow_disk,
    spoolRetryMinMs,
    spoolRetryMaxMs,
    requestTimeoutMs: ms('request_timeout'),
    headersTimeoutMs: ms('headers_timeout'),
    maxConnections: bytesOf(raw.max_connections),
    upstreamTimeoutMs: ms('upstream_timeout'),
    archiveTimeoutMs: ms('archive_timeout'),
    archiveConnections: bytesOf(raw.archive_connections),
    // The former name counts when the new one is not written.
    workers: ((w) => (w === 'auto' ? defaultWorkers() : w))(workersOf(raw.workers)!),
    heldMaxBytes: bytesOf(written.held_max_bytes === undefined && raw.conditional_max_bytes !== undefined ? raw.conditional_max_bytes : raw.held_max_bytes),
  };
  const admin = adminListenOf(raw.admin_listen);
  if (admin && admin !== 'off') out.adminListen = admin;
  const tls = tlsFiles(src, raw);
  if (tls) out.tls = tls;
  return out;
}

/** `tls_cert` and `tls_key` as absolute paths of existing files; `undefined` when neither is set. */
function tlsFiles(src: YamlSource, raw: ProxyFile): { cert: string; key: string } | undefined {
  if (raw.tls_cert === undefined && raw.tls_key === undefined) return undefined;
  if (raw.tls_cert === undefined || raw.tls_key === undefined) {
    const [missing, given] = raw.tls_cert === undefined ? ['tls_cert', 'tls_key'] : ['tls_key', 'tls_cert'];
    throw new ConfigError(`${src.where(0, [given])}: ${missing} is missing (TLS needs both tls_cert and tls_key)`);
  }
  const existing = (key: 'tls_cert' | 'tls_key', value: string): string => {
    const abs = resolveConfigPath(src.file, value.trim());
    if (!exists(abs, false)) throw new ConfigError(`${src.where(0, [key])}: ${key} file ${abs} does not exist`);
    return abs;
  };
  return { cert: existing('tls_cert', raw.tls_cert), key: existing('tls_key', raw.tls_key) };
}
