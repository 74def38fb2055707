/**
 * The fast path of the TimeGate and Memento reads (archive/http/fast-path.ts)
 * answers exactly as fastify's routes do. Two daemons hold the same
 * captures, one with the fast path and one without; every request of a
 * list that covers what the two routes answer (each form of a memento,
 * Prefer, Accept-Datetime, HEAD, a timestamp that is not stored, a period,
 * the reader's time, 404s and 451s, a browser's "Not archived" page, a
 * malformed address, a remote archive, a body too large to keep) gets the
 * same status, header lines (names in the same case, same order) and body
 * bytes from both, the first time and the second (a kept answer). The
 * fast path must also answer the hot ones itself, and count them.
 */
import http from 'node:http';
import t from 'tap';
import { seed, ts14 } from '../../conformance/helpers.js';
import { captureRecord, putCapture, startArchive, type TestArchive } from '../../helpers/archive.js';

const DATES = ['Mon, 01 Jan 2001 00:00:00 GMT', 'Fri, 01 Jun 2001 12:00:00 GMT', 'Sat, 01 Dec 2001 00:00:00 GMT'];
const YAML = `archives:
  - id: far
    until: 1990-01-01T00:00:00Z
    timegate: http://127.0.0.1:9/far/timegate/
  - id: "2025"
    from: 1990-01-01T00:00:00Z
    until: 2026-01-01T00:00:00Z
  - id: current
    from: 2026-01-01T00:00:00Z
access:
  - url: http://www.example.org/excluded*
    action: exclude
  - url: http://www.example.org/blocked*
    action: block
`;

interface Raw {
  status: number;
  lines: [string, string][];
  body: Buffer;
}

/** One request as sent (Host fixed, so both daemons have the same base URL); the answer's header lines as received. */
function raw(port: number, target: string, method: string, headers: Record<string, string>): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: target, headers: { host: 'archive.test', ...headers }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const lines: [string, string][] = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2) lines.push([res.rawHeaders[i]!, res.rawHeaders[i + 1]!]);
        // A page's nonce is new in each answer, and a request without Host gets the daemon's own address as its base:
        // the same text with another nonce or port is the same answer.
        const nonce = (x: string) =>
          x
            .replace(/nonce-[A-Za-z0-9_-]+/g, 'nonce-N')
            .replace(/nonce="[A-Za-z0-9_-]+"/g, 'nonce="N"')
            .replace(/127\.0\.0\.1:\d+/g, '127.0.0.1:PORT');
        resolve({
          status: res.statusCode!,
          lines: lines.filter(([k]) => !/^(date|connection|keep-alive)$/i.test(k)).map(([k, v]) => [k, nonce(v)]),
          body: Buffer.from(nonce(Buffer.concat(chunks).toString('latin1')), 'latin1'),
        });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

async function seeded(fastPath: boolean): Promise<TestArchive> {
  const a = await startArchive(YAML, { server: { fastPath } });
  for (const u of ['http://www.example.org/page?x=1', 'http://www.example.org/excluded/a', 'http://www.example.org/blocked/a'])
    for (const d of DATES) await seed(a, u, d);
  // An image with a stored Refresh (Preference-Applied differs by form), and a page too large to keep (over 64 KiB).
  const image = captureRecord({
    host: 'www.example.org',
    target: '/img.png',
    date: DATES[0],
    responseHeaders: [
      ['Content-Type', 'image/png'],
      ['Refresh', '5; url=http://www.example.org/next'],
    ],
    body: Buffer.from('\x89PNG not really'),
  });
  if ((await putCapture(a, 'http://www.example.org/img.png', image)).status !== 201) throw new Error('image not stored');
  const big = captureRecord({ host: 'www.example.org', target: '/big', date: DATES[0], body: `<html><body>${'x'.repeat(100_000)}</body></html>` });
  if ((await putCapture(a, 'http://www.example.org/big', big)).status !== 201) throw new Error('big page not stored');
  return a;
}

t.test('the fast path answers every TimeGate and Memento read as the routes do', async (t) => {
  const fast = await seeded(true);
  t.teardown(() => fast.close());
  const slow = await seeded(false);
  t.teardown(() => slow.close());
  t.ok(fast.app.fastPath, 'the daemon has a fast path');
  t.equal(slow.app.fastPath, undefined, 'the other has none');
  // Each daemon's reads of the reader: the fast path asks it no more often than the routes do (an answer it leaves to
  // fastify — an error, a page, a body that streams — is sent by the route, not read again).
  const reads = [fast, slow].map((a) => {
    const n = { count: 0 };
    for (const m of ['timegate', 'memento'] as const) {
      const read = a.app.reader[m].bind(a.app.reader) as (q: never) => Promise<unknown>;
      (a.app.reader as unknown as Record<string, unknown>)[m] = (q: never) => (n.count++, read(q));
    }
    return n;
  });
  const u = 'http://www.example.org/page?x=1';
  const [t0, t1] = [ts14(DATES[0]), ts14(DATES[1])];
  const html = { accept: 'text/html,application/xhtml+xml' };
  const cases: [string, Record<string, string>][] = [
    [`/2025/timegate/${u}`, {}],
    [`/2025/timegate/${u}`, { 'accept-datetime': DATES[0] }],
    [`/2025/timegate/${u}`, { 'accept-datetime': 'Sat, 01 Dec 2001 00:00:01 GMT' }],
    [`/2025/timegate/${u}`, { 'accept-datetime': 'yesterday' }],
    [`/2025/timegate/${u}`, { 'accept-datetime': '' }],
    [`/2025/timegate/${u}`, { prefer: 'original-content' }],
    [`/2025/timegate/${u}`, { prefer: 'original-links, echo-original-headers' }],
    [`/2025/timegate/http://www.example.org/img.png`, { prefer: 'echo-original-headers' }],
    [`/2025/timegate/http%3A%2F%2Fwww.example.org%2Fpage%3Fx%3D1`, {}],
    [`/2025/timegate/www.example.org/page?x=1`, {}],
    [`/2025/timegate/http://www.example.org/never`, {}],
    [`/2025/timegate/http://www.example.org/never`, html],
    [`/2025/timegate/http://www.example.org/excluded/a`, {}],
    [`/2025/timegate/http://www.example.org/blocked/a`, {}],
    [`/2025/timegate/http://www.example.org/blocked/a`, html],
    [`/2025/timegate/ftp://x`, {}],
    [`/current/timegate/${u}`, {}],
    [`/far/timegate/${u}`, {}],
    [`/nowhere/timegate/${u}`, {}],
    [`/2025/memento/${t1}/${u}`, {}],
    [`/2025/memento/${t1}id_/${u}`, {}],
    [`/2025/memento/${t1}ol_/${u}`, {}],
    [`/2025/memento/${t1}im_/${u}`, {}],
    [`/2025/memento/${t1}/${u}`, { prefer: 'original-content' }],
    [`/2025/memento/${t1}/${u}`, { prefer: 'original-content, original-links, echo-original-headers' }],
    [`/2025/memento/${t0}id_/http://www.example.org/img.png`, { prefer: 'echo-original-headers' }],
    [`/2025/memento/20010301000000/${u}`, {}],
    [`/2025/memento/20010301000000if_/${u}`, {}],
    [`/2025/memento/2001/${u}`, {}],
    [`/2025/memento/20010101000000/${u}`, html],
    [`/2025/memento/${t0}/http://www.example.org/never`, {}],
    [`/2025/memento/${t0}/http://www.example.org/never`, html],
    [`/2025/memento/${t0}/http://www.example.org/excluded/a`, {}],
    [`/2025/memento/${t0}/http://www.example.org/blocked/a`, {}],
    [`/2025/memento/${t0}/http://www.example.org/big`, {}],
    [`/2025/memento/${t0}id_/http://www.example.org/big`, {}],
    [`/2025/memento/2001x/${u}`, {}],
    [`/2025/memento/${u}`, {}],
    [`/2025/memento/%32001/${u}`, {}],
    [`/2025/memento/${t1}/${u}`, { host: '' }],
  ];
  for (const [target, headers] of cases) {
    for (const method of ['GET', 'HEAD', 'GET']) {
      const what = `${method} ${target} ${JSON.stringify(headers)}`;
      const [a, b] = await Promise.all([raw(fast.port, target, method, headers), raw(slow.port, target, method, headers)]);
      t.equal(a.status, b.status, `${what}: status ${b.status}`);
      t.same(a.lines, b.lines, `${what}: the same header lines, same case and order`);
      t.ok(a.body.equals(b.body), `${what}: the same body bytes`);
    }
  }
  t.equal(reads[0]!.count, reads[1]!.count, `the reader was asked as often with the fast path as without (${reads[1]!.count})`);
  t.ok(fast.app.fastPath!.answered >= 60, `the fast path answered the hot reads itself (${fast.app.fastPath!.answered})`);
  const metric = (m: string) => Number(/memento_archive_requests_total\{resource="timegate",status="302"\} (\d+)/.exec(m)?.[1] ?? 0);
  const counts = await Promise.all([fast, slow].map(async (a) => metric(await (await fetch(`${a.url}/metrics`)).text())));
  t.equal(counts[0], counts[1], `both count the TimeGate's 302s alike (${counts[1]})`);
});

t.test('while the daemon closes, every read goes to fastify (which answers 503 once it has begun to close)', async (t) => {
  const a = await seeded(true);
  const port = a.port;
  const before = a.app.fastPath!.answered;
  a.app.fastPath!.closing = true;
  const r = await raw(port, '/2025/timegate/http://www.example.org/page?x=1', 'GET', {});
  t.equal(r.status, 302, 'answered by the route');
  t.equal(a.app.fastPath!.answered, before, 'not by the fast path');
  await a.close();
});
