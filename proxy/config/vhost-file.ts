/**
 * The vhost files: one vhost (a mapping), a YAML list of vhosts, or several
 * YAML documents of either. The schema of a vhost ({@link VHOST_SCHEMA}:
 * each setting's type, default, meaning and the reason a value is refused)
 * and the resolved, frozen {@link Vhost} the code uses. The capture
 * plug-in's settings keep the Apache module's names and spelling; the
 * proxy's own are lower-case. Host names are RFC 1123 §2.1 names or IP
 * literals (RFC 3986 §3.2.2); `ArchiveToken` is an RFC 6750 §2.1 bearer
 * token.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, isPlainObject, loadYamlFile, parseOnOff, parseYamlText, refuseReadableSecret, type YamlSource } from '#shared/config.js';
import type { ConfigSchema } from '#shared/config-schema.js';
import { defineCheck } from '#shared/config-schema.js';
import { BEARER_TOKEN, formatHostPort } from '#shared/net.js';
import { excludedPrefix } from './excluded.js';
import { checkSettings } from './settings.js';

// A DNS name (labels of letters, digits, hyphens; `_` tolerated as legacy
// intranet names have it), an IPv4 address, or an IPv6 literal with or without brackets.
const HOST_NAME = /^(?:[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?)(?:\.[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?)*\.?$/i;
const IPV6 = /^\[[0-9a-f:.]+\]$|^[0-9a-f.]*:[0-9a-f.]*:[0-9a-f:.]*$/i;
const SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;

/**
 * A host name setting as a key of the Host table: lower-case, IPv6
 * brackets and a trailing dot removed. `undefined` when it is not a host
 * name (nor a string or number).
 */
function hostNameOf(value: unknown): string | undefined {
  if (typeof value !== 'string' && typeof value !== 'number') return undefined;
  const n = String(value).trim().toLowerCase();
  if (IPV6.test(n)) return n.replace(/^\[|\]$/g, '');
  if (!HOST_NAME.test(n)) return undefined;
  return n.endsWith('.') ? n.slice(0, -1) : n;
}

/** `http://host[:port][/]` → `http://host:port`; `undefined` for anything else. */
function upstreamOf(v: unknown): string | undefined {
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

/** An `ArchivePort`: a whole number 1–65535, or a string of digits for one. */
function portOf(v: unknown): number | undefined {
  const p = typeof v === 'number' ? v : typeof v === 'string' && /^\d+$/.test(v.trim()) ? Number(v) : NaN;
  return Number.isInteger(p) && p >= 1 && p <= 65535 ? p : undefined;
}

/** An `ArchiveTimeGate`'s scheme: `http://` or `https://`, which an absolute value may begin with. */
const TIMEGATE_SCHEME = /^https?:\/\//i;

/**
 * An `ArchiveTimeGate` as the absolute URL prefix the URI-R is appended to:
 * `http://host[:port]/path/` for an address without scheme (the Apache
 * plug-in's form), the value itself for an absolute `http://` or
 * `https://` one (normalised as a URL: scheme and host lower-case, a
 * default port dropped); ending in `/`, nothing after the path.
 * `undefined` when it is neither.
 */
function timeGatePrefix(v: unknown): string | undefined {
  if (typeof v !== 'string' || !v.endsWith('/') || /\s/.test(v)) return undefined;
  const scheme = TIMEGATE_SCHEME.exec(v)?.[0];
  if (!scheme && SCHEME.test(v)) return undefined;
  const absolute = scheme ? scheme.toLowerCase() + v.slice(scheme.length) : 'http://' + v;
  try {
    const u = new URL(absolute);
    return u.hostname !== '' && !u.username && !u.password && !u.search && !u.hash ? u.href : undefined;
  } catch {
    return undefined;
  }
}

defineCheck('proxy-host-name', (v) => Boolean(hostNameOf(v)));
defineCheck('proxy-upstream', (v) => upstreamOf(v) !== undefined);
defineCheck('proxy-on-off', (v) => parseOnOff(v) !== undefined);
defineCheck('proxy-port', (v) => portOf(v) !== undefined);
defineCheck('proxy-timegate', (v) => timeGatePrefix(v) !== undefined);
defineCheck('proxy-bearer-token', (v) => (typeof v === 'string' || typeof v === 'number') && BEARER_TOKEN.test(String(v)));

/** A `PrivateCookies` entry: a cookie name (an RFC 6265 token), `*` standing for any characters. */
const COOKIE_PATTERN = "^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$";

/**
 * The session and login cookies of common server frameworks: a request
 * that carries one is someone's own view of the site (`PrivateCookies`).
 */
const DEFAULT_PRIVATE_COOKIES = [
  'PHPSESSID', // PHP
  'JSESSIONID', // Java servlets (Tomcat, Jetty, WebLogic…), ColdFusion on J2EE sessions
  'ASP.NET_SessionId', // ASP.NET
  '.ASPXAUTH', // ASP.NET forms authentication
  '.AspNetCore.*', // ASP.NET Core session, identity, cookie authentication
  'ASPSESSIONID*', // classic ASP: ASPSESSIONID + 8 letters
  'CFID', // ColdFusion
  'CFTOKEN',
  '*_session', // Rails (_<app>_session), Laravel (laravel_session)
  '_session_id', // Rails 2
  'remember_web_*', // Laravel remember-me
  'remember_user_token', // Rails Devise remember-me
  'sessionid', // Django
  'connect.sid', // Express (express-session)
  'koa.sess', // Koa
  'rack.session', // Rack, Sinatra
  'session', // Flask
  'CGISESSID', // Perl CGI::Session
  'SESS*', // Drupal (SESS<hash>, SSESS<hash> over https), Spring Session (SESSION)
  'SSESS*',
  'wordpress_logged_in_*', // WordPress
  'wordpress_sec_*',
  'wp-postpass_*', // WordPress password-protected posts
] as const;

/** A matcher of the cookie names `patterns` list (case-insensitive, `*` any characters); `undefined` for an empty list. */
function cookieMatcher(patterns: readonly string[]): RegExp | undefined {
  if (patterns.length === 0) return undefined;
  const alternatives = patterns.map((p) =>
    p
      .split('*')
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*'),
  );
  return new RegExp(`^(?:${alternatives.join('|')})$`, 'i');
}

/** An On/Off setting (`true`/`false` too, case-insensitive). */
const onOff = <D extends boolean>(dflt: D, description: string) =>
  ({ check: 'proxy-on-off', default: dflt, description, errorMessage: 'must be On or Off (or true/false)' }) as const;
const HOST_NAME_REFUSED = 'must be a host name (a host name only: no scheme, port, path or wildcard)';

/** The schema of one vhost, settings in documentation order. */
export const VHOST_SCHEMA = {
  $id: 'vhost.yaml',
  type: 'object',
  additionalProperties: false,
  required: ['server_name', 'upstream'],
  errorMessage: 'a vhost must be a mapping of settings (server_name, upstream, …), not {value}',
  properties: {
    server_name: {
      check: 'proxy-host-name',
      description: "host name this vhost answers (the `Host` header's name, case-insensitive, port ignored)",
      missingMessage: 'the host name this vhost answers',
      errorMessage: HOST_NAME_REFUSED,
    },
    server_aliases: {
      type: 'array',
      items: { check: 'proxy-host-name', errorMessage: '{key} entry must be a host name (no scheme, port or wildcard), not {value}' },
      default: [],
      description: 'more host names (a list, or one space-separated string)',
      errorMessage: 'must be a list of host names',
    },
    upstream: {
      type: 'string',
      check: 'proxy-upstream',
      description: 'the content server, `http://host:port`',
      missingMessage: 'the content server, e.g. upstream: http://127.0.0.1:8081',
      errorMessage: 'must be http://host[:port] (no path)',
    },
    default: {
      ...onOff(
        false,
        'answer requests whose Host matches no vhost (otherwise **421**); at most one vhost. Such a request is served but never captured (`capture: "no: unknown-host"`): a client cannot choose the host a capture is filed under',
      ),
      docDefault: '`false`',
    },
    UseCanonicalName: onOff(
      false,
      "as Apache's: `On`: captures are filed under `server_name` whichever of the vhost's names the client used (`127.0.0.1:8080` and `localhost:8080` share one history); `Off`: under the name the client used (one of the vhost's). The URI-R's port is the `Host`'s when it is the port the proxy listens on, none when the `Host` has none or the scheme's default; another port is not captured (`no: unknown-port`)",
    ),
    ProxyPassReverse: onOff(
      true,
      "`Location`, `Content-Location` and the `url=` of `Refresh` that point at the content server's own origin (`upstream`) are rewritten to the site's (the client connection's scheme, the `Host` it used), for the client and in the capture, as Apache's ProxyPassReverse; `Off`: passed as sent",
    ),
    EnableArchiving: onOff(true, "capture this vhost's responses"),
    ArchiveHost: { check: 'proxy-host-name', default: '127.0.0.1', description: "host of the archive's PUT endpoint", errorMessage: HOST_NAME_REFUSED },
    ArchivePort: { check: 'proxy-port', default: 8090, description: 'its port, 1–65535', errorMessage: 'must be a port number 1-65535' },
    ArchivePath: {
      type: 'string',
      pattern: "^/(?:[A-Za-z0-9\\-._~!$&'()*+,;=:@%]+/)*put/$",
      default: '/put/',
      description: 'path prefix of the PUT endpoint; starts with `/`, must end in `put/`',
      errorMessage: 'must be a path starting with / whose last segment is put/ (e.g. /put/ or /archive/put/)',
    },
    ArchiveTimeGate: {
      type: 'string',
      check: 'proxy-timegate',
      docDefault: '`ArchiveHost:ArchivePort/tg/`',
      description:
        'the TimeGate announced in the `Link: <{ArchiveTimeGate}{URI-R}>; rel="timegate"` added to every archived response (after any `Link` the content server sent; none when `EnableArchiving` is Off): an address without scheme, ending in `/` (`127.0.0.1:8090/tg/`, announced as `http://127.0.0.1:8090/tg/…`), or an absolute `https://` (or `http://`) URL ending in `/` (`https://archive.example.org/tg/`)',
      errorMessage: 'must be host[:port]/path/ or https://host[:port]/path/, ending in / (the URL is appended to it), like 127.0.0.1:8090/tg/',
    },
    ArchiveUnchangedCache: onOff(
      true,
      "`On`: remember the archive's last answer for each URI-R (the capture tag of its memento and `Archive-Revisit-After`), and send no PUT for a capture held whole (within `held_max_bytes`) that has the same tag and a Memento-Datetime before that instant: the archive would store nothing. Right while this proxy is the only writer of these URI-Rs into that archive; `Off` where several proxies (or other clients) PUT the same URI-Rs (see docs/capture-record.md)",
    ),
    ArchiveConditional: {
      check: 'proxy-on-off',
      docDefault: '— (obsolete)',
      description:
        'obsolete, ignored (conditional PUTs are gone: every capture is a plain PUT and the archive decides whether it is new); a vhost file that still has it loads, with one warning line',
      errorMessage: 'must be On or Off (or true/false); it is obsolete and ignored, so it can be removed',
    },
    ArchiveToken: {
      check: 'proxy-bearer-token',
      description:
        "sent as `Authorization: Bearer <token>` on every PUT, live and re-sent (the archive's `put_tokens`). A file that holds one must not be readable by every user (e.g. 0640 root:capture-proxy, or 0600), else the file is refused as `put_tokens` is in a readable `archive.yaml`",
      // No {value}: the token is a secret, not to be echoed into logs.
      errorMessage: '{key} must be a bearer token (letters, digits and - . _ ~ + / then any =; RFC 6750 b64token)',
    },
    EnableIP: onOff(
      false,
      "`On`: the captured request carries `X-Client-IP: <client's socket address>`. An `X-Client-IP` the client sent is always removed, from the capture and from the request to the content server (no spoofing), `On` or `Off`",
    ),
    Excluded: {
      type: 'array',
      items: { type: 'string', pattern: '^/\\S*$', errorMessage: 'each Excluded entry must be a path starting with /, not {value}' },
      default: [],
      docDefault: 'empty',
      description:
        'space-separated paths (or a YAML list) never captured, matched as **path prefixes on segment boundaries**: `/search` excludes `/search`, `/search/x` and `/search?q=`, not `/searchx`. The path is compared after decoding unreserved `%XX`, resolving `.`/`..` and merging `//`, so `/%73earch` and `/x/../search` are excluded too; case counts',
      errorMessage: '{key} must be space-separated paths (e.g. Excluded: /private /search), not {value}',
    },
    ArchivePrivate: onOff(false, '`On`: also capture private traffic (see Privacy)'),
    PrivateCookies: {
      type: 'array',
      items: { type: 'string', pattern: COOKIE_PATTERN, errorMessage: '{key} entries must be cookie names, a * standing for any characters, not {value}' },
      default: DEFAULT_PRIVATE_COOKIES,
      docDefault: `\`${DEFAULT_PRIVATE_COOKIES.join(' ')}\``,
      description:
        'session cookies (space-separated, or a YAML list; case-insensitive; `*` stands for any characters) whose presence in a request makes it private: not captured unless `ArchivePrivate: On` (see Privacy). A list given here replaces the default one; `[]` for none. The default names the session and login cookies of PHP, Java servlets, ASP.NET (Core), classic ASP, ColdFusion, Rails, Laravel, Django, Express, Koa, Rack, Flask, Perl CGI::Session, Drupal and WordPress',
      errorMessage: '{key} must be cookie names (e.g. PrivateCookies: PHPSESSID ASPSESSIONID*), not {value}',
    },
    ArchiveCookies: onOff(false, '`On`: keep `Cookie` and `Set-Cookie` values in captures (see Privacy)'),
  },
} as const satisfies ConfigSchema;

/**
 * The defaults of the capture plug-in's settings (the capitalised ones),
 * from {@link VHOST_SCHEMA}; `null` where there is none (`ArchiveToken`) or
 * it is derived (`ArchiveTimeGate`: `${ArchiveHost}:${ArchivePort}/tg/`).
 */
export const VHOST_DEFAULTS: Record<string, unknown> = Object.fromEntries(
  Object.entries(VHOST_SCHEMA.properties)
    .filter(([k]) => /^[A-Z]/.test(k))
    .map(([k, p]) => [k, ('default' in p ? p.default : undefined) ?? null]),
);

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
  /** `default: true`: answers requests whose Host matches no vhost (never captured). */
  isDefault: boolean;
  /** `UseCanonicalName On`: the URI-R's host is `serverName` whichever of the names the client used. */
  useCanonicalName: boolean;
  /** `ProxyPassReverse On`: Location, Content-Location, Refresh naming the upstream's origin are rewritten to the site's. */
  proxyPassReverse: boolean;
  enableArchiving: boolean;
  archiveHost: string;
  archivePort: number;
  /** Starts with `/`, ends with `put/`. */
  archivePath: string;
  /** The TimeGate's absolute URL prefix, ending in `/` (e.g. `http://127.0.0.1:8090/tg/`, `https://archive.example.org/tg/`). */
  archiveTimeGate: string;
  enableIP: boolean;
  /** Excluded path prefixes, normalised (`excludedPrefix`, proxy/config/excluded.ts); no trailing `/` except for `/` itself. */
  excluded: readonly string[];
  /** `ArchiveUnchangedCache On`: no PUT for a capture the archive's last answer for its URI-R says it has (proxy/capture/is-it-new.ts). */
  archiveUnchangedCache: boolean;
  /** One line per obsolete setting the vhost still has (`file:line: …`), for the registry to log as a warning; absent when none. */
  obsolete?: readonly string[];
  /** `ArchiveToken`: sent as `Authorization: Bearer <token>` on each PUT; `undefined` = none. */
  archiveToken?: string;
  /** `ArchivePrivate On`: capture requests with Authorization or a private cookie, and responses marked private/no-store. */
  archivePrivate: boolean;
  /** `PrivateCookies` as written. */
  privateCookies: readonly string[];
  /** Matches the names of {@link privateCookies} (case-insensitive); `undefined` when there are none. */
  privateCookie?: RegExp;
  /** `ArchiveCookies On`: keep Cookie/Set-Cookie values in captures. */
  archiveCookies: boolean;
}

/**
 * The most bytes a vhost file may have (64 KiB; a vhost takes a few hundred,
 * and a site with more vhosts than fit spreads them over several files).
 * Vhost files are read again on every change, so this bounds what a hostile
 * one can cost each time: the slowest 64 KiB of YAML measured (thousands of
 * small flow collections) took the parser about 1.5-5 s on a busy two-core
 * machine; deeper nesting is refused before parsing (shared/config.ts).
 */
export const MAX_VHOST_FILE_BYTES = 64 * 1024;

/** Files in a vhosts folder that are read: `*.yaml` and `*.yml` (not hidden files). */
export function isVhostFileName(name: string): boolean {
  const base = path.basename(name);
  return !base.startsWith('.') && /\.ya?ml$/i.test(base);
}

/**
 * The vhost files of a folder (`*.yaml`, `*.yml`; every entry but a
 * folder, so that a link, a device or a pipe with such a name is read and
 * refused, as the watcher does), absolute paths, sorted by name.
 */
export function listVhostFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((d) => !d.isDirectory() && isVhostFileName(d.name))
    .map((d) => path.join(dir, d.name))
    .sort();
}

/**
 * Parses the vhosts of one vhost file.
 *
 * @param file path of the file
 * @returns the vhosts it defines, in file order (an empty file gives `[]`)
 * @throws ConfigError `file:line: reason` for a file that is not a regular
 *   file or has more than {@link MAX_VHOST_FILE_BYTES}, unreadable or
 *   unparsable YAML (nested too deep, aliases expanding too much),
 *   an unknown setting, a missing `server_name` or `upstream`, a bad value
 *   (see {@link VHOST_SCHEMA}: On/Off misspelt, port outside 1–65535,
 *   ArchivePath not ending in `put/`, ArchiveTimeGate with a scheme other than http(s), an
 *   upstream that is not `http://host[:port]`…), a name given twice, or two
 *   default vhosts; a file that holds an `ArchiveToken` and that every user
 *   may read (`file:line: reason` with the `chmod` to run;
 *   shared/config.ts `refuseReadableSecret`, as the archive refuses such an
 *   `archive.yaml` with `put_tokens`).
 */
export function loadVhostFile(file: string): Vhost[] {
  return vhostsFrom(loadYamlFile(path.resolve(file), MAX_VHOST_FILE_BYTES));
}

/** As {@link loadVhostFile}, from YAML text; `file` names it in errors. */
export function parseVhostText(text: string, file: string): Vhost[] {
  return vhostsFrom(parseYamlText(text, path.resolve(file)));
}

function vhostsFrom(src: YamlSource): Vhost[] {
  const out: Vhost[] = [];
  src.values.forEach((value, doc) => {
    if (value === null || value === undefined) return; // empty document
    const add = (at: (string | number)[], item: unknown) => {
      const v = vhostFrom(src, doc, at, item);
      // The token lets whoever reads it write captures: as the archive refuses a readable archive.yaml with put_tokens.
      if (v.archiveToken !== undefined) refuseReadableSecret(src, { doc, keyPath: [...at, 'ArchiveToken'] }, 'ArchiveToken');
      out.push(v);
    };
    if (Array.isArray(value)) for (const [i, item] of value.entries()) add([i], item);
    else add([], value);
  });
  out.forEach((v, i) => {
    for (const earlier of out.slice(0, i)) {
      const clash = clashOf(v, earlier);
      if (clash) throw new ConfigError(clash);
    }
  });
  return out;
}

/**
 * Why vhost `v` cannot serve beside `other` (`file:line: reason` at `v`):
 * a host name both claim, or both `default: true`; `undefined` when they
 * can. Within a file and across the files of a folder (proxy/vhosts.ts).
 */
export function clashOf(v: Vhost, other: Vhost): string | undefined {
  const name = v.names.find((n) => other.names.includes(n));
  if (name) return `${v.source}: host name "${name}" is already served by the vhost at ${other.source}`;
  if (v.isDefault && other.isDefault) return `${v.source}: a second vhost with default: true (the first is at ${other.source})`;
  return undefined;
}

/**
 * A vhost mapping as the schema reads it: `server_aliases` and `Excluded`
 * given as one space-separated string become lists. An `ArchiveTimeGate`
 * with a scheme other than `http://` or `https://` is refused here with its own hint.
 */
function beforeSchema(src: YamlSource, doc: number, at: (string | number)[], value: unknown): unknown {
  if (!isPlainObject(value)) return value;
  const tg = value.ArchiveTimeGate;
  if (typeof tg === 'string' && SCHEME.test(tg) && !TIMEGATE_SCHEME.test(tg)) {
    throw new ConfigError(
      `${src.where(doc, [...at, 'ArchiveTimeGate'])}: ArchiveTimeGate is an address without scheme, like ${tg.replace(SCHEME, '')}, or an https:// or http:// URL, not ${JSON.stringify(tg)}`,
    );
  }
  const out = { ...value };
  for (const key of ['server_aliases', 'Excluded', 'PrivateCookies']) {
    const v = out[key];
    if (typeof v === 'string') out[key] = v.split(/\s+/).filter(Boolean);
  }
  return out;
}

/** One vhost of a file (document `doc`, at `at` in it), checked and resolved. */
function vhostFrom(src: YamlSource, doc: number, at: (string | number)[], value: unknown): Vhost {
  const raw = checkSettings(VHOST_SCHEMA, src, doc, at, beforeSchema(src, doc, at, value));
  const serverName = hostNameOf(raw.server_name)!;
  const aliases = raw.server_aliases.map((a) => hostNameOf(a)!);
  const archiveHost = hostNameOf(raw.ArchiveHost)!;
  const archivePort = portOf(raw.ArchivePort)!;
  const archiveToken = raw.ArchiveToken === undefined ? undefined : String(raw.ArchiveToken);
  const privateCookies = Object.freeze([...raw.PrivateCookies]);
  const privateCookie = cookieMatcher(privateCookies);
  return Object.freeze({
    source: src.where(doc, at),
    file: src.file,
    serverName,
    aliases: Object.freeze(aliases),
    names: Object.freeze([...new Set([serverName, ...aliases])]),
    upstream: upstreamOf(raw.upstream)!,
    isDefault: parseOnOff(raw.default)!,
    useCanonicalName: parseOnOff(raw.UseCanonicalName)!,
    proxyPassReverse: parseOnOff(raw.ProxyPassReverse)!,
    enableArchiving: parseOnOff(raw.EnableArchiving)!,
    archiveHost,
    archivePort,
    archivePath: raw.ArchivePath,
    archiveTimeGate: timeGatePrefix(raw.ArchiveTimeGate ?? `${formatHostPort(archiveHost, archivePort)}/tg/`)!,
    archiveUnchangedCache: parseOnOff(raw.ArchiveUnchangedCache)!,
    enableIP: parseOnOff(raw.EnableIP)!,
    excluded: Object.freeze(raw.Excluded.map(excludedPrefix)),
    ...(archiveToken !== undefined ? { archiveToken } : {}),
    archivePrivate: parseOnOff(raw.ArchivePrivate)!,
    privateCookies,
    ...(privateCookie ? { privateCookie } : {}),
    archiveCookies: parseOnOff(raw.ArchiveCookies)!,
    ...(raw.ArchiveConditional !== undefined
      ? {
          obsolete: Object.freeze([
            `${src.where(doc, [...at, 'ArchiveConditional'])}: ArchiveConditional is obsolete and ignored (every capture is a plain PUT; the archive decides whether it is new); remove it`,
          ]),
        }
      : {}),
  });
}
