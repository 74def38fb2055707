import t from 'tap';
import {
  formatFieldLines,
  fromRawHeaders,
  getHeader,
  getHeaders,
  HeadSyntaxError,
  isFieldValue,
  isToken,
  parseFields,
  parseHead,
  parseRequestLine,
  parseStatusLine,
  type RawHeader,
  splitHead,
} from '#shared/http-head.js';

const b = (s: string) => Buffer.from(s, 'latin1');

t.test('RFC 9112 §2.1, §5: start line and name: value fields, each line ending in CRLF', async (t) => {
  const head = b('GET /a HTTP/1.1\r\nHost: a.example\r\nAccept:  text/html  \r\nX-Empty:\r\n\r\n');
  const want = {
    startLine: 'GET /a HTTP/1.1',
    fields: [
      ['Host', 'a.example'],
      ['Accept', 'text/html'],
      ['X-Empty', ''],
    ],
  };
  t.same(parseHead(head), want, 'lenient');
  t.same(parseHead(head, { strict: true }), want, 'strict');
});

t.test('RFC 9112 §5.1: leading and trailing whitespace of a value is not part of it; inner whitespace is', async (t) => {
  t.same(parseHead(b('X\r\nA: \t a \t b \t\r\n'), { strict: true }).fields, [['A', 'a \t b']]);
});

t.test('the final blank line is optional; an empty head has an empty start line and no fields', async (t) => {
  t.same(parseHead(b('HTTP/1.1 200 OK\r\nA: 1\r\n')), { startLine: 'HTTP/1.1 200 OK', fields: [['A', '1']] });
  t.same(parseHead(b('HTTP/1.1 200 OK\r\nA: 1')), { startLine: 'HTTP/1.1 200 OK', fields: [['A', '1']] });
  t.same(parseHead(b('')), { startLine: '', fields: [] });
});

t.test('bytes are read as latin1: obs-text stays one character per byte, as on the wire', async (t) => {
  const [[, v]] = parseHead(Buffer.from('X\r\nA: é\r\n\r\n', 'utf8'), { strict: true }).fields;
  t.equal(v, '\xc3\xa9');
  t.equal(Buffer.from(v, 'latin1').toString('utf8'), 'é');
});

t.test('field names keep their case and repeated fields stay separate, in order', async (t) => {
  t.same(parseHead(b('X\r\nSet-Cookie: a\r\nset-cookie: b\r\n\r\n'), { strict: true }).fields, [
    ['Set-Cookie', 'a'],
    ['set-cookie', 'b'],
  ]);
});

t.test('lenient mode skips lines without a colon or with an empty name, and reads what it can', async (t) => {
  t.same(parseHead(b('GET / HTTP/1.1\r\nHost: a\r\nnocolon\r\n: v\r\nB: 2\r\n\r\n')).fields, [
    ['Host', 'a'],
    ['B', '2'],
  ]);
  t.same(parseHead(b('X\r\nHost : a\r\n folded\r\n\r\n')).fields, [['Host', 'a']], 'space before colon trimmed; a folded line without a colon skipped');
  t.same(
    parseHead(b('X\r\nA: 1\r\nB: 2\r\n\r\n'), { maxFields: 1 }).fields,
    [
      ['A', '1'],
      ['B', '2'],
    ],
    'maxFields applies in strict mode only',
  );
});

t.test('strict mode refuses what an archive must not store, with a one-line HeadSyntaxError', async (t) => {
  const cases: [string, RegExp, string][] = [
    ['GET / HTTP/1.1\r\nHost: a\0\r\n\r\n', /^head contains a NUL byte$/, 'NUL byte (RFC 9110 §5.5)'],
    ['GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n', /^head has a bare LF or CR; lines must end with CRLF$/, 'bare LF (RFC 9112 §2.2)'],
    ['GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n', /bare LF or CR/, 'bare CR (RFC 9112 §2.2)'],
    ['GET /\n HTTP/1.1\r\nHost: a\r\n\r\n', /bare LF or CR/, 'bare LF in the start line'],
    ['GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n', /^head header line folding \(obs-fold\) is not accepted$/, 'obs-fold with SP (RFC 9112 §5.2)'],
    ['GET / HTTP/1.1\r\nHost: a\r\n\tfolded\r\n\r\n', /obs-fold/, 'obs-fold with HTAB (RFC 9112 §5.2)'],
    ['GET / HTTP/1.1\r\nnocolon\r\n\r\n', /^head header line without a colon: "nocolon"$/, 'no colon'],
    ['GET / HTTP/1.1\r\n: v\r\n\r\n', /without a colon: ": v"/, 'empty name'],
    ['GET / HTTP/1.1\r\nHo st: a\r\n\r\n', /^head header name is not a token: "Ho st"$/, 'name with a space (RFC 9110 §5.1 token)'],
    ['GET / HTTP/1.1\r\nHost : a\r\n\r\n', /header name is not a token: "Host "/, 'whitespace before the colon (RFC 9112 §5.1)'],
    ['GET / HTTP/1.1\r\nX(y): a\r\n\r\n', /header name is not a token/, 'delimiter in the name'],
    ['GET / HTTP/1.1\r\nHost: a\x01b\r\n\r\n', /^head header Host has a control character in its value$/, 'control character (RFC 9110 §5.5)'],
    ['GET / HTTP/1.1\r\nHost: a\x7f\r\n\r\n', /control character/, 'DEL'],
    ['GET / HTTP/1.1\r\nX: \xff\xfe\r\n\r\n', /^head header X is not valid UTF-8$/, 'non-UTF-8 obs-text'],
  ];
  for (const [text, message, rule] of cases) {
    t.throws(() => parseHead(b(text), { strict: true }), HeadSyntaxError, rule);
    t.throws(() => parseHead(b(text), { strict: true }), { message }, rule);
  }
});

t.test('strict mode accepts HTAB and valid UTF-8 in a value', async (t) => {
  t.same(parseHead(b('X\r\nA: a\tb\r\nB: \xc3\xa9\r\n\r\n'), { strict: true }).fields, [
    ['A', 'a\tb'],
    ['B', '\xc3\xa9'],
  ]);
});

t.test('strict mode names the head in messages (what)', async (t) => {
  t.throws(() => parseHead(b('GET / HTTP/1.1\r\nnocolon\r\n\r\n'), { strict: true, what: 'embedded request' }), {
    message: /^embedded request header line without a colon/,
  });
});

t.test('strict maxFields: more field lines than allowed → HeadSyntaxError with tooMany', async (t) => {
  const head = b('GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\n\r\n');
  t.equal(parseHead(head, { strict: true, maxFields: 2 }).fields.length, 2, 'at the limit');
  try {
    parseHead(head, { strict: true, maxFields: 1, what: 'embedded response' });
    t.fail('no error');
  } catch (err) {
    t.type(err, HeadSyntaxError);
    t.equal((err as HeadSyntaxError).tooMany, true);
    t.equal((err as Error).message, 'embedded response has 2 header lines, more than the limit of 1');
  }
  try {
    parseHead(b('X\r\nnocolon\r\n'), { strict: true, maxFields: 5 });
    t.fail('no error');
  } catch (err) {
    t.equal((err as HeadSyntaxError).tooMany, undefined, 'other syntax errors are not tooMany');
  }
});

t.test('splitHead and parseFields are the two steps of parseHead', async (t) => {
  const head = b('HTTP/1.1 200 OK\r\nA: 1\r\nb:2\r\nC:\r\n\r\n');
  const split = splitHead(head);
  t.same(split, { startLine: 'HTTP/1.1 200 OK', fieldLines: ['A: 1', 'b:2', 'C:'] });
  t.same(parseFields(split.fieldLines), [
    ['A', '1'],
    ['b', '2'],
    ['C', ''],
  ]);
  t.same(parseFields(split.fieldLines), parseHead(head).fields);
  t.throws(() => splitHead(b('X\r\nA: \0\r\n'), { strict: true }), HeadSyntaxError, 'splitHead checks NUL');
  t.throws(() => parseFields(['A: 1', ' fold'], { strict: true }), HeadSyntaxError, 'parseFields checks obs-fold');
});

t.test('parseStatusLine: version SP 3DIGIT SP reason-phrase (RFC 9112 §4); the version word is returned as it is, for the caller to check', async (t) => {
  const cases: [string, ReturnType<typeof parseStatusLine>][] = [
    ['HTTP/1.1 200 OK', { httpVersion: 'HTTP/1.1', status: 200, reason: 'OK' }],
    ['HTTP/1.0 404 Not Found', { httpVersion: 'HTTP/1.0', status: 404, reason: 'Not Found' }],
    ['HTTP/1.1 204', { httpVersion: 'HTTP/1.1', status: 204, reason: '' }],
    ['HTTP/1.1 200 ', { httpVersion: 'HTTP/1.1', status: 200, reason: '' }],
    ['HTTP/2 200', { httpVersion: 'HTTP/2', status: 200, reason: '' }],
    ['HTTP/2.0 301 Moved Permanently', { httpVersion: 'HTTP/2.0', status: 301, reason: 'Moved Permanently' }],
    ['HTTP/1.2 200 OK', { httpVersion: 'HTTP/1.2', status: 200, reason: 'OK' }],
    ['http/1.1 200 OK', { httpVersion: 'http/1.1', status: 200, reason: 'OK' }],
    ['HTTP/1.1 20 OK', undefined],
    ['HTTP/1.1 2000 OK', undefined],
    ['HTTP/1.1  200 OK', undefined],
    ['ICY 200 OK', { httpVersion: 'ICY', status: 200, reason: 'OK' }],
    ['', undefined],
  ];
  for (const [line, want] of cases) t.same(parseStatusLine(line), want, JSON.stringify(line));
});

t.test('parseRequestLine: method SP request-target SP HTTP-version (RFC 9112 §3)', async (t) => {
  const cases: [string, ReturnType<typeof parseRequestLine>][] = [
    ['GET /a?b=1 HTTP/1.1', { method: 'GET', target: '/a?b=1', httpVersion: 'HTTP/1.1' }],
    ['GET http://a.example/ HTTP/1.1', { method: 'GET', target: 'http://a.example/', httpVersion: 'HTTP/1.1' }],
    ['OPTIONS * HTTP/1.1', { method: 'OPTIONS', target: '*', httpVersion: 'HTTP/1.1' }],
    ['GET  / HTTP/1.1', undefined],
    ['GET /', undefined],
    ['GET / HTTP/1.1 x', undefined],
    ['', undefined],
  ];
  for (const [line, want] of cases) t.same(parseRequestLine(line), want, JSON.stringify(line));
});

t.test('RFC 9110 §5.1: field names are case-insensitive in getHeader and getHeaders', async (t) => {
  const hs: RawHeader[] = [
    ['Set-Cookie', 'a'],
    ['Host', 'h'],
    ['set-cookie', 'b'],
  ];
  t.equal(getHeader(hs, 'SET-COOKIE'), 'a', 'the first value');
  t.equal(getHeader(hs, 'host'), 'h');
  t.equal(getHeader(hs, 'x'), undefined);
  t.same(getHeaders(hs, 'Set-cookie'), ['a', 'b'], 'every value in order');
  t.same(getHeaders(hs, 'x'), []);
});

t.test("fromRawHeaders pairs Node's flat rawHeaders; a dangling name is dropped", async (t) => {
  t.same(fromRawHeaders(['Host', 'a', 'set-cookie', 'x', 'set-cookie', 'y']), [
    ['Host', 'a'],
    ['set-cookie', 'x'],
    ['set-cookie', 'y'],
  ]);
  t.same(fromRawHeaders(['A', '1', 'odd']), [['A', '1']]);
  t.same(fromRawHeaders([]), []);
});

t.test('formatFieldLines writes Name: value CRLF in order, and parses back', async (t) => {
  const hs: RawHeader[] = [
    ['Set-Cookie', 'a'],
    ['Host', 'h'],
    ['set-cookie', 'b'],
  ];
  const text = formatFieldLines(hs);
  t.equal(text, 'Set-Cookie: a\r\nHost: h\r\nset-cookie: b\r\n');
  t.same(parseHead(b('HTTP/1.1 200 OK\r\n' + text + '\r\n'), { strict: true }).fields, hs);
  t.equal(formatFieldLines([]), '');
});

t.test('isToken (RFC 9110 §5.6.2) and isFieldValue (RFC 9110 §5.5)', async (t) => {
  for (const s of ['GET', 'X-Foo', "!#$%&'*+-.^_`|~09az"]) t.equal(isToken(s), true, s);
  for (const s of ['', 'G T', 'a:b', 'a"b', '(x)', 'é']) t.equal(isToken(s), false, JSON.stringify(s));
  for (const s of ['', 'a b', 'a\tb', '\xc3\xa9']) t.equal(isFieldValue(s), true, JSON.stringify(s));
  for (const s of ['a\0', 'a\r', 'a\n', '\x7f', '\xff']) t.equal(isFieldValue(s), false, JSON.stringify(s));
});
