/**
 * The feeds of changes (docs/http-api.md "Feeds"): `GET /feed/<URL>` and
 * `/feed/<prefix>*` over real captures of pages changing over time. A
 * revisit, an excluded URL and a purged capture are in no feed; each entry
 * names its URI-M, Memento-Datetime, `/web/` page and the diff with the
 * entry before it (which answers 200); the documents are Atom as a feed
 * parser (@rowanmanning/feed-parser) reads them; archive pages are counted
 * from the oldest and stay the same as new captures arrive (RFC 5005 §4).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseFeed } from '@rowanmanning/feed-parser';
import t, { type Test } from 'tap';
import { epoch, partsOf, ts14 } from '../conformance/helpers.js';
import { type Answer, captureRecord, putCapture, request, startArchive, type TestArchive, TWO_ARCHIVES } from '../helpers/archive.js';
import { runPurge } from '../../archive/commands/purge.js';
import { xmlText } from '../../archive/feed/atom.js';

const ATOM = 'http://www.w3.org/2005/Atom';
const FH = 'http://purl.org/syndication/history/1.0';
const RULES = `access:\n  - url: http://www.example.org/excluded/*\n    action: exclude\n`;

const TERMS = 'http://www.example.org/terms';
const ABOUT = 'http://www.example.org/about';
const QUERY = 'http://www.example.org/search?a=1&b=2';
const EXCLUDED = 'http://www.example.org/excluded/page';

/** An HTTP date `days` after 2001-01-01 00:00:00 UTC. */
const day = (days: number) => new Date(Date.UTC(2001, 0, 1) + days * 86_400_000).toUTCString();

/** PUTs a capture of `uriR` served at `date` with `body`; its answer. */
function put(a: TestArchive, uriR: string, date: string, body: string): Promise<Answer> {
  return putCapture(a, uriR, captureRecord({ ...partsOf(uriR), date, body: `<html><head><title>${body}</title></head><body><p>${body}</p></body></html>` }));
}

/** One entry or feed link as the document has it. */
type Link = { rel: string | null; href: string | null; type: string | null };

/** A feed document read by the feed parser, with what the checks need of each element (RFC 4287 §4.1.1, §4.1.2). */
function readAtom(t: Test, text: string) {
  const feed = parseFeed(text);
  t.equal(feed.meta.type, 'atom', 'the parser reads an Atom feed');
  const root = feed.element;
  t.equal(root.namespaceUri, ATOM, 'in the Atom namespace');
  type El = typeof root;
  const child = (el: El, name: string) => el.children.filter((c): c is El => typeof c !== 'string' && c.name === name);
  const links = (el: El): Link[] => child(el, 'link').map((l) => ({ rel: l.getAttribute('rel'), href: l.getAttribute('href'), type: l.getAttribute('type') }));
  for (const name of ['id', 'title', 'updated']) t.equal(child(root, name).length, 1, `the feed has one ${name}`);
  t.equal(child(root, 'author').length, 1, 'the feed has an author');
  const entries = child(root, 'entry').map((e, i) => {
    for (const name of ['id', 'title', 'updated']) t.equal(child(e, name).length, 1, `entry ${i} has one ${name}`);
    t.equal(child(e, 'author').length, 1, `entry ${i} has an author`);
    return { id: child(e, 'id')[0].textContent, updated: child(e, 'updated')[0].textContent, title: child(e, 'title')[0].textContent, links: links(e) };
  });
  t.equal(feed.items.length, entries.length, 'the parser finds every entry');
  feed.items.forEach((item, i) => {
    t.equal(item.id, entries[i].id, `the parser reads entry ${i}'s id`);
    t.equal(item.updated?.getTime(), Date.parse(entries[i].updated), `and its updated date`);
  });
  const archive = child(root, 'archive').some((c) => c.namespaceUri === FH);
  return { feed, id: child(root, 'id')[0].textContent, updated: child(root, 'updated')[0].textContent, links: links(root), entries, archive };
}

/** The href of the link `rel` among `links`, or undefined. */
const rel = (links: Link[], name: string) => links.find((l) => l.rel === name)?.href ?? undefined;

/** The URI-M of `uriR` at `date` in archive 2025 (2001 dates). */
const uriM = (a: TestArchive, date: string, uriR: string) => `${a.url}/2025/memento/${ts14(date)}/${uriR}`;

t.test('a page changing over time: one entry per new memento, newest first; revisits, excluded URLs and purged captures absent', async (t) => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'feed-test-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  let a = await startArchive(TWO_ARCHIVES + RULES, { dataDir });
  t.teardown(() => a.close());
  // terms: v1, v1 again four days later (a revisit), v2, v2 again (a revisit), v3 (purged below), v4.
  const terms: [number, string, string][] = [
    [0, 'terms v1', 'new'],
    [4, 'terms v1', 'revisit'],
    [31, 'terms v2', 'new'],
    [59, 'terms v2', 'revisit'],
    [90, 'terms v3', 'new'],
    [120, 'terms v4 & <more>', 'new'],
  ];
  for (const [d, body, kind] of terms) {
    const r = await put(a, TERMS, day(d), body);
    t.equal(r.status, 201, `terms +${d} days stored`);
    t.equal(r.headers['archive-capture'], kind, `terms +${d} days: ${kind}`);
  }
  for (const [uriR, d, body] of [
    [ABOUT, 1, 'about v1'],
    [ABOUT, 32, 'about v2'],
    [QUERY, 2, 'results'],
    [EXCLUDED, 3, 'secret v1'],
    [EXCLUDED, 33, 'secret v2'],
  ] as const)
    t.equal((await put(a, uriR, day(d), body)).status, 201, `${uriR} +${d} days stored`);

  const before = await request(`${a.url}/feed/${TERMS}`);
  t.equal(before.status, 200);
  t.same(
    readAtom(t, before.text).entries.map((e) => e.id),
    [120, 90, 31, 0].map((d) => uriM(a, day(d), TERMS)),
    'before the purge: four entries (the two revisits are not changes)',
  );

  // Purge the capture of April (v3), with the daemon stopped; then serve the folder again.
  await a.close();
  t.equal(await runPurge(a.config, { url: TERMS, after: '2001-03-15T00:00:00Z', before: '2001-04-15T00:00:00Z' }), 0, 'purged');
  a = await startArchive(TWO_ARCHIVES + RULES, { dataDir });

  const res = await request(`${a.url}/feed/${TERMS}`);
  t.equal(res.status, 200);
  t.equal(res.headers['content-type'], 'application/atom+xml; charset=utf-8');
  const head = await request(`${a.url}/feed/${TERMS}`, { method: 'HEAD' });
  t.equal(head.status, 200, 'HEAD: 200');
  t.equal(head.headers['content-type'], 'application/atom+xml; charset=utf-8');
  t.equal(head.body.length, 0, 'HEAD: no body');
  const doc = readAtom(t, res.text);
  t.equal(doc.id, `${a.url}/feed/${TERMS}`, 'the feed id: its address');
  t.equal(rel(doc.links, 'self'), `${a.url}/feed/${TERMS}`);
  t.equal(rel(doc.links, 'prev-archive'), undefined, 'fewer entries than a page: no archive document yet');
  t.notOk(doc.archive, 'the subscription document is no archive document');
  t.equal(doc.updated, '2001-05-01T00:00:00Z', "updated: the newest entry's Memento-Datetime");
  t.equal(doc.feed.title, `Changes of ${TERMS}`);
  const shown = [120, 31, 0];
  t.same(
    doc.entries.map((e) => [e.id, e.updated]),
    shown.map((d) => [uriM(a, day(d), TERMS), new Date(epoch(day(d)) * 1000).toISOString().replace('.000', '')]),
    'after the purge: v4, v2, v1, newest first; id the URI-M, updated its Memento-Datetime',
  );
  t.same(
    doc.entries.map((e) => [rel(e.links, 'alternate'), rel(e.links, 'related')]),
    [
      [`${a.url}/web/${ts14(day(120))}/${TERMS}`, `${a.url}/web/diff/${ts14(day(31))}/${ts14(day(120))}/${TERMS}`],
      [`${a.url}/web/${ts14(day(31))}/${TERMS}`, `${a.url}/web/diff/${ts14(day(0))}/${ts14(day(31))}/${TERMS}`],
      [`${a.url}/web/${ts14(day(0))}/${TERMS}`, undefined],
    ],
    'each entry links its /web/ page and the diff with the entry before it (the purged one skipped); the first, none',
  );
  t.same(
    doc.entries.map((e) => e.title),
    [`${TERMS} changed`, `${TERMS} changed`, `${TERMS} first archived`],
  );
  t.notOk(res.text.includes(ts14(day(90))), 'nothing of the purged capture');
  t.notOk(res.text.includes(ts14(day(4))) || res.text.includes(ts14(day(59))), 'nothing of the revisits');
  for (const e of doc.entries)
    for (const l of e.links) {
      const page = await request(l.href!);
      t.equal(page.status, 200, `${l.rel} ${l.href} answers 200`);
      if (l.rel === 'related') t.match(page.text, /<h1>What changed on/, 'a comparison of the two captures');
    }

  // A prefix: every URL under it, newest first; the excluded one absent; the URL with `&` escaped and read back.
  const all = await request(`${a.url}/feed/http://www.example.org/*`);
  t.equal(all.status, 200);
  const prefix = readAtom(t, all.text);
  t.equal(prefix.feed.title, 'Changes under http://www.example.org/');
  t.same(
    prefix.entries.map((e) => e.id),
    [
      [120, TERMS],
      [32, ABOUT],
      [31, TERMS],
      [2, QUERY],
      [1, ABOUT],
      [0, TERMS],
    ].map(([d, u]) => uriM(a, day(d as number), u as string)),
    'every new memento under the prefix, newest first; nothing excluded, purged or revisited',
  );
  t.equal(rel(prefix.entries[1].links, 'related'), `${a.url}/web/diff/${ts14(day(1))}/${ts14(day(32))}/${ABOUT}`, 'the previous entry of the same URL');
  t.equal(rel(prefix.entries[3].links, 'related'), undefined, 'a URL with one entry: no diff');
  t.ok(all.text.includes('search?a=1&amp;b=2'), 'the `&` of a URL escaped in the XML');
  t.notOk(all.text.includes('excluded'), 'the excluded URL is nowhere in the prefix feed');

  // An excluded URL answers as one never captured.
  const excluded = await request(`${a.url}/feed/${EXCLUDED}`);
  const never = await request(`${a.url}/feed/http://www.example.org/never`);
  t.equal(excluded.status, 404);
  t.equal(never.status, 404);
  t.equal(excluded.text.replace(EXCLUDED, 'U'), never.text.replace('http://www.example.org/never', 'U'), 'the same answer as a URL never captured');
  t.equal((await request(`${a.url}/feed/http://nothing.example/*`)).status, 404, 'an empty prefix: 404');
  t.equal((await request(`${a.url}/feed/archive/1/${TERMS}`)).status, 404, 'no archive page before one is full');
  t.equal((await request(`${a.url}/feed/archive/x/${TERMS}`)).status, 400, 'a malformed page number');
});

t.test('paging (RFC 5005 §4): archive pages counted from the oldest, stable as new captures arrive; the subscription holds the newest', async (t) => {
  const a = await startArchive(TWO_ARCHIVES);
  t.teardown(() => a.close());
  const url = 'http://www.example.org/news';
  const putDays = async (from: number, to: number) => {
    for (let d = from; d < to; d++) t.equal((await put(a, url, day(d), `news ${d}`)).status, 201, `news +${d}`, { diagnostic: false });
  };
  const get = async (path: string) => {
    const r = await request(`${a.url}${path}`);
    t.equal(r.status, 200, path);
    return { text: r.text, doc: readAtom(t, r.text) };
  };
  const ids = (days: number[]) => days.map((d) => uriM(a, day(d), url));
  const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => to - 1 - i);
  const feedUrl = `${a.url}/feed/${url}`;
  const page = (p: number) => `${a.url}/feed/archive/${p}/${url}`;

  await putDays(0, 120);
  const sub = await get(`/feed/${url}`);
  t.same(
    sub.doc.entries.map((e) => e.id),
    ids(range(70, 120)),
    'the subscription: the newest 50, newest first',
  );
  t.equal(rel(sub.doc.links, 'prev-archive'), page(2), 'prev-archive: the newest full archive page');
  const p2 = await get(`/feed/archive/2/${url}`);
  t.ok(p2.doc.archive, 'fh:archive');
  t.same(
    p2.doc.entries.map((e) => e.id),
    ids(range(50, 100)),
    'page 2: entries 51 to 100',
  );
  t.equal(rel(p2.doc.links, 'current'), feedUrl);
  t.equal(rel(p2.doc.links, 'self'), page(2));
  t.equal(rel(p2.doc.links, 'prev-archive'), page(1));
  t.equal(rel(p2.doc.links, 'next-archive'), undefined, 'the newest archive page: no next yet');
  t.equal(p2.doc.id, feedUrl, 'one feed: the same id in every document');
  const p1 = await get(`/feed/archive/1/${url}`);
  t.same(
    p1.doc.entries.map((e) => e.id),
    ids(range(0, 50)),
    'page 1: the oldest 50',
  );
  t.equal(rel(p1.doc.links, 'prev-archive'), undefined, 'the oldest page: no prev-archive');
  t.equal(rel(p1.doc.links, 'next-archive'), page(2));
  t.equal(rel(p1.doc.entries[49].links, 'related'), undefined, 'the first entry of all: no diff');
  t.equal(
    rel(p2.doc.entries[49].links, 'related'),
    `${a.url}/web/diff/${ts14(day(49))}/${ts14(day(50))}/${url}`,
    "across pages: the diff with page 1's newest",
  );
  t.equal((await request(page(3))).status, 404, 'page 3 is not full yet');

  await putDays(120, 160);
  const p1After = await request(page(1));
  t.equal(p1After.text, p1.text, 'page 1: the same bytes after 40 new captures');
  const p2After = await get(`/feed/archive/2/${url}`);
  t.same(p2After.doc.entries, p2.doc.entries, 'page 2: the same entries');
  t.equal(rel(p2After.doc.links, 'next-archive'), page(3), 'and now a next-archive');
  const p3 = await get(`/feed/archive/3/${url}`);
  t.same(
    p3.doc.entries.map((e) => e.id),
    ids(range(100, 150)),
    'page 3: entries 101 to 150',
  );
  const subAfter = await get(`/feed/${url}`);
  t.same(
    subAfter.doc.entries.map((e) => e.id),
    ids(range(110, 160)),
  );
  t.equal(rel(subAfter.doc.links, 'prev-archive'), page(3));

  // A reader walking prev-archive from the subscription has every change once (RFC 5005 §4: entries by id).
  const seen = new Set<string>();
  let next: string | undefined = feedUrl;
  let documents = 0;
  while (next) {
    const r = await request(next);
    const d = readAtom(t, r.text);
    d.entries.forEach((e) => seen.add(e.id));
    next = rel(d.links, 'prev-archive');
    documents++;
  }
  t.equal(documents, 4, 'the subscription and three archive pages');
  t.same([...seen].sort(), ids(range(0, 160)).sort(), 'every new memento, once');
});

t.test('xmlText: escaped, and the characters XML 1.0 forbids left out (a lone surrogate, C0 controls, U+FFFE)', async (t) => {
  t.equal(xmlText('a\u0001b&<>"\' \ud800x \ud83d\ude00 \ufffe\t'), 'ab&amp;&lt;&gt;&quot;&apos; x \ud83d\ude00 \t');
});
