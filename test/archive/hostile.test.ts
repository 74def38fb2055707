/**
 * Issue 5, part 5: a corpus of bad capture PUTs. Each is answered 4xx with
 * a one-line reason (when the client is still there to read it), nothing is
 * stored (index rows and WARC bytes unchanged), and the daemon keeps serving.
 */

import net from 'node:net';
import t from 'tap';
import { putCapture, request, startArchive, TWO_ARCHIVES } from '../helpers/archive.js';
import { warcBytes } from './helpers.js';

interface RawAnswer {
  status: number | null;
  body: string;
}

/**
 * Sends `bytes` as they are on a new TCP connection and reads the answer
 * until the server closes. `cut`: close the connection right after writing
 * (a client that goes away). `halfClose`: end our side after writing.
 */
function raw(port: number, bytes: Buffer, opts: { cut?: boolean; halfClose?: boolean } = {}): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error('no answer and no close within 10 s'));
    }, 10_000);
    s.on('data', (d) => chunks.push(d));
    s.on('error', () => undefined); // EPIPE/ECONNRESET after the server answered early: read what came
    s.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('latin1');
      const m = /^HTTP\/1\.1 (\d{3})[^\r\n]*\r\n[\s\S]*?\r\n\r\n([\s\S]*)$/.exec(text);
      resolve({ status: m ? Number(m[1]) : null, body: m ? m[2] : text });
    });
    s.on('connect', () => {
      s.write(bytes, () => {
        if (opts.cut) s.destroy();
        else if (opts.halfClose) s.end();
      });
    });
  });
}

/** A whole PUT request with Content-Length framing around `record`. */
function put(record: Buffer | string, headers = ''): Buffer {
  const body = Buffer.isBuffer(record) ? record : Buffer.from(record, 'latin1');
  return Buffer.concat([
    Buffer.from(
      `PUT /put/http://www.example.org/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: ${body.length}\r\nConnection: close\r\n${headers}\r\n`,
      'latin1',
    ),
    body,
  ]);
}

/** A whole PUT request with chunked framing; `chunks` are written as given (already framed) when `framed`. */
function putChunked(payload: string | Buffer): Buffer {
  return Buffer.concat([
    Buffer.from(`PUT /put/http://www.example.org/ HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`),
    Buffer.isBuffer(payload) ? payload : Buffer.from(payload, 'latin1'),
  ]);
}

const REQ = 'GET /page HTTP/1.1\r\nHost: www.example.org\r\n\r\n';
const RES = (body = 'hello', extra = '') =>
  `HTTP/1.1 200 OK\r\nDate: Mon, 05 Jan 2026 10:00:00 GMT\r\nContent-Type: text/plain\r\n${extra}Content-Length: ${body.length}\r\n\r\n${body}`;
const rec = (req: string, res = RES()) => req + res;
const reqWith = (line: string, headers = 'Host: www.example.org\r\n') => `${line}\r\n${headers}\r\n`;
const dateRec = (date: string) => REQ + `HTTP/1.1 200 OK\r\nDate: ${date}\r\nContent-Length: 2\r\n\r\nhi`;

/** name, request bytes, expected status (or a check), options */
type Case = [string, Buffer, number | ((s: number) => boolean), { cut?: boolean; halfClose?: boolean }?];

const MAX_HEADERS = 50;
const BIG_HEAD = REQ + 'HTTP/1.1 200 OK\r\nDate: Mon, 05 Jan 2026 10:00:00 GMT\r\n\r\n';
const MAX_CAPTURE = 1024 * 1024;

const cases: Case[] = [
  // --- the embedded request
  ['empty capture record', put(''), 400],
  ['no request line (starts with a header)', put('Host: www.example.org\r\n\r\n' + RES()), 400],
  ['request line with two parts', put(rec(reqWith('GET /page'))), 400],
  ['request line with four parts', put(rec(reqWith('GET /a b HTTP/1.1'))), 400],
  ['bad method (not a token)', put(rec(reqWith('G(T /page HTTP/1.1'))), 400],
  ['method other than GET (POST)', put(rec(reqWith('POST /page HTTP/1.1'))), 400],
  ['bad HTTP version', put(rec(reqWith('GET /page HTTP/3.7'))), 400],
  ['no HTTP version', put(rec(reqWith('GET /page FOO'))), 400],
  ['header without a colon', put(rec(reqWith('GET /page HTTP/1.1', 'Host www.example.org\r\n'))), 400],
  ['header name with a space before the colon', put(rec(reqWith('GET /page HTTP/1.1', 'Host : www.example.org\r\n'))), 400],
  ['obs-fold continuation line', put(rec(reqWith('GET /page HTTP/1.1', 'Host: www.example.org\r\nX-A: 1\r\n  folded\r\n'))), 400],
  ['bare LF line ends', put('GET /page HTTP/1.1\nHost: www.example.org\n\nHTTP/1.1 200 OK\nContent-Length: 2\n\nhi'), 400],
  ['bare LF in one header line', put(rec('GET /page HTTP/1.1\r\nHost: www.example.org\nX-A: 1\r\n\r\n')), 400],
  ['bare CR inside a header', put(rec(reqWith('GET /page HTTP/1.1', 'Host: www.example.org\r\nX-A: a\rb\r\n'))), 400],
  ['missing Host', put(rec(reqWith('GET /page HTTP/1.1', 'Accept: */*\r\n'))), 400],
  ['two Host headers', put(rec(reqWith('GET /page HTTP/1.1', 'Host: www.example.org\r\nHost: evil.example\r\n'))), 400],
  ['Host with a path', put(rec(reqWith('GET /page HTTP/1.1', 'Host: www.example.org/evil\r\n'))), 400],
  ['Host with spaces', put(rec(reqWith('GET /page HTTP/1.1', 'Host: www.example .org\r\n'))), 400],
  ['Host with userinfo', put(rec(reqWith('GET /page HTTP/1.1', 'Host: user@www.example.org\r\n'))), 400],
  ['Host with a port out of range', put(rec(reqWith('GET /page HTTP/1.1', 'Host: www.example.org:99999\r\n'))), 400],
  ['asterisk-form target', put(rec(reqWith('GET * HTTP/1.1'))), 400],
  ['authority-form target', put(rec(reqWith('GET www.example.org:80 HTTP/1.1'))), 400],
  ['target starting with //', put(rec(reqWith('GET //evil.example/x HTTP/1.1'))), 400],
  ['absolute-form target naming another host', put(rec(reqWith('GET http://evil.example/x HTTP/1.1'))), 400],
  ['target with a .. segment', put(rec(reqWith('GET /a/../etc/passwd HTTP/1.1'))), 400],
  ['target with an encoded .. segment', put(rec(reqWith('GET /a/%2e%2E/b HTTP/1.1'))), 400],
  ['target with %00', put(rec(reqWith('GET /a%00.html HTTP/1.1'))), 400],
  ['target with an encoded CRLF', put(rec(reqWith('GET /a%0D%0ASet-Cookie:x HTTP/1.1'))), 400],
  ['target with a NUL byte', put(rec(reqWith('GET /a\0b HTTP/1.1'))), 400],
  ['target longer than max_url_length (10 KB)', put(rec(reqWith(`GET /${'a'.repeat(10_000)} HTTP/1.1`))), 400],
  ['target of 100 KB (over max_head_bytes)', put(rec(reqWith(`GET /${'a'.repeat(100_000)} HTTP/1.1`))), 431],
  ['NUL byte in a header value', put(rec(reqWith('GET /page HTTP/1.1', 'Host: www.example.org\r\nX-A: a\0b\r\n'))), 400],
  [
    'non-UTF-8 byte in a header value',
    put(Buffer.concat([Buffer.from('GET /page HTTP/1.1\r\nHost: www.example.org\r\nX-Name: caf'), Buffer.from([0xe9]), Buffer.from('\r\n\r\n' + RES())])),
    400,
  ],
  [
    'non-UTF-8 byte in a response header',
    put(
      Buffer.concat([
        Buffer.from(REQ + 'HTTP/1.1 200 OK\r\nContent-Disposition: attachment; filename="'),
        Buffer.from([0xff, 0xfe]),
        Buffer.from('"\r\nContent-Length: 2\r\n\r\nhi'),
      ]),
    ),
    400,
  ],
  // --- the embedded response
  ['no blank line between the heads', put('GET /page HTTP/1.1\r\nHost: www.example.org\r\n' + RES()), 400],
  ['no status line (record ends after the request head)', put(REQ), 400],
  ['record ends inside the response head', put(REQ + 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n'), 400],
  ['status line without a code', put(REQ + 'HTTP/1.1 OK\r\n\r\n'), 400],
  ['status code of four digits', put(REQ + 'HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n'), 400],
  ['status code 600', put(REQ + 'HTTP/1.1 600 Odd\r\nContent-Length: 0\r\n\r\n'), 400],
  ['interim status 101', put(REQ + 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n'), 400],
  ['status line with a bad version', put(REQ + 'HTTP/9.9 200 OK\r\nContent-Length: 0\r\n\r\n'), 400],
  [`more than max_headers (${MAX_HEADERS}) response headers`, put(REQ + 'HTTP/1.1 200 OK\r\n' + 'X-A: 1\r\n'.repeat(MAX_HEADERS + 1) + '\r\n'), 431],
  ['heads over max_head_bytes (64 KiB)', put(REQ + 'HTTP/1.1 200 OK\r\n' + `X-Big: ${'b'.repeat(70_000)}\r\n` + '\r\n'), 431],
  ['body longer than the embedded Content-Length', put(REQ + 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhello'), 400],
  ['body shorter than the embedded Content-Length', put(REQ + 'HTTP/1.1 200 OK\r\nContent-Length: 200\r\n\r\nhello'), 400],
  ['embedded Content-Length not a number', put(REQ + 'HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\nhello'), 400],
  ['two different embedded Content-Lengths', put(REQ + 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello'), 400],
  ['Transfer-Encoding in the embedded response', put(REQ + 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n'), 400],
  ['Date in the year 0', put(dateRec('Sat, 01 Jan 0000 00:00:00 GMT')), 400],
  ['Date in the year 9999', put(dateRec('Fri, 31 Dec 9999 23:59:59 GMT')), 400],
  ['Date on 31 February', put(dateRec('Sat, 31 Feb 2026 10:00:00 GMT')), 400],
  ['Date before 1970', put(dateRec('Fri, 01 Jan 1960 00:00:00 GMT')), 400],
  // --- the PUT itself
  [
    'PUT without Content-Length or chunked (411)',
    Buffer.from('PUT /put/http://www.example.org/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'),
    411,
    { halfClose: true },
  ],
  [
    'Content-Length over max_capture_bytes (413)',
    Buffer.from(`PUT /put/http://www.example.org/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: ${MAX_CAPTURE + 1}\r\nConnection: close\r\n\r\n`),
    413,
    { halfClose: true },
  ],
  [
    'chunked body growing over max_capture_bytes (413)',
    putChunked(`100000\r\n${BIG_HEAD}${'x'.repeat(0x100000 - BIG_HEAD.length)}\r\n10\r\n${'y'.repeat(16)}\r\n0\r\n\r\n`),
    413,
  ],
  ['malformed chunk size', putChunked('zz\r\nhello\r\n0\r\n\r\n'), 400],
  ['chunk longer than its size', putChunked('2\r\nhello\r\n0\r\n\r\n'), 400],
  ['truncated chunked body (client ends mid-chunk)', putChunked(`1000\r\n${REQ}`), (s) => s === 400 || s === -1, { halfClose: true }],
  [
    'Content-Length together with Transfer-Encoding',
    Buffer.from(`PUT /put/x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n`),
    400,
  ],
  ['PUT request line with four parts', Buffer.from('PUT /put/x y HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n'), 400],
  [
    'PUT head over max_http_header_bytes (100 KB URL)',
    Buffer.from(`PUT /put/http://www.example.org/${'a'.repeat(100_000)} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n`),
    431,
  ],
  [
    'PUT body shorter than its Content-Length, then the client ends',
    Buffer.concat([Buffer.from(`PUT /put/x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5000\r\nConnection: close\r\n\r\n`), Buffer.from(rec(REQ))]),
    (s) => s === 400 || s === -1,
    { halfClose: true },
  ],
  [
    'body cut by a client disconnect',
    Buffer.concat([Buffer.from(`PUT /put/x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5000\r\n\r\n`), Buffer.from(rec(REQ))]),
    (s) => s === -1,
    { cut: true },
  ],
];

t.test(`${cases.length} kinds of bad capture PUT: 4xx with a one-line reason, nothing stored, the daemon still serving`, async (t) => {
  const a = await startArchive(`max_capture_bytes: ${MAX_CAPTURE}\nmax_headers: ${MAX_HEADERS}\n` + TWO_ARCHIVES);
  t.teardown(() => a.close());
  t.ok(cases.length >= 30, `${cases.length} kinds`);
  for (const [name, bytes, expect, opts] of cases) {
    const r = await raw(a.port, bytes, opts);
    const status = r.status ?? -1;
    if (typeof expect === 'number') t.equal(status, expect, `${name}: ${expect}`);
    else t.ok(expect(status), `${name}: answered ${status === -1 ? 'nothing (the client is gone)' : status}`);
    if (r.status !== null) t.match(r.body, /^[^\n]+\n$/, `${name}: one-line reason: ${r.body.trim().slice(0, 120)}`);
    t.equal(await a.store.index.count(), 0, `${name}: no index row`);
    t.equal(await warcBytes(a.dataDir), 0, `${name}: no WARC bytes`);
    const alive = await request(`${a.url}/tg/http://www.example.org/page`);
    t.equal(alive.status, 404, `${name}: the daemon still answers`);
  }
  const ok = await putCapture(a, '', Buffer.from(rec(REQ)));
  t.equal(ok.status, 201, 'a good capture is still stored after all that');
  t.equal((await request(`${a.url}/current/memento/20260105100000id_/http://www.example.org/page`)).text, 'hello');
});
