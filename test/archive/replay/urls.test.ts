import t from 'tap';
import { attributeBytes, attributeUrl } from '../../../archive/replay/attributes.js';
import { archiveUrl, rewriteRefresh, rewriteSrcset } from '../../../archive/replay/urls.js';

const TARGET = { base: 'http://arc.example', archiveId: 'web', ts: '20260101120000' };
const M = (url: string) => `http://arc.example/web/memento/20260101120000/${url}`;
const DOC = 'http://site.example/dir/page.html?q=1';

t.test('archiveUrl: http(s) URLs, resolved against the base, become archive addresses at the page datetime', async (t) => {
  const cases: [string, string | null][] = [
    ['img.png', M('http://site.example/dir/img.png')],
    ['../up.css', M('http://site.example/up.css')],
    ['/root.js', M('http://site.example/root.js')],
    ['//cdn.example/lib.js', M('http://cdn.example/lib.js')],
    ['https://other.example/a?b=1&c=2', M('https://other.example/a?b=1&c=2')],
    ['?page=2', M('http://site.example/dir/page.html?page=2')],
    ['next.html#part', M('http://site.example/dir/next.html') + '#part'],
    ['  spaced.png \n', M('http://site.example/dir/spaced.png')],
    ['HTTP://Site.Example:80/x', M('http://site.example/x')],
    ['caf\u00e9.html', M('http://site.example/dir/caf%C3%A9.html')],
    ['', null],
    ['   ', null],
    ['#top', null],
    ['data:image/png;base64,AAAA', null],
    ['javascript:void(0)', null],
    ['mailto:a@site.example', null],
    ['tel:+100', null],
    ['about:blank', null],
    ['blob:http://site.example/1', null],
    ['http://[bad', null],
    [M('http://site.example/already'), null],
  ];
  for (const [raw, want] of cases) t.equal(archiveUrl(TARGET, raw, DOC), want, JSON.stringify(raw));
});

t.test('attributeUrl / attributeBytes: entities decoded for reading, & and " escaped for writing, in the page charset', async (t) => {
  t.equal(attributeUrl('a?x=1&amp;y=2&quot;', true), 'a?x=1&y=2"');
  t.equal(attributeUrl('caf\xc3\xa9', true), 'caf\u00e9', 'UTF-8 bytes of a UTF-8 page');
  t.equal(attributeUrl('caf\xe9', false), 'caf\u00e9', 'a latin-1 byte of a single-byte page');
  t.equal(attributeBytes('a&b"c', true), 'a&amp;b&quot;c');
  t.equal(attributeBytes('caf\u00e9', true), 'caf\xc3\xa9');
  t.equal(attributeBytes('caf\u00e9 \u20ac', false), 'caf\xe9 &#x20ac;', 'a single-byte page: above U+00FF as a reference');
});

t.test('rewriteSrcset: every candidate URL mapped, descriptors and separators kept (HTML "parse a srcset attribute")', async (t) => {
  const map = (u: string) => (u.startsWith('data:') ? null : `[${u}]`);
  const cases: [string, string][] = [
    ['a.png', '[a.png]'],
    ['a.png 1x, b.png 2x', '[a.png] 1x, [b.png] 2x'],
    ['a.png 100w,b.png 200w', '[a.png] 100w,[b.png] 200w'],
    ['  a.png  1x ,  b.png 2x  ', '  [a.png]  1x ,  [b.png] 2x  '],
    ['a.png,b.png', '[a.png,b.png]'], // no space: one URL, as browsers read it
    ['a,b.png 1x', '[a,b.png] 1x'],
    ['data:image/png;base64,AA 1x, b.png 2x', 'data:image/png;base64,AA 1x, [b.png] 2x'],
    ['a.png (x, y) 1x, b.png', '[a.png] (x, y) 1x, [b.png]'],
    ['', ''],
  ];
  for (const [value, want] of cases) t.equal(rewriteSrcset(value, map), want, value);
});

t.test('rewriteRefresh: the URL of a declarative refresh mapped, the rest kept', async (t) => {
  const map = (u: string) => `[${u}]`;
  const cases: [string, string][] = [
    ['5; url=next.html', '5; url=[next.html]'],
    ['0;URL=next.html', '0;URL=[next.html]'],
    ["0; url='next.html'", "0; url='[next.html]'"],
    ['3, next.html', '3, [next.html]'],
    ['3 ; URL = "a b.html"', '3 ; URL = "[a b.html]"'],
    ['30', '30'],
    ['', ''],
    // As HTML's "shared declarative refresh steps" read them.
    ["0; url='a.html'garbage", "0; url='[a.html]'garbage"],
    ['0; urn=a.html', '0; [urn=a.html]'],
    ['.5;"a.html', '.5;"[a.html]'],
    ['x; url=a.html', 'x; url=a.html'],
    ['0x; url=a.html', '0x; url=a.html'],
    ['0;', '0;'],
  ];
  for (const [value, want] of cases) t.equal(rewriteRefresh(value, map), want, value);
  t.equal(
    rewriteRefresh('0; url=x', () => null),
    null,
    'null (drop the refresh) when the map refuses its URL',
  );
  t.equal(
    rewriteRefresh('5', () => null),
    '5',
    'a reload of the page itself is kept',
  );
});
