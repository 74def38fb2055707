/**
 * The fast read path (bench/results.md, issue 14): index lookups of concurrent
 * requests answered together by one query, a read-only index connection
 * that sees every acknowledged capture, small WARC records read whole and
 * large (or highly compressible) ones streamed.
 */
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { byRel, formatHttpDate, links, partsOf, replayScript, seed, ts14 } from '../conformance/helpers.js';
import { captureRecord, putCapture, request, startArchive } from '../helpers/archive.js';

const DATES = ['Mon, 01 Jan 2001 00:00:00 GMT', 'Fri, 01 Jun 2001 12:00:00 GMT', 'Sat, 01 Dec 2001 00:00:00 GMT'];

t.test('concurrent TimeGate and Memento requests for many URI-Rs each get their own answer', async (t) => {
  const archive = await startArchive();
  t.teardown(() => archive.close());
  const uriRs = Array.from({ length: 12 }, (_, i) => `http://host${i}.example.org/page/${i}?q=${i}`);
  for (const u of uriRs) for (const d of DATES) await seed(archive, u, d);
  const uriM = (u: string, d: string) => `${archive.url}/2025/memento/${ts14(d)}/${u}`;

  // 12 URI-Rs × 4 instants, plus unknown URI-Rs, all at once: they share index queries.
  const asks: { u: string; at?: string; want?: number }[] = [];
  for (const u of uriRs) {
    asks.push({ u, want: 2 }); // no Accept-Datetime: the last
    asks.push({ u, at: 'Mon, 01 Jan 1990 00:00:00 GMT', want: 0 }); // before the first: the first
    asks.push({ u, at: 'Sat, 02 Jun 2001 00:00:00 GMT', want: 1 }); // nearest: the middle one
    asks.push({ u, at: DATES[2], want: 2 }); // exactly the last
  }
  for (let i = 0; i < 6; i++) asks.push({ u: `http://nowhere${i}.example.org/` });
  const answers = await Promise.all(asks.map((a) => request(`${archive.url}/2025/timegate/${a.u}`, { headers: a.at ? { 'accept-datetime': a.at } : {} })));
  for (const [i, a] of asks.entries()) {
    const res = answers[i];
    if (a.want === undefined) {
      t.equal(res.status, 404, `${a.u}: 404`);
      continue;
    }
    t.equal(res.status, 302, `${a.u} at ${a.at ?? 'now'}: 302`);
    t.equal(res.headers.location, uriM(a.u, DATES[a.want]), `${a.u} at ${a.at ?? 'now'}: its own memento`);
    const l = links(res.headers.link);
    t.equal(byRel(l, 'original')[0]?.uri, a.u, 'original');
    const first = l.find((x) => x.rel.split(' ').includes('first'));
    const last = l.find((x) => x.rel.split(' ').includes('last'));
    t.equal(first?.uri, uriM(a.u, DATES[0]), 'first');
    t.equal(first?.datetime, DATES[0]);
    t.equal(last?.uri, uriM(a.u, DATES[2]), 'last');
    // With 3 mementos, the selected one and its neighbours are all three, oldest first.
    t.same(
      l.filter((x) => x.rel.split(' ').includes('memento')).map((x) => x.uri),
      DATES.map((d) => uriM(a.u, d)),
      'memento links of its own URI-R',
    );
  }

  // Mementos of all of them at once: each its own body.
  const gets = await Promise.all(uriRs.flatMap((u) => DATES.map((d) => request(uriM(u, d)))));
  let k = 0;
  for (const u of uriRs) {
    for (const d of DATES) {
      const res = gets[k++];
      t.equal(res.status, 200);
      t.equal(res.headers['memento-datetime'], d);
      t.equal(res.text, `<html><head>${replayScript(archive.url, d)}<title>${d}</title></head><body>${u} at ${d}</body></html>`, `${u} at ${d}: its own body`);
    }
  }
});

t.test('a capture acknowledged after reads is seen by the next read (the read connection keeps no old snapshot)', async (t) => {
  const archive = await startArchive();
  t.teardown(() => archive.close());
  const u = 'http://www.example.org/news';
  await seed(archive, u, DATES[0]);
  // Every kind of read: TimeGate, TimeGate with Prefer (whole row by id), Memento, TimeMap.
  t.equal((await request(`${archive.url}/2025/timegate/${u}`)).status, 302);
  t.equal(
    (await request(`${archive.url}/2025/timegate/${u}`, { headers: { prefer: 'original-links' } })).headers['preference-applied'],
    'original-links, echo-original-headers',
  );
  t.equal((await request(`${archive.url}/2025/memento/${ts14(DATES[0])}/${u}`)).status, 200);
  t.equal((await request(`${archive.url}/2025/timemap/link/${u}`)).status, 200);
  await seed(archive, u, DATES[1]);
  const res = await request(`${archive.url}/2025/timegate/${u}`);
  t.equal(res.headers.location, `${archive.url}/2025/memento/${ts14(DATES[1])}/${u}`, 'the new memento is the last');
  const m = await request(`${archive.url}/2025/memento/${ts14(DATES[1])}/${u}`);
  t.equal(m.status, 200);
  t.equal(m.headers['memento-datetime'], DATES[1]);
});

t.test('large and highly compressible records stream and come back byte for byte', async (t) => {
  const archive = await startArchive();
  t.teardown(() => archive.close());
  const date = DATES[1];
  // > 1 MiB gzip member (random bytes do not compress): the streamed path.
  const big = randomBytes(1536 * 1024);
  // ~6 MiB that gzips to a few KiB: a small member that inflates past what is read whole.
  const html = Buffer.concat([Buffer.from('<html><head><title>x</title></head><body>'), Buffer.alloc(6 * 1024 * 1024, 'a'), Buffer.from('</body></html>')]);
  const cases = [
    { u: 'http://www.example.org/big.bin', body: big, type: 'application/octet-stream', want: big },
    {
      u: 'http://www.example.org/big.html',
      body: html,
      type: 'text/html',
      want: Buffer.concat([html.subarray(0, 12), Buffer.from('<base href="http://www.example.org/big.html">'), html.subarray(12)]),
    },
  ];
  for (const c of cases) {
    const put = await putCapture(archive, c.u, captureRecord({ ...partsOf(c.u), date, body: c.body, responseHeaders: [['Content-Type', c.type]] }));
    t.equal(put.status, 201);
    const res = await request(`${archive.url}/2025/memento/${ts14(date)}ol_/${c.u}`);
    t.equal(res.status, 200);
    t.equal(res.headers['content-length'], String(c.want.length), `${c.u}: exact Content-Length`);
    t.ok(res.body.equals(c.want), `${c.u}: the body`);
    if (c.type === 'text/html') {
      // The replay of a page this large is rewritten as it streams: chunked, no length.
      const replay = await request(`${archive.url}/2025/memento/${ts14(date)}/${c.u}`);
      t.equal(replay.headers['content-length'], undefined, `${c.u}: replay without Content-Length`);
      t.equal(replay.headers['transfer-encoding'], 'chunked');
      const script = Buffer.from(replayScript(archive.url, date));
      t.ok(replay.body.equals(Buffer.concat([html.subarray(0, 12), script, html.subarray(12)])), `${c.u}: the replay body`);
    }
    const raw = await request(`${archive.url}/2025/memento/${ts14(date)}id_/${c.u}`);
    t.ok(raw.body.equals(c.body), `${c.u}: the raw body is the stored bytes`);
  }
  t.equal(formatHttpDate(new Date(Date.parse(date))), date);
});
