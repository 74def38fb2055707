import t from 'tap';
import { HtmlRewriter, type HtmlReplay, rewritePart } from '../../../archive/replay/html.js';

const PAGE: HtmlReplay = { base: 'http://arc.example', archiveId: 'web', ts: '20260101120000', uriR: 'http://site.example/dir/page.html', utf8: true };
const M = (url: string) => `http://arc.example/web/memento/20260101120000/${url}`;
const S = (path: string) => M(`http://site.example${path}`);

/**
 * Rewrites a whole page (byte view), in one write or in chunks of `step` characters. Each page is also rewritten
 * with every tag and `<style>` text deferred (`deferOver: 0`) and rewritten alone (rewritePart, as a work pool's
 * thread does for a streamed page): the bytes must be the same.
 */
function rewrite(html: string, opts: Partial<HtmlReplay> = {}, step = 0): string {
  const rw = new HtmlRewriter({ ...PAGE, ...opts });
  let out = '';
  if (!step) out = rw.write(html) + rw.end();
  else {
    for (let i = 0; i < html.length; i += step) out += rw.write(html.slice(i, i + step));
    out += rw.end();
  }
  const d = new HtmlRewriter({ ...PAGE, ...opts, deferOver: 0 });
  const parts = [...d.writeParts(html), ...d.endParts()];
  const deferred = parts.map((p) => (typeof p === 'string' ? p : rewritePart(p, { ...PAGE, ...opts }).text)).join('');
  if (deferred !== out) throw new Error(`the page rewritten in deferred parts differs: ${JSON.stringify(deferred)}, not ${JSON.stringify(out)}`);
  return out;
}

t.test('every attribute a browser fetches or follows is rewritten to the archive at the page datetime', async (t) => {
  const cases: [string, string][] = [
    ['<a href="a.html">', `<a href="${S('/dir/a.html')}">`],
    ['<img src="/i.png" alt="i">', `<img src="${S('/i.png')}" alt="i">`],
    ['<img srcset="a.png 1x, b.png 2x">', `<img srcset="${S('/dir/a.png')} 1x, ${S('/dir/b.png')} 2x">`],
    ['<link rel="preload" as="image" imagesrcset="a.png 100w">', `<link rel="preload" as="image" imagesrcset="${S('/dir/a.png')} 100w">`],
    ['<video poster="p.jpg" src="v.mp4"></video>', `<video poster="${S('/dir/p.jpg')}" src="${S('/dir/v.mp4')}"></video>`],
    ['<form action="/post"><button formaction="/other">', `<form action="${S('/post')}"><button formaction="${S('/other')}">`],
    ['<body background="bg.gif">', `<body background="${S('/dir/bg.gif')}">`],
    ['<table background="t.gif">', `<table background="${S('/dir/t.gif')}">`],
    ['<object data="o.swf"></object>', `<object data="${S('/dir/o.swf')}"></object>`],
    ['<div data="not-a-url">', '<div data="not-a-url">'],
    ['<blockquote cite="/src">', `<blockquote cite="${S('/src')}">`],
    ['<img longdesc="d.html">', `<img longdesc="${S('/dir/d.html')}">`],
    ['<svg><image xlink:href="s.png"/></svg>', `<svg><image xlink:href="${S('/dir/s.png')}" /></svg>`],
    ['<script src="j.js"></script>', `<script src="${S('/dir/j.js')}"></script>`],
    ['<iframe src="f.html"></iframe>', `<iframe src="${S('/dir/f.html')}"></iframe>`],
    ['<meta http-equiv="refresh" content="0; url=next.html">', `<meta http-equiv="refresh" content="0; url=${S('/dir/next.html')}">`],
    ['<meta http-equiv="Refresh" content="5">', '<meta http-equiv="Refresh" content="5">'],
    ['<meta name="x" content="y.html">', '<meta name="x" content="y.html">'],
    ['<p style="background: url(s.png)">', `<p style="background: url(&quot;${S('/dir/s.png')}&quot;)">`],
    ['<style>a{background:url(st.png)}</style>', `<style>a{background:url("${S('/dir/st.png')}")}</style>`],
    ['<style>@import "i.css";</style>', `<style>@import "${S('/dir/i.css')}";</style>`],
    ['<a href="https://other.example/x?q=1#f">', `<a href="${M('https://other.example/x?q=1')}#f">`],
  ];
  for (const [html, want] of cases) t.equal(rewrite(html), want, html);
});

t.test('a meta refresh as the browser reads it: into the archive, or dropped when it would leave it', async (t) => {
  const cases: [string, string][] = [
    // Entities in http-equiv or content: the browser decodes them, and so does the rewriter.
    ['<meta http-equiv="&#82;efresh" content="0; url=http://evil.example/">', `<meta http-equiv="&#82;efresh" content="0; url=${M('http://evil.example/')}">`],
    ['<meta http-equiv="refresh" content="&#48;;url=http://evil.example/">', `<meta http-equiv="refresh" content="0;url=${M('http://evil.example/')}">`],
    ['<meta http-equiv=refresh content="0; url=\'http://evil.example/\'x">', `<meta http-equiv="refresh" content="0; url='${M('http://evil.example/')}'x">`],
    // Another scheme: no refresh at all (the value kept, inert).
    ['<meta http-equiv="refresh" content="0; url=javascript:alert(1)">', '<meta http-equiv="refresh" data-archive-orig-content="0; url=javascript:alert(1)">'],
    ['<meta http-equiv="refresh" content="0; url=data:text/html,x">', '<meta http-equiv="refresh" data-archive-orig-content="0; url=data:text/html,x">'],
    ['<meta http-equiv="refresh" content="0; url=ftp://evil.example/">', '<meta http-equiv="refresh" data-archive-orig-content="0; url=ftp://evil.example/">'],
    // In the page or in the archive already: as it is.
    ['<meta http-equiv="refresh" content="0; url=#top">', '<meta http-equiv="refresh" content="0; url=#top">'],
    [`<meta http-equiv="refresh" content="0; url=${S('/a')}">`, `<meta http-equiv="refresh" content="0; url=${S('/a')}">`],
  ];
  for (const [html, want] of cases) t.equal(rewrite(html), want, html);
});

t.test('data:, javascript:, mailto:, fragments, empty and archive URLs are left as they are', async (t) => {
  for (const html of [
    '<img src="data:image/gif;base64,R0lGOD">',
    '<a href="javascript:go()">',
    '<a href="mailto:x@site.example">',
    '<a href="#top">',
    '<a href="">',
    '<a href>',
    `<a href="${S('/already')}">`,
    '<a name="x">',
  ])
    t.equal(rewrite(html), html, html);
});

t.test('relative URLs resolve against the base element when there is one; the base element is rewritten too', async (t) => {
  t.equal(
    rewrite('<head><base href="http://cdn.example/root/"></head><img src="i.png">'),
    `<head><base href="${M('http://cdn.example/root/')}"></head><img src="${M('http://cdn.example/root/i.png')}">`,
  );
  t.equal(
    rewrite('<base href="sub/"><a href="x">'),
    `<base href="${S('/dir/sub/')}"><a href="${S('/dir/sub/x')}">`,
    'a relative base resolves against the URI-R',
  );
  t.equal(
    rewrite('<base href="http://one.example/"><base href="http://two.example/"><a href="x">'),
    `<base href="${M('http://one.example/')}"><base href="${M('http://two.example/')}"><a href="${M('http://one.example/x')}">`,
    'only the first base element counts (HTML "document base URL")',
  );
});

t.test('attribute values as written: entities decoded to read the URL, & and " escaped when writing it; other attributes kept', async (t) => {
  t.equal(rewrite('<a href="q?a=1&amp;b=2" title="T &amp; U">'), `<a href="${S('/dir/q?a=1&amp;b=2')}" title="T &amp; U">`);
  t.equal(rewrite("<a href='x.html' class='c'>"), `<a href="${S('/dir/x.html')}" class='c'>`, 'single quotes kept on the others');
  t.equal(rewrite('<a href=x.html class=c>'), `<a href="${S('/dir/x.html')}" class="c">`, 'unquoted values are quoted');
  t.equal(rewrite('<a href=x.html title=a"b>'), `<a href="${S('/dir/x.html')}" title="a&quot;b">`, 'an unquoted value with a quote in it');
  t.equal(rewrite('<input disabled src="b.png">'), `<input disabled src="${S('/dir/b.png')}">`, 'an attribute without a value');
  t.equal(rewrite('<A HREF="x.html">'), `<a href="${S('/dir/x.html')}">`, 'names are written lower case');
  t.equal(rewrite('<img src="a.png"/>'), `<img src="${S('/dir/a.png')}" />`, 'a self-closing tag stays self-closing');
});

t.test('script text, comments, title, textarea and unchanged tags are byte for byte as they came', async (t) => {
  for (const html of [
    '<script>var s = "<img src=\'q.png\'>"; if (a<b) go("/x");</script>',
    '<!-- <img src="c.png"> -->',
    '<title><a href="t"></title>',
    '<textarea><img src="t.png"></textarea>',
    '<!DOCTYPE html>\n<html lang="en"><head>\n<meta charset=utf-8>',
    '<p class=x   id="y"  >text &amp; more</p>',
    '<![CDATA[ <img src="x"> ]]>',
    '<?xml version="1.0"?>',
  ])
    t.equal(rewrite(html), html, html);
});

t.test('the inject markup goes right after <head>, else in front of the first element of the content; once', async (t) => {
  const inject = '<script src="R"></script>';
  const cases: [string, string][] = [
    [
      '<!DOCTYPE html><html><head><title>t</title></head><body></body></html>',
      `<!DOCTYPE html><html><head>${inject}<title>t</title></head><body></body></html>`,
    ],
    ['<html><HEAD lang="x"><title>t</title>', `<html><head lang="x">${inject}<title>t</title>`.replace('<head lang="x">', '<HEAD lang="x">')],
    ['<!doctype html><p>no head</p>', `<!doctype html>${inject}<p>no head</p>`],
    ['<html lang="en"><title>t</title>', `<html lang="en">${inject}<title>t</title>`],
    ['<!-- c --><body><p>x', `<!-- c -->${inject}<body><p>x`],
    ['plain text only', 'plain text only'],
    ['<head><head>', `<head>${inject}<head>`],
  ];
  for (const [html, want] of cases) t.equal(rewrite(html, { inject }), want, html);
});

t.test('an integrity attribute on a tag whose URL changed is kept as data-archive-orig-integrity', async (t) => {
  t.equal(
    rewrite('<link rel="stylesheet" href="s.css" integrity="sha384-abc" crossorigin="anonymous">'),
    `<link rel="stylesheet" href="${S('/dir/s.css')}" data-archive-orig-integrity="sha384-abc" crossorigin="anonymous">`,
  );
  t.equal(rewrite('<script integrity="sha384-abc">x()</script>'), '<script integrity="sha384-abc">x()</script>', 'no URL, no change');
});

t.test('an iframe srcdoc is rewritten as a page of its own, the replay script first in it', async (t) => {
  t.equal(rewrite('<iframe srcdoc="<img src=&quot;i.png&quot;>"></iframe>'), `<iframe srcdoc="<img src=&quot;${S('/dir/i.png')}&quot;>"></iframe>`);
  t.equal(rewrite('<iframe srcdoc="<p>hi</p>"></iframe>'), '<iframe srcdoc="<p>hi</p>"></iframe>');
  // Before, the srcdoc document ran without the replay script (and so with WebRTC).
  const inject = '<script src="R"></script>';
  t.equal(
    rewrite('<head></head><iframe srcdoc="<script>new RTCPeerConnection()</script>"></iframe>', { inject }),
    `<head>${inject}</head><iframe srcdoc="<script src=&quot;R&quot;></script><script>new RTCPeerConnection()</script>"></iframe>`,
  );
});

t.test('connection hints and speculation rules, which no fetch policy governs, are taken out', async (t) => {
  const cases: [string, string][] = [
    // Before, these went out as written (their href into the archive): a connect to the archive, a hint all the same.
    ['<link rel="preconnect" href="https://cdn.example/">', `<link data-archive-orig-rel="preconnect" href="${M('https://cdn.example/')}">`],
    ['<link rel=dns-prefetch href="//cdn.example">', `<link data-archive-orig-rel="dns-prefetch" href="${M('http://cdn.example/')}">`],
    ['<link rel="DNS-Prefetch preconnect" href="//cdn.example">', `<link data-archive-orig-rel="DNS-Prefetch preconnect" href="${M('http://cdn.example/')}">`],
    ['<link rel="preconnect stylesheet" href="s.css">', `<link rel="stylesheet" href="${S('/dir/s.css')}">`],
    ['<link rel="prefetch" href="n.html">', `<link rel="prefetch" href="${S('/dir/n.html')}">`],
    ['<a rel="preconnect" href="a.html">', `<a rel="preconnect" href="${S('/dir/a.html')}">`],
    ['<script type="speculationrules">{}</script>', '<script type="text/x-archive-speculationrules">{}</script>'],
    ['<script type=" SpeculationRules ">{}</script>', '<script type="text/x-archive-speculationrules">{}</script>'],
    ['<script type="module">x()</script>', '<script type="module">x()</script>'],
  ];
  for (const [html, want] of cases) t.equal(rewrite(html), want, html);
});

t.test('character sets: URLs of a UTF-8 page read as UTF-8, of a single-byte page as its bytes; other bytes untouched', async (t) => {
  t.equal(rewrite('<a href="caf\xc3\xa9.html">caf\xc3\xa9</a>'), `<a href="${S('/dir/caf%C3%A9.html')}">caf\xc3\xa9</a>`);
  t.equal(rewrite('<a href="caf\xe9.html">caf\xe9</a>', { utf8: false }), `<a href="${S('/dir/caf%C3%A9.html')}">caf\xe9</a>`);
  t.equal(
    rewrite('<p style="font-family: \'\xe9\'; background: url(a.png)">', { utf8: false }),
    `<p style="font-family: '\xe9'; background: url(&quot;${S('/dir/a.png')}&quot;)">`,
  );
});

t.test('streaming: any chunking gives the same bytes as one write', async (t) => {
  const html =
    '<!DOCTYPE html><html><head><title>t</title><style>a{background:url(s.png)}</style></head>' +
    '<body><a href="a.html" title="x &amp; y">a</a><script>if (a<b) x("</p>")</script><!-- <img src=c> -->' +
    '<img srcset="a.png 1x, b.png 2x"><p style="background:url(p.png)">\xc3\xa9</p></body></html>';
  const whole = rewrite(html, { inject: '<!--I-->' });
  for (const step of [1, 2, 3, 7, 13, 64]) t.equal(rewrite(html, { inject: '<!--I-->' }, step), whole, `chunks of ${step}`);
});

t.test('memory: a 20 MB page streams through holding little; a huge <style> element is passed on unrewritten', async (t) => {
  const rw = new HtmlRewriter(PAGE);
  const chunk = '<p><a href="x.html">link</a> text text text text</p>\n'.repeat(1300);
  let maxHeld = 0;
  let out = 0;
  for (let i = 0; i < 300; i++) {
    out += rw.write(chunk).length;
    maxHeld = Math.max(maxHeld, rw.held);
  }
  out += rw.end().length;
  t.ok(maxHeld < 200 * 1024, `held at most ${maxHeld} characters`);
  t.equal(rw.rewritten, 1300 * 300, 'every link rewritten');
  t.equal(out, chunk.length * 300 + 1300 * 300 * (S('/dir/x.html').length - 'x.html'.length));
});
