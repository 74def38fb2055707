/**
 * `warc_gzip_level`: the zlib level of each WARC record's gzip member. The
 * same captures written at level 1 and at level 9 come back byte-identical
 * (through the Memento `id_` form and as WARC records read by warcio); the
 * level-1 files are larger; a level outside 1–9 is refused at start with a
 * line that names the setting, and nothing is created.
 */
import t, { type Test } from 'tap';
import { captureRecord, putCapture, request, startArchive, TWO_ARCHIVES } from '../helpers/archive.js';
import { warcBytes, warcRecords } from './helpers.js';

/** A compressible HTML page of about 10 KB, different for each `i`. */
function page(i: number): string {
  let s = `<!DOCTYPE html><html><head><title>Page ${i}</title></head><body>\n`;
  for (let p = 0; s.length < 10_000; p++) s += `<p>Paragraph ${p} of page ${i}: ${'lorem ipsum dolor sit amet '.repeat(1 + ((i + p) % 5))}</p>\n`;
  return s + '</body></html>\n';
}

async function archiveAt(t: Test, level: number) {
  const a = await startArchive(`warc_gzip_level: ${level}\n${TWO_ARCHIVES}`);
  t.teardown(() => a.close());
  for (let i = 0; i < 20; i++) {
    const r = await putCapture(
      a,
      '',
      captureRecord({
        target: `/p${i}`,
        date: 'Mon, 05 Jan 2026 10:00:00 GMT',
        body: page(i),
        responseHeaders: [['Content-Type', 'text/html; charset=utf-8']],
      }),
    );
    t.equal(r.status, 201, `capture ${i} stored at level ${level}`);
  }
  return a;
}

t.test('level 1 and level 9 store the same captures; level 1 writes more bytes', async (t) => {
  const fast = await archiveAt(t, 1);
  const small = await archiveAt(t, 9);
  for (const a of [fast, small]) {
    for (let i = 0; i < 20; i++) {
      const m = await request(`${a.url}/current/memento/20260105100000id_/http://www.example.org/p${i}`);
      t.equal(m.status, 200);
      if (m.text !== page(i)) t.fail(`page ${i} is not served byte-identical`);
    }
  }
  const [fastRecords, smallRecords] = [await warcRecords(fast.dataDir, 'current'), await warcRecords(small.dataDir, 'current')];
  const blocks = (rs: typeof fastRecords) => rs.filter((r) => r.type === 'response').map((r) => r.block.toString('latin1'));
  t.equal(blocks(fastRecords).length, 20, '20 response records at level 1 (warcio)');
  t.same(blocks(fastRecords), blocks(smallRecords), 'the same response records at both levels');
  const [fastBytes, smallBytes] = [await warcBytes(fast.dataDir), await warcBytes(small.dataDir)];
  t.ok(fastBytes > smallBytes, `level 1 writes more bytes (${fastBytes}) than level 9 (${smallBytes})`);
});

for (const bad of ['0', '10', '6.5', 'fast']) {
  t.test(`warc_gzip_level: ${bad} is refused with a line that names it`, async (t) => {
    let dataDir = '';
    await t.rejects(
      startArchive(`warc_gzip_level: ${bad}\n${TWO_ARCHIVES}`).then(async (a) => {
        dataDir = a.dataDir;
        await a.close();
      }),
      /warc_gzip_level.*must be a whole number from 1 \(fastest\) to 9 \(smallest\)/,
    );
    t.equal(dataDir, '', 'no archive started');
  });
}

t.test('the default is zlib level 6', async (t) => {
  const a = await startArchive(TWO_ARCHIVES);
  t.teardown(() => a.close());
  t.equal(a.config.warcGzipLevel, 6);
});
