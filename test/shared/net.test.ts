import t from 'tap';
import {
  addressMatcher,
  BEARER_TOKEN,
  bearerTokenOf,
  clientAddress,
  formatHostPort,
  isLoopbackHost,
  type HostPort,
  originOf,
  parseAddressBlock,
  parseListen,
} from '#shared/net.js';

t.test('RFC 3986 §3.2.2: an IPv6 literal is written in brackets in host:port and origins', async (t) => {
  t.equal(formatHostPort('::1', 8090), '[::1]:8090');
  t.equal(formatHostPort('2001:db8::1', 80), '[2001:db8::1]:80');
  t.equal(formatHostPort('127.0.0.1', 8090), '127.0.0.1:8090');
  t.equal(formatHostPort('a.example', 0), 'a.example:0');
  t.equal(originOf('http', { host: '::1', port: 8090 }), 'http://[::1]:8090');
  t.equal(originOf('https', { host: 'a.example', port: 443 }), 'https://a.example:443');
});

t.test('parseListen: host:port, [v6]:port, or a bare port on the default host', async (t) => {
  const cases: [unknown, HostPort | undefined][] = [
    ['127.0.0.1:8090', { host: '127.0.0.1', port: 8090 }],
    ['localhost:80', { host: 'localhost', port: 80 }],
    ['[::1]:8090', { host: '::1', port: 8090 }],
    ['[2001:db8::1]:443', { host: '2001:db8::1', port: 443 }],
    ['8090', { host: '127.0.0.1', port: 8090 }],
    [8090, { host: '127.0.0.1', port: 8090 }],
    [' 8090 ', { host: '127.0.0.1', port: 8090 }],
    ['0', { host: '127.0.0.1', port: 0 }], // any free port
    ['65535', { host: '127.0.0.1', port: 65535 }],
  ];
  for (const [value, want] of cases) t.same(parseListen(value), want, JSON.stringify(value));
  t.same(parseListen('80', '0.0.0.0'), { host: '0.0.0.0', port: 80 }, 'defaultHost for a bare port');
  t.same(parseListen('a.example:80', '0.0.0.0'), { host: 'a.example', port: 80 }, 'defaultHost unused when a host is given');
});

t.test('parseListen: undefined for a port out of 0-65535 or any other shape', async (t) => {
  for (const value of [
    '65536',
    '99999',
    '123456',
    '',
    'abc',
    ':80',
    'a:b',
    '::1:80',
    '[::1]',
    '[::1]:',
    'a:80:90',
    '-1',
    -1,
    80.5,
    undefined,
    null,
    {},
    ['80'],
  ]) {
    t.equal(parseListen(value), undefined, JSON.stringify(value));
  }
});

t.test('clientAddress: an IPv4-mapped IPv6 peer is its IPv4 address (RFC 4291 §2.5.5.2)', async (t) => {
  const cases: [string | undefined, string | undefined][] = [
    ['::ffff:192.0.2.7', '192.0.2.7'],
    ['::ffff:c000:207', '192.0.2.7'],
    ['192.0.2.7', '192.0.2.7'],
    ['::1', '::1'],
    ['2001:DB8::1', '2001:db8::1'],
    [undefined, undefined], // a closed socket
    ['', undefined],
  ];
  for (const [addr, want] of cases) t.equal(clientAddress(addr), want, JSON.stringify(addr));
});

t.test('parseAddressBlock: a CIDR block (RFC 4632 §3.1, RFC 4291 §2.3) or one address as /32 or /128', async (t) => {
  const shown = (s: string) => {
    const block = parseAddressBlock(s);
    return block && [block[0].kind(), block[0].toString(), block[1]];
  };
  t.same(shown('10.0.0.0/8'), ['ipv4', '10.0.0.0', 8]);
  t.same(shown(' 10.0.0.0/8 '), ['ipv4', '10.0.0.0', 8], 'surrounding spaces ignored');
  t.same(shown('fd00::/8'), ['ipv6', 'fd00::', 8]);
  t.same(shown('192.0.2.7'), ['ipv4', '192.0.2.7', 32]);
  t.same(shown('::1'), ['ipv6', '::1', 128]);
  for (const s of ['', 'junk', '10.0.0.0/33', 'fd00::/129', '10.0.0.0/', '/8', '300.0.0.1']) t.equal(parseAddressBlock(s), undefined, JSON.stringify(s));
});

t.test('addressMatcher: CIDR v4 and v6, single addresses, mapped addresses match their IPv4 block', async (t) => {
  const allowed = addressMatcher(['10.0.0.0/8', 'fd00::/8', '192.0.2.7', '::1']);
  const cases: [string | undefined, boolean][] = [
    ['10.1.2.3', true],
    ['10.255.255.255', true],
    ['11.0.0.1', false],
    ['::ffff:10.1.2.3', true], // IPv4-mapped: matches as 10.1.2.3
    ['fd12::1', true],
    ['fe80::1', false],
    ['192.0.2.7', true],
    ['192.0.2.8', false],
    ['::ffff:192.0.2.7', true],
    ['::1', true],
    ['0:0:0:0:0:0:0:1', true],
    ['::2', false],
    [undefined, false],
    ['', false],
    ['junk', false],
  ];
  for (const [addr, want] of cases) t.equal(allowed(addr), want, JSON.stringify(addr));
  t.equal(addressMatcher([])('10.0.0.1'), false, 'an empty list matches nothing');
  t.equal(addressMatcher(['0.0.0.0/0'])('::1'), false, 'an IPv4 block never matches an IPv6 address');
  t.equal(addressMatcher(['::/0'])('192.0.2.7'), false, 'an IPv6 block never matches an IPv4 address');
});

t.test('addressMatcher: an entry written as an IPv4-mapped address (RFC 4291 §2.5.5.2) matches that address', async (t) => {
  t.equal(addressMatcher(['::ffff:192.0.2.7'])('::ffff:192.0.2.7'), true, 'the same mapped address');
  t.equal(addressMatcher(['::ffff:192.0.2.7'])('192.0.2.7'), true, 'its IPv4 address');
  t.equal(addressMatcher(['::ffff:192.0.2.0/120'])('192.0.2.7'), true, 'a mapped block');
});

t.test('addressMatcher: an entry that is not an address block throws TypeError', async (t) => {
  t.throws(() => addressMatcher(['10.0.0.0/8', 'nope']), new TypeError('not an address or CIDR block: nope'));
  t.throws(() => addressMatcher(['10.0.0.0/33']), TypeError);
});

t.test('RFC 6750 §2.1: Authorization: Bearer b64token; the scheme is case-insensitive (RFC 9110 §11.1)', async (t) => {
  const cases: [string | undefined, string | undefined][] = [
    ['Bearer abc', 'abc'],
    ['bearer abc', 'abc'],
    ['BEARER abc', 'abc'],
    ['Bearer abc==', 'abc=='], // b64token may end in "="
    ['Bearer abc-._~+/xyz=', 'abc-._~+/xyz='],
    ['Bearer  abc', 'abc'], // 1*SP
    ['Bearer abc ', 'abc'],
    ['Bearer a=b', undefined], // "=" only at the end
    ['Bearer ===', undefined], // at least one token character first
    ['Bearer a b', undefined],
    ['Bearer a,b', undefined],
    ['Bearer\tabc', undefined],
    ['Bearer', undefined],
    ['Bearer ', undefined],
    ['Bearerabc', undefined],
    ['Basic abc', undefined],
    [' Bearer abc', undefined],
    ['', undefined],
    [undefined, undefined],
  ];
  for (const [value, want] of cases) t.equal(bearerTokenOf(value), want, JSON.stringify(value));
});

t.test('RFC 6750 §2.1: BEARER_TOKEN is 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="', async (t) => {
  for (const s of ['abc', 'A-Z.0_9~+/', 'x=', 'x===']) t.equal(BEARER_TOKEN.test(s), true, s);
  for (const s of ['', '=', '=abc', 'a b', 'a=b', 'a!', 'é']) t.equal(BEARER_TOKEN.test(s), false, JSON.stringify(s));
});

t.test('isLoopbackHost: loopback literals and localhost; wildcards, other addresses and other names are not', async (t) => {
  for (const h of ['127.0.0.1', '127.9.8.7', '::1', '::ffff:127.0.0.1', 'localhost', 'LOCALHOST', 'a.localhost', 'localhost.']) t.ok(isLoopbackHost(h), h);
  for (const h of ['0.0.0.0', '::', '192.168.1.10', '10.0.0.1', 'fd00::1', '::ffff:10.0.0.1', 'archive.example.org', 'localhost.example.org', 'mylocalhost'])
    t.notOk(isLoopbackHost(h), h);
});
