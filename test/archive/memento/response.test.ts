import zlib from 'node:zlib';
import t from 'tap';
import type { Selection } from '../../../archive/read/nearest.js';
import { formFor, type MementoForm, parsePrefer } from '../../../archive/memento/prefer.js';
import { originalHeaders } from '../../../archive/memento/original-headers.js';
import { assembleMemento, type MementoRequest, REPLAY_SANDBOX, replayCsp, storedCsp } from '../../../archive/memento/response.js';
import { ReplayCache } from '../../../archive/replay/cache.js';
import type { RawHeader } from '#shared/http-head.js';
import { BASE, bytes, DT, type Fake, PAGE, reader, row, stored, URI_R, WITH_BASE } from './helpers.js';

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
  t.same(
    originalHeaders({ headers: [] }),
    { headers: {}, contentType: undefined, contentEncoding: undefined, location: undefined, refresh: undefined },
    'no headers',
  );
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

// A single memento: its navigation is itself (first last memento).
const REF = { id: 7, datetime: DT, uri_r: URI_R };
const SELECTION: Selection = { memento: REF, first: REF, last: REF };
const URI_M = `${BASE}/2001/memento/20010320203500/${URI_R}`;
const OL_URI_M = `${BASE}/2001/memento/20010320203500ol_/${URI_R}`;
const RAW_URI_M = `${BASE}/2001/memento/20010320203500id_/${URI_R}`;
/** The archive address of `url` at the fake memento's datetime. */
const M = (url: string) => `${BASE}/2001/memento/20010320203500/${url}`;

function request(mime: string, opts: { address?: MementoForm; prefer?: string; status?: number } = {}): MementoRequest {
  const prefer = parsePrefer(opts.prefer);
  const addressForm = opts.address ?? 'replay';
  return {
    base: BASE,
    archiveId: '2001',
    uriR: URI_R,
    row: row(mime, opts.status),
    selection: SELECTION,
    addressForm,
    form: formFor(prefer, addressForm),
    prefer,
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
      `<${BASE}/2001/receipt/20010320203500/${URI_R}>; rel="describedby"; type="text/plain", ` +
      `<${URI_M}>; rel="first last memento"; datetime="Tue, 20 Mar 2001 20:35:00 GMT"`,
  );
  t.equal(a.headers.vary, 'prefer', 'Prefer rules 5 and 6');
  t.equal(a.headers['content-type'], 'text/plain');
  t.equal(a.headers['content-length'], '2');
  t.equal(a.headers['content-location'], URI_M, 'Prefer rule 6: the URI-M of the form served');
  const raw = await assembleMemento(request('text/plain', { address: 'raw' }), read);
  t.match(raw.headers.link, `<${RAW_URI_M}>; rel="first last memento"`, 'an id_ address links raw URI-Ms');
  const links = await assembleMemento(request('text/plain', { address: 'links' }), read);
  t.match(links.headers.link, `<${OL_URI_M}>; rel="first last memento"`, 'an ol_ address links ol_ URI-Ms');
  const redirect = await assembleMemento(request('text/html', { status: 301 }), reader(() => stored(301, [['Location', 'http://a.example.org/y']], '')).read);
  t.equal(redirect.status, 301, 'a stored redirect is answered with its status');
});

t.test('assembleMemento: Preference-Applied and Content-Location of each form (Prefer rules 3, 4, 6)', async (t) => {
  const html = () => stored(200, [['Content-Type', 'text/html']], PAGE);
  const cases: [string, string, Parameters<typeof request>[1], string, string][] = [
    ['replay of HTML (rewritten, the replay script in)', 'text/html', {}, 'echo-original-headers', URI_M],
    ['replay, not HTML (nothing changed)', 'text/plain', {}, 'original-content, original-links, echo-original-headers', URI_M],
    ['ol_ URI-M of HTML (a base element went in)', 'text/html', { address: 'links' }, 'original-links, echo-original-headers', OL_URI_M],
    ['id_ URI-M', 'text/html', { address: 'raw' }, 'original-content, original-links, echo-original-headers', RAW_URI_M],
    ['Prefer: original-links at the replay URI-M', 'text/html', { prefer: 'original-links' }, 'original-links, echo-original-headers', OL_URI_M],
    [
      'Prefer: original-content at the replay URI-M',
      'text/html',
      { prefer: 'original-content' },
      'original-content, original-links, echo-original-headers',
      RAW_URI_M,
    ],
    [
      'Prefer: original-content at the ol_ URI-M',
      'text/html',
      { address: 'links', prefer: 'original-content' },
      'original-content, original-links, echo-original-headers',
      RAW_URI_M,
    ],
    ['Prefer: raw (pywb)', 'text/html', { prefer: 'raw' }, 'original-content, original-links, echo-original-headers, raw', RAW_URI_M],
    ['Prefer: rewritten (pywb) at the ol_ URI-M', 'text/html', { address: 'links', prefer: 'rewritten' }, 'echo-original-headers, rewritten', URI_M],
  ];
  for (const [name, mime, opts, applied, location] of cases) {
    const a = await assembleMemento(request(mime, opts), reader(html).read);
    t.same({ applied: a.headers['preference-applied'], location: a.headers['content-location'] }, { applied, location }, name);
  }
});

t.test(
  'assembleMemento: RFC 7089 §4.5.4: a 3xx memento redirects within the archive in every form, to the same form; the stored Location as X-Archive-Orig-Location',
  async (t) => {
    const cases: [string, string][] = [
      ['http://a.example.org/y', 'http://a.example.org/y'],
      ['/y?q=1', 'http://a.example.org/y?q=1'],
      ['y', 'http://a.example.org/y'],
      ['https://evil.example/login', 'https://evil.example/login'],
    ];
    const at = (modifier: string, uriR: string) => `${BASE}/2001/memento/20010320203500${modifier}/${uriR}`;
    for (const [location, target] of cases) {
      const make = () => stored(302, [['Location', location]], '');
      for (const [address, modifier] of [
        ['replay', ''],
        ['links', 'ol_'],
        ['raw', 'id_'],
      ] as const) {
        const a = await assembleMemento(request('text/html', { status: 302, address }), reader(make).read);
        // Before, the ol_ and id_ forms sent the stored Location: an open redirect on the archive's origin.
        t.equal(a.headers.location, at(modifier, target), `${location}: ${address} form, into the archive`);
        t.equal(a.headers['x-archive-orig-location'], location, `${location}: ${address} form, the stored value echoed`);
        t.equal(a.headers['preference-applied'], 'original-content, echo-original-headers', `${location}: ${address} form: its links are no longer original`);
      }
    }
    const frag = await assembleMemento(
      request('text/html', { status: 302 }),
      reader(() => stored(302, [['Location', 'https://other.example/z#frag']], '')).read,
    );
    t.equal(frag.headers.location, M('https://other.example/z') + '#frag', 'the fragment stays outside the archive address');
    const own = `${BASE}/2001/memento/20010320203500/http://a.example.org/z`;
    for (const address of ['replay', 'links', 'raw'] as const) {
      const elsewhere = await assembleMemento(
        request('text/html', { status: 302, address }),
        reader(() => stored(302, [['Location', 'mailto:x@a.example.org']], '')).read,
      );
      t.equal(elsewhere.headers.location, undefined, `${address}: a Location that cannot go into the archive (not http(s)) is not sent`);
      t.equal(elsewhere.headers['x-archive-orig-location'], 'mailto:x@a.example.org', `${address}: only echoed`);
      const archive = await assembleMemento(request('text/html', { status: 302, address }), reader(() => stored(302, [['Location', own]], '')).read);
      t.equal(archive.headers.location, own, `${address}: one that names the archive already goes out as stored`);
      t.match(archive.headers['preference-applied'], 'original-links', `${address}: a link as captured`);
    }
  },
);

t.test('assembleMemento: a Refresh header goes out rewritten in the replay form only', async (t) => {
  const make = () => stored(200, [['Refresh', '5; url=/next']], 'x');
  const replay = await assembleMemento(request('text/plain'), reader(make).read);
  t.equal(replay.headers.refresh, `5; url=${M('http://a.example.org/next')}`);
  t.equal(replay.headers['x-archive-orig-refresh'], '5; url=/next');
  const links = await assembleMemento(request('text/plain', { address: 'links' }), reader(make).read);
  t.equal(links.headers.refresh, undefined, 'the links form does not send the live URL to follow');
  const plain = await assembleMemento(request('text/plain'), reader(() => stored(200, [['Refresh', '30']], 'x')).read);
  t.equal(plain.headers.refresh, undefined, 'a Refresh without a URL is only echoed');
});

t.test('assembleMemento: Location is sent only for a stored 3xx; X-Archive-Orig-Location always', async (t) => {
  const loc: RawHeader[] = [['Location', 'http://a.example.org/y']];
  for (const [status, sent] of [
    [301, true],
    [302, true],
    [200, false],
    [201, false],
  ] as const) {
    const a = await assembleMemento(request('text/plain', { status, address: 'links' }), reader(() => stored(status, loc, '')).read);
    t.equal(a.headers.location, sent ? `${BASE}/2001/memento/20010320203500ol_/http://a.example.org/y` : undefined, `${status}: Location (into the archive)`);
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
  const links = await assembleMemento(request('text/html', { address: 'links' }), reader(enc).read);
  t.equal(links.headers['content-encoding'], undefined, 'links form of HTML: decoded, so no Content-Encoding');
  t.equal(links.headers['content-length'], String(WITH_BASE.length), 'the decoded length with the base element');
  t.equal(links.headers['x-archive-orig-content-encoding'], 'gzip', 'the original header is still echoed');
  const replay = await assembleMemento(request('text/html'), reader(enc).read);
  t.equal(replay.headers['content-encoding'], undefined, 'replay of HTML: decoded');
  t.equal(replay.headers['content-length'], String((await bytes(replay.plan.body)).length), 'its length exact');
  const raw = await assembleMemento(request('text/html', { address: 'raw' }), reader(enc).read);
  t.same([raw.headers['content-encoding'], raw.headers['content-length']], ['gzip', String(gz.length)], 'raw: the stored coding and length');
  const js = await assembleMemento(request('application/javascript'), reader(enc).read);
  t.same([js.headers['content-encoding'], js.headers['content-length']], ['gzip', String(gz.length)], 'a script: as stored, coding kept');
});

t.test(
  'assembleMemento: every form sandboxed, nosniff, CORS open; the replay form kept on the archive origin, the stored forms fetch nothing and download',
  async (t) => {
    const html = () => stored(200, [['Content-Type', 'text/html']], PAGE);
    for (const address of ['replay', 'links', 'raw'] as const) {
      const a = await assembleMemento(request('text/html', { address }), reader(html).read);
      t.equal(a.headers['content-security-policy'], address === 'replay' ? replayCsp(BASE) : storedCsp(BASE), address);
      t.match(a.headers['content-security-policy'], /(^|; )sandbox( allow-scripts|;)/, `${address}: sandboxed`);
      t.notMatch(a.headers['content-security-policy'], /allow-same-origin|allow-popups/, `${address}: not as the archive's origin, no popups`);
      t.equal(
        a.headers['content-disposition'],
        address === 'replay' ? undefined : 'attachment',
        `${address}: ${address === 'replay' ? 'shown' : 'a download'}`,
      );
      t.equal(a.headers['x-content-type-options'], 'nosniff');
      t.equal(a.headers['access-control-allow-origin'], '*');
    }
    t.equal(REPLAY_SANDBOX, 'sandbox allow-scripts allow-forms allow-modals');
    t.equal(
      replayCsp('https://arc.example.net/web'),
      "default-src 'self' https://arc.example.net data: blob: 'unsafe-inline' 'unsafe-eval'; frame-src 'self' https://arc.example.net; " +
        "form-action 'self' https://arc.example.net; " +
        REPLAY_SANDBOX,
    );
    const stored_ = "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:";
    t.equal(
      storedCsp('https://arc.example.net/web'),
      `${stored_}; frame-ancestors https://arc.example.net`,
      'the stored forms: no script, no fetch, framed by the pages alone',
    );
    t.equal(
      storedCsp('https://replay.example.net/web', 'https://arc.example.net'),
      `${stored_}; frame-ancestors https://arc.example.net`,
      'on replay_origin: framed by the pages of the main origin',
    );
  },
);

t.test('assembleMemento: a replayed page is kept in the cache and served from it without reading the record', async (t) => {
  const cache = new ReplayCache(1024 * 1024);
  const page = '<html><head></head><body><img src="i.png"></body></html>';
  const { read, reads } = reader(() => stored(200, [['Content-Type', 'text/html']], page));
  const first = await assembleMemento(request('text/html'), read, cache);
  const second = await assembleMemento(request('text/html'), read, cache);
  t.equal(reads.length, 1, 'read once');
  t.same(second.headers, first.headers, 'the same headers');
  t.equal((await bytes(second.plan.body)).toString(), (await bytes(first.plan.body)).toString(), 'the same body');
  await assembleMemento(request('text/html', { address: 'links' }), read, cache);
  t.equal(reads.length, 2, 'another form is not served from the replay cache');
  const image = reader(() => stored(200, [['Content-Type', 'image/png']], 'PNG'));
  const images = new ReplayCache(1024 * 1024);
  await assembleMemento(request('image/png'), image.read, images);
  await assembleMemento(request('image/png'), image.read, images);
  t.equal(image.reads.length, 2, 'an unchanged body is not kept');
  const none = new ReplayCache(0);
  const again = reader(() => stored(200, [['Content-Type', 'text/html']], page));
  await assembleMemento(request('text/html'), again.read, none);
  await assembleMemento(request('text/html'), again.read, none);
  t.equal(again.reads.length, 2, 'replay_cache_bytes 0 keeps nothing');
});

t.test('assembleMemento: RFC 9110 §8.6: no Content-Length in a 204 answer', async (t) => {
  const a = await assembleMemento(request('text/html', { status: 204 }), reader(() => stored(204, [], '')).read);
  t.equal(a.plan.bodyless, true);
  t.equal(a.headers['content-length'], undefined, 'a server MUST NOT send Content-Length in a 204');
});
