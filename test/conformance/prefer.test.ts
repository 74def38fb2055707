/**
 * Conformance: raw Mementos negotiated with Prefer (the Prefer rules of docs/architecture.md
 * 1–8, RFC 7240), both variants, and the `id_` URI-M; issue point 4.
 */

import zlib from 'node:zlib';
import t from 'tap';
import { captureRecord, putCapture, request, startArchive } from '../helpers/archive.js';
import { headMatchesGet, links, olOf, partsOf, replayScript, ts14 } from './helpers.js';

const ALL = 'original-content, original-links, echo-original-headers';
/** What the original-links (`ol_`) form of an HTML page satisfies: a base element went in. */
const LINKS_HTML = 'original-links, echo-original-headers';
/** What the archival replay of an HTML page satisfies: its URLs are rewritten, the replay script went in. */
const REPLAY_HTML = 'echo-original-headers';

const R = 'http://www.example.org/p.html';
const GZ = 'http://www.example.org/gz.html';
const CSS = 'http://www.example.org/s.css';
const D1 = 'Tue, 20 Mar 2001 20:35:00 GMT';
const D2 = 'Wed, 21 Mar 2001 08:00:00 GMT';
const PAGE = '<html><head><title>p</title></head><body><a href="/x">x</a><img src="http://cdn.example.org/i.png"></body></html>';
const GZ_BODY = zlib.gzipSync('<html><head><title>gz</title></head><body>gz</body></html>');

const a = await startArchive();
t.teardown(() => a.close());
async function put(uriR: string, date: string, responseHeaders: [string, string][], body: string | Buffer) {
  const res = await putCapture(a, uriR, captureRecord({ ...partsOf(uriR), date, responseHeaders, body }));
  if (res.status !== 201) throw new Error(res.text);
}
await put(
  R,
  D1,
  [
    ['Content-Type', 'text/html; charset=utf-8'],
    ['Set-Cookie', 'a=1'],
  ],
  PAGE,
);
await put(R, D2, [['Content-Type', 'text/html; charset=utf-8']], PAGE + ' ');
await put(
  GZ,
  D1,
  [
    ['Content-Type', 'text/html'],
    ['Content-Encoding', 'gzip'],
  ],
  GZ_BODY,
);
await put(CSS, D1, [['Content-Type', 'text/css']], 'p { color: red }');
const BASED = 'http://www.example.org/based.html';
const GZ_BASED = 'http://www.example.org/gz-based.html';
await put(BASED, D1, [['Content-Type', 'text/html']], '<html><head><base href="http://www.example.org/"></head></html>');
await put(
  GZ_BASED,
  D1,
  [
    ['Content-Type', 'text/html'],
    ['Content-Encoding', 'gzip'],
  ],
  zlib.gzipSync('<html><head><base href="http://www.example.org/"></head></html>'),
);

const m = (uriR: string, d: string, raw = false) => `${a.url}/2025/memento/${ts14(d)}${raw ? 'id_' : ''}/${uriR}`;
const tg = (uriR: string) => `${a.url}/2025/timegate/${uriR}`;

t.test(
  'Prefer rule 1 + variant 1: Prefer original-content at the TimeGate redirects to the id_ URI-M, with Preference-Applied and Vary: accept-datetime, prefer',
  async (t) => {
    const res = await request(tg(R), { headers: { 'accept-datetime': D1, prefer: 'original-content' } });
    t.equal(res.status, 302);
    t.equal(res.headers.location, m(R, D1, true));
    t.equal(res.headers['preference-applied'], ALL, 'the raw Memento satisfies all three dimensions (rule 3 allows more than asked)');
    t.equal(res.headers.vary, 'accept-datetime, prefer');
    const mem = links(res.headers.link).filter((l) => l.rel.includes('memento'));
    t.same(
      mem.map((l) => l.uri),
      [m(R, D1, true), m(R, D2, true)],
      'memento links name the raw URI-Ms (rule 8: different rawness, different URI-Ms)',
    );
    t.same(
      mem.map((l) => l.rel),
      ['first memento', 'next last memento'],
    );
  },
);

t.test(
  'Prefer rules 3, 4 + variant 1: Prefer original-links at the TimeGate redirects to the ol_ URI-M; echo-original-headers alone keeps the replay URI-M',
  async (t) => {
    for (const prefer of ['original-links', 'original-links, echo-original-headers']) {
      const res = await request(tg(R), { headers: { 'accept-datetime': D1, prefer } });
      t.equal(res.headers.location, olOf(m(R, D1)), prefer);
      t.equal(res.headers['preference-applied'], LINKS_HTML, prefer);
      t.equal(res.headers.vary, 'accept-datetime, prefer');
      const mem = links(res.headers.link).filter((l) => l.rel.includes('memento'));
      t.same(
        mem.map((l) => l.uri),
        [olOf(m(R, D1)), olOf(m(R, D2))],
        `${prefer}: memento links name ol_ URI-Ms`,
      );
    }
    const echo = await request(tg(R), { headers: { 'accept-datetime': D1, prefer: 'echo-original-headers' } });
    t.equal(echo.headers.location, m(R, D1));
    t.equal(echo.headers['preference-applied'], REPLAY_HTML);
    const css = await request(tg(CSS), { headers: { prefer: 'original-links' } });
    t.equal(css.headers.location, olOf(m(CSS, D1)));
    t.equal(css.headers['preference-applied'], ALL, 'a stylesheet without URLs is the same in every form: all three');
  },
);

t.test('Prefer variant 2: Prefer original-links at the replay URI-M serves the ol_ form, with its Content-Location', async (t) => {
  const res = await headMatchesGet(t, m(R, D1), { prefer: 'original-links' });
  t.equal(res.text, PAGE.replace('<head>', `<head><base href="${R}">`), 'only a base element is added; no link is rewritten');
  t.equal(res.headers['preference-applied'], LINKS_HTML);
  t.equal(res.headers['content-location'], olOf(m(R, D1)));
  t.equal(res.headers.vary, 'prefer');
  const ol = await request(olOf(m(R, D1)));
  t.same([ol.text, ol.headers['preference-applied']], [res.text, LINKS_HTML], 'the ol_ URI-M without Prefer: the same');
  const back = await request(olOf(m(R, D1)), { headers: { prefer: 'rewritten' } });
  t.equal(back.headers['content-location'], m(R, D1), "pywb's rewritten at the ol_ URI-M: the replay");
});

t.test("Prefer: pywb's tokens — raw = all three dimensions, rewritten = the default Memento", async (t) => {
  const raw = await request(tg(R), { headers: { 'accept-datetime': D1, prefer: 'raw' } });
  t.equal(raw.headers.location, m(R, D1, true));
  t.equal(raw.headers['preference-applied'], `${ALL}, raw`);
  const rewritten = await request(tg(R), { headers: { 'accept-datetime': D1, prefer: 'rewritten' } });
  t.equal(rewritten.headers.location, m(R, D1));
  t.equal(rewritten.headers['preference-applied'], `${REPLAY_HTML}, rewritten`);
  const atMemento = await request(m(R, D1), { headers: { prefer: 'raw' } });
  t.equal(atMemento.text, PAGE);
  t.equal(atMemento.headers['preference-applied'], `${ALL}, raw`);
});

t.test('Prefer rule 7 + RFC 7240 §2: unknown preferences are ignored, not errors', async (t) => {
  const plainTg = await request(tg(R), { headers: { 'accept-datetime': D1 } });
  const unknownTg = await request(tg(R), { headers: { 'accept-datetime': D1, prefer: 'return=minimal, wait=10, x-banner-only' } });
  t.equal(unknownTg.status, 302);
  t.equal(unknownTg.headers.location, plainTg.headers.location);
  t.notOk(unknownTg.headers['preference-applied']);
  const mixed = await request(tg(R), { headers: { 'accept-datetime': D1, prefer: 'x-foo; bar=1, ORIGINAL-CONTENT; q=1, respond-async' } });
  t.equal(mixed.headers.location, m(R, D1, true), 'a known token among unknown ones, any case, with parameters, still applies');
  const plainM = await request(m(R, D1));
  const unknownM = await request(m(R, D1), { headers: { prefer: 'handling=lenient, foo' } });
  t.equal(unknownM.status, 200);
  t.same({ ...unknownM.headers, date: 0 }, { ...plainM.headers, date: 0 });
  t.same(unknownM.body, plainM.body);
});

t.test('Prefer rule 6: without Prefer the replay Memento names what it satisfies by default, with Vary: prefer and its Content-Location', async (t) => {
  const res = await request(m(R, D1));
  t.equal(res.headers['preference-applied'], REPLAY_HTML);
  t.equal(res.headers.vary, 'prefer');
  t.equal(res.headers['content-location'], m(R, D1));
  const at = (url: string) => `${a.url}/2025/memento/${ts14(D1)}/${url}`;
  t.equal(
    res.text,
    PAGE.replace('<head>', `<head>${replayScript(a.url, D1)}`)
      .replace('"/x"', `"${at('http://www.example.org/x')}"`)
      .replace('"http://cdn.example.org/i.png"', `"${at('http://cdn.example.org/i.png')}"`),
    'the archival replay: every link into the archive at the page datetime',
  );
  t.equal(res.headers['x-archive-orig-set-cookie'], 'a=1', 'echo-original-headers');
  t.notOk(res.headers['set-cookie']);
  const css = await request(m(CSS, D1));
  t.equal(css.headers['preference-applied'], ALL);
  t.equal(css.text, 'p { color: red }');
});

t.test(
  'Prefer rule 2 + variant 2: Prefer original-content at a Memento serves the stored bytes exactly, with Preference-Applied, Vary: prefer and the Content-Location of the raw variant',
  async (t) => {
    const res = await headMatchesGet(t, m(R, D1), { prefer: 'original-content' });
    t.equal(res.status, 200);
    t.equal(res.text, PAGE);
    t.equal(res.headers['content-length'], String(Buffer.byteLength(PAGE)));
    t.equal(res.headers['preference-applied'], ALL);
    t.equal(res.headers.vary, 'prefer');
    t.equal(res.headers['content-location'], m(R, D1, true));
    t.equal(res.headers['memento-datetime'], D1);
    t.equal(res.headers['x-archive-orig-set-cookie'], 'a=1');
    const gz = await headMatchesGet(t, m(GZ, D1), { prefer: 'original-content' });
    t.same(gz.body, GZ_BODY, 'a gzip page: the stored (encoded) bytes');
    t.equal(gz.headers['content-encoding'], 'gzip');
    t.equal(gz.headers['content-length'], String(GZ_BODY.length));
  },
);

t.test(
  'docs/architecture.md (replay and Prefer): the id_ URI-M is the stored bytes exactly, whatever Prefer says, and its Link names raw neighbours',
  async (t) => {
    for (const prefer of [undefined, 'rewritten', 'original-links']) {
      const res = await headMatchesGet(t, m(R, D1, true), prefer ? { prefer } : {});
      t.equal(res.status, 200);
      t.equal(res.text, PAGE, `prefer: ${prefer}`);
      t.equal(res.headers['content-location'], m(R, D1, true));
      t.equal(res.headers['preference-applied'], ALL);
      t.equal(res.headers['content-type'], 'text/html; charset=utf-8');
      t.equal(res.headers['memento-datetime'], D1);
      const l = links(res.headers.link);
      t.same(
        l.filter((x) => x.rel.includes('memento')).map((x) => x.uri),
        [m(R, D1, true), m(R, D2, true)],
      );
      t.equal(l.find((x) => x.rel === 'original')?.uri, R);
    }
    const gz = await request(m(GZ, D1, true));
    t.same(gz.body, GZ_BODY);
    t.equal(gz.headers['content-encoding'], 'gzip');
    t.equal(gz.headers['x-archive-orig-content-encoding'], 'gzip');
  },
);

t.test('Prefer rule 8: the URI-M chosen at a TimeGate with Prefer answers with the same Preference-Applied when fetched', async (t) => {
  for (const uriR of [R, GZ, CSS, BASED, GZ_BASED]) {
    for (const prefer of ['original-content', 'original-links', 'echo-original-headers', 'rewritten', 'raw']) {
      const g = await request(tg(uriR), { headers: { 'accept-datetime': D1, prefer } });
      const res = await request(g.headers.location as string, { headers: { prefer } });
      t.equal(res.status, 200);
      t.equal(res.headers['preference-applied'], g.headers['preference-applied'], `${uriR} ${prefer}: ${g.headers['preference-applied']}`);
      t.equal(res.headers['content-location'], g.headers.location);
    }
  }
  const based = await request(tg(BASED), { headers: { prefer: 'original-links' } });
  t.equal(based.headers['preference-applied'], ALL, 'an HTML page that already has a base element is served unchanged: all three');
  const gzBased = await request(tg(GZ_BASED), { headers: { prefer: 'original-links' } });
  t.equal(gzBased.headers['preference-applied'], ALL, 'also when gzip-encoded');
  const gz = await request(tg(GZ), { headers: { prefer: 'original-links' } });
  t.equal(gz.headers['preference-applied'], LINKS_HTML, 'a gzip page that gets a base element: two');
});

t.test(
  'Prefer rule 8 with a stored Refresh: the TimeGate names the Preference-Applied its URI-M answers with (the replay form sends the Refresh rewritten)',
  async (t) => {
    const IMG = 'http://www.example.org/refresh.png';
    const HTML = 'http://www.example.org/refresh.html';
    const PLAIN = 'http://www.example.org/plain.txt';
    const refresh: [string, string] = ['Refresh', '5; url=http://www.example.org/next'];
    await put(IMG, D1, [['Content-Type', 'image/png'], refresh], Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    await put(HTML, D1, [['Content-Type', 'text/html'], refresh], PAGE);
    await put(PLAIN, D1, [['Content-Type', 'text/plain']], 'plain');
    const expected: Record<string, string> = {
      [IMG]: 'original-content, echo-original-headers',
      [HTML]: REPLAY_HTML,
      [PLAIN]: ALL,
    };
    for (const uriR of [IMG, HTML, PLAIN]) {
      const g = await request(tg(uriR), { headers: { prefer: 'echo-original-headers' } });
      t.equal(g.status, 302);
      t.equal(g.headers.location, m(uriR, D1), `${uriR}: echo-original-headers alone keeps the replay URI-M`);
      const res = await request(g.headers.location as string, { headers: { prefer: 'echo-original-headers' } });
      t.equal(res.status, 200);
      t.equal(res.headers['preference-applied'], g.headers['preference-applied'], `${uriR}: the TimeGate and its URI-M agree`);
      t.equal(res.headers['preference-applied'], expected[uriR], `${uriR}: ${expected[uriR]}`);
      if (uriR !== PLAIN) t.equal(res.headers.refresh, `5; url=${m('http://www.example.org/next', D1)}`, `${uriR}: the Refresh goes out into the archive`);
      for (const prefer of ['original-content', 'original-links', 'rewritten', 'raw']) {
        const g2 = await request(tg(uriR), { headers: { prefer } });
        const res2 = await request(g2.headers.location as string, { headers: { prefer } });
        t.equal(res2.headers['preference-applied'], g2.headers['preference-applied'], `${uriR} ${prefer}: ${g2.headers['preference-applied']}`);
      }
    }
  },
);
