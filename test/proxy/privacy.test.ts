/**
 * Privacy by default: requests with Authorization and responses marked
 * private or no-store are not captured unless the vhost opts in
 * (ArchivePrivate); Cookie and Set-Cookie values are removed from the
 * capture unless it opts in (ArchiveCookies); credentials never reach the
 * archive; X-Client-IP is never the client's word.
 */

import { once } from 'node:events';
import type http from 'node:http';
import t, { type Test } from 'tap';
import type { CaptureOutcome } from '../../proxy/capture/capture.js';
import { redactCookie, redactSetCookie } from '../../proxy/capture/record.js';
import { get, type ReceivedPut, startFakeArchive, startTestProxy, startUpstream, vhostYaml } from './helpers.js';

const DATE = 'Tue, 20 Mar 2001 20:35:00 GMT';

function site(req: http.IncomingMessage, res: http.ServerResponse) {
  res.sendDate = false;
  switch ((req.url ?? '/').split('?')[0]) {
    case '/private':
      res.writeHead(200, ['Date', DATE, 'Cache-Control', 'private, max-age=60']);
      return void res.end('my account');
    case '/no-store':
      res.writeHead(200, ['Date', DATE, 'Cache-Control', 'max-age=0, no-store']);
      return void res.end('one-time token');
    case '/field-private':
      res.writeHead(200, ['Date', DATE, 'Cache-Control', 'private="Set-Cookie, X-Foo", max-age=60']);
      return void res.end('partly private');
    case '/cookie':
      res.writeHead(200, ['Date', DATE, 'Set-Cookie', 'sid=s3cr3t; Path=/; HttpOnly', 'Set-Cookie', 'theme=dark', 'Cache-Control', 'public, max-age=60']);
      return void res.end('hello');
    default:
      res.writeHead(200, ['Date', DATE, 'Content-Type', 'text/plain']);
      res.end(`public page ${req.url}`);
  }
}

async function setup(t: Test, settings: Record<string, string | number | boolean> = {}) {
  const upstream = await startUpstream(t, site);
  const archive = await startFakeArchive(t);
  const { proxy, logs } = await startTestProxy(t, {
    'a.yaml': vhostYaml({ server_name: 'site.example', upstream: upstream.url, ArchivePort: archive.port, ...settings }),
  });
  const outcomes: CaptureOutcome[] = [];
  proxy.events.on('capture', (o: CaptureOutcome) => outcomes.push(o));
  /** GET and wait for its request log entry (and so for its capture, if any). */
  const fetch = async (p: string, headers: [string, string][] = []) => {
    const logged = once(proxy.events, 'request');
    const r = await get(proxy.url, p, 'site.example', headers);
    const [entry] = (await logged) as [Record<string, unknown>];
    return { r, entry };
  };
  return { upstream, archive, proxy, logs, outcomes, fetch };
}

/** The request head of a captured record (up to the blank line). */
function requestHead(put: ReceivedPut): string {
  const s = put.body.toString('latin1');
  return s.slice(0, s.indexOf('\r\n\r\n') + 2);
}

/** The response head of a captured record. */
function responseHead(put: ReceivedPut): string {
  const s = put.body.toString('latin1');
  const start = s.indexOf('\r\n\r\n') + 4;
  return s.slice(start, s.indexOf('\r\n\r\n', start) + 2);
}

t.test('by default: Authorization, Cache-Control private and no-store are not captured', async (t) => {
  const { archive, fetch } = await setup(t);
  const cases: [string, [string, string][], string][] = [
    ['/page', [['Authorization', 'Basic dXNlcjpwYXNz']], 'a request with Authorization'],
    ['/private', [], 'Cache-Control: private'],
    ['/no-store', [], 'Cache-Control: no-store'],
    ['/field-private', [], 'Cache-Control: private="Set-Cookie, X-Foo"'],
  ];
  for (const [p, headers, what] of cases) {
    const { r, entry } = await fetch(p, headers);
    t.equal(r.status, 200, `${what}: the client is served`);
    t.equal(entry.capture, 'no: private', `${what}: not captured (logged as private)`);
  }
  const { entry } = await fetch('/page');
  t.equal(entry.capture, 'stored', 'a public page is captured');
  t.same(
    archive.puts.map((p) => p.url),
    ['/put/http://site.example/page'],
    'the archive got the public page only',
  );
});

t.test('ArchivePrivate On: they are captured, and the credentials still never reach the archive', async (t) => {
  const { archive, fetch } = await setup(t, { ArchivePrivate: 'On' });
  t.equal((await fetch('/page', [['Authorization', 'Basic dXNlcjpwYXNz']])).entry.capture, 'stored');
  t.equal((await fetch('/private')).entry.capture, 'stored');
  t.equal((await fetch('/no-store')).entry.capture, 'stored');
  t.equal(archive.puts.length, 3);
  t.match(requestHead(archive.puts[0]), /\r\nAuthorization: Basic\r\n/, 'Authorization keeps its scheme, not the credentials');
  t.notMatch(archive.puts[0].body.toString('latin1'), /dXNlcjpwYXNz/, 'the credentials are nowhere in the record');
  t.match(responseHead(archive.puts[1]), /\r\nCache-Control: private, max-age=60\r\n/, 'the response headers are as sent');
});

t.test('Cookie and Set-Cookie: names kept, values removed; ArchiveCookies On keeps them', async (t) => {
  const { archive, fetch } = await setup(t);
  const { r } = await fetch('/cookie', [['Cookie', 'sid=s3cr3t; theme=dark; lang=en']]);
  t.same(r.headers['set-cookie'], ['sid=s3cr3t; Path=/; HttpOnly', 'theme=dark'], 'the client gets the cookies untouched');
  const put = archive.puts[0];
  t.match(requestHead(put), /\r\nCookie: sid=; theme=; lang=\r\n/, 'Cookie: names, no values');
  t.match(responseHead(put), /\r\nSet-Cookie: sid=; Path=\/; HttpOnly\r\nSet-Cookie: theme=\r\n/, 'Set-Cookie: name and attributes, no value');
  t.notMatch(put.body.toString('latin1'), /s3cr3t|dark/, 'no cookie value anywhere in the record');

  const kept = await setup(t, { ArchiveCookies: 'On' });
  await kept.fetch('/cookie', [['Cookie', 'sid=s3cr3t; theme=dark']]);
  t.match(requestHead(kept.archive.puts[0]), /\r\nCookie: sid=s3cr3t; theme=dark\r\n/);
  t.match(responseHead(kept.archive.puts[0]), /\r\nSet-Cookie: sid=s3cr3t; Path=\/; HttpOnly\r\nSet-Cookie: theme=dark\r\n/);
});

t.test('redactCookie / redactSetCookie', async (t) => {
  t.equal(redactCookie('a=1; b=2'), 'a=; b=');
  t.equal(redactCookie('flag; a=1'), 'a=', 'a pair without = is dropped');
  t.equal(redactSetCookie('sid=abc; Path=/; Expires=Wed, 21 Oct 2026 07:28:00 GMT; Secure'), 'sid=; Path=/; Expires=Wed, 21 Oct 2026 07:28:00 GMT; Secure');
  t.equal(redactSetCookie('novalue'), '=');
});

t.test('X-Client-IP: EnableIP On adds the real address, a client-sent one never passes (capture or content server)', async (t) => {
  const on = await setup(t, { EnableIP: 'On' });
  await on.fetch('/page', [
    ['X-Client-IP', '203.0.113.66'],
    ['x-client-ip', '203.0.113.67'],
  ]);
  const head = requestHead(on.archive.puts[0]);
  t.match(head, /\r\nX-Client-IP: 127\.0\.0\.1\r\n$/, 'the socket address, once, at the end');
  t.notMatch(head, /203\.0\.113/, 'the spoofed values are gone');
  t.equal(on.upstream.seen[0].headers['x-client-ip'], undefined, 'the content server does not get the spoofed header either');

  const off = await setup(t, { EnableIP: 'Off' });
  await off.fetch('/page', [['X-Client-IP', '203.0.113.66']]);
  t.notMatch(requestHead(off.archive.puts[0]), /X-Client-IP/i, 'EnableIP Off: no X-Client-IP at all');
  t.equal(off.upstream.seen[0].headers['x-client-ip'], undefined);
});
