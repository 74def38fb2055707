/**
 * `npm start` (bin/start.js) as a newcomer meets it: the quick start of the
 * README works (pages through the proxy become mementos under
 * http://localhost:<port>/, the sample vhost's canonical name); the
 * archive starts first and the proxy only once the archive's health check
 * answers, then both URLs are printed; and a child that fails stops the
 * others and makes start.js exit non-zero.
 *
 * start.js runs from a copy of the repository's layout in a temp folder
 * (bin/ and node_modules/ linked to the real ones, conf/ written by the test), so
 * that every daemon listens where the test says, never on the fixed ports
 * of the shipped config.
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { copyFile, mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t, { type Test } from 'tap';
import { repo } from '../helpers/daemons.js';
import { freePort, get, tempDir } from './helpers.js';

/** A temp root laid out as the repository: bin/ (start.js copied, the rest linked), conf/ from the shipped one with `edit` applied. */
async function fakeRoot(t: Test, edit: (conf: Record<string, string>) => void): Promise<string> {
  const root = await tempDir(t, 'start-');
  await mkdir(path.join(root, 'bin'));
  await mkdir(path.join(root, 'conf', 'vhosts'), { recursive: true });
  await copyFile(path.join(repo, 'bin', 'start.js'), path.join(root, 'bin', 'start.js'));
  for (const f of ['memento-archive.js', 'capture-proxy.js', 'sample-site.js']) await symlink(path.join(repo, 'bin', f), path.join(root, 'bin', f));
  await symlink(path.join(repo, 'conf', 'sample-site'), path.join(root, 'conf', 'sample-site'));
  await symlink(path.join(repo, 'node_modules'), path.join(root, 'node_modules'));
  const conf: Record<string, string> = {};
  for (const f of ['archive.yaml', 'proxy.yaml', 'vhosts/sample.yaml']) conf[f] = await readFile(path.join(repo, 'conf', f), 'utf8');
  edit(conf);
  for (const [f, text] of Object.entries(conf)) await writeFile(path.join(root, 'conf', f), text);
  return root;
}

/** The shipped config on free ports: archive on `archivePort`, proxy on any port, sample site on `sitePort`, no admin server. */
function onPorts(conf: Record<string, string>, archivePort: number, sitePort: number): void {
  conf['archive.yaml'] = conf['archive.yaml'].replace(/^listen: \S+/m, `listen: 127.0.0.1:${archivePort}`);
  conf['proxy.yaml'] = conf['proxy.yaml'].replace(/^listen: \S+/m, 'listen: 127.0.0.1:0').replace(/^admin_listen: \S+/m, 'admin_listen: off');
  conf['vhosts/sample.yaml'] = conf['vhosts/sample.yaml']
    .replace(/^upstream: \S+/m, `upstream: http://127.0.0.1:${sitePort}`)
    .replace(/^ArchivePort: \S+/m, `ArchivePort: ${archivePort}`)
    .replace(/^ArchiveTimeGate: \S+/m, `ArchiveTimeGate: 127.0.0.1:${archivePort}/tg/`);
}

/** Runs `node <root>/bin/start.js`; `output()` is what it printed so far, `until(re)` resolves once it printed a match. */
function runStart(t: Test, root: string) {
  const proc: ChildProcess = spawn(process.execPath, [path.join(root, 'bin', 'start.js')], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const waiters: [RegExp, (m: RegExpExecArray) => void, (e: Error) => void][] = [];
  const onData = (d: Buffer) => {
    out += d.toString();
    for (const w of [...waiters]) {
      const m = w[0].exec(out);
      if (m) {
        waiters.splice(waiters.indexOf(w), 1);
        w[1](m);
      }
    }
  };
  proc.stdout!.on('data', onData);
  proc.stderr!.on('data', onData);
  const exited = once(proc, 'exit').then(([code, signal]) => ({ code: code as number | null, signal: signal as string | null }));
  // Whatever is still awaited when start.js exits will never come.
  void exited.then(({ code, signal }) => {
    for (const w of waiters.splice(0)) w[2](new Error(`start.js exited (${signal ?? code}) before printing ${w[0]}:\n${out}`));
  });
  t.teardown(async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
    await exited;
  });
  return {
    proc,
    exited,
    output: () => out,
    until: (re: RegExp) => {
      const m = re.exec(out);
      return m ? Promise.resolve(m) : new Promise<RegExpExecArray>((resolve, reject) => waiters.push([re, resolve, reject]));
    },
  };
}

t.test('npm start: the quick start works: a page through the proxy becomes a memento of http://localhost:<port>/', async (t) => {
  const archivePort = await freePort();
  const sitePort = await freePort();
  const root = await fakeRoot(t, (conf) => onPorts(conf, archivePort, sitePort));
  const start = runStart(t, root);
  const [, proxyUrl] = await start.until(/\[proxy\] capture-proxy listening on (http:\/\/\S+)/);
  await start.until(/\[archive\] .*listening on http/);
  await start.until(/\[site\] sample-site serving/);
  const port = new URL(proxyUrl).port;
  // What a browser sends for http://127.0.0.1:<port>/ (the README says to open http://127.0.0.1:8080/).
  const logged = start.until(/\[proxy\] (\{[^\n]*"type":"request"[^\n]*)\n/);
  const page = await get(proxyUrl, '/', `127.0.0.1:${port}`);
  t.equal(page.status, 200, 'the sample site through the proxy');
  t.match(page.headers.link, `<http://127.0.0.1:${archivePort}/tg/http://localhost:${port}/>; rel="timegate"`, 'announced under the canonical name');
  t.equal((JSON.parse((await logged)[1]) as { capture: string }).capture, 'stored', 'the request line says the capture is stored');
  const tg = await get(`http://127.0.0.1:${archivePort}`, `/tg/http://localhost:${port}/`, `127.0.0.1:${archivePort}`);
  t.equal(tg.status, 302, 'the redirector knows the memento of http://localhost:<port>/');
  // The page's own links to its TimeGate, TimeMap and calendar (written for the shipped ports 8090 and 8080) lead to its history.
  const links = [...page.body.toString().matchAll(/href="http:\/\/127\.0\.0\.1:8090(\/[^"]*)"/g)].map((m) => m[1]);
  t.same(
    links,
    ['/tg/http://localhost:8080/', '/current/timemap/link/http://localhost:8080/', '/web/*/http://localhost:8080/'],
    "the sample page links to its history under the canonical name, as the proxy's Link does",
  );
  const [tgLink, tmLink, webLink] = links.map((l) => l.replace('localhost:8080', `localhost:${port}`));
  t.equal((await get(`http://127.0.0.1:${archivePort}`, tgLink, `127.0.0.1:${archivePort}`)).status, 302, "the page's TimeGate link: 302 to its memento");
  const tm = await get(`http://127.0.0.1:${archivePort}`, tmLink, `127.0.0.1:${archivePort}`);
  t.equal(tm.status, 200, "the page's TimeMap link");
  t.match(tm.body.toString(), `<http://localhost:${port}/>; rel="original"`);
  t.equal((await get(`http://127.0.0.1:${archivePort}`, webLink, `127.0.0.1:${archivePort}`)).status, 200, "the page's calendar link");
  const readme = await readFile(path.join(repo, 'README.md'), 'utf8');
  t.match(readme, 'http://127.0.0.1:8090/tg/http://localhost:8080/', 'the README sends the reader to the same URI-R');
  start.proc.kill('SIGTERM');
  t.same(await start.exited, { code: 0, signal: null }, 'Ctrl-C (SIGTERM): exits 0');
  for (const name of ['archive', 'proxy', 'site']) t.match(start.output(), `[${name}] exited (0)`, `${name} stopped`);
});

t.test('npm start: the archive first, the proxy once its health check answers 200; then both URLs are printed, the archive pages (/web/) too', async (t) => {
  const archivePort = await freePort();
  const sitePort = await freePort();
  const root = await fakeRoot(t, (conf) => onPorts(conf, archivePort, sitePort));
  const start = runStart(t, root);
  const [ready, proxyUrl, webUrl] = await start.until(
    /Ready\.\n {2}The sample site through the capture proxy.*: (http:\/\/\S+)\/\n {2}The archive's pages.*: +(http:\/\/\S+\/web\/)\n/,
  );
  const out = start.output();
  const at = (s: string | RegExp) => out.search(typeof s === 'string' ? s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') : s);
  const health = at(/\[archive\] \{[^\n]*"\/healthz"[^\n]*"status":200/);
  t.ok(at('[archive] memento-archive listening') >= 0, 'the archive listens');
  t.ok(health > at('[archive] memento-archive listening'), 'then its health check answers 200');
  t.ok(at('[proxy] ') > health, 'the proxy starts only after that');
  t.ok(at('[site] ') > health, 'and the site');
  t.ok(at(ready) > at('[proxy] capture-proxy listening'), 'the URLs are printed once the proxy listens');
  t.equal(webUrl, `http://127.0.0.1:${archivePort}/web/`, "the archive's pages");
  t.match(proxyUrl, /^http:\/\/127\.0\.0\.1:\d+$/, 'the proxy');
  t.equal((await get(webUrl, '', `127.0.0.1:${archivePort}`)).status, 200, 'the printed /web/ URL answers');
  const page = await get(proxyUrl, '/', new URL(proxyUrl).host);
  t.equal(page.status, 200, 'the printed proxy URL answers: the sample site');
});

t.test('npm start: an archive that does not start: the proxy and the site are never started', async (t) => {
  const archivePort = await freePort();
  const sitePort = await freePort();
  const root = await fakeRoot(t, (conf) => {
    onPorts(conf, archivePort, sitePort);
    conf['archive.yaml'] = conf['archive.yaml'].replace(/^data_dir: \S+/m, 'data_dri: ../data/archive');
  });
  const start = runStart(t, root);
  const { code } = await start.exited;
  t.match(start.output(), /\[archive\] .*archive\.yaml:\d+: unknown setting "data_dri" \(did you mean "data_dir"\?\)/, 'the archive says why');
  t.equal(code, 2, "start.js exits with the archive's status");
  t.notMatch(start.output(), /\[(proxy|site)\]/, 'nothing else was started');
  t.notMatch(start.output(), /Ready/);
});

t.test('npm start: a child that fails to start stops the others, and start.js exits non-zero', async (t) => {
  const archivePort = await freePort();
  const sitePort = await freePort();
  const root = await fakeRoot(t, (conf) => {
    onPorts(conf, archivePort, sitePort);
    conf['proxy.yaml'] = conf['proxy.yaml'].replace(/^spool_max_bytes: \S+/m, 'spool_max_bytes: lots');
  });
  const start = runStart(t, root);
  const { code } = await start.exited;
  t.match(start.output(), /\[proxy\] capture-proxy: .*proxy\.yaml:\d+: spool_max_bytes/, 'the proxy says what is wrong');
  t.not(code, 0, `start.js exits non-zero (${code})`);
  t.equal(code, 2, "with the failed child's exit status");
  for (const name of ['archive', 'proxy', 'site']) t.match(start.output(), new RegExp(`\\[${name}\\] exited`), `${name} is not left running`);
});
