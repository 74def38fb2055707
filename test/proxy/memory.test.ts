/**
 * Bounded memory: a 1 GiB response passes through the proxy (its own
 * process, the capture-proxy command) and is captured in full while the
 * proxy's peak RSS stays under 150 MiB; a client that stops reading makes
 * the proxy stop reading from the content server instead of buffering.
 */

import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import t from 'tap';
import type { CaptureOutcome } from '../../proxy/capture/capture.js';
import { startDaemon } from '../helpers/daemons.js';
import { startCountingArchive, startGeneratingUpstream, startTestProxy, tempDir, vhostYaml, waitFor } from './helpers.js';

const MiB = 1024 * 1024;

/** VmRSS and VmHWM (peak) of a process, bytes (Linux /proc). */
async function rssOf(pid: number): Promise<{ rss: number; peak: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}

t.test('1 GiB through the proxy: the client and the archive get every byte, the proxy stays under 150 MiB RSS', async (t) => {
  const total = 1024 * MiB;
  const upstream = await startGeneratingUpstream(t, total);
  const archive = await startCountingArchive(t);
  const dir = await tempDir(t);
  await mkdir(path.join(dir, 'vhosts'));
  await writeFile(path.join(dir, 'proxy.yaml'), 'listen: 127.0.0.1:0\nvhosts: vhosts/\nspool: spool/\n');
  await writeFile(path.join(dir, 'vhosts', 'a.yaml'), vhostYaml({ server_name: 'big.example', upstream: upstream.url, ArchivePort: archive.port }));
  const proxy = await startDaemon('capture-proxy.js', ['--config', path.join(dir, 'proxy.yaml')]);
  t.teardown(() => proxy.stop());
  const pid = proxy.proc.pid!;
  const before = await rssOf(pid);

  let sampledMax = 0;
  const sampler = setInterval(() => {
    void rssOf(pid).then(
      (r) => {
        sampledMax = Math.max(sampledMax, r.rss);
      },
      () => {},
    );
  }, 100);
  t.teardown(() => clearInterval(sampler));

  const started = performance.now();
  // The client only counts (the machine has 2 cores; the archive stub digests what it gets).
  const client = await new Promise<{ status: number; bytes: number }>((resolve, reject) => {
    const u = new URL(proxy.url);
    const req = http.request({ host: u.hostname, port: u.port, path: '/gigabyte', headers: { Host: 'big.example' }, agent: false }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => {
        bytes += c.length;
      });
      res.on('end', () => resolve({ status: res.statusCode!, bytes }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
  const seconds = (performance.now() - started) / 1000;
  // Live, or (when the archive stub read slower than the client and the live PUT was cut) re-sent from the spool.
  await waitFor('a complete PUT', () => archive.puts.some((p) => p.complete), 120_000).catch((err) => {
    t.comment(
      proxy
        .output()
        .split('\n')
        .filter((l) => /capture|spool/.test(l))
        .join('\n'),
    );
    throw err;
  });
  const stored = archive.puts.find((p) => p.complete)!;
  const via = archive.puts.length === 1 ? 'the live PUT' : `a re-send from the spool after ${archive.puts.length - 1} cut live PUT(s)`;
  clearInterval(sampler);
  const after = await rssOf(pid);

  t.equal(client.status, 200);
  t.equal(client.bytes, total, 'the client got 1 GiB');
  t.ok(stored.complete, `the archive got a complete PUT (${via})`);
  t.equal(stored.bodyBytes, total, 'with the whole 1 GiB body');
  t.equal(stored.bodySha256, upstream.state.sha256, 'byte for byte');
  t.match(
    stored.head,
    /^GET \/gigabyte HTTP\/1\.1\r\nHost: big\.example\r\n[\s\S]*\r\n\r\nHTTP\/1\.1 200 OK\r\n[\s\S]*\r\nContent-Length: 1073741824\r\n[\s\S]*\r\n\r\n$/,
    'the record head',
  );
  // Live, or via the spool when the archive stub fell behind (2 cores shared by the client, the content server,
  // the stub and the proxy): the live PUT was cut and the spool tee, read no faster than the disk writes, carried it.
  t.ok(after.peak < 150 * MiB, `peak RSS of the proxy ${(after.peak / MiB).toFixed(1)} MiB < 150 MiB`);
  t.comment(
    `1 GiB through the proxy in ${seconds.toFixed(1)} s (${(total / MiB / seconds).toFixed(0)} MiB/s); proxy RSS at start ${(before.rss / MiB).toFixed(1)} MiB, ` +
      `sampled max ${(sampledMax / MiB).toFixed(1)} MiB, peak (VmHWM) ${(after.peak / MiB).toFixed(1)} MiB; captured via ${via}`,
  );
});

t.test('a client that stops reading: the proxy stops reading from the content server (no unbounded buffering); the capture is whole', async (t) => {
  const total = 256 * MiB;
  const upstream = await startGeneratingUpstream(t, total);
  const archive = await startCountingArchive(t);
  const { proxy } = await startTestProxy(t, { 'a.yaml': vhostYaml({ server_name: 'slow.example', upstream: upstream.url, ArchivePort: archive.port }) });
  const captured = once(proxy.events, 'capture');
  const req = http.request({ host: '127.0.0.1', port: proxy.address.port, path: '/big', headers: { Host: 'slow.example' }, agent: false });
  req.end();
  const [res] = (await once(req, 'response')) as [http.IncomingMessage];
  let read = 0;
  let paused = false;
  const hash = createHash('sha256');
  const onData = (c: Buffer) => {
    read += c.length;
    hash.update(c);
    if (read >= MiB && !paused) {
      paused = true;
      res.pause(); // the client stops reading after 1 MiB
    }
  };
  res.on('data', onData);
  // Wait until the content server is blocked on backpressure and stays blocked (10 checks in a row, 50 ms apart).
  let still = 0;
  let last = -1;
  await waitFor(
    'the content server to be held back',
    async () => {
      await new Promise((r) => setTimeout(r, 50));
      still = upstream.state.waiting && upstream.state.written === last ? still + 1 : 0;
      last = upstream.state.written;
      return still >= 10 || upstream.state.ended;
    },
    60_000,
  );
  t.notOk(upstream.state.ended, 'the content server has not been able to send it all');
  const ahead = upstream.state.written - read;
  t.ok(
    ahead < 64 * MiB,
    `the content server is only ${(ahead / MiB).toFixed(1)} MiB ahead of the client (socket and stream buffers), not ${((total - read) / MiB).toFixed(1)} MiB`,
  );
  t.comment(`slow client: read ${(read / MiB).toFixed(1)} MiB, content server held at ${(upstream.state.written / MiB).toFixed(1)} MiB`);
  res.resume();
  await once(res, 'end');
  t.equal(read, total, 'then the client gets it all');
  t.equal(hash.digest('hex'), upstream.state.sha256);
  const [o] = (await captured) as [CaptureOutcome];
  t.equal(o.outcome, 'stored', 'and the archive has the capture');
  t.equal(archive.puts[0].bodyBytes, total);
  t.equal(archive.puts[0].bodySha256, upstream.state.sha256, 'whole');
});
