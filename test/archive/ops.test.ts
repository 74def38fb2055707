/**
 * The archive's operations endpoints: `GET /healthz` says whether the
 * storage takes captures and the index answers; `GET /metrics` counts
 * captures by result, ingest bytes, batches and fsyncs, requests by
 * resource and status, and index rows (Prometheus text). The daemon logs
 * like the proxy, and a port in use is one line, not a stack trace.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { captureRecord, putCapture, request, startArchive } from '../helpers/archive.js';
import { startDaemon } from '../helpers/daemons.js';
import { runCli, writeConfig } from './helpers.js';

/** Asks `ask()` until its answer passes `done` (at most 10 s); that answer. */
async function until<T>(ask: () => Promise<T>, done: (x: T) => boolean): Promise<T> {
  const end = performance.now() + 10_000;
  for (;;) {
    const x = await ask();
    if (done(x) || performance.now() > end) return x;
    await new Promise((r) => setImmediate(r));
  }
}

/** The value of a sample `name{labels}` in Prometheus text, or NaN. */
function sample(text: string, name: string, labels = ''): number {
  const line = text.split('\n').find((l) => l.startsWith(labels ? `${name}{${labels}}` : `${name} `));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : NaN;
}

t.test('GET /healthz: 200 "ok" and a line per check while the storage takes captures and the index answers; 503 naming the problem otherwise', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const ok = await request(`${a.url}/healthz`);
  t.equal(ok.status, 200);
  t.equal(ok.text, 'ok\nindex: ok\nwarcs: ok\nlog: ok\n');
  t.equal(ok.headers['cache-control'], 'no-store');
  // tmp/ is where captures arrive: make it impossible to write there.
  const tmp = path.join(a.dataDir, 'tmp');
  rmSync(tmp, { recursive: true, force: true });
  writeFileSync(tmp, 'not a folder');
  // The outcome is kept for a second: ask until it is the new one.
  const bad = await until(
    async () => request(`${a.url}/healthz`),
    (r) => r.status !== 200,
  );
  t.equal(bad.status, 503);
  t.match(bad.text, /^index: ok\nwarcs: cannot write in .*tmp: .*\nlog: ok\n$/);
  rmSync(tmp);
  mkdirSync(tmp);
  t.equal(
    (
      await until(
        async () => request(`${a.url}/healthz`),
        (r) => r.status === 200,
      )
    ).status,
    200,
    'healthy again',
  );
  t.equal((await request(`${a.url}/healthz`, { method: 'POST' })).status, 405, 'read-only');
});

t.test(
  'GET /metrics: captures stored, deduplicated and refused by status; ingest bytes; batches and fsync times; requests by resource; index rows',
  async (t) => {
    const a = await startArchive();
    t.teardown(() => a.close());
    const record = captureRecord({ target: '/m', body: 'metrics page' });
    t.equal((await putCapture(a, '', record)).status, 201);
    t.equal((await putCapture(a, '', record)).status, 200);
    t.equal((await putCapture(a, '', captureRecord({ method: 'POST' }))).status, 400);
    t.equal((await request(`${a.url}/tg/http://www.example.org/m`)).status, 302);
    t.equal((await request(`${a.url}/tg/http://www.example.org/none`)).status, 404);
    const res = await request(`${a.url}/metrics`);
    t.equal(res.status, 200);
    t.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    const m = res.text;
    t.equal(sample(m, 'memento_archive_captures_total', 'result="stored"'), 1, 'stored');
    t.equal(sample(m, 'memento_archive_captures_total', 'result="duplicate"'), 1, 'deduplicated');
    t.equal(sample(m, 'memento_archive_captures_total', 'result="refused"'), 1, 'refused');
    t.equal(sample(m, 'memento_archive_captures_refused_total', 'status="400"'), 1, 'refused by status');
    t.equal(sample(m, 'memento_archive_ingest_bytes_total'), 2 * record.length, 'bytes of the two captures taken');
    t.equal(sample(m, 'memento_archive_batch_captures_count'), 2, 'two batches');
    t.equal(sample(m, 'memento_archive_fsync_seconds_count'), 2, 'an fsync time per batch');
    t.equal(sample(m, 'memento_archive_requests_total', 'resource="redirector",status="302"'), 1);
    t.equal(sample(m, 'memento_archive_requests_total', 'resource="redirector",status="404"'), 1);
    t.equal(sample(m, 'memento_archive_requests_total', 'resource="put",status="201"'), 1);
    t.equal(sample(m, 'memento_archive_index_rows'), 1, 'one memento in the index');
    t.match(m, /^process_resident_memory_bytes \d+/m, 'process metrics too');
  },
);

t.test('GET /metrics: a PUT identical to the memento it follows is a duplicate (200); a POST to put/ is no route', async (t) => {
  const a = await startArchive();
  t.teardown(() => a.close());
  const record = captureRecord({ target: '/q', body: 'the same' });
  t.equal((await putCapture(a, '', record)).status, 201);
  t.equal((await putCapture(a, '', record)).status, 200);
  const r = await request(`${a.url}/put/`, { method: 'POST', body: 'x\n', headers: { 'content-type': 'text/plain' } });
  t.equal(r.status, 404, 'the former POST of questions is not answered');
  const m = (await request(`${a.url}/metrics`)).text;
  t.equal(sample(m, 'memento_archive_captures_total', 'result="stored"'), 1, 'one capture stored');
  t.equal(sample(m, 'memento_archive_captures_total', 'result="duplicate"'), 1, 'one duplicate');
  t.notMatch(m, 'memento_archive_questions_total', 'no questions metric');
  t.notMatch(m, 'result="unchanged"', 'no 412 result');
});

t.test('the daemon logs as the proxy does: JSON lines with level names and ISO times, one line per request, a line when it stops', async (t) => {
  const { dir, config } = writeConfig();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const d = await startDaemon('memento-archive.js', ['serve', '--config', config]);
  t.teardown(() => d.stop());
  t.equal((await request(`${d.url}/tg/http://www.example.org/nothing`)).status, 404);
  const exited = new Promise<number | null>((resolve) => d.proc.once('exit', (code) => resolve(code)));
  d.proc.kill('SIGTERM');
  t.equal(await exited, 0, 'SIGTERM: exit 0');
  const lines = d
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  const line = lines.find((l) => l.msg === 'request');
  t.ok(line, 'a request line');
  t.match(line, {
    level: 'info',
    msg: 'request',
    type: 'request',
    method: 'GET',
    target: '/tg/http://www.example.org/nothing',
    status: 404,
    client: '127.0.0.1',
  });
  t.match(String(line?.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, 'ISO 8601 time');
  t.equal(typeof line?.ms, 'number');
  t.ok(
    lines.some((l) => l.msg === 'stopped'),
    'a line when it stops',
  );
});

t.test('an address in use is one line on stderr and exit 1, not a stack trace', async (t) => {
  const first = writeConfig();
  t.teardown(() => rmSync(first.dir, { recursive: true, force: true }));
  const d = await startDaemon('memento-archive.js', ['serve', '--config', first.config]);
  t.teardown(() => d.stop());
  const port = new URL(d.url).port;
  const second = writeConfig();
  t.teardown(() => rmSync(second.dir, { recursive: true, force: true }));
  writeFileSync(second.config, readFileSync(second.config, 'utf8').replace('listen: 127.0.0.1:0', `listen: 127.0.0.1:${port}`));
  const r = await runCli(['serve', '--config', second.config], 20_000);
  t.equal(r.code, 1);
  t.match(r.stderr, new RegExp(`^memento-archive: cannot listen on 127\\.0\\.0\\.1:${port}: .*EADDRINUSE.*\\n$`));
});
