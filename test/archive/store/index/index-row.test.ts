import t from 'tap';
import { indexRow, mediaType, type RowParts } from '../../../../archive/store/index/index-row.js';
import { exactUrlkey } from '#shared/uri.js';

t.test('mediaType: RFC 9110 §8.3.1: the type/subtype, lower case, without parameters; "" for none (docs/storage.md `mime`)', async (t) => {
  const cases: [string | undefined, string][] = [
    ['text/html', 'text/html'],
    ['text/html; charset=UTF-8', 'text/html'],
    ['Text/HTML;charset=ISO-8859-1', 'text/html'],
    ['  application/xhtml+xml ; q=1', 'application/xhtml+xml'],
    ['text/html;', 'text/html'],
    ['; charset=utf-8', ''],
    ['', ''],
    ['   ', ''],
    [undefined, ''],
  ];
  for (const [value, want] of cases) t.equal(mediaType(value), want, JSON.stringify(value));
});

const PARTS: RowParts = {
  archiveId: '2025',
  uriR: 'http://www.example.org/a/B?x=1&a=2',
  datetime: 985120500,
  status: 200,
  responseHeaders: [
    ['Date', 'Tue, 20 Mar 2001 20:35:00 GMT'],
    ['content-TYPE', 'Text/HTML; charset=utf-8'],
  ],
  requestHeaders: [
    ['Host', 'www.example.org'],
    ['X-Client-IP', ' 192.0.2.7 '],
  ],
  digest: 'sha256:' + 'ab'.repeat(32),
  warc: { file: '2025/2025-20010320203500-00001-abcd.warc.gz', offset: 1234, length: 567 },
};

t.test('indexRow: the row of docs/storage.md "The index", one column per part', async (t) => {
  t.same(indexRow(PARTS), {
    archive_id: '2025',
    urlkey: 'org,example,www)/a/B?x=1&a=2',
    uri_r: 'http://www.example.org/a/B?x=1&a=2',
    datetime: 985120500,
    status: 200,
    mime: 'text/html',
    digest: 'sha256:' + 'ab'.repeat(32),
    warc_file: '2025/2025-20010320203500-00001-abcd.warc.gz',
    warc_offset: 1234,
    warc_length: 567,
    client_ip: '192.0.2.7',
    refers_to: null,
  });
});

t.test('indexRow: the urlkey is exactUrlkey of the URI-R (docs/storage.md "urlkey"); uri_r stays as captured', async (t) => {
  for (const uriR of ['http://www.example.org/', 'https://www.example.org/Page?b=1&a=2', 'http://example.org:8080/x', 'http://[::1]/x']) {
    const row = indexRow({ ...PARTS, uriR });
    t.equal(row.urlkey, exactUrlkey(uriR), `${uriR}: urlkey`);
    t.equal(row.uri_r, uriR, `${uriR}: uri_r as captured`);
  }
  t.equal(
    indexRow({ ...PARTS, uriR: 'https://www.example.org/a/B?x=1&a=2' }).urlkey,
    indexRow(PARTS).urlkey,
    'http:// and https:// of one host share the urlkey',
  );
});

t.test('indexRow: mime from the first Content-Type of the response, "" without one', async (t) => {
  const mime = (responseHeaders: RowParts['responseHeaders']) => indexRow({ ...PARTS, responseHeaders }).mime;
  t.equal(
    mime([
      ['Content-Type', 'image/PNG'],
      ['Content-Type', 'text/html'],
    ]),
    'image/png',
  );
  t.equal(mime([['Content-Length', '0']]), '');
  t.equal(mime([]), '');
});

t.test('indexRow: client_ip from X-Client-IP of the request, trimmed; null without a request record or the header (docs/storage.md)', async (t) => {
  const ip = (requestHeaders: RowParts['requestHeaders']) => indexRow({ ...PARTS, requestHeaders }).client_ip;
  const cases: [RowParts['requestHeaders'], string | null, string][] = [
    [[['x-client-ip', '2001:db8::1']], '2001:db8::1', 'any case of the name'],
    [[['X-Client-IP', '\t10.0.0.1  ']], '10.0.0.1', 'trimmed'],
    [
      [
        ['X-Client-IP', '10.0.0.1'],
        ['X-Client-IP', '10.0.0.2'],
      ],
      '10.0.0.1',
      'the first of two',
    ],
    [[['Host', 'www.example.org']], null, 'no X-Client-IP'],
    [[['X-Client-IP', '   ']], null, 'an empty value is none'],
    [[], null, 'no request headers'],
    [null, null, 'no request record (recovery of a response alone)'],
  ];
  for (const [headers, want, rule] of cases) t.equal(ip(headers), want, rule);
});

t.test('indexRow: before the record is written, its WARC position is "" and zeros', async (t) => {
  const { warc: _, ...unwritten } = PARTS;
  const row = indexRow({ ...unwritten, digest: '' });
  t.same({ file: row.warc_file, offset: row.warc_offset, length: row.warc_length, digest: row.digest }, { file: '', offset: 0, length: 0, digest: '' });
});
