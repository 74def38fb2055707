/**
 * The Atom documents of the feeds of changes (RFC 4287), paged as an
 * archived feed (RFC 5005 §4): a small writer of the elements the feeds
 * use, every text and attribute value escaped (entities `escapeUTF8`:
 * `& < > " '`) and stripped of the characters XML 1.0 does not allow.
 */
import { escapeUTF8 } from 'entities';
import { formatIsoSeconds } from '#shared/http-date.js';

/** The media type of an Atom feed document (RFC 4287 §7). */
export const ATOM_TYPE = 'application/atom+xml';

/** The namespace of RFC 5005's `fh:archive` element. */
const FH_NS = 'http://purl.org/syndication/history/1.0';

/** One link of a feed or entry (RFC 4287 §4.2.7). */
export interface AtomLink {
  rel: string;
  href: string;
  type?: string;
}

/** One entry (RFC 4287 §4.1.2); `updated` in epoch seconds. */
export interface AtomEntry {
  id: string;
  title: string;
  updated: number;
  links: AtomLink[];
  summary?: string;
}

/** One feed document; `updated` in epoch seconds; `archive`: an RFC 5005 archive document (`fh:archive`). */
export interface AtomFeed {
  id: string;
  title: string;
  updated: number;
  author: { name: string; uri: string };
  links: AtomLink[];
  archive: boolean;
  entries: AtomEntry[];
}

/** `text` safe as XML character data or an attribute value: escaped, without the characters XML 1.0 forbids (C0 controls but tab, CR, LF; lone surrogates; U+FFFE/U+FFFF). */
export function xmlText(text: string): string {
  const allowed = text.replace(
    // eslint-disable-next-line no-control-regex
    /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g,
    '',
  );
  return escapeUTF8(allowed);
}

/** An RFC 3339 date-time of epoch seconds (RFC 4287 §3.3), UTC. */
export function atomDate(seconds: number): string {
  return formatIsoSeconds(seconds);
}

function link(l: AtomLink, indent: string): string {
  const type = l.type ? ` type="${xmlText(l.type)}"` : '';
  return `${indent}<link rel="${xmlText(l.rel)}" href="${xmlText(l.href)}"${type}/>\n`;
}

/** The document `feed` as UTF-8 XML text. */
export function atomDocument(feed: AtomFeed): string {
  const out = [
    `<?xml version="1.0" encoding="utf-8"?>\n`,
    `<feed xmlns="http://www.w3.org/2005/Atom"${feed.archive ? ` xmlns:fh="${FH_NS}"` : ''}>\n`,
    `  <id>${xmlText(feed.id)}</id>\n`,
    `  <title>${xmlText(feed.title)}</title>\n`,
    `  <updated>${atomDate(feed.updated)}</updated>\n`,
    `  <author><name>${xmlText(feed.author.name)}</name><uri>${xmlText(feed.author.uri)}</uri></author>\n`,
    ...feed.links.map((l) => link(l, '  ')),
  ];
  if (feed.archive) out.push('  <fh:archive/>\n');
  for (const e of feed.entries) {
    out.push(
      '  <entry>\n',
      `    <id>${xmlText(e.id)}</id>\n`,
      `    <title>${xmlText(e.title)}</title>\n`,
      `    <updated>${atomDate(e.updated)}</updated>\n`,
      `    <author><name>${xmlText(feed.author.name)}</name><uri>${xmlText(feed.author.uri)}</uri></author>\n`,
      ...e.links.map((l) => link(l, '    ')),
      e.summary === undefined ? '' : `    <summary>${xmlText(e.summary)}</summary>\n`,
      '  </entry>\n',
    );
  }
  out.push('</feed>\n');
  return out.join('');
}
