/**
 * A WARC response as a capture record (archive/import/capture.ts): the
 * request head that names the WARC-Target-URI, and the chunked transfer
 * coding undone as the body streams (RFC 9112 §7.1).
 */
import t from 'tap';
import { ChunkedError, dechunk, isChunked, requestHeadFor, withoutTransferEncoding } from '../../../archive/import/capture.js';

async function collect(parts: string[]): Promise<string> {
  const out: Buffer[] = [];
  async function* src() {
    for (const p of parts) yield Buffer.from(p, 'latin1');
  }
  for await (const c of dechunk(src())) out.push(c);
  return Buffer.concat(out).toString('latin1');
}

t.test('dechunk: sizes in hex with extensions, data split anywhere, the last chunk and its trailers', async (t) => {
  const body = '5\r\nhello\r\n6;name=value\r\n world\r\nA\r\n0123456789\r\n0\r\nExpires: never\r\n\r\n';
  t.equal(await collect([body]), 'hello world0123456789');
  t.equal(await collect(body.split('')), 'hello world0123456789', 'one byte at a time');
  t.equal(await collect(['0\r\n\r\n']), '', 'an empty body');
  t.equal(await collect(['3\r\nabc\r\n0\r\n\r\nleftover']), 'abc', 'bytes after the trailer section are ignored');
});

t.test('dechunk refuses a malformed or cut body (ChunkedError)', async (t) => {
  await t.rejects(collect(['zz\r\nhello\r\n0\r\n\r\n']), new ChunkedError('the chunked body has a bad chunk size line "zz"'));
  await t.rejects(collect(['5\r\nhelloXX0\r\n\r\n']), new ChunkedError('a chunk of the chunked body is not followed by CRLF'));
  await t.rejects(collect(['5\r\nhel']), new ChunkedError('the chunked body ends before its last chunk'));
  await t.rejects(collect(['5\r\nhello\r\n0\r\n']), new ChunkedError('the chunked body ends before its last chunk'), 'no end of the trailer section');
  await t.rejects(collect(['1'.repeat(5000)]), /longer than 4096 bytes/);
});

t.test('isChunked and withoutTransferEncoding: only exactly "chunked" is undone; the header line goes, the others stay byte for byte', async (t) => {
  const head = Buffer.from('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: Chunked\r\nX-A:  b \r\n\r\n');
  t.ok(isChunked(head));
  t.notOk(isChunked(Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n')), 'another coding too: left for the archive to refuse');
  t.notOk(isChunked(Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n')));
  t.equal(withoutTransferEncoding(head).toString(), 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-A:  b \r\n\r\n');
});

t.test('requestHeadFor: the recorded request when it names the target host; X-Forwarded-Proto set for https; else a minimal GET', async (t) => {
  const wget = Buffer.from('GET /manual/en/ HTTP/1.1\r\nHost: 127.0.0.1:8081\r\nUser-Agent: Wget/1.21.3\r\n\r\n');
  t.equal(requestHeadFor(new URL('http://127.0.0.1:8081/manual/en/'), wget), wget, 'kept as it is');
  const port80 = Buffer.from('GET / HTTP/1.1\r\nHost: Example.org:80\r\n\r\n');
  t.equal(requestHeadFor(new URL('http://example.org/'), port80), port80, 'the same host, written another way');
  t.equal(
    requestHeadFor(new URL('https://example.org/x?y=1'), Buffer.from('GET /x?y=1 HTTP/1.1\r\nHost: example.org\r\nAccept: */*\r\n\r\n')).toString(),
    'GET /x?y=1 HTTP/1.1\r\nHost: example.org\r\nAccept: */*\r\nX-Forwarded-Proto: https\r\n\r\n',
    'https: the capture record says the client came over TLS',
  );
  const ours = Buffer.from('GET /s HTTP/1.1\r\nHost: example.org\r\nX-Forwarded-Proto: https\r\nX-Client-IP: 192.0.2.7\r\n\r\n');
  t.equal(requestHeadFor(new URL('https://example.org/s'), ours), ours, "the archive's own https request record is kept");
  t.equal(
    requestHeadFor(new URL('http://example.org/s'), ours).toString(),
    'GET /s HTTP/1.1\r\nHost: example.org\r\nX-Client-IP: 192.0.2.7\r\n\r\n',
    'an http target: no X-Forwarded-Proto: https',
  );
  t.equal(
    requestHeadFor(new URL('http://example.org/p?q'), Buffer.from('GET /p?q HTTP/1.1\r\nHost: other.example\r\n\r\n')).toString(),
    'GET /p?q HTTP/1.1\r\nHost: example.org\r\n\r\n',
    'another host: a minimal GET for the target',
  );
  t.equal(
    requestHeadFor(new URL('https://example.org/'), null).toString(),
    'GET / HTTP/1.1\r\nHost: example.org\r\nX-Forwarded-Proto: https\r\n\r\n',
    'no request record',
  );
  const post = Buffer.from('POST /form HTTP/1.1\r\nHost: example.org\r\n\r\n');
  t.equal(requestHeadFor(new URL('http://example.org/form'), post), post, 'a POST is kept, for the archive to refuse');
});
