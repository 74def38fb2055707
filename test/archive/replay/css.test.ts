import t from 'tap';
import { rewriteCss } from '../../../archive/replay/css.js';

const map = (u: string) => (u.startsWith('data:') ? null : `http://arc/m/${u}`);

t.test('rewriteCss: url(), quoted or not, @import and image-set() strings become archive addresses; nothing else changes', async (t) => {
  const cases: [string, string][] = [
    ['a { background: url(i.png) }', 'a { background: url("http://arc/m/i.png") }'],
    ['a{background:url( "i.png" )}', 'a{background:url( "http://arc/m/i.png" )}'],
    ["a{background:url('i.png')}", "a{background:url('http://arc/m/i.png')}"],
    ['a{background:URL(i.png)}', 'a{background:url("http://arc/m/i.png")}'],
    ['a{background:url(  sp.png  )}', 'a{background:url("http://arc/m/sp.png")}'],
    ['@import "base.css";', '@import "http://arc/m/base.css";'],
    ["@import 'base.css' screen;", "@import 'http://arc/m/base.css' screen;"],
    ['@import url(base.css);', '@import url("http://arc/m/base.css");'],
    ['@IMPORT url("base.css") print;', '@IMPORT url("http://arc/m/base.css") print;'],
    [
      'a{background-image:image-set("a.png" 1x, "b.png" type("image/png") 2x)}',
      'a{background-image:image-set("http://arc/m/a.png" 1x, "http://arc/m/b.png" type("image/png") 2x)}',
    ],
    ['a{b:-webkit-image-set(url(a.png) 1x)}', 'a{b:-webkit-image-set(url("http://arc/m/a.png") 1x)}'],
    ['@font-face{src:url(f.woff2) format("woff2")}', '@font-face{src:url("http://arc/m/f.woff2") format("woff2")}'],
    ['a{b:url(data:image/png;base64,AAAA)}', 'a{b:url(data:image/png;base64,AAAA)}'],
    ['/* url(c.png) */ a{}', '/* url(c.png) */ a{}'],
    ['a::before{content:"url(x.png)"}', 'a::before{content:"url(x.png)"}'],
    ['a{font-family:"Some Font"}', 'a{font-family:"Some Font"}'],
    ['a{b:url(a\\(b\\).png)}', 'a{b:url("http://arc/m/a(b).png")}'],
    ['a{b:url("q\\"uote.png")}', 'a{b:url("http://arc/m/q\\22 uote.png")}'],
    ['', ''],
  ];
  for (const [css, want] of cases) t.equal(rewriteCss(css, map), want, css);
});

t.test('rewriteCss: the same string back when nothing changes (no copy); broken CSS is no error', async (t) => {
  const css = 'a { color: red }';
  t.equal(rewriteCss(css, map), css);
  t.equal(rewriteCss('a{b:url(unclosed', map), 'a{b:url("http://arc/m/unclosed")', 'an unclosed url( is still a URL');
  t.equal(rewriteCss('@import "unterminated', map), '@import "http://arc/m/unterminated"', 'an unterminated string: closed');
  t.equal(
    rewriteCss('a{b:url(x.png)} c{d:url(x.png)}', () => null),
    'a{b:url(x.png)} c{d:url(x.png)}',
    'a map that keeps everything',
  );
});
