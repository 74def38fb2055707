/**
 * The archive's connection bound (archive/http/connections.ts): a crowd
 * of idle connections never stops the archive. Readers (peers outside
 * `put_allow`) hold at most `max_connections - put_reserved_connections`;
 * one more gets a 503 with `Retry-After` at once and is closed (counted
 * in /metrics), and the writers' PUTs still get in. The bound is kept
 * below the process's open-file limit (a daemon under `ulimit -n 512`
 * with 600 idle readers still takes captures), and an idle connection is
 * closed (408) once `headers_timeout` has passed, freeing its place.
 * Writers come from 127.0.0.2 (`put_allow: [127.0.0.2/32]`), readers
 * from 127.0.0.1.
 */
import { rmSync } from 'node:fs';
import t from 'tap';
import { captureRecord, putCapture, request, startArchive, TWO_ARCHIVES } from '../helpers/archive.js';
import { startDaemon } from '../helpers/daemons.js';
import { rawConnection, type RawConnection } from '../helpers/raw-connection.js';
import { writeConfig } from './helpers.js';
import { until } from '../helpers/until.js';

const WRITER = '127.0.0.2';

/** The value of a sample `name{labels}` in Prometheus text, or NaN. */
function sample(text: string, name: string, labels: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : NaN;
}

t.test('max_connections 8, 3 kept for writers: 5 idle readers fill their share; a 6th reader gets 503, a writer still PUTs', async (t) => {
  const a = await startArchive(`max_connections: 8\nput_reserved_connections: 3\nput_allow: [${WRITER}/32]\n${TWO_ARCHIVES}`);
  t.teardown(() => a.close());
  const metrics = async () => (await request(`${a.url}/metrics`, { localAddress: WRITER })).text;
  const idle: RawConnection[] = [];
  for (let i = 0; i < 5; i++) idle.push(await rawConnection(t, a.port, ''));
  await until(async () => sample(await metrics(), 'memento_archive_connections', 'peer="reader"') === 5, 10_000, 'five readers counted');

  const refused = await request(`${a.url}/healthz`);
  t.equal(refused.status, 503, "a reader's /healthz past the readers' share: 503");
  t.equal(refused.headers['retry-after'], '1');
  t.equal(refused.headers.connection, 'close');
  t.match(refused.text, /^the archive has 5 connections of readers open, all it takes beside those kept for its writers; try again in a moment\n$/);

  const put = await putCapture(a, 'http://www.example.org/in', captureRecord({ target: '/in', body: 'the writer gets in' }), { localAddress: WRITER });
  t.equal(put.status, 201, 'the PUT of a writer (put_allow) is stored');
  t.equal((await request(`${a.url}/healthz`, { localAddress: WRITER })).status, 200, "a writer's /healthz: 200");

  // The writers' share full too (accepted in the order they came): then everyone gets 503.
  for (let i = 0; i < 3; i++) idle.push(await rawConnection(t, a.port, '', WRITER));
  const full = await putCapture(a, 'http://www.example.org/full', captureRecord({ target: '/full' }), { localAddress: WRITER });
  t.equal(full.status, 503, 'all 8 taken: a writer gets 503 too');
  t.match(full.text, /the archive has 8 connections open, its max_connections/);

  for (const c of idle) c.socket.destroy();
  await until(async () => (await request(`${a.url}/healthz`)).status === 200, 10_000, "a reader's /healthz is 200 once the idle ones left");
  const m = await metrics();
  t.ok(sample(m, 'memento_archive_connections_refused_total', 'share="readers"') >= 1, 'refused readers counted');
  t.ok(sample(m, 'memento_archive_connections_refused_total', 'share="all"') >= 1, 'refused past the bound counted');
});

t.test('an idle connection is closed with 408 once headers_timeout has passed, and its place is free again', async (t) => {
  const a = await startArchive(`max_connections: 4\nput_reserved_connections: 1\nput_allow: [${WRITER}/32]\nheaders_timeout: 1\n${TWO_ARCHIVES}`);
  t.teardown(() => a.close());
  const idle = await Promise.all([0, 1, 2].map(() => rawConnection(t, a.port, '')));
  t.equal((await request(`${a.url}/healthz`)).status, 503, 'the readers’ share is full');
  await Promise.all(idle.map((c) => c.closed));
  for (const c of idle) t.match(c.received(), /^HTTP\/1\.1 408 Request Timeout\r\n/, 'each idle connection got 408 and was closed');
  t.equal((await request(`${a.url}/healthz`)).status, 200, 'then a reader gets in');
});

t.test('put_reserved_connections must be less than max_connections', async (t) => {
  await t.rejects(startArchive(`max_connections: 8\nput_reserved_connections: 8\n${TWO_ARCHIVES}`), {
    message: /put_reserved_connections \(8\) must be less than max_connections \(8\), or no reader gets in/,
  });
});

t.test('a daemon under ulimit -n 512 with 600 idle readers: readers past the bound get 503, the writer PUTs, /healthz answers', async (t) => {
  const { dir, config } = writeConfig(`put_allow: [${WRITER}/32]\n`);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const d = await startDaemon('memento-archive.js', ['serve', '--config', config], { openFiles: 512 });
  t.teardown(() => d.stop());
  const port = Number(new URL(d.url).port);
  const idle: RawConnection[] = [];
  for (let i = 0; i < 600; i++) idle.push(await rawConnection(t, port, ''));
  const refused = await request(`${d.url}/healthz`);
  t.equal(refused.status, 503, "a reader's /healthz: 503, at once");
  const put = await putCapture(d, 'http://www.example.org/busy', captureRecord({ target: '/busy', body: 'stored among 600 idle readers' }), {
    localAddress: WRITER,
  });
  t.equal(put.status, 201, "the writer's PUT is stored");
  t.equal((await request(`${d.url}/healthz`, { localAddress: WRITER })).status, 200, "the writer's /healthz: 200");
  const m = (await request(`${d.url}/metrics`, { localAddress: WRITER })).text;
  t.equal(
    sample(m, 'memento_archive_connections', 'peer="reader"'),
    512 - 256 - 128,
    'readers held: the bound (the file limit less 256) less the writers’ share',
  );
  t.ok(sample(m, 'memento_archive_connections_refused_total', 'share="readers"') >= 600 - 128, 'the others refused and counted');
  t.match(d.output(), /max_connections lowered to 256: the open-file limit leaves no more/, 'the daemon said it lowered the bound');
  for (const c of idle) c.socket.destroy();
});
