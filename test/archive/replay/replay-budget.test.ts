/**
 * What one archival replay may cost the daemon's event loop
 * (archive/replay/replay.ts): hostile stored pages — 2 MiB of `style`
 * attributes, one `<style>` element of 2 MiB, and the same at 3 MiB, which
 * is rewritten as it streams and comes from its record as one chunk — are
 * replayed over HTTP while `/healthz` and a capture PUT are sent: those two
 * are answered before the replay (the order of the answers, no timing),
 * and the replay is the page with every URL rewritten. A page held in
 * memory keeps its exact Content-Length. When the replay pool's queue is
 * full the answer is a 503 with Retry-After, never the page unrewritten.
 * A small page (one piece of the tokenizer's feed, 2 KiB) is rewritten on
 * the event loop, without the pool, however loaded the machine.
 */
import t, { type Test } from 'tap';
import { slicesWaiting } from '../../../archive/work/slices.js';
import { WorkPool } from '../../../archive/work/pool.js';
import { captureRecord, putCapture, request, startArchive, type TestArchive } from '../../helpers/archive.js';
import { until } from '../../helpers/until.js';

const HOST = 'budget.example';
const DATE = 'Mon, 05 Jan 2026 10:00:00 GMT';
const TS = '20260105100000';
const MiB = 1024 * 1024;

/** A page of `unit` repeated to at most `bytes`, inside `open`/`close`; how many `url(/x.png)` it holds. */
function page(unit: string, bytes: number, open = '', close = ''): { body: string; urls: number } {
  const n = Math.floor((bytes - open.length - close.length) / unit.length);
  return { body: open + unit.repeat(n) + close, urls: n };
}

const PAGES = {
  /** 2 MiB of style attributes (each with a URL), elements never closed: rewritten in memory. */
  styles: page('<b style="background:url(/x.png)">', 2 * MiB),
  /** One `<style>` element of 2 MiB: rewritten in memory. */
  sheet: page('a{background:url(/x.png)}', 2 * MiB, '<style>', '</style>'),
  /** 3 MiB of style attributes: rewritten as it streams (one chunk from its small record). */
  bigStyles: page('<b style="background:url(/x.png)">', 3 * MiB),
  /** One `<style>` element of 3 MiB: rewritten as it streams. */
  bigSheet: page('a{background:url(/x.png)}', 3 * MiB, '<style>', '</style>'),
};

async function put(a: TestArchive, path: string, body: string): Promise<void> {
  const r = await putCapture(a, `http://${HOST}${path}`, captureRecord({ host: HOST, target: path, date: DATE, body }));
  if (r.status !== 201) throw new Error(`PUT ${path}: ${r.status} ${r.text}`);
}

const a = await startArchive();
t.teardown(() => a.close());
for (const [name, p] of Object.entries(PAGES)) await put(a, `/${name}.html`, p.body);
await put(a, '/small.html', '<html><head><title>s</title></head><body><a href="/a.html">a</a><img src="/i.png"></body></html>');

/** The replay pool of the archive (none before it had one). */
const replayPool = () => (a.app as { work?: { replay?: WorkPool } }).work?.replay;

/**
 * Asks for the replay of `name`, and, once its rewrite is under way (in the replay pool's thread, or sliced on the
 * event loop and waiting for its turn), `/healthz` and a capture PUT; each answer's place in the order they came
 * back. On a daemon that rewrites on its event loop in one piece, this test's own code runs again only once the
 * rewrite is over, so the health check and the PUT come after the replay.
 */
async function whileReplaying(t: Test, name: keyof typeof PAGES) {
  const order: string[] = [];
  const replay = request(`${a.url}/current/memento/${TS}/http://${HOST}/${name}.html`).then((r) => {
    order.push('replay');
    return r;
  });
  const underWay = () => (replayPool()?.running ?? 0) > 0 || slicesWaiting() > 0;
  await until(() => underWay() || order.includes('replay'), 120_000, 'the rewrite is under way, or the replay is answered');
  const health = request(`${a.url}/healthz`).then((r) => {
    order.push('healthz');
    return r;
  });
  const capture = putCapture(a, `http://${HOST}/during-${name}`, captureRecord({ host: HOST, target: `/during-${name}`, body: 'during' })).then((r) => {
    order.push('put');
    return r;
  });
  const [r, h, p] = await Promise.all([replay, health, capture]);
  t.equal(h.status, 200, '/healthz: 200');
  t.equal(p.status, 201, 'the capture PUT: stored');
  t.ok(order.indexOf('healthz') < order.indexOf('replay'), `/healthz answered while the page was rewritten (order: ${order.join(', ')})`);
  t.ok(order.indexOf('put') < order.indexOf('replay'), `the PUT answered while the page was rewritten (order: ${order.join(', ')})`);
  t.equal(r.status, 200, 'the replay: 200');
  const archived = `${a.url}/current/memento/${TS}/http://${HOST}/x.png`;
  t.equal(r.text.split(archived).length - 1, PAGES[name].urls, `every url(/x.png) rewritten (${PAGES[name].urls})`);
  t.notMatch(r.text, /url\(\/x\.png\)/, 'none left as stored');
  t.match(r.text, /<script src="[^"]*\/_static\/replay\.js" data-memento-datetime="20260105100000"><\/script>/, 'the replay script in front');
  return r;
}

t.test('2 MiB of style attributes, in memory: /healthz and a PUT answered meanwhile; every URL rewritten; the length exact', async (t) => {
  const r = await whileReplaying(t, 'styles');
  t.equal(r.headers['content-length'], String(r.body.length), 'Content-Length: the bytes sent');
});

t.test('one <style> element of 2 MiB, in memory: /healthz and a PUT answered meanwhile; every URL rewritten; the length exact', async (t) => {
  const r = await whileReplaying(t, 'sheet');
  t.equal(r.headers['content-length'], String(r.body.length), 'Content-Length: the bytes sent');
  t.match(r.text, /<\/style>$/);
});

t.test('3 MiB of style attributes, streamed from one chunk: /healthz and a PUT answered meanwhile; every URL rewritten', async (t) => {
  const r = await whileReplaying(t, 'bigStyles');
  t.equal(r.headers['content-length'], undefined, 'streamed, without a length');
  t.equal(r.headers['transfer-encoding'], 'chunked');
});

t.test('one <style> element of 3 MiB, streamed: /healthz and a PUT answered meanwhile; every URL rewritten', async (t) => {
  const r = await whileReplaying(t, 'bigSheet');
  t.equal(r.headers['content-length'], undefined, 'streamed, without a length');
  t.match(r.text, /<\/style>$/);
});

t.test('a small page is rewritten on the event loop: the replay pool is not asked', async (t) => {
  const before = (await request(`${a.url}/metrics`)).text.match(/^memento_archive_work_total\{pool="replay",outcome="done"\} (\d+)$/m)?.[1] ?? '0';
  const r = await request(`${a.url}/current/memento/${TS}/http://${HOST}/small.html`);
  t.equal(r.status, 200);
  t.match(r.text, `<a href="${a.url}/current/memento/${TS}/http://${HOST}/a.html">`);
  t.equal(r.headers['content-length'], String(r.body.length));
  const after = (await request(`${a.url}/metrics`)).text.match(/^memento_archive_work_total\{pool="replay",outcome="done"\} (\d+)$/m)?.[1] ?? '0';
  t.equal(after, before, 'no task of the replay pool for it');
});

t.test('the replay pool full: 503 with Retry-After and a reason, never the page unrewritten', async (t) => {
  // A pool of one thread and no queue in place of the daemon's: the first page takes the thread, the others are refused.
  const work = (a.app as unknown as { work: { replay: WorkPool } }).work;
  const own = work.replay;
  const tiny = new WorkPool('replay', { queue: 0 });
  work.replay = tiny;
  t.teardown(async () => {
    work.replay = own;
    await tiny.close();
  });
  const answers = await Promise.all(Array.from({ length: 3 }, () => request(`${a.url}/current/memento/${TS}/http://${HOST}/styles.html`)));
  const busy = answers.filter((r) => r.status === 503);
  t.ok(busy.length >= 1, `${busy.length} of 3 refused`);
  t.equal(answers.filter((r) => r.status === 200).length + busy.length, 3, 'the others answered');
  t.equal(busy[0].headers['retry-after'], '5');
  t.match(busy[0].text, /the archive is rewriting other pages for replay just now; try again in a few seconds/);
  t.notMatch(busy[0].text, /url\(\/x\.png\)/, 'not the stored page');
  for (const r of answers.filter((x) => x.status === 200)) t.equal(r.text.split('/x.png').length - 1, PAGES.styles.urls, 'an answered one rewritten');
});
