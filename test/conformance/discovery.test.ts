/**
 * Conformance: discovery (RFC 6415 host-meta, XRD and JRD, docs/url-space.md)
 * and the timebundle (RFC 7089 §4.2.1 rel="timebundle"); issue point 7.
 */
import t from 'tap';
import { request, startArchive } from '../helpers/archive.js';
import { headMatchesGet, links, noMementoHeaders, seed, ts14 } from './helpers.js';

const R = 'http://www.example.org/d?x=1';
const D = 'Tue, 20 Mar 2001 20:35:00 GMT';

const a = await startArchive();
t.teardown(() => a.close());
await seed(a, R, D);

t.test(
  'RFC 6415 (host-meta, XRD): discovery: /.well-known/host-meta is an XRD document (application/xrd+xml) with Link templates for the redirector TimeGate and the index TimeMap',
  async (t) => {
    const res = await headMatchesGet(t, `${a.url}/.well-known/host-meta`);
    t.equal(res.status, 200);
    t.equal(res.headers['content-type'], 'application/xrd+xml; charset=UTF-8');
    t.equal(
      res.text,
      `<?xml version="1.0" encoding="UTF-8"?>
<XRD xmlns="http://docs.oasis-open.org/ns/xri/xrd-1.0">
  <Link rel="timegate" template="${a.url}/tg/{uri}"/>
  <Link rel="timemap" type="application/link-format" template="${a.url}/tg/timemap/{uri}"/>
</XRD>
`,
    );
    t.equal(res.headers['content-length'], String(res.body.length));
  },
);

t.test('RFC 6415 Appendix A (JRD): /.well-known/host-meta.json has the same links as JSON (application/jrd+json)', async (t) => {
  const res = await headMatchesGet(t, `${a.url}/.well-known/host-meta.json`);
  t.equal(res.status, 200);
  t.equal(res.headers['content-type'], 'application/jrd+json; charset=utf-8');
  t.same(JSON.parse(res.text), {
    links: [
      { rel: 'timegate', template: `${a.url}/tg/{uri}` },
      { rel: 'timemap', type: 'application/link-format', template: `${a.url}/tg/timemap/{uri}` },
    ],
  });
});

t.test('RFC 6415 (Link template): the templates, filled with a URI-R, lead to its TimeGate and its TimeMap', async (t) => {
  const jrd = JSON.parse((await request(`${a.url}/.well-known/host-meta.json`)).text) as { links: { rel: string; template: string }[] };
  const fill = (rel: string) => jrd.links.find((l) => l.rel === rel)!.template.replace('{uri}', R);
  const g = await request(fill('timegate'), { headers: { 'accept-datetime': D } });
  t.equal(g.status, 302);
  t.equal(g.headers.location, `${a.url}/2025/timegate/${R}`);
  const tm = await request(fill('timemap'));
  t.equal(tm.status, 200);
  t.equal(links(tm.text).find((l) => l.rel.includes('memento'))?.uri, `${a.url}/2025/memento/${ts14(D)}/${R}`);
});

t.test('rel=timebundle + docs/url-space.md: the timebundle answers 303 See Other to the TimeMap; unknown URI-R 404', async (t) => {
  const url = `${a.url}/2025/timebundle/${R}`;
  const res = await headMatchesGet(t, url);
  t.equal(res.status, 303);
  t.equal(res.headers.location, `${a.url}/2025/timemap/link/${R}`);
  t.equal(res.headers['content-type'], 'text/plain; charset=UTF-8');
  t.equal(res.text, `${a.url}/2025/timemap/link/${R}\n`);
  const g = await request(`${a.url}/2025/timegate/${R}`);
  t.equal(links(g.headers.link).find((l) => l.rel === 'timebundle')?.uri, url, 'the TimeGate announces this timebundle');
  const none = await request(`${a.url}/2025/timebundle/http://www.example.org/never`);
  t.equal(none.status, 404);
  noMementoHeaders(t, none, 'timebundle 404');
  const post = await request(url, { method: 'POST', body: 'x' });
  t.equal(post.status, 405);
  t.equal(post.headers.allow, 'GET, HEAD');
});

t.test('docs/url-space.md: with base_url configured, Location, Link and templates use it instead of the Host', async (t) => {
  const b = await startArchive(`base_url: https://archive.example.net/wa/
archives:
  - id: all
`);
  t.teardown(() => b.close());
  await seed(b, R, D);
  const hm = await request(`${b.url}/.well-known/host-meta`);
  t.match(hm.text, '<Link rel="timegate" template="https://archive.example.net/wa/tg/{uri}"/>');
  const g = await request(`${b.url}/tg/${R}`);
  t.equal(g.headers.location, `https://archive.example.net/wa/all/timegate/${R}`);
  t.match(g.headers.link as string, `<https://archive.example.net/wa/tg/timemap/${R}>; rel="timemap index"`);
  const g2 = await request(`${b.url}/all/timegate/${R}`);
  t.equal(g2.headers.location, `https://archive.example.net/wa/all/memento/${ts14(D)}/${R}`);
});

t.test('docs/url-space.md: a Host header is used as the base address when base_url is not set', async (t) => {
  const res = await request(`${a.url}/tg/${R}`, { headers: { host: 'archive.example.org:8090' } });
  t.equal(res.headers.location, `http://archive.example.org:8090/2025/timegate/${R}`);
});
