/**
 * Link header values and link-format documents for the Memento relations
 * (RFC 8288 Web Linking; RFC 6690 link-format; RFC 7089 §2.2, §5).
 *
 * Why not the http-link-header package: it percent-encodes attribute
 * values that contain ':' (`datetime="Tue, 20 Mar 2001 20%3A35%3A00 GMT"`),
 * which Memento clients cannot read, and its parser splits a combined
 * `rel="first memento"` into two links, which loses what RFC 7089 §2.2.1
 * clients read as one (the tests use it, as a second and independent
 * parser of what the archive sends). The shapes here are the ones RFC 7089 shows:
 * `<URI>; rel="first memento"; datetime="Tue, 20 Mar 2001 20:35:00 GMT"`.
 */

/** One link: target URI, space-separated relation types, and attributes. */
export interface Link {
  uri: string;
  /** e.g. `original`, `timegate`, `first last memento`, `timemap index` */
  rel: string;
  /** Media type hint, e.g. `application/link-format` (RFC 8288 §3.4.1). */
  type?: string;
  /** IMF-fixdate of a memento (RFC 7089 §2.2.1). */
  datetime?: string;
  /** IMF-fixdate bounds of a TimeMap (RFC 7089 §2.2.2). */
  from?: string;
  until?: string;
}

const ATTRS = ['type', 'datetime', 'from', 'until'] as const;

function quote(v: string): string {
  return v.includes('"') || v.includes('\\') ? '"' + v.replace(/[\\"]/g, (c) => '\\' + c) + '"' : '"' + v + '"';
}

/**
 * Formats a URI for use inside `<…>` (RFC 8288 §3): characters that cannot
 * appear in a URI-Reference (`<`, `>`, `"`, space, controls, non-ASCII) are
 * percent-encoded so that the link value stays parseable, and so are `,`
 * and `;`. RFC 8288 allows both inside `<…>`, but common parsers split a
 * Link value at them without looking at the brackets (Python's
 * `requests.utils.parse_header_links` cuts the URI at `;` and loses the
 * link's `rel`); the archive reads `%2C` and `%3B` in the URI-R of its
 * addresses as `,` and `;` (shared/uri.ts `normalizeUriR`), so the links
 * still lead where they should.
 */
function target(uri: string): string {
  // eslint-disable-next-line no-control-regex -- control characters are what this encodes
  return uri.replace(/[\x00-\x20"<>,;\x7f]|[^\x00-\x7f]/gu, (c) => encodeURIComponent(c));
}

/** Formats one link value: `<uri>; rel="…"; type="…"; datetime="…"`. */
export function formatLink(link: Link): string {
  let s = `<${target(link.uri)}>; rel=${quote(link.rel)}`;
  for (const a of ATTRS) if (link[a] !== undefined) s += `; ${a}=${quote(link[a] as string)}`;
  return s;
}

/** Formats a Link header value: links joined by `, ` (one header line, RFC 8288 §3). */
export function formatLinkHeader(links: Link[]): string {
  return links.map(formatLink).join(', ');
}

/**
 * Parses a Link header value or a link-format document into links
 * (RFC 8288 §3, RFC 6690 §2). Commas inside `<…>` and quoted strings are
 * handled; unknown attributes are ignored; of a parameter given twice the
 * first counts (RFC 8288 §3.3); a link without `rel` gets `''`.
 *
 * @returns links in document order; malformed pieces are skipped.
 */
export function parseLinks(text: string): Link[] {
  const out: Link[] = [];
  let i = 0;
  const n = text.length;
  while (i < n) {
    const lt = text.indexOf('<', i);
    if (lt < 0) break;
    const gt = text.indexOf('>', lt);
    if (gt < 0) break;
    const link: Link = { uri: text.slice(lt + 1, gt), rel: '' };
    const seen = new Set<string>();
    i = gt + 1;
    // parameters until a top-level comma
    for (;;) {
      while (i < n && /\s/.test(text[i])) i++;
      if (i >= n || text[i] === ',') {
        i++;
        break;
      }
      if (text[i] !== ';') {
        i++;
        continue;
      }
      i++;
      while (i < n && /\s/.test(text[i])) i++;
      const nameStart = i;
      while (i < n && /[^\s=;,]/.test(text[i])) i++;
      const name = text.slice(nameStart, i).toLowerCase();
      while (i < n && /\s/.test(text[i])) i++;
      let value = '';
      if (text[i] === '=') {
        i++;
        while (i < n && /\s/.test(text[i])) i++;
        if (text[i] === '"') {
          i++;
          while (i < n && text[i] !== '"') {
            if (text[i] === '\\' && i + 1 < n) i++;
            value += text[i++];
          }
          i++;
        } else {
          const vs = i;
          while (i < n && /[^\s;,]/.test(text[i])) i++;
          value = text.slice(vs, i);
        }
      }
      // RFC 8288 §3.3, §3.4.1: a parameter given twice counts once, the first time.
      if (seen.has(name)) continue;
      seen.add(name);
      if (name === 'rel') link.rel = value;
      else if ((ATTRS as readonly string[]).includes(name)) (link as unknown as Record<string, string>)[name] = value;
    }
    out.push(link);
  }
  return out;
}

/** True when the space-separated `rel` of a link contains relation type `rel` (case-insensitive). */
export function hasRel(link: Link, rel: string): boolean {
  return link.rel.toLowerCase().split(/\s+/).includes(rel.toLowerCase());
}
