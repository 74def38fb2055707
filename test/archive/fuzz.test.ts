/**
 * Issue 5, part 5: fuzzing the capture PUT with random mutations of valid
 * records (seeded, a bounded count: FUZZ_COUNT, default 300). Promises:
 * never a 5xx, never a crash; a 4xx stores nothing; a 2xx only for a record
 * that is still a valid one, and then the memento serves exactly the body
 * that followed the record's second blank line; at the end the index and
 * the WARC files agree.
 */

import net from 'node:net';
import t from 'tap';
import { verify } from '../../archive/store/upkeep/maintenance.js';
import { request, startArchive } from '../helpers/archive.js';
import { prng, warcBytes } from './helpers.js';

const COUNT = Number(process.env.FUZZ_COUNT ?? 300);
const SEED = Number(process.env.FUZZ_SEED ?? 5);

/** Sends a PUT with `body` (Content-Length or chunked framing) and reads status + body; null when the server closed without an answer. */
function send(port: number, body: Buffer, chunked: boolean): Promise<{ status: number | null; text: string }> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => reject(new Error('no answer within 10 s')), 10_000);
    s.on('data', (d) => chunks.push(d));
    s.on('error', () => undefined);
    s.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('latin1');
      const m = /^HTTP\/1\.1 (\d{3})[^\r\n]*\r\n[\s\S]*?\r\n\r\n([\s\S]*)$/.exec(text);
      resolve({ status: m ? Number(m[1]) : null, text: m ? m[2] : text });
    });
    const head = `PUT /put/fuzz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n${chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${body.length}`}\r\n\r\n`;
    const framed = chunked ? Buffer.concat([Buffer.from(body.length.toString(16) + '\r\n'), body, Buffer.from('\r\n0\r\n\r\n')]) : body;
    s.on('connect', () => s.write(Buffer.concat([Buffer.from(head), body.length || !chunked ? framed : Buffer.from('0\r\n\r\n')])));
  });
}

const TOKENS = [
  '\0',
  '\r',
  '\n',
  '\r\n',
  ':',
  ' ',
  '\t',
  '%00',
  '..',
  '/',
  '\xff',
  '\xe9',
  'HTTP/1.1',
  'Host: evil.example\r\n',
  '99999999',
  '-1',
  '\r\n\r\n',
  'Transfer-Encoding: chunked\r\n',
  'Date: Sat, 01 Jan 0000 00:00:00 GMT\r\n',
];

t.test(`${COUNT} random mutations of valid capture records (seed ${SEED})`, async (t) => {
  const rnd = prng(SEED);
  const a = await startArchive();
  t.teardown(() => a.close());
  const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)];
  const valid = (i: number) => {
    const body = Buffer.from(`<html><body>fuzz ${i} ${'x'.repeat(Math.floor(rnd() * 300))}</body></html>`);
    const head =
      `GET /f/${i % 17}?q=${i} HTTP/1.1\r\nHost: www.example.org\r\nUser-Agent: fuzz\r\nX-Client-IP: 192.0.2.${i % 250}\r\n\r\n` +
      `HTTP/1.1 ${pick([200, 200, 301, 404])} Whatever\r\nDate: ${pick(['Mon, 05 Jan 2026 10:00:00 GMT', 'Mon, 05 May 2025 10:00:00 GMT'])}\r\nContent-Type: text/html\r\nContent-Length: ${body.length}\r\n\r\n`;
    return Buffer.concat([Buffer.from(head, 'latin1'), body]);
  };
  const mutate = (b: Buffer): Buffer => {
    const n = 1 + Math.floor(rnd() * 3);
    for (let k = 0; k < n; k++) {
      // Mostly in the heads, where the parser works.
      const headEnd = Math.max(1, b.indexOf('\r\n\r\n', b.indexOf('\r\n\r\n') + 4) + 4);
      const at = Math.floor(rnd() < 0.85 ? rnd() * headEnd : rnd() * b.length);
      switch (Math.floor(rnd() * 7)) {
        case 0:
          b = Buffer.concat([b.subarray(0, at), Buffer.from([Math.floor(rnd() * 256)]), b.subarray(at + 1)]);
          break;
        case 1:
          b = Buffer.concat([b.subarray(0, at), Buffer.from(pick(TOKENS), 'latin1'), b.subarray(at)]);
          break;
        case 2:
          b = Buffer.concat([b.subarray(0, at), b.subarray(at + 1 + Math.floor(rnd() * 20))]);
          break;
        case 3:
          b = Buffer.concat([b.subarray(0, at), b.subarray(Math.max(0, at - 10), at), b.subarray(at)]);
          break;
        case 4:
          b = b.subarray(0, at);
          break;
        case 5:
          b = Buffer.from(
            b
              .toString('latin1')
              .replace(
                pick(['\r\n', 'HTTP/1.1', 'GET', 'Host', ': ', '200', 'Content-Length: ']),
                pick(['\n', '', 'HTTP/1.0', 'PUT', 'host', ':', '2000', 'Content-Length: 1']),
              ),
            'latin1',
          );
          break;
        default:
          b = Buffer.concat([b.subarray(0, at), Buffer.from('X-Junk: ' + 'j'.repeat(Math.floor(rnd() * 2000)) + '\r\n'), b.subarray(at)]);
          break;
      }
    }
    return b;
  };

  let accepted = 0,
    refused = 0;
  for (let i = 0; i < COUNT; i++) {
    const record = rnd() < 0.1 ? valid(i) : mutate(valid(i));
    const rowsBefore = await a.store.index.count();
    const bytesBefore = await warcBytes(a.dataDir);
    const r = await send(a.port, record, rnd() < 0.5);
    const where = `#${i} ${JSON.stringify(record.subarray(0, 160).toString('latin1'))}`;
    if (r.status === null || r.status >= 500) {
      t.fail(`${where}: answered ${r.status ?? 'nothing'} ${r.text.slice(0, 200)}`);
      continue;
    }
    if (r.status >= 400) {
      refused++;
      if (!/^[^\n]+\n$/.test(r.text)) t.fail(`${where}: ${r.status} without a one-line reason: ${JSON.stringify(r.text.slice(0, 200))}`);
      if ((await a.store.index.count()) !== rowsBefore || (await warcBytes(a.dataDir)) !== bytesBefore)
        t.fail(`${where}: refused with ${r.status} but something was stored`);
      continue;
    }
    accepted++;
    // Accepted: the record must still be a valid one, and the memento must serve its body.
    const text = record.toString('latin1');
    const first = text.indexOf('\r\n\r\n');
    const second = text.indexOf('\r\n\r\n', first + 4);
    const okShape = /^GET \/\S* HTTP\/1\.[01]\r\n/.test(text) && first > 0 && second > first && /^HTTP\/1\.[01] \d{3}/.test(text.slice(first + 4));
    if (!okShape) t.fail(`${where}: accepted (${r.status}) a record that is not request head + response head + body`);
    const expected = record.subarray(second + 4);
    const uriM = /^(\S+)\n$/.exec(r.text)?.[1] ?? '';
    const m = await request(uriM.replace(/\/memento\/(\d{14})\//, '/memento/$1id_/').replace(/^http:\/\/[^/]+/, a.url));
    if (r.status === 201 && !m.body.equals(expected))
      t.fail(`${where}: memento ${uriM} does not serve the record's body: ${m.status} ${JSON.stringify(m.text.slice(0, 300))} record ${JSON.stringify(text)}`);
  }
  t.comment(`${accepted} accepted, ${refused} refused`);
  t.ok(refused > COUNT / 2, `most mutations are refused (${refused})`);
  const alive = await request(`${a.url}/.well-known/host-meta`);
  t.equal(alive.status, 200, 'the daemon still serves');
  const v = await verify(a.store.index, a.store.warcsDir);
  t.ok(v.ok, `index and WARC files agree: ${v.problems.join('; ')}`);
});
