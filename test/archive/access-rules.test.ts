/**
 * Access rules on every read path (docs/operations.md "Access rules and takedown"):
 * `block` answers 451 (RFC 7725) and leaves the memento out of TimeMaps
 * and navigation links; `exclude` is as if never captured (404, left out
 * everywhere); `allow`; `before`/`after`; `embargo`; the most specific
 * rule wins; SIGHUP puts new rules in force in a running daemon.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Test } from 'tap';
import t from 'tap';
import { byRel, formatHttpDate, links, olOf, partsOf, seed, ts14 } from '../conformance/helpers.js';
import { type Answer, captureRecord, putCapture, request, startArchive, type TestArchive, TWO_ARCHIVES } from '../helpers/archive.js';
import { startDaemon } from '../helpers/daemons.js';
import { writeConfig } from './helpers.js';

const JAN = 'Mon, 01 Jan 2001 00:00:00 GMT';
const JUN = 'Fri, 01 Jun 2001 12:00:00 GMT';
const DEC = 'Sat, 01 Dec 2001 00:00:00 GMT';
const DATES = [JAN, JUN, DEC];

const withRules = (rules: string) => `${TWO_ARCHIVES}access:\n${rules}`;

/** Every read address of one URI-R in archive "2025" at `date`, as a user would ask. */
function readPaths(a: TestArchive, uriR: string, date: string): [string, string, Record<string, string>?][] {
  const m = `${a.url}/2025/memento/${ts14(date)}/${uriR}`;
  return [
    ['redirector', `${a.url}/tg/${uriR}`],
    ['redirector at the date', `${a.url}/tg/${uriR}`, { 'accept-datetime': date }],
    ['index TimeMap', `${a.url}/tg/timemap/${uriR}`],
    ['TimeGate', `${a.url}/2025/timegate/${uriR}`],
    ['TimeGate at the date', `${a.url}/2025/timegate/${uriR}`, { 'accept-datetime': date }],
    ['TimeGate with Prefer', `${a.url}/2025/timegate/${uriR}`, { prefer: 'original-content' }],
    ['Memento (replay)', m],
    ['Memento ol_', olOf(m)],
    ['Memento id_', m.replace(/\/memento\/(\d{14})\//, '/memento/$1id_/')],
    ['Memento with Prefer', m, { prefer: 'original-content' }],
    ['Memento, another timestamp', `${a.url}/2025/memento/20010301000000/${uriR}`],
    ['Memento, a timestamp prefix', `${a.url}/2025/memento/2001/${uriR}`],
    ['link TimeMap', `${a.url}/2025/timemap/link/${uriR}`],
    ['JSON TimeMap', `${a.url}/2025/timemap/json/${uriR}`],
    ['timebundle', `${a.url}/2025/timebundle/${uriR}`],
  ];
}

/** A 451 as RFC 7725 has it: the status, one line saying why, `rel="blocked-by"`, and nothing of a Memento. */
function is451(t: Test, res: Answer, what: string): void {
  t.equal(res.status, 451, `${what}: 451`);
  t.match(res.text, /^the archive's access rules withhold the mementos of \S+ \(451 Unavailable For Legal Reasons, RFC 7725\)\n$/, `${what}: one line`);
  t.same(byRel(links(res.headers.link), 'blocked-by').length, 1, `${what}: Link rel="blocked-by"`);
  t.notOk(res.headers['memento-datetime'], `${what}: no Memento-Datetime`);
  t.notOk(res.headers.location, `${what}: no Location`);
}

/** The URI-Ms a link-format TimeMap lists. */
const listed = (text: string) => links(text).filter((l) => l.rel.split(' ').includes('memento'));

t.test('block: every read path answers 451 (RFC 7725), HEAD too; a URL beside it is untouched', async (t) => {
  const a = await startArchive(withRules('  - url: http://www.example.org/blocked\n    action: block\n'));
  t.teardown(() => a.close());
  const uriR = 'http://www.example.org/blocked';
  for (const d of DATES) await seed(a, uriR, d);
  await seed(a, 'http://www.example.org/blocked2', JAN);
  for (const [what, url, headers] of readPaths(a, uriR, JUN)) {
    is451(t, await request(url, { headers }), what);
    t.equal((await request(url, { method: 'HEAD', headers })).status, 451, `HEAD ${what}: 451`);
  }
  const free = await request(`${a.url}/2025/timegate/http://www.example.org/blocked2`);
  t.equal(free.status, 302, 'an exact rule is for its URL only');
});

t.test('exclude: as if never captured, on every read path: 404 as for a URL nobody archived', async (t) => {
  const a = await startArchive(withRules('  - url: http://www.example.org/gone/*\n    action: exclude\n'));
  t.teardown(() => a.close());
  const uriR = 'http://www.example.org/gone/page';
  for (const d of DATES) await seed(a, uriR, d);
  for (const [what, url, headers] of readPaths(a, uriR, JUN)) {
    const res = await request(url, { headers });
    const never = await request(url.replace('/gone/page', '/never/page'), { headers });
    t.equal(res.status, 404, `${what}: 404`);
    t.equal(res.text, never.text.replace('/never/page', '/gone/page'), `${what}: the words of a URL never captured`);
    t.notOk(res.headers.link, `${what}: no Link`);
  }
  const page = await request(`${a.url}/2025/memento/${ts14(JUN)}/${uriR}`, { headers: { accept: 'text/html' } });
  t.equal(page.status, 404);
  t.match(page.text, /<h1>Not archived<\/h1>/, 'a browser gets the "not archived" page');
});

t.test('block with before/after: the blocked memento is 451 and out of TimeMaps and navigation; the others are served', async (t) => {
  const a = await startArchive(withRules('  - url: http://www.example.org/p\n    action: block\n    after: 2001-05-01\n    before: 2001-07-01\n'));
  t.teardown(() => a.close());
  const uriR = 'http://www.example.org/p';
  for (const d of DATES) await seed(a, uriR, d);
  const uriM = (d: string) => `${a.url}/2025/memento/${ts14(d)}/${uriR}`;

  const tm = await request(`${a.url}/2025/timemap/link/${uriR}`);
  t.equal(tm.status, 200);
  t.same(
    listed(tm.text).map((l) => [l.uri, l.rel]),
    [
      [uriM(JAN), 'first memento'],
      [uriM(DEC), 'last memento'],
    ],
    'link TimeMap: January and December',
  );
  const self = byRel(links(tm.text), 'self')[0];
  t.equal(self.from, JAN);
  t.equal(self.until, DEC);
  const json = JSON.parse((await request(`${a.url}/2025/timemap/json/${uriR}`)).text);
  t.same(
    json.mementos.list.map((m: { uri: string }) => m.uri),
    [uriM(JAN), uriM(DEC)],
    'JSON TimeMap',
  );
  const index = await request(`${a.url}/tg/timemap/${uriR}`);
  t.same(
    listed(index.text).map((l) => l.uri),
    [uriM(JAN), uriM(DEC)],
    'index TimeMap',
  );

  // The TimeGate chooses among the shown mementos: June is nearest to 2 June, January is the nearest shown.
  const tg = await request(`${a.url}/2025/timegate/${uriR}`, { headers: { 'accept-datetime': 'Sat, 02 Jun 2001 00:00:00 GMT' } });
  t.equal(tg.status, 302);
  t.equal(tg.headers.location, uriM(JAN), 'the nearest shown memento');
  const nav = links(tg.headers.link).filter((l) => l.rel.split(' ').includes('memento'));
  t.same(
    nav.map((l) => [l.uri, l.rel]),
    [
      [uriM(JAN), 'first memento'],
      [uriM(DEC), 'next last memento'],
    ],
    'TimeGate links: the hidden one is neither prev, next, first nor last',
  );
  const red = await request(`${a.url}/tg/${uriR}`, { headers: { 'accept-datetime': JUN } });
  t.equal(red.status, 302);
  t.notOk(
    links(red.headers.link).some((l) => l.uri === uriM(JUN)),
    'redirector links leave it out',
  );

  is451(t, await request(uriM(JUN)), 'the blocked memento');
  is451(t, await request(olOf(uriM(JUN))), 'its ol_ form');
  is451(t, await request(uriM(JUN).replace(`${ts14(JUN)}/`, `${ts14(JUN)}id_/`)), 'its id_ form');
  is451(t, await request(uriM(JUN), { headers: { prefer: 'original-content' } }), 'with Prefer');

  const jan = await request(uriM(JAN));
  t.equal(jan.status, 200, 'January is served');
  t.same(
    links(jan.headers.link)
      .filter((l) => l.rel.split(' ').includes('memento'))
      .map((l) => [l.uri, l.rel]),
    [
      [uriM(JAN), 'first memento'],
      [uriM(DEC), 'next last memento'],
    ],
    'Memento links: next is December',
  );
  const near = await request(`${a.url}/2025/memento/20010602000000/${uriR}`);
  t.equal(near.status, 302, 'an unstored timestamp next to the blocked one');
  t.equal(near.headers.location, uriM(JAN), 'goes to the nearest shown memento');
});

t.test('exclude with dates: an excluded memento is as if not stored (redirect to the nearest shown one)', async (t) => {
  const a = await startArchive(withRules('  - url: http://www.example.org/q\n    action: exclude\n    before: 2001-07-01\n    after: 2001-05-01\n'));
  t.teardown(() => a.close());
  const uriR = 'http://www.example.org/q';
  for (const d of DATES) await seed(a, uriR, d);
  const res = await request(`${a.url}/2025/memento/${ts14(JUN)}/${uriR}`);
  t.equal(res.status, 302);
  t.equal(res.headers.location, `${a.url}/2025/memento/${ts14(JAN)}/${uriR}`);
  const tm = await request(`${a.url}/2025/timemap/link/${uriR}`);
  t.equal(listed(tm.text).length, 2, 'left out of the TimeMap');
});

t.test('the most specific rule wins over HTTP: allow inside an excluded prefix; a dated rule over an undated one', async (t) => {
  const a = await startArchive(
    withRules(`  - url: http://www.example.org/private/*
    action: exclude
  - url: http://www.example.org/private/press-release
    action: allow
  - url: http://www.example.org/news/*
    action: block
  - url: http://www.example.org/news/*
    action: allow
    before: 2001-03-01
`),
  );
  t.teardown(() => a.close());
  for (const p of ['/private/secret', '/private/press-release', '/news/a']) for (const d of DATES) await seed(a, 'http://www.example.org' + p, d);
  t.equal((await request(`${a.url}/2025/timegate/http://www.example.org/private/secret`)).status, 404, 'excluded by the prefix');
  t.equal((await request(`${a.url}/2025/timegate/http://www.example.org/private/press-release`)).status, 302, 'allowed by the exact URL');
  t.equal((await request(`${a.url}/2025/timegate/https://WWW.EXAMPLE.ORG:443/private/secret`)).status, 404, 'https, upper case, default port: the same URL');
  const news = await request(`${a.url}/2025/timemap/link/http://www.example.org/news/a`);
  t.same(
    listed(news.text).map((l) => l.datetime),
    [JAN],
    'news: only what the dated allow rule lets through',
  );
  is451(t, await request(`${a.url}/2025/memento/${ts14(DEC)}/http://www.example.org/news/a`), 'news after March');
});

t.test('embargo: captures younger than the age are hidden, older ones shown (relative to now)', async (t) => {
  const a = await startArchive(
    withRules(`  - url: http://www.example.org/fresh/*
    action: exclude
    embargo: 30d
  - url: http://www.example.org/held/*
    action: block
    embargo: 30d
`),
  );
  t.teardown(() => a.close());
  const day = 86400;
  const now = Math.floor(Date.now() / 1000);
  const old = formatHttpDate(now - 60 * day);
  const young = formatHttpDate(now - 2 * day);
  for (const p of ['fresh', 'held']) for (const d of [old, young]) await seed(a, `http://www.example.org/${p}/x`, d);
  const uriR = 'http://www.example.org/fresh/x';
  const tg = await request(`${a.url}/current/timegate/${uriR}`);
  t.equal(tg.status, 302);
  t.equal(tg.headers.location, `${a.url}/current/memento/${ts14(old)}/${uriR}`, 'no Accept-Datetime: the newest shown, 60 days old');
  const tm = await request(`${a.url}/current/timemap/link/${uriR}`);
  t.same(
    listed(tm.text).map((l) => l.datetime),
    [old],
    'the 2-day-old capture is not in the TimeMap yet',
  );
  const young404 = await request(`${a.url}/current/memento/${ts14(young)}/${uriR}`);
  t.equal(young404.status, 302, 'excluded: its URI-M goes to the nearest shown one');
  t.equal(young404.headers.location, `${a.url}/current/memento/${ts14(old)}/${uriR}`);
  is451(t, await request(`${a.url}/current/memento/${ts14(young)}/http://www.example.org/held/x`), 'blocked by embargo');
  t.equal((await request(`${a.url}/current/memento/${ts14(old)}/http://www.example.org/held/x`)).status, 200, 'past the embargo: shown');
});

t.test('the replay cache never serves a page that is blocked now', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const uriR = 'http://www.example.org/cached';
  await putCapture(a, uriR, captureRecord({ ...partsOf(uriR), date: JAN, body: '<html><head><title>c</title></head><body><a href="/x">x</a></body></html>' }));
  const uriM = `${a.url}/2025/memento/${ts14(JAN)}/${uriR}`;
  t.equal((await request(uriM)).status, 200);
  t.equal((await request(uriM)).status, 200);
  t.ok(a.app.reader.replayCache.bytes > 0, 'the replayed page is in the cache');
  await a.app.visible.replaceRules([{ url: uriR, action: 'block' }]);
  is451(t, await request(uriM), 'blocked after it was cached');
  await a.app.visible.replaceRules([]);
  t.equal((await request(uriM)).status, 200, 'shown again when the rule goes');
});

/** Waits (bounded) until the daemon's output has `n` lines matching `re`. */
async function logLines(output: () => string, re: RegExp, n: number): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (
      output()
        .split('\n')
        .filter((l) => re.test(l)).length >= n
    )
      return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`no ${n} log line(s) ${re} within 10 s:\n${output()}`);
}

t.test('SIGHUP: a running daemon reads access: again and applies it to the next request; a bad rule leaves the running ones', async (t) => {
  const { dir, config } = writeConfig();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const d = await startDaemon('memento-archive.js', ['serve', '--config', config, '--quiet']);
  t.teardown(() => d.stop());
  const uriR = 'http://www.example.org/hup';
  const put = await putCapture({ url: d.url }, uriR, captureRecord({ ...partsOf(uriR), date: JAN, body: 'hup' }));
  t.equal(put.status, 201);
  const uriM = `${d.url}/2025/memento/${ts14(JAN)}/${uriR}`;
  // Asked three times: the answer is then kept with the cached neighbourhood (archive/read/kept-answers.ts).
  for (let i = 0; i < 3; i++) t.equal((await request(uriM)).status, 200, 'no rules: shown');
  const plain = readFileSync(config, 'utf8');

  writeFileSync(config, plain + `access:\n  - url: ${uriR}\n    action: block\n`);
  d.proc.kill('SIGHUP');
  await logLines(d.output, /"msg":"SIGHUP: config read again; access rules in force/, 1);
  is451(t, await request(uriM), 'blocked after the first SIGHUP');
  const line = d
    .output()
    .split('\n')
    .find((l) => l.includes('access rules in force'));
  t.match(JSON.parse(line!), { level: 'info', access: 1, changed: [] }, 'the log line says how many rules are in force');

  writeFileSync(config, plain + `access:\n  - url: ${uriR}\n    action: hide\n`);
  d.proc.kill('SIGHUP');
  await logLines(d.output, /"msg":"SIGHUP: config not read again/, 1);
  t.match(d.output(), /action must be block, exclude or allow, not \\"hide\\"/, 'the mistake with its line');
  is451(t, await request(uriM), 'a bad file: the running rules stay');

  writeFileSync(config, plain + `access:\n  - url: ${uriR}\n    action: exclude\n`);
  d.proc.kill('SIGHUP');
  await logLines(d.output, /"msg":"SIGHUP: config read again; access rules in force/, 2);
  t.equal((await request(uriM)).status, 404, 'excluded after the third SIGHUP');

  writeFileSync(config, plain);
  d.proc.kill('SIGHUP');
  await logLines(d.output, /"msg":"SIGHUP: config read again; access rules in force/, 3);
  t.equal((await request(uriM)).status, 200, 'no rules again: shown');
});
