/**
 * The resources an HTML page embeds (what a browser fetches to show it,
 * not the links it may follow), found with htmlparser2's tokenizer as the
 * replay's rewriter finds URLs (html.ts): `src` of `img`, `script`,
 * `iframe`, `frame`, `embed`, `video`, `audio`, `source`, `track` and
 * `<input type=image>`; `srcset` of `img` and `source`; `poster` of
 * `video`; `data` of `object`; `href` of `<link rel=stylesheet>` and
 * `<link rel=icon>`; `url()` and `@import` in `style` attributes and
 * `<style>` elements (css.ts). Relative URLs resolve against the page's
 * first base element, else its URI-R; only http(s) URLs count, without
 * their fragment, each once (the first kind it was found as).
 *
 * For the banner's "About this capture" panel (archive/web/coherence.ts).
 * The page is hostile input: what this returns is text for the archive to
 * look up and escape, never markup. Bounded: at most `max` resources, and
 * the caller bounds the text.
 */
import { BoundedParser } from './html-parser.js';
import { rewriteCss } from './css.js';
import { rewriteSrcset } from './urls.js';

/** Most resources listed of one page. */
export const MAX_EMBEDDED = 100;

/** One embedded resource: its absolute URL and what embeds it (`img`, `stylesheet`, `script`, `icon`, `style`…). */
export interface EmbeddedResource {
  url: string;
  kind: string;
}

/** Elements whose `src` is an embedded resource. */
const SRC = new Set(['img', 'script', 'iframe', 'frame', 'embed', 'video', 'audio', 'source', 'track']);

/** The kind a `<link rel>` embeds: `stylesheet`, `icon`, or none. */
function linkKind(rel: string): string | undefined {
  const tokens = rel.toLowerCase().split(/[\t\n\f\r ]+/);
  if (tokens.includes('stylesheet')) return 'stylesheet';
  if (tokens.includes('icon')) return 'icon';
  return undefined;
}

/**
 * The embedded resources of a page (see the module comment), in the order
 * the page names them.
 *
 * @param html the page's text (decoded: characters, not bytes)
 * @param uriR the page's URI-R (its base until a base element says otherwise)
 * @param max most resources returned
 * @returns the resources, and whether there were more than `max`
 */
export function embeddedResources(html: string, uriR: string, max = MAX_EMBEDDED): { resources: EmbeddedResource[]; more: boolean } {
  const found = new Map<string, string>();
  let more = false;
  let docBase = uriR;
  let baseSeen = false;
  let inStyle = false;
  let styleText = '';
  const add = (raw: string, kind: string): null => {
    const value = raw.trim();
    if (!value || value.startsWith('#')) return null;
    let u: URL;
    try {
      u = new URL(value, docBase);
    } catch {
      return null;
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
    u.hash = '';
    if (found.has(u.href)) return null;
    if (found.size >= max) more = true;
    else found.set(u.href, kind);
    return null;
  };
  const css = (text: string, kind: string) => rewriteCss(text, (url) => add(url, kind));
  const parser = new BoundedParser(
    {
      onopentag(name, attrs) {
        if (name === 'base' && attrs.href !== undefined && !baseSeen) {
          baseSeen = true;
          try {
            docBase = new URL(attrs.href.trim(), uriR).href;
          } catch {
            // an unparsable base element: the URI-R stays the base
          }
        }
        if (attrs.style) css(attrs.style, 'style');
        if (SRC.has(name) && attrs.src !== undefined) add(attrs.src, name);
        if ((name === 'img' || name === 'source') && attrs.srcset !== undefined) rewriteSrcset(attrs.srcset, (url) => add(url, name));
        if (name === 'video' && attrs.poster !== undefined) add(attrs.poster, 'poster');
        if (name === 'object' && attrs.data !== undefined) add(attrs.data, 'object');
        if (name === 'input' && (attrs.type ?? '').toLowerCase() === 'image' && attrs.src !== undefined) add(attrs.src, 'input');
        if (name === 'link' && attrs.href !== undefined) {
          const kind = linkKind(attrs.rel ?? '');
          if (kind) add(attrs.href, kind);
        }
        if (name === 'style') {
          inStyle = true;
          styleText = '';
        }
      },
      ontext(text) {
        if (inStyle) styleText += text;
      },
      onclosetag(name) {
        if (name === 'style' && inStyle) {
          inStyle = false;
          css(styleText, 'style');
        }
      },
    },
    { decodeEntities: true, lowerCaseAttributeNames: true, lowerCaseTags: true },
  );
  parser.write(html);
  parser.end();
  if (inStyle) css(styleText, 'style');
  return { resources: [...found].map(([url, kind]) => ({ url, kind })), more };
}
