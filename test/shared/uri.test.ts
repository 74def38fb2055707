import t, { type Test } from 'tap';
import { isExcludedPath, normalizeMatchPath } from '../../proxy/config/excluded.js';
import {
  canonicalEscapes,
  checkCaptureTarget,
  exactUrlkey,
  foldEncodedSlashes,
  linkLength,
  MAX_URI_LENGTH,
  normalizeUriR,
  UriError,
  uriRFromRequest,
} from '#shared/uri.js';

/** Asserts that `fn` throws a UriError whose one-line message matches `message`. */
function refuses(t: Test, fn: () => unknown, message: RegExp, name: string): void {
  try {
    fn();
    t.fail(`${name}: no UriError`);
  } catch (err) {
    t.type(err, UriError, name);
    t.match((err as Error).message, message, name);
    t.notMatch((err as Error).message, /[\r\n]/, `${name}: one line`);
  }
}

t.test('normalizeUriR: scheme, host, port, fragment and dot-segments (RFC 3986 §6.2.2, §6.2.3)', async (t) => {
  const cases: [string, string, string][] = [
    ['example.org', 'http://example.org/', 'a missing scheme means http (Wayback: /tg/example.org/)'],
    ['example.org/a?q=1', 'http://example.org/a?q=1', 'a missing scheme, with path and query'],
    ['http:/a.example/', 'http://a.example/', 'a collapsed "//" after the scheme is restored'],
    ['https:/a.example/x', 'https://a.example/x', 'a collapsed "//" after https'],
    ['HTTP://WWW.Example.ORG/Path', 'http://www.example.org/Path', 'scheme and host lower-cased, path case kept (§6.2.2.1)'],
    ['http://a.example:80/', 'http://a.example/', 'default port 80 dropped (§6.2.3)'],
    ['https://a.example:443/', 'https://a.example/', 'default port 443 dropped (§6.2.3)'],
    ['https://a.example:80/', 'https://a.example:80/', '80 is not the https default: kept'],
    ['http://a.example:8080/x', 'http://a.example:8080/x', 'a non-default port is kept'],
    ['http://a.example', 'http://a.example/', 'an empty path becomes "/" (§6.2.3)'],
    ['http://a.example/x#frag', 'http://a.example/x', 'the fragment is dropped'],
    ['http://a.example/x?q=1#', 'http://a.example/x?q=1', 'an empty fragment is dropped'],
    ['http://a.example/a/../b/./c', 'http://a.example/b/c', 'dot-segments resolved (§6.2.2.3)'],
    ['http://a.example/a b', 'http://a.example/a%20b', 'a space is percent-encoded'],
    ['http://[2001:DB8::1]:8080/x', 'http://[2001:db8::1]:8080/x', 'an IPv6 literal is lower-cased and kept in brackets'],
  ];
  for (const [input, want, rule] of cases) t.equal(normalizeUriR(input), want, rule);
});

t.test('normalizeUriR: a missing scheme means http also when the host has a port', async (t) => {
  let got: string;
  try {
    got = normalizeUriR('example.org:8080/x');
  } catch (err) {
    got = `${(err as Error).name}: ${(err as Error).message}`;
  }
  t.equal(got, 'http://example.org:8080/x', 'example.org:8080/x');
});

t.test('normalizeUriR refuses what is not an http(s) URL with a host, with a UriError', async (t) => {
  const cases: [string, RegExp][] = [
    ['ftp://a.example/', /only http and https URLs are archived, not ftp:/],
    ['file:///etc/passwd', /not file:/],
    ['mailto:x@a.example', /not mailto:/],
    ['javascript:alert(1)', /not javascript:/],
    ['http://user:pw@a.example/', /userinfo/],
    ['http://user@a.example/', /userinfo/],
    ['http://', /not a valid URL/],
    ['http://a b/', /not a valid URL/],
  ];
  for (const [input, message] of cases) refuses(t, () => normalizeUriR(input), message, input);
});

t.test('normalizeUriR: the length limit applies to the input and to the normalised result', async (t) => {
  t.equal(normalizeUriR('http://a/' + 'x'.repeat(11), 20), 'http://a/xxxxxxxxxxx', '20 characters: accepted');
  refuses(t, () => normalizeUriR('http://a/' + 'x'.repeat(12), 20), /longer than 20 characters/, 'input of 21 characters');
  // "a/ x…" is 20 characters; "http://a/%20x…" is longer once normalised
  refuses(t, () => normalizeUriR('a/ ' + 'x'.repeat(17), 20), /longer than 20 characters/, 'result longer than the limit');
  t.equal(normalizeUriR('http://a/' + 'x'.repeat(MAX_URI_LENGTH - 9)).length, MAX_URI_LENGTH, 'default limit: MAX_URI_LENGTH accepted');
  refuses(t, () => normalizeUriR('http://a/' + 'x'.repeat(MAX_URI_LENGTH - 8)), new RegExp(`longer than ${MAX_URI_LENGTH}`), 'default limit: one more refused');
});

t.test('uriRFromRequest: origin-form target (RFC 7230 §5.3.1) with the Host header (§5.4)', async (t) => {
  const cases: [string, string, 'http' | 'https', string][] = [
    ['www.Example.org', '/a?b=1', 'http', 'http://www.example.org/a?b=1'],
    ['www.example.org', '/a?b=1', 'https', 'https://www.example.org/a?b=1'],
    ['example.org:8080', '/x', 'http', 'http://example.org:8080/x'],
    ['example.org:80', '/x', 'http', 'http://example.org/x'],
    ['example.org:443', '/x', 'https', 'https://example.org/x'],
    ['[::1]:8080', '/x', 'http', 'http://[::1]:8080/x'],
    ['[2001:DB8::1]', '/x', 'http', 'http://[2001:db8::1]/x'],
    ['a.example', '/x#f', 'http', 'http://a.example/x'],
    ['a.example', '/a/../b', 'http', 'http://a.example/b'],
  ];
  for (const [host, target, scheme, want] of cases) t.equal(uriRFromRequest(host, target, scheme), want, `${host} ${target} (${scheme})`);
  t.equal(uriRFromRequest('a.example', '/x'), 'http://a.example/x', 'scheme defaults to http');
});

t.test('uriRFromRequest: absolute-form target (RFC 7230 §5.3.2) for the same host gives the same URI-R', async (t) => {
  const cases: [string, string, string][] = [
    ['www.example.org', 'http://www.example.org/a?b=1', 'http://www.example.org/a?b=1'],
    ['www.example.org', 'http://WWW.example.org/a', 'http://www.example.org/a'],
    ['example.org:8080', 'http://example.org:8080/x', 'http://example.org:8080/x'],
    ['example.org', 'http://example.org:80/x', 'http://example.org/x'],
  ];
  for (const [host, target, want] of cases) {
    t.equal(uriRFromRequest(host, target), want, `${host} ${target}`);
    t.equal(uriRFromRequest(host, target), uriRFromRequest(host, new URL(target).pathname + new URL(target).search), `${target}: same as origin-form`);
  }
});

t.test('uriRFromRequest refuses a target that names another host, or is neither form', async (t) => {
  const cases: [string, string, RegExp][] = [
    ['www.example.org', 'http://other.example/a', /names host other\.example, not the Host header www\.example\.org/],
    ['example.org:8080', 'http://example.org/x', /not the Host header example\.org:8080/],
    ['a.example', '//x/y', /starts with "\/\/"; it is not origin-form/],
    ['a.example', '*', /not origin-form \(\/path\) or absolute-form/],
    ['a.example', 'x', /not origin-form/],
    ['a.example', 'ftp://a.example/', /not origin-form/],
    ['a.example', 'http://[/x', /not a valid absolute URL/],
  ];
  for (const [host, target, message] of cases) refuses(t, () => uriRFromRequest(host, target), message, `${host} ${target}`);
});

t.test('uriRFromRequest refuses a missing or malformed Host (RFC 7230 §5.4: uri-host [":" port])', async (t) => {
  const cases: [string | undefined, RegExp][] = [
    [undefined, /no Host header/],
    ['', /no Host header/],
    ['example.org/path', /Host header is not host\[:port\]/],
    ['a b', /not host\[:port\]/],
    ['u@example.org', /not host\[:port\]/],
    ['::1', /not host\[:port\]/], // an IPv6 literal needs brackets (RFC 3986 §3.2.2)
    ['example.org:', /not host\[:port\]/],
    ['-a.example', /not host\[:port\]/],
    ['example.org:0', /port out of range: 0/],
    ['example.org:65536', /port out of range: 65536/],
  ];
  for (const [host, message] of cases) refuses(t, () => uriRFromRequest(host, '/x'), message, JSON.stringify(host));
});

t.test('uriRFromRequest: the length limit applies to the URI-R', async (t) => {
  refuses(t, () => uriRFromRequest('a.example', '/' + 'x'.repeat(30), 'http', 20), /longer than 20 characters/, 'maxLength 20');
});

t.test('checkCaptureTarget refuses dot-segments, also percent-encoded (RFC 3986 §6.2.2.3, §2.3)', async (t) => {
  for (const target of ['/a/./b', '/a/../b', '/.', '/..', '/a/%2e%2E/b', '/a/%2E/b', '/a/.%2e/b', 'http://a.example/../x', 'http://a.example/x/..']) {
    refuses(t, () => checkCaptureTarget(target), /request target has a dot-segment .*RFC 3986 §6\.2\.2\.3/, target);
  }
});

t.test('checkCaptureTarget accepts segments that only look like dot-segments, and dots in query or fragment', async (t) => {
  for (const target of ['/a', '/a/.../b', '/a/.b', '/a/b.', '/a?x=/../', '/a#/../', '/', 'http://a.example/x']) {
    t.doesNotThrow(() => checkCaptureTarget(target), target);
  }
});

t.test('checkCaptureTarget refuses an encoded NUL, CR or LF', async (t) => {
  refuses(t, () => checkCaptureTarget('/a%00b'), /%00 \(an encoded NUL byte\)/, '%00');
  for (const target of ['/a%0d', '/a%0Ab', '/a%0Db', '/a?x=%0a']) refuses(t, () => checkCaptureTarget(target), /encoded CR or LF/, target);
  t.doesNotThrow(() => checkCaptureTarget('/a%0b%20'), 'other encoded controls pass');
});

t.test('checkCaptureTarget: the length limit (max_url_length)', async (t) => {
  t.doesNotThrow(() => checkCaptureTarget('/' + 'x'.repeat(9), 10), '10 characters');
  refuses(t, () => checkCaptureTarget('/' + 'x'.repeat(10), 10), /is 11 characters, longer than the limit of 10 \(max_url_length\)/, '11 characters');
  refuses(t, () => checkCaptureTarget('/' + 'x'.repeat(MAX_URI_LENGTH)), new RegExp(`limit of ${MAX_URI_LENGTH}`), 'default limit');
});

t.test('exactUrlkey: SURT form, scheme dropped, host reversed, path and query as normalised', async (t) => {
  const cases: [string, string, string][] = [
    ['http://www.Example.org:80/a/b?x=1', 'org,example,www)/a/b?x=1', 'host lower-cased and reversed, default port dropped'],
    ['https://www.example.org/a/b?x=1', 'org,example,www)/a/b?x=1', 'http and https share a key'],
    ['https://www.example.org:443/a/b?x=1', 'org,example,www)/a/b?x=1', 'https default port dropped'],
    ['http://example.org:8080/x', 'org,example:8080)/x', 'a non-default port is kept'],
    ['https://example.org:80/', 'org,example:80)/', '80 is not the https default'],
    ['http://example.org/P/Q?b=2&a=1', 'org,example)/P/Q?b=2&a=1', 'path case and query order kept'],
    ['http://www.example.org/', 'org,example,www)/', 'www is kept'],
    ['http://[2001:DB8::1]:8080/x', '[2001:db8::1]:8080)/x', 'an IPv6 host stays one bracketed label'],
    ['http://example.org./x', 'org,example)/x', 'a trailing dot of the host is dropped'],
    ['http://example.org/x#f', 'org,example)/x', 'fragment dropped'],
    ['example.org', 'org,example)/', 'a missing scheme means http'],
    ['http://a.example/a/../b', 'example,a)/b', 'dot-segments resolved'],
    ['http://192.0.2.1/x', '1,2,0,192)/x', 'an IPv4 host is reversed too (surt reverse_ipaddr default)'],
  ];
  for (const [uri, want, rule] of cases) t.equal(exactUrlkey(uri), want, `${uri}: ${rule}`);
});

t.test('normalizeUriR and exactUrlkey agree on a bare "?": http://example.org/a? is the URI-R http://example.org/a, with its key', async (t) => {
  // Before: normalizeUriR kept the "?" and exactUrlkey dropped it (URL.search is "" for a bare "?"), so an
  // address with "?" found the mementos of the URI-R without it but named another URI-R than they do.
  for (const [input, uriR, key] of [
    ['http://example.org/a?', 'http://example.org/a', 'org,example)/a'],
    ['http://example.org/?', 'http://example.org/', 'org,example)/'],
    ['http://example.org?', 'http://example.org/', 'org,example)/'],
    ['http://example.org/a?#f', 'http://example.org/a', 'org,example)/a'],
  ]) {
    t.equal(normalizeUriR(input), uriR, `${input}: the URI-R has no "?"`);
    t.equal(exactUrlkey(input), key, `${input}: nor has its key`);
    t.equal(exactUrlkey(input), exactUrlkey(normalizeUriR(input)), `${input}: the key is that of the normalised URI-R`);
  }
  t.equal(normalizeUriR('http://example.org/a??'), 'http://example.org/a??', 'a query of one "?" is a query: kept');
  t.equal(exactUrlkey('http://example.org/a??'), 'org,example)/a??');
  t.equal(exactUrlkey('http://example.org/a?x'), 'org,example)/a?x');
});

t.test('normalizeUriR: %2C and %3B are "," and ";" (the archive writes them so in Link headers), in the URI-R and its key', async (t) => {
  const cases: [string, string][] = [
    ['http://a.example/p%3Bq%2Cr', 'http://a.example/p;q,r'],
    ['http://a.example/x?a=1%2c2%3bb', 'http://a.example/x?a=1,2;b'],
    ['http://a.example/p;q,r?a=1,2;b', 'http://a.example/p;q,r?a=1,2;b'],
    ['http://a.example/%252C', 'http://a.example/%252C'],
  ];
  for (const [input, want] of cases) {
    t.equal(normalizeUriR(input), want, input);
    t.equal(exactUrlkey(input), exactUrlkey(want), `${input}: one key`);
  }
  t.equal(exactUrlkey('http://a.example/x?a=1%2C2'), 'example,a)/x?a=1,2');
});

t.test('normalizeUriR: the length limit counts "," and ";" as written in a Link header (%2C, %3B: three characters)', async (t) => {
  t.equal(linkLength('http://a/x,y;z'), 18, '14 characters, two of them three in Link');
  t.equal(normalizeUriR('http://a/,,,', 20), 'http://a/,,,', '12 characters, 18 in a Link header: accepted');
  t.equal(normalizeUriR('http://a/%2C%2C%2C', 20), 'http://a/,,,', 'written %2C: the same');
  refuses(t, () => normalizeUriR('http://a/,,,,', 20), /longer than 20 characters as written in a Link header/, '13 characters, 21 in a Link header');
  refuses(t, () => normalizeUriR('http://a/;;;;', 20), /as written in a Link header/, '";" too');
});

t.test('exactUrlkey: one canonical form of a URL (docs/url-space.md): every spelling of one URL has one key', async (t) => {
  // Each group: spellings of one URL, then the key they all have.
  const groups: [string[], string, string][] = [
    [
      ['http://a.example/excluded/page', 'http://a.example/%65xcluded/page', 'http://a.example/%65%78cluded/page', 'http://a.example/excl%75ded/%70age'],
      'example,a)/excluded/page',
      'escapes of unreserved letters decoded',
    ],
    [
      ['http://a.example/a-b.c_d~e', 'http://a.example/a%2Db%2Ec%5Fd%7Ee', 'http://a.example/a%2db%2ec%5fd%7ee'],
      'example,a)/a-b.c_d~e',
      'escapes of - . _ ~ decoded',
    ],
    [['http://a.example/x0', 'http://a.example/x%30'], 'example,a)/x0', 'escapes of digits decoded'],
    [['http://A.EXAMPLE/x', 'http://a.example/x', 'http://A.Example./x'], 'example,a)/x', 'host lower case, trailing dot dropped'],
    [['http://a.example:80/x', 'https://a.example:443/x', 'http://a.example/x'], 'example,a)/x', 'default port dropped'],
    [['http://a.example', 'http://a.example/', 'http://a.example:80'], 'example,a)/', 'empty path is /'],
    [['http://a.example/a//b', 'http://a.example/a/b', 'http://a.example/a///b', 'http://a.example//a/b'], 'example,a)/a/b', '// in a path merged into one /'],
    [['http://a.example/a%2fb', 'http://a.example/a%2Fb'], 'example,a)/a%2Fb', '%2F is not decoded (it would make a path segment), its hex upper case'],
    [['http://a.example/a%3fb', 'http://a.example/a%3Fb'], 'example,a)/a%3Fb', '%3F is not decoded (it would start a query)'],
    [['http://a.example/%c3%a9', 'http://a.example/%C3%A9', 'http://a.example/é'], 'example,a)/%C3%A9', 'other escapes upper-cased; non-ASCII UTF-8 escaped'],
    [['http://a.example/x?q=%65&r=%2f', 'http://a.example/x?q=e&r=%2F'], 'example,a)/x?q=e&r=%2F', 'the query: unreserved escapes decoded, others upper-cased'],
    [['http://a.example/x?u=a//b'], 'example,a)/x?u=a//b', 'the query keeps its //'],
    [['http://a.example/%2565'], 'example,a)/%2565', 'an escaped % is not decoded: nothing is decoded twice'],
  ];
  for (const [spellings, key, rule] of groups) for (const u of spellings) t.equal(exactUrlkey(u), key, `${u}: ${rule}`);
  t.not(exactUrlkey('http://a.example/Page'), exactUrlkey('http://a.example/page'), 'path case still counts');
  t.not(exactUrlkey('http://a.example/a/b'), exactUrlkey('http://a.example/a%2Fb'), '/ and %2F are different');
  t.equal(
    exactUrlkey('http://a.example/%65xcluded/page'),
    exactUrlkey(exactUrlkey('http://a.example/%65xcluded/page').replace(/^example,a\)/, 'http://a.example')),
    "the key of a key's path is the same key",
  );
  t.equal(canonicalEscapes('%zz%4'), '%zz%4', 'a % without two hex digits is left');
});

t.test("the proxy's Excluded compares the path of the archive's urlkey", async (t) => {
  for (const target of ['/%65xcluded/page', '/excluded//page', '/a/%2fb', '/%c3%a9/x', '/a%2cb', '/x/~%7e']) {
    const key = exactUrlkey('http://a.example' + target);
    t.equal(normalizeMatchPath(target), key.slice(key.indexOf(')') + 1), `${target}: one path`);
  }
  t.equal(isExcludedPath(['/excluded'], '/%65xcluded/page'), true, '/%65xcluded/page is under Excluded: /excluded');
});

t.test('exactUrlkey refuses what normalizeUriR refuses', async (t) => {
  refuses(t, () => exactUrlkey('ftp://x/'), /only http and https/, 'ftp');
  refuses(t, () => exactUrlkey('http://u@x/'), /userinfo/, 'userinfo');
});

t.test('uriRFromRequest: an answer kept from an earlier call is never given to another Host and target that share its text', async (t) => {
  t.equal(uriRFromRequest('a.example', '/x y'), 'http://a.example/x%20y', 'the first call');
  refuses(t, () => uriRFromRequest('a.example /x', 'y'), /not host\[:port\]/, 'the same characters split otherwise');
  t.equal(uriRFromRequest('a.example', '/x y'), 'http://a.example/x%20y', 'asked again');
  refuses(t, () => uriRFromRequest('a.example', '//x'), /starts with "\/\/"/, 'an error, first time');
  refuses(t, () => uriRFromRequest('a.example', '//x'), /starts with "\/\/"/, 'an error, again (errors are not kept)');
  t.equal(uriRFromRequest('a.example', '/x', 'https'), 'https://a.example/x', 'another scheme');
  refuses(t, () => uriRFromRequest('a.example', '/' + 'x'.repeat(40), 'http', 30), /longer than 30/, 'a shorter limit');
  t.equal(uriRFromRequest('a.example', '/' + 'x'.repeat(40)), 'http://a.example/' + 'x'.repeat(40), 'the default limit');
});

t.test('checkCaptureTarget: an encoded slash or backslash in the path, any case, is refused; in the query it is data', async (t) => {
  for (const target of ['/assets%2fhljs.css', '/assets%2Fhljs.css', '/a%5cb', '/a%5Cb', '/%2F', 'http://a.example/a%2Fb?x=1']) {
    refuses(t, () => checkCaptureTarget(target), /^request target has an encoded (slash|backslash) \(%(2f|5c)\) in its path/i, target);
  }
  for (const target of ['/search?next=%2Fa%5Cb', '/a%252Fb', '/a%2Eb%2e']) t.doesNotThrow(() => checkCaptureTarget(target), `${target}: accepted`);
});

t.test(
  'foldEncodedSlashes: %2F and %5C of the path read as /, runs of / merged; the query and other escapes kept; nothing to fold is the same string',
  async (t) => {
    const cases: [string, string][] = [
      ['example,a)/assets%2Fhljs.css', 'example,a)/assets/hljs.css'],
      ['example,a)/assets%5Chljs.css', 'example,a)/assets/hljs.css'],
      ['example,a)/%2Fassets/x', 'example,a)/assets/x'],
      ['example,a)/a%2F%2F%5Cb%2F', 'example,a)/a/b/'],
      ['example,a)/a%2Fb?next=%2Fc', 'example,a)/a/b?next=%2Fc'],
      ['example,a)/a%20b%2Fc', 'example,a)/a%20b/c'],
      ['example,a:8080)/a%2Fb', 'example,a:8080)/a/b'],
      ['[::1])/a%2Fb', '[::1])/a/b'],
    ];
    for (const [key, folded] of cases) t.equal(foldEncodedSlashes(key), folded, key);
    for (const key of ['example,a)/a/b', 'example,a)/a%20b', 'example,a)/q?x=%2F']) t.equal(foldEncodedSlashes(key), key, `${key}: nothing to fold`);
    t.equal(
      foldEncodedSlashes(exactUrlkey('http://a.example/assets%2fhljs.css')),
      exactUrlkey('http://a.example/assets/hljs.css'),
      'the folded key of a URI-R is the key of the decoded URL',
    );
  },
);
