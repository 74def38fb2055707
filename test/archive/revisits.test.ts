/**
 * Revisits (docs/storage.md "Deduplication and revisits"): a capture
 * identical to the memento it follows stores nothing within
 * `revisit_interval` of it, and from then on is recorded as a WARC
 * `revisit` record (profile identical-payload-digest) plus an index row
 * that refers to the memento holding the payload. What a PUT is told, what
 * is on disk, and how the revisit is read back (TimeMap, TimeGate, Memento).
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import sqlite3 from 'sqlite3';
import t from 'tap';
import { formatHttpDate } from '#shared/http-date.js';
import { captureRecord, putCapture, request, startArchive, type TestArchive, TWO_ARCHIVES } from '../helpers/archive.js';
import { warcBytes, warcRecords } from './helpers.js';

const URL_R = 'http://www.example.org/r';
const BODY = '<html><body>the same page, served again and again</body></html>';
const JAN1 = 'Thu, 01 Jan 2026 00:00:00 GMT';
const JAN1_NOON = 'Thu, 01 Jan 2026 12:00:00 GMT';
const JAN2 = 'Fri, 02 Jan 2026 00:00:00 GMT';
const JAN2_NOON = 'Fri, 02 Jan 2026 12:00:00 GMT';
const JAN3 = 'Sat, 03 Jan 2026 00:00:00 GMT';
const epoch = (httpDate: string) => Date.parse(httpDate) / 1000;

/** A capture of http://www.example.org/r served at `date` with the same body each time (and a header saying which capture it was). */
const served = (date: string, body = BODY) =>
  captureRecord({
    target: '/r',
    date,
    body,
    responseHeaders: [
      ['Content-Type', 'text/html'],
      ['X-Served', date],
    ],
  });

/** Every memento row of the index file of `a`, in datetime order (read with a connection of its own). */
async function rows(a: TestArchive) {
  const out: { id: number; datetime: number; refers_to: number | null; digest: string; warc_offset: number }[] = [];
  for await (const r of a.store.index.allMementos()) out.push(r);
  return out.sort((x, y) => x.datetime - y.datetime);
}

t.test('revisit: identical captures 1 Jan, 1 Jan 12:00, 2 Jan → stored, duplicate (nothing written), revisit (201, a revisit record)', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const first = await putCapture(a, '', served(JAN1));
  t.equal(first.status, 201);
  t.equal(first.headers['archive-capture'], 'new', 'Archive-Capture: new');
  const bytes = await warcBytes(a.dataDir);

  const dup = await putCapture(a, '', served(JAN1_NOON));
  t.equal(dup.status, 200, 'within a day: a duplicate');
  t.equal(dup.headers['archive-capture'], 'duplicate', 'Archive-Capture: duplicate');
  t.equal(dup.headers.location, first.headers.location, 'it names the first memento');
  t.equal(dup.headers['archive-revisit-after'], formatHttpDate(epoch(JAN1) + 86_400), "revisit after: the first memento's datetime + 1 day");
  t.equal(await warcBytes(a.dataDir), bytes, 'nothing written');

  const rev = await putCapture(a, '', served(JAN2));
  t.equal(rev.status, 201, 'a day later: a revisit, a memento of its own');
  t.equal(rev.headers['archive-capture'], 'revisit', 'Archive-Capture: revisit');
  t.equal(rev.headers.location, `${a.url}/current/memento/20260102000000/${URL_R}`, 'Location: the revisit URI-M');
  t.equal(rev.headers.etag, first.headers.etag, 'ETag: the same capture tag (same payload, status, type)');
  t.equal(rev.headers['archive-revisit-after'], formatHttpDate(epoch(JAN2) + 86_400), "revisit after: the revisit's datetime + 1 day");
  t.equal(rev.text, `${a.url}/current/memento/20260102000000/${URL_R}\n`);

  const recs = await warcRecords(a.dataDir, 'current');
  t.same(
    recs.map((r) => r.type),
    ['warcinfo', 'response', 'request', 'revisit', 'request'],
    'records: the response pair, then a revisit + request pair',
  );
  const [, response, , revisit, request2] = recs;
  const h = revisit.headers;
  t.equal(h.get('warc-profile'), 'http://netpreserve.org/warc/1.1/revisit/identical-payload-digest');
  t.equal(revisit.target, URL_R);
  t.equal(h.get('warc-date'), '2026-01-02T00:00:00Z', "WARC-Date: the revisit's own");
  t.equal(h.get('warc-refers-to-target-uri'), URL_R);
  t.equal(h.get('warc-refers-to-date'), '2026-01-01T00:00:00Z', "WARC-Refers-To-Date: the original's datetime");
  t.equal(h.get('warc-payload-digest'), response.headers.get('warc-payload-digest'), "WARC-Payload-Digest: the original's");
  t.equal(h.get('content-type'), 'application/http; msgtype=response');
  t.equal(h.get('warc-refers-to'), response.headers.get('warc-record-id'), "WARC-Refers-To: the original's record id (its evidence log entry binds it)");
  t.equal(h.get('archive-capture-via'), 'put', 'Archive-Capture-Via: it came in as a PUT');
  t.equal(response.headers.get('archive-capture-via'), 'put');
  const head = revisit.block.toString('latin1');
  t.match(head, /^HTTP\/1\.1 200 OK\r\n/, 'block: the HTTP response head as captured');
  t.match(head, new RegExp(`\r\nDate: ${JAN2}\r\n`));
  t.ok(head.endsWith('\r\n\r\n'), 'the head alone, no body');
  t.notMatch(head, /the same page/, 'no copy of the body');
  t.equal(request2.headers.get('warc-concurrent-to'), h.get('warc-record-id'), 'the request record names the revisit record');

  const index = await rows(a);
  t.equal(index.length, 2, 'an index row for the revisit');
  t.equal(index[0].refers_to, null, 'the original: a response');
  t.equal(index[1].refers_to, index[0].id, "the revisit refers to the original's row");
  t.equal(index[1].digest, index[0].digest);
  t.equal(index[1].datetime, epoch(JAN2));

  // 2 Jan 12:00: within a day of the revisit, a duplicate of it; 3 Jan: a revisit of the revisit's original.
  const dup2 = await putCapture(a, '', served(JAN2_NOON));
  t.equal(dup2.status, 200);
  t.equal(dup2.headers['archive-capture'], 'duplicate');
  t.equal(dup2.headers.location, rev.headers.location, 'a revisit counts as the memento a capture follows');
  t.equal(dup2.headers['archive-revisit-after'], formatHttpDate(epoch(JAN2) + 86_400));
  const rev2 = await putCapture(a, '', served(JAN3));
  t.equal(rev2.status, 201);
  t.equal(rev2.headers['archive-capture'], 'revisit');
  const all = await rows(a);
  t.equal(all.length, 3);
  t.equal(all[2].refers_to, all[0].id, "a revisit after a revisit refers to the response's row, never to a revisit");
  const last = (await warcRecords(a.dataDir, 'current')).at(-2)!;
  t.equal(last.type, 'revisit');
  t.equal(last.headers.get('warc-refers-to-date'), '2026-01-01T00:00:00Z', "its WARC-Refers-To-Date: the response's");
  t.equal(a.store.stats.revisits, 2);
  const metrics = (await request(`${a.url}/metrics`)).text;
  t.match(metrics, /^memento_archive_captures_total\{result="revisit"\} 2$/m, 'metrics: revisits counted');
  t.match(metrics, /^memento_archive_captures_total\{result="stored"\} 1$/m);
  const changed = await putCapture(a, '', served('Sat, 03 Jan 2026 12:00:00 GMT', '<html><body>the page changed</body></html>'));
  t.equal(changed.status, 201);
  t.equal(changed.headers['archive-capture'], 'new', 'a changed capture: Archive-Capture: new');
});

t.test('revisit: read back as a memento — TimeMap lists it, the TimeGate picks it, it serves the original body with its own Date', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  t.equal((await putCapture(a, '', served(JAN1))).status, 201);
  t.equal((await putCapture(a, '', served(JAN2))).status, 201);

  const tm = await request(`${a.url}/current/timemap/link/${URL_R}`);
  t.equal(tm.status, 200);
  t.match(tm.text, `<${a.url}/current/memento/20260101000000/${URL_R}>`);
  t.match(tm.text, `<${a.url}/current/memento/20260102000000/${URL_R}>`, 'the TimeMap lists the revisit');

  const tg = await request(`${a.url}/current/timegate/${URL_R}`, { headers: { 'accept-datetime': 'Fri, 02 Jan 2026 06:00:00 GMT' } });
  t.equal(tg.status, 302);
  t.equal(tg.headers.location, `${a.url}/current/memento/20260102000000/${URL_R}`, 'a reader at 2 Jan 06:00 is sent to the revisit, not to 1 Jan');
  const tg1 = await request(`${a.url}/current/timegate/${URL_R}`, { headers: { 'accept-datetime': 'Thu, 01 Jan 2026 06:00:00 GMT' } });
  t.equal(tg1.headers.location, `${a.url}/current/memento/20260101000000/${URL_R}`);

  for (const form of ['id_', '']) {
    const m = await request(`${a.url}/current/memento/20260102000000${form}/${URL_R}`);
    t.equal(m.status, 200, `${form || 'replay'}: 200`);
    t.equal(m.headers['memento-datetime'], JAN2, `${form || 'replay'}: Memento-Datetime is the revisit's`);
    t.equal(m.headers['x-archive-orig-date'], JAN2, `${form || 'replay'}: X-Archive-Orig-Date is the revisit's Date`);
    t.equal(m.headers['x-archive-orig-x-served'], JAN2, `${form || 'replay'}: the revisit's own headers`);
    t.match(m.text, 'the same page, served again and again', `${form || 'replay'}: the original's body`);
  }
  const raw = await request(`${a.url}/current/memento/20260102000000id_/${URL_R}`);
  t.equal(raw.text, BODY, 'id_: the body byte for byte');
  t.equal(raw.headers['content-length'], String(Buffer.byteLength(BODY)));
  const orig = await request(`${a.url}/current/memento/20260101000000id_/${URL_R}`);
  t.equal(orig.headers['x-archive-orig-date'], JAN1, 'the original still serves its own Date');
});

t.test('revisit_interval: off → identical captures never store anything (200, nothing written)', async (t) => {
  const a = await startArchive(TWO_ARCHIVES + 'revisit_interval: off\n');
  t.teardown(() => a.close());
  t.equal((await putCapture(a, '', served(JAN1))).status, 201);
  const bytes = await warcBytes(a.dataDir);
  const later = await putCapture(a, '', served(JAN3));
  t.equal(later.status, 200, 'two days later: still a duplicate');
  t.equal(later.headers.location, `${a.url}/current/memento/20260101000000/${URL_R}`);
  t.equal(later.headers['archive-revisit-after'], formatHttpDate(epoch(JAN1) + 86_400), 'off: the answer says a day');
  t.equal(await warcBytes(a.dataDir), bytes, 'nothing written');
  t.equal(await a.store.index.count(), 1);
});

t.test('revisit_interval: 0 → a revisit at every new second; the same second is a duplicate', async (t) => {
  const a = await startArchive(TWO_ARCHIVES + 'revisit_interval: 0\n');
  t.teardown(() => a.close());
  const s0 = 'Thu, 01 Jan 2026 00:00:00 GMT';
  const s1 = 'Thu, 01 Jan 2026 00:00:01 GMT';
  const first = await putCapture(a, '', served(s0));
  t.equal(first.status, 201);
  t.equal(first.headers['archive-revisit-after'], s0, 'revisit after: at once');
  t.equal((await putCapture(a, '', served(s0))).status, 200, 'the same second: a duplicate');
  const next = await putCapture(a, '', served(s1));
  t.equal(next.status, 201, 'the next second: a revisit');
  t.equal(next.headers.location, `${a.url}/current/memento/20260101000001/${URL_R}`);
  const all = await rows(a);
  t.same(
    all.map((r) => r.refers_to),
    [null, all[0].id],
  );
});

t.test('revisit_interval: 12h; a bad value is refused with the reason', async (t) => {
  const a = await startArchive(TWO_ARCHIVES + 'revisit_interval: 12h\n');
  t.teardown(() => a.close());
  t.equal((await putCapture(a, '', served(JAN1))).status, 201);
  const noon = await putCapture(a, '', served(JAN1_NOON));
  t.equal(noon.status, 201, '12 hours later: a revisit');
  t.equal(noon.headers['archive-revisit-after'], formatHttpDate(epoch(JAN1_NOON) + 43_200));
  await t.rejects(startArchive(TWO_ARCHIVES + 'revisit_interval: sometimes\n'), /revisit_interval.*must be an age like 1d, 12h or 30m .*0 or off/);
});

t.test('an index made before revisits opens and gains the refers_to column (its rows: responses)', async (t) => {
  const a = await startArchive();
  t.equal((await putCapture(a, '', served(JAN1))).status, 201);
  const dataDir = a.dataDir;
  await a.close(true);
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const file = path.join(dataDir, 'index.sqlite3');
  // Make it the old table: the same columns without refers_to (SQLite 3.35+ drops a column).
  await new Promise<void>((resolve, reject) => {
    const db = new sqlite3.Database(file, (err) => {
      if (err) return reject(err);
      db.run('ALTER TABLE memento DROP COLUMN refers_to', (e) => db.close(() => (e ? reject(e) : resolve())));
    });
  });
  const cols = async () => {
    const db = new sqlite3.Database(file);
    const r = await new Promise<{ name: string }[]>((resolve, reject) =>
      db.all('PRAGMA table_info(memento)', (e, x: { name: string }[]) => (e ? reject(e) : resolve(x))),
    );
    await new Promise((r2) => db.close(r2));
    return r.map((c) => c.name);
  };
  t.notOk((await cols()).includes('refers_to'), 'the old index has no refers_to');
  const b = await startArchive(TWO_ARCHIVES, { dataDir });
  t.teardown(() => b.close(true));
  t.ok((await cols()).includes('refers_to'), 'opened: the column is added');
  const index = await rows(b);
  t.same(
    index.map((r) => r.refers_to),
    [null],
    'the existing row is a response',
  );
  t.equal((await putCapture(b, '', served(JAN2))).status, 201, 'and a revisit can be stored');
  t.equal((await rows(b))[1].refers_to, index[0].id);
});
