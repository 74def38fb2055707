import t from 'tap';
import { type ArchiveConfig, validateArchiveConfig } from '../../../archive/config.js';
import { baseOf, localArchive, pagesOrigin, replayBase, uriRAfter } from '../../../archive/http/context.js';
import { parseYamlText } from '#shared/config.js';
import type { ArchiveSpan } from '../../../archive/spans.js';
import { isHttpError } from '#shared/http-error.js';

/** The status and message of what `fn` throws, when it is an HttpError. */
function httpErrorOf(fn: () => unknown): { status: number; message: string } | string {
  try {
    fn();
    return 'nothing thrown';
  } catch (err) {
    return isHttpError(err) ? { status: err.status, message: err.message } : `not an HttpError: ${String(err)}`;
  }
}

t.test('uriRAfter: the URI-R is everything after the route’s fixed segments, query included (docs/url-space.md "URI-Rs in addresses")', async (t) => {
  const cases: [string, string, string, string][] = [
    ['/tg/http://a.example/x?y=1', '/tg/*', 'http://a.example/x?y=1', 'the redirector'],
    ['/tg/timemap/http://a.example/x?y=1&z=2', '/tg/timemap/*', 'http://a.example/x?y=1&z=2', 'the index TimeMap'],
    ['/2001/timegate/http://a.example/x?y=1', '/:archive/timegate/*', 'http://a.example/x?y=1', 'a TimeGate'],
    ['/2001/memento/20010320203500/http://a.example/x?y=1', '/:archive/memento/:ts/*', 'http://a.example/x?y=1', 'a Memento'],
    ['/2001/memento/20010320203500id_/https://a.example/', '/:archive/memento/:ts/*', 'https://a.example/', 'a raw Memento'],
    ['/tg/http://a.example/x?next=http://b.example/?q', '/tg/*', 'http://a.example/x?next=http://b.example/?q', 'slashes in the query are the URI-R’s'],
    ['/tg/http://a.example/a//b', '/tg/*', 'http://a.example/a//b', 'empty path segments are the URI-R’s'],
    ['/tg/http%3A%2F%2Fa.example%2Fx%3Fy%3D1', '/tg/*', 'http://a.example/x?y=1', 'percent-encoded http%3A%2F%2F… is decoded first'],
    ['/tg/HTTPS%3a%2f%2fa.example%2f', '/tg/*', 'https://a.example/', 'the encoded scheme in any case'],
    ['/tg/a.example/x', '/tg/*', 'http://a.example/x', 'no scheme means http://'],
    ['/tg/http:/a.example/x', '/tg/*', 'http://a.example/x', 'a collapsed // is repaired'],
    ['/tg/http://A.Example:80/a/../b?q=1#frag', '/tg/*', 'http://a.example/b?q=1', 'normalised: host case, default port, dot-segments, fragment'],
  ];
  for (const [target, route, want, rule] of cases) t.equal(uriRAfter(target, route).uriR, want, `${rule}: ${target}`);
});

t.test('uriRAfter: the urlkey of the normalised URI-R comes with it (docs/storage.md "urlkey")', async (t) => {
  t.same(uriRAfter('/tg/http://www.Example.org:80/a/b?x=1', '/tg/*'), { uriR: 'http://www.example.org/a/b?x=1', urlkey: 'org,example,www)/a/b?x=1' });
  t.equal(uriRAfter('/tg/https://www.example.org/a/b?x=1', '/tg/*').urlkey, 'org,example,www)/a/b?x=1', 'https shares the key');
});

t.test('uriRAfter: nothing after the fixed segments is a 400 naming the address (docs/url-space.md "Errors")', async (t) => {
  const cases: [string, string, string][] = [
    ['/tg/', '/tg/*', 'no URL given after /tg/'],
    ['/tg/timemap/', '/tg/timemap/*', 'no URL given after /tg/timemap/'],
    ['/2001/timegate/', '/:archive/timegate/*', 'no URL given after /2001/timegate/'],
    ['/2001/memento/20010320203500/', '/:archive/memento/:ts/*', 'no URL given after /2001/memento/20010320203500/'],
  ];
  for (const [target, route, message] of cases)
    t.same(
      httpErrorOf(() => uriRAfter(target, route)),
      { status: 400, message },
      target,
    );
});

t.test('uriRAfter: a URL that is not http(s) is a 400 saying why', async (t) => {
  const cases: [string, string][] = [
    ['/tg/ftp://a.example/', 'only http and https URLs are archived, not ftp:'],
    ['/tg/javascript:alert(1)', 'only http and https URLs are archived, not javascript:'],
    ['/tg/http://', 'not a valid URL: "http://"'],
    ['/tg/http://user:pw@a.example/', 'URL has userinfo'],
  ];
  for (const [target, message] of cases)
    t.same(
      httpErrorOf(() => uriRAfter(target, '/tg/*')),
      { status: 400, message },
      target,
    );
  t.match(
    httpErrorOf(() => uriRAfter('/tg/http://a.example/' + 'x'.repeat(9000), '/tg/*')),
    { status: 400 },
    'a URL over the length limit',
  );
});

t.test('uriRAfter: a malformed percent-encoding in an encoded URI-R is a 400 too', async (t) => {
  // Through the daemon fastify's router refuses such a target first (a 400 of the same shape).
  t.match(
    httpErrorOf(() => uriRAfter('/tg/http%3A%2F%2Fa.example%2F%ZZ', '/tg/*')),
    { status: 400 },
    'http%3A%2F%2Fa.example%2F%ZZ',
  );
});

const SPANS: ArchiveSpan[] = [
  { id: '2025', from: -Infinity, until: Date.parse('2026-01-01T00:00:00Z') / 1000 },
  {
    id: 'far',
    from: Date.parse('2026-01-01T00:00:00Z') / 1000,
    until: Date.parse('2027-01-01T00:00:00Z') / 1000,
    timegate: 'http://other.example:8090/far/timegate/',
    timemap: 'http://other.example:8090/far/timemap/link/',
  },
  { id: 'current', from: Date.parse('2027-01-01T00:00:00Z') / 1000, until: Infinity },
];

function config(over: Partial<ArchiveConfig> = {}): ArchiveConfig {
  return {
    listen: { host: '127.0.0.1', port: 8090 },
    dataDir: '/nonexistent',
    putPrefix: '/',
    archives: SPANS,
    warcMaxBytes: 1e9,
    warcGzipLevel: 6,
    maxCaptureBytes: 1e8,
    maxHeadBytes: 65536,
    maxHeaders: 200,
    maxUrlLength: 8192,
    maxHttpHeaderBytes: 65536,
    requestTimeoutMs: 60_000,
    headersTimeoutMs: 30_000,
    idleTimeoutMs: 60_000,
    keepAliveTimeoutMs: 5000,
    maxConnections: 4096,
    putReservedConnections: 128,
    putTokens: [],
    putAllow: ['127.0.0.0/8'],
    replayCacheBytes: 0,
    indexCacheBytes: 0,
    recordCacheBytes: 0,
    maxDecodedBytes: 256 * 1024 * 1024,
    access: [],
    revisitIntervalS: 86_400,
    signingKeyFile: '/nonexistent/log-signing-key.pem',
    publishRequests: false,
    witnesses: [],
    witnessQuorum: 0,
    ...over,
  };
}

t.test('baseOf: base_url when configured, else http:// + Host (docs/url-space.md `{base}`)', async (t) => {
  const cases: [Partial<ArchiveConfig>, string | undefined, string, string][] = [
    [{ baseUrl: 'https://archive.example.net/web' }, 'h.example', 'https://archive.example.net/web', 'base_url wins over Host'],
    [{ baseUrl: 'https://archive.example.net' }, undefined, 'https://archive.example.net', 'base_url without a Host'],
    [{}, 'archive.example.net', 'http://archive.example.net', 'a Host name'],
    [{}, 'archive.example.net:8090', 'http://archive.example.net:8090', 'a Host with a port'],
    [{}, '192.0.2.1:80', 'http://192.0.2.1:80', 'an IPv4 Host'],
    [{}, '[2001:db8::1]:8090', 'http://[2001:db8::1]:8090', 'an IPv6 Host, in brackets as sent'],
  ];
  for (const [over, host, want, rule] of cases) t.equal(baseOf(config(over), host), want, rule);
});

t.test("baseOf: a request on replay_origin has the replay base (its origin, base_url's path); any other Host the usual one", async (t) => {
  const config = { listen: { host: '127.0.0.1', port: 8090 }, baseUrl: 'https://arc.example.net/web', replayOrigin: 'https://replay.example.net' };
  t.equal(baseOf(config, 'replay.example.net'), 'https://replay.example.net/web', 'the replay host');
  t.equal(baseOf(config, 'REPLAY.example.net:443'), 'https://replay.example.net/web', 'case and default port as the same host');
  t.equal(baseOf(config, 'replay.example.net:8443'), 'https://arc.example.net/web', 'another port is another origin');
  t.equal(baseOf(config, 'arc.example.net'), 'https://arc.example.net/web', 'the main host');
  t.equal(replayBase(config), 'https://replay.example.net/web');
  t.equal(pagesOrigin(config, 'https://replay.example.net/web'), 'https://arc.example.net', 'mementos on the replay origin are framed by the main origin');
  t.equal(pagesOrigin(config, 'https://arc.example.net/web'), 'https://arc.example.net');
});

t.test('replay_origin: needs base_url, on another host name; an origin, no path', async (t) => {
  const load = (yaml: string) => validateArchiveConfig(parseYamlText(`archives:\n  - id: a\n${yaml}`, 'archive.yaml'));
  t.equal(load('base_url: http://127.0.0.1:8090\nreplay_origin: http://localhost:8090/\n').replayOrigin, 'http://localhost:8090');
  t.equal(load('base_url: http://127.0.0.1:8090\n').replayOrigin, undefined, 'off by default');
  t.throws(() => load('replay_origin: http://localhost:8090\n'), /replay_origin needs base_url too/);
  t.throws(
    () => load('base_url: http://127.0.0.1:8090\nreplay_origin: http://127.0.0.1:8091\n'),
    /another host name than base_url's \(127\.0\.0\.1\): cookies do not tell ports apart/,
  );
  t.throws(() => load('base_url: http://127.0.0.1:8090\nreplay_origin: http://localhost:8090/x\n'), /replay_origin.*must be an origin like/);
});

t.test('baseOf: without a usable Host, the listen address (IPv6 in brackets, RFC 3986 §3.2.2)', async (t) => {
  const v4 = config();
  const v6 = config({ listen: { host: '::1', port: 8090 } });
  t.equal(baseOf(v4, undefined), 'http://127.0.0.1:8090', 'no Host');
  t.equal(baseOf(v4, ''), 'http://127.0.0.1:8090', 'an empty Host');
  t.equal(baseOf(v6, undefined), 'http://[::1]:8090', 'no Host, IPv6 listen address');
  for (const host of ['a b', 'a.example/x', 'a.example"><script>', 'user@a.example', 'a.example\\x']) {
    t.equal(baseOf(v6, host), 'http://[::1]:8090', `a Host with characters no host has: ${JSON.stringify(host)}`);
  }
});

t.test('baseOf: a Host that is not host[:port] falls back to the listen address too', async (t) => {
  for (const host of ['a.example:80:80', '[[x', 'a]b', ':::']) {
    t.equal(baseOf(config(), host), 'http://127.0.0.1:8090', JSON.stringify(host));
  }
});

t.test('localArchive: a local archive by id', async (t) => {
  t.equal(localArchive(config(), '2025'), SPANS[0]);
  t.equal(localArchive(config(), 'current'), SPANS[2]);
});

t.test('localArchive: an unknown id is a 404 listing the archives; a remote one a 404 naming where it is served (docs/url-space.md "Errors")', async (t) => {
  t.same(
    httpErrorOf(() => localArchive(config(), 'nope')),
    { status: 404, message: 'no archive named "nope" here (archives: 2025, far, current)' },
  );
  t.same(
    httpErrorOf(() => localArchive(config(), 'Current')),
    { status: 404, message: 'no archive named "Current" here (archives: 2025, far, current)' },
    'ids are case-sensitive',
  );
  t.same(
    httpErrorOf(() => localArchive(config(), 'far')),
    { status: 404, message: 'archive "far" is served by http://other.example:8090/far/timegate/' },
  );
});
