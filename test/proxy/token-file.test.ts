/**
 * A vhost file that holds an `ArchiveToken` holds a secret: whoever reads
 * it may write captures. As the archive refuses an `archive.yaml` holding
 * `put_tokens` (test/archive/security.test.ts), the proxy refuses such a
 * file while every user may read it, with `file:line: reason` and the
 * `chmod` to run (one check, shared/config.ts `refuseReadableSecret`): at
 * start the file serves nothing while the others serve, and it is counted;
 * on reload its last good config keeps serving.
 */
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { chmod, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { loadArchiveConfig } from '../../archive/config.js';
import { loadVhostFile } from '../../proxy/config/vhost-file.js';
import { writeConfig } from '../archive/helpers.js';
import { get, startTestProxy, startUpstream, tempDir, vhostYaml } from './helpers.js';

const TOKEN = 'k3yForTheProxy-0123456789abcdef';

/** The refusal of `file`, its secret `what` at `line`, mode 0644. */
const refusal = (file: string, line: number, what: string) =>
  `${file}:${line}: ${what} is a secret, but every user can read this file (mode 0644); run: chmod o-r ${file}`;

t.test('at start: the readable file with a token serves nothing, the others serve, it is counted and logged; the chmod it names makes it serve', async (t) => {
  const site = await startUpstream(t, (_req, res) => res.end('site'));
  const { proxy, dir, logs } = await startTestProxy(t, {
    'good.yaml': vhostYaml({ server_name: 'a.example', upstream: site.url, EnableArchiving: 'Off' }),
    'token.yaml': { text: vhostYaml({ server_name: 'b.example', upstream: site.url, EnableArchiving: 'Off', ArchiveToken: TOKEN }), mode: 0o644 },
  });
  const file = path.join(dir, 'token.yaml');
  const error = refusal(file, 4, 'ArchiveToken');
  t.equal(await proxy.metrics.value('capture_proxy_vhost_files_rejected'), 1, 'one file refused');
  t.ok(
    logs.some((e) => e.level === 'error' && e.file === file && e.error === error),
    'logged: file:line at the ArchiveToken line, the reason, the chmod to run',
  );
  t.equal((await get(proxy.url, '/', 'b.example')).status, 421, 'its vhost does not serve');
  t.equal((await get(proxy.url, '/', 'a.example')).body.toString(), 'site', 'the other file serves');

  // Run the command the message names.
  await promisify(execFile)('/bin/sh', ['-c', error.slice(error.indexOf('run: ') + 5)]);
  const [ok] = proxy.vhosts.reload().filter((e) => e.file === file);
  t.match(ok, { ok: true, names: ['b.example'] }, 'after the chmod it loads (mode 0640: its group may read it)');
  t.equal((await get(proxy.url, '/', 'b.example')).body.toString(), 'site');
  t.equal(await proxy.metrics.value('capture_proxy_vhost_files_rejected'), 0);

  // Readable again: on reload the last good config keeps serving.
  await chmod(file, 0o644);
  const [bad] = proxy.vhosts.reload().filter((e) => e.file === file);
  t.match(bad, { ok: false, error }, 'on reload: refused with the same line');
  t.equal((await get(proxy.url, '/', 'b.example')).body.toString(), 'site', 'the last good config keeps serving');
  t.equal(await proxy.metrics.value('capture_proxy_vhost_files_rejected'), 1, 'and it is counted');
});

t.test('what is refused: only a file with a token that every user may read; the line is the token of the vhost that has it', async (t) => {
  const dir = await tempDir(t);
  const file = path.join(dir, 'v.yaml');
  const write = async (text: string, mode: number) => {
    await writeFile(file, text);
    await chmod(file, mode);
  };
  const one = vhostYaml({ server_name: 'a.example', upstream: 'http://127.0.0.1:1', ArchiveToken: TOKEN });
  await write(one, 0o600);
  t.equal(loadVhostFile(file)[0].archiveToken, TOKEN, '0600: read');
  await write(one, 0o640);
  t.equal(loadVhostFile(file)[0].archiveToken, TOKEN, '0640 (the service install: root and the proxy group): read');
  await write(one, 0o604);
  t.throws(() => loadVhostFile(file), { message: refusal(file, 3, 'ArchiveToken').replace('0644', '0604') }, '0604: refused');
  await write(vhostYaml({ server_name: 'a.example', upstream: 'http://127.0.0.1:1' }), 0o644);
  t.equal(loadVhostFile(file).length, 1, 'no token: a file every user may read is fine');
  await write(
    [
      '- server_name: a.example',
      '  upstream: http://127.0.0.1:1',
      '- server_name: b.example',
      '  upstream: http://127.0.0.1:1',
      `  ArchiveToken: ${TOKEN}`,
      '',
    ].join('\n'),
    0o644,
  );
  t.throws(() => loadVhostFile(file), { message: refusal(file, 5, 'ArchiveToken') }, 'a list: the line of the token');
});

t.test('the archive refuses its readable put_tokens file with the same words (one check for both daemons)', async (t) => {
  const { dir, config } = writeConfig(`put_tokens: [${TOKEN}]\n`);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  await chmod(config, 0o644);
  t.throws(() => loadArchiveConfig(config), { message: refusal(config, 8, 'put_tokens') });
});
