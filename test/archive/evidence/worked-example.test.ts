/**
 * The worked example of docs/evidence.md ("Checking a capture by hand")
 * cannot rot: its shell blocks (curl, jq, openssl, sha256sum and its
 * Python script) are run here, as written (only the archive's address,
 * the witness's key, the CA file, and the capture checked changed),
 * against a real daemon with a real witness (`memento-archive witness`)
 * and a local time-stamping authority (`openssl ts`), holding the same
 * captures as the example's, once for each of the five captures: the
 * example works for any leaf index. Every check the example makes prints
 * its line ("root OK", "Signature Verified Successfully", …); all of them
 * must be printed, every time.
 */
import { execFile } from 'node:child_process';
import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { logVerifierKey } from '../../../archive/evidence/checkpoint.js';
import { formatVerifierKey } from '../../../archive/evidence/signed-note.js';
import { captureRecord, putCapture, request } from '../../helpers/archive.js';
import { repo, startDaemon } from '../../helpers/daemons.js';
import { startTsa } from '../../helpers/tsa.js';
import { startWitness } from '../../helpers/witness.js';
import { writeConfig } from '../helpers.js';

/** The captures of the example, in ingest order: leaf 0 … 4 of archive "current". */
const EXAMPLE_CAPTURES: [string, string, string][] = [
  ['/', 'Thu, 01 Jan 2026 09:00:00 GMT', '<h1>Bakery</h1>'],
  ['/news.html', 'Fri, 02 Jan 2026 09:00:00 GMT', '<h1>News</h1><p>Opening hours changed</p>'],
  ['/news.html', 'Sat, 03 Jan 2026 09:00:00 GMT', '<h1>News</h1><p>New bread in stock</p>'],
  ['/about.html', 'Sat, 03 Jan 2026 09:30:00 GMT', '<h1>About us</h1>'],
  ['/', 'Sun, 04 Jan 2026 09:00:00 GMT', '<h1>Bakery</h1><p>Winter sale</p>'],
];

/** The shell blocks of the section "Checking a capture by hand" of docs/evidence.md, in order. */
function exampleScript(): string {
  const doc = readFileSync(path.join(repo, 'docs', 'evidence.md'), 'utf8');
  const start = doc.indexOf('## Checking a capture by hand');
  if (start < 0) throw new Error('docs/evidence.md has no section "Checking a capture by hand"');
  const end = doc.indexOf('\n## ', start + 1);
  const section = doc.slice(start, end < 0 ? undefined : end);
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]);
  if (blocks.length < 6) throw new Error(`the section has ${blocks.length} sh blocks`);
  return blocks.join('\n');
}

/** `script` with the line `NAME=...` set to `value`. */
function setVar(script: string, name: string, value: string): string {
  const re = new RegExp(`^${name}=.*$`, 'm');
  if (!re.test(script)) throw new Error(`the example sets no ${name}`);
  return script.replace(re, `${name}=${value}`);
}

t.test('the worked example of docs/evidence.md, run as written against a real daemon, witness and TSA, for every leaf', async (t) => {
  const script = exampleScript();
  t.match(script, /^BASE=http:\/\/127\.0\.0\.1:8090$/m, 'the example names the archive in one line');
  const tsa = await startTsa();
  t.teardown(() => tsa.close());
  // The log's key made beforehand, so that the witness knows it; the origin is base_url's, as in the example.
  const keyPem = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const publicKeyDer = createPublicKey(keyPem).export({ type: 'spki', format: 'der' });
  const logs = ['2025', 'current'].map((id) => ({
    origin: `127.0.0.1:8090/${id}`,
    key: formatVerifierKey(logVerifierKey(`127.0.0.1:8090/${id}`, { publicKeyDer })),
  }));
  const witness = await startWitness({ logs, name: 'witness.example.org/w1', quiet: true });
  t.teardown(() => witness.stop());
  const { dir, config, dataDir } = writeConfig(
    `base_url: http://127.0.0.1:8090\nwitnesses:\n  - {name: witness.example.org/w1, url: "${witness.url}", key: "${witness.vkey}"}\ntsa_url: ${tsa.url}\n`,
  );
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(path.join(dataDir, 'log-signing-key.pem'), keyPem, { mode: 0o600 });
  const d = await startDaemon('memento-archive.js', ['serve', '--config', config, '--quiet']);
  t.teardown(() => d.stop());
  for (const [target, date, body] of EXAMPLE_CAPTURES) {
    const r = await putCapture({ url: d.url }, `http://www.example.org${target}`, captureRecord({ target, date, body }));
    t.equal(r.status, 201, `PUT ${target} ${date}`);
  }
  // The example starts once the published checkpoint holds the five captures (within seconds of them).
  const deadline = Date.now() + 30_000;
  while ((await request(`${d.url}/current/tlog/checkpoint`)).text.split('\n')[1] !== '5') {
    if (Date.now() > deadline) throw new Error('no checkpoint of 5 entries within 30 s');
    await new Promise((r) => setTimeout(r, 50));
  }
  let base = setVar(script, 'BASE', d.url);
  base = setVar(base, 'WITNESS_VKEY', witness.vkey);
  base = setVar(base, 'TSA_CA', tsa.caFile);
  for (const [i, [target, date]] of EXAMPLE_CAPTURES.entries()) {
    const ts = new Date(date).toISOString().replace(/\D/g, '').slice(0, 14);
    const run = setVar(setVar(base, 'TS', ts), 'URL', `http://www.example.org${target}`);
    const work = mkdtempSync(path.join(os.tmpdir(), 'worked-example-'));
    t.teardown(() => rmSync(work, { recursive: true, force: true }));
    const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
      execFile('bash', ['-euo', 'pipefail', '-c', run], { cwd: work }, (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      ),
    );
    if (i === 2) t.comment(`WITNESS_VKEY=${witness.vkey}\nTSA_URL=${tsa.url}\n${stdout}`);
    t.equal(code, 0, `leaf ${i}: the example runs to its end${stderr ? ': ' + stderr : ''}`);
    t.match(stdout, new RegExp(`^entry ${i} of the log 127\\.0\\.0\\.1:8090/current, in its checkpoint of 5 entries$`, 'm'), `leaf ${i}`);
    for (const check of ['root OK', 'log key ID OK', 'witness key ID OK: witness.example.org/w1', 'Verification: OK', 'block digest OK', 'leaf OK'])
      t.match(stdout, new RegExp(`^${check}`, 'm'), `leaf ${i}: ${check}`);
    t.equal(stdout.match(/^Signature Verified Successfully$/gm)?.length, 2, `leaf ${i}: the log's signature and the witness's verify`);
  }
});
