/**
 * Issue 5, parts 1–2: kill -9 the real daemon at random moments during a
 * stream of capture PUTs, restart it, and check after every restart that
 * every acknowledged capture is served byte-identical (the `id_` URI-M) and
 * that the index and the WARC files agree (`verify`).
 */

import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { IndexDb } from '../../archive/store/index/index-db.js';
import { verify } from '../../archive/store/upkeep/maintenance.js';
import { captureRecord, putCapture, request } from '../helpers/archive.js';
import { type Daemon, startDaemon } from '../helpers/daemons.js';
import { prng, runCli, writeConfig } from './helpers.js';

const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 20);
const SEED = Number(process.env.CRASH_SEED ?? 20261123);

t.test(`kill -9 during a stream of PUTs, ${ROUNDS} rounds: every acknowledged capture survives, byte for byte; verify passes`, async (t) => {
  const rnd = prng(SEED);
  t.comment(`seed ${SEED}`);
  const { dir, config, dataDir } = writeConfig();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const acked = new Map<string, { uriM: string; body: Buffer }>();
  let recoveryLines = 0;
  let seq = 0;

  for (let round = 0; round < ROUNDS; round++) {
    const d: Daemon = await startDaemon('memento-archive.js', ['--config', config, '--quiet']);
    recoveryLines += (d.output().match(/recovery: /g) ?? []).length;

    // After each restart: every capture acknowledged so far is served exactly.
    let bad = 0;
    for (const [uriR, a] of acked) {
      const raw = a.uriM.replace(/\/memento\/(\d{14})\//, '/memento/$1id_/').replace(/^http:\/\/[^/]+/, d.url);
      const r = await request(raw);
      if (r.status !== 200 || !r.body.equals(a.body)) {
        bad++;
        t.fail(`round ${round}: ${uriR} (${a.uriM}) answered ${r.status}, ${r.body.length} bytes`);
      }
    }
    t.equal(bad, 0, `round ${round}: all ${acked.size} acknowledged captures are served byte-identical`);
    const index = await IndexDb.open(path.join(dataDir, 'index.sqlite3'));
    const v = await verify(index, path.join(dataDir, 'warcs'));
    await index.close();
    t.ok(v.ok, `round ${round}: index and WARC files agree (${v.rows} rows, ${v.records} records)${v.ok ? '' : ': ' + v.problems.join('; ')}`);

    // A stream of PUTs from 6 clients; SIGKILL once a random number of them were acknowledged.
    const killAfter = 1 + Math.floor(rnd() * 12);
    let acks = 0;
    let killed = false;
    const dead = new Promise<void>((resolve) => d.proc.once('exit', () => resolve()));
    const client = async () => {
      while (!killed) {
        const n = seq++;
        const big = rnd() < 0.2;
        const body = randomBytes(big ? 200_000 + Math.floor(rnd() * 300_000) : 200 + Math.floor(rnd() * 10_000));
        const uriR = `http://crash.example/r${round}/c${n}`;
        const record = captureRecord({
          target: `/r${round}/c${n}`,
          host: 'crash.example',
          date: rnd() < 0.5 ? 'Mon, 05 Jan 2026 10:00:00 GMT' : 'Mon, 05 May 2025 10:00:00 GMT',
          body,
          responseHeaders: [['Content-Type', 'application/octet-stream']],
        });
        try {
          const r = await putCapture(d, uriR, record);
          if (r.status === 201) {
            acked.set(uriR, { uriM: String(r.headers.location), body });
            if (++acks >= killAfter && !killed) {
              killed = true;
              d.proc.kill('SIGKILL');
            }
          } else if (!killed) t.fail(`PUT ${uriR}: ${r.status} ${r.text}`);
        } catch {
          // the daemon was killed under this PUT: not acknowledged, nothing promised
        }
      }
    };
    await Promise.all([client(), client(), client(), client(), client(), client()]);
    await dead;
  }

  // Last start: recovery, full check, then a clean stop and the verify command.
  const d = await startDaemon('memento-archive.js', ['--config', config, '--quiet']);
  recoveryLines += (d.output().match(/recovery: /g) ?? []).length;
  let bad = 0;
  for (const [, a] of acked) {
    const r = await request(a.uriM.replace(/\/memento\/(\d{14})\//, '/memento/$1id_/').replace(/^http:\/\/[^/]+/, d.url));
    if (r.status !== 200 || !r.body.equals(a.body)) bad++;
  }
  t.equal(bad, 0, `after the last restart all ${acked.size} acknowledged captures are served byte-identical`);
  await d.stop();
  t.comment(`${acked.size} captures acknowledged over ${ROUNDS} kills; recovery acted ${recoveryLines} times`);
  const v = await runCli(['verify', '--config', config]);
  t.equal(v.code, 0, 'memento-archive verify exits 0');
  t.match(v.stdout, /^verify: OK: \d+ index rows, \d+ WARC records in \d+ files/m, v.stdout + v.stderr);
});
