import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { probeTimegate, REMOTE_TIMEOUT_MS, timemapSpan } from '../../../archive/memento/remote.js';

const URI_R = 'http://a.example.org/';
const at = (iso: string) => Date.parse(iso) / 1000;

// The TimeMap of RFC 7089 §5 (its example, line breaks inside links and all).
const RFC_TIMEMAP_HEAD = `<http://a.example.org>;rel="original",
<http://arxiv.example.net/timemap/http://a.example.org>
  ; rel="self";type="application/link-format"
  ; from="Tue, 20 Jun 2000 18:02:59 GMT"
  ; until="Wed, 09 Apr 2008 20:30:51 GMT",
<http://arxiv.example.net/timegate/http://a.example.org>
  ; rel="timegate",
`;
const MEMENTOS = `<http://arxiv.example.net/web/20000620180259/http://a.example.org>
  ; rel="first memento";datetime="Tue, 20 Jun 2000 18:02:59 GMT",
<http://arxiv.example.net/web/20091027204954/http://a.example.org>
  ; rel="last memento";datetime="Tue, 27 Oct 2009 20:49:54 GMT"
`;

/** What the remote archive saw of each request. */
interface Seen {
  method: string;
  url: string;
  acceptDatetime?: string;
}

/** One remote archive on 127.0.0.1 port 0; `handle` answers by path. */
async function remote(t: Test, handle: (req: http.IncomingMessage, res: http.ServerResponse) => void) {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    seen.push({ method: req.method!, url: req.url!, acceptDatetime: req.headers['accept-datetime'] as string | undefined });
    handle(req, res);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

/** A port nothing listens on (a server was there a moment ago). */
async function refusedPort(): Promise<number> {
  const s = http.createServer();
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  const { port } = s.address() as AddressInfo;
  await new Promise((resolve) => s.close(resolve));
  return port;
}

t.test(
  'probeTimegate: RFC 7089 §4.2.1: a 302 means the remote archive has the URI-R; its memento links, their first/last datetimes and its Location are kept',
  async (t) => {
    const link =
      `<${URI_R}>; rel="original", <http://r.example/timemap/${URI_R}>; rel="timemap"; type="application/link-format", ` +
      `<http://r.example/m/1/${URI_R}>; rel="first memento"; datetime="Tue, 20 Jun 2000 18:02:59 GMT", ` +
      `<http://r.example/m/2/${URI_R}>; rel="last memento"; datetime="Tue, 27 Oct 2009 20:49:54 GMT"`;
    const r = await remote(t, (req, res) => {
      if (req.url!.startsWith('/tg/')) res.writeHead(302, { location: `/m/1/${URI_R}`, link, vary: 'accept-datetime' });
      else res.writeHead(200);
      res.end();
    });
    const h = await probeTimegate(`${r.url}/tg/${URI_R}`, 'Tue, 20 Jun 2000 18:00:00 GMT');
    t.same(h, {
      state: 'yes',
      links: [
        { uri: `http://r.example/m/1/${URI_R}`, rel: 'first memento', datetime: 'Tue, 20 Jun 2000 18:02:59 GMT' },
        { uri: `http://r.example/m/2/${URI_R}`, rel: 'last memento', datetime: 'Tue, 27 Oct 2009 20:49:54 GMT' },
      ],
      location: `${r.url}/m/1/${URI_R}`,
      first: at('2000-06-20T18:02:59Z'),
      last: at('2009-10-27T20:49:54Z'),
    });
    t.same(
      r.seen,
      [{ method: 'HEAD', url: `/tg/${URI_R}`, acceptDatetime: 'Tue, 20 Jun 2000 18:00:00 GMT' }],
      'one HEAD with the client’s Accept-Datetime; the 302 is not followed',
    );
    r.seen.length = 0;
    await probeTimegate(`${r.url}/tg/${URI_R}`);
    t.equal(r.seen[0].acceptDatetime, undefined, 'no Accept-Datetime from the client: none sent');
  },
);

t.test('probeTimegate: a 302 without Link is yes with no links', async (t) => {
  const r = await remote(t, (_req, res) => {
    res.writeHead(302, { location: '/m/1' });
    res.end();
  });
  t.same(await probeTimegate(`${r.url}/tg/${URI_R}`), { state: 'yes', links: [], location: `${r.url}/m/1` });
});

t.test('probeTimegate: 404 and 410 mean no mementos; other errors are unknown', async (t) => {
  const r = await remote(t, (req, res) => {
    res.writeHead(Number(req.url!.split('/')[1]));
    res.end();
  });
  const cases: [number, string][] = [
    [404, 'no'],
    [410, 'no'],
    [500, 'unknown'],
    [503, 'unknown'],
    [400, 'unknown'],
  ];
  for (const [status, state] of cases) t.same(await probeTimegate(`${r.url}/${status}/tg/${URI_R}`), { state }, `${status} → ${state}`);
});

t.test('probeTimegate: a remote archive that never answers is unknown once the timeout passes', async (t) => {
  let arrived!: () => void;
  const request = new Promise<void>((resolve) => {
    arrived = resolve;
  });
  const r = await remote(t, () => arrived()); // never answers
  const started = Date.now();
  const h = await probeTimegate(`${r.url}/tg/${URI_R}`, undefined, 200);
  const took = Date.now() - started;
  await request;
  t.same(h, { state: 'unknown' });
  t.ok(took >= 190, `not before the timeout (${took} ms)`);
  t.ok(took < REMOTE_TIMEOUT_MS, `well before the default ${REMOTE_TIMEOUT_MS} ms: the timeout passed in counts (${took} ms)`);
  t.equal(r.seen.length, 1, 'the request did reach the server');
});

t.test('probeTimegate and timemapSpan: a refused connection is unknown, not an error', async (t) => {
  const port = await refusedPort();
  t.same(await probeTimegate(`http://127.0.0.1:${port}/tg/${URI_R}`, undefined, 2000), { state: 'unknown' });
  t.same(await timemapSpan(`http://127.0.0.1:${port}/tm/${URI_R}`, 2000), { state: 'unknown' });
});

t.test('timemapSpan: RFC 7089 §5: the self link’s from/until are the span of the remote mementos', async (t) => {
  const r = await remote(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/link-format' });
    res.end(RFC_TIMEMAP_HEAD + MEMENTOS);
  });
  t.same(await timemapSpan(`${r.url}/tm/${URI_R}`), { state: 'yes', first: at('2000-06-20T18:02:59Z'), last: at('2008-04-09T20:30:51Z') });
  t.same(r.seen, [{ method: 'GET', url: `/tm/${URI_R}`, acceptDatetime: undefined }], 'one GET of the TimeMap');
});

t.test('timemapSpan: the TimeMap is read only as far as its self link; the rest is not downloaded', async (t) => {
  const filler = `<http://arxiv.example.net/web/20050101000000/http://a.example.org>; rel="memento"; datetime="Sat, 01 Jan 2005 00:00:00 GMT",\n`.repeat(10);
  const total = 2000; // chunks the server would send, 10 ms apart: 20 s
  let sent = 0;
  let ended = false;
  let socketClosed!: (n: number) => void;
  const closed = new Promise<number>((resolve) => {
    socketClosed = resolve;
  });
  const r = await remote(t, (req, res) => {
    res.writeHead(200, { 'content-type': 'application/link-format' });
    res.write(RFC_TIMEMAP_HEAD);
    const timer = setInterval(() => {
      res.write(filler);
      if (++sent === total) {
        clearInterval(timer);
        res.end(MEMENTOS);
        ended = true;
      }
    }, 10);
    req.socket.once('close', () => {
      clearInterval(timer);
      socketClosed(sent);
    });
  });
  const started = Date.now();
  const h = await timemapSpan(`${r.url}/tm/${URI_R}`, 30_000);
  const took = Date.now() - started;
  t.same(h, { state: 'yes', first: at('2000-06-20T18:02:59Z'), last: at('2008-04-09T20:30:51Z') }, `the span, after ${took} ms`);
  const chunks = await closed;
  t.equal(ended, false, 'the client closed the connection before the body ended');
  t.ok(chunks < total, `the server got to send ${chunks} of ${total} chunks`);
});

t.test('timemapSpan: a TimeMap whose self link has no from/until is yes without first/last', async (t) => {
  const bodies: Record<string, string> = {
    '/no-self': `<${URI_R}>; rel="original",\n${MEMENTOS}`,
    '/self-without-dates': `<${URI_R}>; rel="original",\n<http://r.example/tm>; rel="self"; type="application/link-format",\n${MEMENTOS}`,
    '/empty': '',
  };
  const r = await remote(t, (req, res) => {
    res.writeHead(200, { 'content-type': 'application/link-format' });
    res.end(bodies[req.url!]);
  });
  for (const path of Object.keys(bodies)) t.same(await timemapSpan(r.url + path), { state: 'yes' }, path);
});

t.test('timemapSpan: 404 and 410 mean no mementos; 500 or a redirect is unknown', async (t) => {
  const r = await remote(t, (req, res) => {
    const status = Number(req.url!.slice(1));
    res.writeHead(status, status === 302 ? { location: '/elsewhere' } : {});
    res.end('not a TimeMap');
  });
  const cases: [number, string][] = [
    [404, 'no'],
    [410, 'no'],
    [500, 'unknown'],
    [302, 'unknown'],
  ];
  for (const [status, state] of cases) t.same(await timemapSpan(`${r.url}/${status}`), { state }, `${status} → ${state}`);
  t.notOk(
    r.seen.some((s) => s.url === '/elsewhere'),
    'a redirect is not followed',
  );
});

t.test('timemapSpan: a TimeMap that stalls before its self link is unknown once the timeout passes (the body read is bounded too)', async (t) => {
  const r = await remote(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/link-format' });
    res.write(`<${URI_R}>; rel="original",\n`); // then nothing
  });
  const started = Date.now();
  const h = await timemapSpan(`${r.url}/tm/${URI_R}`, 200);
  const took = Date.now() - started;
  t.same(h, { state: 'unknown' });
  t.ok(took >= 190 && took < REMOTE_TIMEOUT_MS, `after the timeout passed in (${took} ms)`);
});
