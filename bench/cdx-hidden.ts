/**
 * Hidden means hidden in timing too: `/cdx?url=`, the redirector and a
 * TimeMap of an excluded URL with many mementos against a URL never captured, on one daemon (rows put in
 * its index directly; `/cdx` reads only the index). 200 requests of each,
 * interleaved, after 20 of each to warm up; prints the median and p90 in
 * ms. Not part of `npm run bench`; run it alone:
 *
 *   node --import tsx bench/cdx-hidden.ts [mementos=20000] [requests=200]
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { exactUrlkey } from '#shared/uri.js';
import type { NewMementoRow } from '../archive/store/index/index-db.js';
import { startArchive, TWO_ARCHIVES } from '../test/helpers/archive.js';

const MEMENTOS = Number(process.argv[2] ?? 20_000);
const REQUESTS = Number(process.argv[3] ?? 200);
const HIDDEN = 'http://www.example.org/excluded/page';
const NEVER = 'http://www.example.org/never/page';

/** One GET on a fresh connection; resolves with the milliseconds until the last byte. */
function timed(port: number, target: string): Promise<{ ms: number; status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    http
      .get({ host: '127.0.0.1', port, path: target, agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => resolve({ ms: performance.now() - t0, status: res.statusCode!, body }));
      })
      .on('error', reject);
  });
}

const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];

const a = await startArchive(`${TWO_ARCHIVES}access:\n  - url: http://www.example.org/excluded/*\n    action: exclude\n`);
try {
  const t0 = Date.UTC(2001, 0, 1) / 1000;
  const rows: NewMementoRow[] = Array.from({ length: MEMENTOS }, (_, i) => ({
    archive_id: '2025',
    urlkey: exactUrlkey(HIDDEN),
    uri_r: HIDDEN,
    datetime: t0 + i * 60,
    status: 200,
    mime: 'text/html',
    digest: 'sha256:' + String(i).padStart(64, '0'),
    warc_file: '2025/x.warc.gz',
    warc_offset: i,
    warc_length: 1,
    client_ip: null,
    refers_to: null,
  }));
  for (let i = 0; i < rows.length; i += 5000) await a.store.index.insertMany(rows.slice(i, i + 5000));
  // Each address of the excluded URL and of the never-captured one, in turn: the same status, the same body but the URL.
  const addresses: [string, (u: string) => string][] = [
    ['/cdx', (u) => `/cdx?url=${encodeURIComponent(u)}`],
    ['/cdx prefix', (u) => `/cdx?url=${encodeURIComponent(u.replace(/page$/, '*'))}`],
    ['/tg/ (redirector)', (u) => `/tg/${u}`],
    ['TimeMap', (u) => `/2025/timemap/link/${u}`],
  ];
  for (const [what, address] of addresses) {
    const times: Record<string, number[]> = { hidden: [], never: [] };
    for (let i = 0; i < REQUESTS + 20; i++) {
      const h = await timed(a.port, address(HIDDEN));
      const n = await timed(a.port, address(NEVER));
      if (h.status !== n.status || h.body !== n.body.split('never').join('excluded'))
        throw new Error(`${what}: ${h.status} ${h.body.slice(0, 80)} / ${n.status} ${n.body.slice(0, 80)}`);
      if (i < 20) continue;
      times.hidden.push(h.ms);
      times.never.push(n.ms);
    }
    for (const [name, xs] of Object.entries(times))
      console.log(
        `${what} ${name}: median ${quantile(xs, 0.5).toFixed(3)} ms, p90 ${quantile(xs, 0.9).toFixed(3)} ms (${xs.length} requests, ${MEMENTOS} hidden mementos)`,
      );
  }
} finally {
  await a.close();
}
