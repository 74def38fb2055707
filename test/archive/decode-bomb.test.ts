/**
 * A compression bomb stored as a memento: an HTML page of 1 GiB of zeros,
 * stored gzip-encoded (1 MB). Its `ol_` form, `Prefer: original-links`, a
 * TimeGate asked for that preference, and its replay form are all sent
 * decoded; none may decode more than the head needs before the head is
 * sent, more than `max_decoded_bytes` in all, or go on once the client has
 * left. What the archive decoded, and how each decoding ended, is read
 * from its metrics.
 */
import http from 'node:http';
import t from 'tap';
import { captureRecord, putCapture, request, startArchive, TWO_ARCHIVES } from '../helpers/archive.js';
import { gzipBomb } from './memento/helpers.js';

const MAX = 32 * 1024 * 1024;
const URI_R = 'http://www.example.org/';
const M = (form: string) => `/2025/memento/20010320203500${form}/${URI_R}`;

interface Decodes {
  end: number;
  stopped: number;
  limit: number;
  corrupt: number;
  bytes: number;
}

async function decodes(url: string): Promise<Decodes> {
  const text = (await request(`${url}/metrics`)).text;
  const n = (re: RegExp) => Number(re.exec(text)?.[1] ?? NaN);
  const outcome = (o: string) => n(new RegExp(`^memento_archive_decodes_total\\{outcome="${o}"\\} (\\d+)`, 'm'));
  return {
    end: outcome('end'),
    stopped: outcome('stopped'),
    limit: outcome('limit'),
    corrupt: outcome('corrupt'),
    bytes: n(/^memento_archive_decoded_bytes_total (\d+)/m),
  };
}

/** Reads the metrics until `done` holds of them (a decoding ends a little after its response). */
async function decodesWhen(url: string, done: (d: Decodes) => boolean): Promise<Decodes> {
  for (;;) {
    const d = await decodes(url);
    if (done(d)) return d;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** A GET that reads the body until it ends or is cut (`leaveAfter`: the client leaves after that many body bytes). */
function get(
  url: string,
  headers: Record<string, string> = {},
  leaveAfter = Infinity,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; bytes: number; complete: boolean }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers, agent: false }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => {
        bytes += c.length;
        if (bytes >= leaveAfter) req.destroy();
      });
      res.on('error', () => undefined); // "aborted": the body was cut; 'close' tells
      res.on('close', () => resolve({ status: res.statusCode!, headers: res.headers, bytes, complete: res.complete }));
    });
    req.on('error', (err) => (leaveAfter < Infinity ? undefined : reject(err)));
  });
}

t.test('a gzip bomb stored as a memento: HEAD and GET of its decoded forms stay within max_decoded_bytes and stop when the client leaves', async (t) => {
  const a = await startArchive(`max_decoded_bytes: ${MAX}\n` + TWO_ARCHIVES);
  t.teardown(() => a.close());
  const bomb = gzipBomb('<html><head><title>bomb</title></head><body>', 1024 ** 3);
  const put = await putCapture(
    a,
    URI_R,
    captureRecord({
      body: bomb,
      responseHeaders: [
        ['Content-Type', 'text/html'],
        ['Content-Encoding', 'gzip'],
      ],
    }),
  );
  t.equal(put.status, 201, `the bomb is stored (${bomb.length} bytes, 1 GiB decoded)`);

  const head = await request(a.url + M('ol_'), { method: 'HEAD' });
  t.equal(head.status, 200, 'HEAD of the ol_ form: 200');
  t.equal(head.headers['content-length'], undefined, 'no Content-Length: the decoded length is not worked out');
  t.equal(head.headers['content-encoding'], undefined, 'the body would go out decoded');
  let d = await decodesWhen(a.url, (d) => d.stopped >= 1);
  t.same([d.stopped, d.end, d.limit], [1, 0, 0], 'its decoder stopped with the head');
  t.ok(d.bytes <= 256 * 1024, `HEAD decoded ${d.bytes} bytes: only what the base element needs`);

  const preferHead = await request(a.url + M(''), { method: 'HEAD', headers: { prefer: 'original-links' } });
  t.equal(preferHead.status, 200, 'HEAD with Prefer: original-links: 200');
  t.match(preferHead.headers['preference-applied'], /original-links/, 'the links form');
  t.equal(preferHead.headers['content-length'], undefined, 'no Content-Length');
  const tg = await request(`${a.url}/2025/timegate/${URI_R}`, { headers: { prefer: 'original-links' } });
  t.equal(tg.status, 302, 'a TimeGate asked for original-links: 302');
  d = await decodesWhen(a.url, (d) => d.stopped >= 3);
  t.same([d.stopped, d.end, d.limit], [3, 0, 0], 'each decoder stopped before the body');
  t.ok(d.bytes <= 3 * 256 * 1024, `${d.bytes} bytes decoded in all for the three`);

  const before = d.bytes;
  const cut = await get(a.url + M('ol_'));
  t.equal(cut.status, 200, 'GET of the ol_ form: 200');
  t.equal(cut.headers['transfer-encoding'], 'chunked', 'sent chunked, without a length');
  t.notOk(cut.complete, 'the body is cut: the client sees it end early');
  t.ok(cut.bytes <= MAX + 64 && cut.bytes > MAX / 2, `${cut.bytes} bytes received, max_decoded_bytes ${MAX}`);
  d = await decodesWhen(a.url, (d) => d.limit >= 1);
  t.same([d.limit, d.end], [1, 0], 'its decoding ended at the bound');
  t.ok(d.bytes - before <= MAX + 64 * 1024, `${d.bytes - before} bytes decoded`);

  const replay = await get(a.url + M(''));
  t.same([replay.status, replay.complete], [200, false], 'GET of the replay form: cut too');
  d = await decodesWhen(a.url, (d) => d.limit >= 2);
  t.same([d.limit, d.end], [2, 0], 'its decoding ended at the bound');

  const left = d.bytes;
  const gone = await get(a.url + M('ol_'), {}, 1);
  t.equal(gone.status, 200, 'GET of the ol_ form, the client leaving after its first bytes');
  d = await decodesWhen(a.url, (d) => d.stopped >= 4);
  t.same([d.stopped, d.limit, d.end], [4, 2, 0], 'the decoder stopped when the client left, before the bound');
  t.ok(d.bytes - left < MAX / 2, `${d.bytes - left} bytes decoded for the client that left`);

  t.equal((await request(`${a.url}${M('id_')}`)).body.length, bomb.length, 'the raw form: the stored bytes, not decoded');
});
