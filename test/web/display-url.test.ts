/**
 * How the pages write a URL for reading (archive/web/format.ts
 * `displayUrl`): IDN hosts in Unicode, percent-encoded UTF-8 decoded,
 * everything that could mislead left encoded.
 */
import t from 'tap';
import { displayHost, displayUrl } from '../../archive/web/format.js';

t.test('IDN hosts and UTF-8 paths read as Unicode', async (t) => {
  t.equal(displayUrl('http://xn--bcher-kva.example/b%C3%BCcher/%E6%97%A5%E6%9C%AC'), 'http://bücher.example/bücher/日本');
  t.equal(displayUrl('https://xn--80ak6aa92e.com:8443/x?q=%C3%A9'), 'https://аррӏе.com:8443/x?q=é', 'with a port; the query too');
  t.equal(displayHost('xn--bcher-kva.example:8080'), 'bücher.example:8080');
});

t.test('what could mislead or is not UTF-8 stays as stored', async (t) => {
  t.equal(displayUrl('http://a.example/%2F%20%3F%23'), 'http://a.example/%2F%20%3F%23', 'ASCII escapes: delimiters, spaces');
  t.equal(displayUrl('http://a.example/%E2%80%AEfdp.exe'), 'http://a.example/%E2%80%AEfdp.exe', 'a right-to-left override');
  t.equal(displayUrl('http://a.example/%E2%80%8B'), 'http://a.example/%E2%80%8B', 'a zero-width space');
  t.equal(displayUrl('http://a.example/%C2%A0'), 'http://a.example/%C2%A0', 'a no-break space');
  t.equal(displayUrl('http://a.example/a%E2%88%95b'), 'http://a.example/a%E2%88%95b', 'a look-alike of /');
  t.equal(displayUrl('http://a.example/%C3'), 'http://a.example/%C3', 'a cut UTF-8 sequence');
  t.equal(displayUrl('http://a.example/%FF%FE'), 'http://a.example/%FF%FE', 'bytes that are not UTF-8');
  t.equal(displayUrl('http://[::1]:8080/%C3%A9'), 'http://[::1]:8080/é', 'an IPv6 literal as it is');
  t.equal(displayUrl('http://xn--zz.example/'), 'http://xn--zz.example/', 'an xn-- label that does not decode');
  t.equal(displayUrl('not a url'), 'not a url');
});
