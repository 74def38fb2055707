/**
 * Conformance: the Memento (RFC 7089 §2.1.1, §4.2.1, §4.5.4) and the
 * original headers (docs/architecture.md "Replay and Prefer": X-Archive-Orig-*), issue points 2
 * and 3.
 */

import zlib from 'node:zlib';
import t from 'tap';
import { captureRecord, putCapture, request, startArchive } from '../helpers/archive.js';
import { byRel, headMatchesGet, links, noMementoHeaders, olOf, partsOf, replayScript, seed, ts14 } from './helpers.js';

const R = 'http://www.example.org/a/page.html';
const D = ['Mon, 05 Mar 2001 09:07:03 GMT', 'Tue, 20 Mar 2001 20:35:00 GMT', 'Fri, 01 Jun 2001 00:00:00 GMT'];
const DAY = 'Thu, 12 Apr 2001 10:00:00 GMT';

const a = await startArchive();
t.teardown(() => a.close());
for (const d of D) await seed(a, R, d);
const uriM = (uriR: string, d: string, raw = false) => `${a.url}/2025/memento/${ts14(d)}${raw ? 'id_' : ''}/${uriR}`;

/** PUTs one capture of `uriR` at DAY with the given response parts. */
async function capture(uriR: string, parts: Parameters<typeof captureRecord>[0]): Promise<string> {
  const res = await putCapture(a, uriR, captureRecord({ ...partsOf(uriR), date: DAY, ...parts }));
  if (res.status !== 201) throw new Error(`${res.status} ${res.text}`);
  return uriM(uriR, DAY);
}

t.test('RFC 7089 §2.1.1 + §4.2.1: a Memento is 200 with Memento-Datetime and Link original, timegate, timemap and its neighbours', async (t) => {
  const res = await request(uriM(R, D[1]));
  t.equal(res.status, 200);
  t.equal(res.headers['memento-datetime'], 'Tue, 20 Mar 2001 20:35:00 GMT');
  const base = a.url;
  t.equal(
    res.headers.link,
    [
      `<${R}>; rel="original"`,
      `<${base}/2025/timegate/${R}>; rel="timegate"`,
      `<${base}/2025/timemap/link/${R}>; rel="timemap"; type="application/link-format"`,
      `<${base}/2025/receipt/${ts14(D[1])}/${R}>; rel="describedby"; type="text/plain"`,
      `<${uriM(R, D[0])}>; rel="first prev memento"; datetime="Mon, 05 Mar 2001 09:07:03 GMT"`,
      `<${uriM(R, D[1])}>; rel="memento"; datetime="Tue, 20 Mar 2001 20:35:00 GMT"`,
      `<${uriM(R, D[2])}>; rel="next last memento"; datetime="Fri, 01 Jun 2001 00:00:00 GMT"`,
    ].join(', '),
  );
  t.equal(res.headers['content-type'], 'text/html; charset=utf-8');
  const stored = `<html><head><title>${D[1]}</title></head><body>${R} at ${D[1]}</body></html>`;
  t.equal(res.text, stored.replace('<head>', `<head>${replayScript(a.url, D[1])}`), 'the archival replay: the replay script first in the head');
  t.equal(res.headers['content-length'], String(res.body.length), 'Content-Length counts the inserted script element');
});

t.test('RFC 7089 §4.2.1: a request to a Memento that carries Accept-Datetime is answered like any other', async (t) => {
  const plain = await request(uriM(R, D[1]));
  const withAd = await request(uriM(R, D[1]), { headers: { 'accept-datetime': 'Thu, 01 Jan 2099 00:00:00 GMT' } });
  const bad = await request(uriM(R, D[1]), { headers: { 'accept-datetime': 'not a date' } });
  for (const res of [withAd, bad]) {
    t.equal(res.status, 200);
    t.same({ ...res.headers, date: 0 }, { ...plain.headers, date: 0 });
    t.same(res.body, plain.body);
  }
});

t.test('docs/url-space.md: a timestamp that is not stored redirects (302) to the nearest URI-M; a prefix too', async (t) => {
  const near = await request(`${a.url}/2025/memento/20010321000000/${R}`);
  t.equal(near.status, 302);
  t.equal(near.headers.location, uriM(R, D[1]));
  t.notOk(near.headers['memento-datetime'], 'the redirect is not a Memento');
  t.equal(near.text, uriM(R, D[1]) + '\n');
  const prefix = await request(`${a.url}/2025/memento/200106/${R}`);
  t.equal(prefix.status, 302);
  t.equal(prefix.headers.location, uriM(R, D[2]));
  const raw = await request(`${a.url}/2025/memento/20010321000000id_/${R}`);
  t.equal(raw.headers.location, uriM(R, D[1], true), 'the raw variant stays raw');
});

t.test('docs/url-space.md: a malformed Memento timestamp is 400 with a reason and no Memento headers', async (t) => {
  for (const ts of ['2001032020350x', '20011320203500', '20010332203500', '2001133', 'latest', '20010320203500zz_', '20010320203500ID_']) {
    const res = await request(`${a.url}/2025/memento/${ts}/${R}`);
    t.equal(res.status, 400, ts);
    t.match(res.text, /^malformed Memento timestamp/);
    noMementoHeaders(t, res, ts);
  }
  const none = await request(`${a.url}/2025/memento/20010320203500/http://www.example.org/never`);
  t.equal(none.status, 404);
  noMementoHeaders(t, none, 'unknown URI-R');
});

t.test('Wayback timestamps: 1-13 digits name a period (its last memento, else the nearest); digits beyond now the newest', async (t) => {
  const cases: [string, string][] = [
    ['2001', D[2]], // the last memento of 2001
    ['200103', D[1]], // March 2001: its last one, not the first
    ['2001032020350', D[1]], // 13 digits: 20:35:00 to 20:35:09
    ['2000', D[0]], // no memento in 2000: the nearest, the first of 2001
    ['2', D[2]], // 2000-2999: its last memento, the newest
    ['99999999999999', D[2]],
    ['2999', D[2]],
    ['3', D[2]],
  ];
  for (const [ts, d] of cases) {
    const res = await request(`${a.url}/2025/memento/${ts}/${R}`);
    t.equal(res.status, 302, ts);
    t.equal(res.headers.location, uriM(R, d), ts);
    noMementoHeaders(t, res, ts);
  }
  const raw = await request(`${a.url}/2025/memento/99999999999999id_/${R}`);
  t.equal(raw.headers.location, uriM(R, D[2], true), 'the newest, raw');
});

t.test('Wayback context modifiers im_ js_ cs_ oe_ if_ fw_: answered as the archival replay it names in Content-Location', async (t) => {
  const css = await capture('http://www.example.org/ctx.css', {
    responseHeaders: [['Content-Type', 'text/css']],
    body: 'body { background: url(/img/bg.png) }\n',
  });
  for (const plain of [uriM(R, D[1]), css]) {
    const want = await request(plain);
    t.equal(want.status, 200);
    for (const mod of ['im_', 'js_', 'cs_', 'oe_', 'if_', 'fw_']) {
      const res = await request(plain.replace(/(\/memento\/\d{14})\//, `$1${mod}/`));
      t.equal(res.status, 200, mod);
      t.same({ ...res.headers, date: 0 }, { ...want.headers, date: 0 }, `${mod}: the headers of the replay, its Content-Location and Link`);
      t.equal(res.text, want.text, `${mod}: the body of the replay`);
    }
  }
  t.equal(
    (await request(css)).text,
    `body { background: url("${a.url}/2025/memento/${ts14(DAY)}/http://www.example.org/img/bg.png") }\n`,
    'the stylesheet rewritten as CSS',
  );
  const near = await request(`${a.url}/2025/memento/2001im_/${R}`);
  t.equal(near.status, 302);
  t.equal(near.headers.location, uriM(R, D[2]), 'an unstored timestamp redirects to the archival replay URI-M');
});

t.test('RFC 7089 §4.5.4: a Memento of a 302 replays status and Location, with Memento-Datetime', async (t) => {
  const abs = await capture('http://www.example.org/moved', {
    status: 302,
    reason: 'Found',
    responseHeaders: [
      ['Location', 'http://www.example.org/new'],
      ['Content-Type', 'text/html'],
    ],
    body: '<a href="/new">moved</a>',
  });
  const res = await request(abs);
  t.equal(res.status, 302);
  t.equal(res.headers.location, uriM('http://www.example.org/new', DAY), 'the archival replay redirects within the archive, at its own datetime');
  t.equal(res.headers['x-archive-orig-location'], 'http://www.example.org/new');
  t.equal(res.headers['access-control-allow-origin'], '*');
  // The stored forms redirect within the archive too, to the same form (as pywb does); the stored value is only
  // X-Archive-Orig-Location. Before, they answered with the stored Location: an open redirect on the archive's origin.
  for (const form of ['ol_', 'id_']) {
    const kept = await request(abs.replace(`/${ts14(DAY)}/`, `/${ts14(DAY)}${form}/`));
    t.same(
      [kept.status, kept.headers.location, kept.headers['x-archive-orig-location']],
      [302, `${a.url}/2025/memento/${ts14(DAY)}${form}/http://www.example.org/new`, 'http://www.example.org/new'],
      `${form}: Location into the archive, the stored one echoed`,
    );
  }
  t.equal(res.headers['memento-datetime'], DAY);
  t.ok(byRel(links(res.headers.link), 'original').length);
  const rel = await capture('http://www.example.org/dir/rel', {
    status: 301,
    reason: 'Moved Permanently',
    responseHeaders: [
      ['Location', '../other?x=1'],
      ['Content-Type', 'text/plain'],
    ],
    body: '',
  });
  const res2 = await request(rel);
  t.equal(res2.status, 301);
  t.equal(res2.headers.location, uriM('http://www.example.org/other?x=1', DAY), 'a relative Location resolved against the URI-R, into the archive');
  const olRel = await request(olOf(rel));
  t.equal(
    olRel.headers.location,
    olOf(uriM('http://www.example.org/other?x=1', DAY)),
    'a relative Location in the ol_ form: resolved, into the archive as ol_',
  );
  t.equal(olRel.headers['preference-applied'], 'original-content, echo-original-headers', 'so its links are no longer all as captured');
  t.equal(res2.headers['x-archive-orig-location'], '../other?x=1');
  t.equal(res2.body.length, 0);
  t.equal(res2.headers['content-length'], '0');
  await headMatchesGet(t, abs);
});

t.test('a stored redirect to another site: no form of the memento, and no /web/ address, redirects out of the archive', async (t) => {
  const evil = 'https://evil.example/login';
  const m = await capture('http://www.example.org/login', {
    status: 302,
    reason: 'Found',
    responseHeaders: [
      ['Location', evil],
      ['Content-Type', 'text/html'],
    ],
    body: `<a href="${evil}">moved</a>`,
  });
  const ts = ts14(DAY);
  for (const [form, url, headers] of [
    ['replay', m, {}],
    ['ol_', m.replace(`/${ts}/`, `/${ts}ol_/`), {}],
    ['id_', m.replace(`/${ts}/`, `/${ts}id_/`), {}],
    ['Prefer: original-content', m, { prefer: 'original-content' }],
    ['Prefer: original-links', m, { prefer: 'original-links' }],
  ] as const) {
    const res = await request(url, { headers });
    const modifier = form === 'replay' ? '' : form === 'ol_' || form === 'Prefer: original-links' ? 'ol_' : 'id_';
    t.same(
      [res.status, res.headers.location, res.headers['x-archive-orig-location']],
      [302, `${a.url}/2025/memento/${ts}${modifier}/${evil}`, evil],
      `${form}: Location is the archive's address of the target, the stored value only echoed`,
    );
  }
  // The /web/ address of the raw form redirects to the raw memento, whose redirect stays in the archive: followed to the end.
  let url = `${a.url}/web/2026id_/http://www.example.org/login`;
  const chain: number[] = [];
  for (let hops = 0; hops < 5; hops++) {
    const res = await request(url);
    chain.push(res.status);
    if (res.status < 300 || res.status >= 400) break;
    url = new URL(res.headers.location!, url).href;
    // Never asked of the outside (nothing leaves 127.0.0.1, even when this fails).
    if (!t.ok(url.startsWith(`${a.url}/`), `hop ${hops + 1} stays on the archive: ${url}`)) break;
  }
  t.same(chain, [302, 302, 404], '/web/2026id_/: to the raw memento, to the raw address of the target, which the archive does not have');
});

t.test('RFC 7089 §4.5.5: a Memento of a 404 replays the 404 with Memento-Datetime', async (t) => {
  const m = await capture('http://www.example.org/gone', {
    status: 404,
    reason: 'Not Found',
    responseHeaders: [['Content-Type', 'text/plain']],
    body: 'no such page',
  });
  const res = await request(m);
  t.equal(res.status, 404);
  t.equal(res.headers['memento-datetime'], DAY);
  t.equal(res.text, 'no such page');
});

t.test(
  'docs/architecture.md (replay and Prefer): the ol_ form (original links) has a base element right after <head>, or after doctype/<html> without a head, never when the page has one; charset kept',
  async (t) => {
    const cases: [string, string, string, string][] = [
      [
        'with-head',
        'text/html; charset=iso-8859-1',
        '<!DOCTYPE html><html><HEAD lang="x"><title>\xe9t\xe9</title></HEAD><body>b</body></html>',
        '<!DOCTYPE html><html><HEAD lang="x"><base href="http://www.example.org/base/with-head"><title>\xe9t\xe9</title></HEAD><body>b</body></html>',
      ],
      [
        'no-head',
        'text/html',
        '<!doctype html>\n<html lang="en"><p>para</p></html>',
        '<!doctype html>\n<html lang="en"><base href="http://www.example.org/base/no-head"><p>para</p></html>',
      ],
      [
        'has-base',
        'text/html; charset=utf-8',
        '<html><head><base href="http://elsewhere.example/"></head><body>x</body></html>',
        '<html><head><base href="http://elsewhere.example/"></head><body>x</body></html>',
      ],
      [
        'xhtml',
        'application/xhtml+xml',
        '<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>x</title></head></html>',
        '<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head><base href="http://www.example.org/base/xhtml"><title>x</title></head></html>',
      ],
    ];
    for (const [name, type, body, want] of cases) {
      const m = olOf(await capture(`http://www.example.org/base/${name}`, { responseHeaders: [['Content-Type', type]], body: Buffer.from(body, 'latin1') }));
      const res = await headMatchesGet(t, m);
      t.equal(res.headers['content-type'], type, `${name}: Content-Type and charset as stored`);
      t.equal(res.body.toString('latin1'), want, name);
      t.equal(res.headers['content-length'], String(Buffer.byteLength(want, 'latin1')), `${name}: Content-Length`);
      t.equal(
        res.headers['preference-applied'],
        name === 'has-base' ? 'original-content, original-links, echo-original-headers' : 'original-links, echo-original-headers',
        `${name}: Preference-Applied`,
      );
    }
  },
);

t.test(
  'docs/architecture.md (replay and Prefer): a gzip- or deflate-encoded HTML page is decoded to get its base element (ol_) or be replayed, with the right Content-Length',
  async (t) => {
    const page = '<html><head><title>gz</title></head><body>' + 'z'.repeat(100_000) + '</body></html>';
    const want = page.replace('<head>', '<head><base href="http://www.example.org/enc/NAME">');
    const encodings: [string, Buffer][] = [
      ['gzip', zlib.gzipSync(page)],
      ['deflate', zlib.deflateSync(page)],
      ['deflate-raw', zlib.deflateRawSync(page)],
      ['x-gzip', zlib.gzipSync(page)],
    ];
    for (const [name, enc] of encodings) {
      const coding = name === 'deflate-raw' ? 'deflate' : name;
      const m = await capture(`http://www.example.org/enc/${name}`, {
        responseHeaders: [
          ['Content-Type', 'text/html; charset=utf-8'],
          ['Content-Encoding', coding],
        ],
        body: enc,
      });
      const res = await headMatchesGet(t, olOf(m));
      t.equal(res.status, 200);
      t.notOk(res.headers['content-encoding'], `${name}: served decoded, so no Content-Encoding`);
      t.equal(res.headers['x-archive-orig-content-encoding'], coding);
      t.equal(res.headers['x-archive-orig-content-length'], String(enc.length));
      t.equal(res.text, want.replace('NAME', name), `${name}: decoded page with base element`);
      t.equal(res.headers['content-length'], String(res.body.length), `${name}: Content-Length of the decoded page`);
      t.equal(res.headers['content-type'], 'text/html; charset=utf-8');
      const replay = await headMatchesGet(t, m);
      t.notOk(replay.headers['content-encoding'], `${name}: replay served decoded`);
      t.equal(replay.text, page.replace('<head>', `<head>${replayScript(a.url, DAY)}`), `${name}: decoded page replayed`);
      t.equal(replay.headers['content-length'], String(replay.body.length), `${name}: Content-Length of the replay`);
    }
  },
);

t.test(
  'docs/architecture.md (replay and Prefer): a gzip HTML page that already has a base element (ol_), and a corrupt gzip page (any form), are served as stored',
  async (t) => {
    const withBase = zlib.gzipSync('<html><head><base href="http://x.example/"><title>t</title></head></html>');
    const corrupt = Buffer.concat([zlib.gzipSync('<html><head><title>t</title></head><body>' + 'y'.repeat(5000)).subarray(0, 60)]);
    for (const [name, body] of [
      ['gz-base', withBase],
      ['gz-corrupt', corrupt],
    ] as const) {
      const m = await capture(`http://www.example.org/${name}`, {
        responseHeaders: [
          ['Content-Type', 'text/html'],
          ['Content-Encoding', 'gzip'],
        ],
        body,
      });
      for (const url of name === 'gz-base' ? [olOf(m)] : [olOf(m), m]) {
        const res = await headMatchesGet(t, url);
        t.equal(res.headers['content-encoding'], 'gzip', name);
        t.equal(res.headers['content-length'], String(body.length), name);
        t.same(res.body, body, `${name}: stored bytes`);
      }
    }
  },
);

t.test('docs/architecture.md (replay and Prefer): other gzip bodies are served byte-identical with Content-Encoding and Content-Length', async (t) => {
  const css = zlib.gzipSync('body { color: red }\n'.repeat(500));
  const m = await capture('http://www.example.org/style.css', {
    responseHeaders: [
      ['Content-Type', 'text/css'],
      ['Content-Encoding', 'gzip'],
    ],
    body: css,
  });
  const res = await headMatchesGet(t, m);
  t.same(res.body, css);
  t.equal(res.headers['content-encoding'], 'gzip');
  t.equal(res.headers['content-length'], String(css.length));
  t.equal(res.headers['content-type'], 'text/css');
  t.equal(res.headers['preference-applied'], 'original-content, original-links, echo-original-headers');
  const bin = Buffer.from([0, 1, 2, 255, 254, 13, 10, 0]);
  const m2 = await capture('http://www.example.org/blob.bin', { responseHeaders: [['Content-Type', 'application/octet-stream']], body: bin });
  const res2 = await request(m2);
  t.same(res2.body, bin);
  t.equal(res2.headers['content-type'], 'application/octet-stream');
});

t.test(
  'docs/architecture.md (replay and Prefer) / issue point 3: every original header comes back as X-Archive-Orig-<name>; stale ones never as themselves',
  async (t) => {
    const stale: [string, string][] = [
      ['Set-Cookie', 'session=abc; Path=/; HttpOnly'],
      ['Set-Cookie', 'theme=dark'],
      ['Cache-Control', 'max-age=31536000, immutable'],
      ['ETag', '"abc123"'],
      ['Expires', 'Wed, 21 Oct 2099 07:28:00 GMT'],
      ['Last-Modified', 'Mon, 01 Jan 2001 00:00:00 GMT'],
      ['Content-Security-Policy', "default-src 'none'"],
      ['Strict-Transport-Security', 'max-age=63072000; includeSubDomains'],
      ['X-Frame-Options', 'DENY'],
      ['Refresh', '5; url=http://www.example.org/'],
      ['Access-Control-Allow-Origin', 'http://www.example.org'],
      ['Link', '<http://www.example.org/style.css>; rel="preload"'],
      ['Vary', 'Cookie'],
      ['Server', 'Apache/1.3.20'],
      ['Age', '100'],
      ['Content-Disposition', 'inline'],
      ['Accept-Ranges', 'bytes'],
      ['Clear-Site-Data', '"cache"'],
      ['WWW-Authenticate', 'Basic realm="x"'],
    ];
    const body = '<html><head><title>h</title></head></html>';
    const m = await capture('http://www.example.org/headers', { responseHeaders: [['Content-Type', 'text/html; charset=windows-1252'], ...stale], body });
    const res = await request(m);
    t.equal(res.status, 200);
    for (const [name, value] of stale) {
      if (['link', 'vary'].includes(name.toLowerCase())) continue;
      if (['content-security-policy', 'access-control-allow-origin'].includes(name.toLowerCase())) {
        // The archive sends its own (the sandbox of every memento; CORS open to it), never the stored one.
        t.not(res.headers[name.toLowerCase()], value, `${name} is not sent as itself`);
        continue;
      }
      if (name === 'Refresh') {
        // The replay follows it within the archive, at the memento's datetime.
        t.equal(res.headers.refresh, `5; url=${uriM('http://www.example.org/', DAY)}`, 'Refresh is sent rewritten into the archive');
        t.notOk((await request(olOf(m))).headers.refresh, 'the ol_ form does not send it');
        continue;
      }
      t.notOk(res.headers[name.toLowerCase()], `${name} is not sent as itself`);
    }
    t.equal(res.headers.vary, 'prefer', 'our own Vary, not the original one');
    t.notOk(
      links(res.headers.link).some((l) => l.uri === 'http://www.example.org/style.css'),
      'the original Link is not in our Link',
    );
    t.equal(res.headers['x-archive-orig-set-cookie'], 'session=abc; Path=/; HttpOnly, theme=dark', 'both Set-Cookie lines echoed');
    for (const [name, value] of stale.filter(([n]) => n !== 'Set-Cookie'))
      t.equal(res.headers[`x-archive-orig-${name.toLowerCase()}`], value, `X-Archive-Orig-${name}`);
    t.equal(res.headers['x-archive-orig-content-type'], 'text/html; charset=windows-1252');
    t.equal(res.headers['content-type'], 'text/html; charset=windows-1252', 'Content-Type also as itself');
    t.equal(res.headers['x-archive-orig-date'], DAY, 'the original Date echoed; Date is our own');
    t.not(res.headers.date, DAY);
    t.equal(res.headers['x-archive-orig-content-length'], String(body.length));
    t.equal(res.headers['content-length'], String(res.body.length), 'Content-Length of the body as served (replay script added)');
  },
);

t.test('RFC 9110 §9.3.2: HEAD at a Memento answers exactly as GET without the body (Content-Length included)', async (t) => {
  await headMatchesGet(t, uriM(R, D[0]));
  await headMatchesGet(t, uriM(R, D[0], true));
  await headMatchesGet(t, olOf(uriM(R, D[0])));
  await headMatchesGet(t, uriM(R, D[0]), { prefer: 'original-content' });
  await headMatchesGet(t, `${a.url}/2025/memento/2001/${R}`);
  await headMatchesGet(t, `${a.url}/2025/memento/2001x/${R}`);
});

t.test('RFC 9110 §15.5.6: POST, PUT, DELETE at a Memento are 405 with Allow: GET, HEAD', async (t) => {
  for (const method of ['POST', 'PUT', 'DELETE']) {
    const res = await request(uriM(R, D[0]), { method, headers: { 'content-type': 'application/json' }, body: '{}' });
    t.equal(res.status, 405, method);
    t.equal(res.headers.allow, 'GET, HEAD');
    noMementoHeaders(t, res, method);
  }
});

t.test('docs/architecture.md (replay and Prefer) / issue point 3: a capture without Content-Type is served without one (none is invented)', async (t) => {
  const m = await capture('http://www.example.org/untyped', { responseHeaders: [['X-Odd_Header.Name', 'v']], body: 'plain bytes' });
  const res = await headMatchesGet(t, m);
  t.notOk(res.headers['content-type']);
  t.equal(res.text, 'plain bytes');
  t.equal(res.headers['x-archive-orig-x-odd_header.name'], 'v');
  t.equal(res.headers['preference-applied'], 'original-content, original-links, echo-original-headers');
});

t.test('RFC 9110 §9.3.7: OPTIONS at a Memento is 204 with Allow: GET, HEAD, and a CORS preflight answer', async (t) => {
  const res = await request(uriM(R, D[0]), { method: 'OPTIONS', headers: { origin: 'null', 'access-control-request-method': 'GET' } });
  t.equal(res.status, 204);
  t.equal(res.headers.allow, 'GET, HEAD');
  t.equal(res.body.length, 0);
  t.same(
    [res.headers['access-control-allow-origin'], res.headers['access-control-allow-methods'], res.headers['access-control-allow-headers']],
    ['*', 'GET, HEAD', '*'],
    'a CORS preflight from a sandboxed (opaque-origin) replayed page is allowed',
  );
});
