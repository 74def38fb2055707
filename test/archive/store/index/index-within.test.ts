/**
 * The index read through access rules (IndexDb `neighbourhoodWithin`,
 * `spansWithin`): the same answers as the plain queries give over an
 * index holding only the mementos shown, for every instant.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { IndexDb, type NewMementoRow } from '../../../../archive/store/index/index-db.js';

const row = (archive: string, urlkey: string, datetime: number): NewMementoRow => ({
  archive_id: archive,
  urlkey,
  uri_r: `http://${urlkey}`,
  datetime,
  status: 200,
  mime: 'text/plain',
  digest: 'sha256:' + datetime,
  warc_file: 'f',
  warc_offset: datetime,
  warc_length: 1,
  client_ip: null,
  refers_to: null,
});

t.test('neighbourhoodWithin and spansWithin answer as the plain queries over the shown mementos alone', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'index-within-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const all = await IndexDb.open(path.join(dir, 'all.sqlite3'));
  const shown = await IndexDb.open(path.join(dir, 'shown.sqlite3'));
  t.teardown(async () => {
    await all.close();
    await shown.close();
  });
  const times = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100];
  const ranges: [number, number][] = [
    [-Infinity, 25],
    [45, 65],
    [90, Infinity],
  ];
  const inRanges = (d: number) => ranges.some(([f, u]) => d >= f && d < u);
  await all.insertMany([...times.map((d) => row('a', 'k', d)), row('b', 'k', 15), row('a', 'other', 50)]);
  await shown.insertMany([...times.filter(inRanges).map((d) => row('a', 'k', d)), row('b', 'k', 15)]);
  const strip = (n: Awaited<ReturnType<IndexDb['neighbourhood']>>) =>
    n && {
      first: n.first.datetime,
      last: n.last.datetime,
      atOrBefore: n.atOrBefore.map((m) => m.datetime),
      after: n.after.map((m) => m.datetime),
    };
  for (let at = 0; at <= 110; at += 5) {
    const got = await all.neighbourhoodWithin('a', 'k', at, ranges);
    t.same(strip(got), strip(await shown.neighbourhood('a', 'k', at)), `at ${at}`);
  }
  const whole = await all.neighbourhoodWithin('a', 'k', 50, ranges, true);
  t.match(whole?.atOrBefore[0], { datetime: 50, warc_offset: 50, digest: 'sha256:50' }, 'whole: the row at or before, every column');
  t.equal(await all.neighbourhoodWithin('a', 'k', 50, []), undefined, 'no range: nothing shown');
  t.equal(await all.neighbourhoodWithin('a', 'k', 50, [[31, 39]]), undefined, 'nothing in the ranges');
  const sort = (x: { archive_id: string }[]) => [...x].sort((p, q) => p.archive_id.localeCompare(q.archive_id));
  t.same(sort(await all.spansWithin('k', ranges)), sort(await shown.spans('k')), 'spans of the shown ones');
  t.same(await all.spansWithin('k', []), []);
});
