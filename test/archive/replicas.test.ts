/**
 * Several archive daemons (replicas) on one PostgreSQL database and one
 * S3-compatible bucket (docs/scale-out.md "Replicas"): each started through
 * its bin as a user runs it (its own process, so that `kill -9` is real),
 * on a throwaway PostgreSQL (test/helpers/postgres.ts) and s3rver
 * (test/helpers/s3.ts), all on 127.0.0.1. A capture acknowledged by one is
 * read from the other within a second, survives the `kill -9` of the one
 * that took it and the loss of its data folder; the TimeMaps are the same
 * bytes from either; a same-second capture of another replica's URI-M is a
 * 409 (or the duplicate's 200), never a replacement. Replicas given
 * different signing keys: one signs, the other is unhealthy and serves no
 * head, a later one does not start. Without the PostgreSQL server
 * binaries this test fails, saying what to install.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import pg from 'pg';
import t, { type Test } from 'tap';
import { validateArchiveConfig } from '../../archive/config.js';
import { parseYamlText } from '#shared/config.js';
import { PgIndex } from '../../archive/store/index/index-pg.js';
import { verify } from '../../archive/store/upkeep/maintenance.js';
import { S3WarcStore } from '../../archive/store/warcs/s3-warcs.js';
import { captureRecord, putCapture, request, startArchive, type TestArchive, TWO_ARCHIVES } from '../helpers/archive.js';
import { type Daemon, startDaemon } from '../helpers/daemons.js';
import { startPostgres, type ThrowawayPostgres } from '../helpers/postgres.js';
import { startS3 } from '../helpers/s3.js';
import { runCli, writeConfig } from './helpers.js';

/** The load balancer's address, every replica's `base_url`. */
const BASE = 'http://archive.example';
const JAN5 = 'Mon, 05 Jan 2026 10:00:00 GMT';

let postgres: ThrowawayPostgres;
try {
  postgres = await startPostgres();
} catch (err) {
  t.fail((err as Error).message);
  process.exit(1);
}
t.teardown(() => postgres.stop());
const s3 = await startS3();
t.teardown(() => s3.close());

let databases = 0;

/**
 * The signing key every replica on database `db` is given (the evidence log of an archive has one key, whichever replica
 * signs), a key per database: beside it the last published checkpoint of the log (docs/evidence.md "The anchor"), which a
 * fresh database's log does not hold.
 */
const keyDir = mkdtempSync(path.join(os.tmpdir(), 'replicas-key-'));
t.teardown(() => rmSync(keyDir, { recursive: true, force: true }));
const sharedKey = (db: string) => `signing_key_file: ${JSON.stringify(path.join(keyDir, db.replace(/\W+/g, '_'), 'log-signing-key.pem'))}\n`;

/** A replica's config (its own temp folder and `data_dir`) on database `db`, WARCs under `s3://warcs/<prefix>` as `name`. */
function replicaConfig(t: Test, db: string, prefix: string, name: string, storage = s3.storageYaml(prefix, name)) {
  const c = writeConfig(`base_url: ${BASE}\n${sharedKey(db)}${storage}  index: ${db}\n`);
  t.teardown(() => rmSync(c.dir, { recursive: true, force: true }));
  return c;
}

/** Starts the daemon of `config` through bin/memento-archive.js; stopped (SIGTERM) at the end of `t` unless it is gone. */
async function serve(t: Test, config: string): Promise<Daemon> {
  const d = await startDaemon('memento-archive.js', ['--config', config, '--quiet']);
  t.teardown(() => d.stop());
  return d;
}

/** Two replicas `a` and `b` on a new database and prefix. */
async function twoReplicas(t: Test) {
  const db = await postgres.database(`replicas_${databases++}`);
  const prefix = `p${databases}/`;
  const ca = replicaConfig(t, db, prefix, 'a');
  const cb = replicaConfig(t, db, prefix, 'b');
  const [a, b] = await Promise.all([serve(t, ca.config), serve(t, cb.config)]);
  return { db, prefix, a, b, ca, cb };
}

/** `uri` (a URI-M, TimeGate … under {@link BASE}) at the daemon `d` instead. */
const at = (d: { url: string }, uri: string) => d.url + uri.slice(BASE.length);
/** The raw (`id_`) form of a URI-M. */
const raw = (uriM: string) => uriM.replace(/\/memento\/(\d{14})\//, '/memento/$1id_/');

/** A capture record of `uriR` (on host replicas.example) at `date` with `body` as application/octet-stream. */
function capture(path: string, body: Buffer | string, date = JAN5): Buffer {
  return captureRecord({ target: path, host: 'replicas.example', date, body, responseHeaders: [['Content-Type', 'application/octet-stream']] });
}

/**
 * Whether `d` answers the TimeGate of `uriR` with a 302 to `uriM` and that
 * Memento (raw) with 200 and `body`, polled until `ms` after the call;
 * what it last answered otherwise.
 */
async function readableWithin(d: Daemon, uriR: string, uriM: string, body: Buffer, ms: number): Promise<{ ok: boolean; took: number; last: string }> {
  const start = performance.now();
  for (;;) {
    let last: string;
    const gate = await request(`${d.url}/current/timegate/${uriR}`);
    if (gate.status === 302 && gate.headers.location === uriM) {
      const m = await request(at(d, raw(uriM)));
      if (m.status === 200 && m.body.equals(body)) return { ok: true, took: performance.now() - start, last: '' };
      last = `Memento ${m.status}, ${m.body.length} bytes`;
    } else last = `TimeGate ${gate.status} ${String(gate.headers.location)}`;
    if (performance.now() - start > ms) return { ok: false, took: performance.now() - start, last };
    await new Promise((r) => setImmediate(r));
  }
}

t.test('a capture PUT to either replica is read from the other within 1 s: TimeGate 302, Memento 200 with its bytes', async (t) => {
  const { a, b } = await twoReplicas(t);
  for (let i = 0; i < 10; i++) {
    const [to, from] = i % 2 ? [b, a] : [a, b];
    const uriR = `http://replicas.example/rw/${i}`;
    const body = randomBytes(500 + i * 300);
    const put = await putCapture(to, uriR, capture(`/rw/${i}`, body));
    t.equal(put.status, 201, `${uriR}: stored by ${i % 2 ? 'b' : 'a'}`);
    const uriM = String(put.headers.location);
    t.equal(uriM, `${BASE}/current/memento/20260105100000/${uriR}`, 'the URI-M is under the shared base_url');
    const r = await readableWithin(from, uriR, uriM, body, 1000);
    t.ok(r.ok, `${uriR}: read from ${i % 2 ? 'a' : 'b'} after ${r.took.toFixed(0)} ms${r.ok ? '' : `; last: ${r.last}`}`);
  }
});

t.test('kill -9 of a replica under 250 concurrent PUTs loses no acknowledged capture; nor does deleting its data folder', async (t) => {
  const { db, a, b, ca, cb } = await twoReplicas(t);
  const acked = new Map<string, { uriM: string; body: Buffer }>();
  let killed = false;
  let seq = 0;
  let inFlight = 0;
  let inFlightAtKill = 0;
  const dead = new Promise<void>((resolve) => a.proc.once('exit', () => resolve()));
  const client = async () => {
    while (!killed) {
      const n = seq++;
      // One in 20 larger than 256 KiB: streamed into an object of its own (a multipart upload).
      const body = randomBytes(n % 20 === 7 ? 300_000 : 200 + ((n * 7919) % 8000));
      const uriR = `http://replicas.example/load/${n}`;
      inFlight++;
      try {
        const r = await putCapture(a, uriR, capture(`/load/${n}`, body));
        if (r.status === 201) {
          acked.set(uriR, { uriM: String(r.headers.location), body });
          if (acked.size >= 400 && !killed) {
            killed = true;
            inFlightAtKill = inFlight - 1;
            a.proc.kill('SIGKILL');
          }
        } else if (!killed) t.fail(`PUT ${uriR}: ${r.status} ${r.text}`);
      } catch {
        // the replica was killed under this PUT: not acknowledged, nothing promised
      } finally {
        inFlight--;
      }
    }
  };
  await Promise.all(Array.from({ length: 250 }, client));
  await dead;
  t.ok(inFlightAtKill >= 200, `${inFlightAtKill} PUTs were in flight when a was killed`);

  /** Every acknowledged capture read (raw URI-M) from `d`: the URI-Rs that were not byte-identical. */
  const missing = async (d: Daemon) => {
    const bad: string[] = [];
    const all = [...acked];
    for (let i = 0; i < all.length; i += 50)
      await Promise.all(
        all.slice(i, i + 50).map(async ([uriR, c]) => {
          const r = await request(at(d, raw(c.uriM)));
          if (r.status !== 200 || !r.body.equals(c.body)) bad.push(`${uriR} ${r.status}`);
        }),
      );
    return bad;
  };
  t.same(await missing(b), [], `all ${acked.size} captures a acknowledged are read from b, byte-identical, while a is down`);

  // a's own disk is lost: it starts again on an empty data folder.
  rmSync(ca.dataDir, { recursive: true, force: true });
  const a2 = await serve(t, ca.config);
  t.same(await missing(a2), [], 'restarted on an empty data folder, a reads them all');
  t.same(await missing(b), [], 'and b still does');
  const after = await putCapture(a2, 'http://replicas.example/after', capture('/after', 'after the restart'));
  t.equal(after.status, 201, 'a takes captures again');
  t.ok((await readableWithin(b, 'http://replicas.example/after', String(after.headers.location), Buffer.from('after the restart'), 1000)).ok, 'read from b');

  // The index and the bucket agree; the batch a was writing when killed is at most an orphan.
  await Promise.all([a2.stop(), b.stop()]);
  const index = await PgIndex.open(db);
  const store = new S3WarcStore(validateArchiveConfig(parseYamlText(readFileSync(cb.config, 'utf8'), cb.config)).warcStore!);
  const v = await verify(index, store);
  const named = new Set((await index.files()).map((f) => f.warc_file));
  await index.close();
  await store.close();
  // s3rver, unlike S3, lists an object whose PutObject the kill cut short, with the bytes it got (verify finds its
  // record partial); no row names such an object. A problem in an object a row names would be a lost capture.
  const problems = v.problems.filter((p) => named.has(p.slice(0, p.indexOf(':'))));
  t.same(problems, [], `verify: ${v.rows} rows, ${v.records} records, ${v.orphans.length} orphan(s); no problem in an object an index row names`);
  // More rows than acknowledged captures: a batch committed just before the kill, never answered (its senders would retry: duplicates).
  t.ok(v.rows >= acked.size + 1, `${v.rows} index rows for ${acked.size + 1} acknowledged captures`);
});

t.test('the link and JSON TimeMaps of several URLs are the same bytes from both replicas', async (t) => {
  const { a, b } = await twoReplicas(t);
  const days = ['Mon, 05 Jan 2026 10:00:00 GMT', 'Tue, 06 Jan 2026 10:00:00 GMT', 'Wed, 07 Jan 2026 10:00:00 GMT', 'Thu, 08 Jan 2026 10:00:00 GMT'];
  const urls = ['/tm/one', '/tm/two?x=1', '/tm/three/'];
  let i = 0;
  for (const u of urls)
    for (const d of days) {
      const to = i++ % 2 ? b : a;
      t.equal((await putCapture(to, `http://replicas.example${u}`, capture(u, `${u} on ${d}`, d))).status, 201);
    }
  for (const u of urls)
    for (const form of ['link', 'json']) {
      const [fromA, fromB] = await Promise.all([a, b].map((d) => request(`${d.url}/current/timemap/${form}/http://replicas.example${u}`)));
      t.equal(fromA.status, 200);
      t.equal(fromB.status, 200);
      t.ok(fromA.body.equals(fromB.body), `${form} TimeMap of ${u}: the same ${fromA.body.length} bytes from a and b`);
      for (const d of days) t.match(fromA.text, new Date(d).toISOString().replace(/\D/g, '').slice(0, 14), `lists ${d}`);
    }
});

t.test('a same-second capture of a URI-R another replica stored: 409 (200 when identical), the first stays; dedup sees the other replica', async (t) => {
  const { a, b } = await twoReplicas(t);
  const uriR = 'http://replicas.example/same';
  const T0 = 'Mon, 05 Jan 2026 10:00:00 GMT';
  const T1 = 'Mon, 05 Jan 2026 11:00:00 GMT';
  const T2 = 'Mon, 05 Jan 2026 11:30:00 GMT';
  // b has seen the URI-R (a daemon that kept the newest memento in memory would now trust it).
  t.equal((await putCapture(b, uriR, capture('/same', 'first page', T0))).status, 201);
  const first = await putCapture(a, uriR, capture('/same', 'second page', T1));
  t.equal(first.status, 201, 'a stores a new memento');
  const uriM = String(first.headers.location);

  const clash = await putCapture(b, uriR, capture('/same', 'a different page', T1));
  t.equal(clash.status, 409, 'the same second, another body, on b: 409');
  t.equal(clash.text, `conflict: a different capture of this URI-R is stored at the same second, ${uriM}; nothing stored\n`, 'naming the stored URI-M');
  const same = await putCapture(b, uriR, capture('/same', 'second page', T1));
  t.equal(same.status, 200, 'the same second and body on b: the duplicate answer');
  t.equal(same.headers.location, uriM);
  const later = await putCapture(b, uriR, capture('/same', 'second page', T2));
  t.equal(later.status, 200, "unchanged half an hour later on b: a duplicate of a's memento, nothing stored");
  t.equal(later.headers.location, uriM);

  for (const d of [a, b]) {
    const m = await request(at(d, raw(uriM)));
    t.equal(m.text, 'second page', `${d === a ? 'a' : 'b'} serves the first capture of that second`);
    const tm = await request(`${d.url}/current/timemap/link/${uriR}`);
    t.equal(tm.text.match(/rel="[^"]*memento[^"]*"; datetime=/g)?.length, 2, 'two mementos in the TimeMap: no row of the refused captures');
  }
});

/** Two replicas in this process (their stores reachable) on a new database and prefix. */
async function twoInProcess(t: Test): Promise<{ a: TestArchive; b: TestArchive }> {
  const db = await postgres.database(`replicas_${databases++}`);
  const prefix = `p${databases}/`;
  const yaml = (name: string) => `base_url: ${BASE}\n${sharedKey(db)}${s3.storageYaml(prefix, name)}  index: ${db}\n${TWO_ARCHIVES}`;
  const a = await startArchive(yaml('a'));
  t.teardown(() => a.close());
  const b = await startArchive(yaml('b'));
  t.teardown(() => b.close());
  return { a, b };
}

t.test('two replicas decide the same second at once: the one that commits first keeps it; the other answers 409 (or 200), its object an orphan', async (t) => {
  for (const identical of [false, true]) {
    const { a, b } = await twoInProcess(t);
    const uriR = 'http://replicas.example/race';
    // b looks the URI-R up (finds nothing), then a stores its capture of that second, then b goes on.
    const lookup = b.store.index.atOrBeforeMany.bind(b.store.index);
    let aAnswer: Awaited<ReturnType<typeof putCapture>> | undefined;
    b.store.index.atOrBeforeMany = async (pairs) => {
      const found = await lookup(pairs);
      aAnswer = await putCapture(a, uriR, capture('/race', 'a was first'));
      return found;
    };
    const mine = await b.store.ingest(Readable.from([capture('/race', identical ? 'a was first' : 'b was second')]), new Date());
    b.store.index.atOrBeforeMany = lookup;
    t.equal(aAnswer?.status, 201, 'a stored its capture while b was deciding');
    t.equal(mine.kind, identical ? 'duplicate' : 'conflict', identical ? 'b: a duplicate of it (200)' : 'b: a conflict with it (409)');
    t.equal(mine.row.uri_r, uriR);
    t.ok('id' in mine.row && mine.row.warc_file.startsWith('a/'), "b's answer names a's memento");
    const m = await request(at(a, raw(String(aAnswer!.headers.location))));
    t.equal(m.text, 'a was first', "a's capture is served as stored");
    t.equal(await b.store.index.count(), 1, 'one row');
    const v = await verify(b.store.index, b.store.warcs);
    t.ok(v.ok, v.problems.join('; '));
    t.equal(v.orphans.length, 1, "b's uploaded object is an orphan that verify lists");
    t.match(v.orphans[0], /^b\//);
  }
});

t.test('a capture found identical to one that then lost its second to another replica is not acknowledged (503), and is stored when sent again', async (t) => {
  const { a, b } = await twoInProcess(t);
  const uriR = 'http://replicas.example/twice';
  const lookup = b.store.index.atOrBeforeMany.bind(b.store.index);
  b.store.index.atOrBeforeMany = async (pairs) => {
    const found = await lookup(pairs);
    b.store.index.atOrBeforeMany = lookup;
    t.equal((await putCapture(a, uriR, capture('/twice', 'a was first', JAN5))).status, 201, 'a stores its capture of the first second meanwhile');
    return found;
  };
  // One batch on b: the page at 10:00:00, and the same page a minute later (a duplicate of the first, decided in the batch).
  const later = 'Mon, 05 Jan 2026 10:01:00 GMT';
  const [first, second] = await Promise.allSettled([
    b.store.ingest(Readable.from([capture('/twice', 'b page', JAN5)]), new Date()),
    b.store.ingest(Readable.from([capture('/twice', 'b page', later)]), new Date()),
  ]);
  t.match(first, { status: 'fulfilled', value: { kind: 'conflict' } }, 'the first second: a conflict with what a stored');
  t.match(second, { status: 'rejected', reason: { status: 503 } }, 'its duplicate a minute later: 503, nothing stored');
  const again = await putCapture(b, uriR, capture('/twice', 'b page', later));
  t.equal(again.status, 201, 'sent again, it is a new memento (it differs from the one before it)');
  t.equal((await request(at(a, raw(String(again.headers.location))))).text, 'b page');
});

t.test(
  'a commit that fails but happened (the connection lost before its answer) keeps its object: the capture is read, not a row naming nothing',
  async (t) => {
    const { a, b } = await twoInProcess(t);
    const insert = a.store.index.insertNew.bind(a.store.index);
    a.store.index.insertNew = async (rows) => {
      a.store.index.insertNew = insert;
      await insert(rows);
      throw new Error('Connection terminated unexpectedly');
    };
    const put = await putCapture(a, 'http://replicas.example/ambiguous', capture('/ambiguous', 'committed after all'));
    t.equal(put.status, 500, 'not acknowledged');
    const gate = await request(`${b.url}/current/timegate/http://replicas.example/ambiguous`);
    t.equal(gate.status, 302, 'the row is there, on every replica');
    const m = await request(at(b, raw(String(gate.headers.location))));
    t.equal(m.status, 200, 'and its record is read');
    t.equal(m.text, 'committed after all');
    const v = await verify(a.store.index, a.store.warcs);
    t.ok(v.ok, `verify passes: ${v.problems.join('; ')}`);
  },
);

t.test('PostgreSQL with the WARC files in a folder: one daemon per database; a second is refused in one line', async (t) => {
  const db = await postgres.database(`replicas_${databases++}`);
  const folder = () => {
    const c = writeConfig(`${sharedKey(db)}storage:\n  index: ${db}\n`);
    t.teardown(() => rmSync(c.dir, { recursive: true, force: true }));
    return c.config;
  };
  const first = await serve(t, folder());
  const second = await runCli(['serve', '--config', folder()], 30_000);
  t.equal(second.code, 1, 'a second daemon with its WARC files in a folder: exit status 1');
  t.match(
    second.stderr,
    /^memento-archive: the index database postgres:\/\/postgres@127\.0\.0\.1:\d+\/replicas_\d+ is in use by another archive daemon, and this one keeps its WARC files in its own folder \(storage\.warcs: folder\), which no other daemon can read: run one daemon per database, or give every daemon on it storage\.warcs: s3:\/\/…\n$/,
  );
  // The commands that rewrite the index refuse while a daemon runs on it (the data folder's lock covers one host only).
  for (const args of [['purge', '--url', 'http://replicas.example/'], ['reindex']]) {
    const other = writeConfig(`${sharedKey(db)}storage:\n  index: ${db}\n`);
    t.teardown(() => rmSync(other.dir, { recursive: true, force: true }));
    mkdirSync(path.join(other.dataDir, 'warcs'), { recursive: true });
    const busy = await runCli([args[0], '--config', other.config, ...args.slice(1)], 30_000);
    t.equal(busy.code, 1, `${args[0]} beside a running daemon: exit status 1`);
    t.match(busy.stderr, /is in use by an archive daemon: stop every daemon on it first/);
  }
  const replica = await runCli(['serve', '--config', replicaConfig(t, db, 'folder/', 'r').config], 30_000);
  t.equal(replica.code, 1, 'a replica with its WARC files in the bucket: refused too');
  t.match(replica.stderr, /is in use by an archive daemon that keeps its WARC files in its own folder \(storage\.warcs: folder\)/);
  await first.stop();
  const alone = await serve(t, replicaConfig(t, db, 'folder/', 'r').config);
  t.equal((await request(`${alone.url}/current/timegate/http://replicas.example/`)).status, 404, 'once it is stopped, replicas start');
  const folderAgain = await runCli(['serve', '--config', folder()], 30_000);
  t.equal(folderAgain.code, 1, 'and a daemon with a folder is refused while they run');
});

t.test(
  'replicas started with different keys on an empty log: one signs; the other serves no head, /healthz 503 with the reason; a third does not start',
  async (t) => {
    const db = await postgres.database(`replicas_${databases++}`);
    const prefix = `p${databases}/`;
    // No shared signing_key_file: each replica makes a key of its own in its data folder. One archive, one log to race for.
    const yaml = (name: string) => `base_url: ${BASE}\narchives:\n  - id: current\n${s3.storageYaml(prefix, name)}  index: ${db}\n`;
    const started = await Promise.allSettled([startArchive(yaml('ka')), startArchive(yaml('kb'))]);
    const running: TestArchive[] = [];
    for (const s of started) {
      if (s.status === 'fulfilled') {
        running.push(s.value);
        t.teardown(() => s.value.close());
      } else
        t.match(s.reason, { message: /the evidence log of archive current was signed with another key/ }, 'one that started after the other signed is refused');
    }
    t.ok(running.length >= 1, `${running.length} replica(s) running`);
    // Both ran: within a round or two, one has signed the empty log's head and the other knows it is not its key.
    const health = async () => Promise.all(running.map(async (r) => (await request(`${r.url}/healthz`)).status));
    const end = performance.now() + 30_000;
    while (running.length === 2 && (await health()).filter((s) => s === 503).length !== 1 && performance.now() < end) await new Promise((r) => setImmediate(r));
    const statuses = await health();
    const signer = running[statuses.indexOf(200)];
    t.ok(signer, 'one replica is healthy');
    const head = await request(`${signer.url}/current/log`);
    t.equal(head.status, 200);
    t.equal((JSON.parse(head.text) as { public_key: string }).public_key, signer.app.treeHeads.key.publicKeyBase64, 'its head, under its key');
    const other = running.find((r) => r !== signer);
    if (other) {
      const h = await request(`${other.url}/healthz`);
      t.equal(h.status, 503, 'the other: unhealthy');
      t.match(
        h.text,
        /^log: the evidence log of archive current has a tree head \(size 0\) signed with another key than this daemon's signing_key_file: it neither signs nor serves that log; give every daemon of the archive the same signing_key_file and restart this one$/m,
      );
      const log = await request(`${other.url}/current/log`);
      t.equal(log.status, 503, 'the other serves no head beside its own public key');
      t.notMatch(log.text, other.app.treeHeads.key.publicKeyBase64);
    }
    // A replica started now with yet another key: one line, exit status 1.
    const c = writeConfig(yaml('kc').replace(/^archives:\n {2}- id: current\n/m, ''));
    t.teardown(() => rmSync(c.dir, { recursive: true, force: true }));
    const third = await runCli(['serve', '--config', c.config], 30_000);
    t.equal(third.code, 1, 'a third replica with another key: exit status 1');
    t.match(
      third.stderr,
      /^memento-archive: \S+log-signing-key\.pem: the evidence log of archive current was signed with another key \(its tree head of size 0\); give this daemon the signing_key_file the log was signed with\n$/,
    );

    // The database read-only (a standby, or default_transaction_read_only): the index check says so.
    const admin = new pg.Client({ connectionString: db });
    await admin.connect();
    t.teardown(() => admin.end());
    await admin.query('ALTER SYSTEM SET default_transaction_read_only = on');
    await admin.query('SELECT pg_reload_conf()');
    t.teardown(async () => {
      await admin.query('ALTER SYSTEM RESET default_transaction_read_only');
      await admin.query('SELECT pg_reload_conf()');
    });
    let ro = await request(`${signer.url}/healthz`);
    for (const stop = performance.now() + 30_000; ro.status === 200 && performance.now() < stop;) ro = await request(`${signer.url}/healthz`);
    t.equal(ro.status, 503, 'a read-only database: 503');
    t.match(ro.text, /^index: the database takes no writes \(default_transaction_read_only is on\)$/m);
  },
);
