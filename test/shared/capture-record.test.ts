import t, { type Test } from 'tap';
import {
  type CapturedRequest,
  type CapturedResponse,
  type CaptureHead,
  CaptureRecordError,
  CaptureRecordParser,
  DEFAULT_HEAD_LIMITS,
  type HeadLimits,
  serializeCaptureHead,
} from '#shared/capture-record.js';

const b = (s: string) => Buffer.from(s, 'latin1');

const REQUEST_HEAD = 'GET /a?q=1 HTTP/1.1\r\nHost: www.example.org\r\nX-Client-IP: 192.0.2.7\r\n\r\n';
const RESPONSE_HEAD = 'HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nSet-Cookie: a=1\r\nset-cookie: b=2\r\n\r\n';
// The body holds what looks like heads and blank lines: it must pass through untouched.
const BODY = Buffer.concat([b('<p>hi</p>\r\n\r\nHTTP/1.1 500 X\r\n\r\n\n\n'), Buffer.from([0, 0xff, 0xfe, 0x0d])]);
const RECORD = Buffer.concat([b(REQUEST_HEAD), b(RESPONSE_HEAD), BODY]);

/**
 * Feeds `record` in chunks of `size` bytes (whole when size is 0), checks
 * that no body byte comes before `head` is set, and returns head and body.
 */
function parse(record: Buffer, size = 0, limits: Partial<HeadLimits> = {}): { head: CaptureHead; body: Buffer; bodyBeforeHead: boolean } {
  const p = new CaptureRecordParser(limits);
  const out: Buffer[] = [];
  let bodyBeforeHead = false;
  const step = size || Math.max(record.length, 1);
  for (let i = 0; i < record.length; i += step) {
    const got = p.feed(record.subarray(i, i + step));
    if (got.length > 0 && !p.head) bodyBeforeHead = true;
    out.push(got);
  }
  p.finish();
  return { head: p.head!, body: Buffer.concat(out), bodyBeforeHead };
}

/** Asserts a CaptureRecordError with `status` and a one-line message matching `message`. */
function refused(t: Test, fn: () => unknown, status: number, message: RegExp, name: string): void {
  try {
    fn();
    t.fail(`${name}: no CaptureRecordError`);
  } catch (err) {
    t.type(err, CaptureRecordError, name);
    t.equal((err as CaptureRecordError).status, status, `${name}: status ${status}`);
    t.match((err as Error).message, message, name);
    t.notMatch((err as Error).message, /[\r\n]/, `${name}: one line`);
  }
}

t.test('a record is parsed into the two heads, their exact bytes, and the body', async (t) => {
  const { head, body } = parse(RECORD);
  t.same(head.request, {
    method: 'GET',
    target: '/a?q=1',
    httpVersion: 'HTTP/1.1',
    headers: [
      ['Host', 'www.example.org'],
      ['X-Client-IP', '192.0.2.7'],
    ],
  });
  t.same(head.response, {
    httpVersion: 'HTTP/1.1',
    status: 200,
    reason: 'OK',
    headers: [
      ['Content-Type', 'text/html'],
      ['Set-Cookie', 'a=1'],
      ['set-cookie', 'b=2'],
    ],
  });
  t.equal(head.requestBytes.toString('latin1'), REQUEST_HEAD, 'request bytes as received');
  t.equal(head.responseBytes.toString('latin1'), RESPONSE_HEAD, 'response bytes as received');
  t.ok(body.equals(BODY), 'body bytes as received');
});

t.test('fed whole, in odd chunks or byte by byte: the same heads and body; head is set before the first body byte', async (t) => {
  const whole = parse(RECORD);
  for (const size of [1, 2, 3, 7, 64, RESPONSE_HEAD.length]) {
    const got = parse(RECORD, size);
    t.same(got.head, whole.head, `chunks of ${size}: same head`);
    t.ok(got.body.equals(whole.body), `chunks of ${size}: same body`);
    t.equal(got.bodyBeforeHead, false, `chunks of ${size}: no body byte before head`);
  }
});

t.test('after the heads, feed returns each chunk as it is', async (t) => {
  const p = new CaptureRecordParser();
  t.equal(p.feed(b(REQUEST_HEAD)).length, 0, 'nothing while the heads are read');
  t.equal(p.head, null);
  const first = p.feed(Buffer.concat([b(RESPONSE_HEAD), b('ab')]));
  t.equal(first.toString(), 'ab');
  t.not(p.head, null);
  const chunk = b('\r\n\r\ncd');
  t.equal(p.feed(chunk), chunk);
  t.doesNotThrow(() => p.finish());
});

t.test('a record with an empty body, and HTTP/1.0 and HTTP/2 start lines', async (t) => {
  const { head, body } = parse(b('POST http://a.example/x HTTP/1.0\r\nHost: a.example\r\n\r\nHTTP/2 204\r\n\r\n'));
  t.equal(body.length, 0);
  t.same(head.request, { method: 'POST', target: 'http://a.example/x', httpVersion: 'HTTP/1.0', headers: [['Host', 'a.example']] });
  t.same(head.response, { httpVersion: 'HTTP/2', status: 204, reason: '', headers: [] });
});

t.test('limits: heads over maxHeadBytes, or more header lines than maxHeaders, are 431 (RFC 6585 §5)', async (t) => {
  const headBytes = REQUEST_HEAD.length + RESPONSE_HEAD.length;
  t.ok(parse(RECORD, 0, { maxHeadBytes: headBytes }).body.equals(BODY), 'heads of exactly maxHeadBytes pass; the body does not count');
  t.ok(parse(RECORD, 1, { maxHeadBytes: headBytes }).body.equals(BODY), 'the same byte by byte');
  for (const size of [0, 1, 10]) {
    refused(
      t,
      () => parse(RECORD, size, { maxHeadBytes: headBytes - 1 }),
      431,
      /^capture record heads exceed the limit of \d+ bytes$/,
      `one byte over, chunks of ${size}`,
    );
    refused(t, () => parse(RECORD, size, { maxHeadBytes: 40 }), 431, /exceed the limit of 40 bytes/, `request head over the limit, chunks of ${size}`);
  }
  // A head that never ends is refused once it passes the limit, without waiting for the end of the record.
  const p = new CaptureRecordParser({ maxHeadBytes: 100 });
  refused(
    t,
    () => {
      for (let i = 0; i < 10; i++) p.feed(b('X-Long: aaaaaaaaaaaa\r\n'));
    },
    431,
    /limit of 100 bytes/,
    'endless head',
  );

  t.equal(parse(RECORD, 0, { maxHeaders: 4 }).head.response.headers.length, 3, 'three response header lines with maxHeaders 4');
  refused(t, () => parse(RECORD, 0, { maxHeaders: 2 }), 431, /^embedded response has 3 header lines, more than the limit of 2$/, 'response over maxHeaders');
  refused(t, () => parse(RECORD, 0, { maxHeaders: 1 }), 431, /^embedded request has 2 header lines, more than the limit of 1$/, 'request over maxHeaders');
  t.same(DEFAULT_HEAD_LIMITS, { maxHeadBytes: 64 * 1024, maxHeaders: 200 }, 'defaults');
});

t.test('records that break the format are a CaptureRecordError 400 with a one-line reason', async (t) => {
  const OK = 'HTTP/1.1 200 OK\r\n\r\n';
  const REQ = 'GET / HTTP/1.1\r\nHost: a\r\n\r\n';
  const cases: [string, RegExp, string][] = [
    ['', /^capture record is empty$/, 'empty record'],
    ['GET / HTTP/1.1\r\nHost: a\r\n', /^capture record ends inside the request head/, 'ends inside the request head'],
    [REQ, /^capture record ends inside the response head/, 'ends after the request head'],
    [REQ + 'HTTP/1.1 200 OK\r\n', /ends inside the response head/, 'ends inside the response head'],
    ['GET /\r\nHost: a\r\n\r\n' + OK, /^request line is not "METHOD target HTTP\/x\.y": "GET \/"$/, 'request line with two parts'],
    ['\r\n\r\n' + OK, /request line is not "METHOD target HTTP\/x\.y": ""/, 'empty request line'],
    ['G(T / HTTP/1.1\r\nHost: a\r\n\r\n' + OK, /^request method is not a token: "G\(T"$/, 'method not a token (RFC 9110 §9.1)'],
    ['GET / HTTP/1.2\r\nHost: a\r\n\r\n' + OK, /^request line does not end in HTTP\/1\.0, HTTP\/1\.1 or HTTP\/2: "HTTP\/1\.2"$/, 'bad version'],
    ['GET / http/1.1\r\nHost: a\r\n\r\n' + OK, /does not end in HTTP/, 'version is case-sensitive (RFC 9112 §2.3)'],
    ['GET /\xe9 HTTP/1.1\r\nHost: a\r\n\r\n' + OK, /^request target is empty or has a control, space or non-ASCII byte$/, 'non-ASCII byte in the target'],
    ['GET /\x7f HTTP/1.1\r\nHost: a\r\n\r\n' + OK, /request target is empty or has a control/, 'DEL in the target'],
    ['GET  HTTP/1.1\r\nHost: a\r\n\r\n' + OK, /request target is empty/, 'empty target'],
    ['GET / HTTP/1.1\r\nHost a\r\n\r\n' + OK, /^embedded request header line without a colon: "Host a"$/, 'request header without a colon'],
    ['GET / HTTP/1.1\r\nHost: a\nB: c\r\n\r\n' + OK, /^embedded request has a bare LF or CR/, 'bare LF inside the request head'],
    [REQ + 'HTTP/1.1 OK\r\n\r\n', /^status line is not "HTTP\/x\.y NNN reason": "HTTP\/1\.1 OK"$/, 'status line without a code'],
    [REQ + 'HTTP/1.1 099 Low\r\n\r\n', /^status code 99 is outside 100-599$/, 'status below 100 (RFC 9110 §15)'],
    [REQ + 'HTTP/1.1 600 High\r\n\r\n', /^status code 600 is outside 100-599$/, 'status above 599 (RFC 9110 §15)'],
    [REQ + 'HTTP/1.1 200 O\x01K\r\n\r\n', /^reason phrase has a control character/, 'control character in the reason'],
    [REQ + 'HTTP/1.1 200 OK\r\nX y\r\n\r\n', /^embedded response header line without a colon: "X y"$/, 'response header without a colon'],
    [REQ + 'HTTP/1.1 200 OK\r\nA: \0\r\n\r\n', /^embedded response contains a NUL byte$/, 'NUL in the response head'],
    [REQ + 'HTTP/1.1 200 OK\r\n folded\r\n\r\n', /^embedded response header line folding/, 'obs-fold in the response head'],
    ['GET / HTTP/1.1\nHost: a\n\nHTTP/1.1 200 OK\n\nbody', /^capture record has a bare LF; lines must end with CRLF$/, 'bare-LF record'],
  ];
  for (const [text, message, name] of cases) {
    refused(t, () => parse(b(text)), 400, message, `${name} (whole)`);
    refused(t, () => parse(b(text), 1), 400, message, `${name} (byte by byte)`);
  }
});

t.test('finish before any byte: the record is empty', async (t) => {
  refused(t, () => new CaptureRecordParser().finish(), 400, /^capture record is empty$/, 'no feed');
  const p = new CaptureRecordParser();
  p.feed(Buffer.alloc(0));
  refused(t, () => p.finish(), 400, /^capture record is empty$/, 'an empty chunk');
});

const request: CapturedRequest = {
  method: 'GET',
  target: '/a?q=1',
  httpVersion: 'HTTP/1.1',
  headers: [
    ['Host', 'www.example.org'],
    ['Accept', 'text/html'],
    ['X-Utf8', '\xc3\xa9'],
  ],
};
const response: CapturedResponse = {
  httpVersion: 'HTTP/1.1',
  status: 200,
  reason: 'OK',
  headers: [
    ['Content-Type', 'text/html'],
    ['Set-Cookie', 'a=1'],
    ['Set-Cookie', 'b=2'],
  ],
};

t.test('serializeCaptureHead writes both heads with their blank lines', async (t) => {
  t.equal(
    serializeCaptureHead(request, response).toString('latin1'),
    'GET /a?q=1 HTTP/1.1\r\nHost: www.example.org\r\nAccept: text/html\r\nX-Utf8: \xc3\xa9\r\n\r\n' +
      'HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n',
  );
  t.equal(
    serializeCaptureHead({ ...request, headers: [['Host', 'a']] }, { httpVersion: 'HTTP/1.1', status: 204, reason: '', headers: [] }).toString('latin1'),
    'GET /a?q=1 HTTP/1.1\r\nHost: a\r\n\r\nHTTP/1.1 204\r\n\r\n',
    'an empty reason: no trailing space',
  );
});

t.test('serializeCaptureHead then parse gives back the same heads', async (t) => {
  for (const res of [
    response,
    { httpVersion: 'HTTP/1.0', status: 404, reason: 'Not Found', headers: [] },
    { httpVersion: 'HTTP/2', status: 304, reason: '', headers: [['ETag', '"x"']] },
  ] as CapturedResponse[]) {
    const head = serializeCaptureHead(request, res);
    const got = parse(Buffer.concat([head, b('body')]), 5);
    t.same(got.head.request, request, `${res.status}: request`);
    t.same(got.head.response, res, `${res.status}: response`);
    t.ok(Buffer.concat([got.head.requestBytes, got.head.responseBytes]).equals(head), `${res.status}: bytes`);
    t.equal(got.body.toString(), 'body');
  }
});

t.test('serializeCaptureHead refuses CR or LF in a header name or value (TypeError), so no header can forge a second head', async (t) => {
  const cases: [CapturedRequest, CapturedResponse, string][] = [
    [{ ...request, headers: [['Host', 'a\r\nX: y']] }, response, 'CRLF in a request value'],
    [{ ...request, headers: [['Host', 'a\n']] }, response, 'LF in a request value'],
    [request, { ...response, headers: [['X\r', 'y']] }, 'CR in a response name'],
    [request, { ...response, headers: [['X', 'y\r\n\r\nHTTP/1.1 200 OK']] }, 'a forged head in a response value'],
  ];
  for (const [req, res, name] of cases) t.throws(() => serializeCaptureHead(req, res), TypeError, name);
});
