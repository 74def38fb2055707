/**
 * The evidence log's tiles, entry bundles and receipts under load: an
 * archive whose log has 70,000 entries (rows and entries put into its
 * index directly, no WARC records: these read only the log), wrk with 8
 * connections for 4 s per arm, 3 rounds alternated. Each is measured
 * against the signed tree head `GET /bench/log` (one row read, a small
 * JSON answer) in the same run: requests/s and the daemon's CPU per
 * request. The arms: a full level-0 tile (256 leaf hashes, 8 KiB, one
 * range query), a full level-1 tile (256 stored nodes), a full entry
 * bundle (256 entries, each checked against the access rules), a receipt
 * (the memento's row and entry, the newest checkpoint, an inclusion proof
 * of 17 hashes). Targets: reported.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { toTimestamp14 } from '#shared/http-date.js';
import { exactUrlkey } from '#shared/uri.js';
import { captureLeafText } from '../archive/evidence/leaf.js';
import type { NewLeaf } from '../archive/evidence/log.js';
import { IndexDb, type NewMementoRow } from '../archive/store/index/index-db.js';
import { alternate, type BenchRow, cpuSecondsOf, fmt, load, median, note, startArchiveProcess, writeArchiveConfig } from './lib.js';

const ENTRIES = 70_000;
const ROUNDS = 3;
const SECONDS = 4;
const CONNECTIONS = 8;
const T0 = Date.UTC(2001, 0, 1) / 1000;

/** The made-up memento `i` and its entry. */
function memento(i: number): { row: NewMementoRow; leaf: NewLeaf } {
  const uri = `http://www.example.org/page/${i}`;
  const row: NewMementoRow = {
    archive_id: 'bench',
    urlkey: exactUrlkey(uri),
    uri_r: uri,
    datetime: T0 + i,
    status: 200,
    mime: 'text/html',
    digest: 'sha256:' + String(i).padStart(64, '0'),
    warc_file: 'bench/none.warc.gz',
    warc_offset: i,
    warc_length: 1,
    client_ip: null,
    refers_to: null,
  };
  const id = `<urn:uuid:00000000-0000-4000-8000-${String(i).padStart(12, '0')}>`;
  const leaf: NewLeaf = {
    archive_id: 'bench',
    kind: 'capture',
    text: captureLeafText({ uri, datetime: toTimestamp14(T0 + i), record_id: id, digest: row.digest }),
    urlkey: row.urlkey,
    datetime: row.datetime,
  };
  return { row, leaf };
}

/** Runs the tlog benchmark; returns its rows. */
export async function run(): Promise<BenchRow[]> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-tlog-'));
  try {
    const dataDir = path.join(dir, 'data');
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const index = await IndexDb.open(path.join(dataDir, 'index.sqlite3'));
    for (let i = 0; i < ENTRIES; i += 5000) {
      const batch = Array.from({ length: Math.min(5000, ENTRIES - i) }, (_, k) => memento(i + k));
      await index.insertMany(
        batch.map((b) => b.row),
        { leaves: batch.map((b) => b.leaf) },
      );
    }
    await index.close();
    const archive = await startArchiveProcess('archive-tlog', writeArchiveConfig(dir, dataDir));
    try {
      // The first checkpoint, of every entry, before the load.
      for (const deadline = Date.now() + 30_000; ; await new Promise((r) => setTimeout(r, 100))) {
        const r = await fetch(`${archive.url}/bench/tlog/checkpoint`);
        if (r.status === 200 && (await r.text()).split('\n')[1] === String(ENTRIES)) break;
        if (Date.now() > deadline) throw new Error('no checkpoint of every entry within 30 s');
      }
      const probe = memento(40_001);
      const arms: Record<string, string> = {
        'signed tree head (/log)': '/bench/log',
        'level-0 tile': '/bench/tlog/tile/0/100',
        'level-1 tile': '/bench/tlog/tile/1/000',
        'entry bundle': '/bench/tlog/tile/entries/100',
        receipt: `/bench/receipt/${toTimestamp14(probe.row.datetime)}/${probe.row.uri_r}`,
        'inclusion proof (/proof, JSON)': `/bench/proof/${toTimestamp14(probe.row.datetime)}/${probe.row.uri_r}`,
      };
      for (const [name, target] of Object.entries(arms)) {
        const r = await fetch(archive.url + target);
        if (r.status !== 200) throw new Error(`${name}: ${target} answered ${r.status}`);
        await r.arrayBuffer();
      }
      const measure = (target: string) => async () => {
        const cpu0 = cpuSecondsOf(archive.pid);
        const res = await load({ url: archive.url, connections: CONNECTIONS, duration: SECONDS, path: target, expect: [200] });
        return { rps: res.rps, cpuUs: ((cpuSecondsOf(archive.pid) - cpu0) * 1e6) / res.total, p50: res.p50 };
      };
      note(`tlog: ${Object.keys(arms).length} arms × ${ROUNDS} rounds of ${SECONDS} s`);
      const got = await alternate(ROUNDS, Object.fromEntries(Object.entries(arms).map(([n, t]) => [n, measure(t)])));
      const med = (n: string) => ({
        rps: median(got[n].map((x) => x.rps)),
        cpuUs: median(got[n].map((x) => x.cpuUs)),
        p50: median(got[n].map((x) => x.p50)),
      });
      const base = med('signed tree head (/log)');
      return Object.keys(arms)
        .filter((n) => n !== 'signed tree head (/log)')
        .map((n) => {
          const m = med(n);
          return {
            name: `tlog: ${n} of a log of ${fmt(ENTRIES)} entries, ${CONNECTIONS} connections`,
            figure: `${fmt(m.rps)} req/s; CPU ${fmt(m.cpuUs)} µs/request; p50 ${m.p50.toFixed(2)} ms`,
            baseline: `${fmt(base.rps)} req/s; CPU ${fmt(base.cpuUs)} µs/request (GET /bench/log)`,
            ratio: m.rps / base.rps,
            target: 'report',
          };
        });
    } finally {
      await archive.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
