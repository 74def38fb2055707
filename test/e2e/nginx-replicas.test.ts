/**
 * One capture proxy, two archive replicas, one address: the shipped nginx
 * example (conf/nginx/memento-archive-replicas.conf, docs/scale-out.md
 * "One address for several replicas: nginx") in front of two replicas on
 * a throwaway PostgreSQL and s3rver. A site's pages go through the real
 * capture proxy, whose vhost names nginx as its archive; one replica is
 * killed with SIGKILL while PUTs stream, and every page ends up stored
 * exactly once (one memento per URL, none missing, none twice), readable
 * through nginx. The nginx config is the shipped file with only its
 * addresses changed, run by Debian's nginx on 127.0.0.1 in a temp prefix.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import t, { type Test } from 'tap';
import { request } from '../helpers/archive.js';
import { type Daemon, repo, startDaemon } from '../helpers/daemons.js';
import { startPostgres } from '../helpers/postgres.js';
import { startS3 } from '../helpers/s3.js';
import { writeConfig } from '../archive/helpers.js';
import { freePort, startTestProxy, startUpstream, tempDir, vhostYaml, waitFor } from '../proxy/helpers.js';

const PAGES = 240;
const NGINX = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((p) => existsSync(p));

/** The shipped example with its listen address and replica lines replaced, and the rest as it is. */
function nginxSite(listen: number, replicas: string[]): string {
  const shipped = readFileSync(path.join(repo, 'conf', 'nginx', 'memento-archive-replicas.conf'), 'utf8');
  const servers = /^( +)server 10\.0\.0\.11:8090( [^;]*);\n\s+server 10\.0\.0\.12:8090[^;]*;\n/m.exec(shipped);
  if (!servers) throw new Error('the shipped nginx example no longer has its two example replica lines');
  const site = shipped
    .replace(servers[0], replicas.map((r) => `${servers[1]}server ${r}${servers[2]};\n`).join(''))
    .replace(/^( +)listen 8090;/m, `$1listen 127.0.0.1:${listen};`);
  if (site === shipped || !site.includes(`listen 127.0.0.1:${listen};`)) throw new Error('the shipped nginx example no longer has "listen 8090;"');
  return site;
}

/** Runs nginx (not as a daemon) on the example in a temp prefix; stopped at the end of `t`. */
async function startNginx(t: Test, listen: number, replicas: string[]) {
  const prefix = await tempDir(t, 'nginx-');
  for (const d of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(path.join(prefix, d));
  writeFileSync(path.join(prefix, 'site.conf'), nginxSite(listen, replicas));
  const main = [
    'daemon off;',
    'worker_processes 1;',
    // As root, the workers would run as nobody and could not write the temp folders of this prefix.
    ...(process.getuid?.() === 0 ? ['user root;'] : []),
    `pid ${prefix}/nginx.pid;`,
    `error_log ${prefix}/error.log warn;`,
    'events { worker_connections 1024; }',
    'http {',
    '  access_log off;',
    ...['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((d) => `  ${d === 'body' ? 'client_body' : d}_temp_path ${prefix}/${d};`),
    `  include ${prefix}/site.conf;`,
    '}',
  ].join('\n');
  writeFileSync(path.join(prefix, 'nginx.conf'), main);
  const check = spawnSync(NGINX!, ['-t', '-p', prefix, '-c', path.join(prefix, 'nginx.conf')], { encoding: 'utf8' });
  if (check.status !== 0) throw new Error(`nginx -t: ${check.stderr}`);
  const proc = spawn(NGINX!, ['-p', prefix, '-c', path.join(prefix, 'nginx.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = once(proc, 'exit');
  t.teardown(async () => {
    if (proc.exitCode === null) proc.kill('SIGQUIT');
    await exited;
  });
  await waitFor(
    'nginx to listen',
    () =>
      new Promise<boolean>((resolve) => {
        const s = net.connect(listen, '127.0.0.1', () => (s.destroy(), resolve(true)));
        s.on('error', () => resolve(false));
      }),
  );
  return { errorLog: () => readFileSync(path.join(prefix, 'error.log'), 'utf8') };
}

/** GETs `paths` through the proxy, `concurrency` at a time; `after(n)` is called after each answer with how many came. */
async function browse(proxyUrl: string, host: string, paths: string[], concurrency: number, after: (n: number) => void): Promise<number[]> {
  const statuses: number[] = [];
  let next = 0;
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const one = (p: string) =>
    new Promise<number>((resolve, reject) => {
      const req = http.get(proxyUrl + p, { headers: { host }, agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
    });
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < paths.length) {
        statuses.push(await one(paths[next++]));
        after(statuses.length);
      }
    }),
  );
  agent.destroy();
  return statuses;
}

t.test(
  'two replicas behind the shipped nginx example: one killed mid-stream, every capture stored exactly once',
  { skip: NGINX ? false : 'nginx is not installed (apt-get install nginx)' },
  async (t) => {
    const server = await startPostgres();
    t.teardown(() => server.stop());
    const db = await server.database('lb');
    const s3 = await startS3();
    t.teardown(() => s3.close());
    const lbPort = await freePort();
    const keyDir = await tempDir(t, 'lb-key-');
    const replicaConfig = (name: string) => {
      const c = writeConfig(
        `base_url: http://127.0.0.1:${lbPort}\nsigning_key_file: ${JSON.stringify(path.join(keyDir, 'log-signing-key.pem'))}\n` +
          `${s3.storageYaml('lb/', name)}  index: ${db}\n`,
      );
      t.teardown(() => rmSync(c.dir, { recursive: true, force: true }));
      return c.config;
    };
    const replicas: Daemon[] = [];
    for (const name of ['web1', 'web2']) {
      const d = await startDaemon('memento-archive.js', ['--config', replicaConfig(name), '--quiet']);
      t.teardown(() => d.stop());
      replicas.push(d);
    }
    const nginx = await startNginx(
      t,
      lbPort,
      replicas.map((r) => new URL(r.url).host),
    );
    const lb = `http://127.0.0.1:${lbPort}`;

    // The site: each page its own body (and the Date a server sends: its Memento-Datetime).
    const site = await startUpstream(t, (req, res) => {
      res.setHeader('Content-Type', 'text/html');
      res.end(`<html><head><title>${req.url}</title></head><body>${req.url} ${'x'.repeat(20_000)}</body></html>`);
    });
    const { proxy } = await startTestProxy(
      t,
      { 'site.yaml': vhostYaml({ server_name: 'site.example', upstream: site.url, ArchiveHost: '127.0.0.1', ArchivePort: lbPort }) },
      {},
      { spoolRetryMinMs: 200, spoolRetryMaxMs: 1000 },
    );

    // Browse; a third of the way in, the first replica is killed (SIGKILL) while PUTs stream to both.
    const paths = Array.from({ length: PAGES }, (_, i) => `/page/${i}`);
    let killed = false;
    const statuses = await browse(proxy.url, 'site.example', paths, 8, (n) => {
      if (!killed && n >= PAGES / 3) {
        killed = true;
        replicas[0].proc.kill('SIGKILL');
      }
    });
    t.ok(killed, 'a replica was killed while the pages were browsed');
    t.same(
      statuses.filter((s) => s !== 200),
      [],
      'the site answered every page through the proxy',
    );

    // Every page is captured: whatever the proxy could not hand over at once waits in its spool and is sent again.
    const client = new pg.Client({ connectionString: db });
    await client.connect();
    t.teardown(() => client.end());
    const rows = async () =>
      (
        await client.query<{ uri_r: string; n: string }>(
          `SELECT uri_r, count(*) AS n FROM memento WHERE uri_r LIKE 'http://site.example/page/%' GROUP BY uri_r`,
        )
      ).rows;
    await waitFor('every page stored', async () => (await rows()).length === PAGES && proxy.spool.depth === 0, 120_000);
    const stored = await rows();
    t.equal(stored.length, PAGES, `${PAGES} pages, each stored`);
    t.same(
      stored.filter((r) => Number(r.n) !== 1).map((r) => `${r.uri_r}: ${r.n}`),
      [],
      'each stored exactly once: no second memento of a PUT sent again',
    );
    t.equal((await client.query<{ n: string }>('SELECT count(*) AS n FROM memento')).rows[0].n, String(PAGES), 'nothing else in the index');
    t.match(nginx.errorLog(), /upstream|connect\(\) failed|prematurely closed|reset by peer/, "nginx's log says it met the dead replica");
    // nginx sent on what the dead replica held: the proxy saw no failed PUT and spooled nothing.
    const retried = [...nginx.errorLog().matchAll(/upstream prematurely closed connection[^\n]*request: "PUT /g)].length;
    t.comment(`PUTs the killed replica held when it died, sent on by nginx: ${retried}`);
    const counter = async (name: string) => ((await proxy.metrics.registry.getSingleMetric(name)?.get())?.values ?? []).reduce((n, v) => n + v.value, 0);
    t.equal(await counter('capture_proxy_put_failures_total'), 0, 'no PUT failed for the proxy');
    t.equal(await counter('capture_proxy_captures_spooled_total'), 0, 'nothing spooled');

    // Read through nginx (on the replica left): a page's TimeMap and its memento's bytes as the site sent them.
    for (const i of [0, Math.floor(PAGES / 2), PAGES - 1]) {
      const uriR = `http://site.example/page/${i}`;
      const tm = await request(`${lb}/tg/timemap/${uriR}`);
      t.equal(tm.status, 200, `the TimeMap of ${uriR} through nginx`);
      const mementos = [...tm.text.matchAll(/<([^>]+)>; rel="[^"]*memento[^"]*"/g)].map((m) => m[1]);
      t.equal(mementos.length, 1, `one memento of ${uriR}`);
      const raw = await request(mementos[0].replace(/\/memento\/(\d{14})\//, '/memento/$1id_/'));
      t.equal(raw.status, 200);
      t.equal(raw.text, `<html><head><title>/page/${i}</title></head><body>/page/${i} ${'x'.repeat(20_000)}</body></html>`, 'its bytes');
    }
    t.same(spoolRejected(proxy), [], 'the proxy refused nothing for good');
  },
);

/** The files of the proxy spool's `rejected/` folder. */
function spoolRejected(proxy: { spool: { dir: string } }): string[] {
  const rejected = path.join(proxy.spool.dir, 'rejected');
  return existsSync(rejected) ? readdirSync(rejected) : [];
}
