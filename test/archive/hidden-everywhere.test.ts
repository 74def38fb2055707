/**
 * One canonical form of a URL for every rule, and hidden means hidden
 * everywhere (docs/url-space.md "One canonical form of a URL", "Hidden
 * means hidden everywhere"): a capture stored under another spelling of an
 * excluded URL (`/%65xcluded/page`, `/excluded//page`) is hidden by the
 * rule on `/excluded/`; every read address answers a hidden URL exactly as
 * one never captured (status, headers, body), the home page's counts, the
 * prefix list and its paging cursor leave hidden captures out; a capture
 * PUT's answer never names a hidden memento (nor its tag);
 * `/cdx` errors carry `nosniff`.
 */
import { createHash } from 'node:crypto';
import type { Test } from 'tap';
import t from 'tap';
import { captureEntityTag } from '#shared/capture-tag.js';
import { epoch, formatHttpDate, partsOf, seed, ts14 } from '../conformance/helpers.js';
import { type Answer, captureRecord, putCapture, request, startArchive, type TestArchive, TWO_ARCHIVES } from '../helpers/archive.js';
import { indexRowOf } from '../helpers/index-rows.js';

const JAN = 'Mon, 01 Jan 2001 00:00:00 GMT';
const JUN = 'Fri, 01 Jun 2001 12:00:00 GMT';
const DEC = 'Sat, 01 Dec 2001 00:00:00 GMT';
const RULES = `${TWO_ARCHIVES}access:\n  - url: http://www.example.org/excluded/*\n    action: exclude\n`;

/** The spellings of excluded URLs that the captures use, and the ones a reader asks for. */
const STORED = ['http://www.example.org/%65xcluded/page', 'http://www.example.org/excluded//page', 'http://www.example.org/ex%63luded/%70age'];
const ASKED = [...STORED, 'http://www.example.org/excluded/page'];

/** Every address a reader may ask about `uriR`. */
function addresses(uriR: string): [string, string, Record<string, string>?][] {
  return [
    ['redirector', `/tg/${uriR}`],
    ['redirector at a date', `/tg/${uriR}`, { 'accept-datetime': JUN }],
    ['index TimeMap', `/tg/timemap/${uriR}`],
    ['index TimeMap, JSON', `/tg/timemap/json/${uriR}`],
    ['TimeGate', `/2025/timegate/${uriR}`],
    ['Memento', `/2025/memento/${ts14(JUN)}/${uriR}`],
    ['Memento id_', `/2025/memento/${ts14(JUN)}id_/${uriR}`],
    ['Memento, a timestamp prefix', `/2025/memento/2001/${uriR}`],
    ['Memento for a browser', `/2025/memento/${ts14(JUN)}/${uriR}`, { accept: 'text/html' }],
    ['link TimeMap', `/2025/timemap/link/${uriR}`],
    ['JSON TimeMap', `/2025/timemap/json/${uriR}`],
    ['timebundle', `/2025/timebundle/${uriR}`],
    ['/cdx', `/cdx?url=${encodeURIComponent(uriR)}`],
    ['/cdx json', `/cdx?url=${encodeURIComponent(uriR)}&output=json`],
    ['/cdx closest', `/cdx?url=${encodeURIComponent(uriR)}&sort=closest&closest=2001`],
    ['/cdx prefix', `/cdx?url=${encodeURIComponent('http://www.example.org/*')}`],
    ['/cdx host', `/cdx?url=www.example.org&matchType=host`],
    ['calendar', `/web/*/${uriR}`],
    ['replay page', `/web/2001/${uriR}`],
    ['prefix list', `/web/*/http://www.example.org/*`],
    ['home page', `/web/`],
  ];
}

/**
 * Asserts that `got` (from `a`) is `want` (from `b`) as a user sees it: status, headers but the date, body; the archives'
 * addresses made one, and so the pages' script nonces (fresh in every answer, whatever the URL).
 */
function sameAnswer(t: Test, got: Answer, want: Answer, a: TestArchive, b: TestArchive, what: string): void {
  const norm = (s: string, x: TestArchive) =>
    s
      .split(x.url)
      .join('{base}')
      .split(`127.0.0.1:${x.port}`)
      .join('{host}')
      .replace(/nonce-[A-Za-z0-9+/_-]+=*/g, 'nonce-{nonce}')
      .replace(/nonce="[A-Za-z0-9+/_-]+=*"/g, 'nonce="{nonce}"');
  const heads = (r: Answer, x: TestArchive) =>
    Object.fromEntries(
      Object.entries(r.headers).flatMap(([k, v]) => (k === 'date' || k === 'connection' || k === 'keep-alive' ? [] : [[k, norm(String(v), x)]])),
    );
  t.equal(got.status, want.status, `${what}: the status of a URL never captured`);
  t.same(heads(got, a), heads(want, b), `${what}: its headers`);
  t.equal(norm(got.text, a), norm(want.text, b), `${what}: its body`);
}

t.test('a capture under another spelling of an excluded URL is hidden by its rule: every address answers as if nothing was captured', async (t) => {
  const a = await startArchive(RULES);
  const b = await startArchive(RULES); // the same archive that never captured anything
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  // Each spelling at its own seconds (two captures of one URL in one second are one memento at most).
  for (const [i, uri] of STORED.entries()) for (const d of [JAN, JUN, DEC]) await seed(a, uri, formatHttpDate(new Date((epoch(d) + i) * 1000)));
  t.same(new Set((await a.store.index.dump()).map((r) => r.urlkey)), new Set(['org,example,www)/excluded/page']), 'stored: nine mementos of one urlkey');
  for (const uri of ASKED) {
    for (const [what, path, headers] of addresses(uri)) {
      for (const method of ['GET', 'HEAD']) {
        const got = await request(a.url + path, { method, headers });
        const want = await request(b.url + path, { method, headers });
        sameAnswer(t, got, want, a, b, `${method} ${what} of ${uri}`);
      }
    }
  }
});

t.test('the urlkeys of every spelling are one: the index keys them so, and a URL beside it is not hidden', async (t) => {
  const a = await startArchive(RULES);
  t.teardown(() => a.close());
  await seed(a, STORED[0], JAN);
  await seed(a, 'http://www.example.org/excludedx/page', JAN);
  const rows = await a.store.index.dump();
  t.same(
    rows.map((r) => [r.uri_r, r.urlkey]).sort(),
    [
      ['http://www.example.org/%65xcluded/page', 'org,example,www)/excluded/page'],
      ['http://www.example.org/excludedx/page', 'org,example,www)/excludedx/page'],
    ],
    'the stored URI-R keeps its spelling; the urlkey is canonical',
  );
  t.equal((await request(`${a.url}/tg/http://www.example.org/excludedx/page`)).status, 302, '/excludedx/ is not under /excluded/');
});

/** An index row of `uriR` at `datetime` in archive 2025 (only the index is read by the pages tested with it). */
const row = (uriR: string, datetime: number) => indexRowOf('2025', uriR, datetime);

t.test('the prefix list: its paging cursor is never a hidden urlkey, its pages are those of an archive that never captured the hidden URLs', async (t) => {
  // 102 shown URLs; hidden ones sort right after the 99th and the 102nd: a page of 100 URLs must end at a shown one.
  const shown = Array.from({ length: 102 }, (_, i) => `http://www.example.org/p/${String(i).padStart(3, '0')}`);
  const hidden = ['http://www.example.org/p/098x', 'http://www.example.org/p/101x'];
  const rules = `${TWO_ARCHIVES}access:\n${hidden.map((u) => `  - url: ${u}\n    action: exclude\n`).join('')}`;
  const a = await startArchive(rules);
  const b = await startArchive(rules);
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  const t0 = epoch(JAN);
  await a.store.index.insertMany([...shown.map((u, i) => row(u, t0 + i)), ...hidden.map((u, i) => row(u, t0 + 500 + i))]);
  await b.store.index.insertMany(shown.map((u, i) => row(u, t0 + i)));
  let path = '/web/*/http://www.example.org/p/*';
  let pages = 0;
  while (path) {
    const got = await request(a.url + path);
    sameAnswer(t, got, await request(b.url + path), a, b, `page ${++pages}`);
    for (const h of hidden) t.notMatch(got.text, h.slice(h.lastIndexOf('/')), `page ${pages}: no word of ${h}`);
    const next = /href="[^"]*?(\/web\/\*\/[^"]*\?after=[^"]*)"/.exec(got.text);
    path = next ? next[1].replace(/&amp;/g, '&') : '';
  }
  t.equal(pages, 2, 'two pages: 100 URLs, then 2');
});

t.test("the home page's totals, sites and latest captures leave hidden captures out", async (t) => {
  const a = await startArchive(RULES);
  const b = await startArchive(RULES);
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  for (const x of [a, b]) await seed(x, 'http://www.example.org/shown', JAN);
  for (const d of [JAN, JUN, DEC]) await seed(a, 'http://www.example.org/excluded/page', d);
  await seed(a, 'http://hidden-host.example/excluded', JUN); // not under the rule: shown, on both
  await seed(b, 'http://hidden-host.example/excluded', JUN);
  sameAnswer(t, await request(`${a.url}/web/`), await request(`${b.url}/web/`), a, b, 'home page');
});

const sha256 = (s: string) => 'sha256:' + createHash('sha256').update(s).digest('hex');

t.test('a capture PUT identical to a hidden memento is a new memento: the answer names it, never the hidden one', async (t) => {
  const a = await startArchive(RULES);
  t.teardown(() => a.close());
  const D1 = 'Tue, 20 Oct 2026 10:00:00 GMT';
  const D2 = 'Tue, 20 Oct 2026 10:00:05 GMT';
  const body = '<html><body>secret</body></html>';
  const rec = (uriR: string, date: string) => captureRecord({ ...partsOf(uriR), date, body, responseHeaders: [['Content-Type', 'text/html']] });
  const plain = 'http://www.example.org/excluded/page';
  t.equal((await putCapture(a, plain, rec(plain, D1))).status, 201, 'the hidden capture');
  const put = await putCapture(a, ASKED[3], rec(ASKED[3], D2));
  t.equal(put.status, 201, 'a capture identical to a hidden memento is a new memento (201), not a duplicate of it');
  t.match(put.headers.location ?? '', new RegExp(ts14(D2)), 'the answer names the new memento');
  t.notMatch(put.text, new RegExp(ts14(D1)), 'not the hidden one');
  t.equal(put.headers.etag, captureEntityTag({ digest: sha256(body), status: 200, mime: 'text/html' }), "its ETag: the new memento's tag");
  t.equal(put.headers['archive-revisit-after'], formatHttpDate(epoch(D2) + 86_400), 'revisit after: a day after the new memento');
});

t.test('/cdx errors carry X-Content-Type-Options: nosniff, as its answers do', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  for (const q of ['', 'url=ftp://x/', 'url=http://a.example/&limit=x', 'url=http://a.example/&filter=x', 'url=http://a.example/']) {
    const r = await request(`${a.url}/cdx?${q}`);
    t.equal(r.headers['x-content-type-options'], 'nosniff', `/cdx?${q}: ${r.status} with nosniff`);
  }
});

t.test('/cdx over many urlkeys leaves out wholly hidden ones without reading them, and lists what a more specific rule shows', async (t) => {
  const rules = `${RULES}  - url: http://www.example.org/excluded/open*\n    action: allow\n  - url: http://www.example.org/excluded/late\n    action: allow\n    after: 2001-06-01\n`;
  const a = await startArchive(rules);
  t.teardown(() => a.close());
  for (const u of ['/excluded/a', '/excluded/open', '/excluded/opener', '/excluded/late', '/excluded/z', '/f'])
    for (const d of [JAN, DEC]) await seed(a, `http://www.example.org${u}`, d);
  for (const q of [
    'url=http://www.example.org/*',
    'url=www.example.org&matchType=host',
    'url=example.org&matchType=domain',
    'url=http://www.example.org/*&sort=reverse',
  ]) {
    const r = await request(`${a.url}/cdx?${q}&fl=original,timestamp`);
    const lines = r.text.trim().split('\n').sort();
    t.same(
      lines,
      [
        `http://www.example.org/excluded/late ${ts14(DEC)}`,
        ...['open', 'opener'].flatMap((p) => [JAN, DEC].map((d) => `http://www.example.org/excluded/${p} ${ts14(d)}`)),
        ...[JAN, DEC].map((d) => `http://www.example.org/f ${ts14(d)}`),
      ].sort(),
      `${q}: the shown mementos, and only those`,
    );
  }
  const all = (await request(`${a.url}/cdx?url=http://www.example.org/*&fl=original,timestamp`)).text.trim().split('\n');
  const paged = (await request(`${a.url}/cdx?url=http://www.example.org/*&fl=original,timestamp&limit=2&showResumeKey=true`)).text.split('\n').filter(Boolean);
  const key = paged.pop()!;
  const rest = (await request(`${a.url}/cdx?url=http://www.example.org/*&fl=original,timestamp&resumeKey=${key}`)).text.trim().split('\n');
  t.same([...paged, ...rest], all, 'paged with a resume key: the same lines');
});
