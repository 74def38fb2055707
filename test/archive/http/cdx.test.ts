/**
 * The CDX server API (`GET /cdx`, docs/http-api.md "CDX server API"): each parameter
 * with captures across the two archives, the line formats pywb and Wayback
 * clients parse, matching over urlkeys with neighbouring hosts that must not
 * match, paging with resume keys, the 400s, HEAD. Captures go in through
 * real PUTs; the paging test adds index rows directly (a CDX answer reads
 * only the index).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import t from 'tap';
import { timestampBound } from '../../../archive/cdx/query.js';
import { indexRow } from '../../../archive/store/index/index-row.js';
import { type CaptureParts, captureRecord, putCapture, request, startArchive } from '../../helpers/archive.js';
import { epoch, headMatchesGet, partsOf, seed, ts14 } from '../../conformance/helpers.js';

const a = await startArchive();
t.teardown(() => a.close());

const MAR05 = 'Mon, 05 Mar 2001 09:07:03 GMT';
const MAR20 = 'Tue, 20 Mar 2001 20:35:00 GMT';
const JAN07 = 'Wed, 07 Jan 2026 10:00:00 GMT';
const JAN08 = 'Thu, 08 Jan 2026 10:00:00 GMT';
const ROOT = 'http://example.com/';
const GONE: CaptureParts = { status: 404, reason: 'Not Found', responseHeaders: [['Content-Type', 'text/plain; charset=us-ascii']], body: 'gone\n' };

/** Every capture: URI-R, date, parts. 2001 goes to archive "2025", 2026 to "current". */
const CAPTURES: [string, string, CaptureParts?][] = [
  [ROOT, MAR05],
  [ROOT, MAR20],
  [ROOT, JAN07],
  [ROOT, JAN08],
  ['http://example.com/a/b?x=1', MAR20, GONE],
  ['http://example.com/a/c', JAN07],
  ['https://example.com/secure', JAN08],
  ['http://example.com:8080/', JAN07],
  ['http://www.example.com/', MAR20],
  ['http://sub.www.example.com/deep', JAN07],
  // Neighbours: their urlkeys begin like example.com's, or end like it.
  ['http://example.com.au/', MAR20],
  ['http://examples.com/', MAR20],
  ['http://example-cdn.com/', MAR20],
];
for (const [uri, date, parts] of CAPTURES) await seed(a, uri, date, parts);

/** The body seed() stores for a capture (conformance/helpers.ts). */
const bodyOf = (uri: string, date: string) => `<html><head><title>${date}</title></head><body>${uri} at ${date}</body></html>`;
const sha256 = (s: string) => 'sha256:' + createHash('sha256').update(s).digest('hex');

const cdx = (query: string, method = 'GET') => request(`${a.url}/cdx?${query}`, { method });
const linesOf = (text: string) => text.split('\n').filter((l) => l !== '');
/** `<original> <timestamp>` of each text line (default fields). */
const listed = (text: string) => linesOf(text).map((l) => `${l.split(' ')[2]} ${l.split(' ')[1]}`);
const at = (uri: string, date: string) => `${uri} ${ts14(date)}`;

t.test(
  'docs/http-api.md "CDX server API": the default line is the 7-field CDX line (urlkey timestamp original mimetype statuscode digest length), oldest first across archives',
  async (t) => {
    const res = await cdx('url=example.com');
    t.equal(res.status, 200);
    t.equal(res.headers['content-type'], 'text/plain; charset=UTF-8');
    t.equal(res.headers['access-control-allow-origin'], '*');
    const lines = linesOf(res.text);
    t.equal(res.text, lines.join('\n') + '\n', 'one line per capture, each ending in \\n');
    t.same(
      lines.map((l) => l.split(' ').slice(0, 6)),
      [MAR05, MAR20, JAN07, JAN08].map((d) => ['com,example)/', ts14(d), ROOT, 'text/html', '200', sha256(bodyOf(ROOT, d))]),
      'urlkey, timestamp, original, mimetype, statuscode, digest (sha256:<hex> of the payload)',
    );
    for (const l of lines) t.match(l.split(' ')[6], /^[1-9]\d*$/, 'length: a byte count');

    const gone = linesOf((await cdx('url=http://example.com/a/b?x=1'.replace('?', '%3F'))).text);
    t.same(
      gone.map((l) => l.split(' ')),
      [['com,example)/a/b?x=1', ts14(MAR20), 'http://example.com/a/b?x=1', 'text/plain', '404', sha256('gone\n'), gone[0].split(' ')[6]]],
    );
  },
);

t.test('pywb CDXObject: the default line is its "Public CDX Format" (7 fields); fl= gives its CDX11 (redirect and robotflags "-")', async (t) => {
  const cdx11 = 'urlkey,timestamp,url,mime,status,digest,redirect,robotflags,length,offset,filename';
  const eleven = linesOf((await cdx(`url=example.com&fl=${cdx11}`)).text);
  const seven = linesOf((await cdx('url=example.com')).text);
  t.equal(eleven.length, 4);
  for (const [i, l] of eleven.entries()) {
    const f = l.split(' ');
    t.equal(f.length, 11, 'CDX11: 11 fields');
    t.same([f[6], f[7]], ['-', '-'], 'redirect and robotflags are not kept: "-"');
    const s = seven[i].split(' ');
    t.same([...f.slice(0, 6), f[8]], s, 'the same values as the 7-field line');
  }
});

t.test('docs/http-api.md "CDX server API": length, offset and filename locate the WARC response record; digest is its WARC-Payload-Digest', async (t) => {
  const res = await cdx('url=*.example.com&fl=url,timestamp,filename,offset,length,digest,archive');
  const lines = linesOf(res.text);
  t.equal(lines.length, 10);
  for (const l of lines) {
    const [url, ts, filename, offset, length, digest, archive] = l.split(' ');
    t.equal(filename.split('/')[0], archive, 'files of an archive are under its folder');
    t.equal(archive, ts < '2026' ? '2025' : 'current', 'the archive whose span holds the capture');
    const bytes = readFileSync(path.join(a.dataDir, 'warcs', filename)).subarray(Number(offset), Number(offset) + Number(length));
    const record = gunzipSync(bytes).toString('latin1');
    t.match(record, /^WARC\/1\.1\r\n/, `${url} ${ts}: a WARC record starts at offset`);
    t.match(record, /\r\nWARC-Type: response\r\n/);
    t.ok(record.includes(`\r\nWARC-Target-URI: ${url}\r\n`), 'of the capture');
    t.ok(record.includes(`\r\nWARC-Payload-Digest: ${digest}\r\n`), 'digest = WARC-Payload-Digest');
  }
});

t.test('docs/http-api.md "CDX server API": output=json is pywb\'s NDJSON: one object per line, pywb\'s field names, string values, plus archive', async (t) => {
  const res = await cdx('url=example.com&output=json');
  t.equal(res.status, 200);
  t.equal(res.headers['content-type'], 'application/x-ndjson');
  t.equal(res.headers['access-control-allow-origin'], '*');
  const objs = linesOf(res.text).map((l) => JSON.parse(l) as Record<string, string>);
  t.equal(objs.length, 4);
  for (const [i, d] of [MAR05, MAR20, JAN07, JAN08].entries()) {
    const o = objs[i];
    t.same(Object.keys(o), ['urlkey', 'timestamp', 'url', 'mime', 'status', 'digest', 'length', 'offset', 'filename', 'archive']);
    t.match(o, { urlkey: 'com,example)/', timestamp: ts14(d), url: ROOT, mime: 'text/html', status: '200', digest: sha256(bodyOf(ROOT, d)) });
    t.equal(o.archive, i < 2 ? '2025' : 'current');
    for (const v of Object.values(o)) t.type(v, 'string');
  }
  const text = linesOf((await cdx('url=example.com&fl=urlkey,timestamp,original,mimetype,statuscode,digest,length')).text);
  t.same(
    objs.map((o) => [o.urlkey, o.timestamp, o.url, o.mime, o.status, o.digest, o.length].join(' ')),
    text,
    'the same values as the text lines',
  );
});

t.test('docs/http-api.md "CDX server API": fl= picks and orders fields; pywb and Wayback names alike; JSON keys are pywb names', async (t) => {
  t.same(linesOf((await cdx('url=example.com&fl=timestamp,statuscode,original&limit=2')).text), [`${ts14(MAR05)} 200 ${ROOT}`, `${ts14(MAR20)} 200 ${ROOT}`]);
  t.same(linesOf((await cdx('url=example.com&fl=status,timestamp&limit=1')).text), [`200 ${ts14(MAR05)}`]);
  t.same(JSON.parse(linesOf((await cdx('url=example.com&output=json&fl=original,mimetype,timestamp&limit=1')).text)[0]), {
    url: ROOT,
    mime: 'text/html',
    timestamp: ts14(MAR05),
  });
  t.same(JSON.parse(linesOf((await cdx('url=example.com&output=json&fl=timestamp,timestamp&limit=1')).text)[0]), { timestamp: ts14(MAR05) }, 'a field once');
});

t.test('docs/http-api.md "CDX server API": matchType=prefix (or a trailing *) lists every URL under the prefix, in urlkey order', async (t) => {
  const want = [at('http://example.com/a/b?x=1', MAR20), at('http://example.com/a/c', JAN07)];
  t.same(listed((await cdx('url=example.com/a/*')).text), want);
  t.same(listed((await cdx('url=http://example.com/a/&matchType=prefix')).text), want);
  t.same(listed((await cdx('url=http://example.com/a&matchType=prefix')).text), want, 'a prefix need not end at a /');
  t.same(listed((await cdx('url=example.com/a/*&matchType=prefix')).text), want, 'the wildcard and the same matchType');
  t.same(
    listed((await cdx('url=example.com/*')).text),
    [
      ...[MAR05, MAR20, JAN07, JAN08].map((d) => at(ROOT, d)),
      at('http://example.com/a/b?x=1', MAR20),
      at('http://example.com/a/c', JAN07),
      at('https://example.com/secure', JAN08),
    ],
    'the whole host and port (http and https share urlkeys), not www., :8080, examples.com or example.com.au',
  );
});

t.test('docs/http-api.md "CDX server API": matchType=host is the one host and port, whatever the path', async (t) => {
  const want = [
    ...[MAR05, MAR20, JAN07, JAN08].map((d) => at(ROOT, d)),
    at('http://example.com/a/b?x=1', MAR20),
    at('http://example.com/a/c', JAN07),
    at('https://example.com/secure', JAN08),
  ];
  t.same(listed((await cdx('url=http://example.com/a/c&matchType=host')).text), want);
  t.same(listed((await cdx('url=http://example.com:8080/x&matchType=host')).text), [at('http://example.com:8080/', JAN07)], 'another port is another host');
  t.same(listed((await cdx('url=www.example.com&matchType=host')).text), [at('http://www.example.com/', MAR20)], 'not its subdomains');
});

t.test('docs/http-api.md "CDX server API": matchType=domain (or *.host) adds the ports and every subdomain, and no neighbour', async (t) => {
  const want = [
    ...[MAR05, MAR20, JAN07, JAN08].map((d) => at(ROOT, d)),
    at('http://example.com/a/b?x=1', MAR20),
    at('http://example.com/a/c', JAN07),
    at('https://example.com/secure', JAN08),
    at('http://www.example.com/', MAR20),
    at('http://sub.www.example.com/deep', JAN07),
    at('http://example.com:8080/', JAN07),
  ];
  const byWildcard = listed((await cdx('url=*.example.com')).text);
  t.same(byWildcard, want, 'urlkey order: com,example) < com,example,… < com,example:8080)');
  t.same(listed((await cdx('url=example.com/some/path&matchType=domain')).text), want);
  for (const l of byWildcard) t.notMatch(l, /example\.com\.au|examples\.com|example-cdn/);
  t.same(
    listed((await cdx('url=*.www.example.com')).text),
    [at('http://www.example.com/', MAR20), at('http://sub.www.example.com/deep', JAN07)],
    'a subdomain: it and its own subdomains only',
  );
  t.same(listed((await cdx('url=*.com.au')).text), [at('http://example.com.au/', MAR20)]);
  t.same(listed((await cdx('url=*.examples.com')).text), [at('http://examples.com/', MAR20)]);
});

t.test('docs/http-api.md "CDX server API": from and to are inclusive 1–14 digit prefixes (from = its first second, to = its last)', async (t) => {
  const q = (p: string) => cdx(`url=example.com&${p}`).then((r) => listed(r.text));
  t.same(await q('from=2026'), [at(ROOT, JAN07), at(ROOT, JAN08)]);
  t.same(await q('to=2001'), [at(ROOT, MAR05), at(ROOT, MAR20)]);
  t.same(await q('from=2001&to=2001'), [at(ROOT, MAR05), at(ROOT, MAR20)]);
  t.same(await q('to=200103'), [at(ROOT, MAR05), at(ROOT, MAR20)], 'to=200103 is the end of March');
  t.same(await q('to=20010319'), [at(ROOT, MAR05)], 'to=20010319 is the end of that day');
  t.same(await q(`from=${ts14(MAR20)}&to=${ts14(JAN07)}`), [at(ROOT, MAR20), at(ROOT, JAN07)], 'both ends inclusive, to the second');
  t.same(await q(`from=${ts14(MAR20).slice(0, 13)}`), [at(ROOT, MAR20), at(ROOT, JAN07), at(ROOT, JAN08)], 'an odd number of digits is a prefix too');
  t.same(await q(`to=${new Date((epoch(MAR20) - 1) * 1000).toISOString().replace(/\D/g, '').slice(0, 14)}`), [at(ROOT, MAR05)], 'one second before');
  t.same(await q('from=2027'), [], 'nothing in the window: 200 and no lines');
  t.same(await q('from=2026&to=2001'), [], 'an empty window');
});

t.test('docs/http-api.md "CDX server API": limit, sort=reverse, sort=closest (nearest first, a tie to the earlier)', async (t) => {
  t.same(listed((await cdx('url=example.com&limit=2')).text), [at(ROOT, MAR05), at(ROOT, MAR20)]);
  t.same(listed((await cdx('url=example.com&limit=99999999')).text).length, 4, 'a limit above the maximum is lowered to it');
  t.same(
    listed((await cdx('url=example.com&sort=reverse')).text),
    [JAN08, JAN07, MAR20, MAR05].map((d) => at(ROOT, d)),
  );
  t.same(
    listed((await cdx('url=example.com/*&sort=reverse&limit=3')).text),
    [at('https://example.com/secure', JAN08), at('http://example.com/a/c', JAN07), at('http://example.com/a/b?x=1', MAR20)],
    'reverse over a prefix: urlkeys descending',
  );
  t.same(
    listed((await cdx(`url=example.com&sort=closest&closest=${ts14(JAN07)}`)).text),
    [JAN07, JAN08, MAR20, MAR05].map((d) => at(ROOT, d)),
  );
  t.same(listed((await cdx('url=example.com&sort=closest&closest=2001031&limit=1')).text), [at(ROOT, MAR05)], 'closest=2001031: the 10th, nearer the 5th');
  t.same(listed((await cdx('url=example.com&sort=closest&closest=20010314')).text).slice(0, 2), [at(ROOT, MAR20), at(ROOT, MAR05)]);
  // 2001-03-13 02:51:01.5 is equidistant from both March captures; the whole second before it is nearer the 5th.
  const mid = (epoch(MAR05) + epoch(MAR20)) / 2;
  t.equal(mid % 1, 0.5);
  const before = new Date(Math.floor(mid) * 1000).toISOString().replace(/\D/g, '').slice(0, 14);
  t.same(listed((await cdx(`url=example.com&sort=closest&closest=${before}&to=2001`)).text), [at(ROOT, MAR05), at(ROOT, MAR20)]);
  const tie = 'http://example.com/tie';
  await seed(a, tie, 'Thu, 01 Jan 2026 10:00:00 GMT');
  await seed(a, tie, 'Thu, 01 Jan 2026 14:00:00 GMT');
  t.same(
    listed((await cdx(`url=${tie}&sort=closest&closest=20260101120000`)).text),
    [at(tie, 'Thu, 01 Jan 2026 10:00:00 GMT'), at(tie, 'Thu, 01 Jan 2026 14:00:00 GMT')],
    'two hours either side: the earlier first',
  );
  t.same(
    listed((await cdx(`url=example.com&sort=closest&closest=${ts14(MAR20)}&from=2026`)).text),
    [at(ROOT, JAN07), at(ROOT, JAN08)],
    'closest within from/to',
  );
  t.same(
    listed((await cdx('url=example.com&closest=&sort=closest')).text),
    [MAR05, MAR20, JAN07, JAN08].map((d) => at(ROOT, d)),
    "sort=closest without an instant (pywb's remote index asking for a TimeMap): oldest first",
  );
});

t.test('docs/http-api.md "CDX server API": a URL never captured is 200 with no lines; the URL is normalised as in every address', async (t) => {
  const none = await cdx('url=http://never.example.com/');
  t.equal(none.status, 200);
  t.equal(none.text, '');
  t.same(listed((await cdx('url=HTTP://EXAMPLE.com:80/a/c')).text), [at('http://example.com/a/c', JAN07)]);
  t.same(listed((await cdx(`url=${encodeURIComponent('http://example.com/a/b?x=1')}`)).text), [at('http://example.com/a/b?x=1', MAR20)]);
});

t.test(
  'docs/http-api.md "CDX server API": paging with showResumeKey/resumeKey returns every row exactly once, in order (text, json, reverse, closest)',
  async (t) => {
    // 1,237 rows of 7 URLs, straight into the index; ten datetimes are in both archives (same second, two rows).
    const host = 'paging.example.net';
    const rows = [];
    const t0 = epoch('Mon, 01 Jan 2024 00:00:00 GMT');
    for (let i = 0; i < 1227; i++) {
      const uriR = `http://${host}/p${i % 7}`;
      const datetime = t0 + Math.floor(i / 7) * 86400 * 5 + (i % 3);
      rows.push(
        indexRow({
          archiveId: datetime < epoch('Thu, 01 Jan 2026 00:00:00 GMT') ? '2025' : 'current',
          uriR,
          datetime,
          status: 200,
          responseHeaders: [['Content-Type', 'text/html']],
          requestHeaders: null,
          digest: `sha256:${String(i).padStart(64, '0')}`,
        }),
      );
    }
    for (let i = 0; i < 10; i++) {
      rows.push(
        indexRow({
          archiveId: 'current',
          uriR: `http://${host}/p3`,
          datetime: t0 + 700 * 86400 + i * 3600,
          status: 200,
          responseHeaders: [],
          requestHeaders: null,
          digest: '',
        }),
      );
      rows.push(
        indexRow({
          archiveId: '2025',
          uriR: `http://${host}/p3`,
          datetime: t0 + 700 * 86400 + i * 3600,
          status: 200,
          responseHeaders: [],
          requestHeaders: null,
          digest: '',
        }),
      );
    }
    await a.store.index.insertMany(rows);

    const page = async (base: string, json: boolean) => {
      const got: string[] = [];
      let key: string | undefined;
      let pages = 0;
      for (;;) {
        const res = await cdx(base + '&limit=100&showResumeKey=true' + (key ? `&resumeKey=${key}` : ''));
        t.equal(res.status, 200);
        pages++;
        const parts = res.text.split('\n');
        t.equal(parts.pop(), '', 'ends in \\n');
        key = undefined;
        if (json) {
          const last = JSON.parse(parts[parts.length - 1] ?? 'null') as { resumeKey?: string } | null;
          if (last && Object.keys(last).length === 1 && last.resumeKey) {
            key = last.resumeKey;
            parts.pop();
          }
        } else if (parts.length >= 2 && parts[parts.length - 2] === '') {
          key = parts.pop();
          parts.pop();
        }
        got.push(...parts);
        if (!key) break;
        t.equal(parts.length, 100, 'a full page before a resume key');
        if (pages > 30) throw new Error('paging does not end');
      }
      return { got, pages };
    };
    for (const [query, json] of [
      [`url=${host}/*&fl=urlkey,timestamp,url,mime,status,digest,length,archive`, false],
      [`url=${host}/*&output=json`, true],
      [`url=${host}/*&sort=reverse&fl=urlkey,timestamp,archive`, false],
      [`url=*.example.net&fl=urlkey,timestamp,archive,digest`, false],
      [`url=${host}/p3&sort=closest&closest=20250601&fl=timestamp,archive`, false],
      [`url=${host}/p3&sort=closest&closest=20250601&output=json&fl=timestamp,archive`, true],
      [`url=${host}/*&from=2024063&to=2025&fl=archive,urlkey,timestamp`, false],
    ] as const) {
      const whole = linesOf((await cdx(query)).text);
      const { got, pages } = await page(query, json);
      t.equal(new Set(got).size, got.length, `${query}: no line twice`);
      t.same(got, whole, `${query}: every line once, in the order of the whole answer (${whole.length} lines in ${pages} pages)`);
    }
    const all = linesOf((await cdx(`url=${host}/*&fl=urlkey,timestamp,archive`)).text);
    t.equal(all.length, 1247, 'every row of the index');
    t.equal(all.filter((l) => l.startsWith('net,example,paging)/p3 ')).length, 195);
    t.ok(
      all.some((l, i) => l.split(' ').slice(0, 2).join(' ') === all[i + 1]?.split(' ').slice(0, 2).join(' ')),
      'the same URL and second in two archives: two lines',
    );
    const closest = linesOf((await cdx(`url=${host}/p3&sort=closest&closest=20250601&fl=timestamp`)).text).map((l) => timestampBound(l, 'first')!);
    const target = epoch('Sun, 01 Jun 2025 00:00:00 GMT');
    t.equal(closest.length, 195);
    for (let i = 1; i < closest.length; i++) t.ok(Math.abs(closest[i] - target) >= Math.abs(closest[i - 1] - target), 'nearest first');

    const last = await cdx(`url=${host}/p0&limit=500&showResumeKey=true`);
    t.notMatch(last.text, /\n\n/, 'no resume key when nothing is left');
    const big = await cdx(`url=${host}/*`);
    t.equal(big.headers['transfer-encoding'], 'chunked', 'streamed');
    t.notOk(big.headers['content-length']);
  },
);

t.test("pywb's remote index (RemoteIndexSource): its closest and TimeMap requests are answered with lines its CDXObject parses", async (t) => {
  // pywb fills `?url={url}&closest={closest}&sort=closest` with urllib's quote(url) (safe "/"), adding limit=10 for a closest lookup.
  const quote = (u: string) => encodeURIComponent(u).replace(/%2F/g, '/');
  const uri = 'http://example.com/a/b?x=1';
  const closest = await cdx(`url=${quote(ROOT)}&closest=${ts14(JAN07)}&sort=closest&limit=10`);
  t.equal(closest.status, 200);
  const parsed = linesOf(closest.text).map((l) => l.split(' '));
  for (const f of parsed) t.equal(f.length, 7, 'the public CDX format: 7 fields');
  t.same(
    parsed.map((f) => f[1]),
    [JAN07, JAN08, MAR20, MAR05].map(ts14),
  );
  const timemap = await cdx(`url=${quote(uri)}&closest=&sort=closest`);
  t.same(listed(timemap.text), [at(uri, MAR20)]);
});

t.test('docs/http-api.md "CDX server API": a bad parameter is 400 with a one-line reason, for HEAD too', async (t) => {
  const bad: [string, RegExp][] = [
    ['', /^url= is required/],
    ['url=', /^url= is required/],
    ['url=ftp://example.com/', /^url=: only http and https/],
    ['url=example.com&url=example.org', /^url= is given 2 times/],
    ['url=example.com&matchType=range', /^matchType=range is not one of/],
    ['url=*.example.com&matchType=prefix', /wildcard means matchType=domain, but matchType=prefix/],
    ['url=example.com/*&matchType=exact', /wildcard means matchType=prefix/],
    ['url=example.com&from=2024-01', /^from=2024-01 is not a timestamp/],
    ['url=example.com&to=201413', /^to=201413 is not a timestamp/],
    ['url=example.com&from=20230229', /^from=20230229 is not a timestamp/],
    ['url=example.com&from=202301011200000', /^from=202301011200000 is not a timestamp/],
    ['url=example.com&limit=0', /^limit=0/],
    ['url=example.com&limit=-1', /^limit=-1 is not a positive whole number/],
    ['url=example.com&limit=ten', /^limit=ten/],
    ['url=example.com&sort=newest', /^sort=newest is not reverse or closest/],
    ['url=example.com&sort=closest&closest=yesterday', /^closest=yesterday is not a timestamp/],
    ['url=example.com/*&sort=closest&closest=2001', /^sort=closest orders the captures of one URL/],
    ['url=example.com&output=cdxj', /^output=cdxj is not json or text/],
    ['url=example.com&fl=urlkey,size', /^fl=: no field "size"/],
    ['url=example.com&showResumeKey=yes', /^showResumeKey=yes is not true or false/],
    ['url=example.com&resumeKey=garbage', /^resumeKey=garbage is not a resume key/],
    ['url=example.com&sort=closest&closest=2001&resumeKey=com%2Cexample)%2F+20010305090703+1', /continues a query without sort=closest/],
    ['url=example.com&filter=status:200', /^filter= is not supported by this CDX server/],
    ['url=example.com&page=0', /^page= is not supported/],
    ['url=example.com&collapse=digest', /^collapse= is not supported/],
  ];
  for (const [q, reason] of bad) {
    const res = await cdx(q);
    t.equal(res.status, 400, q);
    t.equal(res.headers['content-type'], 'text/plain; charset=UTF-8');
    t.equal(res.headers['access-control-allow-origin'], '*', 'a script of another origin can read why');
    t.match(res.text, reason, q);
    t.equal(res.text.trimEnd().split('\n').length, 1, 'one line');
    const head = await cdx(q, 'HEAD');
    t.equal(head.status, 400, `HEAD ${q}`);
  }
  const twice = await cdx('url=example.com&resumeKey=' + encodeURIComponent('com%2Cexample)%2F+20010305090703+1'));
  t.equal(twice.status, 200, 'a resume key percent-encoded once more is still read');
});

t.test('docs/http-api.md "CDX server API": a JSON line escapes what JSON needs (a backslash in a query)', async (t) => {
  const odd = 'http://example.com/odd?x=a\\b%27c%22d';
  await seed(a, odd, JAN08);
  const res = await cdx(`output=json&url=${encodeURIComponent(odd)}&fl=url,timestamp`);
  t.same(
    linesOf(res.text).map((l) => JSON.parse(l)),
    [{ url: odd, timestamp: ts14(JAN08) }],
  );
  t.same(linesOf((await cdx(`url=${encodeURIComponent(odd)}&fl=url`)).text), [odd], 'the text line as it is');
});

t.test('RFC 9110 §9.3.2: HEAD answers as GET without the body; other methods 405, OPTIONS 204', async (t) => {
  for (const q of ['url=example.com', 'url=*.example.com&output=json', 'url=never.example.org', 'limit=3']) await headMatchesGet(t, `${a.url}/cdx?${q}`);
  const post = await request(`${a.url}/cdx?url=example.com`, { method: 'POST', body: 'x' });
  t.equal(post.status, 405);
  t.equal(post.headers.allow, 'GET, HEAD');
  const options = await request(`${a.url}/cdx?url=example.com`, { method: 'OPTIONS' });
  t.equal(options.status, 204);
});

t.test(
  'docs/http-api.md "CDX server API": a revisit is a line of its own as pywb lists one: mime warc/revisit, its own status, the payload\'s digest, the revisit record\'s filename/offset/length',
  async (t) => {
    const r = await startArchive();
    t.teardown(() => r.close());
    const uri = 'http://example.com/revisited';
    const body = '<html><body>unchanged</body></html>';
    for (const d of [JAN07, JAN08]) t.equal((await putCapture(r, uri, captureRecord({ ...partsOf(uri), date: d, body }))).status, 201, `${d}: stored`);
    t.equal(
      (await putCapture(r, uri, captureRecord({ ...partsOf(uri), date: 'Thu, 08 Jan 2026 12:00:00 GMT', body }))).status,
      200,
      'within the revisit interval: no memento, no line',
    );
    const res = await request(`${r.url}/cdx?url=${uri}&output=json&fl=timestamp,mime,status,digest,filename,offset,length`);
    t.equal(res.status, 200);
    const [first, second, ...more] = linesOf(res.text).map((l) => JSON.parse(l) as Record<string, string>);
    t.same(more, [], 'two lines');
    t.match(first, { timestamp: ts14(JAN07), mime: 'text/html', status: '200', digest: sha256(body) });
    t.match(second, { timestamp: ts14(JAN08), mime: 'warc/revisit', status: '200', digest: sha256(body) }, 'the revisit');
    const record = gunzipSync(
      readFileSync(path.join(r.dataDir, 'warcs', second.filename)).subarray(Number(second.offset), Number(second.offset) + Number(second.length)),
    ).toString('latin1');
    t.match(record, /^WARC\/1\.1\r\nWARC-Type: revisit\r\n/, 'filename, offset and length: the revisit record');
    t.ok(record.includes(`\r\nWARC-Refers-To-Target-URI: ${uri}\r\n`), 'which names its original');
    t.ok(record.includes(`\r\nWARC-Payload-Digest: ${sha256(body)}\r\n`));
    const text = linesOf((await request(`${r.url}/cdx?url=${uri}`)).text);
    t.match(text[1], new RegExp(`^com,example\\)/revisited ${ts14(JAN08)} ${uri} warc/revisit 200 sha256:[0-9a-f]{64} ${second.length}$`), 'the 7-field line');
  },
);
