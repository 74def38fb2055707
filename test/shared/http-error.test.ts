import t from 'tap';
import { errorAnswer, errorText, httpError, isHttpError } from '#shared/http-error.js';

t.test('httpError: status, one-line reason, headers and close', async (t) => {
  const err = httpError(405, 'only GET and HEAD', { headers: { allow: 'GET, HEAD' }, close: true });
  t.type(err, Error);
  t.equal(isHttpError(err), true);
  t.equal(err.status, 405);
  t.equal(err.statusCode, 405);
  t.equal(err.message, 'only GET and HEAD');
  t.same(err.headers, { allow: 'GET, HEAD' });
  t.equal(err.close, true);
});

t.test('httpError: without options there are no headers and no close', async (t) => {
  const err = httpError(404, 'no memento');
  t.equal(err.headers, undefined);
  t.not(err.close, true);
  t.same(errorAnswer(err), { status: 404, reason: 'no memento', headers: {}, close: false });
});

t.test('httpError: CR and LF in the reason are replaced, so the reason stays one line', async (t) => {
  t.equal(httpError(400, 'bad\r\nX-Injected: 1').message, 'bad X-Injected: 1');
  t.equal(httpError(400, 'a\n\nb\rc').message, 'a b c');
});

t.test('errorAnswer: an HttpError answers as itself (4xx and 5xx)', async (t) => {
  const headers = { 'www-authenticate': 'Bearer' };
  const err = httpError(401, 'token required', { headers, close: true });
  const answer = errorAnswer(err);
  t.same(answer, { status: 401, reason: 'token required', headers: { 'www-authenticate': 'Bearer' }, close: true });
  answer.headers.vary = 'x';
  t.same(headers, { 'www-authenticate': 'Bearer' }, 'the answer has its own copy of the headers');
  t.same(errorAnswer(httpError(503, 'busy')), { status: 503, reason: 'busy', headers: {}, close: false });
});

t.test('errorAnswer: anything else is a 500 "internal error: …" on one line', async (t) => {
  const cases: [unknown, string][] = [
    [new Error('boom'), 'internal error: boom'],
    [new TypeError('x is not a function\n    at y'), 'internal error: x is not a function     at y'],
    ['a string', 'internal error: a string'],
    [undefined, 'internal error: undefined'],
    [null, 'internal error: null'],
  ];
  for (const [err, reason] of cases) t.same(errorAnswer(err), { status: 500, reason, headers: {}, close: false }, String(err));
});

t.test('errorAnswer: an object that only looks like an HttpError is a 500', async (t) => {
  t.same(errorAnswer({ status: 404, message: 'fake' }), { status: 500, reason: 'internal error: fake', headers: {}, close: false });
});

t.test('errorText: the reason alone, or with status and reason phrase in front (RFC 9110 §15), ending in LF', async (t) => {
  t.equal(errorText(404, 'no memento of http://a.example/'), 'no memento of http://a.example/\n');
  t.equal(errorText(404, 'x', { withStatus: false }), 'x\n');
  t.equal(errorText(421, 'wrong host', { withStatus: true }), '421 Misdirected Request: wrong host\n');
  t.equal(errorText(502, 'no answer', { withStatus: true }), '502 Bad Gateway: no answer\n');
  t.equal(errorText(599, 'x', { withStatus: true }), '599 Error: x\n', 'a status without a reason phrase');
});
