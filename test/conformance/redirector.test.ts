/**
 * Conformance: the TimeGate redirector over several archives, local (this
 * daemon's store) and remote (`timegate:` of a TimeGate on another host),
 * and the index TimeMap across them (docs/architecture.md "Archives and time spans",
 * RFC 7089 §4.2); issue point 6.
 *
 * Host B (a second archive daemon on its own port) holds the 1990s; host A
 * names it as its remote archive "old" and keeps 2000–2026 and 2026–2030
 * itself.
 */

import http from 'node:http';
import net from 'node:net';
import t from 'tap';
import { request, startArchive } from '../helpers/archive.js';
import { archivesWithRemote, headMatchesGet, links, noMementoHeaders, seed, ts14 } from './helpers.js';

const { A, B } = await archivesWithRemote(t);

const ALL = 'http://www.example.org/all';
const MID = 'http://www.example.org/mid';
const OLD = 'http://www.example.org/old';
const NONE = 'http://www.example.org/none';
const D95 = 'Tue, 14 Mar 1995 12:00:00 GMT';
const D96 = 'Wed, 02 Oct 1996 08:30:00 GMT';
const D05 = 'Sat, 05 Feb 2005 05:05:05 GMT';
const D26 = 'Wed, 07 Jan 2026 10:00:00 GMT';
await seed(B, ALL, D95);
await seed(B, ALL, D96);
await seed(B, OLD, D95);
await seed(A, ALL, D05);
await seed(A, ALL, D26);
await seed(A, MID, D05);

const tg = (uriR: string) => `${A.url}/tg/${uriR}`;
const localTg = (id: string, uriR: string) => `${A.url}/${id}/timegate/${uriR}`;
const remoteTg = (uriR: string) => `${B.url}/old/timegate/${uriR}`;

t.test(
  'RFC 7089 §4.2 (redirector) + docs/url-space.md: 302 to a TimeGate, Vary: accept-datetime, Link original and rel="timemap index", text/plain body',
  async (t) => {
    const res = await request(tg(ALL), { headers: { 'accept-datetime': D05 } });
    t.equal(res.status, 302);
    t.equal(res.headers.location, localTg('2000s', ALL));
    t.equal(res.headers.vary, 'accept-datetime');
    const m05 = `${A.url}/2000s/memento/${ts14(D05)}/${ALL}`;
    const m26 = `${A.url}/current/memento/${ts14(D26)}/${ALL}`;
    t.equal(
      res.headers.link,
      `<${ALL}>; rel="original", <${A.url}/tg/timemap/${ALL}>; rel="timemap index"; type="application/link-format", ` +
        `<${m05}>; rel="first memento"; datetime="${D05}", <${m26}>; rel="next last memento"; datetime="${D26}"`,
      'original, the index TimeMap, and the memento links across the local archives (the remote one was not asked)',
    );
    t.equal(res.headers['content-type'], 'text/plain; charset=UTF-8');
    t.equal(res.text, localTg('2000s', ALL) + '\n');
    t.notOk(res.headers['memento-datetime']);
  },
);

t.test('docs/architecture.md (archives by time span): Accept-Datetime picks the archive holding the nearest memento, local or remote', async (t) => {
  const cases: [string, string][] = [
    [D95, remoteTg(ALL)],
    ['Fri, 31 Dec 1999 23:59:59 GMT', remoteTg(ALL)],
    ['Sat, 01 Jan 2000 00:00:00 GMT', remoteTg(ALL)], // in 2000s's span, but D96 (3.2 years) is nearer than D05 (5.1 years)
    ['Mon, 01 Jan 2001 00:00:00 GMT', localTg('2000s', ALL)], // D05 4.1 years, D96 4.2 years
    [D05, localTg('2000s', ALL)],
    ['Mon, 01 Jun 2026 00:00:00 GMT', localTg('current', ALL)],
  ];
  for (const [ad, want] of cases) {
    const res = await request(tg(ALL), { headers: { 'accept-datetime': ad } });
    t.equal(res.status, 302, ad);
    t.equal(res.headers.location, want, ad);
  }
});

t.test('docs/architecture.md (archives and time spans): outside all spans the first (before) or the last (after) archive', async (t) => {
  const before = await request(tg(ALL), { headers: { 'accept-datetime': 'Thu, 01 Jan 1970 00:00:00 GMT' } });
  t.equal(before.headers.location, remoteTg(ALL), 'before the first span: the first archive (remote)');
  const after = await request(tg(ALL), { headers: { 'accept-datetime': 'Sun, 01 Jan 2040 00:00:00 GMT' } });
  t.equal(after.headers.location, localTg('current', ALL), 'after the last span: the last archive');
});

t.test('docs/url-space.md: without Accept-Datetime the newest archive that has the URI-R', async (t) => {
  t.equal((await request(tg(ALL))).headers.location, localTg('current', ALL));
  t.equal((await request(tg(MID))).headers.location, localTg('2000s', MID), 'not "current", which has no memento of it');
  t.equal((await request(tg(OLD))).headers.location, remoteTg(OLD), 'only the remote archive has it (asked with HEAD at its TimeGate)');
});

t.test('docs/architecture.md (archives and time spans): when the archive of the span lacks the URI-R, the archive with the nearest mementos', async (t) => {
  const midLate = await request(tg(MID), { headers: { 'accept-datetime': 'Mon, 01 Jun 2026 00:00:00 GMT' } });
  t.equal(midLate.headers.location, localTg('2000s', MID));
  const midEarly = await request(tg(MID), { headers: { 'accept-datetime': D95 } });
  t.equal(midEarly.headers.location, localTg('2000s', MID), 'the remote archive answered 404 for it');
  const oldLate = await request(tg(OLD), { headers: { 'accept-datetime': D26 } });
  t.equal(oldLate.headers.location, remoteTg(OLD));
});

t.test('docs/url-space.md (errors) + RFC 7089 §4.5.3: a URI-R no archive has is 404 with no Memento headers; a bad Accept-Datetime 400', async (t) => {
  for (const headers of [{}, { 'accept-datetime': D05 }] as Record<string, string>[]) {
    const res = await request(tg(NONE), { headers });
    t.equal(res.status, 404);
    noMementoHeaders(t, res, 'redirector 404');
    t.equal(res.text, `no memento of ${NONE} in any archive\n`);
  }
  const bad = await request(tg(ALL), { headers: { 'accept-datetime': 'soon' } });
  t.equal(bad.status, 400);
  t.equal(bad.headers.vary, 'accept-datetime');
  t.equal(bad.headers.link, `<${ALL}>; rel="original"`);
  t.notOk(bad.headers.location);
});

t.test('RFC 7089 §4.2.1 end to end: redirector → remote TimeGate → Memento on host B, and redirector → local TimeGate → Memento', async (t) => {
  let res = await request(tg(ALL), { headers: { 'accept-datetime': D96 } });
  res = await request(res.headers.location as string, { headers: { 'accept-datetime': D96 } });
  t.equal(res.status, 302);
  t.equal(res.headers.location, `${B.url}/old/memento/${ts14(D96)}/${ALL}`);
  res = await request(res.headers.location as string);
  t.equal(res.status, 200);
  t.equal(res.headers['memento-datetime'], D96);

  res = await request(tg(ALL), { headers: { 'accept-datetime': D26 } });
  res = await request(res.headers.location as string, { headers: { 'accept-datetime': D26 } });
  res = await request(res.headers.location as string);
  t.equal(res.headers['memento-datetime'], D26);
  t.match(res.text, `${ALL} at ${D26}`);
});

t.test('RFC 7089 §5 (TimeMap index): /tg/timemap lists the remote TimeMap with the from/until of its own self link, and the local ones', async (t) => {
  const res = await request(`${A.url}/tg/timemap/${ALL}`);
  t.equal(res.status, 200);
  const tms = links(res.text).filter((l) => l.rel === 'timemap');
  t.same(
    tms.map((l) => [l.uri, l.from, l.until, l.type]),
    [
      [`${B.url}/old/timemap/link/${ALL}`, D95, D96, 'application/link-format'],
      [`${A.url}/2000s/timemap/link/${ALL}`, D05, D05, 'application/link-format'],
      [`${A.url}/current/timemap/link/${ALL}`, D26, D26, 'application/link-format'],
    ],
  );
  const self = links(res.text).find((l) => l.rel === 'self');
  t.same([self?.from, self?.until], [D95, D26], 'self spans all archives');
  const remoteTm = await request(tms[0].uri);
  t.equal(remoteTm.status, 200, 'the listed remote TimeMap answers');

  const onlyRemote = await request(`${A.url}/tg/timemap/${OLD}`);
  t.equal(onlyRemote.status, 200);
  t.same(
    links(onlyRemote.text)
      .filter((l) => l.rel === 'timemap')
      .map((l) => l.uri),
    [`${B.url}/old/timemap/link/${OLD}`],
  );
  const onlyLocal = await request(`${A.url}/tg/timemap/${MID}`);
  t.same(
    links(onlyLocal.text)
      .filter((l) => l.rel === 'timemap')
      .map((l) => l.uri),
    [`${A.url}/2000s/timemap/link/${MID}`],
    'the remote archive that answered 404 is not listed',
  );
  const none = await request(`${A.url}/tg/timemap/${NONE}`);
  t.equal(none.status, 404);
  noMementoHeaders(t, none, 'index TimeMap 404');
});

t.test('docs/architecture.md (archives and time spans): a remote archive that does not answer does not hide the archives that do', async (t) => {
  const closed = net.createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
  const port = (closed.address() as net.AddressInfo).port;
  await new Promise<void>((r) => closed.close(() => r()));
  const C = await startArchive(`archives:
  - id: local
    until: 2026-01-01T00:00:00Z
  - id: away
    from: 2026-01-01T00:00:00Z
    timegate: http://127.0.0.1:${port}/away/timegate/
`);
  t.teardown(() => C.close());
  await seed(C, MID, D05);
  const res = await request(`${C.url}/tg/${MID}`);
  t.equal(res.status, 302);
  t.equal(res.headers.location, `${C.url}/local/timegate/${MID}`, 'the newest archive known to have it');
  const inAway = await request(`${C.url}/tg/${MID}`, { headers: { 'accept-datetime': D26 } });
  t.equal(inAway.headers.location, `${C.url}/local/timegate/${MID}`, 'the archive of the span cannot be asked: the nearest that has it');
  const index = await request(`${C.url}/tg/timemap/${MID}`);
  t.equal(index.status, 200);
  t.same(
    links(index.text)
      .filter((l) => l.rel === 'timemap')
      .map((l) => [l.uri, l.from, l.until]),
    [
      [`${C.url}/local/timemap/link/${MID}`, D05, D05],
      [`http://127.0.0.1:${port}/away/timemap/link/${MID}`, 'Thu, 01 Jan 2026 00:00:00 GMT', undefined],
    ],
    'the unreachable archive is listed with its configured span',
  );
});

t.test('RFC 9110 §9.3.2 and §15.5.6: HEAD at the redirector answers as GET; POST/PUT/DELETE are 405 with Allow', async (t) => {
  await headMatchesGet(t, tg(ALL));
  await headMatchesGet(t, tg(OLD), { 'accept-datetime': D95 });
  await headMatchesGet(t, tg(NONE));
  await headMatchesGet(t, `${A.url}/tg/timemap/${ALL}`);
  for (const method of ['POST', 'PUT', 'DELETE']) {
    const res = await request(tg(ALL), { method, body: 'x' });
    t.equal(res.status, 405, method);
    t.equal(res.headers.allow, 'GET, HEAD');
  }
});

t.test('docs/url-space.md: a remote archive id at this host is 404 naming where it is served', async (t) => {
  const res = await request(`${A.url}/old/timegate/${ALL}`);
  t.equal(res.status, 404);
  t.match(res.text, `archive "old" is served by ${B.url}/old/timegate/`);
  noMementoHeaders(t, res, 'remote id');
});

t.test(
  'docs/architecture.md (archives and time spans) (conf/archive.yaml): a remote archive names its TimeMap when it cannot be derived from its TimeGate',
  async (t) => {
    const yaml = (extra: string) => `archives:
  - id: wayback
    until: 2000-01-01T00:00:00Z
    timegate: http://127.0.0.1:9/web/
${extra}  - id: here
    from: 2000-01-01T00:00:00Z
`;
    await t.rejects(startArchive(yaml('')), /archive\.yaml:\d+: archive "wayback": timegate does not end in \/timegate\/.*set timemap: too/);
    const C = await startArchive(yaml('    timemap: http://127.0.0.1:9/web/timemap/link/\n'));
    t.teardown(() => C.close());
    t.same(C.config.archives[0], {
      id: 'wayback',
      from: -Infinity,
      until: Date.UTC(2000, 0, 1) / 1000,
      timegate: 'http://127.0.0.1:9/web/',
      timemap: 'http://127.0.0.1:9/web/timemap/link/',
    });
    t.equal(A.config.archives[0].timemap, `${B.url}/old/timemap/link/`, "derived for this daemon's own /<id>/timegate/ shape");
  },
);

/** HEAD with redirects followed, as python-requests does for py-memento-client: every answer of the chain. */
async function headChain(url: string, headers: Record<string, string>): Promise<{ url: string; res: Awaited<ReturnType<typeof request>> }[]> {
  const out = [];
  for (let i = 0; i < 10; i++) {
    const res = await request(url, { method: 'HEAD', headers });
    out.push({ url, res });
    if (res.status < 300 || res.status >= 400 || !res.headers.location) break;
    url = res.headers.location;
  }
  return out;
}

t.test(
  "RFC 7089 §4.2.1 with py-memento-client's rules: the first TimeGate of the redirect chain (Vary accept-datetime + original + Location) names first/prev/next/last across archives, and the end is a Memento",
  async (t) => {
    const m = (host: string, id: string, date: string) => `${host}/${id}/memento/${ts14(date)}/${ALL}`;
    const [m95, m96, m05, m26] = [m(B.url, 'old', D95), m(B.url, 'old', D96), m(A.url, '2000s', D05), m(A.url, 'current', D26)];
    const cases: [string, string, string, [string, string][]][] = [
      // The remote archive is not asked (a local memento is at the very datetime): its mementos are not known here.
      [
        D05,
        '2000s',
        A.url,
        [
          [m05, 'first memento'],
          [m26, 'next last memento'],
        ],
      ],
      // The remote archive chosen: its links (D95, D96) and the local archives' first and last.
      [
        D96,
        'old',
        B.url,
        [
          [m95, 'first prev memento'],
          [m96, 'memento'],
          [m05, 'next memento'],
          [m26, 'last memento'],
        ],
      ],
      [
        D26,
        'current',
        A.url,
        [
          [m05, 'first prev memento'],
          [m26, 'last memento'],
        ],
      ],
    ];
    for (const [ad, archive, host, want] of cases) {
      const uriR = ALL;
      const chain = await headChain(tg(uriR), { 'accept-datetime': ad });
      const isTimegate = (r: (typeof chain)[number]['res']) =>
        /accept-datetime/i.test(String(r.headers.vary)) && links(r.headers.link).some((l) => l.rel === 'original') && !!r.headers.location;
      const first = chain.find((c) => isTimegate(c.res));
      t.equal(first?.url, tg(uriR), `${ad}: the redirector is the first TimeGate of the chain`);
      const end = chain[chain.length - 1].res;
      t.equal(end.status, 200);
      t.equal(end.headers['memento-datetime'], ad, 'the chain ends at the Memento');
      // The navigation links the client reads from the redirector span the archives; the chosen one is the one its own TimeGate chooses.
      t.equal(chain[1].url, `${host}/${archive}/timegate/${ALL}`);
      const mem = (r: (typeof chain)[number]['res']) => links(r.headers.link).filter((l) => l.rel.includes('memento'));
      t.same(
        mem(first!.res).map((l) => [l.uri, l.rel]),
        want,
        `${ad}: first/prev/next/last across archives`,
      );
      const chosenHere = mem(first!.res).find((l) => l.datetime === ad);
      t.equal(chosenHere?.uri, chain[2].url, `${ad}: the memento ${archive}'s TimeGate chooses`);
    }
    const noAd = await request(tg(ALL));
    t.same(
      links(noAd.headers.link)
        .filter((l) => l.rel.includes('memento'))
        .map((l) => [l.uri, l.rel]),
      [
        [m05, 'first prev memento'],
        [m26, 'last memento'],
      ],
      'without Accept-Datetime: the newest memento, and the local archives’ first',
    );
  },
);

t.test('docs/architecture.md (archives and time spans): a remote archive is asked only when the choice depends on it', async (t) => {
  const asked: string[] = [];
  const remote = http.createServer((req, res) => {
    asked.push(`${req.method} ${req.url}`);
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => remote.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => remote.close(() => r())));
  const port = (remote.address() as net.AddressInfo).port;
  const C = await startArchive(`archives:
  - id: far
    until: 2000-01-01T00:00:00Z
    timegate: http://127.0.0.1:${port}/far/timegate/
  - id: near
    from: 2000-01-01T00:00:00Z
`);
  t.teardown(() => C.close());
  await seed(C, MID, D05);
  t.equal((await request(`${C.url}/tg/${MID}`)).headers.location, `${C.url}/near/timegate/${MID}`);
  t.equal((await request(`${C.url}/tg/${MID}`, { headers: { 'accept-datetime': D26 } })).headers.location, `${C.url}/near/timegate/${MID}`);
  t.same(asked, [], 'a local archive newer than the remote one has it, or holds the span: nobody is asked');
  const early = await request(`${C.url}/tg/${MID}`, { headers: { 'accept-datetime': D95 } });
  t.equal(early.headers.location, `${C.url}/near/timegate/${MID}`, 'the remote archive of the span answered 404: the nearest that has it');
  t.same(asked, [`HEAD /far/timegate/${MID}`], 'asked once, with HEAD at its TimeGate');
  const none = await request(`${C.url}/tg/${NONE}`);
  t.equal(none.status, 404);
  t.equal(asked.length, 2);
});
