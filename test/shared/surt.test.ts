/**
 * The canonical SURT urlkey of CDX exports (shared/surt.ts) against the
 * test vectors of Python's `surt` package (tests/test_surt.py, from
 * WaybackURLKeyMakerTest.java), whose `surt.surt(url)` pywb uses as the key
 * of its indexes.
 */
import t from 'tap';
import { canonicalUrlkey } from '#shared/surt.js';
import { exactUrlkey } from '#shared/uri.js';

t.test("surt's own test vectors (default options)", async (t) => {
  const vectors: [string, string][] = [
    ['http://www.archive.org/', 'org,archive)/'],
    ['http://archive.org/', 'org,archive)/'],
    ['http://archive.org/goo/', 'org,archive)/goo'],
    ['http://archive.org/goo/?', 'org,archive)/goo'],
    ['http://archive.org/goo/?b&a', 'org,archive)/goo?a&b'],
    ['http://archive.org/goo/?a=2&b&a=1', 'org,archive)/goo?a=1&a=2&b'],
    ['http://archive.org/index.php?PHPSESSID=0123456789abcdefghijklemopqrstuv&action=profile;u=4221', 'org,archive)/index.php?action=profile;u=4221'],
    [
      'http://visit.webhosting.yahoo.com/visit.gif?&r=http%3A//web.archive.org/web/20090517140029/http%3A//anthonystewarthead.electric-chi.com/&b=Netscape%205.0%20%28Windows%3B%20en-US%29&s=1366x768&o=Win32&c=24&j=true&v=1.2',
      'com,yahoo,webhosting,visit)/visit.gif?&b=netscape%205.0%20(windows;%20en-us)&c=24&j=true&o=win32&r=http://web.archive.org/web/20090517140029/http://anthonystewarthead.electric-chi.com/&s=1366x768&v=1.2',
    ],
    ['http://www.example.com/', 'com,example)/'],
    ['http://example.com/app?item=Wroc%C5%82aw', 'com,example)/app?item=wroc%c5%82aw'],
    ['http://192.168.1.254/info/', '254,1,168,192)/info'],
  ];
  for (const [url, key] of vectors) t.equal(canonicalUrlkey(url), key, url);
});

t.test('the IA canonicalizer steps: ports, case, escapes, dot-segments, session ids', async (t) => {
  t.equal(canonicalUrlkey('https://www.archive.org:443/'), 'org,archive)/', 'default port');
  t.equal(canonicalUrlkey('https://www.archive.org:80/'), 'org,archive:80)/', 'a port other than the default stays, before the ")"');
  t.equal(canonicalUrlkey('http://127.0.0.1:8081/manual/en/'), '1,0,0,127:8081)/manual/en', 'an IPv4 host is reversed too (reverse_ipaddr)');
  t.equal(
    canonicalUrlkey('http://www12.Example.COM/A/B.html?Z=1&a=B'),
    'com,example)/a/b.html?a=b&z=1',
    'www12. stripped, path and query lower-cased, arguments sorted',
  );
  t.equal(canonicalUrlkey('http://host/%25%32%35'), 'host)/%25', 'escapes decoded until stable, then re-escaped once');
  t.equal(canonicalUrlkey('http://host.com//twoslashes?more//slashes'), 'com,host)/twoslashes?more//slashes', 'empty path segments dropped, not in the query');
  t.equal(canonicalUrlkey('http://host.com/a%2F..%2Fb'), 'com,host)/b', 'dot-segments resolved after decoding');
  t.equal(canonicalUrlkey('http://example.com/(S(4hqa0555fwsecu455xqckv45))/mileg.aspx'), 'com,example)/mileg.aspx', 'ASP.NET path session id');
  t.equal(canonicalUrlkey('http://example.com/x?jsessionid=0123456789abcdefghijklemopqrstuv'), 'com,example)/x', 'jsessionid');
  t.equal(canonicalUrlkey('http://[::1]:8080/'), '::1:8080)/', 'IPv6, as surt writes it');
  t.equal(canonicalUrlkey('http://example.org/caf%C3%A9%20menu'), 'org,example)/caf%c3%a9%20menu', 'non-ASCII and space stay escaped');
});

t.test("fuzzier than the archive's own key, on purpose", async (t) => {
  const a = 'http://www.example.org/Page?b=1&a=2';
  t.equal(exactUrlkey(a), 'org,example,www)/Page?b=1&a=2');
  t.equal(canonicalUrlkey(a), 'org,example)/page?a=2&b=1');
});
