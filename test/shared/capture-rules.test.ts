import t from 'tap';
import { type CapturedRequest, type CapturedResponse, serializeCaptureHead } from '#shared/capture-record.js';
import { DEFAULT_CAPTURE_LIMITS, inspectCapture, inspectCaptureHeads } from '#shared/capture-rules.js';
import type { RawHeader } from '#shared/http-head.js';

const NOW = new Date('2026-11-24T12:00:00Z');

function request(over: Partial<CapturedRequest> = {}): CapturedRequest {
  return {
    method: 'GET',
    target: '/a?q=1',
    httpVersion: 'HTTP/1.1',
    headers: [
      ['Host', 'www.example.org'],
      ['Accept', '*/*'],
    ],
    ...over,
  };
}
function response(over: Partial<CapturedResponse> = {}): CapturedResponse {
  return {
    httpVersion: 'HTTP/1.1',
    status: 200,
    reason: 'OK',
    headers: [
      ['Content-Type', 'text/html; charset=utf-8'],
      ['Date', 'Tue, 24 Nov 2026 11:59:00 GMT'],
      ['Content-Length', '10'],
    ],
    ...over,
  };
}

/** What the archive makes of the serialized heads, and what inspectCaptureHeads says, side by side (plain data, for deep equality). */
function both(req: CapturedRequest, res: CapturedResponse, limits = DEFAULT_CAPTURE_LIMITS) {
  const bytes = serializeCaptureHead(req, res);
  const view = (r: ReturnType<typeof inspectCapture>) =>
    'refusal' in r
      ? { refusal: r.refusal.message, status: r.refusal.status }
      : {
          request: r.head.request,
          response: r.head.response,
          requestBytes: r.head.requestBytes.toString('latin1'),
          responseBytes: r.head.responseBytes.toString('latin1'),
          accepted: r.accepted,
        };
  const fast = inspectCaptureHeads(req, res, NOW, limits);
  return { archive: view(inspectCapture(bytes, NOW, limits)), proxy: view(fast), bytesSame: fast.bytes.equals(bytes) };
}

const cases: [string, CapturedRequest, CapturedResponse][] = [
  ['a plain capture', request(), response()],
  ['no reason phrase', request(), response({ reason: '' })],
  ['a reason with spaces at its ends', request(), response({ reason: ' Not Quite OK ' })],
  [
    'an empty field value',
    request({
      headers: [
        ['Host', 'www.example.org'],
        ['X-Empty', ''],
      ],
    }),
    response(),
  ],
  ['a value with a leading space (the parser trims it)', request(), response({ headers: [['Content-Type', ' text/html']] })],
  ['a value with a trailing tab (the parser trims it)', request(), response({ headers: [['Content-Type', 'text/html\t']] })],
  ['a UTF-8 value (latin1 view of its bytes)', request(), response({ headers: [['X-Name', Buffer.from('Ünïcödé', 'utf8').toString('latin1')]] })],
  ['a value that is not UTF-8', request(), response({ headers: [['X-Name', '\xff\xfe']] })],
  ['a control character in a value', request(), response({ headers: [['X-Bell', 'a\x07b']] })],
  ['a field name that is not a token', request(), response({ headers: [['X Name', 'v']] })],
  ['a character beyond latin1 in a value', request(), response({ headers: [['X-Wide', 'a\u0100b']] })],
  ['a character beyond latin1 in the target', request({ target: '/a\u0100' }), response()],
  ['a non-ASCII byte in the target', request({ target: '/caf\xe9' }), response()],
  ['a method that is not GET', request({ method: 'POST' }), response()],
  ['a method that is not a token', request({ method: 'G(T' }), response()],
  ['HTTP/2', request({ httpVersion: 'HTTP/2' }), response({ httpVersion: 'HTTP/2' })],
  ['HTTP/3 in the request line', request({ httpVersion: 'HTTP/3' }), response()],
  ['an interim status', request(), response({ status: 103, reason: 'Early Hints' })],
  ['a status over 599', request(), response({ status: 600 })],
  [
    'two Host fields',
    request({
      headers: [
        ['Host', 'a.example'],
        ['host', 'b.example'],
      ],
    }),
    response(),
  ],
  ['no Host', request({ headers: [['Accept', '*/*']] }), response()],
  ['Transfer-Encoding kept', request(), response({ headers: [['Transfer-Encoding', 'chunked']] })],
  ['two different Content-Lengths', request(), response({ headers: [['Content-Length', '10, 11']] })],
  ['a Date a day ahead', request(), response({ headers: [['Date', 'Thu, 26 Nov 2026 12:00:00 GMT']] })],
  ['a Date that is no instant', request(), response({ headers: [['Date', 'Tue, 31 Nov 2026 12:00:00 GMT']] })],
  ['a dot-segment in the target', request({ target: '/a/../b' }), response()],
  [
    'https by X-Forwarded-Proto',
    request({
      headers: [
        ['Host', 'www.example.org'],
        ['X-Forwarded-Proto', 'https'],
      ],
    }),
    response(),
  ],
  ['an absolute-form target for another host', request({ target: 'http://other.example/x' }), response()],
];

t.test('inspectCaptureHeads gives what the archive makes of the serialized heads: the same verdict, message, fields and bytes', async (t) => {
  for (const [name, req, res] of cases) {
    const { archive, proxy, bytesSame } = both(req, res);
    t.same(proxy, archive, name);
    t.ok(bytesSame, `${name}: the same bytes`);
  }
});

t.test('inspectCaptureHeads refuses what is over the limits as the archive does (431)', async (t) => {
  const many: RawHeader[] = Array.from({ length: 5 }, (_, i) => [`X-${i}`, 'v']);
  const limits = { ...DEFAULT_CAPTURE_LIMITS, maxHeaders: 4 };
  const tooMany = both(request(), response({ headers: many }), limits);
  t.same(tooMany.proxy, tooMany.archive);
  t.match(tooMany.proxy, { status: 431 }, 'too many fields');
  const small = { ...DEFAULT_CAPTURE_LIMITS, maxHeadBytes: 120 };
  const tooLarge = both(request(), response(), small);
  t.same(tooLarge.proxy, tooLarge.archive);
  t.match(tooLarge.proxy, { status: 431 }, 'heads over maxHeadBytes');
  const exact = serializeCaptureHead(request(), response()).length;
  const fits = both(request(), response(), { ...DEFAULT_CAPTURE_LIMITS, maxHeadBytes: exact });
  t.same(fits.proxy, fits.archive);
  t.notOk('refusal' in fits.proxy, 'heads of exactly maxHeadBytes are taken');
});

t.test('inspectCaptureHeads throws TypeError for CR or LF in a field, as serializeCaptureHead does', async (t) => {
  t.throws(() => inspectCaptureHeads(request(), response({ headers: [['X-A', 'a\r\nX-Forged: 1']] }), NOW), TypeError);
  t.throws(
    () =>
      inspectCaptureHeads(
        request({
          headers: [
            ['Host', 'a.example'],
            ['X\nY', '1'],
          ],
        }),
        response(),
        NOW,
      ),
    TypeError,
  );
});
