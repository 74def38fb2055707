/**
 * What one `/web/diff/…` may cost: the comparison runs in a work pool's
 * thread within a budget (archive/web/diff.ts), so that the worst pairs
 * of captures (one long line each of different words; 15,000 lines each,
 * all different) neither hold the daemon's event loop nor run for
 * minutes: while the comparison runs, `/healthz` and a capture PUT are
 * answered, and the page answered is the budget's ("too different …").
 * No timed assertion: the order of answers and what the page says.
 */
import t, { type Test } from 'tap';
import { captureRecord, putCapture, request, startArchive, type TestArchive } from '../helpers/archive.js';
import { until } from '../helpers/until.js';

const HTML = { accept: 'text/html' };
const HOST = 'budget.example';

/** Different words: `<prefix><n>` for n in [from, from + count). */
function words(prefix: string, from: number, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `${prefix}${(from + i) * 7919}`);
}

async function put(a: TestArchive, path: string, date: string, body: string): Promise<void> {
  const r = await putCapture(
    a,
    `http://${HOST}${path}`,
    captureRecord({ host: HOST, target: path, date, body, responseHeaders: [['Content-Type', 'text/plain; charset=utf-8']] }),
  );
  if (r.status !== 201) throw new Error(`PUT ${path}: ${r.status} ${r.text}`);
}

/**
 * Asks for the diff page at `path`, and, once its comparison runs in the pool's thread, `/healthz` and a capture
 * PUT; each answer's place in the order they came back. On a daemon that compares on its event loop, this test's
 * own code runs again only once the comparison is over, so the health check and the PUT come after it.
 */
async function whileComparing(t: Test, a: TestArchive, path: string) {
  const order: string[] = [];
  const diff = request(`${a.url}${path}`, { headers: HTML }).then((r) => {
    order.push('diff');
    return r;
  });
  const running = () => (a.app as { work?: { diff: { running: number } } }).work?.diff.running ?? 0;
  await until(() => running() > 0 || order.includes('diff'), 120_000, 'the comparison runs, or the diff is answered');
  const health = request(`${a.url}/healthz`).then((r) => {
    order.push('healthz');
    return r;
  });
  const capture = putCapture(a, `http://${HOST}/during`, captureRecord({ host: HOST, target: '/during', body: `during ${path}` })).then((r) => {
    order.push('put');
    return r;
  });
  const [d, h, p] = await Promise.all([diff, health, capture]);
  t.equal(h.status, 200, '/healthz: 200');
  t.equal(p.status, 201, 'the capture PUT: stored');
  t.ok(order.indexOf('healthz') < order.indexOf('diff'), `/healthz answered while the comparison ran (order: ${order.join(', ')})`);
  t.ok(order.indexOf('put') < order.indexOf('diff'), `the PUT answered while the comparison ran (order: ${order.join(', ')})`);
  t.equal(d.status, 200, 'the diff page: 200');
  return d.text;
}

t.test('15,000 lines each, all different: /healthz and a PUT are answered meanwhile; the page says the texts are too different', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  await put(a, '/lines', 'Mon, 05 Jan 2026 10:00:00 GMT', words('old', 0, 15_000).join('\n'));
  await put(a, '/lines', 'Tue, 06 Jan 2026 10:00:00 GMT', words('new', 0, 15_000).join('\n'));
  const page = await whileComparing(t, a, `/web/diff/20260105100000/20260106100000/http://${HOST}/lines`);
  t.match(page, /The texts are too different to compare line by line within what one page may cost \(1,000 lines removed or added, 1\.5 s of work\)\./);
  t.match(page, /Open the two captures above/);
  t.match(page, /<a href="[^"]*\/web\/20260105100000\/http:\/\/budget\.example\/lines">View this capture<\/a>/, 'the older capture is linked');
  t.match(page, /<a href="[^"]*\/web\/20260106100000\/http:\/\/budget\.example\/lines">View this capture<\/a>/, 'the newer capture is linked');
  t.notMatch(page, /class="line-del"/, 'no line diff');
  const m = (await request(`${a.url}/metrics`)).text;
  t.match(m, /^memento_archive_work_total\{pool="diff",outcome="done"\} 1$/m, 'the comparison ended within its budget, not at its deadline');
});

t.test('one line of ~36 KB each, different words: /healthz and a PUT are answered meanwhile; the line is shown whole', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const older = words('alpha', 0, 4500).join(' ');
  const newer = words('beta', 0, 4500).join(' ');
  t.ok(older.length > 30_000 && newer.length > 30_000, `${older.length} and ${newer.length} characters`);
  await put(a, '/words', 'Mon, 05 Jan 2026 10:00:00 GMT', older);
  await put(a, '/words', 'Tue, 06 Jan 2026 10:00:00 GMT', newer);
  const page = await whileComparing(t, a, `/web/diff/20260105100000/20260106100000/http://${HOST}/words`);
  t.match(page, /\+1 line added<\/span>, <span class="removed">−1 line removed/);
  t.match(page, /2 changed lines are too different to show word by word: shown whole below\./);
  t.match(page, /<p class="line-del"><span class="visually-hidden">Removed: <\/span><del>alpha0 alpha7919 /, 'the older line whole, marked removed');
  t.match(page, /<p class="line-ins"><span class="visually-hidden">Added: <\/span><ins>beta0 beta7919 /, 'the newer line whole, marked added');
});

t.test('a comparison with more rows than a page shows: the first 1,000 rows, and how many changed lines are not shown', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  // 1,600 lines, every fourth one changed: 400 line edits each way (within the budget), 1,600 rows.
  const base = words('same', 0, 1600);
  const changed = base.map((l, i) => (i % 4 === 1 ? `${l} changed` : l));
  await put(a, '/rows', 'Mon, 05 Jan 2026 10:00:00 GMT', base.join('\n'));
  await put(a, '/rows', 'Tue, 06 Jan 2026 10:00:00 GMT', changed.join('\n'));
  const d = await request(`${a.url}/web/diff/20260105100000/20260106100000/http://${HOST}/rows`, { headers: HTML });
  t.equal(d.status, 200);
  t.match(d.text, /\+400 lines added<\/span>, <span class="removed">−400 lines removed/, 'the counts are of every change');
  const shown = (d.text.match(/class="line-del"/g) ?? []).length;
  const [, notShown] = /Only the first 1,000 lines of the comparison are shown; ([\d,]+) more changed lines are not\./.exec(d.text) ?? [];
  t.ok(notShown, 'the page says how many changed lines are not shown');
  t.equal(shown + Number((notShown ?? '').replace(/,/g, '')) / 2, 400, 'shown and not shown add up to every changed line');
  t.match(d.text, /same7919<ins> changed<\/ins>/, 'the changed lines shown have their words marked');
});

t.test('the diff pool full: 503 with Retry-After and a page that says so', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  await put(a, '/busy', 'Mon, 05 Jan 2026 10:00:00 GMT', words('old', 0, 4000).join('\n'));
  await put(a, '/busy', 'Tue, 06 Jan 2026 10:00:00 GMT', words('new', 0, 4000).join('\n'));
  const path = `/web/diff/20260105100000/20260106100000/http://${HOST}/busy`;
  // One running and 8 waiting fill the pool; the ones after are refused.
  const answers = await Promise.all(Array.from({ length: 20 }, () => request(`${a.url}${path}`, { headers: HTML })));
  const busy = answers.filter((r) => r.status === 503);
  t.ok(busy.length >= 1, `${busy.length} of 20 refused`);
  t.equal(answers.filter((r) => r.status === 200).length + busy.length, 20, 'the others answered');
  t.equal(busy[0].headers['retry-after'], '5');
  t.match(busy[0].text, /the archive is comparing other captures just now; try again in a few seconds/);
  const m = (await request(`${a.url}/metrics`)).text;
  t.match(m, new RegExp(`^memento_archive_work_total\\{pool="diff",outcome="busy"\\} ${busy.length}$`, 'm'), 'counted as busy');
});
