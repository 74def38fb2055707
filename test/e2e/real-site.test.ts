/**
 * The whole path on a real site (issue 2, part 5): the Apache HTTP Server
 * manual (Debian's apache2-doc) served by serve-static, the capture proxy in
 * front of it, crawled through the proxy by `wget --mirror`, and every page
 * found again in the archive through the redirector, the TimeGate and the
 * Memento (whose raw form is the bytes the site sent); the TimeMaps list
 * them; the WARC files parse with warcio. A
 * second crawl after one page changed makes exactly one new memento.
 */

import { createReadStream } from 'node:fs';
import { appendFile, cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sqlite3 from 'sqlite3';
import t from 'tap';
import { WARCParser } from 'warcio';
import { startStaticServer } from '../../bin/sample-site.js';
import { type Daemon, startDaemon } from '../helpers/daemons.js';
import { apacheManual, crawlManual, wget } from '../helpers/real-site.js';

interface Fetched {
  url: string;
  status: number;
  location?: string;
  contentType: string;
  body: Buffer;
}

/** The responses wget recorded in its own WARC file (what the client received). */
async function wgetResponses(warcFile: string): Promise<Fetched[]> {
  const out: Fetched[] = [];
  const parser = new WARCParser(createReadStream(warcFile));
  for await (const record of parser) {
    if (record.warcType !== 'response' || !record.httpHeaders) {
      await record.skipFully();
      continue;
    }
    const h = record.httpHeaders.headers as Headers;
    const body = Buffer.from(await record.readFully(true));
    out.push({
      url: record.warcTargetURI!,
      status: Number(record.httpHeaders.statusCode),
      location: h.get('location') ?? undefined,
      contentType: h.get('content-type') ?? '',
      body,
    });
  }
  return out;
}

function countRows(dbFile: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const db = new sqlite3.Database(dbFile, sqlite3.OPEN_READONLY, (err) => {
      if (err) return reject(err);
      db.get('SELECT count(*) AS n FROM memento', (err2: Error | null, row: { n: number }) => {
        db.close();
        if (err2) reject(err2);
        else resolve(row.n);
      });
    });
  });
}

/** Waits until the index holds `n` mementos (the proxy uploads after the client got its answer). */
async function waitForRows(dbFile: string, n: number, what: string): Promise<void> {
  const deadline = Date.now() + 120_000;
  let have = -1;
  while (Date.now() < deadline) {
    have = await countRows(dbFile).catch(() => -1);
    if (have >= n) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what}: the index holds ${have} mementos, expected ${n}`);
}

async function get(url: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, { redirect: 'manual', headers });
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
}

/** The raw (`id_`) URI-M of a replay URI-M: the stored bytes. */
function rawOf(uriM: string): string {
  return uriM.replace(/\/memento\/(\d{14})\//, '/memento/$1id_/');
}

const capturable = (f: Fetched) => (f.status >= 200 && f.status < 300 && f.status !== 206) || (f.status >= 300 && f.status < 400 && f.status !== 304);

t.test('issue 2 part 5: a real site crawled through the capture proxy comes back from the archive', async (t) => {
  const manual = apacheManual();
  const wgetPath = wget();
  const work = await mkdtemp(path.join(os.tmpdir(), 'e2e-real-site-'));
  t.teardown(() => rm(work, { recursive: true, force: true }));

  // The content server: a copy of the manual (so that one page can change).
  const siteRoot = path.join(work, 'site');
  for (const d of ['en', 'images', 'style']) await cp(path.join(manual, d), path.join(siteRoot, 'manual', d), { recursive: true });
  const site = await startStaticServer(siteRoot);
  t.teardown(() => site.close());

  // The archive daemon.
  const conf = path.join(work, 'conf');
  await writeFile(
    path.join(work, 'archive.yaml'),
    `listen: 127.0.0.1:0
data_dir: data
archives:
  - id: "2025"
    until: 2026-01-01T00:00:00Z
  - id: current
    from: 2026-01-01T00:00:00Z
`,
  );
  const archive: Daemon = await startDaemon('memento-archive.js', ['serve', '--config', path.join(work, 'archive.yaml'), '--quiet']);
  t.teardown(() => archive.stop());
  const archivePort = new URL(archive.url).port;
  const dbFile = path.join(work, 'data', 'index.sqlite3');

  // Two capture proxies on the same site: capture on, and capture off (the baseline crawl).
  const proxies: Record<string, Daemon> = {};
  for (const [name, enable] of [
    ['on', 'On'],
    ['off', 'Off'],
  ] as const) {
    const vhosts = path.join(conf, name, 'vhosts');
    await mkdir(vhosts, { recursive: true });
    await writeFile(path.join(conf, name, 'proxy.yaml'), `listen: 127.0.0.1:0\nvhosts: vhosts/\nspool: ../spool-${name}\n`);
    await writeFile(
      path.join(vhosts, 'manual.yaml'),
      `server_name: 127.0.0.1
upstream: ${site.url}
EnableArchiving: ${enable}
ArchiveHost: 127.0.0.1
ArchivePort: ${archivePort}
ArchivePath: /put/
ArchiveTimeGate: 127.0.0.1:${archivePort}/tg/
EnableIP: On
`,
    );
    proxies[name] = await startDaemon('capture-proxy.js', ['--config', path.join(conf, name, 'proxy.yaml')]);
    t.teardown(() => proxies[name].stop());
  }

  // Baseline: the same crawl with capture off.
  const base = await crawlManual(wgetPath, `${proxies.off.url}/manual/en/index.html`, path.join(work, 'crawl-off'), { plain: true });
  t.equal(await countRows(dbFile), 0, 'capture off stores nothing');

  // Crawl 1, capture on.
  const c1 = await crawlManual(wgetPath, `${proxies.on.url}/manual/en/index.html`, path.join(work, 'crawl-1'), { plain: true });
  const fetched = (await wgetResponses(c1.warc)).filter(capturable);
  const pages = fetched.filter((f) => f.contentType.startsWith('text/html')).length;
  const bytes = fetched.reduce((n, f) => n + f.body.length, 0);
  t.ok(pages >= 200, `wget fetched ${pages} HTML pages (the manual has ~250)`);
  t.ok(
    fetched.some((f) => f.contentType.startsWith('text/css')) &&
      fetched.some((f) => f.contentType.startsWith('image/')) &&
      fetched.some((f) => /javascript/.test(f.contentType)),
    'the crawl includes CSS, images and JavaScript',
  );
  await waitForRows(dbFile, fetched.length, 'after crawl 1');
  t.equal(await countRows(dbFile), fetched.length, 'one memento per fetched URL');

  // Two more alternating rounds (off, on) so that the figures are medians of three; the repeated
  // captures are duplicates of crawl 1 and must add no memento.
  const offMs = [base.ms],
    onMs = [c1.ms];
  for (let round = 2; round <= 3; round++) {
    offMs.push((await crawlManual(wgetPath, `${proxies.off.url}/manual/en/index.html`, path.join(work, `crawl-off-${round}`), { plain: true })).ms);
    onMs.push((await crawlManual(wgetPath, `${proxies.on.url}/manual/en/index.html`, path.join(work, `crawl-on-${round}`), { plain: true })).ms);
  }
  const median = (xs: number[]) => Math.round([...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]);
  t.comment(
    `real site: ${fetched.length} resources (${pages} HTML pages), ${bytes} bytes; crawl through the proxy, median of 3 alternating: ${median(offMs)} ms with capture off, ${median(onMs)} ms with capture on (off ${offMs.map(Math.round).join('/')}, on ${onMs.map(Math.round).join('/')})`,
  );
  await writeFile(
    path.join(os.tmpdir(), 'memento-e2e-figures.json'),
    JSON.stringify({ resources: fetched.length, pages, bytes, crawlOffMs: offMs.map(Math.round), crawlOnMs: onMs.map(Math.round) }),
  );

  // Every page: redirector → TimeGate → Memento, body as the content server sent it; TimeMap lists it.
  const failures: string[] = [];
  for (const f of fetched) {
    const tg = await get(`${archive.url}/tg/${f.url}`);
    if (tg.status !== 302) {
      failures.push(`${f.url}: redirector ${tg.status}`);
      continue;
    }
    const gate = await get(tg.headers.get('location')!);
    if (gate.status !== 302) {
      failures.push(`${f.url}: TimeGate ${gate.status}`);
      continue;
    }
    const uriM = gate.headers.get('location')!;
    const m = await get(uriM);
    if (m.status !== f.status) {
      failures.push(`${f.url}: Memento status ${m.status}, wget got ${f.status}`);
      continue;
    }
    if (!m.headers.get('memento-datetime')) failures.push(`${f.url}: no Memento-Datetime`);
    // The replay redirects within the archive (RFC 7089 §4.5.4); the raw form is what the site sent.
    if (f.location && !m.headers.get('location')?.startsWith(`${archive.url}/`))
      failures.push(`${f.url}: replay Location ${m.headers.get('location')} is not in the archive`);
    const raw = await get(rawOf(uriM));
    if (f.location && raw.headers.get('location') !== f.location) failures.push(`${f.url}: Location ${raw.headers.get('location')} != ${f.location}`);
    if (!raw.body.equals(f.body))
      failures.push(`${f.url}: raw Memento body differs from what the content server sent (${raw.body.length} vs ${f.body.length} bytes)`);
    if (f.status === 200) {
      const file = path.join(siteRoot, decodeURIComponent(new URL(f.url).pathname).replace(/\/$/, '/index.html'));
      const onDisk = await readFile(file).catch(() => null);
      if (onDisk && !onDisk.equals(f.body)) failures.push(`${f.url}: wget's bytes differ from the file on disk`);
    }
    const tm = await get(`${archive.url}/current/timemap/link/${f.url}`);
    if (tm.status !== 200 || !tm.body.toString().includes(`<${uriM}>`)) failures.push(`${f.url}: TimeMap ${tm.status} does not list ${uriM}`);
  }
  t.same(failures, [], `all ${fetched.length} resources come back through /tg/ with their bytes and are in their TimeMap`);

  // The WARC files parse with warcio: one response + one request record per memento.
  const warcDir = path.join(work, 'data', 'warcs');
  let responses = 0,
    requests = 0;
  for (const archiveDir of await readdir(warcDir)) {
    for (const file of await readdir(path.join(warcDir, archiveDir))) {
      for await (const record of new WARCParser(createReadStream(path.join(warcDir, archiveDir, file)))) {
        if (record.warcType === 'response') responses++;
        if (record.warcType === 'request') requests++;
        await record.readFully(false);
      }
    }
  }
  t.equal(responses, fetched.length, 'one WARC response record per memento');
  t.equal(requests, fetched.length, 'one WARC request record per memento');

  // A last crawl after one page changed: exactly one new memento.
  const changedUrlPath = '/manual/en/mod/mod_alias.html';
  await appendFile(path.join(siteRoot, changedUrlPath), '\n<!-- changed for the second crawl -->\n');
  // Mementos have one-second resolution: start crawl 2 in a later second than crawl 1 ended.
  const lastSecond = Math.floor(Date.now() / 1000);
  while (Math.floor(Date.now() / 1000) === lastSecond) await new Promise((r) => setTimeout(r, 20));
  const before = await countRows(dbFile);
  const c2 = await crawlManual(wgetPath, `${proxies.on.url}/manual/en/index.html`, path.join(work, 'crawl-2'), { plain: true });
  const fetched2 = (await wgetResponses(c2.warc)).filter(capturable);
  t.equal(fetched2.length, fetched.length, 'crawl 2 fetched the same resources');
  await waitForRows(dbFile, before + 1, 'after crawl 2');
  // Every capture of crawl 2 has been answered once the changed page's TimeMap has two entries and the proxy is idle;
  // check that nothing else was added by asking every TimeMap.
  let total = 0;
  for (const f of fetched2) {
    const tm = await get(`${archive.url}/current/timemap/link/${f.url}`);
    total += (tm.body.toString().match(/rel="[^"]*memento"/g) ?? []).length;
  }
  t.equal(total, fetched.length + 1, 'the TimeMaps list exactly one memento more than after crawl 1');
  t.equal(await countRows(dbFile), before + 1, 'exactly one new memento in the index');
  const changedUrl = `${proxies.on.url}${changedUrlPath}`;
  const tm = await get(`${archive.url}/current/timemap/json/${changedUrl}`);
  const list = JSON.parse(tm.body.toString()).mementos.list as { uri: string }[];
  t.equal(list.length, 2, 'the changed page has two mementos');
  const newest = await get(rawOf(list[1].uri));
  t.equal(newest.body.toString(), (await readFile(path.join(siteRoot, changedUrlPath))).toString(), 'the new memento is the changed page');
  const oldest = await get(list[0].uri);
  t.notOk(oldest.body.toString().includes('changed for the second crawl'), 'the first memento is the page as it was');
});
