/**
 * The conditions of several held captures asked in one POST
 * (proxy/capture/questions.ts): the questions of one turn of the event
 * loop go together, one line each, and each capture gets its own line of
 * the answer; an answer that is not one line per question is trusted for
 * none of them.
 */
import http from 'node:http';
import t, { type Test } from 'tap';
import { ArchiveConnections } from '../../proxy/capture/conditional-client.js';
import { type CaptureQuestion, CaptureQuestions } from '../../proxy/capture/questions.js';
import { listen } from './helpers.js';

/** An archive answering each POST with `answer(lines)`; it records what it got. */
async function archive(t: Test, answer: (lines: string[]) => { status: number; text: string }) {
  const got: { method: string; url: string; auth?: string; type?: string; lines: string[] }[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (body += d));
    req.on('end', () => {
      const lines = body.split('\n').filter(Boolean);
      got.push({ method: req.method!, url: req.url!, auth: req.headers.authorization, type: req.headers['content-type'], lines });
      const { status, text } = answer(lines);
      res.writeHead(status, { 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(text) });
      res.end(text);
    });
  });
  const port = await listen(t, server);
  return { port, got };
}

function asker(t: Test) {
  const connections = new ArchiveConnections(4);
  t.teardown(() => connections.destroy());
  return new CaptureQuestions(connections, 5000);
}

const question = (port: number, n: number, extra: Partial<CaptureQuestion> = {}): CaptureQuestion => ({
  archive: { host: '127.0.0.1', port, path: '/put/' },
  tag: `"sha256:${String(n).padStart(64, '0')};200;text/html"`,
  uriR: `http://site.example/p${n}`,
  ...extra,
});

t.test('the questions of one turn go in one POST to ArchivePath, a line each; each capture gets its own answer', async (t) => {
  const { port, got } = await archive(t, (lines) => ({ status: 200, text: lines.map((l) => (l.includes('/p2') ? 'new' : 'unchanged') + '\n').join('') }));
  const q = asker(t);
  const answers = await Promise.all([
    q.ask(question(port, 1, { datetime: 1790000000 })),
    q.ask(question(port, 2)),
    q.ask(question(port, 3, { datetime: 1790000001 })),
  ]);
  t.same(answers, ['unchanged', 'new', 'unchanged']);
  t.equal(got.length, 1, 'one POST');
  t.match(got[0], { method: 'POST', url: '/put/', type: /^text\/plain/ });
  t.same(got[0].lines, [
    `"sha256:${'0'.repeat(63)}1;200;text/html" 1790000000 http://site.example/p1`,
    `"sha256:${'0'.repeat(63)}2;200;text/html" - http://site.example/p2`,
    `"sha256:${'0'.repeat(63)}3;200;text/html" 1790000001 http://site.example/p3`,
  ]);
  // The next turn: a POST of its own, with the vhost's token.
  t.equal(await q.ask(question(port, 4, { token: 'secret-token-0123456789' })), 'unchanged');
  t.equal(got.length, 2);
  t.equal(got[1].auth, 'Bearer secret-token-0123456789', 'ArchiveToken as a bearer token');
});

t.test('an answer that is not one known line per question, or not a 200, is trusted for none (unknown: the captures are PUT)', async (t) => {
  let reply = { status: 200, text: 'unchanged\n' };
  const { port } = await archive(t, () => reply);
  const q = asker(t);
  t.same(await Promise.all([q.ask(question(port, 1)), q.ask(question(port, 2))]), ['unknown', 'unknown'], 'one line for two questions');
  reply = { status: 200, text: 'unchanged\nmaybe\n' };
  t.same(await Promise.all([q.ask(question(port, 1)), q.ask(question(port, 2))]), ['unknown', 'unknown'], 'a line that is no answer');
  reply = { status: 500, text: 'unchanged\nunchanged\n' };
  t.same(await Promise.all([q.ask(question(port, 1)), q.ask(question(port, 2))]), ['unknown', 'unknown'], 'a 500');
  reply = { status: 200, text: 'unchanged\nnew\n' };
  t.same(await Promise.all([q.ask(question(port, 1)), q.ask(question(port, 2))]), ['unchanged', 'new'], 'then a good answer is taken');
});

t.test('an archive that cannot be reached: unknown, at once for every question', async (t) => {
  const { port } = await archive(t, () => ({ status: 200, text: '' }));
  const q = asker(t);
  // A port nothing listens on: the archive's, closed.
  const closedPort = await new Promise<number>((resolve) => {
    const s = http.createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
  t.not(closedPort, port);
  t.same(await Promise.all([q.ask(question(closedPort, 1)), q.ask(question(closedPort, 2))]), ['unknown', 'unknown']);
});

t.test('an archive whose answers are seldom unchanged is asked about one capture in ten, until they are again', async (t) => {
  let answer = 'new';
  const { port, got } = await archive(t, (lines) => ({ status: 200, text: lines.map(() => answer + '\n').join('') }));
  const q = asker(t);
  const answers: string[] = [];
  for (let i = 0; i < 200; i++) answers.push(await q.ask(question(port, i)));
  // The share of unchanged answers starts at 1 and falls by 5% a "new": below 10% after 45 answers.
  t.equal(got.length, 45 + Math.floor((200 - 45) / 10), 'the first 45 asked, then one in ten');
  t.equal(answers.filter((a) => a === 'new').length, got.length, 'each asked capture: new');
  t.equal(answers.filter((a) => a === 'unknown').length, 200 - got.length, 'the others: unknown (PUT without asking)');
  answer = 'unchanged';
  const before = got.length;
  const later: string[] = [];
  for (let i = 0; i < 30; i++) later.push(await q.ask(question(port, i)));
  t.equal(later.slice(-10).join(), Array(10).fill('unchanged').join(), 'once answers are unchanged again, every capture is asked again');
  t.ok(got.length - before > 10, 'asked again');
});
