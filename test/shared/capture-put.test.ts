/**
 * The one capture-PUT client (shared/capture-put.ts), against a plain HTTP
 * server standing in for the archive: what it sends (PUT, chunked, the
 * token, the sender's fields, the body whole) and how it reads the answer
 * (Location, ETag, Archive-Revisit-After, Archive-Capture; a 201 or 200
 * without Archive-Capture read as new or duplicate; an early refusal
 * counts; an archive that cannot be reached is one clear error).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import t, { type Test } from 'tap';
import { type CaptureAnswer, mementoOfLocation, type PutTarget, sendCapture } from '#shared/capture-put.js';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A server on 127.0.0.1 port 0 that answers each PUT with `answer(seen)` once its body is read (or before reading it, with `early`). */
async function archive(
  t: Test,
  answer: (seen: Seen) => { status: number; headers?: Record<string, string>; text: string },
  early = false,
): Promise<{ target: (path: string) => PutTarget; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    const s: Seen = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: '' };
    const reply = () => {
      const a = answer(s);
      res.writeHead(a.status, { 'Content-Type': 'text/plain', ...a.headers });
      res.end(a.text);
    };
    if (early) {
      // Answered at once, the body then read and dropped (as the archive does before it closes), so that no reset can cut the answer.
      seen.push(s);
      reply();
      return void req.resume();
    }
    req.setEncoding('latin1');
    req.on('data', (d: string) => (s.body += d));
    req.on('end', () => {
      seen.push(s);
      reply();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  return { target: (path) => ({ host: '127.0.0.1', port, path }), seen };
}

const LOCATION = 'http://127.0.0.1:8090/current/memento/20260101100000/http://www.example.org/a';

t.test('sendCapture: a chunked PUT with the token and fields; the answer read into one shape', async (t) => {
  const a = await archive(t, () => ({
    status: 201,
    headers: { Location: LOCATION, ETag: '"sha256:ab;200;text/html"', 'Archive-Revisit-After': 'Fri, 02 Jan 2026 10:00:00 GMT', 'Archive-Capture': 'revisit' },
    text: LOCATION + '\n',
  }));
  const body = Readable.from([Buffer.from('GET /a HTTP/1.1\r\n'), Buffer.from('rest of the record')]);
  const answer = await sendCapture(a.target('/put/http://www.example.org/a'), body, {
    token: 's3cret',
    headers: { 'Memento-Datetime': 'Thu, 01 Jan 2026 10:00:00 GMT' },
  });
  t.same(answer, {
    status: 201,
    firstLine: LOCATION,
    complete: true,
    location: LOCATION,
    etag: '"sha256:ab;200;text/html"',
    revisitAfter: Date.parse('2026-01-02T10:00:00Z') / 1000,
    capture: 'revisit',
  } satisfies CaptureAnswer);
  const [s] = a.seen;
  t.equal(s.method, 'PUT');
  t.equal(s.url, '/put/http://www.example.org/a');
  t.equal(s.headers['transfer-encoding'], 'chunked');
  t.equal(s.headers.authorization, 'Bearer s3cret');
  t.equal(s.headers['memento-datetime'], 'Thu, 01 Jan 2026 10:00:00 GMT');
  t.equal(s.headers.connection, 'close', 'without an agent: a connection of its own');
  t.equal(s.body, 'GET /a HTTP/1.1\r\nrest of the record', 'the body whole');
  t.same(mementoOfLocation(answer.location), { archiveId: 'current', datetime: Date.parse('2026-01-01T10:00:00Z') / 1000, uriR: 'http://www.example.org/a' });
  t.equal(mementoOfLocation('http://127.0.0.1/current/timemap/link/x'), null, 'not a URI-M: null');
});

t.test('an archive that does not say Archive-Capture: 201 is new, 200 a duplicate; an unknown value is read the same', async (t) => {
  const answers: { status: number; headers: Record<string, string>; text: string }[] = [
    { status: 201, headers: { Location: LOCATION }, text: '' },
    { status: 200, headers: { Location: LOCATION }, text: '' },
    { status: 201, headers: { Location: LOCATION, 'Archive-Capture': 'something else' }, text: '' },
  ];
  const a = await archive(t, () => answers.shift()!);
  const put = () => sendCapture(a.target('/put/x'), Readable.from([Buffer.from('x')]));
  t.equal((await put()).capture, 'new');
  t.equal((await put()).capture, 'duplicate');
  t.equal((await put()).capture, 'new');
});

t.test('a refusal sent before the body is read counts; no Archive-Capture on it', async (t) => {
  const a = await archive(t, () => ({ status: 413, text: 'capture record of 99 bytes is larger than the limit of 10 bytes\n' }), true);
  const big = Readable.from(
    (function* () {
      for (let i = 0; i < 64; i++) yield Buffer.alloc(64 * 1024, 'x');
    })(),
  );
  const answer = await sendCapture(a.target('/put/x'), big);
  t.equal(answer.status, 413);
  t.equal(answer.firstLine, 'capture record of 99 bytes is larger than the limit of 10 bytes');
  t.equal(answer.capture, undefined);
});

t.test('an archive that cannot be reached: one line naming it', async (t) => {
  // A port that was just free: listened on, then closed.
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  const put = sendCapture({ host: '127.0.0.1', port, path: '/put/x' }, Readable.from([Buffer.from('x')]), { peer: `the daemon at http://127.0.0.1:${port}` });
  await t.rejects(put, { message: new RegExp(`^cannot reach the daemon at http://127\\.0\\.0\\.1:${port}: `) });
});
