/**
 * Hot reload of the vhosts folder, as a sysadmin does it: edit a file and
 * new requests follow it; a broken edit is logged with file:line and the
 * last good config keeps serving; requests in flight finish on the config
 * they started with; a removed file stops serving. And the command line:
 * one "listening" line, config errors with file:line, SIGHUP, SIGTERM.
 */

import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, rename, rm, symlink, truncate, writeFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import type { ReloadEvent, VhostRegistry } from '../../proxy/vhosts.js';
import { repo, startDaemon } from '../helpers/daemons.js';
import { get, startTestProxy, startUpstream, tempDir, vhostYaml, waitFor } from './helpers.js';

const execFileP = promisify(execFile);

/** The next 'reload' event for `file`. */
function reloaded(vhosts: VhostRegistry, file: string): Promise<ReloadEvent> {
  return new Promise((resolve) => {
    const on = (e: ReloadEvent) => {
      if (e.file !== file) return;
      vhosts.off('reload', on);
      resolve(e);
    };
    vhosts.on('reload', on);
  });
}

t.test('editing a vhost file: new requests go to the new upstream; a bad edit keeps the last good config', async (t) => {
  const one = await startUpstream(t, (_req, res) => res.end('one'));
  const two = await startUpstream(t, (_req, res) => res.end('two'));
  const { proxy, dir, logs } = await startTestProxy(
    t,
    { 'site.yaml': vhostYaml({ server_name: 'a.example', upstream: one.url, EnableArchiving: 'Off' }) },
    { watch: true },
  );
  const file = path.join(dir, 'site.yaml');
  t.equal((await get(proxy.url, '/', 'a.example')).body.toString(), 'one');

  let ev = reloaded(proxy.vhosts, file);
  await writeFile(file, vhostYaml({ server_name: 'a.example', upstream: two.url, EnableArchiving: 'Off' }));
  t.match(await ev, { ok: true, names: ['a.example'] });
  t.equal((await get(proxy.url, '/', 'a.example')).body.toString(), 'two', 'new upstream after the reload');

  ev = reloaded(proxy.vhosts, file);
  await writeFile(file, `server_name: a.example\nupstream: ${one.url}\nArchivePort: 99999\n`);
  const bad = await ev;
  t.equal(bad.ok, false);
  t.equal(bad.error, `${file}:3: ArchivePort must be a port number 1-65535, not 99999`);
  t.ok(
    logs.some((e) => e.level === 'error' && e.error === bad.error && /last good config keeps serving/.test(e.msg)),
    'logged with file:line: reason',
  );
  t.equal((await get(proxy.url, '/', 'a.example')).body.toString(), 'two', 'the last good config keeps serving');

  ev = reloaded(proxy.vhosts, file);
  await writeFile(file, 'server_name: a.example\nupstream: [broken\n');
  t.match(await ev, { ok: false, error: new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:\\d+: `) }, 'YAML syntax errors too');
  t.equal((await get(proxy.url, '/', 'a.example')).body.toString(), 'two');

  const other = path.join(dir, 'other.yaml');
  ev = reloaded(proxy.vhosts, other);
  await writeFile(other, vhostYaml({ server_name: 'A.example', upstream: one.url }));
  t.match(
    await ev,
    { ok: false, error: /other\.yaml:1: host name "a\.example" is already served by the vhost at .*site\.yaml:1/ },
    'a second file cannot take a served name',
  );

  ev = reloaded(proxy.vhosts, other);
  await writeFile(other, vhostYaml({ server_name: 'b.example', upstream: one.url }));
  t.match(await ev, { ok: true, names: ['b.example'] });
  t.equal((await get(proxy.url, '/', 'b.example')).body.toString(), 'one', 'a new file serves');

  ev = reloaded(proxy.vhosts, other);
  await rm(other);
  t.match(await ev, { ok: true, removed: true });
  t.equal((await get(proxy.url, '/', 'b.example')).status, 421, 'a removed file stops serving');

  // An editor that saves by writing a temp file and renaming it over the old one.
  ev = reloaded(proxy.vhosts, file);
  await writeFile(path.join(dir, '.site.yaml.swp'), vhostYaml({ server_name: 'a.example', upstream: one.url, EnableArchiving: 'Off' }));
  await rename(path.join(dir, '.site.yaml.swp'), file);
  t.match(await ev, { ok: true });
  t.equal((await get(proxy.url, '/', 'a.example')).body.toString(), 'one', 'atomic save is picked up');
});

t.test('a request in flight finishes on the vhost it started with', async (t) => {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let arrived!: () => void;
  const inFlight = new Promise<void>((resolve) => (arrived = resolve));
  const one = await startUpstream(t, (_req, res) => {
    arrived();
    void held.then(() => res.end('one'));
  });
  const two = await startUpstream(t, (_req, res) => res.end('two'));
  const { proxy, dir } = await startTestProxy(
    t,
    { 'site.yaml': vhostYaml({ server_name: 'a.example', upstream: one.url, Excluded: '/', ArchiveTimeGate: 'old.example/tg/' }) },
    { watch: true },
  );
  const file = path.join(dir, 'site.yaml');
  const first = get(proxy.url, '/slow', 'a.example');
  await inFlight;
  const ev = reloaded(proxy.vhosts, file);
  await writeFile(file, vhostYaml({ server_name: 'a.example', upstream: two.url, Excluded: '/', ArchiveTimeGate: 'new.example/tg/' }));
  await ev;
  const second = await get(proxy.url, '/fast', 'a.example');
  t.equal(second.body.toString(), 'two');
  t.equal(second.headers.link, '<http://new.example/tg/http://a.example/fast>; rel="timegate"');
  release();
  const r = await first;
  t.equal(r.body.toString(), 'one', 'answered by the old upstream');
  t.equal(r.headers.link, '<http://old.example/tg/http://a.example/slow>; rel="timegate"', "with the old vhost's TimeGate");
});

t.test('close() stops the watcher: a process using the proxy exits by itself', async (t) => {
  const dir = await tempDir(t);
  await mkdir(path.join(dir, 'vhosts'));
  await writeFile(path.join(dir, 'vhosts', 'a.yaml'), vhostYaml({ server_name: 'a.example', upstream: 'http://127.0.0.1:1' }));
  const script = `
    import { startProxy } from ${JSON.stringify(path.join(repo, 'proxy/server.ts'))};
    const p = await startProxy({ file: 'x', listen: { host: '127.0.0.1', port: 0 }, vhostsDir: ${JSON.stringify(path.join(dir, 'vhosts'))}, spoolDir: ${JSON.stringify(path.join(dir, 'spool'))} });
    await p.close();
    console.log('closed');
  `;
  const { stdout } = await execFileP(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: repo, timeout: 30_000 });
  t.equal(stdout.trim(), 'closed', 'the process exited on its own after close()');
});

t.test('capture-proxy command: listening line, SIGHUP reload, SIGTERM exits 0', async (t) => {
  const site = await startUpstream(t, (_req, res) => res.end('site'));
  const dir = await tempDir(t);
  await mkdir(path.join(dir, 'vhosts'));
  await writeFile(path.join(dir, 'proxy.yaml'), 'listen: 127.0.0.1:0\nvhosts: vhosts/\nspool: spool/\n');
  await writeFile(path.join(dir, 'vhosts', 'a.yaml'), vhostYaml({ server_name: 'a.example', upstream: site.url, EnableArchiving: 'Off' }));
  const proxy = await startDaemon('capture-proxy.js', ['--config', path.join(dir, 'proxy.yaml')]);
  t.teardown(() => proxy.stop());
  t.match(proxy.output(), /^capture-proxy listening on http:\/\/127\.0\.0\.1:\d+\n/, 'one line with the address first');
  const r = await get(proxy.url, '/', 'a.example');
  t.equal(r.body.toString(), 'site');

  proxy.proc.kill('SIGHUP');
  await new Promise<void>((resolve) => {
    const check = () => {
      if (/"msg":"SIGHUP: vhosts read again"/.test(proxy.output())) {
        proxy.proc.stdout!.off('data', check);
        resolve();
      }
    };
    proxy.proc.stdout!.on('data', check);
    check();
  });
  const lines = proxy
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  t.ok(
    lines.some((l) => l.msg === 'vhost file loaded' && String(l.file).endsWith('a.yaml')),
    'SIGHUP reads the vhost files again',
  );
  t.match(
    lines.find((l) => l.type === 'request'),
    {
      level: 'info',
      time: /^\d{4}-\d\d-\d\dT/,
      msg: 'request',
      method: 'GET',
      host: 'a.example',
      target: '/',
      status: 200,
      bytes: 4,
      ms: Number,
      vhost: 'a.example',
      capture: 'no: archiving-off',
    },
    'one JSON line per request (pino): vhost, status, bytes, duration, capture',
  );

  const exit = once(proxy.proc, 'exit');
  proxy.proc.kill('SIGTERM');
  const [code] = await exit;
  t.equal(code, 0, 'SIGTERM: exit status 0');
});

t.test('capture-proxy command: --help, and a config error names file:line', async (t) => {
  const help = await execFileP(process.execPath, [path.join(repo, 'bin/capture-proxy.js'), '--help'], { cwd: repo });
  t.match(help.stdout, /usage: capture-proxy \[--config FILE\]/);
  t.match(help.stdout, /--config FILE/);

  const dir = await tempDir(t);
  await mkdir(path.join(dir, 'vhosts'));
  await writeFile(path.join(dir, 'proxy.yaml'), 'listen: 127.0.0.1:0\nvhosts: vhosts/\nrequest_timeout: soon\n');
  const err = await execFileP(process.execPath, [path.join(repo, 'bin/capture-proxy.js'), '--config', path.join(dir, 'proxy.yaml')], { cwd: repo }).then(
    () => null,
    (e: { code: number; stderr: string }) => e,
  );
  t.equal(err?.code, 2, 'a bad proxy.yaml: exit status 2');
  t.equal(err?.stderr, `capture-proxy: ${path.join(dir, 'proxy.yaml')}:3: request_timeout must be a number of seconds greater than 0, not "soon"\n`);
});

t.test('capture-proxy command: a bad vhost file at start is refused with file:line, the other files serve', async (t) => {
  const site = await startUpstream(t, (_req, res) => res.end('site'));
  const dir = await tempDir(t);
  await mkdir(path.join(dir, 'vhosts'));
  await writeFile(path.join(dir, 'proxy.yaml'), 'listen: 127.0.0.1:0\nvhosts: vhosts/\nspool: spool/\n');
  const bad = path.join(dir, 'vhosts', 'a.yaml');
  await writeFile(bad, 'server_name: a.example\nupstream: http://127.0.0.1:1\nEnableIP: Of\n');
  await writeFile(path.join(dir, 'vhosts', 'b.yaml'), vhostYaml({ server_name: 'b.example', upstream: site.url, EnableArchiving: 'Off' }));
  const proxy = await startDaemon('capture-proxy.js', ['--config', path.join(dir, 'proxy.yaml')]);
  t.teardown(() => proxy.stop());
  t.equal((await get(proxy.url, '/', 'b.example')).body.toString(), 'site', 'the good file serves');
  t.equal((await get(proxy.url, '/', 'a.example')).status, 421, 'the bad one serves nothing');
  const refused = proxy
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .find((l) => l.file === bad);
  t.match(
    refused,
    { level: 'error', msg: 'vhost file rejected; it serves nothing', error: `${bad}:3: EnableIP must be On or Off (or true/false), not "Of"` },
    'logged with file:line: reason',
  );
});

t.test('the sample config in conf/ loads', async (t) => {
  const { loadProxyConfig } = await import('../../proxy/config/proxy-file.js');
  const { VhostRegistry } = await import('../../proxy/vhosts.js');
  const config = loadProxyConfig(path.join(repo, 'conf/proxy.yaml'));
  t.same(config.listen, { host: '127.0.0.1', port: 8080 });
  const reg = await VhostRegistry.open(config.vhostsDir, { watch: false });
  const v = reg.lookup('localhost:8080')!;
  t.match(v, {
    serverName: 'localhost',
    names: ['localhost', '127.0.0.1'],
    isDefault: true,
    upstream: 'http://127.0.0.1:8081',
    enableArchiving: true,
    archiveHost: '127.0.0.1',
    archivePort: 8090,
    archivePath: '/put/',
    archiveTimeGate: 'http://127.0.0.1:8090/tg/',
    enableIP: true,
    excluded: ['/private'],
  });
  t.equal(reg.lookup('elsewhere.example'), v, 'it is the default vhost');
  await reg.close();
});

t.test('changing the config during a load: 0 failed requests, keep-alive connections kept', async (t) => {
  const one = await startUpstream(t, (_req, res) => res.end('one'));
  const two = await startUpstream(t, (_req, res) => res.end('two'));
  const { proxy, dir, logs } = await startTestProxy(
    t,
    { 'site.yaml': vhostYaml({ server_name: 'a.example', upstream: one.url, EnableArchiving: 'Off' }) },
    { watch: true },
  );
  const file = path.join(dir, 'site.yaml');
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  t.teardown(() => agent.destroy());
  const sockets = new Set<unknown>();
  let stop = false;
  let total = 0;
  const failures: string[] = [];
  const seen = new Set<string>();
  const worker = async () => {
    while (!stop) {
      const r = await new Promise<string>((resolve) => {
        const req = http.request({ host: '127.0.0.1', port: proxy.address.port, path: '/', agent, headers: { Host: 'a.example' } }, (res) => {
          sockets.add(req.socket);
          let body = '';
          res.on('data', (d: Buffer) => (body += d.toString()));
          res.on('end', () => resolve(res.statusCode === 200 ? body : `status ${res.statusCode}`));
          res.on('error', (e) => resolve(`error ${e.message}`));
        });
        req.on('error', (e) => resolve(`error ${e.message}`));
        req.end();
      });
      total++;
      if (r === 'one' || r === 'two') seen.add(r);
      else failures.push(r);
    }
  };
  const workers = Array.from({ length: 8 }, worker);
  const versions = [
    vhostYaml({ server_name: 'a.example', upstream: two.url, EnableArchiving: 'Off' }),
    'server_name: a.example\nupstream: http://127.0.0.1:1\nEnableArchiving: Onn\n', // rejected: the last good keeps serving
    vhostYaml({ server_name: 'a.example', upstream: one.url, EnableArchiving: 'Off' }),
  ];
  for (let i = 0; i < 12; i++) {
    const ev = reloaded(proxy.vhosts, file);
    await writeFile(file, versions[i % 3]);
    t.equal((await ev).ok, i % 3 !== 1, `change ${i + 1} ${i % 3 === 1 ? 'rejected' : 'applied'}`);
  }
  stop = true;
  await Promise.all(workers);
  t.same(failures, [], `0 failed requests out of ${total}`);
  t.ok(seen.has('one') && seen.has('two'), 'both upstreams answered');
  t.ok(sockets.size <= 8, `the load used ${sockets.size} keep-alive connections (no connection dropped by a reload)`);
  t.equal(await proxy.metrics.value('capture_proxy_reloads_total', { result: 'ok' }), 8, 'reloads counted');
  t.equal(await proxy.metrics.value('capture_proxy_reloads_total', { result: 'rejected' }), 4);
  t.ok(
    logs.some((e) => e.level === 'error' && typeof e.error === 'string' && e.error.startsWith(`${file}:3: EnableArchiving must be On or Off`)),
    'the bad version is logged with file:line: reason',
  );
});

t.test('SIGTERM: stops accepting, lets the request in flight finish, exits 0', async (t) => {
  let release!: () => void;
  let arrived!: () => void;
  const inFlight = new Promise<void>((resolve) => (arrived = resolve));
  const site = await startUpstream(t, (req, res) => {
    if (req.url === '/slow') {
      arrived();
      release = () => res.end('finished after SIGTERM');
      return;
    }
    res.end('fast');
  });
  const dir = await tempDir(t);
  await mkdir(path.join(dir, 'vhosts'));
  await writeFile(path.join(dir, 'proxy.yaml'), 'listen: 127.0.0.1:0\nvhosts: vhosts/\nspool: spool/\n');
  await writeFile(path.join(dir, 'vhosts', 'a.yaml'), vhostYaml({ server_name: 'a.example', upstream: site.url, EnableArchiving: 'Off' }));
  const proxy = await startDaemon('capture-proxy.js', ['--config', path.join(dir, 'proxy.yaml')]);
  t.teardown(() => proxy.stop());
  const slow = get(proxy.url, '/slow', 'a.example');
  await inFlight;
  const exit = once(proxy.proc, 'exit');
  proxy.proc.kill('SIGTERM');
  await waitFor('the proxy to stop accepting', () => /"msg":"stopping/.test(proxy.output()));
  const refused = await get(proxy.url, '/', 'a.example').then(
    () => 'answered',
    (e: NodeJS.ErrnoException) => e.code,
  );
  t.equal(refused, 'ECONNREFUSED', 'a new connection is refused');
  release();
  const r = await slow;
  t.equal(r.status, 200);
  t.equal(r.body.toString(), 'finished after SIGTERM', 'the request in flight finished');
  const [code] = await exit;
  t.equal(code, 0, 'exit status 0');
});

/** The JSON log lines a proxy command printed so far. */
function logLines(proxy: { output(): string }): Record<string, unknown>[] {
  return proxy
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** A YAML "billion laughs": 9 levels of 9 aliases each, 9^9 strings once expanded; its first alias is on line 2. */
function aliasBomb(): string {
  const lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]'];
  let prev = 'a';
  for (const n of 'bcdefghi') {
    lines.push(`${n}: &${n} [${Array(9).fill(`*${prev}`).join(', ')}]`);
    prev = n;
  }
  return lines.join('\n') + '\n';
}

/**
 * Hostile files in `dir`, each named `<prefix>-<kind>.yaml`, and the error
 * each must be refused with: an alias bomb, a link to /dev/zero, a link to
 * a 1 GiB (sparse) file, a named pipe, a typo, 60,000 brackets deep.
 */
async function hostileFiles(dir: string, prefix: string): Promise<Record<string, RegExp | string>> {
  const f = (kind: string) => path.join(dir, `${prefix}-${kind}.yaml`);
  await writeFile(f('bomb'), aliasBomb());
  await symlink('/dev/zero', f('zero'));
  const huge = path.join(dir, `${prefix}.huge`);
  await writeFile(huge, '');
  await truncate(huge, 2 ** 30);
  await symlink(huge, f('huge'));
  await execFileP('mkfifo', [f('fifo')]);
  await writeFile(f('typo'), 'server_name: typo.example\nupstream: http://127.0.0.1:1\nEnableIP: Of\n');
  await writeFile(f('deep'), `server_name: deep.example\nExcluded: ${'['.repeat(60_000)}\n`);
  return {
    [f('bomb')]: `${f('bomb')}:2: YAML aliases expand more than 100 times (an alias bomb?)`,
    [f('zero')]: `${f('zero')}: a device, not a regular file; only regular files are read`,
    [f('huge')]: `${f('huge')}: 1073741824 bytes, more than the 65536 a config file may have`,
    [f('fifo')]: `${f('fifo')}: a named pipe, not a regular file; only regular files are read`,
    [f('typo')]: `${f('typo')}:3: EnableIP must be On or Off (or true/false), not "Of"`,
    [f('deep')]: `${f('deep')}:2: more than 64 brackets open at once`,
  };
}

t.test(
  'hostile vhost files (alias bomb, link to /dev/zero or to a huge file, named pipe, typo): refused with file:line on start as on reload; the rest serve',
  async (t) => {
    const site = await startUpstream(t, (_req, res) => res.end('site'));
    const dir = await tempDir(t);
    const vhosts = path.join(dir, 'vhosts');
    await mkdir(vhosts);
    await writeFile(path.join(dir, 'proxy.yaml'), 'listen: 127.0.0.1:0\nvhosts: vhosts/\nspool: spool/\n');
    await writeFile(path.join(vhosts, 'good.yaml'), vhostYaml({ server_name: 'a.example', upstream: site.url, EnableArchiving: 'Off' }));
    await writeFile(path.join(vhosts, 'edited.yaml'), vhostYaml({ server_name: 'b.example', upstream: site.url, EnableArchiving: 'Off' }));
    const atStart = await hostileFiles(vhosts, 'start');
    const refusals = (proxy: { output(): string }) =>
      new Map(
        logLines(proxy)
          .filter((l) => l.level === 'error')
          .map((l) => [l.file, l.error]),
      );

    // Start: every hostile file is refused with its reason, the good ones serve.
    const proxy = await startDaemon('capture-proxy.js', ['--config', path.join(dir, 'proxy.yaml')]);
    t.teardown(() => proxy.stop());
    for (const [file, error] of Object.entries(atStart)) t.equal(refusals(proxy).get(file), error, `start: ${path.basename(file)} refused`);
    t.equal((await get(proxy.url, '/', 'a.example')).body.toString(), 'site', 'start: the good files serve');
    t.equal((await get(proxy.url, '/', 'typo.example')).status, 421, 'start: a refused file serves nothing');

    // Reload: the same files, and a good file edited into an alias bomb, are refused the same way; the proxy keeps serving.
    const atReload = await hostileFiles(vhosts, 'reload');
    const edited = path.join(vhosts, 'edited.yaml');
    await writeFile(edited, aliasBomb());
    const expected = { ...atStart, ...atReload, [edited]: `${edited}:2: YAML aliases expand more than 100 times (an alias bomb?)` };
    const before = logLines(proxy).length;
    proxy.proc.kill('SIGHUP');
    await waitFor('the SIGHUP reload', () => logLines(proxy).some((l) => l.msg === 'SIGHUP: vhosts read again'));
    const reloaded = new Map(
      logLines(proxy)
        .slice(before)
        .filter((l) => l.level === 'error')
        .map((l) => [l.file, l.error]),
    );
    for (const [file, error] of Object.entries(expected)) t.equal(reloaded.get(file), error, `reload: ${path.basename(file)} refused`);
    t.equal(proxy.proc.exitCode, null, 'the proxy is still running');
    t.equal((await get(proxy.url, '/', 'a.example')).body.toString(), 'site', 'reload: the good file serves');
    t.equal((await get(proxy.url, '/', 'b.example')).body.toString(), 'site', "reload: the bombed file's last good config serves");

    // Restart on the folder a reload refused files in: it starts, refusing the same files; the good one serves.
    await proxy.stop();
    const again = await startDaemon('capture-proxy.js', ['--config', path.join(dir, 'proxy.yaml')]);
    t.teardown(() => again.stop());
    for (const [file, error] of Object.entries(expected)) t.equal(refusals(again).get(file), error, `restart: ${path.basename(file)} refused`);
    t.equal((await get(again.url, '/', 'a.example')).body.toString(), 'site', 'restart: the good file serves');
  },
);

t.test('watching: a vhost file saved as an alias bomb, or replaced by a link to /dev/zero, is refused and the last good config serves', async (t) => {
  const site = await startUpstream(t, (_req, res) => res.end('site'));
  const { proxy, dir } = await startTestProxy(
    t,
    { 'site.yaml': vhostYaml({ server_name: 'a.example', upstream: site.url, EnableArchiving: 'Off' }) },
    { watch: true },
  );
  const file = path.join(dir, 'site.yaml');
  let ev = reloaded(proxy.vhosts, file);
  await writeFile(file, aliasBomb());
  t.match(await ev, { ok: false, error: `${file}:2: YAML aliases expand more than 100 times (an alias bomb?)`, names: ['a.example'] });
  t.equal((await get(proxy.url, '/', 'a.example')).body.toString(), 'site', 'the last good config serves');

  ev = reloaded(proxy.vhosts, file);
  await rm(file);
  await symlink('/dev/zero', file);
  t.match(await ev, { ok: false, error: `${file}: a device, not a regular file; only regular files are read` });
  t.equal((await get(proxy.url, '/', 'a.example')).body.toString(), 'site', 'replaced at once (as an editor saves): the last good config still serves');
});

t.test('capture_proxy_vhost_files_rejected counts the files refused at start and on reload, until they load or go', async (t) => {
  const site = await startUpstream(t, (_req, res) => res.end('site'));
  const { proxy, dir, logs } = await startTestProxy(
    t,
    {
      'good.yaml': vhostYaml({ server_name: 'a.example', upstream: site.url, EnableArchiving: 'Off' }),
      'bad.yaml': aliasBomb(),
    },
    { watch: true },
  );
  const bad = path.join(dir, 'bad.yaml');
  const rejected = () => proxy.metrics.value('capture_proxy_vhost_files_rejected');
  t.equal(await rejected(), 1, 'the bomb refused at start');
  t.ok(
    logs.some((e) => e.level === 'error' && e.file === bad && e.error === `${bad}:2: YAML aliases expand more than 100 times (an alias bomb?)`),
    'and logged with file:line',
  );
  t.equal((await get(proxy.url, '/', 'a.example')).body.toString(), 'site', 'the good file serves');

  let ev = reloaded(proxy.vhosts, bad);
  await writeFile(bad, vhostYaml({ server_name: 'b.example', upstream: site.url, EnableArchiving: 'Off' }));
  t.match(await ev, { ok: true, names: ['b.example'] });
  t.equal(await rejected(), 0, 'fixed: no file refused');

  const good = path.join(dir, 'good.yaml');
  ev = reloaded(proxy.vhosts, good);
  await writeFile(good, 'server_name: a.example\nupstream: nowhere\n');
  t.match(await ev, { ok: false });
  t.equal(await rejected(), 1, 'a bad edit counts');
  ev = reloaded(proxy.vhosts, good);
  await rm(good);
  t.match(await ev, { ok: true, removed: true });
  t.equal(await rejected(), 0, 'a removed file no longer counts');
});
