/**
 * The CDX request without a server (archive/cdx/query.ts): timestamps as
 * prefixes, the urlkey ranges of each matchType, resume keys, defaults.
 */
import t from 'tap';
import { CDX_MAX_LINES, formatResumeKey, parseCdxQuery, parseResumeKey, timestampBound, urlkeyRanges } from '../../../archive/cdx/query.js';
import { exactUrlkey } from '#shared/uri.js';

const iso = (s: number | undefined) => (s === undefined ? undefined : new Date(s * 1000).toISOString().replace('.000Z', 'Z'));

t.test('timestampBound: 1–14 digits are a prefix; from = its first second, to = its last', async (t) => {
  const cases: [string, string | undefined, string | undefined][] = [
    ['2024', '2024-01-01T00:00:00Z', '2024-12-31T23:59:59Z'],
    ['202402', '2024-02-01T00:00:00Z', '2024-02-29T23:59:59Z'],
    ['202302', '2023-02-01T00:00:00Z', '2023-02-28T23:59:59Z'],
    ['2024041', '2024-04-10T00:00:00Z', '2024-04-19T23:59:59Z'],
    ['2024043', '2024-04-30T00:00:00Z', '2024-04-30T23:59:59Z'],
    ['20240', '2024-01-01T00:00:00Z', '2024-09-30T23:59:59Z'],
    ['20241', '2024-10-01T00:00:00Z', '2024-12-31T23:59:59Z'],
    ['2', '2000-01-01T00:00:00Z', '2999-12-31T23:59:59Z'],
    ['1999123123', '1999-12-31T23:00:00Z', '1999-12-31T23:59:59Z'],
    ['20010320203500', '2001-03-20T20:35:00Z', '2001-03-20T20:35:00Z'],
    ['20000229', '2000-02-29T00:00:00Z', '2000-02-29T23:59:59Z'],
    ['1900022', '1900-02-20T00:00:00Z', '1900-02-28T23:59:59Z'],
    // No date begins with these digits.
    ['201413', undefined, undefined],
    ['201400', undefined, undefined],
    ['20230229', undefined, undefined],
    ['2023022', '2023-02-20T00:00:00Z', '2023-02-28T23:59:59Z'],
    ['2023023', undefined, undefined],
    ['2023010124', undefined, undefined],
    ['202301012360', undefined, undefined],
    ['20230101235960', undefined, undefined],
    ['2023-01', undefined, undefined],
    ['', undefined, undefined],
    ['202301012359591', undefined, undefined],
  ];
  for (const [ts, first, last] of cases) {
    t.equal(iso(timestampBound(ts, 'first')), first, `${ts} from`);
    t.equal(iso(timestampBound(ts, 'last')), last, `${ts} to`);
  }
});

t.test('timestampBound: every 14-digit timestamp is the second it names, or none (a date that does not exist)', async (t) => {
  // A fixed pseudo-random walk over each field's digits, past their ranges (month 00 and 13, day 00 and 32, hour 24, minute and second 60).
  let x = 7;
  const next = (n: number) => (x = (x * 1103515245 + 12345) % 2147483648) % n;
  const two = (n: number) => String(n).padStart(2, '0');
  for (let i = 0; i < 2000; i++) {
    const [y, mo, d, h, mi, s] = [1 + next(9999), next(14), next(33), next(25), next(61), next(61)];
    const ts = String(y).padStart(4, '0') + two(mo) + two(d) + two(h) + two(mi) + two(s);
    const date = new Date(0);
    date.setUTCFullYear(y, mo - 1, d);
    date.setUTCHours(h, mi, s, 0);
    // The second exists when the calendar gives back the same fields (Date rolls 2023-02-29 over to 03-01).
    const exists = mo >= 1 && d >= 1 && h < 24 && mi < 60 && s < 60 && date.getUTCFullYear() === y && date.getUTCMonth() === mo - 1 && date.getUTCDate() === d;
    const want = exists ? date.getTime() / 1000 : undefined;
    if (timestampBound(ts, 'first') !== want || timestampBound(ts, 'last') !== want) {
      t.fail(`${ts}: ${timestampBound(ts, 'first')}, ${timestampBound(ts, 'last')}; expected ${want}`);
      return;
    }
  }
  t.pass('2000 timestamps, each its own second or none');
});

t.test('urlkeyRanges: host is one host and port; domain adds its ports and subdomains; byte order keeps neighbours out', async (t) => {
  const key = exactUrlkey('http://www.example.com/a/b?c=1');
  t.same(urlkeyRanges(key, 'exact'), [{ from: 'com,example,www)/a/b?c=1' }]);
  t.same(urlkeyRanges(key, 'prefix'), [{ from: 'com,example,www)/a/b?c=1', to: 'com,example,www)/a/b?c=2' }]);
  t.same(urlkeyRanges(key, 'host'), [{ from: 'com,example,www)', to: 'com,example,www*' }]);
  t.same(urlkeyRanges(exactUrlkey('http://example.com:8080/x'), 'host'), [{ from: 'com,example:8080)', to: 'com,example:8080*' }]);
  const domain = urlkeyRanges(exactUrlkey('http://example.com:8080/x'), 'domain');
  t.same(domain, [
    { from: 'com,example)', to: 'com,example*' },
    { from: 'com,example,', to: 'com,example-' },
    { from: 'com,example:', to: 'com,example;' },
  ]);
  const inDomain = (u: string) => domain.some((r) => r.from <= exactUrlkey(u) && exactUrlkey(u) < r.to!);
  for (const u of ['http://example.com/', 'https://example.com/x', 'http://example.com:81/', 'http://a.b.example.com/', 'http://www.example.com:8443/'])
    t.ok(inDomain(u), `${u} is in the domain`);
  for (const u of ['http://examples.com/', 'http://example-cdn.com/', 'http://example.com.au/', 'http://www.example.org/', 'http://xexample.com/'])
    t.notOk(inDomain(u), `${u} is not`);
  t.same(urlkeyRanges(exactUrlkey('http://[::1]:8080/x'), 'domain'), [
    { from: '[::1])', to: '[::1]*' },
    { from: '[::1],', to: '[::1]-' },
    { from: '[::1]:', to: '[::1];' },
  ]);
});

t.test('parseCdxQuery: defaults; wildcards; a limit above the maximum is lowered', async (t) => {
  const q = parseCdxQuery(new URLSearchParams('url=example.com'));
  t.match(q, { uriR: 'http://example.com/', matchType: 'exact', sort: 'asc', limit: CDX_MAX_LINES, output: 'text', showResumeKey: false });
  t.same(q.fields, ['urlkey', 'timestamp', 'url', 'mime', 'status', 'digest', 'length']);
  t.notOk('since' in q || 'until' in q || 'resume' in q);
  t.same(parseCdxQuery(new URLSearchParams('url=example.com&output=json')).fields, [
    'urlkey',
    'timestamp',
    'url',
    'mime',
    'status',
    'digest',
    'length',
    'offset',
    'filename',
    'archive',
  ]);
  t.equal(parseCdxQuery(new URLSearchParams('url=*.example.com')).matchType, 'domain');
  t.equal(parseCdxQuery(new URLSearchParams('url=example.com/a*')).uriR, 'http://example.com/a');
  t.equal(parseCdxQuery(new URLSearchParams('url=example.com&limit=1000000')).limit, CDX_MAX_LINES);
  t.match(
    parseCdxQuery(new URLSearchParams('url=example.com&from=&to=&limit=&gzip=false')),
    { limit: CDX_MAX_LINES },
    'empty values as absent; unknown parameters ignored',
  );
  t.same(
    parseCdxQuery(new URLSearchParams('url=example.com&fl=')).fields,
    parseCdxQuery(new URLSearchParams('url=example.com')).fields,
    'fl= empty: the default',
  );
  t.throws(() => parseCdxQuery(new URLSearchParams('url=example.com&fl=urlkey,')), /fl=: no field ""/);
});

t.test('resume keys: printed percent-encoded, read back to the same place', async (t) => {
  const linear = { kind: 'linear' as const, urlkey: 'com,example)/a?b=1', datetime: 984429600, id: 42 };
  t.equal(formatResumeKey(linear), 'com%2Cexample)%2Fa%3Fb%3D1+20010312204000+42');
  t.same(parseResumeKey(new URLSearchParams('k=' + formatResumeKey(linear)).get('k')!), linear);
  const closest = { kind: 'closest' as const, urlkey: 'com,example)/', after: { datetime: 984429600, id: 7 } };
  t.equal(formatResumeKey(closest), 'closest+com%2Cexample)%2F+-+-+20010312204000+7');
  t.same(parseResumeKey(new URLSearchParams('k=' + formatResumeKey(closest)).get('k')!), closest);
  for (const bad of ['', 'x', 'com,example)/ 2001 1', 'com,example)/ 20011332000000 1', 'com,example)/ 20010312204000 x', 'closest com,example)/ - 1 - -'])
    t.equal(parseResumeKey(bad), undefined, JSON.stringify(bad));
});
