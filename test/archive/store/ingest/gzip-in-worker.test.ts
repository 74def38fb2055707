/**
 * A write batch's records gzipped in the ingest pool's thread
 * (archive/store/warcs/gzip-batch.ts, the `gzip-records` task): the
 * members are the records, each its own gzip member; a thread that dies
 * while it gzips a batch fails that batch's PUTs with a 503 and leaves
 * nothing of them in the WARC file or the index; the next PUT is stored.
 */
import { randomBytes } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import t from 'tap';
import { gzipPacked, packRecords, unpackMembers } from '../../../../archive/store/warcs/gzip-batch.js';
import type { RawPair } from '../../../../archive/store/warcs/warc-writer.js';
import { WorkPool } from '../../../../archive/work/pool.js';
import { captureRecord, putCapture, request, startArchive } from '../../../helpers/archive.js';
import { warcRecords } from '../../helpers.js';

const dated = (target: string, body: string | Buffer) =>
  captureRecord({ target, date: 'Mon, 05 Jan 2026 10:00:00 GMT', body, responseHeaders: [['Content-Type', 'text/plain']] });

t.test('gzip-records: each record its own gzip member, in order, for every pair', async (t) => {
  const pairs: RawPair[] = [0, 1, 2].map((i) => ({
    response: [Buffer.from(`header ${i}\r\n`), randomBytes(3000 + i), Buffer.from('\r\n\r\n')],
    request: Buffer.from(`request ${i}`),
    recordId: `<urn:uuid:${i}>`,
    blockDigest: `sha256:${i}`,
  }));
  const packed = packRecords(pairs, 6);
  t.equal(packed.bytes.byteOffset, 0, 'the records own their buffer (it can be moved)');
  const out = unpackMembers(pairs, gzipPacked(packed));
  for (const [i, e] of out.entries()) {
    t.same(gunzipSync(e.response), Buffer.concat(pairs[i].response), `pair ${i}: the response member is its record`);
    t.same(gunzipSync(e.request), pairs[i].request, `pair ${i}: the request member is its record`);
    t.equal(e.recordId, pairs[i].recordId);
  }
  t.throws(() => gzipPacked({ ...packRecords(pairs, 6), lengths: [1] }), RangeError, 'lengths that do not add up are refused');
});

t.test('a gzip thread that dies mid-batch: that batch answered 503, nothing written; the next PUT is stored', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const realRun = WorkPool.prototype.run;
  let kill = true;
  WorkPool.prototype.run = function (this: WorkPool, ...args: Parameters<WorkPool['run']>) {
    const result = realRun.apply(this, args);
    // The thread the task was just given (starting or running it) ends at once.
    const slots = (this as unknown as { slots: { worker?: { terminate(): Promise<number> } }[] }).slots;
    if (kill && this.name === 'ingest') for (const s of slots) void s.worker?.terminate();
    return result;
  } as WorkPool['run'];
  t.teardown(() => {
    WorkPool.prototype.run = realRun;
  });
  const bodies = Array.from({ length: 8 }, () => randomBytes(10_000));
  const answers = await Promise.all(bodies.map((b, i) => putCapture(a, `http://www.example.org/k${i}`, dated(`/k${i}`, b))));
  t.same(
    answers.map((r) => r.status),
    bodies.map(() => 503),
    'every PUT of the batches whose thread died answered 503',
  );
  t.match(answers[0].text, /not compressed/, 'the answer says why');
  t.equal(await a.store.index.count(), 0, 'no index row');
  t.same(
    (await warcRecords(a.dataDir, 'current')).filter((r) => r.type !== 'warcinfo'),
    [],
    'no record in the WARC files',
  );

  kill = false;
  const body = randomBytes(10_000);
  const ok = await putCapture(a, 'http://www.example.org/after', dated('/after', body));
  t.equal(ok.status, 201, 'the next PUT is stored (a new thread)');
  const m = await request(
    String(ok.headers.location)
      .replace(/\/memento\/(\d{14})\//, '/memento/$1id_/')
      .replace(/^http:\/\/[^/]+/, a.url),
  );
  t.same(m.body, body, 'and served byte-identical');
  const records = (await warcRecords(a.dataDir, 'current')).filter((r) => r.type !== 'warcinfo');
  t.same(
    records.map((r) => [r.type, r.target]),
    [
      ['response', 'http://www.example.org/after'],
      ['request', 'http://www.example.org/after'],
    ],
    'the WARC file holds its two records alone',
  );
  t.equal(await a.store.index.count(), 1, 'one index row');
});
