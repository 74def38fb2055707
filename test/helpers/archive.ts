/**
 * An archive daemon in the test's own process: config from YAML text (as a
 * sysadmin writes it), a fresh temp data folder, fastify listening on
 * 127.0.0.1 port 0. Plus helpers to build capture records and PUT them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { type ArchiveConfig, validateArchiveConfig } from '../../archive/config.js';
import { buildArchiveServer, type ServerOptions } from '../../archive/server.js';
import { ArchiveStore } from '../../archive/store/store.js';
import { parseYamlText } from '#shared/config.js';

export interface TestArchive {
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  url: string;
  port: number;
  config: ArchiveConfig;
  store: ArchiveStore;
  app: FastifyInstance;
  /** Absolute data folder (WARC files under `warcs/<id>/`, index `index.sqlite3`). */
  dataDir: string;
  /** Closes the server and the store; removes the data folder unless `keep`. */
  close(keep?: boolean): Promise<void>;
}

/** Two local archives split at 2026-01-01, as conf/archive.yaml has them. */
export const TWO_ARCHIVES = `archives:
  - id: "2025"
    until: 2026-01-01T00:00:00Z
  - id: current
    from: 2026-01-01T00:00:00Z
`;

/**
 * Two archives, `old` (before 2026) and `new`, whose ids sort against their
 * time order: their WARC folders in name order give a revisit before its
 * original (for the tests of revisits across archives).
 */
export const NEW_SORTS_BEFORE_OLD = `archives:
  - id: old
    until: 2026-01-01T00:00:00Z
  - id: new
    from: 2026-01-01T00:00:00Z
`;

/**
 * Starts an archive on `yaml` (default {@link TWO_ARCHIVES}); `listen`
 * (default 127.0.0.1:0) and `data_dir` are set by the helper unless the YAML
 * sets them (a fixed `listen` port brings an archive back where it was). `dataDir`
 * reuses an existing folder (a restart); `server` are the daemon's options
 * (e.g. stand-ins for the witness and time-stamp clients).
 */
export async function startArchive(yaml: string = TWO_ARCHIVES, opts: { dataDir?: string; server?: ServerOptions } = {}): Promise<TestArchive> {
  const dataDir = opts.dataDir ?? mkdtempSync(path.join(os.tmpdir(), 'archive-test-'));
  let text = yaml;
  if (!/^listen:/m.test(text)) text = `listen: 127.0.0.1:0\n` + text;
  if (!/^data_dir:/m.test(text)) text = `data_dir: ${JSON.stringify(dataDir)}\n` + text;
  let config: ArchiveConfig;
  try {
    config = validateArchiveConfig(parseYamlText(text, path.join(dataDir, 'archive.yaml')));
  } catch (err) {
    if (!opts.dataDir) rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
  const store = await ArchiveStore.open(config);
  let app: FastifyInstance;
  try {
    app = await buildArchiveServer(config, store, opts.server);
  } catch (err) {
    await store.close();
    throw err;
  }
  await app.listen({ host: config.listen.host, port: config.listen.port });
  const port = (app.server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    config,
    store,
    app,
    dataDir: config.dataDir,
    async close(keep = false) {
      await app.close();
      await store.close();
      if (!keep && !opts.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface CaptureParts {
  /** Request target, e.g. `/a/b?c=1`. */
  target?: string;
  host?: string;
  method?: string;
  requestHeaders?: [string, string][];
  status?: number;
  reason?: string;
  /** Response headers; Content-Length is added from the body unless present or `null` given. */
  responseHeaders?: [string, string][];
  body?: string | Buffer;
  /** IMF-fixdate for the response Date header; `null` = no Date header. */
  date?: string | null;
}

/** Builds a capture record (docs/capture-record.md) from parts. */
export function captureRecord(p: CaptureParts = {}): Buffer {
  const body = typeof p.body === 'string' ? Buffer.from(p.body) : (p.body ?? Buffer.from('<html><head><title>t</title></head><body>hi</body></html>'));
  const reqHeaders: [string, string][] = [['Host', p.host ?? 'www.example.org'], ...(p.requestHeaders ?? [])];
  const resHeaders: [string, string][] = [];
  if (p.date !== null) resHeaders.push(['Date', p.date ?? 'Tue, 20 Mar 2001 20:35:00 GMT']);
  resHeaders.push(...(p.responseHeaders ?? [['Content-Type', 'text/html; charset=utf-8']]));
  if (!resHeaders.some(([k]) => /^(content-length|transfer-encoding)$/i.test(k))) resHeaders.push(['Content-Length', String(body.length)]);
  const head =
    `${p.method ?? 'GET'} ${p.target ?? '/'} HTTP/1.1\r\n` +
    reqHeaders.map(([k, v]) => `${k}: ${v}\r\n`).join('') +
    '\r\n' +
    `HTTP/1.1 ${p.status ?? 200} ${p.reason ?? 'OK'}\r\n` +
    resHeaders.map(([k, v]) => `${k}: ${v}\r\n`).join('') +
    '\r\n';
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  text: string;
}

/**
 * One HTTP request with node:http (no client-side normalisation of the
 * target, so `/tg/http://…` goes out as written). `chunked` sends the body
 * with Transfer-Encoding: chunked instead of Content-Length; `localAddress`
 * is the address it comes from (another of 127.0.0.0/8, for the tests of
 * `put_allow`).
 */
export function request(
  url: string,
  opts: { method?: string; headers?: Record<string, string>; body?: Buffer | string; chunked?: boolean; localAddress?: string } = {},
): Promise<Answer> {
  const u = new URL(url.replace(/^(http:\/\/[^/]+)(.*)$/, '$1'));
  const target = url.slice(u.origin.length) || '/';
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    const body = opts.body === undefined ? undefined : Buffer.isBuffer(opts.body) ? opts.body : Buffer.from(opts.body);
    if (body && !opts.chunked) headers['content-length'] = String(body.length);
    if (body && opts.chunked) headers['transfer-encoding'] = 'chunked';
    const req = http.request(
      { host: u.hostname, port: u.port, method: opts.method ?? 'GET', path: target, headers, agent: false, localAddress: opts.localAddress },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const b = Buffer.concat(chunks);
          resolve({ status: res.statusCode!, headers: res.headers, body: b, text: b.toString('utf8') });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (body) req.write(body);
    req.end();
  });
}

/** PUTs `record` to `<archive>/put/<uriR>` (chunked unless `chunked: false`). */
export function putCapture(
  archive: { url: string },
  uriR: string,
  record: Buffer,
  opts: { chunked?: boolean; headers?: Record<string, string>; prefix?: string; localAddress?: string } = {},
): Promise<Answer> {
  return request(`${archive.url}${opts.prefix ?? '/'}put/${uriR}`, {
    method: 'PUT',
    body: record,
    chunked: opts.chunked ?? true,
    headers: opts.headers,
    localAddress: opts.localAddress,
  });
}
