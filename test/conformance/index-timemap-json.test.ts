/**
 * Conformance: the index TimeMap as JSON (`/tg/timemap/json/<URI-R>`,
 * docs/url-space.md): the mementoweb.org timemap-json shape with a
 * `timemap_index` of every archive's TimeMap (local and remote) and the
 * mementos across the local archives; what a client that follows the
 * index (py-memento-client's JSON TimeMap reader) finds.
 *
 * Host B (a second archive daemon) holds the 1990s; host A names it as its
 * remote archive "old" and keeps 2000–2026 and 2026–2030 itself.
 */
import net from 'node:net';
import t from 'tap';
import { request, startArchive } from '../helpers/archive.js';
import { archivesWithRemote, headMatchesGet, links, noMementoHeaders, seed, ts14 } from './helpers.js';

const { A, B } = await archivesWithRemote(t);

const ALL = 'http://www.example.org/all?q=1';
const MID = 'http://www.example.org/mid';
const NONE = 'http://www.example.org/none';
const D95 = 'Tue, 14 Mar 1995 12:00:00 GMT';
const D96 = 'Wed, 02 Oct 1996 08:30:00 GMT';
const D05 = 'Sat, 05 Feb 2005 05:05:05 GMT';
const D06 = 'Sun, 05 Feb 2006 05:05:05 GMT';
const D26 = 'Wed, 07 Jan 2026 10:00:00 GMT';
await seed(B, ALL, D95);
await seed(B, ALL, D96);
await seed(A, ALL, D05);
await seed(A, ALL, D06);
await seed(A, ALL, D26);
await seed(A, MID, D05);

const iso = (d: string) => new Date(d).toISOString().replace('.000Z', 'Z');
const m = (host: string, archive: string, d: string, uriR = ALL) => ({ datetime: iso(d), uri: `${host}/${archive}/memento/${ts14(d)}/${uriR}` });

interface JsonTimemap {
  original_uri: string;
  timegate_uri?: string;
  timemap_uri?: { link_format: string; json_format: string };
  timemap_index?: { uri: string; archive_id?: string; type?: string; from?: string; until?: string }[];
  mementos?: { list: { datetime: string; uri: string }[]; first: unknown; last: unknown };
}

t.test('docs/url-space.md: /tg/timemap/json is mementoweb.org timemap-json: original_uri, timegate_uri, timemap_uri, timemap_index, mementos', async (t) => {
  const res = await request(`${A.url}/tg/timemap/json/${ALL}`);
  t.equal(res.status, 200);
  t.equal(res.headers['content-type'], 'application/json');
  t.notOk(res.headers['memento-datetime']);
  t.same(JSON.parse(res.text), {
    original_uri: ALL,
    timegate_uri: `${A.url}/tg/${ALL}`,
    timemap_uri: { link_format: `${A.url}/tg/timemap/${ALL}`, json_format: `${A.url}/tg/timemap/json/${ALL}` },
    timemap_index: [
      { uri: `${B.url}/old/timemap/json/${ALL}`, archive_id: 'old', from: iso(D95), until: iso(D96) },
      { uri: `${A.url}/2000s/timemap/json/${ALL}`, archive_id: '2000s', from: iso(D05), until: iso(D06) },
      { uri: `${A.url}/current/timemap/json/${ALL}`, archive_id: 'current', from: iso(D26), until: iso(D26) },
    ],
    mementos: {
      list: [m(A.url, '2000s', D05), m(A.url, '2000s', D06), m(A.url, 'current', D26)],
      first: m(A.url, '2000s', D05),
      last: m(A.url, 'current', D26),
    },
  });
});

t.test('RFC 7089 §5 (TimeMap index): the JSON index lists the archives the link-format index lists, with the same bounds', async (t) => {
  const json = JSON.parse((await request(`${A.url}/tg/timemap/json/${ALL}`)).text) as JsonTimemap;
  const linkFormat = links((await request(`${A.url}/tg/timemap/${ALL}`)).text);
  t.same(
    json.timemap_index!.map((e) => [e.uri.replace('/timemap/json/', '/timemap/link/'), e.from, e.until]),
    linkFormat.filter((l) => l.rel === 'timemap').map((l) => [l.uri, l.from && iso(l.from), l.until && iso(l.until)]),
  );
  t.same(
    json.mementos!.list.map((x) => x.uri),
    linkFormat.filter((l) => l.rel.includes('memento')).map((l) => l.uri),
    'the same mementos',
  );
});

t.test("py-memento-client's reading: each timemap_index entry is a JSON TimeMap whose mementos together are every memento of every archive", async (t) => {
  const index = JSON.parse((await request(`${A.url}/tg/timemap/json/${ALL}`)).text) as JsonTimemap;
  const found: string[] = [];
  for (const e of index.timemap_index!) {
    const res = await request(e.uri);
    t.equal(res.status, 200, e.uri);
    t.equal(res.headers['content-type'], 'application/json');
    const tm = JSON.parse(res.text) as JsonTimemap;
    t.equal(tm.original_uri, ALL);
    found.push(...tm.mementos!.list.map((x) => x.datetime));
  }
  t.same(found, [D95, D96, D05, D06, D26].map(iso));
});

t.test('docs/url-space.md: one archive only; none (404, no Memento headers); HEAD as GET; POST 405', async (t) => {
  const mid = JSON.parse((await request(`${A.url}/tg/timemap/json/${MID}`)).text) as JsonTimemap;
  t.same(
    mid.timemap_index,
    [{ uri: `${A.url}/2000s/timemap/json/${MID}`, archive_id: '2000s', from: iso(D05), until: iso(D05) }],
    'the remote answered 404: not listed',
  );
  t.same(mid.mementos, { list: [m(A.url, '2000s', D05, MID)], first: m(A.url, '2000s', D05, MID), last: m(A.url, '2000s', D05, MID) });
  const none = await request(`${A.url}/tg/timemap/json/${NONE}`);
  t.equal(none.status, 404);
  t.equal(none.headers['content-type'], 'text/plain; charset=UTF-8');
  t.match(none.text, /^no memento of /);
  noMementoHeaders(t, none, 'JSON index TimeMap 404');
  await headMatchesGet(t, `${A.url}/tg/timemap/json/${ALL}`);
  await headMatchesGet(t, `${A.url}/tg/timemap/json/${NONE}`);
  const post = await request(`${A.url}/tg/timemap/json/${ALL}`, { method: 'POST', body: 'x' });
  t.equal(post.status, 405);
  t.equal(post.headers.allow, 'GET, HEAD');
});

t.test(
  'docs/url-space.md: a remote archive that does not answer is listed with its configured span; one whose TimeMap is not at …/timemap/link/ by its link-format TimeMap',
  async (t) => {
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
    timemap: http://127.0.0.1:${port}/maps/
`);
    t.teardown(() => C.close());
    await seed(C, MID, D05);
    const res = await request(`${C.url}/tg/timemap/json/${MID}`);
    t.equal(res.status, 200);
    t.same((JSON.parse(res.text) as JsonTimemap).timemap_index, [
      { uri: `${C.url}/local/timemap/json/${MID}`, archive_id: 'local', from: iso(D05), until: iso(D05) },
      { uri: `http://127.0.0.1:${port}/maps/${MID}`, archive_id: 'away', type: 'application/link-format', from: '2026-01-01T00:00:00Z' },
    ]);
  },
);
