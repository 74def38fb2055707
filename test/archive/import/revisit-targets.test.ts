/**
 * What a WARC revisit record may resolve to when imported (docs/threat-model.md
 * "Who may write", docs/operations.md "Data in and out"): only a memento the
 * access rules show (and its payload), and never as a full copy of another
 * URL's body. A revisit of `copy.html` naming an excluded capture of
 * `secret.html` (or one hidden by date, of its own URL) is skipped, with
 * a line saying so, and nothing of the secret is stored under the copy;
 * one naming a visible capture of another URL is stored as a revisit of
 * it, which `purge` of that URL erases with it. With the daemon running
 * and without; and the PUT header the daemon is told with
 * (`Archive-Revisit-Of`) checked on its own.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import t, { type Test } from 'tap';
import { captureRecord, putCapture, request, startArchive, TWO_ARCHIVES } from '../../helpers/archive.js';
import { startDaemon } from '../../helpers/daemons.js';
import { recordId, warcFile, warcRecord } from '../../helpers/warc.js';
import { runCli, writeConfig } from '../helpers.js';

const SITE = 'http://public.example';
const ACCESS = `access:
  - url: ${SITE}/secret.html
    action: exclude
  - url: ${SITE}/page.html
    action: exclude
    before: 2026-01-02T00:00:00Z
`;
const SECRET = '<html><body>the secret: taken down</body></html>';
const SHARED = '<html><body>a page shown under two addresses</body></html>';
const JAN1 = 'Thu, 01 Jan 2026 10:00:00 GMT';
const sha256 = (b: string) => 'sha256:' + createHash('sha256').update(b).digest('hex');

/** A WARC revisit record (identical-payload-digest) of `uri` at `date` naming `refersTo` at `refDate` and the payload `payload`'s digest. */
function revisit(uri: string, date: string, refersTo: string, refDate: string, payload: string): Buffer {
  return warcRecord(
    [
      ['WARC-Type', 'revisit'],
      ['WARC-Record-ID', recordId()],
      ['WARC-Date', date],
      ['WARC-Target-URI', uri],
      ['WARC-Profile', 'http://netpreserve.org/warc/1.1/revisit/identical-payload-digest'],
      ['WARC-Refers-To-Target-URI', refersTo],
      ['WARC-Refers-To-Date', refDate],
      ['WARC-Payload-Digest', sha256(payload)],
      ['Content-Type', 'application/http; msgtype=response'],
    ],
    'HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n',
  );
}

/** The hostile and the honest revisit records, in one WARC file. */
function importFile(dir: string): string {
  const file = path.join(dir, 'revisits.warc.gz');
  const records = [
    revisit(`${SITE}/copy.html`, '2026-02-01T00:00:00Z', `${SITE}/secret.html`, '2026-01-01T10:00:00Z', SECRET),
    revisit(`${SITE}/page.html`, '2026-02-01T00:00:00Z', `${SITE}/page.html`, '2026-01-01T10:00:00Z', 'page one'),
    revisit(`${SITE}/copy2.html`, '2026-02-01T00:00:00Z', `${SITE}/shared.html`, '2026-01-01T10:00:00Z', SHARED),
  ];
  writeFileSync(file, warcFile(records, true));
  return file;
}

/** The text of every WARC record (gunzipped) of a data folder. */
function warcText(dataDir: string): string {
  const dir = path.join(dataDir, 'warcs', 'current');
  return readdirSync(dir)
    .map((f) => zlib.gunzipSync(readFileSync(path.join(dir, f))).toString('latin1'))
    .join('');
}

/** The captures in the archive before the import: the secret, the page of 1 January (hidden by date), the shared page. */
async function fill(t: Test, a: { url: string }): Promise<void> {
  for (const [p, body] of [
    ['/secret.html', SECRET],
    ['/page.html', 'page one'],
    ['/shared.html', SHARED],
  ])
    t.equal((await putCapture(a, '', captureRecord({ host: 'public.example', target: p, date: JAN1, body }))).status, 201, `PUT ${p}`);
}

/** What the import and a later purge of shared.html must leave: checked on the data folder of config `c`, the daemon stopped. */
async function checkAfter(t: Test, c: { config: string; dataDir: string }, out: string): Promise<void> {
  t.match(out, /: 0 new mementos, 1 revisit memento, 0 duplicates, 1 revisit record resolved, 2 revisit records unresolved \(skipped\)/, out);
  t.match(
    out,
    /^unresolved: \S+ http:\/\/public\.example\/copy\.html: revisit of http:\/\/public\.example\/secret\.html, which is a memento the access rules hide; skipped$/m,
  );
  t.match(
    out,
    /^unresolved: \S+ http:\/\/public\.example\/page\.html: revisit of http:\/\/public\.example\/page\.html, which is a memento the access rules hide; skipped$/m,
  );
  t.equal(warcText(c.dataDir).split('the secret: taken down').length - 1, 1, 'the secret body is stored once: its own capture');

  const a = await startArchive(TWO_ARCHIVES + ACCESS, { dataDir: c.dataDir });
  try {
    t.equal((await request(`${a.url}/current/timemap/link/${SITE}/copy.html`)).status, 404, 'no memento of copy.html');
    t.equal((await request(`${a.url}/current/memento/20260201000000/${SITE}/page.html`)).status, 404, 'none of page.html on 1 February');
    const copy = await request(`${a.url}/current/memento/20260201000000id_/${SITE}/copy2.html`);
    t.equal(copy.status, 200);
    t.equal(copy.text, SHARED, 'copy2.html replays the shared page’s body');
    const record = await request(`${a.url}/current/record/20260201000000/${SITE}/copy2.html`);
    t.match(record.text, /^WARC-Type: revisit\r$/m, 'stored as a revisit record');
    t.match(record.text, /^WARC-Refers-To-Target-URI: http:\/\/public\.example\/shared\.html\r$/m, 'of the shared page');
  } finally {
    await a.close();
  }

  const p = await runCli(['purge', '--config', c.config, '--url', `${SITE}/shared.html`]);
  t.equal(p.code, 0, p.stdout + p.stderr);
  t.match(p.stdout, /^purge: erased 2 capture\(s\)/m, 'the purge of shared.html takes the revisit with it');
  const v = await runCli(['verify', '--config', c.config]);
  t.equal(v.code, 0, v.stdout);
  t.notOk(warcText(c.dataDir).includes('a page shown under two addresses'), 'the shared body is on disk nowhere');
  const b = await startArchive(TWO_ARCHIVES + ACCESS, { dataDir: c.dataDir });
  t.teardown(() => b.close());
  t.equal((await request(`${b.url}/current/timemap/link/${SITE}/copy2.html`)).status, 404, 'copy2.html is gone with it');
}

t.test(
  'import with the data folder locked: a hidden original resolves to nothing; a visible one of another URL becomes a revisit that purge takes',
  async (t) => {
    const c = writeConfig(ACCESS);
    t.teardown(() => rmSync(c.dir, { recursive: true, force: true }));
    const a = await startArchive(TWO_ARCHIVES + ACCESS, { dataDir: c.dataDir });
    await fill(t, a);
    await a.close();
    const r = await runCli(['import', '--config', c.config, importFile(c.dir)]);
    t.equal(r.code, 0, r.stdout + r.stderr);
    await checkAfter(t, c, r.stdout);
  },
);

t.test('import through the running daemon: the same', async (t) => {
  const c = writeConfig(ACCESS);
  t.teardown(() => rmSync(c.dir, { recursive: true, force: true }));
  const d = await startDaemon('memento-archive.js', ['serve', '--config', c.config, '--quiet']);
  let stopped = false;
  t.teardown(() => (stopped ? undefined : d.stop()));
  await fill(t, d);
  const r = await runCli(['import', '--config', c.config, '--daemon', d.url, importFile(c.dir)]);
  t.equal(r.code, 0, r.stdout + r.stderr);
  t.match(r.stdout, /through the running daemon/);
  await d.stop();
  stopped = true;
  await checkAfter(t, c, r.stdout);
});

t.test('a PUT with Archive-Revisit-Of: a hidden memento answers as one never stored; another payload is refused; a visible one makes a revisit', async (t) => {
  const a = await startArchive(TWO_ARCHIVES + ACCESS);
  t.teardown(() => a.close());
  await fill(t, a);
  const put = (of: string, body: string) =>
    request(`${a.url}/put/x`, {
      method: 'PUT',
      headers: { 'archive-revisit-of': of },
      body: captureRecord({ host: 'public.example', target: '/copy.html', date: 'Sun, 01 Feb 2026 00:00:00 GMT', body }),
    });
  const hidden = await put(`current 20260101100000 ${SITE}/secret.html`, SECRET);
  const never = await put(`current 20260101100000 ${SITE}/never.html`, SECRET);
  t.equal(hidden.status, 422, 'a hidden memento: 422');
  t.equal(hidden.text, never.text, 'the same answer as for a memento never stored');
  t.equal(hidden.text, "the PUT's Archive-Revisit-Of names no memento of this archive; nothing stored\n");
  t.equal((await put('current 2026 x', SHARED)).status, 400, 'not of the form: 400');
  const other = await put(`current 20260101100000 ${SITE}/shared.html`, 'another body');
  t.equal(other.status, 400, 'another payload: 400');
  t.match(other.text, /^the body is not the payload of the memento named as its original/);
  t.equal((await request(`${a.url}/current/timemap/link/${SITE}/copy.html`)).status, 404, 'none of them stored anything');
  const ok = await put(`current 20260101100000 ${SITE}/shared.html`, SHARED);
  t.equal(ok.status, 201);
  t.equal(ok.headers['archive-capture'], 'revisit', 'Archive-Capture: revisit (of another URI-R: nothing of its own URI-R stored before)');
  const record = await request(`${a.url}/current/record/20260201000000/${SITE}/copy.html`);
  t.match(record.text, /^WARC-Type: revisit\r$/m, 'a revisit record');
  t.match(record.text, /^WARC-Refers-To-Target-URI: http:\/\/public\.example\/shared\.html\r$/m);
});
