/**
 * What a client of the proxy sees: the content server's answer with the
 * TimeGate Link added, 421 for an unknown Host (or the default vhost), 502
 * when the content server is down, X-Forwarded-* at the content server.
 */
import t from 'tap';
import { freePort, get, startTestProxy, startUpstream, vhostYaml } from './helpers.js';

const noArchive = { EnableArchiving: 'Off' };

t.test('proxies to the vhost upstream and appends the TimeGate Link', async (t) => {
  const site = await startUpstream(t, (req, res) => {
    if (req.url === '/with-link') {
      res.setHeader('Link', '<http://a.example/next>; rel="next"');
      res.appendHeader('Link', '<http://a.example/style.css>; rel="preload"');
    }
    res.setHeader('Content-Type', 'text/plain');
    res.setHeader('X-Site', 'yes');
    res.end(`hello from ${req.url}`);
  });
  const { proxy } = await startTestProxy(t, {
    'a.yaml': vhostYaml({ server_name: 'a.example', server_aliases: '[alias.example]', upstream: site.url, ArchiveTimeGate: 'tg.example:8090/tg/', ...noArchive }),
  });

  const r = await get(proxy.url, '/page?x=1', 'a.example');
  t.equal(r.status, 200);
  t.equal(r.body.toString(), 'hello from /page?x=1', 'body from the content server, target unchanged');
  t.equal(r.headers['x-site'], 'yes', 'content server headers pass');
  t.equal(r.headers.link, '<http://tg.example:8090/tg/http://a.example/page?x=1>; rel="timegate"', 'Link to the TimeGate of the URI-R');

  const l = await get(proxy.url, '/with-link', 'a.example');
  t.equal(
    l.headers.link,
    '<http://a.example/next>; rel="next", <http://a.example/style.css>; rel="preload", <http://tg.example:8090/tg/http://a.example/with-link>; rel="timegate"',
    'timegate link after the Links the content server sent',
  );

  const a = await get(proxy.url, '/x', 'ALIAS.Example:8080');
  t.equal(a.status, 200, 'an alias matches, case-insensitively, port ignored');
  t.equal(a.headers.link, '<http://tg.example:8090/tg/http://alias.example:8080/x>; rel="timegate"', 'URI-R keeps the port the client used');

  const h = await get(proxy.url, '/head', 'a.example', [], 'HEAD');
  t.equal(h.status, 200);
  t.equal(h.body.length, 0);
  t.match(h.headers.link, /rel="timegate"/, 'HEAD answers carry the Link too');
});

t.test('sends X-Forwarded-For, -Proto and -Host to the content server, Host kept', async (t) => {
  const site = await startUpstream(t, (_req, res) => res.end('ok'));
  const { proxy } = await startTestProxy(t, { 'a.yaml': vhostYaml({ server_name: 'a.example', upstream: site.url, ...noArchive }) });
  await get(proxy.url, '/', 'a.example:8080');
  await get(proxy.url, '/', 'a.example', [['X-Forwarded-For', '192.0.2.9']]);
  const [first, second] = site.seen;
  t.equal(first.headers.host, 'a.example:8080', 'Host as the client sent it');
  t.equal(first.headers['x-forwarded-for'], '127.0.0.1');
  t.equal(first.headers['x-forwarded-proto'], 'http');
  t.equal(first.headers['x-forwarded-host'], 'a.example:8080');
  t.equal(second.headers['x-forwarded-for'], '192.0.2.9,127.0.0.1', 'the client address appended to the chain');
});

t.test('unknown Host: 421 with one text line; the default vhost takes it when there is one', async (t) => {
  const site = await startUpstream(t, (_req, res) => res.end('default site'));
  const { proxy, logs } = await startTestProxy(t, { 'a.yaml': vhostYaml({ server_name: 'a.example', upstream: site.url, ...noArchive }) });
  const r = await get(proxy.url, '/', 'other.example');
  t.equal(r.status, 421);
  t.equal(r.headers['content-type'], 'text/plain; charset=utf-8');
  t.equal(r.body.toString(), '421 Misdirected Request: no virtual host here serves "other.example"\n');
  t.equal(r.headers.link, undefined, 'no TimeGate Link on the proxy\'s own answers');
  t.equal(site.seen.length, 0, 'nothing reached the content server');
  t.ok(logs.some((e) => e.type === 'request' && e.status === 421 && e.host === 'other.example'), 'logged');

  const { proxy: p2 } = await startTestProxy(t, {
    'a.yaml': vhostYaml({ server_name: 'a.example', upstream: 'http://127.0.0.1:1', ...noArchive }),
    'b.yaml': vhostYaml({ server_name: 'b.example', default: true, upstream: site.url, ...noArchive }),
  });
  const d = await get(p2.url, '/x', 'other.example');
  t.equal(d.status, 200);
  t.equal(d.body.toString(), 'default site');
  t.equal(d.headers.link, '<http://127.0.0.1:8090/tg/http://other.example/x>; rel="timegate"', 'URI-R from the Host the client sent');
});

t.test('content server down: 502 with a short body; the proxy keeps serving', async (t) => {
  const down = await freePort();
  const site = await startUpstream(t, (_req, res) => res.end('up'));
  const { proxy, logs } = await startTestProxy(t, {
    'down.yaml': vhostYaml({ server_name: 'down.example', upstream: `http://127.0.0.1:${down}` }),
    'up.yaml': vhostYaml({ server_name: 'up.example', upstream: site.url, ...noArchive }),
  });
  for (let i = 0; i < 3; i++) {
    const r = await get(proxy.url, '/', 'down.example');
    t.equal(r.status, 502);
    t.equal(r.body.toString(), '502 Bad Gateway: the content server could not be reached or failed before answering\n');
  }
  const entry = logs.find((e) => e.type === 'request' && e.status === 502);
  t.match(entry, { level: 'warn', error: /ECONNREFUSED/, capture: 'no: no-response' }, 'the log says why');
  const ok = await get(proxy.url, '/', 'up.example');
  t.equal(ok.status, 200);
  t.equal(ok.body.toString(), 'up');
});

t.test('content server silent past the timeout: 504', async (t) => {
  const site = await startUpstream(t, () => {
    /* never answers */
  });
  const { proxy } = await startTestProxy(t, { 'a.yaml': vhostYaml({ server_name: 'a.example', upstream: site.url, ...noArchive }) }, { upstreamTimeoutMs: 200 });
  const r = await get(proxy.url, '/', 'a.example');
  t.equal(r.status, 504);
  t.equal(r.body.toString(), '504 Gateway Timeout: the content server did not answer in time\n');
});
