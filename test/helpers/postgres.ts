/**
 * A throwaway PostgreSQL server for tests (and the benches of the index in
 * PostgreSQL, bench/postgres-s3.ts): a new cluster (`initdb`) in a
 * temp folder, started with `pg_ctl` on a free port of 127.0.0.1 (its
 * socket in the same folder), one empty database per {@link
 * ThrowawayPostgres.database} call, and stopped and deleted by {@link
 * ThrowawayPostgres.stop}. `pg_ctl` detaches the server into a session of
 * its own, so a test process that ends without its teardown would leave it
 * running: the server is also stopped (by the pid in `postmaster.pid`)
 * when the test process exits or is ended by a signal; and one that a test
 * process killed hard (SIGKILL) left behind is stopped and deleted by the
 * next {@link startPostgres} (each folder names the process that made it).
 *
 * The server binaries are Debian's `postgresql` package's
 * (`/usr/lib/postgresql/<version>/bin`), or those in `$PG_BIN`, or on the
 * PATH. When none are found, {@link startPostgres} throws, so that the
 * PostgreSQL tests fail (they do not skip): CI installs the package.
 * Run as root, the cluster belongs to the `postgres` user (PostgreSQL
 * refuses to run as root) and the commands run through `runuser`.
 */
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

/** A running throwaway server. */
export interface ThrowawayPostgres {
  /** Its port on 127.0.0.1. */
  port: number;
  /** The postmaster's process id (the parent of every backend: the benches add up the CPU of its tree). */
  pid: number;
  /** A new empty database; its `postgres://` URL. */
  database(name: string): Promise<string>;
  /** Stops the server (immediate shutdown) and deletes its folder. */
  stop(): Promise<void>;
}

/** The signals that end a test process (tap's timeout sends SIGTERM). */
const SIGNALS: NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGHUP'];

/** The folder of `initdb` and `pg_ctl`; `undefined` when there is none. */
function serverBin(): string | undefined {
  const has = (dir: string) => existsSync(path.join(dir, 'initdb')) && existsSync(path.join(dir, 'pg_ctl'));
  if (process.env.PG_BIN) return has(process.env.PG_BIN) ? process.env.PG_BIN : undefined;
  const debian = '/usr/lib/postgresql';
  if (existsSync(debian)) {
    const versions = readdirSync(debian).sort((a, b) => Number(b) - Number(a));
    for (const v of versions) if (has(path.join(debian, v, 'bin'))) return path.join(debian, v, 'bin');
  }
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) if (dir && has(dir)) return dir;
  return undefined;
}

/** Prefix of the throwaway clusters' folders in the temp folder. */
const PREFIX = 'pg-test-';

/** Stops the server of cluster folder `dir` (SIGQUIT, immediate shutdown, to the pid in `postmaster.pid`), if one runs. Synchronous. */
function killServer(dir: string): void {
  try {
    const pid = Number(readFileSync(path.join(dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
    if (pid > 0) process.kill(pid, 'SIGQUIT');
  } catch {
    // not running
  }
}

/** Whether process `pid` is alive. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Stops and deletes the clusters whose test process is gone (killed hard, so that neither its teardown nor its exit handler ran). */
function sweepOrphans(): void {
  for (const name of readdirSync(os.tmpdir())) {
    if (!name.startsWith(PREFIX)) continue;
    const dir = path.join(os.tmpdir(), name);
    let owner: number;
    try {
      owner = Number(readFileSync(path.join(dir, 'owner.pid'), 'utf8'));
    } catch {
      continue;
    }
    if (owner > 0 && !alive(owner)) {
      killServer(dir);
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

/** A port of 127.0.0.1 free right now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/**
 * Makes and starts a throwaway cluster (user `postgres`, trust
 * authentication, no fsync: a test's data need not survive a power cut).
 * Its default collation is ICU's `en-US`, whose order of text is not
 * byte order, so that a query relying on the database's default
 * collation shows in the tests.
 * @throws when the server binaries are missing (the message says what to install), or the server does not start
 */
export async function startPostgres(): Promise<ThrowawayPostgres> {
  const bin = serverBin();
  if (!bin)
    throw new Error(
      'PostgreSQL server binaries (initdb, pg_ctl) not found in /usr/lib/postgresql/*/bin, $PG_BIN or the PATH: install them (Debian: apt-get install postgresql)',
    );
  sweepOrphans();
  const dir = mkdtempSync(path.join(os.tmpdir(), PREFIX));
  writeFileSync(path.join(dir, 'owner.pid'), String(process.pid));
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString());
    chownSync(dir, uid, gid);
  }
  const run = (cmd: string, args: string[]) => {
    const file = path.join(bin, cmd);
    return asRoot ? execFileSync('runuser', ['-u', 'postgres', '--', file, ...args], { stdio: 'pipe' }) : execFileSync(file, args, { stdio: 'pipe' });
  };
  const data = path.join(dir, 'data');
  const port = await freePort();
  let started = false;
  const kill = () => killServer(dir);
  const onExit = () => kill();
  // Ended by a signal, node runs no 'exit' handler: stop the server, then end as the signal would have.
  const onSignal = (signal: NodeJS.Signals) => {
    kill();
    removeHandlers();
    process.kill(process.pid, signal);
  };
  const removeHandlers = () => {
    process.removeListener('exit', onExit);
    for (const sig of SIGNALS) process.removeListener(sig, onSignal);
  };
  try {
    run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8', '--locale-provider=icu', '--icu-locale=en-US']);
    process.once('exit', onExit);
    for (const sig of SIGNALS) process.once(sig, onSignal);
    const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off`;
    run('pg_ctl', ['-D', data, '-l', path.join(dir, 'log'), '-o', opts, '-w', '-t', '60', 'start']);
    started = true;
  } catch (err) {
    kill();
    removeHandlers();
    const log = existsSync(path.join(dir, 'log')) ? readFileSync(path.join(dir, 'log'), 'utf8') : '';
    rmSync(dir, { recursive: true, force: true });
    const e = err as Error & { stderr?: Buffer };
    throw new Error(`throwaway PostgreSQL did not start: ${e.message}\n${e.stderr?.toString() ?? ''}${log}`, { cause: err });
  }
  const url = (db: string) => `postgres://postgres@127.0.0.1:${port}/${db}`;
  return {
    port,
    pid: Number(readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]),
    async database(name: string): Promise<string> {
      const c = new pg.Client({ connectionString: url('postgres') });
      await c.connect();
      try {
        await c.query(`CREATE DATABASE "${name.replace(/"/g, '')}"`);
      } finally {
        await c.end();
      }
      return url(name);
    },
    async stop(): Promise<void> {
      if (started) {
        try {
          run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
        } catch {
          kill();
        }
        started = false;
      }
      removeHandlers();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
