#!/usr/bin/env node
// `npm start`: the archive daemon, the capture proxy and the sample content
// site, on the sample config in conf/ (the site listens where the sample
// vhost's `upstream` says). Each child's output is prefixed with its name.
//
// The archive starts first: the proxy and the site start only once its
// `GET /healthz` answers 200 (so that the first page loaded is stored at
// once, not spooled until the archive listens); then, once the proxy
// listens, start.js prints where to look: the proxy (the sample site
// through it) and the archive's pages (`/web/`). An archive not healthy
// within 30 s is reported and everything stops (exit 1).
//
// SIGINT/SIGTERM stop all three (exit 0). If one exits by itself (a config
// error, a port in use…), the others are stopped too and start.js exits
// with that child's status (1 if it had none); a child that does not stop
// within 10 s of SIGTERM is killed.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** How long the archive has to answer its health check with 200. */
const HEALTH_WAIT_MS = 30_000;

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
const children = [];

/**
 * Starts `node <args>` as the child `name`, its output lines prefixed.
 * @returns the child, with `line(re)`: a promise of the first line of its
 *   output matching `re` (its match), or `null` when the child's output
 *   ends first (then everything stops)
 */
function startChild(name, args) {
  const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  const waiters = [];
  const onLine = (l) => {
    process.stdout.write(`[${name}] ${l}\n`);
    for (const w of [...waiters]) {
      const m = w.re.exec(l);
      if (!m) continue;
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve(m);
    }
  };
  for (const stream of [child.stdout, child.stderr]) {
    let rest = '';
    stream.on('data', (d) => {
      const lines = (rest + d).split('\n');
      rest = lines.pop();
      for (const l of lines) onLine(l);
    });
    stream.on('end', () => rest && onLine(rest));
  }
  child.on('error', (err) => {
    process.stdout.write(`[${name}] could not be started: ${err.message}\n`);
    status ||= 1;
    process.exitCode = status;
    stopAll();
  });
  child.on('close', () => {
    for (const w of waiters.splice(0)) w.resolve(null);
  });
  child.on('exit', (code, signal) => {
    process.stdout.write(`[${name}] exited (${signal ?? code})\n`);
    // Exiting by itself is a failure; so is a non-zero status while stopping.
    if (!stopping) status ||= code || 1;
    else if (code) status ||= code;
    process.exitCode = status;
    stopAll();
  });
  child.line = (re) => new Promise((resolve) => waiters.push({ re, resolve }));
  children.push(child);
  return child;
}

/** One `GET <base>/healthz`: its status and body (status 0 and the error's message when it could not be asked). */
function healthz(base) {
  return new Promise((resolve) => {
    const req = http.get(`${base}/healthz`, { timeout: 5000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body = (body + d).slice(0, 2000)));
      res.on('end', () => resolve({ status: res.statusCode, body: body.trim() }));
      res.on('error', (err) => resolve({ status: 0, body: err.message }));
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 5 s')));
    req.on('error', (err) => resolve({ status: 0, body: err.message }));
  });
}

/** Asks the archive's health check until it answers 200 (true), or {@link HEALTH_WAIT_MS} pass or start.js stops (false). */
async function archiveHealthy(base) {
  const until = Date.now() + HEALTH_WAIT_MS;
  let last;
  while (!stopping) {
    last = await healthz(base);
    if (last.status === 200) return true;
    if (Date.now() > until) break;
    await delay(200);
  }
  if (!stopping)
    process.stdout.write(`[start] the archive is not healthy after ${HEALTH_WAIT_MS / 1000} s (${last.status || 'no answer'}: ${last.body}); stopping\n`);
  return false;
}

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

const archive = startChild('archive', ['bin/memento-archive.js', 'serve', '--config', 'conf/archive.yaml']);
const listening = await archive.line(/^memento-archive listening on (\S+)/);
const archiveUrl = listening?.[1];
if (archiveUrl && !(await archiveHealthy(archiveUrl)) && !stopping) {
  status ||= 1;
  process.exitCode = status;
  stopAll();
}
if (archiveUrl && !stopping) {
  const proxy = startChild('proxy', ['bin/capture-proxy.js', '--config', 'conf/proxy.yaml']);
  const site = startChild('site', ['bin/sample-site.js', '--root', 'conf/sample-site', '--listen', siteListen()]);
  const [proxyLine, siteLine] = await Promise.all([proxy.line(/^capture-proxy listening on (\S+)/), site.line(/^sample-site serving /)]);
  const proxyUrl = proxyLine?.[1];
  if (proxyUrl && siteLine && !stopping)
    process.stdout.write(
      `\nReady.\n` +
        `  The sample site through the capture proxy (every page you load is archived): ${proxyUrl}/\n` +
        `  The archive's pages (search, calendars, replay of what it holds):            ${archiveUrl}/web/\n\n`,
    );
}
