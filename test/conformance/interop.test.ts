/**
 * Conformance with real Memento tools (issue 15, part 4): what LANL's
 * Memento validator, py-memento-client and Python's `requests` need of the
 * archive's answers, checked on the wire:
 *
 * - header field names in their registered case (`res.rawHeaders` keeps
 *   the case sent; the validator looks `Link` up by exact case);
 * - an empty `Accept-Datetime` answered as none;
 * - the redirector's choice of the archive holding the nearest memento,
 *   and its first/prev/next/last across archives;
 * - `http://example.test/?` and `http://example.test/` one URI-R in every
 *   answer (the validator appends a `?` to every address it tests);
 * - Link headers with `,` and `;` in a URI read back whole by two
 *   independent parsers: Python's `requests.utils.parse_header_links` and
 *   npm's `http-link-header`.
 */
import { execFile, execFileSync } from 'node:child_process';
import http from 'node:http';
import LinkHeader from 'http-link-header';
import t from 'tap';
import { type Link, parseLinks } from '#shared/link.js';
import { captureRecord, putCapture, request, startArchive } from '../helpers/archive.js';
import { links, seed, ts14 } from './helpers.js';

const A = await startArchive(); // "2025" until 2026-01-01, "current" from then
t.teardown(() => A.close());

const PAGE = 'http://example.test/';
const D01 = 'Tue, 20 Mar 2001 20:35:00 GMT';
const D26 = 'Wed, 07 Jan 2026 10:00:00 GMT';
await seed(A, PAGE, D01);
await seed(A, PAGE, D26);
// Two captures around the boundary of the spans: the last one of "2025" an hour before it.
const EDGE = 'http://example.test/edge';
const E25 = 'Wed, 31 Dec 2025 23:00:00 GMT';
const E26 = 'Mon, 01 Jun 2026 00:00:00 GMT';
await seed(A, EDGE, E25);
await seed(A, EDGE, E26);
// A URI-R with "," and ";" in its path and query.
const ODD = 'http://example.test/p;v=1?a=1,2;b=3';
await seed(A, ODD, D01);
await seed(A, ODD, D26);

const memento = (id: string, date: string, uriR: string, mod = '') => `${A.url}/${id}/memento/${ts14(date)}${mod}/${uriR}`;

/** An answer with the field names as they were sent (`rawHeaders`). */
interface RawAnswer {
  status: number;
  names: string[];
  headers: http.IncomingHttpHeaders;
}

/** One request; the answer's field names in the case they came in. */
function rawRequest(url: string, method = 'GET', headers: Record<string, string> = {}): Promise<RawAnswer> {
  const u = new URL(url.replace(/^(http:\/\/[^/]+)(.*)$/, '$1'));
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, method, path: url.slice(u.origin.length), headers, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode!, names: res.rawHeaders.filter((_, i) => i % 2 === 0), headers: res.headers }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Field names and their registered case (IANA HTTP Field Name Registry; RFC 7089 for Memento-Datetime, RFC 7240 for Preference-Applied). */
const REGISTERED = [
  'Link',
  'Vary',
  'Location',
  'Memento-Datetime',
  'Content-Type',
  'Preference-Applied',
  'Content-Location',
  'Allow',
  'Access-Control-Allow-Origin',
  'Content-Security-Policy',
  'X-Content-Type-Options',
];
const REGISTERED_BY_LOWER = new Map(REGISTERED.map((n) => [n.toLowerCase(), n]));

t.test('RFC 9110 §5.1 as Memento tools read it: every answer names its header fields in their registered case (Link, Vary, Location…)', async (t) => {
  const ts = ts14(D01);
  const cases: [string, string, string, Record<string, string>, string[]][] = [
    ['redirector', 'GET', `${A.url}/tg/${PAGE}`, {}, ['Link', 'Vary', 'Location', 'Content-Type']],
    ['redirector, HEAD', 'HEAD', `${A.url}/tg/${PAGE}`, { 'accept-datetime': D01 }, ['Link', 'Vary', 'Location', 'Content-Type']],
    ['TimeGate', 'GET', `${A.url}/2025/timegate/${PAGE}`, { 'accept-datetime': D01 }, ['Link', 'Vary', 'Location', 'Content-Type']],
    ['TimeGate with Prefer', 'HEAD', `${A.url}/2025/timegate/${PAGE}`, { prefer: 'original-content' }, ['Link', 'Vary', 'Location', 'Preference-Applied']],
    [
      'Memento',
      'GET',
      `${A.url}/2025/memento/${ts}/${PAGE}`,
      {},
      ['Link', 'Vary', 'Memento-Datetime', 'Content-Type', 'Preference-Applied', 'Content-Location'],
    ],
    ['Memento, ol_', 'GET', `${A.url}/2025/memento/${ts}ol_/${PAGE}`, {}, ['Link', 'Vary', 'Memento-Datetime', 'Content-Type', 'Preference-Applied']],
    ['Memento, id_', 'HEAD', `${A.url}/2025/memento/${ts}id_/${PAGE}`, {}, ['Link', 'Vary', 'Memento-Datetime', 'Content-Type', 'Preference-Applied']],
    ['Memento at an unstored timestamp (302)', 'GET', `${A.url}/2025/memento/2001/${PAGE}`, {}, ['Location', 'Content-Type']],
    ['TimeMap, link-format', 'GET', `${A.url}/2025/timemap/link/${PAGE}`, {}, ['Content-Type']],
    ['TimeMap, JSON', 'GET', `${A.url}/2025/timemap/json/${PAGE}`, {}, ['Content-Type']],
    ['index TimeMap', 'GET', `${A.url}/tg/timemap/${PAGE}`, {}, ['Content-Type']],
    ['timebundle', 'GET', `${A.url}/2025/timebundle/${PAGE}`, {}, ['Location', 'Content-Type']],
    ['host-meta', 'GET', `${A.url}/.well-known/host-meta`, {}, ['Content-Type']],
    ['host-meta.json', 'GET', `${A.url}/.well-known/host-meta.json`, {}, ['Content-Type']],
    ['404 of the redirector', 'GET', `${A.url}/tg/http://never.example/`, {}, ['Content-Type']],
    ['400 bad Accept-Datetime', 'GET', `${A.url}/tg/${PAGE}`, { 'accept-datetime': 'soon' }, ['Link', 'Vary', 'Content-Type']],
    ['400 malformed timestamp', 'GET', `${A.url}/2025/memento/2001032020350x/${PAGE}`, {}, ['Content-Type']],
    ['400 malformed percent-encoding (fastify’s router)', 'GET', `${A.url}/2025/memento/${ts}/http://%zz/`, {}, ['Content-Type']],
    ['405', 'POST', `${A.url}/tg/${PAGE}`, {}, ['Allow', 'Content-Type']],
    ['404 of another address', 'GET', `${A.url}/nothing/here`, {}, ['Content-Type']],
  ];
  for (const [what, method, url, headers, want] of cases) {
    const res = await rawRequest(url, method, headers);
    for (const name of want) t.ok(res.names.includes(name), `${what} (${res.status}): "${name}" as registered, in [${res.names.join(', ')}]`);
    const wrong = res.names.filter((n) => REGISTERED_BY_LOWER.has(n.toLowerCase()) && REGISTERED_BY_LOWER.get(n.toLowerCase()) !== n);
    t.same(wrong, [], `${what}: no field of the registry in another case`);
  }
});

t.test('Memento: the original headers echoed as X-Archive-Orig-<name> keep a registered name’s case', async (t) => {
  const res = await rawRequest(memento('2025', D01, PAGE));
  t.ok(res.names.includes('X-Archive-Orig-Date'), res.names.join(', '));
  t.ok(res.names.includes('X-Archive-Orig-Content-Type'));
});

t.test('RFC 7089 §2.1.1 as the Memento validator tests it: an empty Accept-Datetime is answered as no Accept-Datetime', async (t) => {
  for (const url of [`${A.url}/tg/${PAGE}`, `${A.url}/2025/timegate/${PAGE}`, `${A.url}/current/timegate/${PAGE}`]) {
    const none = await request(url);
    t.equal(none.status, 302);
    for (const blank of ['', '   ']) {
      const res = await request(url, { headers: { 'accept-datetime': blank } });
      t.equal(res.status, 302, `${url} with Accept-Datetime ${JSON.stringify(blank)}: not 400`);
      t.equal(res.headers.location, none.headers.location, 'the same Location as without it');
      t.equal(res.headers.link, none.headers.link, 'the same Link');
      t.equal(res.headers.vary, none.headers.vary);
    }
  }
  const bad = await request(`${A.url}/tg/${PAGE}`, { headers: { 'accept-datetime': 'x' } });
  t.equal(bad.status, 400, 'a value that is not a date is still 400');
});

t.test('docs/architecture.md (archives and time spans): the redirector picks the archive holding the nearest memento', async (t) => {
  const justAfter = 'Thu, 01 Jan 2026 01:00:00 GMT'; // in the span of "current", an hour after "2025"'s last memento
  const res = await request(`${A.url}/tg/${EDGE}`, { headers: { 'accept-datetime': justAfter } });
  t.equal(res.status, 302);
  t.equal(res.headers.location, `${A.url}/2025/timegate/${EDGE}`, 'not "current", whose memento is five months away');
  const g = await request(res.headers.location!, { headers: { 'accept-datetime': justAfter } });
  t.equal(g.headers.location, memento('2025', E25, EDGE), 'its TimeGate then chooses that memento');
  const march = await request(`${A.url}/tg/${EDGE}`, { headers: { 'accept-datetime': 'Sun, 01 Mar 2026 00:00:00 GMT' } });
  t.equal(march.headers.location, `${A.url}/2025/timegate/${EDGE}`, 'March 2026: two months after the memento of "2025", three before that of "current"');
  const april = await request(`${A.url}/tg/${EDGE}`, { headers: { 'accept-datetime': 'Wed, 15 Apr 2026 00:00:00 GMT' } });
  t.equal(april.headers.location, `${A.url}/current/timegate/${EDGE}`, 'mid-April 2026: the memento of "current" is nearer');
  const after = await request(`${A.url}/tg/${EDGE}`, { headers: { 'accept-datetime': 'Fri, 01 Jan 2027 00:00:00 GMT' } });
  t.equal(after.headers.location, `${A.url}/current/timegate/${EDGE}`);
});

t.test(
  "RFC 7089 §4.2 + py-memento-client's navigation: the redirector's first/prev/next/last name mementos across archives, and each leads to its Memento",
  async (t) => {
    const res = await request(`${A.url}/tg/${PAGE}`, { headers: { 'accept-datetime': D01 } });
    t.equal(res.headers.location, `${A.url}/2025/timegate/${PAGE}`);
    const mem = links(res.headers.link).filter((l) => l.rel.split(' ').includes('memento'));
    t.same(
      mem.map((l) => [l.uri, l.rel, l.datetime]),
      [
        [memento('2025', D01, PAGE), 'first memento', D01],
        [memento('current', D26, PAGE), 'next last memento', D26],
      ],
      'first in "2025", next and last in "current" (before: one span only, rel="first last memento")',
    );
    const byDatetime = await request(`${A.url}/tg/${EDGE}`, { headers: { 'accept-datetime': E26 } });
    t.same(
      links(byDatetime.headers.link)
        .filter((l) => l.rel.includes('memento'))
        .map((l) => [l.uri, l.rel]),
      [
        [memento('2025', E25, EDGE), 'first prev memento'],
        [memento('current', E26, EDGE), 'last memento'],
      ],
      'prev crosses into the archive before',
    );
    for (const l of mem) {
      const m = await request(l.uri);
      t.equal(m.status, 200, `${l.rel}: ${l.uri}`);
      t.equal(m.headers['memento-datetime'], l.datetime, 'its Memento-Datetime is the link’s datetime');
    }
    const tm = await request(`${A.url}/tg/timemap/${PAGE}`);
    const inTimemap = (rel: string) => links(tm.text).find((l) => l.rel.split(' ').includes(rel))?.uri;
    t.equal(inTimemap('first'), mem[0].uri, 'the same first as the index TimeMap');
    t.equal(inTimemap('last'), mem[mem.length - 1].uri, 'the same last as the index TimeMap');
  },
);

t.test('docs/url-space.md: http://example.test/? and http://example.test/ are one URI-R in the redirector, TimeGate, TimeMaps and Memento', async (t) => {
  const Q = 'http://example.test/?';
  const same = async (path: (uriR: string) => string, what: string, headers: Record<string, string> = {}) => {
    const plain = await request(path(PAGE), { headers });
    const q = await request(path(Q), { headers });
    t.equal(q.status, plain.status, `${what}: same status (${plain.status})`);
    for (const h of ['location', 'link', 'memento-datetime', 'content-location'] as const) t.equal(q.headers[h], plain.headers[h], `${what}: same ${h}`);
    t.equal(q.text, plain.text, `${what}: same body`);
    return q;
  };
  const ts = ts14(D01);
  await same((u) => `${A.url}/tg/${u}`, 'redirector', { 'accept-datetime': D01 });
  await same((u) => `${A.url}/2025/timegate/${u}`, 'TimeGate');
  await same((u) => `${A.url}/2025/timemap/link/${u}`, 'TimeMap');
  await same((u) => `${A.url}/2025/timemap/json/${u}`, 'JSON TimeMap');
  await same((u) => `${A.url}/tg/timemap/${u}`, 'index TimeMap');
  const m = await same((u) => `${A.url}/2025/memento/${ts}id_/${u}`, 'raw Memento');
  t.equal(links(m.headers.link).find((l) => l.rel === 'original')?.uri, PAGE, 'the Memento names the URI-R without "?"');
  const g = await request(`${A.url}/2025/timegate/${Q}`);
  t.equal(links(g.headers.link).find((l) => l.rel === 'original')?.uri, PAGE, 'and so does the TimeGate (before: "http://example.test/?")');

  // A capture of "/?" is a memento of the same URI-R.
  const put = await putCapture(A, Q, captureRecord({ host: 'example.test', target: '/?', date: 'Sat, 01 Mar 2025 00:00:00 GMT', body: 'with ?' }));
  t.equal(put.status, 201);
  const tm = await request(`${A.url}/2025/timemap/link/${PAGE}`);
  t.ok(
    links(tm.text).some((l) => l.uri === memento('2025', 'Sat, 01 Mar 2025 00:00:00 GMT', PAGE)),
    'the capture of "/?" is in the TimeMap of "/", under the URI-R without "?"',
  );
});

t.test('docs/url-space.md (head size): a URI-R of max_url_length counted as written in Link ("," three characters) fits every answer in 16 KiB', async (t) => {
  const prefix = 'http://example.test/list?';
  // Each "p," is four characters in a Link header ("p%2C").
  const uriR = prefix + 'p,'.repeat(Math.floor((2048 - prefix.length) / 4)) + 'p'.repeat((2048 - prefix.length) % 4);
  t.equal(uriR.length + 2 * (uriR.split(',').length - 1), 2048, '2048 characters as written in a Link header');
  await seed(A, uriR, D01);
  await seed(A, uriR, D26);
  const ts = ts14(D01);
  for (const url of [
    `${A.url}/tg/${uriR}`,
    `${A.url}/2025/timegate/${uriR}`,
    `${A.url}/2025/memento/${ts}/${uriR}`,
    `${A.url}/2025/memento/${ts}id_/${uriR}`,
    `${A.url}/2025/timebundle/${uriR}`,
  ]) {
    // Node's client refuses a head over 16 KiB (HPE_HEADER_OVERFLOW): request() would reject.
    const res = await request(url);
    t.ok(res.status < 400, `${url.slice(A.url.length, A.url.length + 30)}…: ${res.status}, read with a 16 KiB head limit`);
  }
  const longer = await request(`${A.url}/tg/${uriR.replace(/p$/, ',')}`);
  t.equal(longer.status, 400, 'one "," more: 2050 as written in Link, refused');
  t.match(longer.text, /as written in a Link header/);
});

/** `python3` (or Debian's) with the `requests` package, or undefined. */
function pythonWithRequests(): string | undefined {
  for (const py of ['python3', '/usr/bin/python3']) {
    try {
      execFileSync(py, ['-c', 'import requests'], { stdio: 'ignore', timeout: 30_000 });
      return py;
    } catch {
      // not this one
    }
  }
  return undefined;
}

/** Python's `requests.utils.parse_header_links` on `value`: what py-memento-client and the Memento validator's neighbours read. */
function pythonParse(py: string, value: string): Promise<{ url: string; rel?: string }[]> {
  const script = 'import json, sys\nfrom requests.utils import parse_header_links\nprint(json.dumps(parse_header_links(sys.stdin.read())))';
  return new Promise((resolve, reject) => {
    const child = execFile(py, ['-c', script], { timeout: 30_000 }, (err, stdout) => (err ? reject(err) : resolve(JSON.parse(stdout))));
    child.stdin!.end(value);
  });
}

/** (URI, relation type) pairs of links, one per relation type (http-link-header splits a combined rel). */
const pairs = (list: { uri: string; rel?: string }[]) => list.flatMap((l) => (l.rel ?? '').split(/\s+/).map((rel) => `${rel} ${l.uri}`)).sort();

t.test(
  'RFC 8288 §3 as common parsers read it: a Link header whose URIs hold "," and ";" is read back whole by Python requests and by http-link-header',
  async (t) => {
    const py = pythonWithRequests();
    if (!py) {
      t.fail('no python3 with the requests package (.ci/run installs Debian’s python3-requests)');
      return;
    }
    // Why: the same links unencoded lose their rel in parse_header_links (the URI is cut at ";").
    const raw = `<${ODD}>; rel="original", <${A.url}/tg/timemap/${ODD}>; rel="timemap index"`;
    const cut = await pythonParse(py, raw);
    t.not(cut[0].url, ODD, `unencoded, parse_header_links cuts the URI: ${JSON.stringify(cut[0])}`);

    const ts = ts14(D01);
    const answers: [string, string, Record<string, string>][] = [
      ['redirector', `${A.url}/tg/${ODD}`, { 'accept-datetime': D26 }],
      ['TimeGate', `${A.url}/2025/timegate/${ODD}`, {}],
      ['Memento', `${A.url}/2025/memento/${ts}/${ODD}`, {}],
      ['raw Memento', `${A.url}/2025/memento/${ts}id_/${ODD}`, {}],
      ['TimeGate, addressed with %3B and %2C', `${A.url}/current/timegate/http://example.test/p%3Bv=1?a=1%2C2%3Bb=3`, {}],
    ];
    for (const [what, url, headers] of answers) {
      const res = await request(url, { headers });
      t.ok(res.status === 200 || res.status === 302, `${what}: ${res.status}`);
      const value = String(res.headers.link);
      const ours: Link[] = parseLinks(value);
      t.ok(ours.length >= 3, `${what}: ${ours.length} links`);
      t.notOk(
        ours.some((l) => /[,;]/.test(l.uri)),
        `${what}: no "," or ";" inside <…>`,
      );
      const original = ours.find((l) => l.rel === 'original');
      t.equal(original && decodeURIComponent(original.uri), ODD, `${what}: the original link names the URI-R (percent-decoded)`);

      const fromPython = (await pythonParse(py, value)).map((l) => ({ uri: l.url, rel: l.rel }));
      t.same(pairs(fromPython), pairs(ours), `${what}: requests.utils.parse_header_links reads every URI and rel`);
      const fromNpm = LinkHeader.parse(value).refs.map((r) => ({ uri: r.uri, rel: r.rel }));
      t.same(pairs(fromNpm), pairs(ours), `${what}: http-link-header reads every URI and rel`);

      // The encoded URIs lead where they should.
      for (const l of ours.filter((x) => x.rel.split(' ').includes('memento'))) {
        const m = await request(l.uri);
        t.equal(m.status, 200, `${what}: ${l.rel} → 200`);
        t.equal(m.headers['memento-datetime'], l.datetime);
        t.equal(links(m.headers.link).find((x) => x.rel === 'original')?.uri, original?.uri, 'the same original link');
      }
      for (const l of ours.filter((x) => /timegate|timemap/.test(x.rel))) {
        const r = await request(l.uri);
        t.ok(r.status === 200 || r.status === 302, `${what}: ${l.rel} → ${r.status}`);
      }
    }
  },
);
