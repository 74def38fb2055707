/**
 * The text a search finds, as the indexer extracts it from a stored
 * record's raw bytes in the `text` work pool's thread (archive/search/
 * extract.ts): content-codings and charsets decoded there, a record longer
 * than the bytes read (`TEXT_RECORD_BYTES`) indexed by what those bytes
 * hold, and bytes that are no record rejected.
 */
import { randomBytes } from 'node:crypto';
import zlib from 'node:zlib';
import t from 'tap';
import { captureRecord, putCapture, startArchive, TWO_ARCHIVES } from '../../helpers/archive.js';
import { until } from '../../helpers/until.js';
import { extractFromRecord, TEXT_RECORD_BYTES } from '../../../archive/search/extract.js';
import { json } from './helpers.js';

const page = (title: string, text: string) => `<!doctype html><html><head><title>${title}</title></head><body><p>${text}</p></body></html>`;

/** A gzipped WARC response record (one member) of an HTML page. */
function member(body: Buffer, headers = 'Content-Type: text/html\r\n'): Buffer {
  const http = Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\n${headers}\r\n`, 'latin1'), body]);
  const head = `WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: http://www.example.org/\r\nContent-Length: ${http.length}\r\n\r\n`;
  return zlib.gzipSync(Buffer.concat([Buffer.from(head), http, Buffer.from('\r\n\r\n')]));
}

t.test('content-codings and charsets are decoded before the text is indexed; an unknown coding gives no text', async (t) => {
  const a = await startArchive(TWO_ARCHIVES);
  t.teardown(() => a.close());
  const captures: [string, Buffer, [string, string][]][] = [
    [
      '/gzip',
      zlib.gzipSync(page('Gzipped', 'the pangolin page')),
      [
        ['Content-Type', 'text/html'],
        ['Content-Encoding', 'gzip'],
      ],
    ],
    [
      '/br',
      zlib.brotliCompressSync(page('Brotli', 'the pangolin brotli page')),
      [
        ['Content-Type', 'text/html'],
        ['Content-Encoding', 'br'],
      ],
    ],
    ['/latin1', Buffer.from(page('Café crème', 'an axolotl page'), 'latin1'), [['Content-Type', 'text/html; charset=windows-1252']]],
    [
      '/unknown',
      Buffer.from(page('Unknown', 'the pangolin unknown page')),
      [
        ['Content-Type', 'text/html'],
        ['Content-Encoding', 'x-unknown'],
      ],
    ],
  ];
  for (const [target, body, responseHeaders] of captures) {
    t.equal((await putCapture(a, '', captureRecord({ target, date: 'Mon, 20 Jan 2025 10:00:00 GMT', body, responseHeaders }))).status, 201, target);
  }
  await until(async () => (await a.app.textIndexer.drained(), (await a.store.index.text!.count()) >= captures.length), 20_000, 'the texts are stored');
  t.equal(a.app.textIndexer.stats.failed, 0, 'no record failed');
  const pangolin = await json(a, '/search?q=pangolin&output=json');
  t.same(pangolin.body.hits.map((h: { uri_r: string }) => new URL(h.uri_r).pathname).sort(), ['/br', '/gzip'], 'the gzip and br pages, not the unknown coding');
  const axolotl = await json(a, '/search?q=axolotl&output=json');
  t.same(
    axolotl.body.hits.map((h: { title: string }) => h.title),
    ['Café crème'],
    'the windows-1252 title decoded',
  );
});

t.test('the daemon: a page whose record is longer than the bytes read is found by the words at its start', async (t) => {
  const a = await startArchive(TWO_ARCHIVES);
  t.teardown(() => a.close());
  // Random base64 hardly compresses: the stored record is longer than what the indexer reads of it.
  const noise = randomBytes(5 * 1024 * 1024)
    .toString('base64')
    .replace(/(.{60})/g, '$1 ');
  const body = page('Big page', `okapi first ${noise} narwhal last`);
  const r = await putCapture(a, '', captureRecord({ target: '/big', date: 'Mon, 20 Jan 2025 10:00:00 GMT', body }));
  t.equal(r.status, 201);
  await until(async () => (await a.app.textIndexer.drained(), (await a.store.index.text!.count()) >= 1), 20_000, 'the text is stored');
  t.same(await a.store.index.text!.missing(0, 10), [], 'no memento left without text');
  t.equal(a.app.textIndexer.stats.failed, 0, 'the record did not fail');
  t.same(
    (await json(a, '/search?q=okapi&output=json')).body.hits.map((h: { title: string }) => h.title),
    ['Big page'],
    'found by its first words',
  );
  t.equal((await json(a, '/search?q=narwhal&output=json')).body.total, 0, 'not by those past the text bounds');
});

t.test('a record longer than the bytes read is indexed by what they hold; bytes that are no record are refused', async (t) => {
  const small = member(Buffer.from(page('Small page', 'an okapi grazed')));
  t.same(await extractFromRecord({ record: small, length: small.length, mime: 'text/html', file: 'a.warc.gz', offset: 0 }), {
    title: 'Small page',
    body: 'an okapi grazed',
  });

  // Random base64 hardly compresses: the member is longer than what the indexer reads of it.
  const noise = randomBytes(5 * 1024 * 1024)
    .toString('base64')
    .replace(/(.{60})/g, '$1 ');
  const big = member(Buffer.from(page('Big page', `okapi first ${noise} narwhal last`)));
  t.ok(big.length > TEXT_RECORD_BYTES, `the member (${big.length} bytes) is longer than ${TEXT_RECORD_BYTES}`);
  const cut = new Uint8Array(big.subarray(0, TEXT_RECORD_BYTES));
  const text = await extractFromRecord({ record: cut, length: big.length, mime: 'text/html', file: 'a.warc.gz', offset: 0 });
  t.equal(text.title, 'Big page');
  t.match(text.body, /^okapi first /, 'the text of the record read');
  t.notMatch(text.body, /narwhal/, 'not what lies past the text bounds');

  await t.rejects(
    extractFromRecord({ record: Buffer.from('not a gzip member'), length: 17, mime: 'text/html', file: 'a.warc.gz', offset: 9 }),
    'bytes that are no gzip member',
  );
  const notResponse = zlib.gzipSync('WARC/1.1\r\nWARC-Type: request\r\nContent-Length: 0\r\n\r\n\r\n\r\n');
  await t.rejects(
    extractFromRecord({ record: notResponse, length: notResponse.length, mime: 'text/html', file: 'a.warc.gz', offset: 9 }),
    /no WARC response record at a\.warc\.gz:9: not a response record/,
  );
});
