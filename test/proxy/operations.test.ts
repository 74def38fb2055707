/**
 * What a sysadmin relies on around the proxy: `/healthz` says when an
 * archive is unreachable and captures wait; redirects that name the
 * content server's own address are rewritten to the site's (as Apache's
 * ProxyPassReverse); a removed vhost file is logged; the spool's folders
 * and files are private to the proxy's user (0700, 0600).
 */

import { once } from 'node:events';
import { readdir, rm, stat } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import t, { type Test } from 'tap';
import type { CaptureOutcome } from '../../proxy/capture/capture.js';
import type { RunningProxy } from '../../proxy/server.js';
import { freePort, get, listen, recordResponseHead, startFakeArchive, startTestProxy, startUpstream, vhostYaml, waitFor } from './helpers.js';

/** The next capture outcome. */
function nextCapture(proxy: RunningProxy): Promise<CaptureOutcome> {
  return once(proxy.events, 'capture').then(([o]) => o as CaptureOutcome);
}

/** An archive stub on `port` (0: any) answering every PUT with `status`, once it has the whole body. */
async function stubArchive(t: Test, status: number, port = 0): Promise<number> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(status, { 'Content-Type': 'text/plain' });
      res.end(status < 300 ? 'stored\n' : 'refused\n');
    });
  });
  if (port === 0) return listen(t, server);
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return port;
}

t.test('/healthz: 503 with a line per archive while one is unreachable and captures wait; 200 once they are sent', async (t) => {
  const upstream = await startUpstream(t, (_req, res) => res.end('page'));
  const port = await freePort();
  const { proxy } = await startTestProxy(
    t,
    { 'a.yaml': vhostYaml({ server_name: 'a.example', upstream: upstream.url, ArchivePort: port }) },
    { spool: { retryMinMs: 50, retryMaxMs: 100 } },
    { adminListen: { host: '127.0.0.1', port: 0 } },
  );
  const healthy = await get(proxy.adminUrl!, '/healthz', 'admin');
  t.equal(healthy.status, 200, 'nothing to send yet: healthy');
  t.equal(healthy.body.toString(), '200 ok\n');
  const spooled = nextCapture(proxy);
  await get(proxy.url, '/x', 'a.example');
  t.match(await spooled, { outcome: 'spooled' });
  const sick = await get(proxy.adminUrl!, '/healthz', 'admin');
  t.equal(sick.status, 503, 'archive down, a capture waits: 503');
  t.match(sick.headers['content-type'], /^text\/plain/);
  t.match(sick.body.toString(), new RegExp(`^archive 127\\.0\\.0\\.1:${port}: unreachable .*1 capture waits`, 'm'), 'one line for the archive, saying why');

  await stubArchive(t, 201, port);
  await waitFor('the spool drained', () => proxy.spool.depth === 0);
  const back = await get(proxy.adminUrl!, '/healthz', 'admin');
  t.equal(back.status, 200, 'the archive is back and the spool empty: 200');
  t.equal(back.body.toString(), '200 ok\n');
});

t.test(
  "redirects to the content server's own address are rewritten to the site's, for the client and in the capture; ProxyPassReverse Off keeps them",
  async (t) => {
    const upstream = await startUpstream(t, (req, res) => {
      const own = `http://127.0.0.1:${upstream.port}`;
      res.sendDate = false;
      res.writeHead(302, [
        'Date',
        'Tue, 20 Mar 2001 20:35:00 GMT',
        'Location',
        `${own}/new?x=1`,
        'Content-Location',
        `${own}/old.html`,
        'Refresh',
        `5; url=${own}/later`,
        'Link',
        `<http://elsewhere.example/>; rel="alternate"`,
      ]);
      res.end(`moved ${req.url}`);
    });
    const archive = await startFakeArchive(t);
    const { proxy } = await startTestProxy(t, {
      'a.yaml': vhostYaml({ server_name: 'a.example', upstream: upstream.url, ArchivePort: archive.port }),
      'b.yaml': vhostYaml({ server_name: 'b.example', upstream: upstream.url, ArchivePort: archive.port, ProxyPassReverse: 'Off' }),
    });
    const site = `http://a.example:${proxy.address.port}`;
    let captured = nextCapture(proxy);
    const r = await get(proxy.url, '/old', `a.example:${proxy.address.port}`);
    await captured;
    t.equal(r.headers.location, `${site}/new?x=1`, 'Location');
    t.equal(r.headers['content-location'], `${site}/old.html`, 'Content-Location');
    t.equal(r.headers.refresh, `5; url=${site}/later`, 'Refresh');
    const head = recordResponseHead(archive.puts[0].body);
    t.match(head, `\r\nLocation: ${site}/new?x=1\r\n`, 'the capture has the rewritten Location');
    t.match(head, `\r\nContent-Location: ${site}/old.html\r\n`);
    t.match(head, `\r\nRefresh: 5; url=${site}/later\r\n`);
    t.notMatch(head, `127.0.0.1:${upstream.port}`, "the content server's address is nowhere in the capture");

    captured = nextCapture(proxy);
    const off = await get(proxy.url, '/old', 'b.example');
    await captured;
    t.equal(off.headers.location, `http://127.0.0.1:${upstream.port}/new?x=1`, 'ProxyPassReverse Off: as the content server sent it');
    t.match(recordResponseHead(archive.puts[1].body), `\r\nLocation: http://127.0.0.1:${upstream.port}/new?x=1\r\n`);
  },
);

t.test('a removed vhost file is logged and stops serving', async (t) => {
  const upstream = await startUpstream(t, (_req, res) => res.end('b'));
  const { proxy, dir, logs } = await startTestProxy(t, {
    'a.yaml': vhostYaml({ server_name: 'a.example', upstream: upstream.url, EnableArchiving: 'Off' }),
    'b.yaml': vhostYaml({ server_name: 'b.example', upstream: upstream.url, EnableArchiving: 'Off' }),
  });
  await rm(path.join(dir, 'b.yaml'));
  const events = proxy.vhosts.reload();
  t.match(
    events.find((e) => e.file.endsWith('b.yaml')),
    { ok: true, removed: true },
  );
  t.ok(
    logs.some((e) => /vhost file removed/.test(String(e.msg)) && String(e.file).endsWith('b.yaml')),
    'logged, naming the file',
  );
  t.equal((await get(proxy.url, '/', 'b.example')).status, 421, 'its host is no longer served');
});

t.test('spool folders are 0700 and spool files 0600, rejected/ included', async (t) => {
  const upstream = await startUpstream(t, (_req, res) => res.end('page'));
  const down = await freePort();
  const refusing = await stubArchive(t, 422);
  const { proxy } = await startTestProxy(
    t,
    {
      'a.yaml': vhostYaml({ server_name: 'a.example', upstream: upstream.url, ArchivePort: down }),
      'b.yaml': vhostYaml({ server_name: 'b.example', upstream: upstream.url, ArchivePort: refusing }),
    },
    { spool: { paused: true } },
  );
  let captured = nextCapture(proxy);
  await get(proxy.url, '/x', 'a.example');
  t.match(await captured, { outcome: 'spooled' });
  captured = nextCapture(proxy);
  await get(proxy.url, '/x', 'b.example');
  t.match(await captured, { outcome: 'rejected' });
  const mode = async (p: string) => (await stat(p)).mode & 0o777;
  const root = proxy.spool.dir;
  for (const d of [root, path.join(root, 'tmp'), path.join(root, `127.0.0.1_${down}`), path.join(root, 'rejected')]) {
    t.equal((await mode(d)).toString(8), '700', `${path.relative(root, d) || 'spool/'}: 0700`);
  }
  for (const d of [`127.0.0.1_${down}`, 'rejected']) {
    const files = await readdir(path.join(root, d));
    t.equal(files.length, 1);
    t.equal((await mode(path.join(root, d, files[0]))).toString(8), '600', `${d}/${files[0]}: 0600`);
  }
});
