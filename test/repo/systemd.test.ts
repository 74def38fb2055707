/**
 * The systemd units in conf/systemd/ (one per daemon): systemd's own
 * checker accepts them, they run as a dedicated user with a read-only
 * system and only their data folder writable, restart on failure, and
 * reload with SIGHUP (which the daemons take without stopping).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { request } from '../helpers/archive.js';
import { repo, startDaemon } from '../helpers/daemons.js';
import { writeConfig } from '../archive/helpers.js';

const run = promisify(execFile);
const UNITS = ['memento-archive.service', 'capture-proxy.service'];

/** `systemd-analyze verify` of unit files: exit code and what it printed. */
async function verify(files: string[]): Promise<{ code: number; output: string }> {
  try {
    const r = await run('systemd-analyze', ['verify', ...files]);
    return { code: 0, output: r.stdout + r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, output: (e.stdout ?? '') + (e.stderr ?? '') };
  }
}

t.test('systemd-analyze verify accepts both units, and refuses a broken one', async (t) => {
  const ok = await verify(UNITS.map((u) => path.join(repo, 'conf', 'systemd', u)));
  t.equal(ok.code, 0, ok.output);
  t.equal(ok.output.trim(), '', 'no warning');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'unit-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const broken = path.join(dir, 'broken.service');
  writeFileSync(
    broken,
    readFileSync(path.join(repo, 'conf', 'systemd', UNITS[0]), 'utf8').replace(/^ExecStart=\/usr\/bin\/node /m, 'ExecStart=node-not-absolute '),
  );
  t.not((await verify([broken])).code, 0, 'a relative ExecStart is an error: the check can fail');
});

t.test('each unit: a dedicated user, a read-only system with its data folder writable, no new privileges, restart on failure, reload by SIGHUP', async (t) => {
  for (const unit of UNITS) {
    const text = readFileSync(path.join(repo, 'conf', 'systemd', unit), 'utf8');
    const value = (key: string) => new RegExp(`^${key}=(.*)$`, 'm').exec(text)?.[1];
    t.match(value('User'), /^[a-z-]+$/, `${unit}: User=`);
    t.equal(value('ProtectSystem'), 'strict', `${unit}: ProtectSystem=strict`);
    t.match(value('ReadWritePaths'), /^\/var\/lib\/[a-z-]+$/, `${unit}: ReadWritePaths= the data folder`);
    t.equal(value('StateDirectoryMode'), '0700', `${unit}: the data folder is the service user's only`);
    t.equal(value('NoNewPrivileges'), 'yes', `${unit}: NoNewPrivileges`);
    t.equal(value('Restart'), 'on-failure', `${unit}: restart on failure`);
    t.equal(value('ExecReload'), '/bin/kill -HUP $MAINPID', `${unit}: reload is SIGHUP`);
    t.match(value('ExecStart'), /^\/usr\/bin\/node \/opt\/memento-archive\/bin\/[a-z-]+\.js /, `${unit}: ExecStart`);
  }
});

t.test('each unit: a file descriptor limit with room for 3 per proxy connection at the default max_connections (4096), and more', async (t) => {
  for (const unit of UNITS) {
    const text = readFileSync(path.join(repo, 'conf', 'systemd', unit), 'utf8');
    const limit = Number(/^LimitNOFILE=(\d+)$/m.exec(text)?.[1]);
    t.ok(limit >= 3 * 4096 + 1024, `${unit}: LimitNOFILE=${limit}`);
  }
});

t.test('the archive daemon takes SIGHUP (systemctl reload) without stopping, and says what it read', async (t) => {
  const { dir, config } = writeConfig();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const d = await startDaemon('memento-archive.js', ['serve', '--config', config]);
  t.teardown(() => d.stop());
  writeFileSync(config, readFileSync(config, 'utf8') + 'max_url_length: 1000\n');
  const said = new Promise<void>((resolve) => d.proc.stdout!.on('data', (c: Buffer) => /SIGHUP/.test(String(c)) && resolve()));
  d.proc.kill('SIGHUP');
  await said;
  t.equal((await request(`${d.url}/healthz`)).status, 200, 'still serving');
  const line = d
    .output()
    .split('\n')
    .find((l) => l.includes('SIGHUP'));
  t.match(JSON.parse(line!), { level: 'info', changed: ['maxUrlLength'] }, 'it names the setting that takes effect at the next start');
});

t.test(
  'the service install (docs/operations.md) makes the PUT token: one random token as put_tokens and ArchiveToken, in files only root and their daemon read',
  async (t) => {
    const page = readFileSync(path.join(repo, 'docs', 'operations.md'), 'utf8');
    const start = page.indexOf('\n## Run as a service\n');
    t.ok(start >= 0, 'docs/operations.md has the section "Run as a service"');
    const section = page.slice(start, page.indexOf('\n## ', start + 1));
    const block = /```sh\n([\s\S]*?)```/.exec(section)![1];
    const lines = block.split('\n');
    t.ok(
      lines.some((l) => /^sudo install -m 0640 -o root -g memento conf\/archive\.yaml \/etc\/memento-archive\//.test(l)),
      'archive.yaml: 0640 root:memento',
    );
    t.ok(
      lines.some((l) => /^sudo install -m 0640 -o root -g capture-proxy conf\/vhosts\/sample\.yaml \/etc\/capture-proxy\/vhosts\/site\.yaml/.test(l)),
      'the vhost file: 0640 root:capture-proxy',
    );
    t.ok(
      lines.some((l) => /^sudo install -d -m 0750 -o root -g capture-proxy \/etc\/capture-proxy \/etc\/capture-proxy\/vhosts/.test(l)),
      'their folders 0750',
    );
    // Run the token lines on copies of the two files (no sudo, the paths moved into a temp folder).
    const dir = mkdtempSync(path.join(os.tmpdir(), 'install-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const archiveYaml = path.join(dir, 'archive.yaml');
    const site = path.join(dir, 'site.yaml');
    writeFileSync(archiveYaml, readFileSync(path.join(repo, 'conf', 'archive.yaml'), 'utf8').replace(/^data_dir: .*$/m, `data_dir: ${dir}/data`), {
      mode: 0o640,
    });
    writeFileSync(site, readFileSync(path.join(repo, 'conf', 'vhosts', 'sample.yaml')), { mode: 0o640 });
    const from = lines.findIndex((l) => l.startsWith('TOKEN='));
    const to = lines.findIndex((l) => l === 'unset TOKEN');
    t.ok(from >= 0 && to > from, 'the token lines');
    const script = lines
      .slice(from, to + 1)
      .join('\n')
      .replaceAll('sudo ', '')
      .replaceAll('/etc/memento-archive/archive.yaml', archiveYaml)
      .replaceAll('/etc/capture-proxy/vhosts/site.yaml', site);
    await run('/bin/sh', ['-c', script]);
    const { loadArchiveConfig } = await import('../../archive/config.js');
    const { loadVhostFile } = await import('../../proxy/config/vhost-file.js');
    const tokens = loadArchiveConfig(archiveYaml).putTokens;
    t.equal(tokens.length, 1, 'one put_tokens entry');
    t.match(tokens[0], /^[A-Za-z0-9+/]{40,}$/, 'of 32 random bytes');
    t.equal(loadVhostFile(site)[0].archiveToken, tokens[0], 'the vhost sends it as its ArchiveToken');
  },
);
