/**
 * What a visitor sent is private (docs/threat-model.md "What a visitor's
 * data becomes"): captures whose request carries an address
 * (`X-Client-IP`, as the proxy adds with `EnableIP: On`), a `Referer`, a
 * `User-Agent` and cookie names are kept in the WARC files and the index
 * for the operator, and no read address of the archive — `/record`,
 * `/proof`, `/cdx` with every field, the `cdxj` export, the TimeMaps,
 * every form of the memento, the `/web/` pages — gives any of it.
 */
import { readFileSync, rmSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import zlib from 'node:zlib';
import t from 'tap';
import { parseYamlText } from '#shared/config.js';
import { validateArchiveConfig } from '../../archive/config.js';
import { captureRecord, putCapture, request, startArchive, TWO_ARCHIVES } from '../helpers/archive.js';
import { runCli, writeConfig } from './helpers.js';

const ADDRESS = '192.0.2.77';
const VISITOR: [string, string][] = [
  ['User-Agent', 'Mozilla/5.0 (visitor-agent-canary)'],
  ['Referer', 'http://intranet.example/private-referer-canary'],
  ['Cookie', 'session-cookie-canary='],
  ['X-Client-IP', ADDRESS],
];
const PRIVATE = ['visitor-agent-canary', 'private-referer-canary', 'session-cookie-canary', ADDRESS];
const URL_A = 'http://www.example.org/a';

const day = (d: number) => `${['Thu', 'Fri', 'Sat'][d - 1]}, 0${d} Jan 2026 00:00:00 GMT`;
const ts = (d: number) => `2026010${d}000000`;

t.test('no read address gives what the visitor sent; the operator keeps it', async (t) => {
  const c = writeConfig();
  t.teardown(() => rmSync(c.dir, { recursive: true, force: true }));
  const a = await startArchive(TWO_ARCHIVES, { dataDir: c.dataDir });
  t.teardown(() => a.close(true));
  for (const [d, body] of [
    [1, '<html><title>one</title><p>one</p></html>'],
    [2, '<html><title>two</title><p>two</p></html>'],
    [3, '<html><title>two</title><p>two</p></html>'], // a revisit
  ] as const) {
    const r = await putCapture(a, URL_A, captureRecord({ target: '/a', date: day(d), body, requestHeaders: VISITOR }));
    t.equal(r.status, 201);
  }

  // The operator's: the request records in the WARC files, the address in the index.
  const dir = path.join(c.dataDir, 'warcs', 'current');
  const stored = Buffer.concat(await Promise.all((await readdir(dir)).map((f) => zlib.gunzipSync(readFileSync(path.join(dir, f))))));
  for (const p of PRIVATE) t.ok(stored.includes(p), `kept in the WARC files: ${p}`);
  const rows = [];
  for await (const r of a.store.index.allMementos()) rows.push(r);
  t.same(
    rows.map((r) => r.client_ip),
    [ADDRESS, ADDRESS, ADDRESS],
    'the index keeps each capture’s address',
  );

  const html = { accept: 'text/html' };
  const reads: [string, Record<string, string>?][] = [
    ...[1, 2, 3].flatMap((d): [string, Record<string, string>?][] => [
      [`/current/record/${ts(d)}/${URL_A}`],
      [`/current/proof/${ts(d)}/${URL_A}`],
      [`/current/memento/${ts(d)}/${URL_A}`],
      [`/current/memento/${ts(d)}id_/${URL_A}`],
      [`/current/memento/${ts(d)}ol_/${URL_A}`],
      [`/current/memento/${ts(d)}/${URL_A}`, { prefer: 'original-content, original-links, original-headers' }],
      [`/web/${ts(d)}/${URL_A}`, html],
      [`/web/verify/current/${ts(d)}/${URL_A}`, html],
    ]),
    [`/web/diff/${ts(1)}/${ts(2)}/${URL_A}`, html],
    [`/web/*/${URL_A}`, html],
    [`/web/*/http://www.example.org/*`, html],
    ['/web/', html],
    [`/current/timemap/link/${URL_A}`],
    [`/current/timemap/json/${URL_A}`],
    [`/tg/timemap/${URL_A}`],
    [`/current/timegate/${URL_A}`],
    [`/cdx?url=${URL_A}`],
    [`/cdx?url=${URL_A}&output=json`],
    [`/cdx?url=www.example.org/*&fl=urlkey,timestamp,url,mime,status,digest,length,offset,filename,redirect,robotflags,archive`],
    [`/cdx?url=www.example.org/*&output=json&fl=urlkey,timestamp,url,mime,status,digest,length,offset,filename,redirect,robotflags,archive`],
    ['/metrics'],
  ];
  for (const [address, headers] of reads) {
    const r = await request(a.url + address, { headers });
    t.ok(r.status < 400, `${address}: ${r.status}`);
    const all = JSON.stringify(r.headers) + r.body.toString('latin1');
    for (const p of PRIVATE) t.notOk(all.includes(p), `${address}: not ${p}`);
  }
  const cdx = (await request(`${a.url}/cdx?url=${URL_A}`)).text.trim().split('\n');
  t.equal(cdx.length, 3, '/cdx: one line per memento, none for a request record');

  const out = await runCli(['cdxj', '--config', c.config]);
  t.equal(out.code, 0, out.stderr);
  t.equal(out.stdout.trim().split('\n').length, 3, 'cdxj: one line per memento, none for a request record');
  for (const p of PRIVATE) t.notOk(out.stdout.includes(p), `cdxj: not ${p}`);
});

t.test('publish_requests: false unless set to true; another value is refused with file:line', async (t) => {
  const load = (extra: string) => validateArchiveConfig(parseYamlText(`archives:\n  - id: a\n${extra}`, '/etc/archive.yaml'));
  t.equal(load('').publishRequests, false, 'off by default');
  t.equal(load('publish_requests: true\n').publishRequests, true);
  t.throws(() => load('publish_requests: maybe\n'), { message: /^\/etc\/archive\.yaml:3: publish_requests must be true or false, not "maybe"$/ });
});
