/**
 * The read cache's one rule as a client sees it (archive/store/read-cache.ts):
 * reads and PUTs of the same URLs hammer a running archive at the same
 * time, and no answer begun after a PUT's 201 misses that memento: not the
 * TimeGate (without and with Accept-Datetime), not the TimeMap, not the
 * Memento (raw and replayed), not the previous Memento's `next` link, not
 * the redirector. Background readers keep loads of the same URLs in flight
 * across every commit, so that an answer read before a write and returned
 * after it would be caught if it were kept.
 */
import http from 'node:http';
import t from 'tap';
import { byRel, links, partsOf, ts14 } from '../../conformance/helpers.js';
import { captureRecord, putCapture, startArchive } from '../../helpers/archive.js';

/** GET over a kept-alive agent: status, headers, body text. */
function get(agent: http.Agent, url: string, headers: Record<string, string> = {}) {
  const u = new URL(url.replace(/^(http:\/\/[^/]+)(.*)$/, '$1'));
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }>((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path: url.slice(u.origin.length), headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

const URLS = ['http://www.example.org/a', 'http://www.example.org/b?x=1', 'http://Shop.Example.org:80/c', 'https://www.example.org/d'];
const CAPTURES = 25;

t.test('read cache never stale: no TimeGate, TimeMap or Memento begun after a PUT 201 misses that memento, under concurrent reads and writes', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  t.teardown(() => agent.destroy());
  const day = (i: number) => new Date(Date.UTC(2001, 0, 1 + i, 12)).toUTCString();
  const body = (u: string, i: number) => `<html><head></head><body>${u} capture ${i}</body></html>`;
  const put = (u: string, i: number) =>
    putCapture(a, u, captureRecord({ ...partsOf(u), date: day(i), body: body(u, i), responseHeaders: [['Content-Type', 'text/html']] }));
  // The URI-R as the archive normalises it (host lower case, default port dropped).
  const norm = (u: string) => new URL(u).href;
  const uriM = (u: string, i: number, mod = '') => `${a.url}/2025/memento/${ts14(day(i))}${mod}/${norm(u)}`;
  for (const u of URLS) t.equal((await put(u, 0)).status, 201);

  let stop = false;
  let background = 0;
  const bad: string[] = [];
  const reader = async (k: number) => {
    for (let n = 0; !stop; n++) {
      const u = URLS[(n + k) % URLS.length];
      const kind = n % 4;
      const res =
        kind === 0
          ? await get(agent, `${a.url}/2025/timegate/${u}`)
          : kind === 1
            ? await get(agent, `${a.url}/2025/timegate/${u}`, { 'accept-datetime': day((n * 7 + k) % (CAPTURES + 3)) })
            : kind === 2
              ? await get(agent, `${a.url}/2025/timemap/link/${u}`)
              : await get(agent, `${a.url}/2025/memento/${ts14(day(0))}id_/${u}`);
      if (![200, 302].includes(res.status)) bad.push(`${kind}: ${res.status} ${res.text}`);
      background++;
    }
  };
  const readers = Array.from({ length: 6 }, (_, k) => reader(k));

  const wrong: string[] = [];
  let acknowledged = 0;
  const writer = async (u: string) => {
    for (let i = 1; i <= CAPTURES; i++) {
      const res = await put(u, i);
      if (res.status !== 201) {
        wrong.push(`${u} ${i}: PUT ${res.status} ${res.text}`);
        continue;
      }
      acknowledged++;
      // Every read below begins after the 201.
      const [tg, tgAt, timemap, raw, replay, previous, redirector] = await Promise.all([
        get(agent, `${a.url}/2025/timegate/${u}`),
        get(agent, `${a.url}/2025/timegate/${u}`, { 'accept-datetime': day(i) }),
        get(agent, `${a.url}/2025/timemap/link/${u}`),
        get(agent, uriM(u, i, 'id_')),
        get(agent, uriM(u, i)),
        get(agent, uriM(u, i - 1, 'id_')),
        get(agent, `${a.url}/tg/${u}`),
      ]);
      const want = uriM(u, i);
      if (tg.headers.location !== want) wrong.push(`${u} ${i}: TimeGate → ${tg.headers.location}`);
      if (tgAt.headers.location !== want) wrong.push(`${u} ${i}: TimeGate at its datetime → ${tgAt.headers.location}`);
      if (!timemap.text.includes(`<${want}>`)) wrong.push(`${u} ${i}: TimeMap without it`);
      if (raw.status !== 200 || raw.text !== body(u, i)) wrong.push(`${u} ${i}: Memento id_ ${raw.status} ${raw.text.slice(0, 80)}`);
      if (replay.status !== 200 || !replay.text.includes(`capture ${i}<`)) wrong.push(`${u} ${i}: Memento ${replay.status}`);
      if (byRel(links(previous.headers.link), 'next last memento')[0]?.uri !== uriM(u, i, 'id_'))
        wrong.push(`${u} ${i}: the previous Memento's next link ${previous.headers.link}`);
      if (!String(redirector.headers.link).includes(`<${want}>`)) wrong.push(`${u} ${i}: redirector without it`);
    }
  };
  await Promise.all(URLS.map(writer));
  stop = true;
  await Promise.all(readers);
  t.equal(acknowledged, URLS.length * CAPTURES, 'every PUT acknowledged');
  t.same(wrong, [], 'every answer begun after a 201 had that memento');
  t.same(bad, [], 'every background read was answered');
  const s = a.store.index.cache.stats;
  t.comment(`${background} background reads; read cache: ${s.hits} hits, ${s.misses} loads, ${s.invalidated} views dropped, ${s.discarded} loads not kept`);
  t.ok(s.hits > 0 && s.invalidated > 0, 'the cache served, and writes dropped views');
});
