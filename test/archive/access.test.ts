/**
 * Issue 5, parts 4 and 7: who may PUT (put_allow CIDR blocks, put_tokens
 * bearer tokens; default loopback only), the read side open to all, and the
 * limits and timeouts of conf/archive.yaml.
 */

import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import t from 'tap';
import { DEFAULTS, validateArchiveConfig } from '../../archive/config.js';
import { parseYamlText } from '#shared/config.js';
import { addressMatcher, clientAddress } from '#shared/net.js';
import { type Answer, captureRecord, putCapture, request, startArchive, TWO_ARCHIVES } from '../helpers/archive.js';
import { warcBytes } from './helpers.js';

const TOKEN = 'k3yForTheProxy-0123456789abcdef';
const record = (target = '/p') =>
  captureRecord({ target, date: 'Mon, 05 Jan 2026 10:00:00 GMT', body: 'page', responseHeaders: [['Content-Type', 'text/plain']] });

/** A PUT from a chosen local address (127.0.0.x). */
function putFrom(port: number, localAddress: string, body: Buffer, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, localAddress, method: 'PUT', path: '/put/x', agent: false, headers: { 'content-length': String(body.length), ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const b = Buffer.concat(chunks);
          resolve({ status: res.statusCode!, headers: res.headers, body: b, text: b.toString() });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

t.test('default: PUT from loopback only; the defaults are what docs/configuration.md says', async (t) => {
  t.same(DEFAULTS.put_allow, ['127.0.0.0/8', '::1/128']);
  t.same(DEFAULTS.put_tokens, []);
  const allowed = addressMatcher(DEFAULTS.put_allow);
  t.ok(allowed('127.0.0.1'));
  t.ok(allowed('127.3.2.1'));
  t.ok(allowed('::1'));
  t.ok(allowed('::ffff:127.0.0.1'), 'an IPv4-mapped IPv6 address counts as its IPv4 address');
  t.notOk(allowed('192.0.2.7'));
  t.notOk(allowed('::ffff:192.0.2.7'));
  t.notOk(allowed('2001:db8::1'));
  t.notOk(allowed(''));
  t.equal(clientAddress('::ffff:10.1.2.3'), '10.1.2.3');
  const a = await startArchive();
  t.teardown(() => a.close());
  t.equal((await putCapture(a, '', record())).status, 201, 'a PUT from 127.0.0.1 is stored');
});

t.test('put_allow: a PUT from an address outside the list is 403 with a reason; nothing stored; reads stay open', async (t) => {
  const a = await startArchive(`put_allow: [127.0.0.2, "10.0.0.0/8", "fd00::/8"]\n` + TWO_ARCHIVES);
  t.teardown(() => a.close());
  const r = await putFrom(a.port, '127.0.0.1', record());
  t.equal(r.status, 403);
  t.equal(r.text, 'PUT from 127.0.0.1 is not allowed: the address is not in put_allow\n');
  t.equal(await a.store.index.count(), 0, 'no index row');
  t.equal(await warcBytes(a.dataDir), 0, 'no WARC bytes');
  const ok = await putFrom(a.port, '127.0.0.2', record());
  t.equal(ok.status, 201, 'the listed address may PUT');
  const m = await request(`${a.url}/current/memento/20260105100000id_/http://www.example.org/p`);
  t.equal(m.status, 200, 'the read side answers anyone');
  t.equal(m.text, 'page');
});

t.test('put_tokens: no or a wrong bearer token is 401 with WWW-Authenticate; the right one is stored', async (t) => {
  const a = await startArchive(`put_tokens: [${TOKEN}, another-token-of-16-chars]\n` + TWO_ARCHIVES);
  t.teardown(() => a.close());
  const none = await putCapture(a, '', record());
  t.equal(none.status, 401);
  t.equal(none.headers['www-authenticate'], 'Bearer realm="memento-archive"');
  t.equal(none.text, 'a capture PUT needs Authorization: Bearer <token> (put_tokens is set)\n');
  const wrong = await putCapture(a, '', record(), { headers: { authorization: 'Bearer not-the-token-at-all' } });
  t.equal(wrong.status, 401);
  t.equal(wrong.headers['www-authenticate'], 'Bearer realm="memento-archive", error="invalid_token"');
  t.equal(wrong.text, 'the bearer token is not one of put_tokens\n');
  const basic = await putCapture(a, '', record(), { headers: { authorization: 'Basic dXNlcjpwYXNz' } });
  t.equal(basic.status, 401);
  t.equal(basic.text, 'Authorization is not "Bearer <token>"\n');
  t.equal(await a.store.index.count(), 0, 'nothing stored by the refused PUTs');
  t.equal(await warcBytes(a.dataDir), 0);
  const ok = await putCapture(a, '', record(), { headers: { authorization: `Bearer ${TOKEN}` } });
  t.equal(ok.status, 201, 'the right token: stored');
  const ok2 = await putCapture(a, '', record('/q'), { headers: { authorization: 'bearer another-token-of-16-chars' } });
  t.equal(ok2.status, 201, 'either token, scheme name case-insensitive');
  const read = await request(`${a.url}/tg/http://www.example.org/p`);
  t.equal(read.status, 302, 'reads need no token');
});

t.test('config: bad put_allow / put_tokens / limits are refused with file:line and a reason', async (t) => {
  const bad = (yaml: string) => {
    try {
      validateArchiveConfig(parseYamlText(`data_dir: /tmp/x\n${yaml}${TWO_ARCHIVES}`, '/etc/archive.yaml'));
      return 'accepted';
    } catch (err) {
      return (err as Error).message;
    }
  };
  t.equal(
    bad('put_allow: [10.0.0.0/33]\n'),
    '/etc/archive.yaml:2: put_allow entry "10.0.0.0/33" is not an IP address or CIDR block like 10.0.0.0/8 or fd00::/8',
  );
  t.equal(
    bad('put_allow: [example.org]\n'),
    '/etc/archive.yaml:2: put_allow entry "example.org" is not an IP address or CIDR block like 10.0.0.0/8 or fd00::/8',
  );
  t.match(bad('put_tokens: [short]\n'), /^\/etc\/archive\.yaml:2: put_tokens entry "short" must be a bearer token of at least 16 characters/);
  t.match(bad('request_timeout: -1\n'), /^\/etc\/archive\.yaml:2: request_timeout must be a number of seconds/);
  t.match(bad('request_timeout: 10\nheaders_timeout: 20\n'), /headers_timeout \(20 s\) must not be longer than request_timeout \(10 s\)/);
  t.match(bad('max_url_length: 0\n'), /max_url_length must be a positive whole number/);
  const c = validateArchiveConfig(parseYamlText(`data_dir: /tmp/x\n${TWO_ARCHIVES}`, path.join('/etc', 'archive.yaml')));
  t.same(
    {
      u: c.maxUrlLength,
      h: c.maxHttpHeaderBytes,
      r: c.requestTimeoutMs,
      ht: c.headersTimeoutMs,
      i: c.idleTimeoutMs,
      k: c.keepAliveTimeoutMs,
      b: c.maxCaptureBytes,
      hb: c.maxHeadBytes,
    },
    { u: 2048, h: 16384, r: 600_000, ht: 10_000, i: 60_000, k: 5_000, b: 4294967296, hb: 65536 },
    'defaults as in docs/configuration.md',
  );
});

/** Opens a connection, writes `bytes`, keeps it open; resolves with what the server sent when it closes, and how long that took. */
function stall(port: number, bytes: string): Promise<{ text: string; ms: number }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const s = net.connect(port, '127.0.0.1', () => s.write(bytes));
    let text = '';
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error('the server kept a stalled request open for 10 s'));
    }, 10_000);
    s.on('data', (d) => (text += d));
    s.on('error', () => undefined);
    s.on('close', () => {
      clearTimeout(timer);
      resolve({ text, ms: Date.now() - started });
    });
  });
}

t.test('timeouts: a PUT that stalls in its head or its body is dropped with 408 and stores nothing', async (t) => {
  const a = await startArchive(`request_timeout: 1\nheaders_timeout: 0.5\nidle_timeout: 30\n` + TWO_ARCHIVES);
  t.teardown(() => a.close());
  const head = await stall(a.port, 'PUT /put/x HTTP/1.1\r\nHost: 127.0.0.1\r\n');
  t.match(
    head.text,
    /^HTTP\/1\.1 408 Request Timeout\r\n[\s\S]*\r\n\r\nthe request was not received in time \(request_timeout \/ headers_timeout\)\n$/,
    'head not finished in headers_timeout: 408 with a reason',
  );
  const rec = record().toString('latin1');
  const body = await stall(a.port, `PUT /put/x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: ${rec.length + 100}\r\n\r\n${rec}`);
  t.match(body.text, /^HTTP\/1\.1 408 /, 'body not finished in request_timeout: 408');
  t.ok(body.ms >= 900, `not before request_timeout (${body.ms} ms)`);
  t.equal(await a.store.index.count(), 0, 'nothing stored');
  t.equal((await putCapture(a, '', record())).status, 201, 'the daemon goes on taking captures');
});

t.test('idle_timeout: a silent connection is closed', async (t) => {
  const a = await startArchive(`idle_timeout: 0.5\n` + TWO_ARCHIVES);
  t.teardown(() => a.close());
  const rec = record().toString('latin1');
  const r = await stall(a.port, `PUT /put/x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: ${rec.length + 100}\r\n\r\n${rec}`);
  t.ok(r.ms >= 400 && r.ms < 5000, `closed after about idle_timeout (${r.ms} ms)`);
  t.equal(await a.store.index.count(), 0, 'nothing stored');
});
