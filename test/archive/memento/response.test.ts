import zlib from 'node:zlib';
import t from 'tap';
import type { Selection } from '../../../archive/memento/navigation.js';
import { parsePrefer } from '../../../archive/memento/prefer.js';
import { assembleMemento, type MementoRequest, originalHeaders, planBody, storedContentEncoding } from '../../../archive/memento/response.js';
import type { MementoRow } from '../../../archive/store/index-db.js';
import type { StoredResponse } from '../../../archive/store/warc-reader.js';
import type { RawHeader } from '../../../shared/http-head.js';

const BASE = 'http://arxiv.example.net';
const URI_R = 'http://a.example.org/x?y=1';
const TAG = `<base href="http://a.example.org/x?y=1">`;
const DT = Date.parse('2001-03-20T20:35:00Z') / 1000;
const PAGE = '<!DOCTYPE html><html><head><title>x</title></head><body>hello</body></html>';
const WITH_BASE = `<!DOCTYPE html><html><head>${TAG}<title>x</title></head><body>hello</body></html>`;

type Fake = StoredResponse & { closed: number };

/** A StoredResponse as warc-reader.ts returns it: the body whole in `bodyBuffer` (a small record), or streamed in chunks. */
function stored(status: number, headers: RawHeader[], body: Buffer | string, opts: { streamed?: boolean } = {}): Fake {
  const buf = Buffer.from(body);
  const s: Fake = {
    statusLine: `HTTP/1.1 ${status} X`,
    status,
    reason: 'X',
    headers,
    body: (async function* () {
      for (let i = 0; i < buf.length; i += 1000) yield new Uint8Array(buf.subarray(i, i + 1000));
    })(),
    bodyBuffer: opts.streamed ? null : buf,
    bodyLength: buf.length,
    closed: 0,
    close: () => {
      s.closed++;
    },
  };
  return s;
}

/** A read function that hands out a fresh record each time, and remembers them. */
function reader(make: () => Fake) {
  const reads: Fake[] = [];
  return {
    reads,
    read: async (_row: MementoRow) => {
      const s = make();
      reads.push(s);
      return s;
    },
  };
}

function row(mime: string, status = 200): MementoRow {
  return {
    id: 7,
    archive_id: '2001',
    urlkey: 'org,example,a)/x?y=1',
    uri_r: URI_R,
    datetime: DT,
    status,
    mime,
    digest: 'sha256:00',
    warc_file: '2001/x.warc.gz',
    warc_offset: 0,
    warc_length: 0,
    client_ip: null,
  };
}

async function bytes(body: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const c of body) out.push(Buffer.from(c));
  return Buffer.concat(out);
}

t.test('originalHeaders: every stored header as X-Archive-Orig-<name> (docs/architecture.md "Replay and Prefer")', async (t) => {
  const o = originalHeaders({
    headers: [
      ['Content-Type', 'text/html; charset=utf-8'],
      ['Set-Cookie', 'a=1'],
      ['set-cookie', 'b=2'],
      ['SET-COOKIE', 'c=3'],
      ['Location', 'http://a.example.org/next'],
      ['Content-Encoding', 'GZip'],
      ['X-Powered-By', 'legacy'],
      ['Content-Type', 'text/plain'],
    ],
  });
  t.same(o.headers, {
    'x-archive-orig-content-type': ['text/html; charset=utf-8', 'text/plain'],
    'x-archive-orig-set-cookie': ['a=1', 'b=2', 'c=3'],
    'x-archive-orig-location': 'http://a.example.org/next',
    'x-archive-orig-content-encoding': 'GZip',
    'x-archive-orig-x-powered-by': 'legacy',
  });
  t.equal(o.contentType, 'text/html; charset=utf-8', 'the first Content-Type');
  t.equal(o.location, 'http://a.example.org/next');
  t.equal(o.contentEncoding, 'gzip', 'Content-Encoding, lower case');
  t.same(originalHeaders({ headers: [] }), { headers: {}, contentType: undefined, contentEncoding: undefined, location: undefined }, 'no headers');
});

t.test('originalHeaders: what Node cannot send is left out (a bad name) or percent-encoded (a control character)', async (t) => {
  const o = originalHeaders({
    headers: [
      ['Bad Name', 'x'],
      ['X-Ctl', 'a\x01b'],
      ['X-Latin1', 'caf\xe9'],
    ],
  });
  t.same(o.headers, { 'x-archive-orig-x-ctl': 'a%01b', 'x-archive-orig-x-latin1': 'caf\xe9' });
});

t.test('storedContentEncoding: lower case; identity or empty is no coding', async (t) => {
  const cases: [RawHeader[], string | undefined][] = [
    [[['Content-Encoding', 'gzip']], 'gzip'],
    [[['content-encoding', ' BR ']], 'br'],
    [[['Content-Encoding', 'identity']], undefined],
    [[['Content-Encoding', 'Identity']], undefined],
    [[['Content-Encoding', '']], undefined],
    [[['Content-Type', 'text/html']], undefined],
  ];
  for (const [headers, want] of cases) t.equal(storedContentEncoding({ headers }), want, JSON.stringify(headers));
});

t.test('planBody: the raw variant and non-HTML pages go out as stored', async (t) => {
  for (const [name, mime, raw] of [
    ['raw HTML (original-content)', 'text/html', true],
    ['default, text/plain', 'text/plain', false],
    ['default, no media type', '', false],
  ] as const) {
    const s = stored(200, [], PAGE);
    const { read, reads } = reader(() => stored(200, [], PAGE));
    const plan = await planBody(row(mime), s, undefined, raw, read);
    t.equal(plan.body, s.body, `${name}: the stored stream`);
    t.equal(plan.bodyBuffer, s.bodyBuffer, `${name}: the stored buffer`);
    t.same({ length: plan.length, changed: plan.changed, bodyless: plan.bodyless }, { length: PAGE.length, changed: false, bodyless: false }, name);
    t.equal(reads.length, 0, `${name}: not read again`);
  }
});

t.test('planBody: a small HTML page gets its base element in memory, the length exact', async (t) => {
  const s = stored(200, [], PAGE);
  const plan = await planBody(row('text/html'), s, undefined, false, reader(() => s).read);
  t.equal(plan.bodyBuffer?.toString(), WITH_BASE);
  t.same({ length: plan.length, changed: plan.changed, bodyless: plan.bodyless }, { length: WITH_BASE.length, changed: true, bodyless: false });
  const own = '<html><head><base href="http://elsewhere/"></head></html>';
  const kept = await planBody(row('text/html'), stored(200, [], own), undefined, false, reader(() => s).read);
  t.same(
    { body: kept.bodyBuffer?.toString(), length: kept.length, changed: kept.changed },
    { body: own, length: own.length, changed: false },
    'a page with its own base element is kept',
  );
});

t.test('planBody: a streamed HTML page gets its base element, the length exact', async (t) => {
  const page = PAGE.replace('hello', 'x'.repeat(200_000));
  const want = WITH_BASE.replace('hello', 'x'.repeat(200_000));
  const plan = await planBody(
    row('application/xhtml+xml'),
    stored(200, [], page, { streamed: true }),
    undefined,
    false,
    reader(() => stored(200, [], page)).read,
  );
  t.equal(plan.bodyBuffer, null, 'streamed');
  const out = await bytes(plan.body);
  t.equal(out.toString(), want);
  t.same({ length: plan.length, changed: plan.changed }, { length: out.length, changed: true }, 'the length is what is sent');
});

const ENCODINGS: [string, (b: Buffer) => Buffer][] = [
  ['gzip', zlib.gzipSync],
  ['x-gzip', zlib.gzipSync],
  ['deflate', zlib.deflateSync],
  ['deflate', zlib.deflateRawSync], // raw deflate sent as "deflate" by some servers
  ['br', zlib.brotliCompressSync],
];

t.test('planBody: an encoded HTML page is decoded and gets its base element; the length is the decoded length, exact', async (t) => {
  for (const streamed of [false, true]) {
    for (const [enc, encode] of ENCODINGS) {
      const name = `${enc} (${encode.name}, ${streamed ? 'streamed' : 'small record'})`;
      const page = Buffer.from(PAGE.replace('hello', 'hello '.repeat(30_000)));
      const want = WITH_BASE.replace('hello', 'hello '.repeat(30_000));
      const body = encode(page);
      const s = stored(200, [['Content-Encoding', enc]], body, { streamed });
      const { read, reads } = reader(() => stored(200, [['Content-Encoding', enc]], body, { streamed }));
      const plan = await planBody(row('text/html'), s, enc, false, read);
      const out = await bytes(plan.body);
      t.equal(out.toString(), want, `${name}: decoded, base inserted`);
      t.same(
        { length: plan.length, changed: plan.changed, bodyBuffer: plan.bodyBuffer },
        { length: out.length, changed: true, bodyBuffer: null },
        `${name}: exact length`,
      );
      t.equal(plan.stored, s, `${name}: the record the body comes from is the one to close`);
      t.same(
        reads.map((r) => r.closed),
        [1],
        `${name}: read a second time to count the decoded bytes, and that record closed`,
      );
    }
  }
});

t.test('planBody: an encoded page that cannot be decoded goes out as stored (RFC 9110 §8.4: the coding is kept)', async (t) => {
  const good = zlib.gzipSync(Buffer.from(PAGE.replace('hello', 'hello '.repeat(30_000))));
  const cases: [string, Buffer][] = [
    ['corrupt gzip', Buffer.concat([good.subarray(0, 10), Buffer.alloc(200, 0x55)])],
    ['gzip cut before its end', good.subarray(0, good.length - 100)],
    ['gzip without its trailer', good.subarray(0, good.length - 8)],
  ];
  for (const [name, body] of cases) {
    const s = stored(200, [['Content-Encoding', 'gzip']], body);
    const { read, reads } = reader(() => stored(200, [['Content-Encoding', 'gzip']], body));
    const plan = await planBody(row('text/html'), s, 'gzip', false, read);
    t.ok((await bytes(plan.body)).equals(body), `${name}: the stored bytes`);
    t.same({ length: plan.length, changed: plan.changed }, { length: body.length, changed: false }, `${name}: stored length, unchanged`);
    t.equal(s.closed, 1, `${name}: the record read while trying is closed`);
    t.equal(plan.stored, reads[reads.length - 1], `${name}: the body comes from a fresh read, which is the one to close`);
  }
  const own = zlib.gzipSync(Buffer.from('<html><head><base href="http://elsewhere/"></head></html>'));
  const s = stored(200, [['Content-Encoding', 'gzip']], own);
  const plan = await planBody(row('text/html'), s, 'gzip', false, reader(() => stored(200, [['Content-Encoding', 'gzip']], own)).read);
  t.ok((await bytes(plan.body)).equals(own) && !plan.changed && plan.length === own.length, 'an encoded page with its own base element: as stored');
  const compress = stored(200, [['Content-Encoding', 'compress']], 'LZW…');
  const { read, reads } = reader(() => compress);
  const c = await planBody(row('text/html'), compress, 'compress', false, read);
  t.ok(c.body === compress.body && !c.changed && reads.length === 0, 'a coding we cannot decode: as stored, not read again');
});

t.test('planBody: 204, 304 and empty bodies are bodyless, nothing inserted', async (t) => {
  for (const status of [204, 304, 200]) {
    const s = stored(status, [], '');
    const plan = await planBody(row('text/html', status), s, undefined, false, reader(() => s).read);
    t.same({ bodyless: plan.bodyless, changed: plan.changed, length: plan.length }, { bodyless: true, changed: false, length: 0 }, `${status}`);
  }
  const notModified = await planBody(row('text/html', 304), stored(304, [], PAGE), undefined, false, reader(() => stored(304, [], PAGE)).read);
  t.same({ bodyless: notModified.bodyless, changed: notModified.changed }, { bodyless: true, changed: false }, 'a 304 with stored bytes: bodyless still');
});

// A single memento: its navigation is itself (first last memento).
const REF = { id: 7, datetime: DT, uri_r: URI_R };
const SELECTION: Selection = { memento: REF, first: REF, last: REF };
const URI_M = `${BASE}/2001/memento/20010320203500/${URI_R}`;
const RAW_URI_M = `${BASE}/2001/memento/20010320203500id_/${URI_R}`;

function request(mime: string, opts: { raw?: boolean; originalContent?: boolean; prefer?: string; status?: number } = {}): MementoRequest {
  return {
    base: BASE,
    archiveId: '2001',
    uriR: URI_R,
    row: row(mime, opts.status),
    selection: SELECTION,
    raw: opts.raw ?? false,
    originalContent: opts.originalContent ?? opts.raw ?? false,
    prefer: parsePrefer(opts.prefer),
  };
}

t.test('assembleMemento: RFC 7089 §4.2.1 headers: stored status, Memento-Datetime, Link, Vary: prefer', async (t) => {
  const { read } = reader(() => stored(200, [['Content-Type', 'text/plain']], 'hi'));
  const a = await assembleMemento(request('text/plain'), read);
  t.equal(a.status, 200);
  t.equal(a.headers['memento-datetime'], 'Tue, 20 Mar 2001 20:35:00 GMT', 'IMF-fixdate (RFC 7089 §2.1.1)');
  t.equal(
    a.headers.link,
    `<${URI_R}>; rel="original", <${BASE}/2001/timegate/${URI_R}>; rel="timegate", ` +
      `<${BASE}/2001/timemap/link/${URI_R}>; rel="timemap"; type="application/link-format", ` +
      `<${URI_M}>; rel="first last memento"; datetime="Tue, 20 Mar 2001 20:35:00 GMT"`,
  );
  t.equal(a.headers.vary, 'prefer', 'Prefer rules 5 and 6');
  t.equal(a.headers['content-type'], 'text/plain');
  t.equal(a.headers['content-length'], '2');
  t.equal(a.headers['content-location'], URI_M, 'Prefer rule 6: the default URI-M');
  const raw = await assembleMemento(request('text/plain', { raw: true }), read);
  t.match(raw.headers.link, `<${RAW_URI_M}>; rel="first last memento"`, 'an id_ address links raw URI-Ms');
  const redirect = await assembleMemento(request('text/html', { status: 301 }), reader(() => stored(301, [['Location', 'http://a.example.org/y']], '')).read);
  t.equal(redirect.status, 301, 'a stored redirect is answered with its status');
});

t.test('assembleMemento: Preference-Applied and Content-Location of the default and raw variants (Prefer rules 3, 4, 6)', async (t) => {
  const html = () => stored(200, [['Content-Type', 'text/html']], PAGE);
  const cases: [string, string, Parameters<typeof request>[1], string, string][] = [
    ['default HTML (a base element went in)', 'text/html', {}, 'original-links, echo-original-headers', URI_M],
    ['default, not HTML (nothing changed)', 'text/plain', {}, 'original-content, original-links, echo-original-headers', URI_M],
    ['raw URI-M', 'text/html', { raw: true }, 'original-content, original-links, echo-original-headers', RAW_URI_M],
    [
      'Prefer: original-content at the default URI-M',
      'text/html',
      { originalContent: true, prefer: 'original-content' },
      'original-content, original-links, echo-original-headers',
      RAW_URI_M,
    ],
    ['Prefer: raw (pywb)', 'text/html', { originalContent: true, prefer: 'raw' }, 'original-content, original-links, echo-original-headers, raw', RAW_URI_M],
    ['Prefer: rewritten (pywb)', 'text/html', { prefer: 'rewritten' }, 'original-links, echo-original-headers, rewritten', URI_M],
  ];
  for (const [name, mime, opts, applied, location] of cases) {
    const a = await assembleMemento(request(mime, opts), reader(html).read);
    t.same({ applied: a.headers['preference-applied'], location: a.headers['content-location'] }, { applied, location }, name);
  }
});

t.test('assembleMemento: Location is sent only for a stored 3xx; X-Archive-Orig-Location always', async (t) => {
  const loc: RawHeader[] = [['Location', 'http://a.example.org/y']];
  for (const [status, sent] of [
    [301, true],
    [302, true],
    [200, false],
    [201, false],
  ] as const) {
    const a = await assembleMemento(request('text/plain', { status }), reader(() => stored(status, loc, '')).read);
    t.equal(a.headers.location, sent ? 'http://a.example.org/y' : undefined, `${status}: Location`);
    t.equal(a.headers['x-archive-orig-location'], 'http://a.example.org/y', `${status}: X-Archive-Orig-Location`);
  }
});

t.test('assembleMemento: Content-Encoding only when the body goes out as stored', async (t) => {
  const gz = zlib.gzipSync(Buffer.from(PAGE));
  const enc = (): Fake =>
    stored(
      200,
      [
        ['Content-Type', 'text/html'],
        ['Content-Encoding', 'gzip'],
      ],
      gz,
    );
  const dflt = await assembleMemento(request('text/html'), reader(enc).read);
  t.equal(dflt.headers['content-encoding'], undefined, 'default HTML: decoded, so no Content-Encoding');
  t.equal(dflt.headers['content-length'], String(WITH_BASE.length), 'the decoded length with the base element');
  t.equal(dflt.headers['x-archive-orig-content-encoding'], 'gzip', 'the original header is still echoed');
  const raw = await assembleMemento(request('text/html', { raw: true }), reader(enc).read);
  t.same([raw.headers['content-encoding'], raw.headers['content-length']], ['gzip', String(gz.length)], 'raw: the stored coding and length');
  const css = await assembleMemento(request('text/css'), reader(enc).read);
  t.same([css.headers['content-encoding'], css.headers['content-length']], ['gzip', String(gz.length)], 'not HTML: as stored, coding kept');
});

t.test('assembleMemento: RFC 9110 §8.6: no Content-Length in a 204 answer', async (t) => {
  const a = await assembleMemento(request('text/html', { status: 204 }), reader(() => stored(204, [], '')).read);
  t.equal(a.plan.bodyless, true);
  t.equal(a.headers['content-length'], undefined, 'a server MUST NOT send Content-Length in a 204');
});
