/**
 * The README's commands pass SIGTERM on to the daemons they start:
 * `npx memento-archive serve`, `npx capture-proxy` and `npm start`, each
 * stopped with SIGTERM sent to npm's own process (as `kill <pid>`, a
 * process supervisor or a CI job does), leave no process behind and each
 * daemon logs its clean stop. npm hands the signal to its child; the
 * repository's `.npmrc` (`script-shell=/bin/bash`) makes that child the
 * daemon itself (bash execs the command, Debian's dash would stay in
 * between, die, and orphan the daemon).
 *
 * Each run happens in a copy of the repository's layout in a temp folder
 * (package.json, .npmrc, bin/ and node_modules linked), with configs on
 * free ports: never the shipped config's fixed ones.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { copyFile, mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import t, { type Test } from 'tap';
import { repo } from '../helpers/daemons.js';
import { freePort, tempDir } from '../proxy/helpers.js';

/** The pids of every descendant of `pid` (Linux /proc: each task's `children`). */
function descendants(pid: number): number[] {
  let kids: number[];
  try {
    kids = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
  return kids.flatMap((k) => [k, ...descendants(k)]);
}

/** Whether process `pid` still runs (a zombie counts as gone). */
function alive(pid: number): boolean {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

/** A temp root laid out as the repository (package.json, .npmrc, bin/, node_modules), with `files` written into it. */
async function fakeRoot(t: Test, files: Record<string, string>): Promise<string> {
  const root = await tempDir(t, 'npm-signals-');
  for (const f of ['package.json', '.npmrc']) await copyFile(path.join(repo, f), path.join(root, f));
  for (const d of ['bin', 'archive', 'proxy', 'shared', 'node_modules']) await symlink(path.join(repo, d), path.join(root, d));
  for (const [f, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, f)), { recursive: true });
    await writeFile(path.join(root, f), text);
  }
  return root;
}

/**
 * Runs `npm <args>` in `root` until its output matches every one of
 * `ready`, sends SIGTERM to npm's process alone, and checks that npm and
 * every process under it are gone within 30 s.
 *
 * @returns what was printed
 */
async function stopWithSigterm(t: Test, root: string, args: string[], ready: RegExp[]): Promise<string> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('npm_') && !k.startsWith('TAP') && k !== 'NODE_OPTIONS'));
  const npm: ChildProcess = spawn('npm', args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  npm.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  npm.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = once(npm, 'exit');
  let tree: number[] = [];
  t.teardown(() => {
    for (const p of [npm.pid!, ...tree]) if (alive(p)) process.kill(p, 'SIGKILL');
  });
  const deadline = Date.now() + 120_000;
  while (!ready.every((re) => re.test(out))) {
    if (npm.exitCode !== null || Date.now() > deadline) throw new Error(`npm ${args.join(' ')} did not get ready:\n${out}`);
    await delay(100);
  }
  tree = descendants(npm.pid!);
  t.ok(tree.length > 0, `npm ${args.join(' ')}: it runs ${tree.length} process(es) under npm`);
  npm.kill('SIGTERM');
  await exited;
  const gone = Date.now() + 30_000;
  while (tree.some(alive) && Date.now() < gone) await delay(100);
  t.same(
    tree.filter(alive).map((p) => `${p} ${readFileSync(`/proc/${p}/cmdline`, 'utf8').replace(/\0/g, ' ')}`),
    [],
    `npm ${args.join(' ')}: nothing left running after SIGTERM to npm`,
  );
  return out;
}

t.test('npx memento-archive serve and npx capture-proxy stop with SIGTERM sent to npm', async (t) => {
  const archivePort = await freePort();
  const root = await fakeRoot(t, {
    'conf/archive.yaml': `listen: 127.0.0.1:${archivePort}\ndata_dir: ../data/archive\narchives:\n  - id: current\n`,
    'conf/proxy.yaml': 'listen: 127.0.0.1:0\nvhosts: vhosts/\nspool: ../data/spool\n',
    'conf/vhosts/a.yaml': `server_name: a.example\nupstream: http://127.0.0.1:1\nArchivePort: ${archivePort}\n`,
  });
  const archive = await stopWithSigterm(t, root, ['exec', '--', 'memento-archive', 'serve', '--config', 'conf/archive.yaml'], [/listening on http/]);
  t.match(archive, /"signal":"SIGTERM".*\n.*"msg":"stopped"/, 'the archive logged its clean stop');
  const proxy = await stopWithSigterm(t, root, ['exec', '--', 'capture-proxy', '--config', 'conf/proxy.yaml'], [/listening on http/]);
  t.match(proxy, /"signal":"SIGTERM"[\s\S]*"msg":"stopped"/, 'the proxy logged its clean stop');
});

t.test('npm start stops the archive, the proxy and the sample site with SIGTERM sent to npm', async (t) => {
  const [archivePort, sitePort] = [await freePort(), await freePort()];
  const conf = async (f: string) => readFile(path.join(repo, 'conf', f), 'utf8');
  const root = await fakeRoot(t, {
    'conf/archive.yaml': (await conf('archive.yaml')).replace(/^listen: \S+/m, `listen: 127.0.0.1:${archivePort}`),
    'conf/proxy.yaml': (await conf('proxy.yaml')).replace(/^listen: \S+/m, 'listen: 127.0.0.1:0').replace(/^admin_listen: \S+/m, 'admin_listen: off'),
    'conf/vhosts/sample.yaml': (await conf('vhosts/sample.yaml'))
      .replace(/^upstream: \S+/m, `upstream: http://127.0.0.1:${sitePort}`)
      .replace(/^ArchivePort: \S+/m, `ArchivePort: ${archivePort}`)
      .replace(/^ArchiveTimeGate: \S+/m, `ArchiveTimeGate: 127.0.0.1:${archivePort}/tg/`),
  });
  await symlink(path.join(repo, 'conf', 'sample-site'), path.join(root, 'conf', 'sample-site'));
  const out = await stopWithSigterm(t, root, ['start'], [/\[proxy\] capture-proxy listening/, /\[site\] sample-site serving/]);
  for (const name of ['archive', 'proxy', 'site']) t.match(out, `[${name}] exited (0)`, `${name} stopped cleanly`);
});
