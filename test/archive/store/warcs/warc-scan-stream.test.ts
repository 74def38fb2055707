/**
 * A WARC file scanned as a stream (an object read from a bucket,
 * warc-scan.ts `scanWarcStream`) gives what a scan of the same file on
 * disk gives, whatever the chunks the stream arrives in: records, a member
 * cut short, a changed byte.
 */
import { createReadStream, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import t from 'tap';
import { listWarcFiles } from '../../../../archive/store/warcs/warc-files.js';
import { type ScanItem, scanWarcFile, scanWarcStream } from '../../../../archive/store/warcs/warc-scan.js';
import { captureRecord, putCapture, startArchive } from '../../../helpers/archive.js';

async function collect(items: AsyncGenerator<ScanItem>) {
  const out: unknown[] = [];
  for await (const i of items) out.push(i.kind === 'record' ? { ...i.record, headers: [...i.record.headers] } : i);
  return out;
}

/** The bytes of `file` as a stream of `chunk`-byte pieces. */
const chunked = (buf: Buffer, chunk: number) =>
  Readable.from(
    (function* () {
      for (let i = 0; i < buf.length; i += chunk) yield buf.subarray(i, i + chunk);
    })(),
  );

t.test('a stream scan equals the file scan: whole file, cut short, a changed byte; chunks of 7 bytes, 64 KiB, 3 MiB', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  for (const [i, size] of [10, 200_000, 2_500_000, 50].entries()) {
    const body = Buffer.alloc(size, i + 1);
    for (let j = 0; j < size; j += 97) body[j] = (j * 31) & 255;
    t.equal((await putCapture(a, '', captureRecord({ target: `/p${i}`, date: 'Thu, 01 Jan 2026 00:00:00 GMT', body }))).status, 201);
  }
  const file = path.join(a.dataDir, 'warcs', (await listWarcFiles(path.join(a.dataDir, 'warcs'))).get('current')![0]);
  const whole = readFileSync(file);
  const cases: [string, Buffer][] = [
    ['whole', whole],
    ['cut short', whole.subarray(0, whole.length - 1000)],
  ];
  const changed = Buffer.from(whole);
  changed[Math.floor(whole.length / 2)] ^= 0x55;
  cases.push(['a changed byte', changed]);
  for (const [name, bytes] of cases) {
    writeFileSync(file + '.copy', bytes);
    const expected = await collect(scanWarcFile(file + '.copy'));
    t.ok(expected.length >= 3, `${name}: the file scan finds ${expected.length} items`);
    for (const chunk of [7, 64 * 1024, 3 * 1024 * 1024]) {
      t.same(await collect(scanWarcStream(chunked(bytes, chunk), bytes.length)), expected, `${name}, chunks of ${chunk} bytes: the same items`);
    }
    t.same(
      await collect(scanWarcStream(createReadStream(file + '.copy'), statSync(file + '.copy').size)),
      expected,
      `${name}, a file read stream: the same items`,
    );
    truncateSync(file + '.copy', 0);
  }
});
