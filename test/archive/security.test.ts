/**
 * The archive's side of "nobody can plant or poison a memento": stored pages
 * never run as the archive (defect 4), a backslash cannot smuggle a
 * dot-segment past ingest (defect 6), every answer for any URI-R the archive
 * accepts fits a client that reads 16 KiB of head (defect 10), one writer
 * per data folder (defect 11).
 */
import { chmodSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { Readable } from 'node:stream';
import t from 'tap';
import { loadArchiveConfig, validateArchiveConfig } from '../../archive/config.js';
import { REPLAY_SANDBOX } from '../../archive/memento/response.js';
import { parseYamlText } from '#shared/config.js';
import { captureRecord, putCapture, request, startArchive, TWO_ARCHIVES } from '../helpers/archive.js';
import { seed, ts14 } from '../conformance/helpers.js';
import { startDaemon } from '../helpers/daemons.js';
import { runCli, warcRecords, writeConfig } from './helpers.js';

const SCRIPTED = '<html><head><title>x</title></head><body><script>document.cookie; fetch("/put/x")</script></body></html>';
const SVG = '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(document.domain)</script></svg>';

t.test(
  'defect 4: every form of a memento (replay, ol_, id_, Prefer) is sandboxed without the archive origin, with nosniff; the replay keeps every fetch on the archive',
  async (t) => {
    const a = await startArchive();
    t.teardown(() => a.close());
    const date = 'Tue, 20 Mar 2001 20:35:00 GMT';
    await seed(a, 'http://www.example.org/page.html', date, { body: SCRIPTED, responseHeaders: [['Content-Type', 'text/html']] });
    await seed(a, 'http://www.example.org/image.svg', date, { body: SVG, responseHeaders: [['Content-Type', 'image/svg+xml']] });
    await seed(a, 'http://www.example.org/untyped', date, { body: SCRIPTED, responseHeaders: [] });
    for (const path of ['page.html', 'image.svg', 'untyped']) {
      const uriM = `${a.url}/2025/memento/${ts14(date)}/http://www.example.org/${path}`;
      const raw = `${a.url}/2025/memento/${ts14(date)}id_/http://www.example.org/${path}`;
      const ol = `${a.url}/2025/memento/${ts14(date)}ol_/http://www.example.org/${path}`;
      for (const [form, url, headers] of [
        ['replay', uriM, {}],
        ['ol_', ol, {}],
        ['id_', raw, {}],
        ['Prefer: original-content', uriM, { prefer: 'original-content' }],
        ['Prefer: original-links', uriM, { prefer: 'original-links' }],
      ] as const) {
        const res = await request(url, { headers });
        t.equal(res.status, 200, `${path} ${form}`);
        const csp = String(res.headers['content-security-policy'] ?? '');
        t.match(csp, /(^|;)\s*sandbox\b/, `${path} ${form}: Content-Security-Policy has sandbox`);
        t.notMatch(csp, /allow-same-origin/, `${path} ${form}: the sandbox has no allow-same-origin (an opaque origin, never the archive's)`);
        t.equal(res.headers['x-content-type-options'], 'nosniff', `${path} ${form}: nosniff`);
        t.notMatch(csp, /allow-popups/, `${path} ${form}: no popups (a new window would load its URL live)`);
        if (form === 'replay') {
          const origin = new URL(a.url).origin;
          t.match(csp, new RegExp(`^default-src 'self' ${origin} data: blob: 'unsafe-inline' 'unsafe-eval';`), `${path} replay: fetches only from the archive`);
          t.match(
            csp,
            new RegExp(`; frame-src 'self' ${origin};`),
            `${path} replay: frames only from the archive (no data: or blob: document without the replay script)`,
          );
          t.match(csp, new RegExp(`; form-action 'self' ${origin};`), `${path} replay: forms submit only to the archive`);
          t.equal(res.headers['content-disposition'], undefined, `${path} replay: shown`);
        } else {
          // The stored forms rewrite nothing: every URL in them is the live site's.
          t.match(csp, /^sandbox; default-src 'none'; /, `${path} ${form}: no script, no fetch at all`);
          t.equal(res.headers['content-disposition'], 'attachment', `${path} ${form}: a browser saves it, never renders it`);
        }
      }
    }
    t.equal(REPLAY_SANDBOX.split(' ')[0], 'sandbox');
  },
);

t.test('defect 6: a capture PUT whose target hides a dot-segment behind a backslash is refused (400) and stores nothing', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  for (const target of ['/a\\..\\..\\etc\\passwd', '/POISON\\..\\index.html', '/a%5c..%5cindex.html', '/a%5C.%5Cb', '/a/..%5cb', '/x\\y']) {
    const res = await putCapture(a, '', captureRecord({ host: 'a.test', target }));
    t.equal(res.status, 400, `${target}: 400`);
    t.match(res.text, /^request target has (a dot-segment|a backslash)[^\n]*\n$/, `${target}: one line saying why (${res.text.trim()})`);
  }
  const ok = await putCapture(a, '', captureRecord({ host: 'a.test', target: '/index.html?q=a\\b' }));
  t.equal(ok.status, 201, 'a backslash in the query is not a path separator: stored');
  t.equal(await a.store.index.count(), 1, 'only that one capture is in the index');
  t.equal((await request(`${a.url}/tg/http://a.test/index.html`)).status, 404, 'no memento of /index.html was planted');
});

t.test('defect 10: for a URI-R of max_url_length (2048 characters) every answer fits a client reading 16 KiB of head', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const uriR = 'http://www.example.org/' + 'p'.repeat(2048 - 'http://www.example.org/'.length);
  t.equal(uriR.length, 2048);
  const dates = [
    'Mon, 05 Mar 2001 09:07:03 GMT',
    'Tue, 20 Mar 2001 20:35:00 GMT',
    'Sun, 01 Apr 2001 00:00:00 GMT',
    'Tue, 01 May 2001 12:00:00 GMT',
    'Fri, 01 Jun 2001 12:00:00 GMT',
  ];
  for (const d of dates) t.equal((await seed(a, uriR, d, { body: `<html><head></head><body>${d}</body></html>` })).status, 201);
  const mid = ts14(dates[2]);
  const answers: [string, string, Record<string, string>][] = [
    ['redirector', `${a.url}/tg/${uriR}`, {}],
    ['redirector with Accept-Datetime', `${a.url}/tg/${uriR}`, { 'accept-datetime': dates[2] }],
    ['TimeGate', `${a.url}/2025/timegate/${uriR}`, { 'accept-datetime': dates[2] }],
    ['TimeGate with Prefer', `${a.url}/2025/timegate/${uriR}`, { 'accept-datetime': dates[2], prefer: 'original-links' }],
    ['Memento', `${a.url}/2025/memento/${mid}/${uriR}`, {}],
    ['raw Memento', `${a.url}/2025/memento/${mid}id_/${uriR}`, {}],
    ['Memento, Prefer: original-content', `${a.url}/2025/memento/${mid}/${uriR}`, { prefer: 'original-content' }],
    ['redirect to the nearest Memento', `${a.url}/2025/memento/2001/${uriR}`, {}],
    ['TimeMap', `${a.url}/2025/timemap/link/${uriR}`, {}],
    ['JSON TimeMap', `${a.url}/2025/timemap/json/${uriR}`, {}],
    ['index TimeMap', `${a.url}/tg/timemap/${uriR}`, {}],
    ['timebundle', `${a.url}/2025/timebundle/${uriR}`, {}],
  ];
  for (const [what, url, headers] of answers) {
    // Node's client refuses a head over 16 KiB (HPE_HEADER_OVERFLOW): request() would reject.
    const res = await request(url, { headers });
    t.ok(res.status < 400, `${what}: ${res.status}, read with a 16 KiB head limit`);
  }
  const tg = await request(`${a.url}/2025/timegate/${uriR}`, { headers: { 'accept-datetime': dates[2] } });
  t.match(String(tg.headers.link), /rel="original"/, 'the TimeGate still names the original');
  t.match(String(tg.headers.link), /rel="[^"]*memento[^"]*"/, '… and the chosen memento');
  t.equal(tg.headers.location, `${a.url}/2025/memento/${mid}/${uriR}`, '… and redirects to it');
  const longer = await request(`${a.url}/tg/${uriR}x`);
  t.equal(longer.status, 400, 'a URI-R longer than max_url_length is refused with 400');
});

t.test('defect 10: a memento whose capture had 60 KB of headers still fits 16 KiB; what is left out is counted', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const many: [string, string][] = Array.from({ length: 60 }, (_, i) => [`X-Padding-${i}`, 'v'.repeat(1000)]);
  const res = await putCapture(
    a,
    '',
    captureRecord({ host: 'www.example.org', target: '/fat', responseHeaders: [['Content-Type', 'text/plain'], ...many], body: 'fat' }),
  );
  t.equal(res.status, 201);
  const m = await request(String(res.headers.location));
  t.equal(m.status, 200, 'read with a 16 KiB head limit');
  t.equal(m.text, 'fat');
  t.equal(m.headers['content-type'], 'text/plain', 'Content-Type is always sent');
  t.equal(m.headers['x-archive-orig-content-type'], 'text/plain', 'the first original headers are echoed');
  const omitted = Number(m.headers['x-archive-headers-omitted']);
  const echoed = Object.keys(m.headers).filter((k) => k.startsWith('x-archive-orig-x-padding-')).length;
  t.ok(omitted > 0 && echoed + omitted === 60, `${echoed} padding headers echoed, ${omitted} counted in X-Archive-Headers-Omitted`);
});

t.test(
  'defect 11: one writer per data folder: a second daemon and reindex fail at once naming the folder and the pid; verify runs beside; a killed daemon leaves no stale lock',
  async (t) => {
    const { dir, config, dataDir } = writeConfig();
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const first = await startDaemon('memento-archive.js', ['serve', '--config', config]);
    t.teardown(() => first.stop());
    // An upload in progress on the first daemon: the head and half the body.
    const record = captureRecord({ host: 'www.example.org', target: '/slow', body: 'x'.repeat(20_000), date: 'Tue, 06 Jan 2026 12:00:00 GMT' });
    const u = new URL(first.url);
    const put = http.request({
      host: u.hostname,
      port: u.port,
      method: 'PUT',
      path: '/put/http://www.example.org/slow',
      headers: { 'content-length': record.length },
    });
    const answer = new Promise<http.IncomingMessage>((resolve, reject) => put.on('response', resolve).on('error', reject));
    put.write(record.subarray(0, 10_000));
    const started = performance.now();
    const second = await runCli(['serve', '--config', config], 20_000);
    t.equal(second.code, 1, 'the second daemon exits 1');
    t.ok(performance.now() - started < 20_000, 'at once');
    t.match(
      second.stderr,
      new RegExp(
        `^memento-archive: a daemon \\(pid ${first.proc.pid}\\) is running on ${dataDir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}; a second daemon cannot share its data folder\\n$`,
      ),
    );
    const re = await runCli(['reindex', '--config', config], 20_000);
    t.equal(re.code, 1, 'reindex exits 1');
    t.match(re.stderr, new RegExp(`a daemon \\(pid ${first.proc.pid}\\) is running on .*; stop it before reindex`));
    put.end(record.subarray(10_000));
    const res = await answer;
    res.resume();
    t.equal(res.statusCode, 201, "the first daemon's upload in progress is stored");
    const verify = await runCli(['verify', '--config', config]);
    t.equal(verify.code, 0, 'verify runs beside the daemon');
    t.match(verify.stdout, /^verify: OK: 1 index rows/m);
    first.proc.kill('SIGKILL');
    await new Promise((resolve) => first.proc.once('exit', resolve));
    const again = await startDaemon('memento-archive.js', ['serve', '--config', config]);
    t.teardown(() => again.stop());
    t.equal(
      (await request(`${again.url}/tg/http://www.example.org/slow`)).status,
      302,
      'after kill -9 a new daemon takes the folder and serves what was stored',
    );
  },
);

t.test('files: the data folder, the WARC files, the index and the lock are the owner’s only (0700 folders, 0600 files)', async (t) => {
  const { dir, dataDir } = writeConfig();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const a = await startArchive(undefined, { dataDir });
  t.teardown(() => a.close());
  t.equal((await putCapture(a, '', captureRecord({ requestHeaders: [['X-Client-IP', '192.0.2.7']] }))).status, 201);
  const mode = (p: string) => (statSync(p).mode & 0o777).toString(8);
  for (const d of ['', 'warcs', 'warcs/2025', 'tmp']) t.equal(mode(path.join(dataDir, d)), '700', `${d || 'data_dir'}/ is 0700`);
  const warcs = readdirSync(path.join(dataDir, 'warcs', '2025'));
  t.ok(warcs.length > 0);
  for (const f of warcs) t.equal(mode(path.join(dataDir, 'warcs', '2025', f)), '600', `${f} is 0600`);
  for (const f of readdirSync(dataDir).filter((f) => statSync(path.join(dataDir, f)).isFile())) t.equal(mode(path.join(dataDir, f)), '600', `${f} is 0600`);
  t.ok(existsSync(path.join(dataDir, 'index.sqlite3')) && existsSync(path.join(dataDir, 'data.lock')), 'the index and the lock are among them');
});

t.test(
  'a PUT never replaces a stored memento: a different capture of the URI-R in the same second is 409 naming the stored URI-M, and nothing is written',
  async (t) => {
    const a = await startArchive();
    t.teardown(() => a.close());
    const date = 'Tue, 20 Mar 2001 20:35:00 GMT';
    const uriM = `${a.url}/2025/memento/${ts14(date)}/http://www.example.org/page`;
    const first = await putCapture(a, '', captureRecord({ target: '/page', date, body: 'the stored page' }));
    t.equal(first.status, 201);
    t.equal(first.headers.location, uriM);
    const recordsBefore = (await warcRecords(a.dataDir, '2025')).length;
    // The same second by the response's Date, and by a Memento-Datetime on the PUT (the response's own Date another one).
    for (const [how, record, headers] of [
      ['same Date', captureRecord({ target: '/page', date, body: 'a planted page' }), {}],
      ['Memento-Datetime', captureRecord({ target: '/page', date: 'Wed, 21 Mar 2001 08:00:00 GMT', body: 'a planted page' }), { 'memento-datetime': date }],
      ['another status', captureRecord({ target: '/page', date, status: 404, reason: 'Not Found', body: 'the stored page' }), {}],
    ] as const) {
      const res = await putCapture(a, '', record, { headers });
      t.equal(res.status, 409, `${how}: 409 Conflict`);
      t.equal(
        res.text,
        `conflict: a different capture of this URI-R is stored at the same second, ${uriM}; nothing stored\n`,
        `${how}: one line naming the stored URI-M`,
      );
      t.equal(res.headers.location, undefined, `${how}: no Location`);
    }
    t.equal(
      (await request(`${uriM.replace('/memento/' + ts14(date), '/memento/' + ts14(date) + 'id_')}`)).text,
      'the stored page',
      'the URI-M still serves the stored body',
    );
    t.equal(await a.store.index.count(), 1, 'one index row');
    t.equal((await warcRecords(a.dataDir, '2025')).length, recordsBefore, 'no WARC record was written');
    const timemap = await request(`${a.url}/2025/timemap/link/http://www.example.org/page`);
    t.equal(timemap.text.match(/rel="[^"]*memento[^"]*"/g)?.length, 1, 'the TimeMap lists one memento');
    const same = await putCapture(a, '', captureRecord({ target: '/page', date, body: 'the stored page' }));
    t.equal(same.status, 200, 'the identical capture is a duplicate, as before');
    t.equal(same.headers.location, uriM);
    const next = await putCapture(a, '', captureRecord({ target: '/page', date: 'Tue, 20 Mar 2001 20:35:01 GMT', body: 'a planted page' }));
    t.equal(next.status, 201, 'the next second is a new memento');
    t.match((await request(`${a.url}/metrics`)).text, /^memento_archive_captures_total\{result="conflict"\} 3$/m, 'counted as conflicts');
  },
);

t.test('two different captures of one URI-R and second arriving together: exactly one is stored, the others are 409', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const date = 'Tue, 20 Mar 2001 20:35:00 GMT';
  const bodies = Array.from({ length: 8 }, (_, i) => `version ${i}`);
  const answers = await Promise.all(bodies.map((body) => putCapture(a, '', captureRecord({ target: '/race', date, body }))));
  const stored = answers.filter((r) => r.status === 201);
  t.equal(stored.length, 1, 'one 201');
  t.equal(answers.filter((r) => r.status === 409).length, bodies.length - 1, 'the rest 409');
  const winner = bodies[answers.findIndex((r) => r.status === 201)];
  for (const r of answers.filter((r) => r.status === 409)) t.match(r.text, stored[0].headers.location!, '409 names the stored URI-M');
  t.equal(await a.store.index.count(), 1, 'one index row');
  const responses = (await warcRecords(a.dataDir, '2025')).filter((r) => r.type === 'response');
  t.equal(responses.length, 1, 'one response record in the WARC files');
  t.match(responses[0].block.toString('latin1'), new RegExp(`\\r\\n\\r\\n${winner}$`), 'the stored record is the 201 one');
  t.equal((await request(`${a.url}/2025/memento/${ts14(date)}id_/http://www.example.org/race`)).text, winner, 'and the URI-M serves it');
});

t.test('in one write batch out of time order (S, S+1, S): the second capture at S is still a conflict', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const at = (date: string, body: string) => Readable.from([captureRecord({ target: '/batch', date, body })]);
  const batches = a.store.stats.batches;
  const [first, later, again] = await Promise.all([
    a.store.ingest(at('Tue, 20 Mar 2001 20:35:00 GMT', 'one'), new Date()),
    a.store.ingest(at('Tue, 20 Mar 2001 20:35:01 GMT', 'two'), new Date()),
    a.store.ingest(at('Tue, 20 Mar 2001 20:35:00 GMT', 'three'), new Date()),
  ]);
  t.equal(a.store.stats.batches, batches + 1, 'the three were one batch');
  t.match([first, later, again], [{ created: true }, { created: true }, { created: false, conflict: true }]);
  t.equal(again.row, first.row, 'the conflict names the memento of that second');
  t.equal(await a.store.index.count(), 2);
  t.equal((await request(`${a.url}/2025/memento/20010320203500id_/http://www.example.org/batch`)).text, 'one', 'the first stays');
});

t.test('write access: a listen address beyond loopback without put_tokens or a put_allow of its own is refused at start (file:line, exit 2)', async (t) => {
  const load = (yaml: string) => {
    try {
      const c = validateArchiveConfig(parseYamlText(`data_dir: /tmp/x\n${yaml}${TWO_ARCHIVES}`, '/etc/archive.yaml'));
      return `accepted: put_allow ${c.putAllow.join(' ')}; ${c.putTokens.length} tokens`;
    } catch (err) {
      return (err as Error).message;
    }
  };
  const refusal = (listen: string) =>
    `/etc/archive.yaml:2: listen ${listen} is not a loopback address, so the archive can be reached from other machines, but who may PUT captures is not set: add put_tokens (a bearer token the capture proxy sends as its ArchiveToken), or write put_allow explicitly (e.g. put_allow: [127.0.0.0/8, ::1/128] to keep writes to this host)`;
  for (const [listen, shown] of [
    ['0.0.0.0:8090', '0.0.0.0:8090'],
    ['"[::]:8090"', '[::]:8090'],
    ['192.168.1.10:8090', '192.168.1.10:8090'],
    ['"[fd00::1]:8090"', '[fd00::1]:8090'],
    ['archive.example.org:8090', 'archive.example.org:8090'],
  ] as const) {
    t.equal(load(`listen: ${listen}\n`), refusal(shown), `listen ${listen}: refused`);
  }
  for (const listen of ['127.0.0.1:8090', '127.0.0.2:8090', '"[::1]:8090"', 'localhost:8090', '8090']) {
    t.equal(load(`listen: ${listen}\n`), 'accepted: put_allow 127.0.0.0/8 ::1/128; 0 tokens', `listen ${listen} (loopback): the default put_allow, no token`);
  }
  t.equal(load(''), 'accepted: put_allow 127.0.0.0/8 ::1/128; 0 tokens', 'no listen: the default, loopback');
  t.equal(
    load('listen: 0.0.0.0:8090\nput_tokens: [k3yForTheProxy-0123456789abcdef]\n'),
    'accepted: put_allow 127.0.0.0/8 ::1/128; 1 tokens',
    'with put_tokens',
  );
  t.equal(load('listen: 0.0.0.0:8090\nput_allow: [127.0.0.0/8, ::1/128]\n'), 'accepted: put_allow 127.0.0.0/8 ::1/128; 0 tokens', 'with put_allow written');
  t.equal(load('listen: 0.0.0.0:8090\nput_allow: 10.1.0.0/16\n'), 'accepted: put_allow 10.1.0.0/16; 0 tokens', 'with a put_allow of its own');

  // The daemon itself: exit 2 before it listens (192.0.2.1, TEST-NET-1, is on no interface here: nothing is bound, nothing sent).
  const { dir, config } = writeConfig();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(config, readFileSync(config, 'utf8').replace(/^listen: .*$/m, 'listen: 192.0.2.1:8090'));
  // (A kill after 2 minutes only in case it listens after all: exit code null then.)
  const r = await runCli(['serve', '--config', config], 120_000);
  t.equal(r.code, 2, 'serve exits 2');
  t.equal(r.stderr, `memento-archive: ${refusal('192.0.2.1:8090').replace('/etc/archive.yaml:2', `${config}:1`)}\n`, 'saying why, at the listen line');
});

t.test('write access: a config file that holds put_tokens must not be readable by every user', async (t) => {
  const { dir, config } = writeConfig('put_tokens: [k3yForTheProxy-0123456789abcdef]\n');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  chmodSync(config, 0o644);
  t.throws(() => loadArchiveConfig(config), {
    message: `${config}:8: put_tokens is a secret, but every user can read this file (mode 0644); run: chmod o-r ${config}`,
  });
  const r = await runCli(['verify', '--config', config]);
  t.equal(r.code, 2, 'the daemon and its commands exit 2');
  t.equal(r.stderr, `memento-archive: ${config}:8: put_tokens is a secret, but every user can read this file (mode 0644); run: chmod o-r ${config}\n`);
  chmodSync(config, 0o640);
  t.same(loadArchiveConfig(config).putTokens, ['k3yForTheProxy-0123456789abcdef'], '0640: read');
  const plain = writeConfig();
  t.teardown(() => rmSync(plain.dir, { recursive: true, force: true }));
  chmodSync(plain.config, 0o644);
  t.same(loadArchiveConfig(plain.config).putTokens, [], 'without put_tokens a world-readable file is fine');
});
