/**
 * Pages for the full-text search bench (bench/search.ts): about 10 KB of
 * HTML each, as a news or council site's article page is made — a head
 * with a title, meta tags, a style sheet and a script (text the index must
 * leave out), a navigation bar, an article of paragraphs, a footer — whose
 * words are drawn, page by page, from a fixed vocabulary with Zipf's law
 * (the word of rank r in proportion to 1/r): 100 English words first, then
 * {@link SYNTHETIC_WORDS} made-up words of two to four syllables, so that a
 * page shares its frequent words with every other page and its rare ones
 * with few, as real text does. Every page is the same function of its
 * number, in every run.
 *
 * Planted words, so that each query of the bench has a known answer:
 * {@link PHRASE} in every tenth page, {@link RARE_WORD} in every
 * 10,000th.
 */
import { lcg } from './lib.js';

/** Made-up words after the 100 English ones. */
export const SYNTHETIC_WORDS = 40_000;

/** The phrase planted in every tenth page (page number ≡ 3 mod 10); its words are frequent on their own. */
export const PHRASE = 'city council meeting';
/** The word planted in every 10,000th page (page number ≡ 7 mod 10,000), found nowhere else. */
export const RARE_WORD = 'quillwort';

const ENGLISH = (
  'the of and to in a is that for it as was with be by on not he this are or his from at which but have an had they you were ' +
  'their one all we can her has there been if more when will would who so no news city report market water school music history ' +
  'council year people week street police park river road house family health money sport weather music train station bridge ' +
  'garden museum library hospital church festival market election budget plan local new old first last open'
)
  .split(' ')
  .filter((w, i, a) => a.indexOf(w) === i)
  .slice(0, 100);

const SYLLABLES = 'ba be bi bo ka ke ki ko la le li lo ma me mi mo na ne ni no ra re ri ro sa se si so ta te ti to va ve vi vo'.split(' ');

/** The vocabulary, most frequent first (rank = index). */
export const VOCABULARY: readonly string[] = (() => {
  const seen = new Set(ENGLISH);
  const words = [...ENGLISH];
  const rnd = lcg(4242);
  while (words.length < ENGLISH.length + SYNTHETIC_WORDS) {
    let w = '';
    const n = 2 + Math.floor(rnd() * 3);
    for (let k = 0; k < n; k++) w += SYLLABLES[Math.floor(rnd() * SYLLABLES.length)];
    if (rnd() < 0.3) w += 'n';
    if (!seen.has(w)) {
      seen.add(w);
      words.push(w);
    }
  }
  return words;
})();

/** Cumulative Zipf weights of {@link VOCABULARY}, for a binary search. */
const CUMULATIVE = (() => {
  const c = new Float64Array(VOCABULARY.length);
  let sum = 0;
  for (let r = 0; r < VOCABULARY.length; r++) c[r] = sum += 1 / (r + 1);
  for (let r = 0; r < c.length; r++) c[r] /= sum;
  return c;
})();

/** A word drawn by Zipf's law. */
function word(rnd: () => number): string {
  const x = rnd();
  let lo = 0;
  let hi = CUMULATIVE.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (CUMULATIVE[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return VOCABULARY[lo];
}

/** `n` Zipf words, space-separated. */
function words(rnd: () => number, n: number): string {
  const out: string[] = [];
  for (let k = 0; k < n; k++) out.push(word(rnd));
  return out.join(' ');
}

/** The words of {@link VOCABULARY} that begin with `prefix`. */
export function wordsWithPrefix(prefix: string): number {
  return VOCABULARY.filter((w) => w.startsWith(prefix)).length;
}

const STYLE = `<style>
body{font-family:Georgia,serif;margin:0;color:#222;background:#fff}header,footer{background:#123;color:#eee;padding:.5rem 1rem}
nav a{color:#cde;margin-right:1rem;text-decoration:none}article{max-width:42rem;margin:1rem auto;line-height:1.5}
h1{font-size:1.8rem}p.lead{font-size:1.15rem}.meta{color:#666;font-size:.85rem}aside{border-left:3px solid #ccc;padding-left:1rem}
</style>`;

const SCRIPT = `<script>
(function(){var d=document,w=window;w.dataLayer=w.dataLayer||[];function track(e){w.dataLayer.push({event:e,t:Date.now()})}
d.addEventListener('DOMContentLoaded',function(){track('view');var a=d.querySelectorAll('article a');for(var i=0;i<a.length;i++){
a[i].addEventListener('click',function(){track('link')})}});if(w.localStorage){try{w.localStorage.setItem('seen','1')}catch(e){}}})();
</script>
<script type="application/ld+json">{"@context":"https://schema.org","@type":"NewsArticle","publisher":{"@type":"Organization","name":"Example Daily",
"logo":{"@type":"ImageObject","url":"https://www.example.org/static/logo-512.png","width":512,"height":512}},"isAccessibleForFree":true,
"inLanguage":"en","copyrightHolder":{"@type":"Organization","name":"Example Daily"},"image":["https://www.example.org/static/cover-1x1.jpg",
"https://www.example.org/static/cover-4x3.jpg","https://www.example.org/static/cover-16x9.jpg"]}</script>
<link rel="stylesheet" href="/static/site.css?v=20240101"><link rel="icon" href="/static/favicon.ico"><link rel="alternate" type="application/rss+xml" href="/feed.xml">`;

/** Page number `i` (see the module comment): about 10 KB of UTF-8 HTML. */
export function searchPage(i: number): Buffer {
  const rnd = lcg(0x5ea7c4 ^ i);
  const title = words(rnd, 6);
  const nav = Array.from({ length: 12 }, (_, k) => `<li class="nav-item"><a class="nav-link" href="/section/${k}/">${word(rnd)}</a></li>`).join('');
  let article = `<h1>${title}</h1>\n<p class="meta">Published by ${word(rnd)} ${word(rnd)} · page ${i}</p>\n<p class="lead">${words(rnd, 40)}</p>\n`;
  let para = 0;
  while (article.length < 6900) {
    let text = words(rnd, 40 + Math.floor(rnd() * 40));
    if (para === 1 && i % 10 === 3) text = `${words(rnd, 8)} ${PHRASE} ${text}`;
    if (para === 2 && i % 10_000 === 7) text = `${text} ${RARE_WORD}`;
    const link = `<a class="story-link" href="/story/${Math.floor(rnd() * 1e6)}.html" data-track="inline">${words(rnd, 3)}</a>`;
    const img = `<figure class="inline"><img src="/media/${Math.floor(rnd() * 1e8)}.jpg" width="640" height="360" loading="lazy" alt=""></figure>`;
    article +=
      para % 4 === 3
        ? `<aside class="pull-quote"><p>${text} ${link}</p></aside>\n${img}\n`
        : `<p class="body-text" data-para="${para}">${text} <em>${word(rnd)}</em> ${link}.</p>\n`;
    para++;
  }
  const html =
    `<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>${title}</title>\n` +
    `<meta name="viewport" content="width=device-width, initial-scale=1"><meta name="description" content="${words(rnd, 12)}">\n` +
    `${STYLE}\n${SCRIPT}\n</head><body>\n<header><nav><ul class="nav">${nav}</ul></nav></header>\n<article>\n${article}</article>\n` +
    `<footer><p>© ${word(rnd)} ${word(rnd)} · <a href="/about/">about</a> · <a href="/contact/">contact</a></p></footer>\n</body></html>\n`;
  return Buffer.from(html);
}

/**
 * The title and visible text of a {@link searchPage} page, as
 * archive/search/parse-text.ts `extractFromText` gives them, by a shortcut
 * that holds for these pages only (no comments, entities or `>` in
 * attributes): script, style and title elements cut, every tag a space,
 * white space folded. bench/seed.ts checks it against the extractor.
 */
export function pageText(html: string): { title: string; body: string } {
  const fold = (s: string) => s.replace(/\s+/g, ' ').trim();
  const title = /<title>([^<]*)<\/title>/.exec(html)?.[1] ?? '';
  const body = html.replace(/<(script|style|title)\b[^>]*>[\s\S]*?<\/\1>/g, ' ').replace(/<[^>]*>/g, ' ');
  return { title: fold(title), body: fold(body) };
}
