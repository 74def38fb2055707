/**
 * Capture proxy throughput and latency (issue 6; the rows of issue 14,
 * "cheaper captures").
 *
 * Processes: a content server (bare Node http: a constant 10 KB HTML page
 * on every path, and under `/new/` the same page with a serial number in
 * it, so that every answer is new, and under `/clock/` the constant page
 * with a `Date` one day later at every answer: bench/lib.ts `bareServer`),
 * the archive daemon (`bin/memento-archive.js serve --quiet`, a fresh data
 * folder, `revisit_interval: 1d` written out: the default), a sink
 * (drains each PUT, answers 201) and the capture proxy
 * (`bin/capture-proxy.js`, its JSON log going to a file) — each its own
 * process — and the load generators in their own processes too: wrk
 * (lib.ts `load`) and, for the fixed-rate arm, the open-loop generator
 * (lib.ts `openLoad`, bench/open-loop.ts; Debian's wrk has no wrk2 `-R`),
 * all on the machine's 2 cores. One proxy serves five vhosts on the same
 * content server, picked by `Host`: `off.bench` (EnableArchiving Off),
 * `on.bench` (On, to the archive, as configured by default: plain PUTs on
 * kept-alive connections, and no PUT for a capture the archive's last
 * answer says it has, ArchiveUnchangedCache On), `put.bench` (as on with
 * ArchiveUnchangedCache Off: every capture is PUT and the archive answers
 * 200), `sink.bench` (On, to the sink, which drains each PUT and answers
 * 201 without a tag: the proxy's own share of a PUT per capture),
 * `new.bench` (On, to the archive, requests under `/new/`, each path
 * once: the archive stores every capture), `revisit.bench` (as on,
 * requests under `/clock/`: an unchanged page whose Date is always more
 * than `revisit_interval` past its last capture, so the proxy sends every
 * capture and the archive writes a WARC revisit record for each, the
 * worst case of revisits). Requests for unchanged pages cycle over 100
 * paths; keep-alive; every answer must be a 200.
 *
 * Arms, alternated in each round (order reversed every other round): the
 * content server directly; capture off, on, put and sink on unchanged
 * pages at 50 connections; capture off and on with every page new; capture
 * off and on with every hit a revisit (`/clock/` pages); capture
 * off and on from one connection (a client's own wait, not queueing). Then,
 * at a fixed rate of half the median capture-off maximum of those rounds,
 * capture off and on, alternated (open loop: a request waiting for a
 * connection counts). Every arm starts once the archive and the proxy are
 * quiet (lib.ts `untilQuiet`: under 5 % of a core for 250 ms): an archive
 * still storing and indexing the pages of the arm before would take a core
 * from the next arm, a baseline as often as not. Rows: unchanged pages, on vs off (≥ 0.9×); every
 * page new, on vs off (≥ 0.5×, and every capture stored, none spooled or
 * dropped: counted from the proxy's request log); every hit a revisit, on
 * vs off (≥ 0.5×, as every page new; the revisit records written counted
 * from the archive's `/metrics`); one connection, p50 and
 * p99, on vs off (≤ 1.15×); p99 at the fixed rate, on vs off (≤ 1.2×); and
 * for the record: every capture PUT and the sink against off, p99 at full load,
 * off against direct, and the CPU each process used per request (from
 * /proc/<pid>/stat), which says where a capture's cost goes on a machine
 * where all of them share 2 cores.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  alternate,
  type BenchRow,
  bareServer,
  capturesByResult,
  type Child,
  cpuSecondsOf,
  dataRoot,
  fmt,
  load,
  median,
  note,
  openLoad,
  repo,
  spawnServer,
  untilQuiet,
  startArchiveProcess,
  writeArchiveConfig,
} from './lib.js';

const ROUNDS = 5;
const SECONDS = 3;
const CONNECTIONS = 50;
const PATHS = 100;
/** The archive's `revisit_interval` in this bench: the default, written out. */
const REVISIT_INTERVAL = '1d';
/** Seconds of the latency arms on one connection (a client's own wait, not queueing behind 49 others). */
const ONE_SECONDS = 2;

/** The capture outcomes of `host`'s requests, from the proxy's request log (one JSON line per request, written once its capture settled). */
function outcomesOf(logFile: string, host: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of readFileSync(logFile, 'utf8').split('\n')) {
    if (!line.includes('"type":"request"') || !line.includes(`"host":"${host}"`)) continue;
    const capture = (JSON.parse(line) as { capture?: string }).capture ?? '?';
    out[capture] = (out[capture] ?? 0) + 1;
  }
  return out;
}

/** {@link outcomesOf}, once every capture in flight has settled (the counts no longer change for half a second). */
async function settledOutcomes(logFile: string, host: string): Promise<Record<string, number>> {
  let outcomes = outcomesOf(logFile, host);
  for (let last = ''; JSON.stringify(outcomes) !== last;) {
    last = JSON.stringify(outcomes);
    await new Promise((r) => setTimeout(r, 500));
    outcomes = outcomesOf(logFile, host);
  }
  return outcomes;
}

/** Runs the proxy benchmarks; returns their rows. */
export async function run(): Promise<BenchRow[]> {
  const dir = path.join(dataRoot, `proxy-throughput-${process.pid}`);
  mkdirSync(path.join(dir, 'vhosts'), { recursive: true });
  const started: Child[] = [];
  try {
    const content = await bareServer('10k');
    started.push(content);
    const sink = await bareServer('sink');
    started.push(sink);
    const archive = await startArchiveProcess(
      'archive-proxy',
      writeArchiveConfig(dir, path.join(dir, 'archive-data'), `revisit_interval: ${REVISIT_INTERVAL}\n`),
    );
    started.push(archive);
    const port = (u: string) => new URL(u).port;
    const vhost = (name: string, settings: string) => `- server_name: ${name}\n  upstream: ${content.url}\n${settings}`;
    const toArchive = `  ArchiveHost: 127.0.0.1\n  ArchivePort: ${port(archive.url)}\n  ArchivePath: /put/\n`;
    writeFileSync(
      path.join(dir, 'vhosts', 'bench.yaml'),
      [
        vhost('on.bench', `  EnableArchiving: On\n${toArchive}`),
        vhost('off.bench', `  EnableArchiving: Off\n  ArchivePort: ${port(archive.url)}\n`),
        vhost('put.bench', `  EnableArchiving: On\n  ArchiveUnchangedCache: Off\n${toArchive}`),
        vhost('new.bench', `  EnableArchiving: On\n${toArchive}`),
        vhost('revisit.bench', `  EnableArchiving: On\n${toArchive}`),
        vhost('sink.bench', `  EnableArchiving: On\n  ArchiveHost: 127.0.0.1\n  ArchivePort: ${port(sink.url)}\n  ArchivePath: /put/\n`),
      ].join(''),
    );
    writeFileSync(path.join(dir, 'proxy.yaml'), `listen: 127.0.0.1:0\nvhosts: vhosts/\nspool: spool/\n`);
    const proxy = await spawnServer('capture-proxy', [path.join(repo, 'bin', 'capture-proxy.js'), '--config', path.join(dir, 'proxy.yaml')]);
    started.push(proxy);

    let n = 0;
    const pages = () => `/page/${n++ % PATHS}.html`;
    // A new URI-R each time: a page new at every request of one URI-R would meet the memento stored the same second (409).
    const newPages = () => `/new/${n++}.html`;
    // The same 100 pages, each answer dated a day after the one before: every capture past the revisit interval.
    const clockPages = () => `/clock/page/${n++ % PATHS}.html`;
    // CPU used per request by each server process, µs (user + system, from /proc).
    const procs = { proxy, archive, sink, content };
    // Each arm starts with the archive and the proxy quiet: the arms before (new pages above all) leave the archive
    // storing and indexing for seconds, which took a core from whichever arm came next, its baselines included.
    const quiet = async (what: string) => {
      if (!(await untilQuiet([archive.pid, proxy.pid]))) note(`proxy: the archive or the proxy still busy after 60 s; ${what} starts anyway`);
    };
    const arm =
      (url: string, host: string | null, d = SECONDS, connections = CONNECTIONS, paths = pages) =>
      async () => {
        await quiet(`arm ${host ?? 'direct'}`);
        const before = Object.fromEntries(Object.entries(procs).map(([k, c]) => [k, cpuSecondsOf(c.pid)]));
        const r = await load({ url, connections, duration: d, path: paths, headers: host ? { host } : {}, expect: [200] });
        const cpu = Object.fromEntries(Object.entries(procs).map(([k, c]) => [k, ((cpuSecondsOf(c.pid) - before[k]) / r.total) * 1e6]));
        return { ...r, cpu };
      };
    note('proxy: warm-up');
    await arm(content.url, null, 1)();
    for (const h of ['off.bench', 'on.bench', 'put.bench', 'sink.bench']) await arm(proxy.url, h, 2)();
    await arm(proxy.url, 'new.bench', 2, CONNECTIONS, newPages)();
    const warmNew = await settledOutcomes(proxy.logFile, 'new.bench');
    await arm(proxy.url, 'revisit.bench', 2, CONNECTIONS, clockPages)();
    const warmClock = await settledOutcomes(proxy.logFile, 'revisit.bench');
    const resultsBefore = await capturesByResult(archive.url);
    note(`proxy: ${ROUNDS} rounds × (9 arms × ${SECONDS} s + 2 arms × ${ONE_SECONDS} s on 1 connection)`);
    const res = await alternate(ROUNDS, {
      direct: arm(content.url, null),
      off: arm(proxy.url, 'off.bench'),
      on: arm(proxy.url, 'on.bench'),
      put: arm(proxy.url, 'put.bench'),
      sink: arm(proxy.url, 'sink.bench'),
      offNew: arm(proxy.url, 'off.bench', SECONDS, CONNECTIONS, newPages),
      onNew: arm(proxy.url, 'new.bench', SECONDS, CONNECTIONS, newPages),
      offClock: arm(proxy.url, 'off.bench', SECONDS, CONNECTIONS, clockPages),
      onClock: arm(proxy.url, 'revisit.bench', SECONDS, CONNECTIONS, clockPages),
      offOne: arm(proxy.url, 'off.bench', ONE_SECONDS, 1),
      onOne: arm(proxy.url, 'on.bench', ONE_SECONDS, 1),
    });
    const rps = (k: keyof typeof res) => median(res[k].map((r) => r.rps));
    const p99 = (k: keyof typeof res) => median(res[k].map((r) => r.p99));
    const p50 = (k: keyof typeof res) => median(res[k].map((r) => r.p50));
    const cpu = (k: keyof typeof res, p: keyof typeof procs) => median(res[k].map((r) => r.cpu[p]));

    // Fixed rate: half of the capture-off maximum just measured, open loop.
    const rate = Math.max(100, Math.round(rps('off') / 2));
    const targets = Array.from({ length: PATHS }, (_, i) => `/page/${i}.html`);
    const fixed = (host: string) => async () => {
      await quiet(`fixed-rate arm ${host}`);
      return openLoad({ url: proxy.url, rate, duration: SECONDS, connections: CONNECTIONS, targets, host, expect: 200 });
    };
    note(`proxy: ${ROUNDS} rounds × 2 arms × ${SECONDS} s at ${rate} req/s (open loop)`);
    await fixed('off.bench')();
    const atRate = await alternate(ROUNDS, { off: fixed('off.bench'), on: fixed('on.bench') });
    const rateP99 = (k: 'off' | 'on') => median(atRate[k].map((r) => r.p99));
    const rateP50 = (k: 'off' | 'on') => median(atRate[k].map((r) => r.p50));
    const rateSched = (k: 'off' | 'on') => median(atRate[k].map((r) => r.p99FromSchedule));

    // The captures of the new pages' rounds (the warm-up's taken out), once all settled.
    const completedNew = res.onNew.reduce((a, r) => a + r.total, 0);
    const all = await settledOutcomes(proxy.logFile, 'new.bench');
    const outcomes = Object.fromEntries(
      Object.entries(all)
        .map(([k, v]) => [k, v - (warmNew[k] ?? 0)])
        .filter(([, v]) => v),
    );
    const stored = outcomes.stored ?? 0;
    // Not stored although the answer was complete: spooled (the live PUT failed), dropped, rejected. (`aborted` and
    // `no: …` are exchanges whose client went away before its answer was complete, at the end of a wrk run.)
    const lost = (outcomes.spooled ?? 0) + (outcomes.dropped ?? 0) + (outcomes.rejected ?? 0);
    // The revisit arm's captures (settled, the warm-up's taken out) and the archive's results over the rounds: only
    // the revisit arm's captures can be revisits (every other identical capture comes within the day of its memento).
    const completedClock = res.onClock.reduce((a, r) => a + r.total, 0);
    const allClock = await settledOutcomes(proxy.logFile, 'revisit.bench');
    const clockOutcomes = Object.fromEntries(
      Object.entries(allClock)
        .map(([k, v]) => [k, v - (warmClock[k] ?? 0)])
        .filter(([, v]) => v),
    );
    // Refused too: a capture the proxy finds the archive would refuse (e.g. dated ahead) is not a revisit.
    const clockLost = (clockOutcomes.spooled ?? 0) + (clockOutcomes.dropped ?? 0) + (clockOutcomes.rejected ?? 0) + (clockOutcomes['no: refused'] ?? 0);
    const resultsAfter = await capturesByResult(archive.url);
    const results = Object.fromEntries(Object.entries(resultsAfter).map(([k, v]) => [k, v - (resultsBefore[k] ?? 0)]));
    const revisits = results.revisit ?? 0;

    const us = (v: number) => `${fmt(v, 0)} µs`;
    const [direct, off, on] = [rps('direct'), rps('off'), rps('on')];
    return [
      {
        name: `proxy throughput, unchanged pages, revisits on (${REVISIT_INTERVAL}), ${CONNECTIONS} connections, capture on`,
        figure: `${fmt(on)} req/s`,
        baseline: `${fmt(off)} req/s (capture off)`,
        ratio: on / off,
        target: '≥ 0.9×',
      },
      {
        name: `proxy throughput, every response new (the archive stores each), ${CONNECTIONS} connections, capture on`,
        figure: `${fmt(rps('onNew'))} req/s; ${fmt(stored)} captures stored for ${fmt(completedNew)} complete answers, ${lost} spooled or dropped (proxy log: ${JSON.stringify(outcomes)})`,
        baseline: `${fmt(rps('offNew'))} req/s (capture off)`,
        ratio: rps('onNew') / rps('offNew'),
        target: '≥ 0.5×, every capture stored, none dropped',
        met: rps('onNew') / rps('offNew') >= 0.5 && lost === 0 && stored >= completedNew,
      },
      {
        name: `proxy throughput, unchanged pages whose Date moves a day per answer (every hit past revisit_interval ${REVISIT_INTERVAL}: a revisit record each, the worst case), ${CONNECTIONS} connections, capture on`,
        figure: `${fmt(rps('onClock'))} req/s; ${fmt(revisits)} revisit records written for ${fmt(completedClock)} complete answers (${fmt((100 * revisits) / completedClock, 0)}%), ${clockLost} spooled, dropped or refused (proxy log: ${JSON.stringify(clockOutcomes)}; archive, all arms: ${JSON.stringify(results)})`,
        baseline: `${fmt(rps('offClock'))} req/s (capture off)`,
        ratio: rps('onClock') / rps('offClock'),
        target: '≥ 0.5× (as every response new), none dropped or refused',
        met: rps('onClock') / rps('offClock') >= 0.5 && clockLost === 0,
      },
      {
        name: 'proxy latency p50, one connection, unchanged pages, capture on',
        figure: `${fmt(p50('onOne'), 3)} ms`,
        baseline: `${fmt(p50('offOne'), 3)} ms (capture off)`,
        ratio: p50('onOne') / p50('offOne'),
        target: '≤ 1.15×',
      },
      {
        name: 'proxy latency p99, one connection, unchanged pages, capture on',
        figure: `${fmt(p99('onOne'), 3)} ms`,
        baseline: `${fmt(p99('offOne'), 3)} ms (capture off)`,
        ratio: p99('onOne') / p99('offOne'),
        target: '≤ 1.15×',
      },
      {
        name: `proxy p99 at a fixed rate of half the capture-off maximum (${fmt(rate)} req/s, open loop, ${CONNECTIONS} connections), capture on`,
        figure: `${fmt(rateP99('on'), 2)} ms (p50 ${fmt(rateP50('on'), 2)} ms; from the schedule ${fmt(rateSched('on'), 2)} ms)`,
        baseline: `${fmt(rateP99('off'), 2)} ms (p50 ${fmt(rateP50('off'), 2)} ms; from the schedule ${fmt(rateSched('off'), 2)} ms), capture off`,
        ratio: rateP99('on') / rateP99('off'),
        target: '≤ 1.2×',
      },
      {
        name: `proxy p99 latency at full load (${CONNECTIONS} connections), unchanged pages, capture on`,
        figure: `${fmt(p99('on'), 1)} ms`,
        baseline: `${fmt(p99('off'), 1)} ms (capture off)`,
        ratio: p99('on') / p99('off'),
        target: 'report',
      },
      {
        name: 'proxy throughput, unchanged pages, capture on with ArchiveUnchangedCache Off (every capture PUT, the archive answers 200)',
        figure: `${fmt(rps('put'))} req/s`,
        baseline: `${fmt(off)} req/s (capture off)`,
        ratio: rps('put') / off,
        target: 'report',
      },
      {
        name: 'proxy throughput, capture off',
        figure: `${fmt(off)} req/s`,
        baseline: `${fmt(direct)} req/s (content server directly)`,
        ratio: off / direct,
        target: '> 0.22×',
      },
      {
        name: 'proxy throughput, unchanged pages, capture on into a sink (a PUT per capture, answered 201 without reading it: no archive work)',
        figure: `${fmt(rps('sink'))} req/s`,
        baseline: `${fmt(off)} req/s (capture off)`,
        ratio: rps('sink') / off,
        target: 'report',
      },
      {
        name: 'CPU per request, unchanged pages, capture on (proxy + archive)',
        figure: `proxy ${us(cpu('on', 'proxy'))}, archive ${us(cpu('on', 'archive'))}`,
        baseline: `capture off: proxy ${us(cpu('off', 'proxy'))}; every capture PUT: proxy ${us(cpu('put', 'proxy'))}, archive ${us(cpu('put', 'archive'))}; into sink: proxy ${us(cpu('sink', 'proxy'))}, sink ${us(cpu('sink', 'sink'))}`,
        ratio: (cpu('on', 'proxy') + cpu('on', 'archive')) / cpu('off', 'proxy'),
        target: 'report',
      },
      {
        name: `CPU per request, unchanged pages, every hit a revisit (revisit_interval ${REVISIT_INTERVAL}, Date a day later per answer), capture on (proxy + archive)`,
        figure: `proxy ${us(cpu('onClock', 'proxy'))}, archive ${us(cpu('onClock', 'archive'))}`,
        baseline: `capture off: proxy ${us(cpu('offClock', 'proxy'))}; every response new: proxy ${us(cpu('onNew', 'proxy'))}, archive ${us(cpu('onNew', 'archive'))}`,
        ratio: (cpu('onClock', 'proxy') + cpu('onClock', 'archive')) / cpu('offClock', 'proxy'),
        target: 'report',
      },
      {
        name: 'CPU per request, every response new, capture on (proxy + archive)',
        figure: `proxy ${us(cpu('onNew', 'proxy'))}, archive ${us(cpu('onNew', 'archive'))}`,
        baseline: `capture off: proxy ${us(cpu('offNew', 'proxy'))}`,
        ratio: (cpu('onNew', 'proxy') + cpu('onNew', 'archive')) / cpu('offNew', 'proxy'),
        target: 'report',
      },
    ];
  } finally {
    for (const c of started.reverse()) await c.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
