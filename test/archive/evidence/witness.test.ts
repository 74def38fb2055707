/**
 * `memento-archive witness`, the C2SP tlog-witness server, run as a user
 * runs it (test/helpers/witness.ts) and asked over HTTP on 127.0.0.1 with
 * checkpoints signed by a log key (signed-note.ts) over trees built here
 * (test/helpers/rfc9162.ts): it cosigns a first checkpoint and each
 * consistent successor, refuses with the spec's status every cut-back
 * (smaller size, same size with another root, an inconsistent proof) and
 * cosigns nothing then, answers 409 with its size after a restart, lets
 * only one of two concurrent submissions on one old size through, and
 * serves what it cosigned to monitors.
 */
import { execFile } from 'node:child_process';
import { createHash, generateKeyPairSync } from 'node:crypto';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import t, { type Test } from 'tap';
import {
  checkpointText,
  cosignatureTime,
  formatVerifierKey,
  noteSignerOf,
  parseNote,
  signNote,
  verifierKeyOf,
  verifyNote,
} from '../../../archive/evidence/signed-note.js';
import { addCheckpoint } from '../../../archive/evidence/witness-client.js';
import { validateWitnessConfig } from '../../../archive/evidence/witness-config.js';
import { parseYamlText } from '#shared/config.js';
import { repo } from '../../helpers/daemons.js';
import { mth, proof as consistencyProof } from '../../helpers/rfc9162.js';
import { type LocalWitness, startWitness } from '../../helpers/witness.js';

const ORIGIN = 'archive.test/current';
const logKey = generateKeyPairSync('ed25519').privateKey;
const log = noteSignerOf(ORIGIN, logKey);
const logVkey = formatVerifierKey(verifierKeyOf(ORIGIN, logKey));
const leaves = Array.from({ length: 40 }, (_, i) => Buffer.from(`https://example.org/page/${i}\n20260101000000\n<urn:uuid:${i}>\nsha256:00`));
const fork = leaves.map((l, i) => (i >= 6 ? Buffer.concat([l, Buffer.from('!')]) : l));

/** The log's signed checkpoint of the first `n` leaves of `d`. */
function checkpoint(n: number, d: Buffer[] = leaves, signer = log): string {
  return signNote(checkpointText({ origin: signer.name, treeSize: n, rootHash: mth(d.slice(0, n)) }), signer);
}

/** The raw add-checkpoint answer: status, content type, body. */
async function post(w: LocalWitness, body: string | Buffer): Promise<{ status: number; type: string | null; body: string }> {
  const res = await fetch(`${w.url}/add-checkpoint`, { method: 'POST', body: typeof body === 'string' ? body : new Uint8Array(body) });
  return { status: res.status, type: res.headers.get('content-type'), body: await res.text() };
}

/** The request body of a submission from `old` to the checkpoint of `n` leaves of `d`. */
function submission(old: number, n: number, d: Buffer[] = leaves, note = checkpoint(n, d)): string {
  const p = old > 0 && old < n ? consistencyProof(old, d.slice(0, n)) : [];
  return `old ${old}\n${p.map((h) => `${h.toString('base64')}\n`).join('')}\n${note}`;
}

/** Waits (up to 10 s) until the witness's output holds `pattern`, and says so. */
async function logged(w: LocalWitness, pattern: RegExp, t: Test, what = `logged: ${pattern}`): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!pattern.test(w.daemon.output()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  t.match(w.daemon.output(), pattern, what);
}

/** What the witness serves to monitors for ORIGIN. */
async function monitored(w: LocalWitness): Promise<{ status: number; body: string }> {
  const hash = createHash('sha256').update(ORIGIN).digest('hex');
  const res = await fetch(`${w.url}/${hash}/checkpoint`);
  return { status: res.status, body: await res.text() };
}

t.test('cosigns a first checkpoint and each consistent one; refuses every cut-back and cosigns nothing then; 409 after a restart', async (t) => {
  let w = await startWitness({ logs: [{ origin: ORIGIN, key: logVkey }] });
  t.teardown(() => w.stop());
  t.match(w.daemon.output(), /^memento-archive witness listening on http:\/\/127\.0\.0\.1:\d+ vkey witness\.test\/w1\+[0-9a-f]{8}\+/);
  t.equal((await monitored(w)).status, 404, 'nothing cosigned yet');

  // The first checkpoint: old 0, no proof. The client keeps the cosignature, which verifies.
  const before = Math.floor(Date.now() / 1000);
  const lines = await addCheckpoint(w.endpoint, { oldSize: 0, proof: [], note: checkpoint(5) });
  const cosigned = parseNote(checkpoint(5) + lines.join(''));
  t.same(
    verifyNote(cosigned, [verifierKeyOf(ORIGIN, logKey), w.endpoint.key]).verified.map((v) => v.name),
    [ORIGIN, 'witness.test/w1'],
  );
  const time = cosignatureTime(cosigned.signatures[1].signature)!;
  t.ok(time >= before && time <= Math.floor(Date.now() / 1000), 'the cosignature is timestamped now, in seconds');
  t.equal(readdirSync(w.stateDir).filter((f) => f.endsWith('.json')).length, 1, 'one state file');
  t.equal(readdirSync(w.stateDir).filter((f) => f.endsWith('.tmp')).length, 0, 'no temporary file left');

  // A consistent successor, from the size it cosigned.
  const r = await post(w, submission(5, 13));
  t.equal(r.status, 200);
  t.match(r.body, /^— witness\.test\/w1 [A-Za-z0-9+/]+=*\n$/);
  const seen = await monitored(w);
  t.equal(seen.status, 200);
  t.equal(seen.body, checkpoint(13) + r.body, 'monitors get the checkpoint with the log signature and the cosignature');
  const stateBefore = readdirSync(w.stateDir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => readFileSync(path.join(w.stateDir, f), 'utf8'))
    .join();

  // Cut-backs: each refused with the spec's status, nothing cosigned.
  const cuts: [string, string, number, RegExp][] = [
    ['a smaller size', submission(13, 8), 400, /old size 13 is larger than the checkpoint's 8/],
    ['the same size, another root', submission(13, 13, fork), 422, /size 13 again with another root/],
    ['a fork: proof from the forked tree', submission(13, 20, fork), 422, /consistency proof from size 13 to 20 does not verify/],
    [
      'a proof of other sizes',
      `old 13\n${consistencyProof(12, leaves.slice(0, 20))
        .map((h) => `${h.toString('base64')}\n`)
        .join('')}\n${checkpoint(20)}`,
      422,
      /does not verify/,
    ],
    [
      'a truncated proof',
      `old 13\n${consistencyProof(13, leaves.slice(0, 20))
        .slice(1)
        .map((h) => `${h.toString('base64')}\n`)
        .join('')}\n${checkpoint(20)}`,
      422,
      /does not verify/,
    ],
    ['an old size it did not cosign', submission(8, 20), 409, /^13\n$/],
    ['old 0 again', submission(0, 20), 409, /^13\n$/],
  ];
  for (const [what, body, status, reason] of cuts) {
    const a = await post(w, body);
    t.equal(a.status, status, what);
    t.match(a.body, reason, what);
    t.notMatch(a.body, /—/, `${what}: no cosignature`);
    if (status === 409) t.equal(a.type, 'text/x.tlog.size', `${what}: text/x.tlog.size`);
  }
  t.equal((await monitored(w)).body, seen.body, 'monitors still get size 13');
  const stateAfter = readdirSync(w.stateDir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => readFileSync(path.join(w.stateDir, f), 'utf8'))
    .join();
  t.equal(stateAfter, stateBefore, 'the state on disk did not change');
  await logged(w, /"level":"warn".*"status":422.*"note":"archive\.test\/current\\n13\\n/, t, 'a 422 is logged with the note it refused');

  // The same checkpoint again is cosigned again; the client sees a 409 with the size.
  t.equal((await post(w, submission(13, 13))).status, 200, 'the same size and root again');
  const e = await addCheckpoint(w.endpoint, { oldSize: 0, proof: [], note: checkpoint(20) }).catch((err: unknown) => err);
  t.match(e, { name: 'WitnessError', status: 409, recordedSize: 13 });

  // After a restart the witness remembers size 13.
  t.equal(await w.stop(), 0, 'SIGTERM: exit 0');
  t.match(w.daemon.output(), /"msg":"stopped"/);
  const vkey = w.vkey;
  w = await startWitness({ logs: [{ origin: ORIGIN, key: logVkey }], dir: w.dir });
  t.equal(w.vkey, vkey, 'the same key after a restart');
  const afterRestart = await post(w, submission(0, 20));
  t.same([afterRestart.status, afterRestart.type, afterRestart.body], [409, 'text/x.tlog.size', '13\n'], '409 with the size it cosigned before the restart');
  t.equal((await post(w, submission(13, 8))).status, 400, 'still no way back');
  t.equal((await post(w, submission(13, 40))).status, 200, 'and on from 13');
  t.equal((await monitored(w)).body.split('\n')[1], '40');
});

t.test('one witness, asked in turn: what it refuses before looking at its state, then concurrent submissions', async (t) => {
  const w = await startWitness({ logs: [{ origin: ORIGIN, key: logVkey }], quiet: true });
  t.teardown(() => w.stop());
  await t.test('what the witness refuses before looking at its state', async (t) => {
    const other = noteSignerOf(ORIGIN, generateKeyPairSync('ed25519').privateKey);
    const note = checkpoint(5);
    // the 21st base64 character is in the signature, past the key ID
    const badSig = note.replace(/ (\S{20})(\S)(\S+)\n$/, (_m, a: string, c: string, rest: string) => ` ${a}${c === 'A' ? 'B' : 'A'}${rest}\n`);
    const unknown = signNote(
      checkpointText({ origin: 'other.test/log', treeSize: 5, rootHash: mth(leaves.slice(0, 5)) }),
      noteSignerOf('other.test/log', logKey),
    );
    const hashes = (n: number) => Array.from({ length: n }, () => `${Buffer.alloc(32).toString('base64')}\n`).join('');
    const cases: [string, string | Buffer, number, RegExp][] = [
      ['an unknown origin', `old 0\n\n${unknown}`, 404, /unknown log origin "other\.test\/log"/],
      ['signed by another key of the same name', `old 0\n\n${checkpoint(5, leaves, other)}`, 403, /no signature by a known key/],
      ['a known key whose signature fails', `old 0\n\n${badSig}`, 403, /does not verify/],
      ['no signature', `old 0\n\n${checkpointText({ origin: ORIGIN, treeSize: 5, rootHash: mth(leaves.slice(0, 5)) })}`, 400, /the checkpoint: /],
      ['old above the size', `old 6\n${hashes(1)}\n${note}`, 400, /old size 6 is larger/],
      ['no old line', `\n${note}`, 400, /does not begin with "old <size>"/],
      ['old with a leading zero', `old 05\n\n${note}`, 400, /does not begin with "old <size>"/],
      ['64 proof lines', `old 0\n${hashes(64)}\n${note}`, 400, /more than 63 consistency proof lines/],
      ['a proof line that is not a hash', `old 0\nAAAA\n\n${note}`, 400, /line 1 is not a base64 SHA-256 hash/],
      ['not UTF-8', Buffer.concat([Buffer.from('old 0\n\n'), Buffer.from([0xff, 0xfe])]), 400, /not UTF-8/],
      ['a proof with old size 0', `old 0\n${hashes(2)}\n${note}`, 422, /a consistency proof with old size 0/],
      [
        'size 0 with a root that is not the empty tree',
        `old 0\n\n${signNote(checkpointText({ origin: ORIGIN, treeSize: 0, rootHash: Buffer.alloc(32) }), log)}`,
        422,
        /size 0/,
      ],
      ['over 64 KiB', `old 0\n\n${'x'.repeat(70_000)}`, 413, /over 65536 bytes/],
    ];
    for (const [what, body, status, reason] of cases) {
      const a = await post(w, body);
      t.equal(a.status, status, what);
      t.match(a.body, reason, what);
    }
    t.equal((await monitored(w)).status, 404, 'nothing was cosigned');
    const empty = await post(w, `old 0\n\n${signNote(checkpointText({ origin: ORIGIN, treeSize: 0, rootHash: mth([]) }), log)}`);
    t.equal(empty.status, 200, 'the empty tree is cosigned');
    const get = await fetch(`${w.url}/add-checkpoint`);
    t.same([get.status, get.headers.get('allow')], [405, 'POST']);
    t.equal((await fetch(`${w.url}/nothing`)).status, 404);
  });
  await t.test('two submissions at once on one old size: one is cosigned, the other gets 409 with the winner’s size', async (t) => {
    t.equal((await post(w, submission(0, 4))).status, 200, 'from the empty tree cosigned before');
    let old = 4;
    for (let round = 0; round < 6; round++) {
      const [a, b] = [old + 1 + (round % 3), old + 5];
      const answers = await Promise.all([post(w, submission(old, a)), post(w, submission(old, b))]);
      const statuses = answers.map((x) => x.status).sort();
      t.same(statuses, [200, 409], `round ${round}: ${old} → ${a} and ${old} → ${b}`);
      const winner = answers[0].status === 200 ? a : b;
      t.equal(answers.find((x) => x.status === 409)?.body, `${winner}\n`, `round ${round}: the 409 names the size cosigned`);
      old = winner;
    }
    t.equal((await monitored(w)).body.split('\n')[1], String(old), 'the state is the last winner');
  });
});

/** Runs `memento-archive witness --config <file>` to its end: exit code and stderr. */
async function runToEnd(configFile: string): Promise<{ code: number; stderr: string }> {
  const r = await promisify(execFile)(process.execPath, [path.join(repo, 'bin/memento-archive.js'), 'witness', '--config', configFile], {
    cwd: repo,
    timeout: 60_000,
  }).then(
    () => ({ code: 0, stderr: '' }),
    (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
  );
  return r;
}

t.test('its key file is 0600 and refused when others may read it; one witness per state folder; a damaged state is never read as size 0', async (t) => {
  const w = await startWitness({ logs: [{ origin: ORIGIN, key: logVkey }], quiet: true });
  let running = true;
  t.teardown(() => (running ? w.stop() : undefined));
  const keyFile = path.join(w.stateDir, 'witness-key.pem');
  t.equal(statSync(keyFile).mode & 0o777, 0o600, 'the key file was made with mode 0600');
  t.equal((await post(w, submission(0, 5))).status, 200);

  const second = await runToEnd(w.configFile);
  t.equal(second.code, 1, 'a second witness on the same state folder exits 1');
  t.match(second.stderr, /^memento-archive: memento-archive witness \(pid \d+\) is running on .*; two witnesses cannot share a state folder\n$/);

  // A state file damaged on disk: that log is refused (500), never cosigned from size 0.
  const stateFile = path.join(w.stateDir, `${createHash('sha256').update(ORIGIN).digest('hex')}.json`);
  const good = readFileSync(stateFile, 'utf8');
  writeFileSync(stateFile, good.slice(0, 20));
  const damaged = await post(w, submission(0, 6));
  t.equal(damaged.status, 500);
  t.notMatch(damaged.body, /—/);
  await logged(w, /"level":"error".*"status":500.*not JSON/, t);
  writeFileSync(stateFile, good);
  t.equal((await post(w, submission(5, 6))).status, 200, 'the state restored, on it goes');
  t.equal(await w.stop(), 0);
  running = false;

  chmodSync(keyFile, 0o644);
  const open = await runToEnd(w.configFile);
  t.equal(open.code, 1);
  t.match(open.stderr, /^memento-archive: .*witness-key\.pem: holds the witness’s signing key but every user can read it \(mode 0644\); run chmod 600 .*\n$/);
});

t.test('a config with a mistake: one line naming the file and line (exit 2 from the command)', async (t) => {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'witness-conf-')), 'witness.yaml');
  const cases: [string, RegExp][] = [
    [`listen: 127.0.0.1:0\nlogs:\n  - {origin: ${ORIGIN}, key: ${logVkey}}\n`, /witness\.yaml:1: name is missing \(the name of the witness key/],
    [`name: w\nlogs:\n  - {origin: ${ORIGIN}, key: nokey}\n`, /witness\.yaml:3: key must be an Ed25519 verifier key/],
    [
      `name: w\nlogs:\n  - {origin: ${ORIGIN}, key: ${formatVerifierKey(verifierKeyOf(ORIGIN, logKey, 0x04))}}\n`,
      /witness\.yaml:3: key must be an Ed25519 verifier key/,
    ],
    [`name: w\nlogs: []\n`, /witness\.yaml:2: logs must be a list of mappings, each with an origin and a key/],
    [`name: w\nlogs:\n  - ${ORIGIN}\n`, /witness\.yaml:3: each of logs is a mapping with an origin and a key, not "archive\.test\/current"/],
    [`name: has space\nlogs:\n  - {origin: ${ORIGIN}, key: ${logVkey}}\n`, /witness\.yaml:1: name must be a key name without spaces/],
    [`name: w\nlogs:\n  - {origin: ${ORIGIN}, key: ${logVkey}}\n  - {origin: ${ORIGIN}, key: ${logVkey}}\n`, /witness\.yaml:4: this key is listed twice/],
    [`name: w\nlisten: nowhere\nlogs:\n  - {origin: ${ORIGIN}, key: ${logVkey}}\n`, /witness\.yaml:2: listen must be host:port/],
    [`name: w\nlogs:\n  - {origin: ${ORIGIN}, key: ${logVkey}, extra: 1}\n`, /witness\.yaml:3: unknown setting "extra"/],
  ];
  for (const [yaml, reason] of cases)
    t.throws(() => validateWitnessConfig(parseYamlText(yaml, file)), { name: 'ConfigError', message: reason }, yaml.split('\n')[0]);
  const ok = validateWitnessConfig(parseYamlText(`name: w\nlogs:\n  - {origin: ${ORIGIN}, key: ${logVkey}}\n`, file));
  t.same(
    [ok.keyFile, ok.stateDir, ok.listen],
    [path.join(path.dirname(file), '../data/witness/witness-key.pem'), path.join(path.dirname(file), '../data/witness'), { host: '127.0.0.1', port: 8092 }],
    'the defaults',
  );
  writeFileSync(file, cases[0][0]);
  const r = await runToEnd(file);
  t.equal(r.code, 2, 'the command exits 2');
  t.match(r.stderr, /^memento-archive: \/.*witness\.yaml:1: name is missing .*\n$/);
});
