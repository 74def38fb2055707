/**
 * Runs the two daemons as a user does, through their bins, on configs
 * written to a temp folder; each listens on 127.0.0.1 port 0 and the
 * address is read from the one line it prints.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface Daemon {
  url: string;
  proc: ChildProcess;
  /** Everything the process printed so far (stdout and stderr). */
  output(): string;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<void>;
}

/**
 * Starts `node bin/<bin> ...args` and resolves once it prints
 * `listening on http://…`; with `openFiles`, under that open-file limit
 * (`ulimit -n`, as systemd's `LimitNOFILE` sets it).
 *
 * @throws when the process exits first, or prints nothing of the kind in 60 s.
 */
export function startDaemon(bin: 'memento-archive.js' | 'capture-proxy.js', args: string[], opts: { openFiles?: number } = {}): Promise<Daemon> {
  const argv = [path.join(repo, 'bin', bin), ...args];
  const proc =
    opts.openFiles === undefined
      ? spawn(process.execPath, argv, { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn('/bin/sh', ['-c', `ulimit -n ${opts.openFiles} && exec "$0" "$@"`, process.execPath, ...argv], { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${bin} did not say where it listens within 60 s:\n${out}`)), 60_000);
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({
          url: m[1].replace(/\/$/, ''),
          proc,
          output: () => out,
          stop: async () => {
            if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
            await exited;
          },
        });
      }
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${bin} exited (${code}) before listening:\n${out}`));
    });
  });
}
