/**
 * The read caches of a running archive (archive/store/read-cache.ts for
 * index answers, archive/store/warcs/record-cache.ts for hot small records), as
 * a client sees them: a capture answered 201 is in every read that starts
 * after the answer, with the caches warm; a refused capture of the same
 * second changes the memento nowhere; access rules still apply; concurrent
 * reads and writes never show the archive as it was before an
 * acknowledged capture; the caches stay within their bytes.
 */
import http from 'node:http';
import t from 'tap';
import { byRel, epoch, links, partsOf, seed, ts14 } from '../conformance/helpers.js';
import { type Answer, captureRecord, putCapture, request, startArchive, TWO_ARCHIVES } from '../helpers/archive.js';

const DATES = ['Mon, 01 Jan 2001 00:00:00 GMT', 'Fri, 01 Jun 2001 12:00:00 GMT', 'Sat, 01 Dec 2001 00:00:00 GMT'];
const NEW_ARCHIVE_DATE = 'Thu, 01 Jan 2026 10:00:00 GMT';

t.test('with the caches warm, every read sees a capture as soon as its PUT is answered', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const u = 'http://www.example.org/news?page=1';
  const uriM = (d: string, mod = '', id = '2025') => `${a.url}/${id}/memento/${ts14(d)}${mod}/${u}`;
  await seed(a, u, DATES[0]);
  const reads = {
    timegate: () => request(`${a.url}/2025/timegate/${u}`),
    timegateAt: () => request(`${a.url}/2025/timegate/${u}`, { headers: { 'accept-datetime': DATES[2] } }),
    memento: () => request(uriM(DATES[0])),
    raw: () => request(uriM(DATES[0], 'id_')),
    timemap: () => request(`${a.url}/2025/timemap/link/${u}`),
    redirector: () => request(`${a.url}/tg/${u}`),
    indexTimemap: () => request(`${a.url}/tg/timemap/${u}`),
  };
  for (let i = 0; i < 2; i++) for (const read of Object.values(reads)) t.ok([200, 302].includes((await read()).status));
  const { hits } = a.store.index.cache.stats;
  for (const read of Object.values(reads)) await read();
  t.ok(a.store.index.cache.stats.hits > hits, 'warm: the index answers come from the cache');
  t.ok(a.store.recordCache.stats.hits > 0, 'warm: the record comes from the cache');
  const metrics = (await request(`${a.url}/metrics`)).text;
  for (const cache of ['index', 'record']) {
    const hit = Number(new RegExp(`^memento_archive_read_cache_lookups_total\\{cache="${cache}",result="hit"\\} (\\d+)`, 'm').exec(metrics)?.[1]);
    const bytes = Number(new RegExp(`^memento_archive_read_cache_bytes\\{cache="${cache}"\\} (\\d+)`, 'm').exec(metrics)?.[1]);
    t.ok(hit > 0 && bytes > 0, `/metrics: ${cache} cache ${hit} hits, ${bytes} bytes`);
  }

  await seed(a, u, DATES[1]);
  t.equal((await reads.timegate()).headers.location, uriM(DATES[1]), 'TimeGate: the new memento is the last');
  t.equal((await reads.timegateAt()).headers.location, uriM(DATES[1]), 'TimeGate with Accept-Datetime after it: the new one');
  const m = await reads.raw();
  t.equal(byRel(links(m.headers.link), 'next last memento')[0]?.uri, uriM(DATES[1], 'id_'), 'Memento: its next and last link names the new one');
  t.match((await reads.timemap()).text, `<${uriM(DATES[1])}>`, 'TimeMap lists it');
  t.match((await reads.indexTimemap()).text, `<${uriM(DATES[1])}>`, 'index TimeMap lists it');
  const r = await reads.redirector();
  t.equal(
    byRel(links(r.headers.link), 'last memento')[0]?.uri ?? byRel(links(r.headers.link), 'next last memento')[0]?.uri,
    uriM(DATES[1]),
    'redirector: last',
  );

  // A first capture in the other archive: the redirector (its holdings were cached) now sends clients there.
  await seed(a, u, NEW_ARCHIVE_DATE);
  const r2 = await reads.redirector();
  t.equal(r2.headers.location, `${a.url}/current/timegate/${u}`, 'redirector: the newest archive that has the URL');
  t.equal((await request(`${a.url}/current/timegate/${u}`)).headers.location, uriM(NEW_ARCHIVE_DATE, '', 'current'));
  const before = await request(`${a.url}/tg/${u}`, { headers: { 'accept-datetime': DATES[1] } });
  t.equal(before.headers.location, `${a.url}/2025/timegate/${u}`, 'Accept-Datetime in 2001: still the 2025 archive');
});

t.test('a refused capture of the same second leaves the memento as it is in every read, cached or not', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const u = 'http://www.example.org/same-second';
  const put = (body: string) => putCapture(a, u, captureRecord({ ...partsOf(u), date: DATES[0], body, responseHeaders: [['Content-Type', 'text/html']] }));
  t.equal((await put('<html><head></head><body>first</body></html>')).status, 201);
  const uriM = (mod: string) => `${a.url}/2025/memento/${ts14(DATES[0])}${mod}/${u}`;
  for (let i = 0; i < 2; i++) {
    t.equal((await request(uriM('id_'))).text, '<html><head></head><body>first</body></html>');
    t.match((await request(uriM('ol_'))).text, /<base href="[^"]+">.*first/);
    t.equal((await request(`${a.url}/2025/timegate/${u}`)).headers.location, uriM(''));
  }
  t.ok(a.store.recordCache.size > 0, 'the record is cached');
  // The original-links form added a base element to the cached body's copy, not to the cached body.
  t.equal((await request(uriM('id_'))).text, '<html><head></head><body>first</body></html>', 'the cached bytes are unchanged');

  t.equal((await put('<html><head></head><body>second</body></html>')).status, 409, 'a different capture, same second: refused');
  t.equal((await request(uriM('id_'))).text, '<html><head></head><body>first</body></html>', 'id_: the stored capture');
  t.match((await request(uriM(''))).text, /first/, 'replay: the stored capture');
  t.match((await request(uriM('ol_'))).text, /first/, 'original links: the stored capture');
  t.equal((await request(`${a.url}/2025/timegate/${u}`)).headers.location, uriM(''), 'still one URI-M');
  const tm = (await request(`${a.url}/2025/timemap/link/${u}`)).text;
  t.equal(tm.match(/rel="[^"]*memento[^"]*"/g)?.length, 1, 'one memento in the TimeMap');
});

t.test('access rules apply on top of a warm cache, and the cache serves again once they go', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const u = 'http://www.example.org/ruled';
  for (const d of DATES) await seed(a, u, d);
  const uriM = (d: string) => `${a.url}/2025/memento/${ts14(d)}/${u}`;
  const tg = (at?: string) => request(`${a.url}/2025/timegate/${u}`, { headers: at ? { 'accept-datetime': at } : {} });
  for (let i = 0; i < 2; i++) {
    t.equal((await tg()).headers.location, uriM(DATES[2]));
    t.equal((await tg(DATES[1])).headers.location, uriM(DATES[1]));
    t.equal((await request(uriM(DATES[2]))).status, 200);
  }
  // Block the newest (mementos at or after the middle of the year).
  await a.app.visible.replaceRules([{ url: u, action: 'block', after: epoch(DATES[1]) + 1 }]);
  t.equal((await tg()).headers.location, uriM(DATES[1]), 'TimeGate: the newest shown memento');
  t.equal((await request(uriM(DATES[2]))).status, 451, 'the blocked memento: 451');
  t.notMatch((await request(`${a.url}/2025/timemap/link/${u}`)).text, ts14(DATES[2]), 'TimeMap leaves it out');
  t.equal((await request(`${a.url}/tg/${u}`)).headers.location, `${a.url}/2025/timegate/${u}`);
  t.notMatch(String((await request(`${a.url}/tg/${u}`)).headers.link), ts14(DATES[2]), 'redirector links leave it out');
  await a.app.visible.replaceRules([{ url: u, action: 'exclude' }]);
  t.equal((await tg()).status, 404, 'excluded: 404');
  t.equal((await request(`${a.url}/tg/${u}`)).status, 404, 'redirector: 404');
  t.equal((await request(uriM(DATES[0]))).status, 404, 'Memento: 404');
  await a.app.visible.replaceRules([]);
  const { hits } = a.store.index.cache.stats;
  t.equal((await tg()).headers.location, uriM(DATES[2]), 'rules gone: the newest again');
  t.equal((await request(uriM(DATES[2]))).status, 200);
  t.ok(a.store.index.cache.stats.hits > hits, 'from the cache');
});

t.test('the Link values kept with a cached neighbourhood follow the request: its Host, form, chosen memento', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const u = 'http://www.example.org/linked';
  for (const d of DATES) await seed(a, u, d);
  const tg = (headers: Record<string, string> = {}) => request(`${a.url}/2025/timegate/${u}`, { headers });
  const mementoLinks = (res: Answer) =>
    links(res.headers.link)
      .filter((l) => l.rel.split(' ').includes('memento'))
      .map((l) => l.uri);
  const uriM = (base: string, d: string, mod = '') => `${base}/2025/memento/${ts14(d)}${mod}/${u}`;
  for (let i = 0; i < 2; i++) {
    t.same(
      mementoLinks(await tg()),
      DATES.map((d) => uriM(a.url, d)),
      `Host as given (${i ? 'kept' : 'made'})`,
    );
    const other = await tg({ host: 'archive.example.net' });
    t.same(
      mementoLinks(other),
      DATES.map((d) => uriM('http://archive.example.net', d)),
      'another Host: its own base',
    );
    t.equal(byRel(links(other.headers.link), 'original')[0]?.uri, u);
    t.same(
      mementoLinks(await tg({ prefer: 'original-content' })),
      DATES.map((d) => uriM(a.url, d, 'id_')),
      'Prefer: the raw URI-Ms',
    );
    const first = await tg({ 'accept-datetime': DATES[0] });
    t.equal(first.headers.location, uriM(a.url, DATES[0]), 'another instant: another memento');
    t.equal(byRel(links(first.headers.link), 'first memento')[0]?.uri, uriM(a.url, DATES[0]));
    const raw = await request(uriM(a.url, DATES[1], 'id_'));
    const ol = await request(uriM(a.url, DATES[1], 'ol_'));
    t.same(
      mementoLinks(raw),
      DATES.map((d) => uriM(a.url, d, 'id_')),
      'id_ Memento: id_ links',
    );
    t.same(
      mementoLinks(ol),
      DATES.map((d) => uriM(a.url, d, 'ol_')),
      'ol_ Memento: ol_ links',
    );
    const r = await request(`${a.url}/tg/${u}`, { headers: { host: 'archive.example.net' } });
    t.equal(r.headers.location, `http://archive.example.net/2025/timegate/${u}`, 'redirector: another Host');
    t.same(mementoLinks(r).slice(-1), [uriM('http://archive.example.net', DATES[2])]);
  }
});

/** A GET on a keep-alive agent (the background readers' many requests). */
function get(agent: http.Agent, url: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        resolve({ status: res.statusCode!, headers: res.headers, body, text: body.toString() });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

t.test('concurrent reads and writes: no read that starts after a 201 misses that capture', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  t.teardown(() => agent.destroy());
  const u = 'http://www.example.org/busy';
  const day = (i: number) => new Date(Date.UTC(2001, 0, 1 + i)).toUTCString();
  const body = (i: number) => `<html><head></head><body>capture ${i}</body></html>`;
  const capture = (i: number) =>
    putCapture(a, u, captureRecord({ ...partsOf(u), date: day(i), body: body(i), responseHeaders: [['Content-Type', 'text/html']] }));
  t.equal((await capture(0)).status, 201);
  // Readers that keep lookups in flight across every commit: TimeGates at many instants, Mementos, redirects.
  let stop = false;
  let background = 0;
  const bad: string[] = [];
  const reader = async (k: number) => {
    for (let n = 0; !stop; n++) {
      const at = day((n * 7 + k) % 40);
      const res = await get(agent, `${a.url}/2025/timegate/${u}`, n % 2 ? { 'accept-datetime': at } : {});
      if (res.status !== 302) bad.push(`TimeGate ${res.status}`);
      background++;
    }
  };
  const readers = Array.from({ length: 6 }, (_, k) => reader(k));
  const wrong: string[] = [];
  for (let i = 1; i <= 30; i++) {
    t.equal((await capture(i)).status, 201, `capture ${i}: 201`);
    const [tg, tgAt, raw, neighbour, redirect] = await Promise.all([
      get(agent, `${a.url}/2025/timegate/${u}`),
      get(agent, `${a.url}/2025/timegate/${u}`, { 'accept-datetime': day(i + 5) }),
      get(agent, `${a.url}/2025/memento/${ts14(day(i))}id_/${u}`),
      get(agent, `${a.url}/2025/memento/${ts14(day(i - 1))}id_/${u}`),
      get(agent, `${a.url}/tg/${u}`),
    ]);
    const want = `${a.url}/2025/memento/${ts14(day(i))}/${u}`;
    if (tg.headers.location !== want) wrong.push(`${i}: TimeGate ${tg.headers.location}`);
    if (tgAt.headers.location !== want) wrong.push(`${i}: TimeGate at a later instant ${tgAt.headers.location}`);
    if (raw.text !== body(i)) wrong.push(`${i}: Memento ${raw.status} ${raw.text}`);
    if (byRel(links(neighbour.headers.link), 'next last memento')[0]?.uri !== want.replace(`${ts14(day(i))}/`, `${ts14(day(i))}id_/`))
      wrong.push(`${i}: the previous Memento's next link ${neighbour.headers.link}`);
    if (!String(redirect.headers.link).includes(want)) wrong.push(`${i}: redirector links ${redirect.headers.link}`);
  }
  stop = true;
  await Promise.all(readers);
  t.same(wrong, [], 'every read after a 201 saw that capture');
  t.same(bad, [], 'every background read was answered');
  const s = a.store.index.cache.stats;
  t.comment(
    `${background} background reads; index cache: ${s.hits} hits, ${s.misses} misses, ${s.discarded} answers not kept (a commit came while they were asked)`,
  );
  t.ok(s.hits > 0, 'the cache served');
});

t.test('the caches stay within their configured bytes; large records are not kept', async (t) => {
  const a = await startArchive(`${TWO_ARCHIVES}index_cache_bytes: 20000\nrecord_cache_bytes: 40000\n`);
  t.teardown(() => a.close());
  const urls = Array.from({ length: 30 }, (_, i) => `http://host${i}.example.org/page`);
  const page = (i: number) => `<html><body>${String(i).repeat(3000)}</body></html>`;
  for (const [i, u] of urls.entries())
    t.equal(
      (await putCapture(a, u, captureRecord({ ...partsOf(u), date: DATES[0], body: page(i), responseHeaders: [['Content-Type', 'text/html']] }))).status,
      201,
    );
  let maxIndex = 0;
  let maxRecords = 0;
  const wrong: string[] = [];
  for (let pass = 0; pass < 2; pass++) {
    for (const [i, u] of urls.entries()) {
      const tg = await request(`${a.url}/2025/timegate/${u}`);
      if (tg.headers.location !== `${a.url}/2025/memento/${ts14(DATES[0])}/${u}`) wrong.push(`TimeGate ${u}`);
      if ((await request(`${a.url}/2025/memento/${ts14(DATES[0])}id_/${u}`)).text !== page(i)) wrong.push(`Memento ${u}`);
      maxIndex = Math.max(maxIndex, a.store.index.cache.bytes);
      maxRecords = Math.max(maxRecords, a.store.recordCache.bytes);
    }
  }
  t.same(wrong, [], 'every answer right');
  t.ok(maxIndex > 0 && maxIndex <= 20000, `index cache: at most ${maxIndex} of 20000 bytes`);
  t.ok(maxRecords > 0 && maxRecords <= 40000, `record cache: at most ${maxRecords} of 40000 bytes`);
  t.ok(a.store.recordCache.size < urls.length, `${a.store.recordCache.size} of ${urls.length} records kept`);

  const big = 'http://www.example.org/big';
  const bigBody = 'x'.repeat(100 * 1024);
  await putCapture(a, big, captureRecord({ ...partsOf(big), date: DATES[0], body: bigBody, responseHeaders: [['Content-Type', 'text/plain']] }));
  // The full-text indexer reads the new record once, after the PUT is answered: not a read of the Memento's.
  await a.app.textIndexer.drained();
  const { misses } = a.store.recordCache.stats;
  for (let i = 0; i < 2; i++) t.equal((await request(`${a.url}/2025/memento/${ts14(DATES[0])}id_/${big}`)).text, bigBody);
  t.equal(a.store.recordCache.stats.misses, misses + 2, 'a record of more than 64 KiB is read each time');
});
