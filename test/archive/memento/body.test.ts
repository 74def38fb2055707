import zlib from 'node:zlib';
import t from 'tap';
import { planBody } from '../../../archive/memento/body.js';
import { storedContentEncoding } from '../../../archive/replay/content-coding.js';
import { INLINE_LIMIT } from '../../../archive/replay/replay.js';
import type { RawHeader } from '#shared/http-head.js';
import { type DecodeOutcome, DecodedTooLarge } from '../../../archive/replay/content-coding.js';
import { BASE, bytes, gzipBomb, PAGE, reader, row, stored, TARGET, WITH_BASE } from './helpers.js';

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

t.test('planBody: the raw form, and the links form of a non-HTML page, go out as stored', async (t) => {
  for (const [name, mime, raw] of [
    ['raw HTML (original-content)', 'text/html', true],
    ['links form, text/plain', 'text/plain', false],
    ['links form, no media type', '', false],
  ] as const) {
    const s = stored(200, [], PAGE);
    const { read, reads } = reader(() => stored(200, [], PAGE));
    const plan = await planBody(row(mime), s, raw ? 'raw' : 'links', read, TARGET);
    t.equal(plan.body, s.body, `${name}: the stored stream`);
    t.equal(plan.bodyBuffer, s.bodyBuffer, `${name}: the stored buffer`);
    t.same({ length: plan.length, changed: plan.changes.content, bodyless: plan.bodyless }, { length: PAGE.length, changed: false, bodyless: false }, name);
    t.equal(reads.length, 0, `${name}: not read again`);
  }
});

t.test('planBody, links form: a small HTML page gets its base element in memory, the length exact', async (t) => {
  const s = stored(200, [], PAGE);
  const plan = await planBody(row('text/html'), s, 'links', reader(() => s).read, TARGET);
  t.equal(plan.bodyBuffer?.toString(), WITH_BASE);
  t.same({ length: plan.length, changed: plan.changes.content, bodyless: plan.bodyless }, { length: WITH_BASE.length, changed: true, bodyless: false });
  const own = '<html><head><base href="http://elsewhere/"></head></html>';
  const kept = await planBody(row('text/html'), stored(200, [], own), 'links', reader(() => s).read, TARGET);
  t.same(
    { body: kept.bodyBuffer?.toString(), length: kept.length, changed: kept.changes.content },
    { body: own, length: own.length, changed: false },
    'a page with its own base element is kept',
  );
});

t.test('planBody, links form: a streamed HTML page gets its base element, the length exact', async (t) => {
  const page = PAGE.replace('hello', 'x'.repeat(200_000));
  const want = WITH_BASE.replace('hello', 'x'.repeat(200_000));
  const plan = await planBody(
    row('application/xhtml+xml'),
    stored(200, [], page, { streamed: true }),
    'links',
    reader(() => stored(200, [], page)).read,
    TARGET,
  );
  t.equal(plan.bodyBuffer, null, 'streamed');
  const out = await bytes(plan.body);
  t.equal(out.toString(), want);
  t.same({ length: plan.length, changed: plan.changes.content }, { length: out.length, changed: true }, 'the length is what is sent');
});

const ENCODINGS: [string, (b: Buffer) => Buffer][] = [
  ['gzip', zlib.gzipSync],
  ['x-gzip', zlib.gzipSync],
  ['deflate', zlib.deflateSync],
  ['deflate', zlib.deflateRawSync], // raw deflate sent as "deflate" by some servers
  ['br', zlib.brotliCompressSync],
];

t.test(
  'planBody, links form: an encoded HTML page is decoded and gets its base element: in memory with its exact length from a small record, else streamed without one',
  async (t) => {
    for (const streamed of [false, true]) {
      for (const [enc, encode] of ENCODINGS) {
        const name = `${enc} (${encode.name}, ${streamed ? 'streamed' : 'small record'})`;
        const page = Buffer.from(PAGE.replace('hello', 'hello '.repeat(30_000)));
        const want = WITH_BASE.replace('hello', 'hello '.repeat(30_000));
        const body = encode(page);
        const s = stored(200, [['Content-Encoding', enc]], body, { streamed });
        const { read, reads } = reader(() => stored(200, [['Content-Encoding', enc]], body, { streamed }));
        const plan = await planBody(row('text/html'), s, 'links', read, TARGET);
        const out = await bytes(plan.body);
        t.equal(out.toString(), want, `${name}: decoded, base inserted`);
        t.same(
          { length: plan.length, changed: plan.changes.content, decoded: plan.decoded, inMemory: plan.bodyBuffer !== null },
          { length: streamed ? null : out.length, changed: true, decoded: true, inMemory: !streamed },
          streamed ? `${name}: no length (sent chunked), nothing decoded before the head but its first bytes` : `${name}: in memory, exact length`,
        );
        t.equal(plan.stored, s, `${name}: the record the body comes from is the one to close`);
        t.equal(reads.length, 0, `${name}: not read a second time`);
        plan.close();
        t.equal(s.closed, 1, `${name}: close() closes the record`);
      }
    }
  },
);

t.test('planBody, links form: an encoded page that cannot be decoded goes out as stored (RFC 9110 §8.4: the coding is kept)', async (t) => {
  const good = zlib.gzipSync(Buffer.from(PAGE.replace('hello', 'hello '.repeat(30_000))));
  const cases: [string, Buffer][] = [
    ['corrupt gzip', Buffer.concat([good.subarray(0, 10), Buffer.alloc(200, 0x55)])],
    ['gzip cut before its end', good.subarray(0, good.length - 100)],
    ['gzip without its trailer', good.subarray(0, good.length - 8)],
  ];
  for (const [name, body] of cases) {
    const s = stored(200, [['Content-Encoding', 'gzip']], body);
    const { read, reads } = reader(() => stored(200, [['Content-Encoding', 'gzip']], body));
    const plan = await planBody(row('text/html'), s, 'links', read, TARGET);
    t.ok((await bytes(plan.body)).equals(body), `${name}, small record: the stored bytes`);
    t.same({ length: plan.length, changed: plan.changes.content }, { length: body.length, changed: false }, `${name}: stored length, unchanged`);
    t.same([plan.stored, reads.length], [s, 0], `${name}: decoded in memory, not read again`);
  }
  // A streamed record corrupt in its first bytes (what is decoded before the head is sent): as stored, from a fresh read.
  const bad = Buffer.concat([good.subarray(0, 10), Buffer.alloc(200_000, 0x55)]);
  const s = stored(200, [['Content-Encoding', 'gzip']], bad, { streamed: true });
  const { read, reads } = reader(() => stored(200, [['Content-Encoding', 'gzip']], bad, { streamed: true }));
  const plan = await planBody(row('text/html'), s, 'links', read, TARGET);
  t.ok((await bytes(plan.body)).equals(bad), 'corrupt gzip, streamed: the stored bytes');
  t.same({ length: plan.length, changed: plan.changes.content }, { length: bad.length, changed: false }, 'corrupt gzip, streamed: stored length, unchanged');
  t.equal(s.closed, 1, 'the record read while trying is closed');
  t.equal(plan.stored, reads[0], 'the body comes from a fresh read, which is the one to close');
  // Corrupt only past the first bytes: that shows once the head is sent, so the body ends in an error (the client sees it cut).
  const cut = good.subarray(0, good.length - 100);
  const late = await planBody(row('text/html'), stored(200, [['Content-Encoding', 'gzip']], cut, { streamed: true }), 'links', reader(() => s).read, TARGET);
  t.equal(late.length, null, 'cut late, streamed: no length');
  await t.rejects(bytes(late.body), /unexpected end of file/, 'cut late, streamed: the body ends in an error');
  const own = zlib.gzipSync(Buffer.from('<html><head><base href="http://elsewhere/"></head></html>'));
  const o = stored(200, [['Content-Encoding', 'gzip']], own);
  const ownPlan = await planBody(row('text/html'), o, 'links', reader(() => stored(200, [['Content-Encoding', 'gzip']], own)).read, TARGET);
  t.ok(
    (await bytes(ownPlan.body)).equals(own) && !ownPlan.changes.content && ownPlan.length === own.length,
    'an encoded page with its own base element: as stored',
  );
  const compress = stored(200, [['Content-Encoding', 'compress']], 'LZW…');
  const c = await planBody(row('text/html'), compress, 'links', reader(() => compress).read, TARGET);
  t.ok(c.body === compress.body && !c.changes.content, 'a coding we cannot decode: as stored');
});

t.test('planBody, links form: 204, 304 and empty bodies are bodyless, nothing inserted', async (t) => {
  for (const status of [204, 304, 200]) {
    const s = stored(status, [], '');
    const plan = await planBody(row('text/html', status), s, 'links', reader(() => s).read, TARGET);
    t.same({ bodyless: plan.bodyless, changed: plan.changes.content, length: plan.length }, { bodyless: true, changed: false, length: 0 }, `${status}`);
  }
  const notModified = await planBody(row('text/html', 304), stored(304, [], PAGE), 'links', reader(() => stored(304, [], PAGE)).read, TARGET);
  t.same(
    { bodyless: notModified.bodyless, changed: notModified.changes.content },
    { bodyless: true, changed: false },
    'a 304 with stored bytes: bodyless still',
  );
});

/** The archive address of `url` at the fake memento's datetime. */
const M = (url: string) => `${BASE}/2001/memento/20010320203500/${url}`;
const SCRIPT = `<script src="${BASE}/_static/replay.js" data-memento-datetime="20010320203500"></script>`;
const LINKED = '<html><head><link rel="stylesheet" href="s.css"></head><body><img src="/i.png"><a href="http://other.example/p#top">p</a></body></html>';
const LINKED_REPLAY =
  `<html><head>${SCRIPT}<link rel="stylesheet" href="${M('http://a.example.org/s.css')}"></head>` +
  `<body><img src="${M('http://a.example.org/i.png')}"><a href="${M('http://other.example/p')}#top">p</a></body></html>`;

t.test('planBody, replay form: a page has its URLs rewritten to the archive at its datetime and the replay script first in its head', async (t) => {
  const s = stored(200, [['Content-Type', 'text/html']], LINKED);
  const plan = await planBody(row('text/html'), s, 'replay', reader(() => s).read, TARGET, 'text/html');
  const out = (await bytes(plan.body)).toString();
  t.equal(out, LINKED_REPLAY);
  t.same(
    { length: plan.length, changes: plan.changes, decoded: plan.decoded, buffered: plan.bodyBuffer !== null },
    { length: out.length, changes: { content: true, links: true }, decoded: false, buffered: true },
  );
});

t.test('planBody, replay form: an encoded page is decoded, rewritten, and goes out without its coding', async (t) => {
  for (const [enc, encode] of ENCODINGS) {
    for (const streamed of [false, true]) {
      const body = encode(Buffer.from(LINKED));
      const s = stored(200, [['Content-Encoding', enc]], body, { streamed });
      const plan = await planBody(row('text/html'), s, 'replay', reader(() => s).read, TARGET);
      t.equal((await bytes(plan.body)).toString(), LINKED_REPLAY, `${enc} ${encode.name} ${streamed ? 'streamed' : 'small record'}`);
      t.equal(plan.decoded, true, `${enc}: decoded`);
    }
  }
  const corrupt = Buffer.concat([zlib.gzipSync(Buffer.from(LINKED)).subarray(0, 12), Buffer.alloc(50, 0x55)]);
  const bad = await planBody(row('text/html'), stored(200, [['Content-Encoding', 'gzip']], corrupt), 'replay', reader(() => stored(200, [], '')).read, TARGET);
  t.ok((await bytes(bad.body)).equals(corrupt), 'a corrupt gzip body: as stored');
  t.same({ changes: bad.changes, decoded: bad.decoded }, { changes: { content: false, links: false }, decoded: false }, 'and said to be unchanged');
});

t.test('planBody, replay form: a page larger than the in-memory limit is rewritten as it streams, without a length', async (t) => {
  const filler = '<p>' + 'x'.repeat(1000) + '</p>\n';
  const page = `<html><head></head><body>${filler.repeat(Math.ceil(INLINE_LIMIT / filler.length) + 10)}<a href="/last">last</a></body></html>`;
  const plan = await planBody(row('text/html'), stored(200, [], page, { streamed: true }), 'replay', reader(() => stored(200, [], '')).read, TARGET);
  t.same({ length: plan.length, buffered: plan.bodyBuffer !== null }, { length: null, buffered: false });
  const out = (await bytes(plan.body)).toString();
  t.ok(out.endsWith(`<a href="${M('http://a.example.org/last')}">last</a></body></html>`), 'the last link rewritten');
  t.equal(out.length, page.length + SCRIPT.length + M('http://a.example.org').length, 'only the script and one URL made absolute in the archive');
});

t.test('planBody, replay form: a stylesheet has its url() and @import rewritten; an image goes out as stored', async (t) => {
  const css = '@import "base.css";\nbody { background: url(bg.png) }\n';
  const s = stored(200, [['Content-Type', 'text/css']], css);
  const plan = await planBody(row('text/css'), s, 'replay', reader(() => s).read, TARGET, 'text/css');
  t.equal(
    (await bytes(plan.body)).toString(),
    `@import "${M('http://a.example.org/base.css')}";\nbody { background: url("${M('http://a.example.org/bg.png')}") }\n`,
  );
  t.same(plan.changes, { content: true, links: true });
  const png = stored(200, [['Content-Type', 'image/png']], Buffer.from([0x89, 0x50, 0x4e, 0x47]));
  const image = await planBody(row('image/png'), png, 'replay', reader(() => png).read, TARGET);
  t.equal(image.body, png.body, 'an image: the stored stream');
  t.same(image.changes, { content: false, links: false });
});

/** Decode options that record how the decoding ended, and a promise of it. */
function watched(maxBytes: number) {
  let onEnd!: (bytes: number, outcome: DecodeOutcome) => void;
  const ended = new Promise<[number, DecodeOutcome]>((resolve) => (onEnd = (bytes, outcome) => resolve([bytes, outcome])));
  return { decode: { maxBytes, onEnd }, ended };
}

const BOMBS: [string, number, boolean][] = [
  ['10 MiB of zeros from 10 KB, a small record', 10 * 1024 ** 2, false],
  ['1 GiB of zeros from 1 MB, a streamed record', 1024 ** 3, true],
];
const BOMB_PAGE = '<html><head><title>bomb</title></head><body>';

t.test('planBody, links and replay forms of a gzip bomb: before the head only its first bytes are decoded, and close() stops the decoder', async (t) => {
  for (const [name, size, streamed] of BOMBS) {
    const bomb = gzipBomb(BOMB_PAGE, size);
    const enc = (): ReturnType<typeof stored> => stored(200, [['Content-Encoding', 'gzip']], bomb, { streamed });
    const { decode, ended } = watched(64 * 1024 ** 2);
    const links = await planBody(row('text/html'), enc(), 'links', reader(enc).read, TARGET, undefined, decode);
    t.same({ length: links.length, changed: links.changes.content }, { length: null, changed: true }, `${name}, links form: streamed without a length`);
    if (links.length !== null) continue; // decoded whole (the bug): nothing more to see
    links.close(); // what a HEAD does
    const [decoded, outcome] = await ended;
    t.equal(outcome, 'stopped', `${name}, links form: the decoder is stopped by close()`);
    t.ok(decoded <= 256 * 1024, `${name}, links form: ${decoded} bytes decoded, only the first bytes the base element needs`);
    const replay = watched(64 * 1024 ** 2);
    const r = await planBody(row('text/html'), enc(), 'replay', reader(enc).read, TARGET, undefined, replay.decode);
    t.same({ length: r.length, changed: r.changes.content }, { length: null, changed: true }, `${name}, replay form: streamed without a length`);
    const it = r.body[Symbol.asyncIterator]();
    t.notOk((await it.next()).done, `${name}, replay form: a first chunk`);
    await it.return?.(); // the reader leaves
    const [replayed, why] = await replay.ended;
    t.same([why, replayed <= 1024 ** 2], ['stopped', true], `${name}, replay form: the reader leaving stops the decoder (${replayed} bytes decoded)`);
    r.close();
  }
});

t.test('planBody, links and replay forms of a gzip bomb: the decoded body is cut at decode.maxBytes', async (t) => {
  const max = 4 * 1024 ** 2;
  for (const [name, size, streamed] of BOMBS) {
    const bomb = gzipBomb(BOMB_PAGE, size);
    const enc = (): ReturnType<typeof stored> => stored(200, [['Content-Encoding', 'gzip']], bomb, { streamed });
    for (const form of ['links', 'replay'] as const) {
      const { decode, ended } = watched(max);
      const plan = await planBody(row('text/html'), enc(), form, reader(enc).read, TARGET, undefined, decode);
      let got = 0;
      const read = (async () => {
        for await (const c of plan.body) got += c.length;
      })();
      await t.rejects(read, DecodedTooLarge, `${name}, ${form} form: the body ends in an error`);
      const [decoded, outcome] = await ended;
      t.equal(outcome, 'limit', `${name}, ${form} form: stopped at the bound`);
      t.ok(got <= max + 4096 && decoded <= max + 64 * 1024, `${name}, ${form} form: ${got} bytes sent, ${decoded} decoded, bound ${max}`);
      plan.close();
    }
  }
});
