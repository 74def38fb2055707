/**
 * Whole answers kept with the cached neighbourhood (archive/read/kept-answers.ts):
 * a TimeGate's 302 and a Memento's 200 are made once and written again for
 * the next request that asks the same. As a client sees it: the kept answer
 * is the made one (status, every header in the same case, body
 * bytes); a new capture and a change of the access rules each show in the
 * next read, a refused capture of the same second changes nothing; HEAD and GET, Prefer, Host,
 * Accept-Datetime each get their own answer.
 */
import http from 'node:http';
import t from 'tap';
import { byRel, epoch, links, partsOf, seed, ts14 } from '../conformance/helpers.js';
import { captureRecord, putCapture, request, startArchive } from '../helpers/archive.js';

const DATES = ['Mon, 01 Jan 2001 00:00:00 GMT', 'Fri, 01 Jun 2001 12:00:00 GMT', 'Sat, 01 Dec 2001 00:00:00 GMT'];

/** An answer with its header lines as sent (name case and order), and its body. */
interface Raw {
  status: number;
  lines: [string, string][];
  body: Buffer;
}

function raw(url: string, opts: { method?: string; headers?: Record<string, string> } = {}): Promise<Raw> {
  const u = new URL(url.replace(/^(http:\/\/[^/]+)(.*)$/, '$1'));
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: u.hostname, port: u.port, method: opts.method ?? 'GET', path: url.slice(u.origin.length), headers: opts.headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const lines: [string, string][] = [];
          for (let i = 0; i < res.rawHeaders.length; i += 2) lines.push([res.rawHeaders[i], res.rawHeaders[i + 1]]);
          resolve({ status: res.statusCode!, lines, body: Buffer.concat(chunks) });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** The header lines but those of the moment and the connection. */
const stable = (r: Raw) => r.lines.filter(([k]) => !/^(date|connection|keep-alive)$/i.test(k));

t.test('a kept answer is the made one: status, header lines in registered case, body; for every form, the TimeGate, and HEAD', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const u = 'http://www.example.org/kept?x=1';
  for (const d of DATES) await seed(a, u, d);
  const uriM = (mod: string) => `${a.url}/2025/memento/${ts14(DATES[1])}${mod}/${u}`;
  const urls: [string, Record<string, string>][] = [
    [uriM('id_'), {}],
    [uriM('ol_'), {}],
    [uriM(''), {}],
    [uriM(''), { prefer: 'original-content' }],
    [`${a.url}/2025/timegate/${u}`, {}],
    [`${a.url}/2025/timegate/${u}`, { 'accept-datetime': DATES[0] }],
    [`${a.url}/2025/timegate/${u}`, { prefer: 'original-links' }],
  ];
  for (const [url, headers] of urls) {
    const made = await raw(url, { headers });
    const kept = await raw(url, { headers });
    const what = `${url} ${JSON.stringify(headers)}`;
    t.ok([200, 302].includes(made.status), `${what}: ${made.status}`);
    t.equal(kept.status, made.status, `${what}: same status`);
    t.same(stable(kept), stable(made), `${what}: the same header lines, in the same case and order`);
    t.ok(kept.body.equals(made.body), `${what}: the same body bytes`);
    t.equal(Number(kept.lines.find(([k]) => k.toLowerCase() === 'content-length')?.[1]), kept.body.length, `${what}: Content-Length is the body's`);
    t.ok(
      kept.lines.some(([k]) => k === 'Link'),
      `${what}: Link, as registered`,
    );
    const head = await raw(url, { method: 'HEAD', headers });
    t.equal(head.status, made.status);
    t.same(stable(head), stable(made), `${what}: HEAD has the GET's header lines`);
    t.equal(head.body.length, 0, `${what}: HEAD has no body`);
  }
  t.ok(a.store.index.cache.stats.hits > 0, 'the neighbourhoods came from the cache');
});

t.test('HEAD first: the answer it leaves gives a GET its body', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const u = 'http://www.example.org/head-first';
  await seed(a, u, DATES[0]);
  const uriM = `${a.url}/2025/memento/${ts14(DATES[0])}id_/${u}`;
  for (let i = 0; i < 3; i++) t.equal((await request(uriM, { method: 'HEAD' })).body.length, 0);
  const get = await request(uriM);
  t.equal(get.status, 200);
  t.equal(get.text, `<html><head><title>${DATES[0]}</title></head><body>${u} at ${DATES[0]}</body></html>`, 'the stored body');
  t.equal(get.headers['content-length'], String(get.body.length));
});

t.test('a new capture shows in the next read of a kept answer; a refused capture of the same second changes nothing', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const u = 'http://www.example.org/changing';
  const put = (date: string, body: string) =>
    putCapture(
      a,
      u,
      captureRecord({
        ...partsOf(u),
        date,
        body,
        responseHeaders: [
          ['Content-Type', 'text/html'],
          ['X-Version', body],
        ],
      }),
    );
  t.equal((await put(DATES[0], 'one')).status, 201);
  const uriM = (d: string, mod = 'id_') => `${a.url}/2025/memento/${ts14(d)}${mod}/${u}`;
  const tg = () => request(`${a.url}/2025/timegate/${u}`);
  for (let i = 0; i < 3; i++) {
    t.equal((await request(uriM(DATES[0]))).text, 'one');
    t.equal((await tg()).headers.location, uriM(DATES[0], ''));
  }
  t.equal((await put(DATES[0], 'one, again')).status, 409, 'a different capture of the same second is refused');
  const kept = await request(uriM(DATES[0]));
  t.equal(kept.text, 'one', 'the stored body');
  t.equal(kept.headers['content-length'], String('one'.length), 'its length');
  t.equal(kept.headers['x-archive-orig-x-version'], 'one', 'its stored headers');
  t.equal((await request(uriM(DATES[0]), { method: 'HEAD' })).headers['x-archive-orig-x-version'], 'one', 'HEAD too');

  for (let i = 0; i < 2; i++) await request(uriM(DATES[0]));
  t.equal((await put(DATES[2], 'three')).status, 201);
  const m = await request(uriM(DATES[0]));
  t.equal(byRel(links(m.headers.link), 'next last memento')[0]?.uri, uriM(DATES[2]), 'the kept Memento names the new one next and last');
  t.equal((await tg()).headers.location, uriM(DATES[2], ''), 'the TimeGate chooses it');
  t.equal((await request(uriM(DATES[2]))).text, 'three');
});

t.test('access rules apply to kept answers at once (what SIGHUP does), and kept answers serve again when the rules go', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const u = 'http://www.example.org/ruled-kept';
  for (const d of DATES) await seed(a, u, d);
  const uriM = (d: string, mod = '') => `${a.url}/2025/memento/${ts14(d)}${mod}/${u}`;
  const tg = () => request(`${a.url}/2025/timegate/${u}`);
  for (let i = 0; i < 3; i++) {
    t.equal((await request(uriM(DATES[2], 'id_'))).status, 200);
    t.equal((await tg()).headers.location, uriM(DATES[2]));
  }
  await a.app.visible.replaceRules([{ url: u, action: 'block', after: epoch(DATES[1]) + 1 }]);
  t.equal((await request(uriM(DATES[2], 'id_'))).status, 451, 'the kept Memento is blocked');
  t.equal((await request(uriM(DATES[2], 'id_'), { method: 'HEAD' })).status, 451, 'HEAD too');
  const tgBlocked = await tg();
  t.equal(tgBlocked.headers.location, uriM(DATES[1]), 'the TimeGate chooses the newest shown');
  t.notMatch(String(tgBlocked.headers.link), ts14(DATES[2]), 'and links to none blocked');
  const m1 = await request(uriM(DATES[1], 'id_'));
  t.notMatch(String(m1.headers.link), ts14(DATES[2]), "the middle one's Link leaves the blocked one out");
  await a.app.visible.replaceRules([{ url: u, action: 'exclude' }]);
  t.equal((await request(uriM(DATES[0], 'id_'))).status, 404, 'excluded: 404');
  t.equal((await tg()).status, 404);
  await a.app.visible.replaceRules([]);
  t.equal((await request(uriM(DATES[2], 'id_'))).status, 200, 'rules gone: shown');
  t.equal((await tg()).headers.location, uriM(DATES[2]));
});

t.test('one cached neighbourhood, many answers: Prefer, Host, Accept-Datetime each get their own', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const u = 'http://www.example.org/variants';
  for (const d of DATES) await seed(a, u, d);
  const uriM = (base: string, d: string, mod = '') => `${base}/2025/memento/${ts14(d)}${mod}/${u}`;
  const get = (url: string, headers: Record<string, string> = {}) => request(url, { headers });
  const check = async (round: number) => {
    const at = `(${round ? 'kept' : 'made'})`;
    const replay = await get(uriM(a.url, DATES[1]));
    t.equal(replay.headers['preference-applied'], 'echo-original-headers', `the replay (its script inserted) ${at}`);
    t.equal(replay.headers['content-location'], uriM(a.url, DATES[1]));
    const rawPrefer = await get(uriM(a.url, DATES[1]), { prefer: 'raw' });
    t.equal(rawPrefer.headers['content-location'], uriM(a.url, DATES[1], 'id_'), `Prefer: raw gets the raw form ${at}`);
    t.match(rawPrefer.headers['preference-applied'], /\braw$/, 'and says raw');
    const content = await get(uriM(a.url, DATES[1]), { prefer: 'original-content' });
    t.equal(content.headers['content-location'], uriM(a.url, DATES[1], 'id_'));
    t.notMatch(content.headers['preference-applied'], /\braw\b/, 'original-content does not say raw');
    t.equal(content.text, `<html><head><title>${DATES[1]}</title></head><body>${u} at ${DATES[1]}</body></html>`, 'the stored bytes');
    const other = await get(uriM(a.url, DATES[1], 'id_'), { host: 'archive.example.net' });
    t.equal(other.headers['content-location'], uriM('http://archive.example.net', DATES[1], 'id_'), `another Host: its base ${at}`);
    t.equal(byRel(links(other.headers.link), 'timegate')[0]?.uri, `http://archive.example.net/2025/timegate/${u}`);
    const mine = await get(uriM(a.url, DATES[1], 'id_'));
    t.equal(byRel(links(mine.headers.link), 'timegate')[0]?.uri, `${a.url}/2025/timegate/${u}`, `this Host: its own base ${at}`);
    const tg = (headers: Record<string, string>) => get(`${a.url}/2025/timegate/${u}`, headers);
    const plain = await tg({});
    t.equal(plain.headers.location, uriM(a.url, DATES[2]), `TimeGate ${at}`);
    t.notOk(plain.headers['preference-applied'], 'no Prefer, no Preference-Applied');
    const tgRaw = await tg({ prefer: 'original-content' });
    t.equal(tgRaw.headers.location, uriM(a.url, DATES[2], 'id_'), `TimeGate, Prefer: original-content ${at}`);
    t.equal(tgRaw.headers['preference-applied'], 'original-content, original-links, echo-original-headers');
    const tgRewritten = await tg({ prefer: 'rewritten' });
    t.equal(tgRewritten.headers.location, uriM(a.url, DATES[2]));
    t.match(tgRewritten.headers['preference-applied'], /\brewritten$/, `TimeGate, Prefer: rewritten ${at}`);
    const earlier = await tg({ 'accept-datetime': DATES[1] });
    t.equal(earlier.headers.location, uriM(a.url, DATES[1]), `TimeGate, Accept-Datetime ${at}`);
    t.equal(
      byRel(links(earlier.headers.link), 'prev memento')[0]?.uri ?? byRel(links(earlier.headers.link), 'first prev memento')[0]?.uri,
      uriM(a.url, DATES[0]),
    );
    const otherTg = await get(`${a.url}/2025/timegate/${u}`, { host: 'archive.example.net' });
    t.equal(otherTg.headers.location, uriM('http://archive.example.net', DATES[2]), `TimeGate, another Host ${at}`);
  };
  for (let round = 0; round < 3; round++) await check(round);
});

t.test('kept answers count in the index cache, which stays within its bytes', async (t) => {
  // Without the record cache, an id_ answer holds its body itself.
  const a = await startArchive(`index_cache_bytes: 2000000\nrecord_cache_bytes: 0\narchives:\n  - id: "2025"\n`);
  t.teardown(() => a.close());
  const page = (i: number) => `<html><body>${i} ${'x'.repeat(30_000)}</body></html>`;
  const uriM = (i: number) => `${a.url}/2025/memento/${ts14(DATES[0])}id_/http://www.example.org/many/${i}`;
  const n = 100;
  for (let i = 0; i < n; i++) await seed(a, `http://www.example.org/many/${i}`, DATES[0], { body: page(i) });
  for (let i = 0; i < 20; i++) for (let k = 0; k < 3; k++) await request(uriM(i));
  t.ok(a.store.index.cache.bytes > 20 * 30_000, `each kept answer counts its 30 KB body (${a.store.index.cache.bytes} bytes for 20)`);
  for (let i = 20; i < n; i++) for (let k = 0; k < 3; k++) t.equal((await request(uriM(i))).text, page(i));
  t.ok(a.store.index.cache.bytes <= 2_000_000, `${n} × 30 KB: within index_cache_bytes (${a.store.index.cache.bytes})`);
  t.equal((await request(uriM(3))).text, page(3), 'an evicted answer is made again');
});

t.test('an answer whose body the record cache holds finds it there, and is made again once the record cache let it go', async (t) => {
  const a = await startArchive(`record_cache_bytes: 100000\narchives:\n  - id: "2025"\n`);
  t.teardown(() => a.close());
  const page = (i: number) => `<html><body>${i} ${'y'.repeat(30_000)}</body></html>`;
  const uriM = (i: number) => `${a.url}/2025/memento/${ts14(DATES[0])}id_/http://www.example.org/small/${i}`;
  for (let i = 0; i < 10; i++) await seed(a, `http://www.example.org/small/${i}`, DATES[0], { body: page(i) });
  for (let k = 0; k < 3; k++) t.equal((await request(uriM(0))).text, page(0));
  t.ok(a.store.index.cache.bytes < 30_000, `the kept answer does not count the body the record cache holds (${a.store.index.cache.bytes} bytes)`);
  for (let i = 1; i < 10; i++) await request(uriM(i));
  const again = await request(uriM(0));
  t.equal(again.text, page(0), 'the record cache let it go (3 of 30 KB fit): the answer is made again, whole');
  t.equal(again.headers['content-length'], String(page(0).length));
  t.equal((await request(uriM(0), { method: 'HEAD' })).headers['content-length'], String(page(0).length), 'HEAD too');
});
