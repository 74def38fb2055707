/**
 * `reindex` never publishes a capture that is not in the evidence log: a
 * record pair written but never committed (a daemon killed between its
 * write and its commit) gets no row when the log already holds entries of
 * records written before it; `reindex` lists it and `verify` names it. On
 * PostgreSQL (where the rebuilt rows replace the database's and the log
 * stays in the database) and on SQLite, through the CLI as an operator runs them.
 */
import { createHash } from 'node:crypto';
import { appendFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import sqlite3 from 'sqlite3';
import t, { type Test } from 'tap';
import { encodePair } from '../../../archive/store/warcs/warc-writer.js';
import { captureRecord, putCapture, startArchive, TWO_ARCHIVES } from '../../helpers/archive.js';
import { startPostgres } from '../../helpers/postgres.js';
import { runCli } from '../helpers.js';

const SITE = 'http://www.example.org';
const sha = (...b: Buffer[]) => 'sha256:' + createHash('sha256').update(Buffer.concat(b)).digest('hex');

/** Appends to the newest WARC file of archive `current` a response/request pair of `/orphan.html` that no index row or log entry names. */
function writeOrphan(dataDir: string): void {
  const dir = path.join(dataDir, 'warcs', 'current');
  const file = path.join(dir, readdirSync(dir).sort().at(-1)!);
  const body = Buffer.from('<p>never acknowledged</p>');
  const responseHead = Buffer.from(`HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: ${body.length}\r\n\r\n`);
  const e = encodePair(
    {
      uriR: `${SITE}/orphan.html`,
      datetime: new Date('2026-01-09T09:00:00Z'),
      requestHead: Buffer.from('GET /orphan.html HTTP/1.1\r\nHost: www.example.org\r\n\r\n'),
      responseHead,
      body: async function* () {},
      bodyBuffer: body,
      payloadDigest: sha(body),
      blockDigest: sha(responseHead, body),
      via: 'put',
    },
    6,
  );
  appendFileSync(file, Buffer.concat([e.response, e.request]));
}

/** Captures two pages into an archive on `storage` (YAML, may be empty), stops it, and writes the orphan. */
async function prepare(t: Test, storage: string): Promise<{ dataDir: string; config: string }> {
  const a = await startArchive(storage + TWO_ARCHIVES);
  t.teardown(() => rmSync(a.dataDir, { recursive: true, force: true }));
  for (const [p, d] of [
    ['/a.html', 'Mon, 05 Jan 2026 09:00:00 GMT'],
    ['/b.html', 'Tue, 06 Jan 2026 09:00:00 GMT'],
  ])
    t.equal((await putCapture(a, SITE + p, captureRecord({ target: p, date: d, body: p }))).status, 201);
  await a.close(true);
  writeOrphan(a.dataDir);
  const config = path.join(a.dataDir, 'archive.yaml');
  writeFileSync(config, `listen: 127.0.0.1:0\ndata_dir: ${JSON.stringify(a.dataDir)}\n${storage}${TWO_ARCHIVES}`, { mode: 0o600 });
  return { dataDir: a.dataDir, config };
}

/** What the CLI says of the orphan after `reindex`, and verify's verdict. */
async function reindexAndVerify(t: Test, config: string): Promise<void> {
  const r = await runCli(['reindex', '--config', config]);
  t.equal(r.code, 0, `reindex: ${r.stderr}`);
  t.match(
    r.stdout,
    /^skipped: current\/\S+:\d+: response record of http:\/\/www\.example\.org\/orphan\.html at 20260109090000 has no entry in the evidence log, though records written before it have theirs .*not published/m,
  );
  t.match(r.stdout, /reindex: 2 mementos .*1 record\(s\) without an evidence log entry left out/);
  const v = await runCli(['verify', '--config', config]);
  t.equal(v.code, 1, 'verify fails');
  t.match(v.stdout, /problem: current\/\S+: response record of http:\/\/www\.example\.org\/orphan\.html at 2026-01-09T09:00:00Z has no index row/);
}

t.test('PostgreSQL: reindex makes no row for a capture that has no log entry', async (t) => {
  const server = await startPostgres();
  t.teardown(() => server.stop());
  const db = await server.database('unlogged');
  const { config } = await prepare(t, `storage:\n  index: ${db}\n`);
  await reindexAndVerify(t, config);
  const client = new pg.Client({ connectionString: db });
  await client.connect();
  t.teardown(() => client.end());
  const rows = (
    await client.query<{ uri_r: string; logged: boolean }>(
      `SELECT m.uri_r, EXISTS (SELECT 1 FROM log_leaf l WHERE l.archive_id = m.archive_id AND l.urlkey = m.urlkey AND l.datetime = m.datetime) AS logged
     FROM memento m ORDER BY m.uri_r`,
    )
  ).rows;
  t.same(
    rows,
    [
      { uri_r: `${SITE}/a.html`, logged: true },
      { uri_r: `${SITE}/b.html`, logged: true },
    ],
    'the two acknowledged captures, each with its entry; no row for the orphan',
  );
});

t.test('SQLite: the same', async (t) => {
  const { dataDir, config } = await prepare(t, '');
  await reindexAndVerify(t, config);
  const db = new sqlite3.Database(path.join(dataDir, 'index.sqlite3'));
  const rows = await new Promise<unknown[]>((resolve, reject) =>
    db.all('SELECT uri_r FROM memento ORDER BY uri_r', (err, r) => (err ? reject(err) : resolve(r))),
  );
  await new Promise<void>((r) => db.close(() => r()));
  t.same(rows, [{ uri_r: `${SITE}/a.html` }, { uri_r: `${SITE}/b.html` }]);
});
