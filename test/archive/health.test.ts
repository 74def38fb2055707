/**
 * `/healthz` says what a load balancer needs (archive/health.ts): 503
 * naming the problem while the WARC store cannot be reached (s3rver
 * stopped; an endpoint whose name does not resolve; a bucket that does
 * not exist), 200 with a line per
 * check otherwise; and a capture PUT that the store cannot take because
 * its name does not resolve is a 503 with `Retry-After`, never a 500.
 *
 * The name that does not resolve is `s3.invalid`: the test's own
 * `dns.lookup` answers ENOTFOUND for `.invalid` names (RFC 6761) without
 * asking any resolver, so that no DNS query leaves this host (the system
 * resolver would send one to its name server); the daemon's S3 client
 * looks names up through it, as through the system's.
 */
import dns from 'node:dns';
import t from 'tap';
import { captureRecord, putCapture, request, startArchive, type TestArchive, TWO_ARCHIVES } from '../helpers/archive.js';
import { startS3 } from '../helpers/s3.js';

const JAN1 = 'Thu, 01 Jan 2026 00:00:00 GMT';

/** Asks `/healthz` until `done` holds for its answer (the outcome is kept a second), at most 30 s; that answer. */
async function healthUntil(a: TestArchive, done: (status: number) => boolean) {
  const end = performance.now() + 30_000;
  for (;;) {
    const r = await request(`${a.url}/healthz`);
    if (done(r.status) || performance.now() > end) return r;
    await new Promise((res) => setImmediate(res));
  }
}

t.test('S3 store stopped: /healthz 503 naming the store; PUTs and reads 503; 200 again is not claimed while it is down', async (t) => {
  const s3 = await startS3();
  t.teardown(() => s3.close());
  const a = await startArchive(TWO_ARCHIVES + s3.storageYaml('archive/', 'r1'));
  t.teardown(() => a.close());
  const ok = await request(`${a.url}/healthz`);
  t.equal(ok.status, 200);
  t.equal(ok.text, 'ok\nindex: ok\nwarcs: ok\nlog: ok\n');
  t.equal((await putCapture(a, '', captureRecord({ target: '/one', date: JAN1 }))).status, 201);
  await s3.stop();
  const down = await healthUntil(a, (s) => s !== 200);
  t.equal(down.status, 503, 'unhealthy while the store is down');
  t.match(down.text, new RegExp(`^index: ok\\nwarcs: the WARC store s3://${s3.bucket}/archive/ cannot be reached: .+\\nlog: ok\\n$`));
  t.equal(down.headers['cache-control'], 'no-store');
  const put = await putCapture(a, '', captureRecord({ target: '/two', date: JAN1 }));
  t.equal(put.status, 503);
  t.equal(put.headers['retry-after'], '5');
  t.equal((await request(`${a.url}/current/memento/20260101000000id_/http://www.example.org/one`)).status, 503, 'a read: 503');
});

t.test('an S3 endpoint whose name does not resolve: PUT 503 with Retry-After (not 500), /healthz 503 naming the store', async (t) => {
  const asked: string[] = [];
  const systemLookup = dns.lookup;
  // ENOTFOUND for .invalid names, as a resolver that knows RFC 6761 answers, without a query leaving the host.
  dns.lookup = ((host: string, opts: unknown, cb?: unknown) => {
    const callback = (typeof opts === 'function' ? opts : cb) as (err: NodeJS.ErrnoException | null, address?: string, family?: number) => void;
    if (String(host).endsWith('.invalid')) {
      asked.push(host);
      const err = Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND', errno: -3008, syscall: 'getaddrinfo', hostname: host });
      process.nextTick(callback, err);
      return;
    }
    return (systemLookup as (...args: unknown[]) => void)(host, opts, cb);
  }) as typeof dns.lookup;
  t.teardown(() => void (dns.lookup = systemLookup));
  const storage = `storage:\n  warcs: s3://warcs/archive/\n  s3:\n    endpoint: http://s3.invalid:9000\n    force_path_style: true\n  replica: r1\n`;
  const a = await startArchive(TWO_ARCHIVES + storage);
  t.teardown(() => a.close());
  const put = await putCapture(a, '', captureRecord({ target: '/dns', date: JAN1 }));
  t.equal(put.status, 503, 'the capture is not acknowledged, and the sender is told to come back');
  t.equal(put.headers['retry-after'], '5');
  t.match(put.text, /^the WARC store s3:\/\/warcs\/archive\/ could not be listed: .*ENOTFOUND s3\.invalid/);
  t.equal(await a.store.index.count(), 0, 'no index row');
  const h = await healthUntil(a, (s) => s !== 200);
  t.equal(h.status, 503);
  t.match(h.text, /^index: ok\nwarcs: the WARC store s3:\/\/warcs\/archive\/ cannot be reached: .*ENOTFOUND s3\.invalid.*\nlog: ok\n$/);
  t.ok(asked.includes('s3.invalid'), 'the daemon looked the name up (and no query left the host)');
});

t.test('a bucket that does not exist: PUT 503 with Retry-After, /healthz 503 saying so', async (t) => {
  const s3 = await startS3();
  t.teardown(() => s3.close());
  const a = await startArchive(TWO_ARCHIVES + s3.storageYaml('archive/', 'r1').replace(`s3://${s3.bucket}/`, 's3://no-such-bucket/'));
  t.teardown(() => a.close());
  const put = await putCapture(a, '', captureRecord({ target: '/nobucket', date: JAN1 }));
  t.equal(put.status, 503);
  t.equal(put.headers['retry-after'], '5');
  t.match(put.text, /^the WARC store s3:\/\/no-such-bucket\/archive\/ could not be listed: NoSuchBucket/);
  const h = await healthUntil(a, (s) => s !== 200);
  t.equal(h.status, 503);
  t.match(h.text, /^warcs: the WARC store s3:\/\/no-such-bucket\/archive\/ cannot be reached: the bucket does not exist$/m);
});
