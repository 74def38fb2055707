/**
 * Is a capture new? The archive decides, in one place (its answer to a
 * plain PUT: 201 new, or a revisit once `revisit_interval` has passed; 200
 * the same as the memento it follows, each with Location, ETag and
 * Archive-Revisit-After); the proxy keeps one small
 * cache of those answers (proxy/capture/is-it-new.ts) and sends no PUT for
 * a capture the archive's last answer says it has, until the revisit
 * instant. What a user of the archive sees must not change: nothing lost,
 * nothing stored twice, every change a memento.
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import type http from 'node:http';
import path from 'node:path';
import t, { type Test } from 'tap';
import { captureEntityTag } from '#shared/capture-tag.js';
import { formatHttpDate } from '#shared/http-date.js';
import type { CaptureOutcome } from '../../proxy/capture/capture.js';
import type { RunningProxy } from '../../proxy/server.js';
import { captureRecord, putCapture, request, startArchive, type TestArchive, TWO_ARCHIVES } from '../helpers/archive.js';
import { warcRecords } from '../archive/helpers.js';
import { freePort, get, startTestProxy, startUpstream, tempDir, vhostYaml, waitFor } from './helpers.js';

const PAGES: Record<string, string> = { A: '<html><body>version A</body></html>', B: '<html><body>version B</body></html>' };
const sha256 = (s: string) => 'sha256:' + createHash('sha256').update(s).digest('hex');
const DIGEST = Object.fromEntries(Object.entries(PAGES).map(([k, v]) => [sha256(v), k]));
const DAY = 86_400;

/**
 * A content server whose one page is `state.page` (A or B), each answer
 * dated `state.at` (epoch seconds; then one second later for the next),
 * three days ago to begin with.
 */
async function site(t: Test) {
  const state = { page: 'A', at: Math.floor(Date.now() / 1000) - 3 * DAY };
  const upstream = await startUpstream(t, (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', Date: formatHttpDate(state.at++) });
    res.end(PAGES[state.page]);
  });
  return { upstream, state };
}

/** A proxy in front of `upstream` whose vhost `localhost` captures into the archive on `archivePort`. */
async function proxyFor(t: Test, upstream: string, archivePort: number, settings: Record<string, string> = {}) {
  return startTestProxy(
    t,
    { 'a.yaml': vhostYaml({ server_name: 'localhost', upstream, ArchivePort: archivePort, ...settings }) },
    { spool: { retryMinMs: 50, retryMaxMs: 100 } },
  );
}

/** GET / through `proxy` and its capture's outcome. */
async function visit(proxy: RunningProxy): Promise<CaptureOutcome> {
  const outcome = once(proxy.events, 'capture').then(([o]) => o as CaptureOutcome);
  const r = await get(proxy.url, '/', 'localhost');
  if (r.status !== 200) throw new Error(`GET / answered ${r.status}`);
  return outcome;
}

/** The mementos of http://localhost/, oldest first, as the pages they hold (A or B). */
async function history(a: TestArchive): Promise<string[]> {
  const rows: { digest: string }[] = [];
  for (const id of ['2025', 'current']) rows.push(...(await a.store.index.page(id, 'localhost)/', -Infinity, 1000)));
  return rows.map((r) => DIGEST[r.digest] ?? '?');
}

/** Counts the PUTs the archive gets. */
function countPuts(a: TestArchive) {
  const seen = { puts: 0 };
  a.app.server.on('request', (req: http.IncomingMessage) => {
    if (req.method === 'PUT') seen.puts++;
  });
  return seen;
}

t.test("the archive's answer to a PUT: 201 or 200, with Location, ETag (the memento's tag) and Archive-Revisit-After", async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const date = 'Tue, 20 Oct 2026 10:00:00 GMT';
  const at = Date.parse(date) / 1000;
  const rec = (body: string, d: string) => captureRecord({ target: '/p', date: d, body, responseHeaders: [['Content-Type', 'text/html; charset=utf-8']] });
  const first = await putCapture(a, '', rec('one', date));
  t.equal(first.status, 201, 'new: 201');
  t.match(first.headers.location, /\/current\/memento\/20261020100000\/http:\/\/www\.example\.org\/p$/, 'Location: its URI-M');
  t.equal(first.headers.etag, captureEntityTag({ digest: sha256('one'), status: 200, mime: 'text/html' }), 'ETag: its capture tag');
  t.equal(first.headers['archive-revisit-after'], formatHttpDate(at + DAY), 'Archive-Revisit-After: a day after its datetime');
  const later = formatHttpDate(at + 60);
  const same = await putCapture(a, '', rec('one', later));
  t.equal(same.status, 200, 'identical, a minute later: 200, nothing stored');
  t.equal(same.headers.location, first.headers.location, 'Location: the memento it matched');
  t.equal(same.headers.etag, first.headers.etag, 'ETag: the same tag');
  t.equal(same.headers['archive-revisit-after'], formatHttpDate(at + DAY), "revisit after: the matched memento's, not this capture's");
  t.equal(same.headers['content-location'], undefined);
  const changed = await putCapture(a, '', rec('two', later));
  t.equal(changed.status, 201, 'changed: 201');
  t.equal(changed.headers.etag, captureEntityTag({ digest: sha256('two'), status: 200, mime: 'text/html' }));
  t.equal(changed.headers['archive-revisit-after'], formatHttpDate(at + 60 + DAY));
  const close = await putCapture(a, '', rec('two', formatHttpDate(at + 120)), { headers: { Connection: 'close' } });
  t.equal(close.status, 200, 'a plain PUT with Connection: close, as the Apache plug-in sent, is answered the same');
});

t.test('a new capture is PUT; an identical one before the revisit instant is not; one at or after it is', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const seen = countPuts(a);
  const { upstream, state } = await site(t);
  const { proxy } = await proxyFor(t, upstream.url, a.port);

  t.match(await visit(proxy), { outcome: 'stored', live: 'stored', archiveStatus: 201 }, 'A: new, PUT, stored');
  t.match(await visit(proxy), { outcome: 'unchanged', live: 'cached' }, 'A a second later: not sent');
  state.at += DAY - 10;
  t.match(await visit(proxy), { outcome: 'unchanged', live: 'cached' }, 'A just before the revisit instant: not sent');
  t.equal(seen.puts, 1, 'one PUT so far');
  state.at += 10;
  t.match(
    await visit(proxy),
    { outcome: 'stored', live: 'stored', archiveStatus: 201 },
    'A past the revisit instant: PUT, the archive stores a revisit (a memento of its own, no second copy of the body)',
  );
  t.equal(seen.puts, 2);
  t.same(await history(a), ['A', 'A'], 'two mementos: the response and its revisit');
  t.equal(await proxy.metrics.value('capture_proxy_captures_unchanged_total', { via: 'cache' }), 2);
  t.match(await visit(proxy), { outcome: 'unchanged', live: 'cached' }, 'A a second after the revisit: not sent (its answer names the revisit)');
});

t.test('unchanged for days behind the proxy (its cache On): 1 Jan stored, 1 Jan 06:00 not sent, 3 Jan → the archive holds a revisit', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const seen = countPuts(a);
  const state = { date: 'Thu, 01 Jan 2026 00:00:00 GMT' };
  const upstream = await startUpstream(t, (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', Date: state.date });
    res.end(PAGES.A);
  });
  const { proxy } = await proxyFor(t, upstream.url, a.port);
  t.match(await visit(proxy), { outcome: 'stored', archiveStatus: 201 }, '1 Jan: stored');
  state.date = 'Thu, 01 Jan 2026 06:00:00 GMT';
  t.match(await visit(proxy), { outcome: 'unchanged', live: 'cached' }, '1 Jan 06:00: within the revisit interval, not sent');
  t.equal(seen.puts, 1);
  state.date = 'Sat, 03 Jan 2026 00:00:00 GMT';
  t.match(
    await visit(proxy),
    { outcome: 'stored', live: 'stored', archiveStatus: 201 },
    '3 Jan: past Archive-Revisit-After, sent; the archive stores a revisit',
  );
  t.equal(seen.puts, 2);
  const rows = await a.store.index.page('current', 'localhost)/', -Infinity, 10);
  t.same(
    rows.map((r) => [r.datetime, r.refers_to]),
    [
      [Date.parse('2026-01-01T00:00:00Z') / 1000, null],
      [Date.parse('2026-01-03T00:00:00Z') / 1000, rows[0].id],
    ],
    'the index: the response of 1 Jan and the revisit of 3 Jan referring to it',
  );
  const records = await warcRecords(a.dataDir, 'current');
  const revisit = records.find((r) => r.type === 'revisit');
  t.equal(revisit?.headers.get('warc-refers-to-date'), '2026-01-01T00:00:00Z', 'a WARC revisit record naming 1 Jan');
  t.equal(revisit?.headers.get('warc-date'), '2026-01-03T00:00:00Z');
  const tg = await request(`${a.url}/current/timegate/http://localhost/`, { headers: { 'accept-datetime': 'Sat, 03 Jan 2026 01:00:00 GMT' } });
  t.match(String(tg.headers.location), /\/current\/memento\/20260103000000\/http:\/\/localhost\/$/, 'a reader on 3 Jan is sent to the revisit');
});

t.test('a changed capture is PUT: A → B → A is three mementos; a capture dated before the capture the answer was for is PUT', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const seen = countPuts(a);
  const { upstream, state } = await site(t);
  const { proxy } = await proxyFor(t, upstream.url, a.port);
  t.equal((await visit(proxy)).outcome, 'stored', 'A');
  state.page = 'B';
  t.equal((await visit(proxy)).outcome, 'stored', 'B');
  state.page = 'A';
  t.equal((await visit(proxy)).outcome, 'stored', 'A again: stored (the cache keeps only the last answer)');
  t.match(await visit(proxy), { outcome: 'unchanged', live: 'cached' }, 'A once more: not sent');
  state.at -= 60;
  t.match(await visit(proxy), { outcome: 'stored', live: 'stored' }, 'A dated a minute before the first A: PUT, and new there');
  t.equal(seen.puts, 4);
  t.same(await history(a), ['A', 'A', 'B', 'A'], 'every change a memento');
});

t.test('overlapping captures of one address neither trust nor write the cache', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const seen = countPuts(a);
  const waiting: (() => void)[] = [];
  let hold = false;
  let at = Math.floor(Date.now() / 1000) - DAY;
  const upstream = await startUpstream(t, (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html', Date: formatHttpDate(at++) });
    if (!hold) return void res.end(PAGES.A);
    // The heads and a first part of both answers, then the rest of both: the two captures overlap.
    res.write(PAGES.A.slice(0, 10));
    waiting.push(() => res.end(PAGES.A.slice(10)));
    if (waiting.length === 2) for (const w of waiting.splice(0)) setTimeout(w, 20);
  });
  const { proxy } = await proxyFor(t, upstream.url, a.port);
  t.equal((await visit(proxy)).outcome, 'stored', 'A stored: the cache has its answer');
  hold = true;
  const outcomes: CaptureOutcome[] = [];
  const two = new Promise<void>((resolve) =>
    proxy.events.on('capture', (o: CaptureOutcome) => {
      outcomes.push(o);
      if (outcomes.length === 2) resolve();
    }),
  );
  await Promise.all([get(proxy.url, '/', 'localhost'), get(proxy.url, '/', 'localhost')]);
  await two;
  t.same(
    outcomes.map((o) => [o.outcome, o.live]),
    [
      ['unchanged', 'stored'],
      ['unchanged', 'stored'],
    ],
    'both overlapping captures are PUT (the cache is not trusted), and both are unchanged',
  );
  hold = false;
  t.match(await visit(proxy), { outcome: 'unchanged', live: 'stored' }, 'the next one is PUT too: the overlap wrote no entry and removed the old');
  t.match(await visit(proxy), { outcome: 'unchanged', live: 'cached' }, 'then the cache has an answer again');
  t.equal(seen.puts, 4);
});

t.test('an archive that is away: the capture is spooled, the entry goes; once re-sent, the next capture is PUT', async (t) => {
  const port = await freePort();
  const dataDir = path.join(await tempDir(t, 'archive-away-'), 'data');
  const yaml = `listen: 127.0.0.1:${port}\n` + TWO_ARCHIVES;
  let a = await startArchive(yaml, { dataDir });
  t.teardown(() => a.close());
  const { upstream, state } = await site(t);
  const { proxy } = await proxyFor(t, upstream.url, port);
  t.equal((await visit(proxy)).outcome, 'stored', 'A stored');
  await a.close();
  state.page = 'B';
  t.match(await visit(proxy), { outcome: 'spooled', live: 'failed' }, 'B while the archive is away: spooled');
  state.page = 'A';
  t.match(await visit(proxy), { outcome: 'spooled', live: /failed|skipped/ }, 'A while it is away: not taken from the cache, spooled');
  a = await startArchive(yaml, { dataDir });
  const seen = countPuts(a);
  await waitFor('the spool sent', () => proxy.spool.depth === 0);
  t.match(await visit(proxy), { outcome: 'unchanged', live: 'stored' }, 'A after them: PUT (the cache was cleared), the archive has it');
  t.equal(seen.puts, 3, 'two re-sends and the live PUT');
  t.same(await history(a), ['A', 'B', 'A'], 'nothing lost, nothing twice');
  t.equal(await proxy.metrics.value('capture_proxy_captures_dropped_total'), 0, 'none lost');
});

t.test('ArchiveUnchangedCache Off (several writers): every capture is PUT; two proxies in turn, A → B → A is three mementos', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const seen = countPuts(a);
  const { upstream, state } = await site(t);
  const one = (await proxyFor(t, upstream.url, a.port, { ArchiveUnchangedCache: 'Off' })).proxy;
  const two = (await proxyFor(t, upstream.url, a.port, { ArchiveUnchangedCache: 'Off' })).proxy;
  const steps: [RunningProxy, string, CaptureOutcome['outcome']][] = [
    [one, 'A', 'stored'],
    [two, 'A', 'unchanged'],
    [two, 'B', 'stored'],
    [one, 'A', 'stored'],
    [one, 'A', 'unchanged'],
  ];
  for (const [i, [proxy, page, want]] of steps.entries()) {
    state.page = page;
    t.match(await visit(proxy), { outcome: want, live: 'stored' }, `step ${i + 1}: proxy ${proxy === one ? 1 : 2} sees ${page}: ${want}, PUT`);
  }
  t.equal(seen.puts, 5);
  t.same(await history(a), ['A', 'B', 'A'], 'every change is a memento, no page twice in a row');
});

t.test('a held body that arrives in several pieces: its tag is the archive’s, so the next capture is not sent', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const seen = countPuts(a);
  const pieces = ['<html><body>', 'x'.repeat(3000), '</body></html>'];
  let at = Math.floor(Date.now() / 1000) - 600;
  const upstream = await startUpstream(t, (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html', Date: formatHttpDate(at++) });
    // Each piece its own chunk on the wire, a few ms apart (so that the proxy reads them as separate chunks).
    let i = 0;
    const next = () => (i < pieces.length ? (res.write(pieces[i++]), setTimeout(next, 10)) : res.end());
    next();
  });
  const { proxy } = await proxyFor(t, upstream.url, a.port);
  t.match(await visit(proxy), { outcome: 'stored', live: 'stored' }, 'the first capture is stored');
  t.match(await visit(proxy), { outcome: 'unchanged', live: 'cached' }, 'the second is not sent: the same tag on both sides');
  t.equal(seen.puts, 1, 'one PUT');
  const [row] = await a.store.index.page('current', 'localhost)/', -Infinity, 10);
  t.equal(row.digest, sha256(pieces.join('')), 'the digest of the whole body');
});

t.test('a vhost file that still has ArchiveConditional loads, with one warning line naming it as obsolete', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const { upstream } = await site(t);
  const { proxy, logs } = await proxyFor(t, upstream.url, a.port, { ArchiveConditional: 'On' });
  const warnings = logs.filter((e) => e.level === 'warn' && /obsolete/.test(String(e.msg)));
  t.equal(warnings.length, 1, 'one warning line');
  t.match(warnings[0]?.error, /a\.yaml:\d+: ArchiveConditional is obsolete and ignored/);
  t.equal((await visit(proxy)).outcome, 'stored', 'and the vhost captures');
});
