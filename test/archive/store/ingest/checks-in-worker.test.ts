/**
 * A capture record that arrives whole in memory (at most whole-capture.ts
 * `WHOLE_BYTES`) is parsed, checked and hashed in the ingest pool's thread
 * (the `capture-checks` task); a larger one on the event loop as it
 * streams. Both give the same WARC records and digests, and the same
 * refusals (status, reason) for the same bad heads, with nothing stored;
 * a thread that dies while it checks a batch fails that batch's PUTs with
 * a 503 and stores nothing; the next PUT is stored.
 */
import { createHash, randomBytes } from 'node:crypto';
import t from 'tap';
import { StreamedCapture } from '../../../../archive/store/ingest/streamed-capture.js';
import { checkPacked, packRecords, type RecordLimits, WHOLE_BYTES } from '../../../../archive/store/ingest/whole-capture.js';
import { WorkPool } from '../../../../archive/work/pool.js';
import { captureRecord, putCapture, request, startArchive } from '../../../helpers/archive.js';
import { warcRecords } from '../../helpers.js';

const LIMITS: RecordLimits = { maxHeadBytes: 64 * 1024, maxHeaders: 200, maxUrlLength: 2048 };
const DATE = 'Mon, 05 Jan 2026 10:00:00 GMT';
const RECEIVED = new Date('2026-01-05T10:00:01Z');
const sha256 = (...parts: Buffer[]) => 'sha256:' + parts.reduce((h, p) => h.update(p), createHash('sha256')).digest('hex');

/** Heads that the archive refuses, each with a body of `n` bytes (its Content-Length right unless the case is about it). */
const BAD: [string, (n: number) => Buffer][] = [
  ['POST', (n) => captureRecord({ method: 'POST', date: DATE, body: Buffer.alloc(n, 97) })],
  ['1xx status', (n) => captureRecord({ status: 101, date: DATE, body: Buffer.alloc(n, 97) })],
  ['Transfer-Encoding', (n) => captureRecord({ date: DATE, body: Buffer.alloc(n, 97), responseHeaders: [['Transfer-Encoding', 'chunked']] })],
  ['two lengths', (n) => captureRecord({ date: DATE, body: Buffer.alloc(n, 97), responseHeaders: [['Content-Length', '10, 11']] })],
  ['a date far ahead', (n) => captureRecord({ date: 'Fri, 05 Jan 2035 10:00:00 GMT', body: Buffer.alloc(n, 97) })],
  ['a bad target', (n) => captureRecord({ target: 'no-slash', date: DATE, body: Buffer.alloc(n, 97) })],
  ['a bare LF', (n) => Buffer.concat([Buffer.from('GET / HTTP/1.1\nHost: a.example\n\nHTTP/1.1 200 OK\n\n'), Buffer.alloc(n, 97)])],
  ['a bad status line', (n) => Buffer.concat([Buffer.from('GET / HTTP/1.1\r\nHost: a.example\r\n\r\nHTTP/1.1 2000 OK\r\n\r\n'), Buffer.alloc(n, 97)])],
  ['the wrong length', (n) => captureRecord({ date: DATE, body: Buffer.alloc(n, 97), responseHeaders: [['Content-Length', String(n + 7)]] })],
];

/** `buf` cut into chunks of 1, 7 and 4,000 bytes, over and over (the parser sees every kind of boundary). */
function chunked(buf: Buffer): Buffer[] {
  const out: Buffer[] = [];
  const sizes = [1, 7, 4000];
  for (let at = 0, i = 0; at < buf.length; i++) out.push(buf.subarray(at, (at += sizes[i % 3])));
  return out;
}

/** What the event loop's reader (StreamedCapture) makes of `chunks`: its row, digests, head lengths, or the status and reason it refuses. */
async function onTheLoop(chunks: Buffer[]) {
  const s = new StreamedCapture('/nonexistent', LIMITS, RECEIVED);
  try {
    for (const c of chunks) await s.take(c);
    const done = s.finish();
    if (done.lengthError) return { refused: { status: 400, reason: done.lengthError } };
    return {
      row: done.row,
      requestLength: done.head.requestBytes.length,
      responseLength: done.head.responseBytes.length,
      payload: done.row.digest,
      block: done.block,
    };
  } catch (err) {
    return { refused: { status: (err as { status?: number }).status ?? 400, reason: (err as Error).message } };
  } finally {
    await s.body.dispose();
  }
}

t.test('capture-checks: the same rows, digests and refusals as the event loop, record by record', async (t) => {
  const good = captureRecord({ target: '/a?b=1', date: DATE, body: randomBytes(10_000), requestHeaders: [['X-Client-IP', '192.0.2.7']] });
  const records = [good, ...BAD.map(([, make]) => make(300)), Buffer.alloc(0), good.subarray(0, 30)];
  const out = checkPacked(
    packRecords(
      records.map((r) => ({ chunks: chunked(r), receivedAt: RECEIVED })),
      LIMITS,
    ),
  );
  t.equal(out.length, records.length);
  for (const [i, r] of records.entries()) {
    const loop = await onTheLoop(chunked(r));
    const checked = out[i];
    // The thread reports a body of another length beside the row (the event loop refuses it after the archive's 422).
    const inThread = 'lengthError' in checked && checked.lengthError ? { refused: { status: 400, reason: checked.lengthError } } : checked;
    if ('refused' in loop) t.same(inThread, loop, `record ${i}: refused alike: ${loop.refused?.reason}`);
    else {
      t.notOk('refused' in inThread && inThread.refused, `record ${i} accepted`);
      const { lengthError, ...rest } = inThread as Exclude<typeof inThread, { refused: unknown }>;
      t.equal(lengthError, null);
      t.same(rest, loop, `record ${i}: the same row, head lengths and digests`);
    }
  }
  const body = good.subarray(good.indexOf('\r\n\r\n', good.indexOf('\r\n\r\n') + 4) + 4);
  const first = out[0] as { payload: string; row: { uri_r: string; client_ip: string | null } };
  t.equal(first.payload, sha256(body), 'the payload digest is SHA-256 of the body');
  t.equal(first.row.uri_r, 'http://www.example.org/a?b=1');
  t.equal(first.row.client_ip, '192.0.2.7');
  t.throws(
    () => checkPacked({ ...packRecords([{ chunks: [good], receivedAt: RECEIVED }], LIMITS), chunks: [[1]] }),
    RangeError,
    'lengths that do not add up are refused',
  );
});

t.test('a whole record and a streamed one: the same WARC records and digests', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const small = randomBytes(10_000);
  const big = randomBytes(WHOLE_BYTES + 50_000);
  const fields: string[][] = [];
  for (const [name, body] of [
    ['whole', small],
    ['streamed', big],
  ] as const) {
    const record = captureRecord({ target: `/${name}`, date: DATE, body, responseHeaders: [['Content-Type', 'application/octet-stream']] });
    const r = await putCapture(a, `http://www.example.org/${name}`, record);
    t.equal(r.status, 201, `${name}: 201`);
    const recs = (await warcRecords(a.dataDir, 'current')).filter((x) => x.target === `http://www.example.org/${name}`);
    t.same(
      recs.map((x) => x.type),
      ['response', 'request'],
    );
    const [response, req] = recs;
    const headEnd = record.indexOf('\r\n\r\n') + 4;
    const responseHead = record.subarray(headEnd, record.indexOf('\r\n\r\n', headEnd) + 4);
    t.same(response.block, Buffer.concat([responseHead, body]), `${name}: the response record's block is the response head and body`);
    t.same(req.block, record.subarray(0, headEnd), `${name}: the request record's block is the request head`);
    t.equal(response.headers.get('warc-payload-digest'), sha256(body), `${name}: WARC-Payload-Digest`);
    t.equal(response.headers.get('warc-block-digest'), sha256(responseHead, body), `${name}: WARC-Block-Digest`);
    fields.push([...response.headers.keys()]);
    const m = await request(
      String(r.headers.location)
        .replace(/\/memento\/(\d{14})\//, '/memento/$1id_/')
        .replace(/^http:\/\/[^/]+/, a.url),
    );
    t.same(m.body, body, `${name}: served byte-identical`);
  }
  t.same(fields[0], fields[1], "the response records' fields are the same, in the same order");
});

t.test('bad records: the same answer whole (in the thread) and streamed (on the event loop), nothing stored', async (t) => {
  const a = await startArchive(`archives:\n  - id: current\n    from: 2026-01-01T00:00:00Z\n`);
  t.teardown(() => a.close());
  const cases: [string, Buffer, Buffer][] = [
    ...BAD.filter(([name]) => name !== 'the wrong length').map(([name, make]): [string, Buffer, Buffer] => [name, make(1000), make(WHOLE_BYTES + 1000)]),
    [
      'before every archive',
      captureRecord({ date: 'Tue, 20 Mar 2001 20:35:00 GMT' }),
      captureRecord({ date: 'Tue, 20 Mar 2001 20:35:00 GMT', body: Buffer.alloc(WHOLE_BYTES + 1000, 97) }),
    ],
    [
      'cut inside the heads',
      captureRecord({ date: DATE }).subarray(0, 30),
      Buffer.concat([Buffer.from('GET / HTTP/1.1\r\nHost: a.example\r\n\r\nHTTP/1.1 200 OK\r\nX: '), Buffer.alloc(WHOLE_BYTES + 1000, 97)]),
    ],
  ];
  for (const [name, whole, streamed] of cases) {
    const w = await putCapture(a, 'http://www.example.org/', whole);
    const s = await putCapture(a, 'http://www.example.org/', streamed);
    t.ok(w.status >= 400 && w.status < 500, `${name}: ${w.status} ${w.text.trim()}`);
    if (name === 'cut inside the heads') {
      t.match(w.text, /^capture record ends inside the request head/, 'whole: it ends inside its heads');
      t.equal(s.status, 431, 'a head that never ends: over the head limit, on the event loop');
    } else t.same([s.status, s.text], [w.status, w.text], `${name}: the same status and reason`);
  }
  const wrong = BAD.find(([name]) => name === 'the wrong length')![1];
  const w = await putCapture(a, 'http://www.example.org/', wrong(1000));
  t.same([w.status, w.text], [400, 'response body is 1000 bytes but the embedded Content-Length says 1007\n'], 'the wrong length, whole');
  const s = await putCapture(a, 'http://www.example.org/', wrong(WHOLE_BYTES + 1000));
  t.same(
    [s.status, s.text],
    [400, `response body is ${WHOLE_BYTES + 1000} bytes but the embedded Content-Length says ${WHOLE_BYTES + 1007}\n`],
    'and streamed',
  );

  // Archive-Revisit-Of with another payload: 400 on both paths.
  const first = await putCapture(a, 'http://www.example.org/orig', captureRecord({ target: '/orig', date: DATE, body: 'original' }));
  t.equal(first.status, 201);
  const of = { 'archive-revisit-of': 'current 20260105100000 http://www.example.org/orig' };
  const later = 'Tue, 06 Jan 2026 10:00:00 GMT';
  const rw = await putCapture(a, 'http://www.example.org/orig', captureRecord({ target: '/orig', date: later, body: 'another' }), { headers: of });
  const rs = await putCapture(a, 'http://www.example.org/orig', captureRecord({ target: '/orig', date: later, body: Buffer.alloc(WHOLE_BYTES + 10, 98) }), {
    headers: of,
  });
  const reason = 'the body is not the payload of the memento named as its original (another payload digest); nothing stored\n';
  t.same([rw.status, rw.text], [400, reason], 'another payload than the named original, whole: 400');
  t.same([rs.status, rs.text], [400, reason], 'and streamed');
  t.equal(await a.store.index.count(), 1, 'only the good capture has an index row');
  t.same(
    (await warcRecords(a.dataDir, 'current')).filter((r) => r.type !== 'warcinfo').map((r) => [r.type, r.target]),
    [
      ['response', 'http://www.example.org/orig'],
      ['request', 'http://www.example.org/orig'],
    ],
    'and only its records are in the WARC file',
  );
});

t.test('a thread that dies while it checks a batch: its PUTs answered 503, nothing written; the next PUT is stored', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const realRun = WorkPool.prototype.run;
  let kill = true;
  WorkPool.prototype.run = function (this: WorkPool, ...args: Parameters<WorkPool['run']>) {
    const result = realRun.apply(this, args);
    const slots = (this as unknown as { slots: { worker?: { terminate(): Promise<number> } }[] }).slots;
    if (kill && this.name === 'ingest' && args[0] === 'capture-checks') for (const s of slots) void s.worker?.terminate();
    return result;
  } as WorkPool['run'];
  t.teardown(() => {
    WorkPool.prototype.run = realRun;
  });
  const bodies = Array.from({ length: 6 }, () => randomBytes(10_000));
  const answers = await Promise.all(
    bodies.map((b, i) => putCapture(a, `http://www.example.org/d${i}`, captureRecord({ target: `/d${i}`, date: DATE, body: b }))),
  );
  t.same(
    answers.map((r) => r.status),
    bodies.map(() => 503),
    'every PUT of the batches whose thread died: 503',
  );
  t.match(answers[0].text, /^the capture record was not checked: capture-checks: /, 'the answer says why');
  t.equal(await a.store.index.count(), 0, 'no index row');
  t.same(
    (await warcRecords(a.dataDir, 'current')).filter((r) => r.type !== 'warcinfo'),
    [],
    'no record in the WARC files',
  );
  kill = false;
  const ok = await putCapture(a, 'http://www.example.org/after', captureRecord({ target: '/after', date: DATE, body: 'after' }));
  t.equal(ok.status, 201, 'the next PUT is stored (a new thread)');
  t.equal(await a.store.index.count(), 1, 'one index row');
});
