/**
 * Issue 2, part 3: the capture PUT as a capture proxy uses it — what the
 * archive answers, what lands in the WARC files and the index, and how the
 * new memento is then served.
 */
import t from 'tap';
import { captureRecord, putCapture, request, startArchive } from '../helpers/archive.js';
import { warcBytes, warcRecords } from './helpers.js';

t.test('a chunked capture PUT answers 201 with the URI-M; the URI-R comes from Host + target, the datetime from Date', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const body = '<html><head><title>Old page</title></head><body>hello 2001</body></html>';
  const record = captureRecord({
    host: 'Legacy.Example.org',
    target: '/news/page.html?id=7',
    requestHeaders: [
      ['User-Agent', 'test'],
      ['X-Client-IP', '192.0.2.7'],
    ],
    date: 'Tue, 20 Mar 2001 20:35:00 GMT',
    body,
  });
  // The PUT URL names another URL on purpose: the embedded request wins.
  const put = await putCapture(a, 'http://not-this.example/', record);
  t.equal(put.status, 201, put.text);
  const uriM = `${a.url}/2025/memento/20010320203500/http://legacy.example.org/news/page.html?id=7`;
  t.equal(put.headers.location, uriM, 'Location is the URI-M in the archive whose span holds 2001');
  t.match(put.text, uriM);

  const rows = await a.store.index.page('2025', 'org,example,legacy)/news/page.html?id=7', -Infinity, 10);
  t.equal(rows.length, 1, 'one index row');
  t.equal(rows[0].client_ip, '192.0.2.7', 'X-Client-IP is stored with the memento');
  t.equal(rows[0].status, 200);
  t.equal(rows[0].mime, 'text/html');

  const m = await request(uriM);
  t.equal(m.status, 200);
  t.equal(m.headers['memento-datetime'], 'Tue, 20 Mar 2001 20:35:00 GMT');
  t.equal(
    m.text,
    body.replace('<head>', `<head><script src="${a.url}/_static/replay.js" data-memento-datetime="20010320203500"></script>`),
    'the replay: the replay script first in the head',
  );
  t.notOk('x-archive-orig-x-client-ip' in m.headers, 'the client address is not replayed as a header');

  const recs = await warcRecords(a.dataDir, '2025');
  t.same(
    recs.map((r) => r.type),
    ['warcinfo', 'response', 'request'],
    'a warcinfo, then the response + request record pair',
  );
  const [, res, req] = recs;
  t.equal(res.target, 'http://legacy.example.org/news/page.html?id=7');
  t.equal(res.headers.get('warc-date'), '2001-03-20T20:35:00Z');
  t.equal(req.headers.get('warc-concurrent-to'), res.headers.get('warc-record-id'), 'the request names its response');
  t.ok(
    res.block.toString('latin1').startsWith('HTTP/1.1 200 OK\r\nDate: Tue, 20 Mar 2001 20:35:00 GMT\r\n'),
    'the response block is the captured response head',
  );
  t.ok(res.block.subarray(res.block.length - Buffer.byteLength(body)).equals(Buffer.from(body)), 'followed by the captured body bytes');
  t.ok(
    req.block.toString('latin1').startsWith('GET /news/page.html?id=7 HTTP/1.1\r\nHost: Legacy.Example.org\r\n'),
    'the request block is the captured request',
  );
});

t.test('Content-Length PUT; no Date → receipt time; archive by span; the same capture again is a duplicate (200, same URI-M)', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const before = Math.floor(Date.now() / 1000);
  const first = await putCapture(a, 'http://www.example.org/a', captureRecord({ target: '/a', date: null, body: 'v1' }), { chunked: false });
  const after = Math.floor(Date.now() / 1000);
  t.equal(first.status, 201, first.text);
  const m = /\/current\/memento\/(\d{14})\/http:\/\/www\.example\.org\/a$/.exec(String(first.headers.location));
  t.ok(m, `receipt time ${new Date().getUTCFullYear()} goes to the "current" archive: ${first.headers.location}`);
  const ts = m![1];
  const secs = Date.UTC(+ts.slice(0, 4), +ts.slice(4, 6) - 1, +ts.slice(6, 8), +ts.slice(8, 10), +ts.slice(10, 12), +ts.slice(12, 14)) / 1000;
  t.ok(secs >= before && secs <= after, 'the Memento-Datetime is the time the archive received the PUT');

  const dated = (d: string, body: string) => captureRecord({ target: '/b', date: d, body, responseHeaders: [['Content-Type', 'text/plain']] });
  const b1 = await putCapture(a, 'http://www.example.org/b', dated('Mon, 05 Jan 2026 10:00:00 GMT', 'same'));
  t.equal(b1.status, 201);
  const bytesAfterFirst = await warcBytes(a.dataDir);
  const b2 = await putCapture(a, 'http://www.example.org/b', dated('Mon, 05 Jan 2026 22:00:00 GMT', 'same'));
  t.equal(b2.status, 200, 'same digest, status and type as the newest memento: no new memento (within revisit_interval, a day)');
  t.equal(b2.headers.location, b1.headers.location, 'the duplicate answers with the existing URI-M');
  t.equal(await warcBytes(a.dataDir), bytesAfterFirst, 'a duplicate writes nothing to the WARC files');
  const b3 = await putCapture(a, 'http://www.example.org/b', dated('Wed, 07 Jan 2026 10:00:00 GMT', 'changed'));
  t.equal(b3.status, 201, 'a changed body is a new memento');
  t.equal(b3.headers.location, `${a.url}/current/memento/20260107100000/http://www.example.org/b`);
  const b4 = await putCapture(
    a,
    'http://www.example.org/b',
    captureRecord({
      target: '/b',
      date: 'Thu, 08 Jan 2026 10:00:00 GMT',
      body: 'changed',
      status: 404,
      reason: 'Not Found',
      responseHeaders: [['Content-Type', 'text/plain']],
    }),
  );
  t.equal(b4.status, 201, 'same body but another status is a new memento');

  const tm = await request(`${a.url}/current/timemap/link/http://www.example.org/b`);
  t.equal(tm.status, 200);
  t.equal(tm.text.match(/rel="[^"]*memento[^"]*"/g)?.length, 3, 'the TimeMap lists three mementos');
});

t.test('bad PUTs: 411 without a length, 400 with a one-line reason for a malformed record; nothing is stored', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());

  const noLength = await new Promise<number>((resolve, reject) => {
    // node:http always frames a body; write the PUT by hand to send neither header.
    import('node:net').then(({ connect }) => {
      const s = connect(a.port, '127.0.0.1', () => s.end(`PUT /put/http://www.example.org/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`));
      let out = '';
      s.on('data', (d) => (out += d));
      s.on('end', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(out)?.[1])));
      s.on('error', reject);
    });
  });
  t.equal(noLength, 411);

  const cases: [string, Buffer][] = [
    ['no status line', Buffer.from('GET / HTTP/1.1\r\nHost: www.example.org\r\n\r\n')],
    ['header without a colon', Buffer.from('GET / HTTP/1.1\r\nHost www.example.org\r\n\r\nHTTP/1.1 200 OK\r\n\r\nx')],
    ['no Host', Buffer.from('GET / HTTP/1.1\r\nAccept: */*\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx')],
    ['bad status code', Buffer.from('GET / HTTP/1.1\r\nHost: www.example.org\r\n\r\nHTTP/1.1 2000 OK\r\nContent-Length: 1\r\n\r\nx')],
    ['body shorter than Content-Length', captureRecord({ responseHeaders: [['Content-Length', '100']], body: 'short' })],
  ];
  for (const [what, body] of cases) {
    const r = await putCapture(a, 'http://www.example.org/', body);
    t.equal(r.status, 400, `${what}: 400`);
    t.match(r.text, /^[^\n]+\n$/, `${what}: a one-line reason (${r.text.trim()})`);
  }
  t.equal(await a.store.index.count(), 0, 'no index row');
  t.equal(await warcBytes(a.dataDir), 0, 'no WARC bytes');
  const tg = await request(`${a.url}/tg/http://www.example.org/`);
  t.equal(tg.status, 404, 'the URL has no mementos');
  const ok = await putCapture(a, 'http://www.example.org/', captureRecord());
  t.equal(ok.status, 201, 'the archive still takes good captures');
});
