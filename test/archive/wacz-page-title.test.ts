/**
 * The title of a page in a WACZ package's pages/pages.jsonl
 * (archive/wacz/page-title.ts): the first `<title>`'s text, entities
 * decoded and white space folded, from a gzip-encoded or windows-1252
 * page too; bounded (its first 64 KiB read, 300 characters kept); none for
 * a page without one. The package itself: test/archive/wacz.test.ts.
 */
import zlib from 'node:zlib';
import t from 'tap';
import type { StoredResponse } from '../../archive/store/warcs/stored-response.js';
import { pageTitle, TITLE_MAX_CHARS, TITLE_READ_BYTES } from '../../archive/wacz/page-title.js';

/** A stored response with `body` and `headers`, as the WARC reader gives one. */
function stored(body: Buffer | string, headers: [string, string][] = [['Content-Type', 'text/html; charset=utf-8']]): StoredResponse {
  const buf = Buffer.isBuffer(body) ? body : Buffer.from(body);
  return {
    statusLine: 'HTTP/1.1 200 OK',
    status: 200,
    reason: 'OK',
    headers,
    body: (async function* () {
      for (let i = 0; i < buf.length; i += 4096) yield buf.subarray(i, i + 4096);
    })(),
    bodyBuffer: null,
    bodyLength: buf.length,
    close() {},
  };
}

t.test('the first title, decoded and folded', async (t) => {
  t.equal(await pageTitle(stored('<html><head><title>\n  Caf&eacute; &amp;\tbar </title><title>second</title></head></html>')), 'Café & bar');
  t.equal(
    await pageTitle(
      stored(zlib.gzipSync('<title>zipped</title>'), [
        ['Content-Type', 'text/html'],
        ['Content-Encoding', 'gzip'],
      ]),
    ),
    'zipped',
  );
  t.equal(await pageTitle(stored(Buffer.from('<title>\xe9t\xe9</title>', 'latin1'), [['Content-Type', 'text/html; charset=windows-1252']])), 'été');
  t.equal(await pageTitle(stored('<svg><title>icon</title></svg><p>no head</p>')), 'icon', 'any title element, as a browser would not; the first one found');
});

t.test('none, or bounded', async (t) => {
  t.equal(await pageTitle(stored('<html><body>no title</body></html>')), undefined);
  t.equal(await pageTitle(stored('<title>   </title>')), undefined, 'an empty title is none');
  t.equal(await pageTitle(stored('')), undefined);
  t.equal(
    await pageTitle(
      stored('<title>x</title>', [
        ['Content-Type', 'text/html'],
        ['Content-Encoding', 'br-unknown'],
      ]),
    ),
    undefined,
    'a coding it cannot undo',
  );
  t.equal((await pageTitle(stored(`<title>${'é'.repeat(5000)}</title>`)))!.length, TITLE_MAX_CHARS, 'a long title is cut');
  t.equal(await pageTitle(stored(`${' '.repeat(TITLE_READ_BYTES)}<title>too far</title>`)), undefined, 'past the bytes read: none');
});
