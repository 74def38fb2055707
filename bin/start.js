#!/usr/bin/env node
// `npm start`: the archive daemon, the capture proxy and the sample content
// site, on the sample config in conf/ (the site listens where the sample
// vhost's `upstream` says). Each child's output is prefixed with its name.
// SIGINT/SIGTERM stop all three (exit 0). If one exits by itself (a config
// error, a port in use…), the others are stopped too and start.js exits
// with that child's status (1 if it had none); a child that does not stop
// within 10 s of SIGTERM is killed.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** `host:port` of the sample vhost's upstream: where the sample site listens. */
function siteListen() {
  const fallback = '127.0.0.1:8081';
  try {
    const vhost = parse(readFileSync(path.join(root, 'conf', 'vhosts', 'sample.yaml'), 'utf8'));
    const u = new URL(String(vhost?.upstream));
    return u.protocol === 'http:' ? `${u.hostname}:${u.port || 80}` : fallback;
  } catch {
    return fallback; // the proxy says what is wrong with the file
  }
}

let stopping = false;
let status = 0;
const children = [
  ['archive', ['bin/memento-archive.js', 'serve', '--config', 'conf/archive.yaml']],
  ['proxy', ['bin/capture-proxy.js', '--config', 'conf/proxy.yaml']],
  ['site', ['bin/sample-site.js', '--root', 'conf/sample-site', '--listen', siteListen()]],
].map(([name, args]) => {
  const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  for (const stream of [child.stdout, child.stderr]) {
    let rest = '';
    stream.on('data', (d) => {
      const lines = (rest + d).split('\n');
      rest = lines.pop();
      for (const l of lines) process.stdout.write(`[${name}] ${l}\n`);
    });
    stream.on('end', () => rest && process.stdout.write(`[${name}] ${rest}\n`));
  }
  child.on('error', (err) => {
    process.stdout.write(`[${name}] could not be started: ${err.message}\n`);
    status ||= 1;
    process.exitCode = status;
    stopAll();
  });
  child.on('exit', (code, signal) => {
    process.stdout.write(`[${name}] exited (${signal ?? code})\n`);
    // Exiting by itself is a failure; so is a non-zero status while stopping.
    if (!stopping) status ||= code || 1;
    else if (code) status ||= code;
    process.exitCode = status;
    stopAll();
  });
  return child;
});

function stopAll() {
  if (stopping) return;
  stopping = true;
  for (const c of children) {
    if (c.exitCode !== null || c.signalCode !== null) continue;
    c.kill('SIGTERM');
    setTimeout(() => c.exitCode === null && c.signalCode === null && c.kill('SIGKILL'), 10_000).unref();
  }
}

process.on('SIGINT', stopAll);
process.on('SIGTERM', stopAll);
process.stdout.write('Open http://127.0.0.1:8080/ (the proxy). Mementos: http://127.0.0.1:8090/tg/http://localhost:8080/\n');
