#!/usr/bin/env node
// `npm start`: the archive daemon, the capture proxy and the sample content
// site, on the sample config in conf/. Each child's output is prefixed with
// its name; SIGINT/SIGTERM stop all three; if one exits, the others are
// stopped too.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const children = [
  ['archive', ['bin/memento-archive.js', 'serve', '--config', 'conf/archive.yaml']],
  ['proxy', ['bin/capture-proxy.js', '--config', 'conf/proxy.yaml']],
  ['site', ['bin/sample-site.js', '--root', 'conf/sample-site', '--listen', '127.0.0.1:8081']],
].map(([name, args]) => {
  const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  for (const stream of [child.stdout, child.stderr]) {
    let rest = '';
    stream.on('data', (d) => {
      const lines = (rest + d).split('\n');
      rest = lines.pop();
      for (const l of lines) process.stdout.write(`[${name}] ${l}\n`);
    });
  }
  child.on('exit', (code, signal) => {
    process.stdout.write(`[${name}] exited (${signal ?? code})\n`);
    stopAll();
  });
  return child;
});

let stopping = false;
function stopAll() {
  if (stopping) return;
  stopping = true;
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
}
process.on('SIGINT', stopAll);
process.on('SIGTERM', stopAll);
process.stdout.write('Open http://127.0.0.1:8080/ (the proxy). Mementos: http://127.0.0.1:8090/tg/http://127.0.0.1:8080/\n');
