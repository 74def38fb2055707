/**
 * Access rules as a function (archive/read/access-rules.ts): what each rule says of a
 * memento (URL, datetime, the moment asked), which rule wins, and how the
 * config refuses a bad rule with `file:line: reason`.
 */
import sqlite3 from 'sqlite3';
import t from 'tap';
import { foldedPrefixes } from '../../../archive/read/access-folded.js';
import { type AccessRule, AccessRules, matchesPattern, urlPattern } from '../../../archive/read/access-rules.js';
import { validateArchiveConfig } from '../../../archive/config.js';
import { SQLITE_SQL } from '../../../archive/store/index/index-sql.js';
import { KeyQueries } from '../../../archive/store/index/key-queries.js';
import { shownCondition } from '../../../archive/store/index/shown-sql.js';
import { ConfigError, parseYamlText } from '#shared/config.js';
import { exactUrlkey } from '#shared/uri.js';
import { prng } from '../helpers.js';

const at = (iso: string) => Date.parse(iso) / 1000;
const key = (u: string) => exactUrlkey(u);
const NOW = at('2026-06-01T00:00:00Z');

t.test('URL patterns are SURT urlkeys: scheme, host case and default port do not count; www does; a * ends a prefix', async (t) => {
  t.same(urlPattern('http://A.Example:80/Doc?x=1'), { key: 'example,a)/Doc?x=1', prefix: false });
  t.same(urlPattern('https://a.example/private/*'), { key: 'example,a)/private/', prefix: true });
  t.same(urlPattern('a.example/*'), { key: 'example,a)/', prefix: true }, 'no scheme: http');
  t.same(urlPattern('http://a.example*'), { key: 'example,a)/', prefix: true }, 'a prefix ending at the host: the whole host');
  t.same(urlPattern('http://a.example/p?*'), { key: 'example,a)/p?', prefix: true }, 'a query prefix keeps its ?');
  t.throws(() => urlPattern('http://a.example/*/x'), /only end/);
  t.throws(() => urlPattern('ftp://a.example/'), /only http and https/);
  const rules = new AccessRules([{ url: 'http://a.example/*', action: 'exclude' }]);
  t.equal(rules.verdict(key('https://A.EXAMPLE:443/x'), 0, NOW), 'exclude', 'https and upper case: the same host');
  t.equal(rules.verdict(key('http://www.a.example/x'), 0, NOW), 'allow', 'www. is another host');
  t.equal(rules.verdict(key('http://a.example.org/x'), 0, NOW), 'allow', 'a longer host name is another host');
  t.equal(rules.verdict(key('http://a.example:8080/x'), 0, NOW), 'allow', 'another port is another site');
  const doc = new AccessRules([{ url: 'http://a.example/doc*', action: 'block' }]);
  for (const p of ['/doc', '/doc/x', '/documents']) t.equal(doc.verdict(key('http://a.example' + p), 0, NOW), 'block', `prefix covers ${p}`);
  t.equal(doc.verdict(key('http://a.example/Doc'), 0, NOW), 'allow', 'the path keeps its case');
  const exact = new AccessRules([{ url: 'http://a.example/doc', action: 'block' }]);
  t.equal(exact.verdict(key('http://a.example/doc/'), 0, NOW), 'allow', 'an exact URL is that URL only');
  t.equal(exact.verdict(key('http://a.example/doc?x'), 0, NOW), 'allow', 'its query is part of it');
});

t.test('each action: allow shows, block and exclude hide; no rule is allow', async (t) => {
  const rules = new AccessRules([
    { url: 'http://a.example/b', action: 'block' },
    { url: 'http://a.example/e', action: 'exclude' },
    { url: 'http://a.example/a', action: 'allow' },
  ]);
  t.equal(rules.verdict(key('http://a.example/b'), 0, NOW), 'block');
  t.equal(rules.verdict(key('http://a.example/e'), 0, NOW), 'exclude');
  t.equal(rules.verdict(key('http://a.example/a'), 0, NOW), 'allow');
  t.equal(rules.verdict(key('http://a.example/other'), 0, NOW), 'allow');
  t.ok(rules.policy(key('http://a.example/a'), NOW).open, 'an allow rule hides nothing: the plain queries serve');
  t.notOk(rules.policy(key('http://a.example/b'), NOW).open);
  t.equal(new AccessRules().verdict('anything', 0), 'allow', 'no rules at all');
});

t.test('before / after: only mementos earlier than before, at or after after', async (t) => {
  const r = new AccessRules([{ url: 'http://a.example/*', action: 'block', after: at('2020-01-01T00:00:00Z'), before: at('2021-01-01T00:00:00Z') }]);
  const k = key('http://a.example/x');
  t.equal(r.verdict(k, at('2019-12-31T23:59:59Z'), NOW), 'allow', 'a second before after');
  t.equal(r.verdict(k, at('2020-01-01T00:00:00Z'), NOW), 'block', 'after is inclusive');
  t.equal(r.verdict(k, at('2020-12-31T23:59:59Z'), NOW), 'block');
  t.equal(r.verdict(k, at('2021-01-01T00:00:00Z'), NOW), 'allow', 'before is exclusive');
  t.same(
    r.policy(k, NOW).segments,
    [
      { from: -Infinity, until: at('2020-01-01T00:00:00Z'), verdict: 'allow' },
      { from: at('2020-01-01T00:00:00Z'), until: at('2021-01-01T00:00:00Z'), verdict: 'block' },
      { from: at('2021-01-01T00:00:00Z'), until: Infinity, verdict: 'allow' },
    ],
    'the time line of the URL',
  );
});

t.test('embargo: mementos younger than the age at the moment asked; older ones are shown', async (t) => {
  const r = new AccessRules([{ url: 'http://a.example/*', action: 'exclude', embargo: 30 * 86400 }]);
  const k = key('http://a.example/x');
  t.equal(r.verdict(k, NOW - 86400, NOW), 'exclude', 'a day old');
  t.equal(r.verdict(k, NOW - 30 * 86400 + 1, NOW), 'exclude', 'a second short of 30 days');
  t.equal(r.verdict(k, NOW - 30 * 86400, NOW), 'allow', '30 days old: shown');
  t.equal(r.verdict(k, NOW - 86400, NOW + 30 * 86400), 'allow', 'the same memento, asked a month later: shown');
  const both = new AccessRules([{ url: 'http://a.example/*', action: 'block', embargo: 30 * 86400, after: NOW - 5 * 86400 }]);
  t.equal(both.verdict(k, NOW - 10 * 86400, NOW), 'allow', 'with after too: both limits hold');
  t.equal(both.verdict(k, NOW - 86400, NOW), 'block');
});

t.test('the most specific rule wins: longer URL, exact over prefix, dated over undated, stricter action, first listed', async (t) => {
  const k = key('http://a.example/dir/page');
  const verdict = (rules: AccessRule[], when = 0) => new AccessRules(rules).verdict(k, when, NOW);
  t.equal(
    verdict([
      { url: 'http://a.example/*', action: 'exclude' },
      { url: 'http://a.example/dir/*', action: 'allow' },
    ]),
    'allow',
    'a longer prefix over a shorter one, whatever the order',
  );
  t.equal(
    verdict([
      { url: 'http://a.example/dir/page', action: 'block' },
      { url: 'http://a.example/dir/*', action: 'allow' },
    ]),
    'block',
    'an exact URL over a prefix',
  );
  t.equal(
    verdict([
      { url: 'http://a.example/dir/page*', action: 'exclude' },
      { url: 'http://a.example/dir/page', action: 'allow' },
    ]),
    'allow',
    'an exact URL over a prefix of the same length',
  );
  const dated: AccessRule[] = [
    { url: 'http://a.example/dir/*', action: 'block' },
    { url: 'http://a.example/dir/*', action: 'allow', before: at('2020-01-01T00:00:00Z') },
  ];
  t.equal(verdict(dated, at('2019-06-01T00:00:00Z')), 'allow', 'a dated rule over an undated one with the same URL, within its dates');
  t.equal(verdict(dated, at('2020-06-01T00:00:00Z')), 'block', 'outside its dates, the undated rule');
  const deeper: AccessRule[] = [
    { url: 'http://a.example/dir/*', action: 'exclude' },
    { url: 'http://a.example/dir/page', action: 'allow', after: at('2020-01-01T00:00:00Z') },
  ];
  t.equal(verdict(deeper, at('2021-01-01T00:00:00Z')), 'allow', 'a more specific rule within its dates');
  t.equal(verdict(deeper, at('2019-01-01T00:00:00Z')), 'exclude', 'outside them, the less specific rule');
  t.equal(
    verdict([
      { url: 'http://a.example/dir/*', action: 'allow' },
      { url: 'http://a.example/dir/*', action: 'block' },
      { url: 'http://a.example/dir/*', action: 'exclude' },
    ]),
    'exclude',
    'the same URL and no dates: the stricter action',
  );
});

t.test('filter: lists over many URLs keep the shown rows, in order', async (t) => {
  const rules = new AccessRules([
    { url: 'http://a.example/x', action: 'block' },
    { url: 'http://a.example/y', action: 'exclude', before: 100 },
  ]);
  const rows = [
    { urlkey: key('http://a.example/x'), datetime: 10 },
    { urlkey: key('http://a.example/y'), datetime: 50 },
    { urlkey: key('http://a.example/y'), datetime: 150 },
    { urlkey: key('http://a.example/z'), datetime: 1 },
  ];
  const out = [];
  for await (const r of rules.filter(rows, NOW)) out.push(r);
  t.same(out, [rows[2], rows[3]]);
  const p = rules.policy(key('http://a.example/y'), NOW);
  const kept = [];
  const pages = (async function* () {
    yield [{ datetime: 99 }, { datetime: 100 }];
    yield [{ datetime: 98 }];
    yield [{ datetime: 101 }, { datetime: 102 }];
  })();
  for await (const page of p.filterPages(pages)) kept.push(page.map((r) => r.datetime));
  t.same(kept, [[100], [101, 102]], 'UrlPolicy.filterPages, one URL: the shown rows of each page, empty pages skipped');
});

t.test('replace: the rules in force change at once (SIGHUP)', async (t) => {
  const rules = new AccessRules([{ url: 'http://a.example/', action: 'block' }]);
  t.equal(rules.verdict(key('http://a.example/'), 0, NOW), 'block');
  rules.replace([]);
  t.equal(rules.verdict(key('http://a.example/'), 0, NOW), 'allow');
  t.same(rules.rules, []);
});

const yaml = (access: string) => `archives:\n  - id: a\naccess:\n${access}`;
function load(text: string) {
  return validateArchiveConfig(parseYamlText(text, '/etc/archive.yaml'));
}

t.test('access: in archive.yaml: dates and ages read, defaults, bad rules refused with file:line', async (t) => {
  t.same(load('archives:\n  - id: a\n').access, [], 'default: no rules');
  const c = load(
    yaml(`  - url: http://a.example/*
    action: block
    after: 2020-01-01
    before: 20210101000000
  - url: http://a.example/new/*
    action: exclude
    embargo: 30d
`),
  );
  t.same(c.access, [
    { url: 'http://a.example/*', action: 'block', after: at('2020-01-01T00:00:00Z'), before: at('2021-01-01T00:00:00Z') },
    { url: 'http://a.example/new/*', action: 'exclude', embargo: 30 * 86400 },
  ]);
  const refused: [string, RegExp][] = [
    [yaml('  - url: http://a.example/\n    action: hide\n'), /^\/etc\/archive\.yaml:5: action must be block, exclude or allow, not "hide"$/],
    [yaml('  - url: http://a.example/\n'), /^\/etc\/archive\.yaml:4: action is missing \(block, exclude or allow\)$/],
    [yaml('  - action: block\n'), /^\/etc\/archive\.yaml:4: url is missing/],
    [yaml('  - url: ftp://a.example/\n    action: block\n'), /^\/etc\/archive\.yaml:4: url must be an http\(s\) URL .*, not "ftp:\/\/a\.example\/"$/],
    [yaml('  - url: http://a.example/*/x\n    action: block\n'), /^\/etc\/archive\.yaml:4: url must be/],
    [yaml('  - url: http://a.example/\n    action: block\n    embargo: 30\n'), /^\/etc\/archive\.yaml:6: embargo must be an age like 30d/],
    [yaml('  - url: http://a.example/\n    action: block\n    embargo: 3 months\n'), /^\/etc\/archive\.yaml:6: embargo must be an age/],
    [yaml('  - url: http://a.example/\n    action: block\n    before: yesterday\n'), /^\/etc\/archive\.yaml:6: before must be a date/],
    [
      yaml('  - url: http://a.example/\n    action: block\n    until: 2020-01-01\n'),
      /^\/etc\/archive\.yaml:6: unknown setting "until" \(known: url, action, before, after, embargo\)$/,
    ],
    [
      yaml('  - url: http://a.example/\n    action: block\n    after: 2021-01-01\n    before: 2020-01-01\n'),
      /^\/etc\/archive\.yaml:4: access rule for http:\/\/a\.example\/: after must be earlier than before/,
    ],
    ['archives:\n  - id: a\naccess: http://a.example/\n', /^\/etc\/archive\.yaml:3: access must be a list of rules \{url, action\}$/],
  ];
  for (const [text, want] of refused) {
    try {
      load(text);
      t.fail(`accepted: ${text}`);
    } catch (err) {
      t.ok(err instanceof ConfigError, 'a ConfigError');
      t.match((err as Error).message, want);
    }
  }
});

t.test('shownRules (as the SQL condition of the index) and wholeHiddenKeys say what policy says, over every kind of rule', async (t) => {
  const rules: AccessRule[] = [
    { url: 'http://a.example/*', action: 'exclude' },
    { url: 'http://a.example/dir/*', action: 'allow' },
    { url: 'http://a.example/dir/page', action: 'block', after: at('2020-01-01T00:00:00Z') },
    { url: 'http://a.example/dir/x*', action: 'exclude', embargo: 86400 * 30 },
    { url: 'http://b.example/p', action: 'block' },
    { url: 'http://b.example/q*', action: 'exclude', before: at('2019-01-01T00:00:00Z') },
    { url: 'http://c.example/*', action: 'allow' },
  ];
  const access = new AccessRules(rules);
  const urls = ['http://a.example/', 'http://a.example/z', 'http://a.example/dir/', 'http://a.example/dir/page', 'http://a.example/dir/xy'];
  urls.push('http://b.example/p', 'http://b.example/p2', 'http://b.example/q', 'http://b.example/qq', 'http://c.example/', 'http://d.example/');
  const times = ['2018-06-01', '2019-06-01', '2020-06-01'].map((d) => at(`${d}T00:00:00Z`)).concat([NOW - 86400, NOW - 86400 * 60]);
  const db = new sqlite3.Database(':memory:');
  const all = (sql: string, params: object = {}) =>
    new Promise<{ urlkey: string; datetime: number }[]>((resolve, reject) => db.all(sql, params, (err, rows: never[]) => (err ? reject(err) : resolve(rows))));
  t.teardown(() => db.close());
  await all('CREATE TABLE memento (urlkey TEXT, datetime INTEGER)');
  for (const u of urls) for (const d of times) await all('INSERT INTO memento VALUES ($k, $d)', { $k: key(u), $d: d });
  const shown = shownCondition(access.shownRules(NOW));
  const bySql = new Set((await all(`SELECT urlkey, datetime FROM memento WHERE ${shown.sql}`, shown.params)).map((r) => `${r.urlkey} ${r.datetime}`));
  const hidden = access.wholeHiddenKeys();
  for (const u of urls) {
    const k = key(u);
    const whole = hidden.some((r) => r.from <= k && k < r.to);
    for (const d of times) {
      const v = access.verdict(k, d, NOW);
      t.equal(bySql.has(`${k} ${d}`), v === 'allow', `${u} at ${d}: SQL says ${v}`);
      if (whole) t.not(v, 'allow', `${u} at ${d}: in a wholly hidden range, hidden`);
    }
    t.equal(whole, ['http://a.example/', 'http://a.example/z', 'http://b.example/p'].includes(u), `${u}: ${whole ? '' : 'not '}wholly hidden`);
  }
  t.same(new AccessRules([{ url: 'http://a.example/*', action: 'allow' }]).shownRules(), [], 'no rule hides anything: no rule listed');
  t.same(shownCondition([]), { sql: 'TRUE', params: {} }, 'and the condition is TRUE');
});

t.test(
  'stored keys with encoded slashes: rules name them in their folded form too; the SQL condition and the hidden ranges agree with the verdict',
  async (t) => {
    const rules: AccessRule[] = [
      { url: 'http://a.example/assets/*', action: 'exclude' },
      { url: 'http://a.example/assets/pub/*', action: 'allow' },
      { url: 'http://a.example/a*', action: 'block' },
      { url: 'http://a.example/a/b', action: 'allow' },
      { url: 'http://a.example/d/*', action: 'exclude', before: at('2019-01-01T00:00:00Z') },
    ];
    // Keys as an earlier version stored them (urlkeys: canonical escapes, no `//` in a path).
    const expected: [string, string][] = [
      ['example,a)/assets%2Fx', 'exclude'],
      ['example,a)/%2Fassets/x', 'exclude'],
      ['example,a)/assets%5C%2F%5Cx', 'exclude'],
      ['example,a)/assets%2Fpub%2Fy', 'allow'],
      ['example,a)/a%2Fb', 'allow'],
      ['example,a)/a%2Fc', 'block'],
      ['example,a)/d%2Fz', 'exclude'],
      ['example,a)/public%2Fx', 'allow'],
      ['example,a)/q?next=%2Fassets/x', 'allow'],
      ['example,a)/assets/plain', 'exclude'],
    ];
    const times = ['2018-06-01', '2020-06-01'].map((d) => at(`${d}T00:00:00Z`));
    const db = new sqlite3.Database(':memory:');
    const all = <T>(sql: string, params: object = {}) =>
      new Promise<T[]>((resolve, reject) => db.all(sql, params, (err, rows: T[]) => (err ? reject(err) : resolve(rows))));
    t.teardown(() => db.close());
    await all('CREATE TABLE memento (urlkey TEXT, datetime INTEGER)');
    for (const [k] of expected) for (const d of times) await all('INSERT INTO memento VALUES ($k, $d)', { $k: k, $d: d });
    const access = new AccessRules([], {
      keys: new KeyQueries({ sql: SQLITE_SQL, browse: <T>(_name: string | null, sql: string, params: Record<string, string | number>) => all<T>(sql, params) }),
    });
    await access.replace(rules);
    const shown = shownCondition(access.shownRules(NOW));
    const bySql = new Set(
      (await all<{ urlkey: string; datetime: number }>(`SELECT urlkey, datetime FROM memento WHERE ${shown.sql}`, shown.params)).map(
        (r) => `${r.urlkey} ${r.datetime}`,
      ),
    );
    const hidden = access.wholeHiddenKeys();
    for (const [k, want] of expected) {
      const whole = hidden.some((r) => r.from <= k && k < r.to);
      t.equal(access.verdict(k, times[0], NOW), want, `${k} (2018): ${want}`);
      for (const d of times) {
        const v = access.verdict(k, d, NOW);
        t.equal(bySql.has(`${k} ${d}`), v === 'allow', `${k} at ${d}: SQL says ${v}`);
        if (whole) t.not(v, 'allow', `${k} at ${d}: in a wholly hidden range, hidden`);
      }
    }
    t.ok(
      hidden.some((r) => r.from <= 'example,a)/assets%2Fx' && 'example,a)/assets%2Fx' < r.to),
      'a key wholly hidden in its folded form is skipped by the walks too',
    );
    const without = new AccessRules(rules);
    t.equal(without.verdict('example,a)/assets%2Fx', 0, NOW), 'exclude', 'without an index (a command filtering row by row): the same verdict');
  },
);

t.test('a rule names a key in its folded form only when the key lies under one of the prefixes looked up for it (seeded fuzz)', async (t) => {
  const parts = ['a', 'b', 'as', '%2F', '%5C', '/'];
  const rnd = prng(33_2);
  const pick = () => parts[Math.floor(rnd() * parts.length)];
  const path = (n: number) => ('/' + Array.from({ length: n }, pick).join('')).replace(/\/{2,}/g, '/');
  let folded = 0;
  for (let i = 0; i < 20_000; i++) {
    const k = `example,a)${path(1 + Math.floor(rnd() * 6))}`;
    const p = { key: `example,a)${path(Math.floor(rnd() * 4)).replace(/%2F|%5C/g, '')}`.replace(/\/{2,}/g, '/'), prefix: rnd() < 0.5 };
    const direct = p.prefix ? k.startsWith(p.key) : k === p.key;
    if (direct || !matchesPattern(p, k)) continue;
    folded++;
    if (!foldedPrefixes(p.key).some((pre) => k.startsWith(pre))) t.fail(`${k} is named by ${JSON.stringify(p)} in its folded form, under no prefix looked up`);
  }
  t.ok(folded > 500, `${folded} keys named in their folded form only, each under a prefix looked up`);
});
