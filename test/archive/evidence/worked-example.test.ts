/**
 * The worked example of docs/evidence.md ("Checking a capture by hand")
 * cannot rot: its shell blocks are run here, as written (only the
 * archive's address changed), with bash, curl, jq, sha256sum, openssl and
 * xxd, against a real daemon holding the same captures as the example's
 * (five, in this order, so that the memento checked is leaf 2 of a tree
 * of 5 and its audit path takes the same turns). Every check the example
 * makes prints a line ending in "OK"; all of them must be printed.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { captureRecord, putCapture, request } from '../../helpers/archive.js';
import { repo, startDaemon } from '../../helpers/daemons.js';
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
  if (blocks.length < 4) throw new Error(`the section has ${blocks.length} sh blocks`);
  return blocks.join('\n');
}

t.test('the worked example of docs/evidence.md, run as written against a real daemon', async (t) => {
  const script = exampleScript();
  t.match(script, /^BASE=http:\/\/127\.0\.0\.1:8090$/m, 'the example names the archive in one line');
  const { dir, config } = writeConfig();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const d = await startDaemon('memento-archive.js', ['serve', '--config', config, '--quiet']);
  t.teardown(() => d.stop());
  for (const [target, date, body] of EXAMPLE_CAPTURES) {
    const r = await putCapture({ url: d.url }, `http://www.example.org${target}`, captureRecord({ target, date, body }));
    t.equal(r.status, 201, `PUT ${target} ${date}`);
  }
  // The example starts once the log's head holds the five captures (signed within seconds of them).
  const deadline = Date.now() + 30_000;
  while (JSON.parse((await request(`${d.url}/current/log`)).text).tree_size < 5) {
    if (Date.now() > deadline) throw new Error('no head of 5 entries within 30 s');
    await new Promise((r) => setTimeout(r, 50));
  }
  const work = mkdtempSync(path.join(os.tmpdir(), 'worked-example-'));
  t.teardown(() => rmSync(work, { recursive: true, force: true }));
  const run = script.replace(/^BASE=http:\/\/127\.0\.0\.1:8090$/m, `BASE=${d.url}`);
  const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
    execFile('bash', ['-euo', 'pipefail', '-c', run], { cwd: work }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
  t.comment(stdout);
  t.equal(code, 0, `the example runs to its end${stderr ? ': ' + stderr : ''}`);
  for (const check of ['block digest OK', 'leaf OK', 'root OK', 'Signature Verified Successfully', 'head OK'])
    t.match(stdout, new RegExp(`^${check}$`, 'm'), check);
});
