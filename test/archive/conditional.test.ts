/**
 * Conditional capture PUTs (issue 14): `If-None-Match` with a capture's
 * entity tag (digest;status;media type) and `Expect: 100-continue`. The
 * archive answers 412 before any of the body is sent when the memento the
 * capture would follow has that tag, and otherwise asks for the body and
 * stores it as any PUT: the answer is always the one its dedup would give.
 * Who may PUT is checked first. The connection stays usable after a 412
 * (chunked: the client ends the body with its last chunk), and plain PUTs
 * with `Connection: close` keep working.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import { Readable } from 'node:stream';
import t, { type Test } from 'tap';
import { captureEntityTag } from '#shared/capture-tag.js';
import { rawConnection } from '../helpers/raw-connection.js';
import { captureRecord, putCapture, request, startArchive, type TestArchive, TWO_ARCHIVES } from '../helpers/archive.js';

const D1 = 'Tue, 20 Oct 2026 10:00:00 GMT';
const D2 = 'Tue, 20 Oct 2026 10:00:05 GMT';
const PAGE_A = '<html><body>A</body></html>';
const PAGE_B = '<html><body>B</body></html>';
const URI = 'http://www.example.org/page';

const sha256 = (s: string | Buffer) => 'sha256:' + createHash('sha256').update(s).digest('hex');
/** The tag of a capture made by captureRecord (Content-Type text/html; charset=utf-8 unless told). */
const tagOf = (body: string, status = 200, mime = 'text/html') => captureEntityTag({ digest: sha256(body), status, mime });
const record = (body: string, date: string, extra: Partial<Parameters<typeof captureRecord>[0]> = {}) =>
  captureRecord({ host: 'www.example.org', target: '/page', date, body, ...extra });

/** A raw connection to the archive (test/helpers/raw-connection.ts) that sends as the test goes. */
async function rawClient(t: Test, port: number) {
  const c = await rawConnection(t, port, '');
  return { ...c, send: (s: string | Buffer) => c.socket.write(s) };
}

/** `n` bytes as one HTTP/1.1 chunk. */
const chunk = (b: Buffer) => `${b.length.toString(16)}\r\n${b.toString('latin1')}\r\n`;

/** The head of a conditional capture PUT for {@link URI}. */
function conditionalHead(port: number, tag: string, extra: string[] = [], framing = 'Transfer-Encoding: chunked'): string {
  return [`PUT /put/${URI} HTTP/1.1`, `Host: 127.0.0.1:${port}`, framing, 'Expect: 100-continue', `If-None-Match: ${tag}`, ...extra, '', ''].join('\r\n');
}

/**
 * A conditional PUT with node:http as the capture proxy makes it: the body
 * only on `100 Continue`; a 412 ends the request with its last chunk.
 * Returns the status, whether the body was asked for, and the answer's headers.
 */
function conditionalPut(
  a: TestArchive,
  uriR: string,
  body: Buffer,
  tag: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; continued: boolean; headers: http.IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    let continued = false;
    const req = http.request({
      host: '127.0.0.1',
      port: a.port,
      method: 'PUT',
      path: `/put/${uriR}`,
      agent: false,
      headers: { 'Transfer-Encoding': 'chunked', Expect: '100-continue', 'If-None-Match': tag, ...headers },
    });
    req.on('continue', () => {
      continued = true;
      req.end(body);
    });
    req.on('response', (res) => {
      if (!continued) req.end();
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, continued, headers: res.headers, text }));
    });
    req.on('error', reject);
    req.flushHeaders();
  });
}

t.test('412 before the body is sent when the memento the capture would follow has its tag (RFC 9110 §13.1.2); the connection goes on', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  let connections = 0;
  a.app.server.on('connection', () => connections++);
  const first = await putCapture(a, URI, record(PAGE_A, D1));
  t.equal(first.status, 201, first.text);
  const before = connections;

  const c = await rawClient(t, a.port);
  c.send(conditionalHead(a.port, tagOf(PAGE_A), [`Memento-Datetime: ${D2}`]));
  await c.until(/\r\n\r\nunchanged[^\n]*\n/);
  const answer = c.received();
  t.match(answer, /^HTTP\/1\.1 412 Precondition Failed\r\n/, '412, and no 100 Continue before it: no body was asked for');
  t.match(answer, new RegExp(`\r\nETag: ${tagOf(PAGE_A).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\r\n`, 'i'), 'ETag: the tag of the memento it matched');
  t.match(answer, new RegExp(`\r\ncontent-location: ${first.headers.location}\r\n`, 'i'), 'Content-Location: its URI-M');
  t.match(answer, /\r\nconnection: keep-alive\r\n/i, 'the connection stays open');
  t.match(answer, /\r\n\r\nunchanged: the memento \S+ has the same payload digest, status and media type; nothing stored\n$/, 'one line saying so');

  // The request ends with its (empty) last chunk; then the next PUT on the same connection, which differs.
  c.clear();
  c.send('0\r\n\r\n' + conditionalHead(a.port, tagOf(PAGE_B), [`Memento-Datetime: ${D2}`]));
  await c.until(/^HTTP\/1\.1 100 Continue\r\n\r\n/);
  c.send(chunk(record(PAGE_B, D2)) + '0\r\n\r\n');
  await c.until(/HTTP\/1\.1 201 Created\r\n[\s\S]*\r\n\r\n\S+\n$/);
  t.pass('a different capture: 100 Continue, then stored (201) on the same connection');
  t.equal(connections - before, 1, 'one connection for both');
  t.equal(await a.store.index.count(), 2, 'A and B are in the index, A once');
  const metrics = await request(`${a.url}/metrics`);
  t.match(metrics.text, /memento_archive_captures_total\{result="unchanged"\} 1\n/, 'counted as unchanged');
});

t.test('a body sent anyway (the client did not wait for 100 Continue) is read and dropped after a 412', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  t.equal((await putCapture(a, URI, record(PAGE_A, D1))).status, 201);
  const c = await rawClient(t, a.port);
  c.send(conditionalHead(a.port, tagOf(PAGE_A), [`Memento-Datetime: ${D2}`]) + chunk(record(PAGE_A, D2)) + '0\r\n\r\n');
  await c.until(/412 Precondition Failed[\s\S]*nothing stored\n$/);
  c.clear();
  c.send(conditionalHead(a.port, tagOf(PAGE_B), [`Memento-Datetime: ${D2}`]));
  await c.until(/^HTTP\/1\.1 100 Continue\r\n\r\n/);
  c.send(chunk(record(PAGE_B, D2)) + '0\r\n\r\n');
  await c.until(/HTTP\/1\.1 201 Created/);
  t.equal(await a.store.index.count(), 2, 'nothing of the dropped body was stored');
});

t.test('Content-Length with Expect: a 412 closes the connection (a body the client cannot cut short)', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  t.equal((await putCapture(a, URI, record(PAGE_A, D1))).status, 201);
  const body = record(PAGE_A, D2);
  const c = await rawClient(t, a.port);
  c.send(conditionalHead(a.port, tagOf(PAGE_A), [`Memento-Datetime: ${D2}`], `Content-Length: ${body.length}`));
  await c.until(/nothing stored\n$/);
  t.match(c.received(), /^HTTP\/1\.1 412 [\s\S]*\r\nconnection: close\r\n/i, '412 with Connection: close');
  await c.closed;
  t.pass('the archive closed the connection');
});

t.test('the condition gives exactly the answer the dedup would: status, media type, datetime, "*", another span', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  t.equal((await putCapture(a, URI, record(PAGE_A, D1))).status, 201);

  const sameType = await conditionalPut(a, URI, record(PAGE_A, D2), tagOf(PAGE_A), { 'Memento-Datetime': D2 });
  t.match(sameType, { status: 412, continued: false }, 'same digest, status and media type: 412, no body sent');
  t.equal((await putCapture(a, URI, record(PAGE_A, D2))).status, 200, '… as the dedup says of the same capture (200, nothing stored)');

  const plain = record(PAGE_A, D2, { responseHeaders: [['Content-Type', 'text/plain']] });
  const otherType = await conditionalPut(a, URI, plain, tagOf(PAGE_A, 200, 'text/plain'), { 'Memento-Datetime': D2 });
  t.match(otherType, { status: 201, continued: true }, 'another media type: asked for the body, stored');

  const gone = record(PAGE_A, 'Tue, 20 Oct 2026 10:00:09 GMT', { status: 410, reason: 'Gone', responseHeaders: [['Content-Type', 'text/plain']] });
  const otherStatus = await conditionalPut(a, URI, gone, tagOf(PAGE_A, 410, 'text/plain'), { 'Memento-Datetime': 'Tue, 20 Oct 2026 10:00:09 GMT' });
  t.match(otherStatus, { status: 201, continued: true }, 'another status: stored');

  const earlier = 'Tue, 20 Oct 2026 09:00:00 GMT';
  const before = await conditionalPut(a, URI, record(PAGE_A, earlier), tagOf(PAGE_A), { 'Memento-Datetime': earlier });
  t.match(before, { status: 201, continued: true }, 'a datetime before every memento: nothing to follow, stored');

  const fresh = 'http://www.example.org/new';
  const newRecord = captureRecord({ host: 'www.example.org', target: '/new', date: D1, body: PAGE_A });
  t.match(await conditionalPut(a, fresh, newRecord, '*', { 'Memento-Datetime': D1 }), { status: 201, continued: true }, '"*" and no memento yet: stored');
  t.match(await conditionalPut(a, fresh, newRecord, '*', { 'Memento-Datetime': D2 }), { status: 412, continued: false }, '"*" once there is one: 412');
  t.match(
    await conditionalPut(a, fresh, newRecord, `"nope", W/${tagOf(PAGE_A)}`, { 'Memento-Datetime': D2 }),
    { status: 412 },
    'a list, weak tags compared weakly (RFC 9110 §8.8.3.2)',
  );

  // A memento in the 2025 archive; a capture in 2026 identical to it: the dedup looks across spans, so does the condition.
  const span = 'http://www.example.org/span';
  const old = captureRecord({ host: 'www.example.org', target: '/span', date: 'Mon, 01 Dec 2025 00:00:00 GMT', body: PAGE_B });
  const stored = await putCapture(a, span, old);
  t.match(stored.headers.location, /\/2025\/memento\//);
  const later = captureRecord({ host: 'www.example.org', target: '/span', date: D1, body: PAGE_B });
  const cross = await conditionalPut(a, span, later, tagOf(PAGE_B), { 'Memento-Datetime': D1 });
  t.match(cross, { status: 412, continued: false }, 'a duplicate of a memento in another span: 412');
  t.equal(cross.headers['content-location'], stored.headers.location, '… naming that memento');
  const dup = await putCapture(a, span, later);
  t.equal(dup.status, 200, '… as the dedup answers the same capture');
  t.equal(dup.headers.location, stored.headers.location);
});

t.test('same second: a conditional PUT of another capture passes the condition and is 409; of the stored one, 412', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const stored = await putCapture(a, URI, record(PAGE_A, D1));
  t.equal(stored.status, 201);
  const other = await conditionalPut(a, URI, record(PAGE_B, D1), tagOf(PAGE_B), { 'Memento-Datetime': D1 });
  t.match(other, { status: 409, continued: true }, 'B in the same second: the condition passes (100 Continue), then 409');
  t.equal(other.text, `conflict: a different capture of this URI-R is stored at the same second, ${stored.headers.location}; nothing stored\n`);
  const same = await conditionalPut(a, URI, record(PAGE_A, D1), tagOf(PAGE_A), { 'Memento-Datetime': D1 });
  t.match(same, { status: 412, continued: false }, 'A again in that second: 412, the body not sent');
  t.equal(await a.store.index.count(), 1, 'one memento');
  t.equal((await request(`${a.url}/current/memento/20261020100000id_/${URI}`)).text, PAGE_A, 'A is served');
});

t.test('a client not allowed to PUT gets 401 or 403, never 412', async (t) => {
  const TOKEN = 'a-token-of-at-least-16-chars';
  const a = await startArchive(`put_tokens: [${TOKEN}]\n` + TWO_ARCHIVES);
  t.teardown(() => a.close());
  const auth = { authorization: `Bearer ${TOKEN}` };
  t.equal((await putCapture(a, URI, record(PAGE_A, D1), { headers: auth })).status, 201);
  const none = await conditionalPut(a, URI, record(PAGE_A, D2), tagOf(PAGE_A), { 'Memento-Datetime': D2 });
  t.match(none, { status: 401, continued: false }, 'no token: 401 (the condition is not looked at)');
  const wrong = await conditionalPut(a, URI, record(PAGE_A, D2), tagOf(PAGE_A), { 'Memento-Datetime': D2, authorization: 'Bearer wrong-token-0123456789' });
  t.match(wrong, { status: 401, continued: false }, 'a wrong token: 401');
  const right = await conditionalPut(a, URI, record(PAGE_A, D2), tagOf(PAGE_A), { 'Memento-Datetime': D2, ...auth });
  t.match(right, { status: 412 }, 'the right token: 412');

  const closed = await startArchive(`put_allow: [127.0.0.2]\n` + TWO_ARCHIVES);
  t.teardown(() => closed.close());
  const denied = await conditionalPut(closed, URI, record(PAGE_A, D2), '*', { 'Memento-Datetime': D2 });
  t.match(denied, { status: 403, continued: false }, 'an address outside put_allow: 403');
});

t.test('a plain PUT with Connection: close still works, and so do other Expect requests', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const c = await rawClient(t, a.port);
  const body = record(PAGE_A, D1);
  c.send(`PUT /put/${URI} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`);
  c.send(body);
  await c.closed;
  t.match(c.received(), /^HTTP\/1\.1 201 Created\r\n[\s\S]*\r\nconnection: close\r\n/i, '201, then the archive closes the connection');
  t.equal(await a.store.index.count(), 1);

  // Expect without a condition (curl sends it for large bodies): the body is asked for at once.
  const curlish = record(PAGE_B, D2);
  const e = await rawClient(t, a.port);
  e.send(`PUT /put/${URI} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: ${curlish.length}\r\nExpect: 100-continue\r\n\r\n`);
  await e.until(/^HTTP\/1\.1 100 Continue\r\n\r\n$/);
  e.send(curlish);
  await e.until(/201 Created/);
  t.pass('Expect: 100-continue without a condition: 100, then 201');
  const get = await request(`${a.url}/tg/${URI}`, { headers: { expect: '100-continue' } });
  t.equal(get.status, 302, 'a GET with Expect is answered as any GET');
});

t.test('the dedup and the question of a conditional PUT agree with a model over 400 captures in and out of time order', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  // A seeded generator (mulberry32), so that a failure can be replayed.
  let seed = 0x5eed1;
  const rnd = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  const base = Date.parse('2026-10-20T10:00:00Z') / 1000;
  const pages = ['p0', 'p1', 'p2'];
  // The model: per page, datetime → body of the memento there (a different capture in the same second is refused).
  const model = new Map<string, Map<number, string>>(pages.map((p) => [p, new Map()]));
  const before = (p: string, when: number): string | undefined => {
    let best: number | undefined;
    for (const d of model.get(p)!.keys()) if (d <= when && (best === undefined || d > best)) best = d;
    return best === undefined ? undefined : model.get(p)!.get(best);
  };
  let mismatches = 0;
  for (let i = 0; i < 400; i++) {
    const page = pages[Math.floor(rnd() * pages.length)];
    // Mostly forward in time (live captures), sometimes back (a cached Date, a re-send from the spool).
    const when = base + Math.floor(rnd() < 0.8 ? i / 2 : rnd() * (i / 2 + 1));
    const body = `<html><body>${['A', 'B'][Math.floor(rnd() * 2)]}</body></html>`;
    const urlkey = `org,example,www)/${page}`;
    const expected = before(page, when);
    const asked = await a.store.predecessor(urlkey, when);
    const said = asked && (asked.digest === sha256(body) ? 'same' : 'other');
    const want = expected === undefined ? undefined : expected === body ? 'same' : 'other';
    if (said !== want) mismatches++;
    const rec = captureRecord({ host: 'www.example.org', target: `/${page}`, date: new Date(when * 1000).toUTCString(), body });
    const res = await a.store.ingest(Readable.from([rec]), new Date());
    const taken = model.get(page)!.has(when);
    if (res.created !== (expected !== body && !taken)) mismatches++;
    if (res.conflict !== (expected !== body && taken)) mismatches++;
    if (res.created) model.get(page)!.set(when, body);
  }
  t.equal(mismatches, 0, 'every answer as the model says');
  t.ok(
    a.store.stats.written > 50 && a.store.stats.duplicates > 50 && a.store.stats.conflicts > 5,
    `${a.store.stats.written} stored, ${a.store.stats.duplicates} duplicates, ${a.store.stats.conflicts} conflicts`,
  );
});

/** Epoch seconds of an HTTP-date. */
const epoch = (d: string) => String(Date.parse(d) / 1000);

t.test('POST of questions: one answer a line, in order, as a conditional PUT of each would get; nothing stored', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  t.equal((await putCapture(a, URI, record(PAGE_A, D1))).status, 201);
  const other = 'http://www.example.org/other';
  const questions = [
    `${tagOf(PAGE_A)} ${epoch(D2)} ${URI}`, // the memento it would follow is A: unchanged
    `${tagOf(PAGE_B)} ${epoch(D2)} ${URI}`, // B differs: new
    `${tagOf(PAGE_A)} ${epoch('Mon, 19 Oct 2026 10:00:00 GMT')} ${URI}`, // before A: nothing to follow: new
    `${tagOf(PAGE_A, 200, 'text/plain')} ${epoch(D2)} ${URI}`, // another media type: new
    `${tagOf(PAGE_A)} - ${URI}`, // at the time it is asked: after A: unchanged
    `${tagOf(PAGE_A)} ${epoch(D2)} ${other}`, // no memento of that URI-R: new
    `${tagOf(PAGE_A)} ${epoch(D2)} http%3A%2F%2Fwww.example.org%2Fpage`, // the URI-R percent-encoded, as a PUT address may have it
  ];
  const r = await request(`${a.url}/put/`, { method: 'POST', body: questions.join('\r\n') + '\r\n', headers: { 'content-type': 'text/plain' } });
  t.equal(r.status, 200, r.text);
  t.equal(r.text, 'unchanged\nnew\nnew\nnew\nunchanged\nnew\nunchanged\n', 'one answer per question, in order');
  t.equal(await a.store.index.count(), 1, 'nothing stored');
  const empty = await request(`${a.url}/put/`, { method: 'POST', body: '' });
  t.match(empty, { status: 200, text: '\n' }, 'no questions: no answers');
});

t.test('POST of questions: a malformed line is 400 and nothing is answered; too many is 413; who may PUT is checked first', async (t) => {
  const TOKEN = 'a-token-of-at-least-16-chars';
  const a = await startArchive(`put_tokens: [${TOKEN}]\n` + TWO_ARCHIVES);
  t.teardown(() => a.close());
  const auth = { authorization: `Bearer ${TOKEN}` };
  const good = `${tagOf(PAGE_A)} ${epoch(D2)} ${URI}`;
  const none = await request(`${a.url}/put/`, { method: 'POST', body: good + '\n' });
  t.equal(none.status, 401, 'no token: 401');
  for (const [bad, why] of [
    [`${tagOf(PAGE_A)} ${URI}`, 'no datetime'],
    [`sha256:abc;200;text/html - ${URI}`, 'a tag without quotes'],
    [`${tagOf(PAGE_A)} yesterday ${URI}`, 'a datetime that is not epoch seconds'],
    [`${tagOf(PAGE_A)} - ${URI} extra`, 'more than three parts'],
  ]) {
    const r = await request(`${a.url}/put/`, { method: 'POST', body: `${good}\n${bad}\n`, headers: auth });
    t.equal(r.status, 400, why);
    t.match(r.text, /^question 2 is not "<capture tag> <epoch seconds or -> <URI-R>"/, `${why}: names the line`);
  }
  const many = await request(`${a.url}/put/`, { method: 'POST', body: `${good}\n`.repeat(1001), headers: auth });
  t.equal(many.status, 413, 'more than 1,000 questions: 413');
  const fine = await request(`${a.url}/put/`, { method: 'POST', body: `${good}\n`.repeat(1000), headers: auth });
  t.equal(fine.status, 200, '1,000 questions are answered');
  t.equal(fine.text, 'new\n'.repeat(1000));

  const closed = await startArchive(`put_allow: [127.0.0.2]\n` + TWO_ARCHIVES);
  t.teardown(() => closed.close());
  t.equal((await request(`${closed.url}/put/`, { method: 'POST', body: good + '\n' })).status, 403, 'an address outside put_allow: 403');
});
