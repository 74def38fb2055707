#!/usr/bin/env node
// A static content server for the sample vhost (and the real-site test):
// serve-static over a folder, with directory redirects, ETag/Last-Modified
// and Range, like a plain legacy web server.
//
//   node bin/sample-site.js [--root conf/sample-site] [--listen 127.0.0.1:8081]
import { realpathSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import serveStatic from 'serve-static';

/**
 * Starts a static file server.
 * @param {string} root folder to serve
 * @param {{host?: string, port?: number}} [listen] default 127.0.0.1, port 0 (any free port)
 * @returns {Promise<{url: string, server: http.Server, close: () => Promise<void>}>}
 */
export async function startStaticServer(root, { host = '127.0.0.1', port = 0 } = {}) {
  const serve = serveStatic(root, { index: ['index.html'], redirect: true });
  const server = http.createServer((req, res) => {
    serve(req, res, () => {
      res.statusCode = 404;
      res.setHeader('content-type', 'text/plain; charset=utf-8');
      res.end(`not found: ${req.url}\n`);
    });
  });
  await new Promise((resolve, reject) => server.once('error', reject).listen(port, host, resolve));
  const addr = server.address();
  return {
    url: `http://${host}:${addr.port}`,
    server,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

// Run as a program (also through a symlink, as npm links executables), not when imported.
if (process.argv[1] && realpathSync(path.resolve(process.argv[1])) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { root: { type: 'string', default: 'conf/sample-site' }, listen: { type: 'string', default: '127.0.0.1:8081' } } });
  const [host, port] = values.listen.split(/:(?=\d+$)/);
  const site = await startStaticServer(path.resolve(values.root), { host, port: Number(port) });
  process.stdout.write(`sample-site serving ${path.resolve(values.root)} on ${site.url}\n`);
  const stop = () => site.close().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
