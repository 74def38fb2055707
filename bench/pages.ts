/**
 * HTML pages for the archival replay bench (bench/replay.ts), shaped so the
 * replay's rewriter (archive/replay/) has the work a real page gives it: a
 * head with a stylesheet link, scripts (relative, absolute,
 * protocol-relative, inline) and a `<style>` block with `url()`s and an
 * `@import`; a body of paragraphs with links of every form (relative,
 * root-relative, absolute on the same host and on others, query strings
 * with `&amp;`, `../`, fragments, protocol-relative), images with and
 * without `srcset`, inline `style` attributes with `url()`, and links the
 * replay leaves alone (`mailto:`, `#top`, `javascript:`, a `data:` URL).
 *
 * - {@link replayPage}: a page of exactly `bytes` bytes (30 KB in the
 *   bench): ~150 links, 20 images, different per seed.
 * - {@link bigPage}: a page of at least `bytes` bytes (50 MB in the bench)
 *   made of identical-length sections, produced chunk by chunk so that it
 *   is never whole in memory.
 */

import { lcg } from './lib.js';

const WORDS = (
  'archive memento capture replay history page link time gate map record index crawl snapshot version original resource ' +
  'datetime negotiation server client browser proxy header body stream the of and a to in is was for on with as by that it from'
).split(' ');

/** A deterministic pseudo-random sequence in [0, 1) for page `seed` (bench/lib.ts `lcg`, its seed spread by a multiplicative hash). */
const pageRandom = (seed: number): (() => number) => lcg(Math.imul(seed, 2654435761) + 12345);

/** `n` words of filler text (a sentence: capital first letter, full stop). */
function words(rnd: () => number, n: number): string {
  const w = Array.from({ length: n }, () => WORDS[Math.floor(rnd() * WORDS.length)]);
  w[0] = w[0][0].toUpperCase() + w[0].slice(1);
  return w.join(' ') + '.';
}

/** Link `id` of a page on `host`, in one of seven forms (`form` mod 7). */
function href(form: number, id: string, host: string): string {
  switch (form % 7) {
    case 0:
      return `article-${id}.html`;
    case 1:
      return `/news/2019/${id}/`;
    case 2:
      return `http://${host}/topics/${id}?page=2&amp;sort=date`;
    case 3:
      return `https://www.example.com/ref/${id}.html`;
    case 4:
      return `?q=item${id}&amp;lang=en`;
    case 5:
      return `../archive/${id}.html#comments`;
    default:
      return `//static.example.net/doc/${id}.pdf`;
  }
}

/** Image number `k`: a responsive one with `srcset` and `sizes` (`srcset` true), else a plain absolute one. */
function img(k: number | string, srcset: boolean): string {
  return srcset
    ? `<img src="/media/2019/${k}-800.jpg" srcset="/media/2019/${k}-400.jpg 400w, /media/2019/${k}-800.jpg 800w, https://cdn.example.net/media/2019/${k}-1600.jpg 1600w" sizes="(max-width: 600px) 400px, 800px" alt="Figure ${k}" width="800" height="450" loading="lazy">`
    : `<img src="https://cdn.example.net/media/2019/${k}.png" alt="Figure ${k}" width="400" height="300">`;
}

/** A paragraph of `n` words with links `ks` spread through it (link `k` in form `k`, its id `idOf(k)`). */
function paragraph(rnd: () => number, n: number, ks: number[], host: string, idOf: (k: number) => string = String): string {
  const per = Math.max(1, Math.floor(n / (ks.length + 1)));
  let out = '<p>';
  for (const [j, k] of ks.entries()) {
    out += `${words(rnd, per)} <a href="${href(k, idOf(k), host)}"${j % 3 === 2 ? ' rel="nofollow"' : ''}>${words(rnd, 2).slice(0, -1)}</a> `;
  }
  return out + words(rnd, per) + '</p>\n';
}

/** The page's `<head>` and the start of its body (navigation: 20 links). */
function pageStart(title: string, uriR: string): string {
  const host = new URL(uriR).host;
  const nav = Array.from({ length: 20 }, (_, k) => `<li><a href="${href(k, String(1000 + k), host)}">Section ${k}</a></li>`).join('');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<link rel="stylesheet" href="/static/css/site.css?v=20191231">
<link rel="icon" href="/favicon.ico">
<link rel="canonical" href="${uriR}">
<link rel="preload" href="https://fonts.example.net/site.woff2" as="font" crossorigin>
<script src="/static/js/app.js?v=3" defer></script>
<script src="https://cdn.example.net/lib/framework-4.2.1.min.js"></script>
<script src="//stats.example.com/collect.js?site=${host}" async></script>
<script>window.dataLayer = window.dataLayer || []; window.dataLayer.push({ page: location.pathname });</script>
<style>
@import url("/static/css/print.css") print;
body { margin: 0; font: 16px/1.5 Georgia, serif; background: #fff url(/static/img/bg.png) repeat-x; }
@font-face { font-family: "Site"; src: url("https://fonts.example.net/site.woff2") format("woff2"), url('/static/fonts/site.woff') format("woff"); }
.hero { background-image: url(/static/img/hero.jpg); }
.icon-search { background: url(data:image/gif;base64,R0lGODlhAQABAAAAACw=) no-repeat; }
.logo { background-image: url(../img/logo.png); }
</style>
</head>
<body>
<header class="site" style="background: #036 url('/static/img/header.png') no-repeat right top">
<a href="/" class="logo">Home</a>
<nav><ul>${nav}</ul></nav>
</header>
<main>
`;
}

/** The end of a page: footer with 18 links, a `mailto:`, `#top` and `javascript:` (which stay). */
function pageEnd(host: string): string {
  const links = Array.from({ length: 18 }, (_, k) => `<a href="${href(k + 3, String(2000 + k), host)}">Footer ${k}</a>`).join(' | ');
  return `</main>
<footer style="background-image: url(/static/img/footer.png)">
<p>${links}</p>
<p><a href="mailto:webmaster@${host}">Contact</a> <a href="#top">Top</a> <a href="javascript:window.print()">Print</a></p>
</footer>
</body>
</html>
`;
}

/**
 * Page `seed` of URI-R `uriR`, exactly `bytes` bytes (≥ 30,000): ~150
 * links (20 in the navigation, 110 in paragraphs, 18 in the footer, one
 * to `/`, and three the replay leaves alone), 20 images (every other one with
 * `srcset`), seven `style` attributes with `url()`, then filler paragraphs
 * to the length.
 * @throws when `bytes` is too small for all of that
 */
export function replayPage(seed: number, uriR: string, bytes: number): Buffer {
  const rnd = pageRandom(seed);
  const host = new URL(uriR).host;
  let main = '';
  let link = 0;
  for (let s = 0; s < 10; s++) {
    main += `<section id="s${s}">\n<h2>${words(rnd, 5).slice(0, -1)}</h2>\n`;
    if (s % 2 === 0) main += `<div class="card" style="background-image: url('/media/tiles/${seed}-${s}.png'); padding: 1em">\n`;
    for (let p = 0; p < 4; p++) {
      const ks = Array.from({ length: p < 3 ? 3 : 2 }, () => link++);
      main += paragraph(rnd, 30, ks, host);
      if (p % 2 === 1) main += img(`${seed}-${s}-${p}`, p === 1) + '\n';
    }
    if (s % 2 === 0) main += '</div>\n';
    main += '</section>\n';
  }
  const start = pageStart(`Page ${seed}: ${words(rnd, 4).slice(0, -1)}`, uriR);
  const end = pageEnd(host);
  let text = '';
  const room = () => bytes - Buffer.byteLength(start + main + text + end);
  while (room() > 400) text += `<p>${words(rnd, 50)}</p>\n`;
  const left = room() - '<p></p>\n'.length;
  if (left < 0) throw new Error(`replayPage: ${bytes} bytes are too few for the page (${bytes - left})`);
  text += `<p>${'x'.repeat(left)}</p>\n`;
  return Buffer.from(start + main + text + end);
}

/** A big page: its exact length and its bytes, chunk by chunk. */
export interface BigPage {
  /** Bytes. */
  length: number;
  /** The page in chunks of about 64 KB. */
  chunks(): Generator<Buffer>;
}

/**
 * An HTML page of URI-R `uriR`, at least `bytes` bytes: the head and
 * navigation of {@link replayPage}, then sections of the same length (each
 * 4 paragraphs with 16 links, 2 images, a `style` attribute with `url()`;
 * its number, 7 digits, in every URL, so the URLs differ), then the
 * footer. Nothing is built whole: {@link BigPage.chunks} makes it as it goes.
 */
export function bigPage(uriR: string, bytes: number): BigPage {
  const host = new URL(uriR).host;
  const rnd = pageRandom(7);
  // One section with `@@@@@@@` where its number goes; the text is the same in each.
  let template = `<section id="b@@@@@@@">\n<h2>Part @@@@@@@</h2>\n<div style="background-image: url('/media/tiles/@@@@@@@.png')">\n`;
  for (let p = 0; p < 4; p++) {
    template += paragraph(
      rnd,
      40,
      Array.from({ length: 4 }, (_, j) => 4 * p + j),
      host,
      (k) => `@@@@@@@-${k}`,
    );
    if (p % 2 === 1) template += img(`@@@@@@@-${p}`, p === 1) + '\n';
  }
  template += '</div>\n</section>\n';
  const start = Buffer.from(pageStart('A very long page', uriR));
  const end = Buffer.from(pageEnd(host));
  const sectionLength = Buffer.byteLength(template);
  const sections = Math.ceil(Math.max(0, bytes - start.length - end.length) / sectionLength);
  const perChunk = Math.max(1, Math.floor(65536 / sectionLength));
  return {
    length: start.length + sections * sectionLength + end.length,
    *chunks() {
      yield start;
      for (let k = 0; k < sections; k += perChunk) {
        let s = '';
        for (let j = k; j < Math.min(sections, k + perChunk); j++) s += template.replaceAll('@@@@@@@', String(j).padStart(7, '0'));
        yield Buffer.from(s);
      }
      yield end;
    },
  };
}
