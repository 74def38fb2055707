/**
 * Issue 15 on a real site: the Apache HTTP Server manual (Debian's
 * apache2-doc) served by serve-static on 127.0.0.1, crawled by
 * `wget --mirror --warc-file`, imported with `memento-archive import`
 * while the daemon runs (so through the daemon, found at its config's
 * `listen` address), and every page found again through the redirector
 * `/tg/`: its raw (`id_`) memento is the bytes the server sent. A second
 * crawl, written uncompressed, imports as duplicates; `cdxj` lists every
 * memento. Prints the import's speed.
 */
import { createReadStream } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { WARCParser } from 'warcio';
import { startStaticServer } from '../../bin/sample-site.js';
import { canonicalUrlkey } from '#shared/surt.js';
import { runCli } from '../archive/helpers.js';
import { startDaemon } from '../helpers/daemons.js';
import { apacheManual, crawlManual, wget } from '../helpers/real-site.js';

/** What wget recorded of each response: URL, status and the body bytes the server sent. */
async function responses(warcFile: string): Promise<{ url: string; status: number; body: Buffer }[]> {
  const out: { url: string; status: number; body: Buffer }[] = [];
  for await (const record of new WARCParser(createReadStream(warcFile))) {
    if (record.warcType !== 'response' || !record.httpHeaders) {
      await record.skipFully();
      continue;
    }
    out.push({ url: record.warcTargetURI!, status: Number(record.httpHeaders.statusCode), body: Buffer.from(await record.readFully(false)) });
  }
  return out;
}

/** A port nobody listens on right now (the daemon's config names it: import finds the daemon there). */
async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as net.AddressInfo;
  await new Promise((resolve) => s.close(resolve));
  return port;
}

/** GET without following redirects. */
async function get(url: string): Promise<{ status: number; location: string; body: Buffer }> {
  const res = await fetch(url, { redirect: 'manual' });
  return { status: res.status, location: res.headers.get('location') ?? '', body: Buffer.from(await res.arrayBuffer()) };
}

/** The import's summary line, parsed: MiB, seconds, new mementos, revisit mementos, duplicates. */
function summary(stdout: string) {
  const m =
    /^import: 1 file, (\d+) WARC records \(([\d.]+) MiB, ([\d.]+) s\): (\d+) new mementos?, (\d+) revisit mementos?, (\d+) duplicates?, .*; through the running daemon at /m.exec(
      stdout,
    );
  if (!m) throw new Error('no summary line in:\n' + stdout);
  return { records: +m[1], mib: +m[2], seconds: +m[3], created: +m[4], revisits: +m[5], duplicates: +m[6] };
}

t.test(
  'issue 15: a site crawled with wget --warc-file imports through the running daemon; every page comes back byte-identical (id_) through /tg/',
  async (t) => {
    const manual = apacheManual();
    const wgetPath = wget();
    const work = await mkdtemp(path.join(os.tmpdir(), 'e2e-import-'));
    t.teardown(() => rm(work, { recursive: true, force: true }));
    const root = path.dirname(manual);
    const site = await startStaticServer(root);
    t.teardown(() => site.close());
    const start = `${site.url}/manual/en/index.html`;
    const gz = (await crawlManual(wgetPath, start, path.join(work, 'crawl-1'))).warc;
    const plain = (await crawlManual(wgetPath, start, path.join(work, 'crawl-2'), { plain: true })).warc;
    const sent = await responses(gz);
    t.ok(sent.filter((r) => r.status === 200 && r.url.endsWith('.html')).length >= 200, `wget fetched ${sent.length} responses`);

    const config = path.join(work, 'archive.yaml');
    await writeFile(
      config,
      `listen: 127.0.0.1:${await freePort()}\ndata_dir: data\narchives:\n  - id: "2025"\n    until: 2026-01-01T00:00:00Z\n  - id: current\n    from: 2026-01-01T00:00:00Z\n`,
    );
    const daemon = await startDaemon('memento-archive.js', ['serve', '--config', config, '--quiet']);
    t.teardown(() => daemon.stop());

    const first = await runCli(['import', '--config', config, gz]);
    t.equal(first.code, 0, first.stderr);
    t.match(
      first.stdout,
      /; skipped 2 resource, 1 metadata, 0 other; 0 errors; through the running daemon at http:\/\/127\.0\.0\.1:\d+$/m,
      "wget's log and arguments are resource and metadata records",
    );
    const s1 = summary(first.stdout);
    t.equal(s1.created, sent.length, 'one new memento per response record');
    t.comment(
      `import of wget's WARC through the daemon: ${s1.records} records, ${s1.mib} MiB in ${s1.seconds} s = ${(s1.mib / s1.seconds).toFixed(1)} MiB/s, ${(sent.length / s1.seconds).toFixed(0)} captures/s`,
    );

    let same = 0;
    for (const r of sent) {
      const tg = await get(`${daemon.url}/tg/${r.url}`);
      t.equal(tg.status, 302, `${r.url}: the redirector`);
      const gate = await get(tg.location);
      t.equal(gate.status, 302, `${r.url}: the TimeGate`);
      const raw = await get(gate.location.replace(/\/memento\/(\d{14})\//, '/memento/$1id_/'));
      t.equal(raw.status, r.status, `${r.url}: the stored status`);
      if (!raw.body.equals(r.body)) t.fail(`${r.url}: the id_ memento differs from what the server sent`);
      else same++;
      if (r.status === 200) {
        const file = await readFile(path.join(root, decodeURIComponent(new URL(r.url).pathname)));
        if (!raw.body.equals(file)) t.fail(`${r.url}: the id_ memento differs from the file on disk`);
      }
    }
    t.equal(same, sent.length, `all ${sent.length} pages, stylesheets and images byte-identical`);

    const second = await runCli(['import', '--config', config, plain]);
    t.equal(second.code, 0, second.stderr);
    const s2 = summary(second.stdout);
    t.same(
      { created: s2.created, revisits: s2.revisits, duplicates: s2.duplicates },
      { created: 0, revisits: 0, duplicates: sent.length },
      'the same site again, uncompressed WARC: all duplicates',
    );
    t.comment(`second import (uncompressed, duplicates): ${s2.mib} MiB in ${s2.seconds} s = ${(s2.mib / s2.seconds).toFixed(1)} MiB/s`);

    const cdxj = await runCli(['cdxj', '--config', config]);
    t.equal(cdxj.code, 0, cdxj.stderr);
    const lines = cdxj.stdout.trim().split('\n');
    t.equal(lines.length, sent.length, 'cdxj lists every memento');
    const keys = new Set(lines.map((l) => l.split(' ')[0]));
    t.same(
      sent.map((r) => r.url).filter((u) => !keys.has(canonicalUrlkey(u))),
      [],
      'every URL crawled has its line',
    );
  },
);
