/**
 * The reads of the shared setup (docs/scale-out.md): the index in
 * PostgreSQL and the WARC files in an S3-compatible bucket, beside the
 * embedded defaults (the SQLite index, a WARC folder), in the same run.
 *
 * - Servers: a throwaway PostgreSQL cluster (test/helpers/postgres.ts:
 *   `initdb` + `pg_ctl` on a free port of 127.0.0.1; `fsync` off, which
 *   reads do not notice) and s3rver, the test suite's S3 server, in a
 *   process of its own. The archives run `bin/memento-archive.js serve` in
 *   theirs, wrk in its own (lib.ts `load`).
 * - Data: the TimeGate bench's 1M mementos (bench/seed.ts `seedBulk`),
 *   their rows copied into PostgreSQL (`copyIndex`: `PgIndex.insertMany`,
 *   20,000 rows a transaction, then `VACUUM ANALYZE`); the Memento bench's
 *   1,000 10 KB pages ingested a second time through the real ingest path
 *   into PostgreSQL + the bucket (`ingestAgain`). Neither is cached: the
 *   cluster and the bucket live as long as the run.
 * - TimeGate: the requests of bench/timegate.ts (uniform over 100k URI-Rs,
 *   and the hot set of 500), PostgreSQL against SQLite with its default
 *   read cache (PostgreSQL has none).
 * - Memento `id_` GET of a 10 KB page: PostgreSQL + bucket against SQLite +
 *   folder, each with its default read caches, then each with them off
 *   (every request an index query, a read of the record (a ranged GET from
 *   the bucket) and a gunzip).
 * - With each figure, CPU per request of the archive process, and for the
 *   shared setup of PostgreSQL (the postmaster and all its backends) and of
 *   s3rver: the work the shared services do for each request.
 *
 * Every answer must be a 302 (TimeGate) or a 200 (Memento); 5 rounds of 3 s,
 * arms alternated, medians.
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { toTimestamp14 } from '#shared/http-date.js';
import { PgIndex } from '../archive/store/index/index-pg.js';
import { startPostgres } from '../test/helpers/postgres.js';
import {
  alternate,
  type BenchRow,
  cacheLookups,
  type Child,
  cpuSecondsOf,
  dataRoot,
  fmt,
  lcg,
  load,
  median,
  note,
  s3Server,
  startArchiveProcess,
  treeCpuSecondsOf,
  writeArchiveConfig,
} from './lib.js';
import { copyIndex, ingestAgain, seedBulk, seedIngest } from './seed.js';
import { HOT_URIS, requests } from './timegate.js';

const ROUNDS = 5;
const SECONDS = 3;
const CONNECTIONS = 50;
const BUCKET = 'bench';
/** s3rver's keys, for the archive processes and this one (the ingest). */
const S3_ENV = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };

/** One run: req/s; CPU µs per request of the archive, PostgreSQL and s3rver; the share of lookups the read cache answered. */
interface Measured {
  rps: number;
  archiveUs: number;
  pgUs: number;
  s3Us: number;
  hitRate?: number;
}

/** Runs the PostgreSQL + S3 read benchmarks; returns their rows. */
export async function run(): Promise<BenchRow[]> {
  const big = await seedBulk('tg-1m', { uris: 100_000, perUri: 10 });
  const pages = await seedIngest('memento-1k', { uris: 1000 });
  const work = path.join(dataRoot, `pg-s3-${process.pid}`);
  const postgres = await startPostgres();
  const started: Child[] = [];
  const start = async (name: string, configFile: string) => {
    const c = await startArchiveProcess(name, configFile, [], S3_ENV);
    started.push(c);
    return c;
  };
  const stop = async (c: Child) => {
    await c.stop();
    started.splice(started.indexOf(c), 1);
  };
  try {
    Object.assign(process.env, S3_ENV);
    const s3 = await s3Server(path.join(work, 's3'), BUCKET);
    started.push(s3);
    const tgDb = await postgres.database('timegate');
    const mDb = await postgres.database('memento');
    const index = await PgIndex.open(tgDb);
    try {
      await copyIndex(big, index);
    } finally {
      await index.close();
    }
    await vacuum(tgDb);
    const s3Yaml = `  warcs: s3://${BUCKET}/m/\n  s3:\n    endpoint: ${s3.url}\n    force_path_style: true\n  replica: bench\n`;
    const mConfig = (name: string, extra = '') =>
      writeArchiveConfig(path.join(work, name), path.join(work, 'memento-data'), `${extra}storage:\n  index: ${mDb}\n${s3Yaml}`);
    await ingestAgain(pages, mConfig('memento'), 'memento-1k into PostgreSQL + S3');
    await vacuum(mDb);

    const measure =
      (server: Child, what: 'index' | 'record', r: { path: () => string; headers?: () => Record<string, string> }, expect: number, d = SECONDS) =>
      async (): Promise<Measured> => {
        const cpu = () => [cpuSecondsOf(server.pid), treeCpuSecondsOf(postgres.pid), treeCpuSecondsOf(s3.pid)];
        const cache = await cacheLookups(server.url, what);
        const before = cpu();
        const got = await load({ url: server.url, connections: CONNECTIONS, duration: d, path: r.path, headers: r.headers, expect: [expect] });
        const [a, p, s] = cpu().map((x, i) => ((x - before[i]) / got.total) * 1e6);
        const after = await cacheLookups(server.url, what);
        const asked = after.hits + after.misses - cache.hits - cache.misses;
        return { rps: got.rps, archiveUs: a, pgUs: p, s3Us: s, hitRate: asked ? (after.hits - cache.hits) / asked : undefined };
      };

    // TimeGate: SQLite (default read cache) and PostgreSQL, the same 1M mementos.
    const tgSqlite = await start('archive-tg-sqlite', big.configFile);
    const tgPg = await start('archive-tg-pg', writeArchiveConfig(path.join(work, 'tg-pg'), path.join(work, 'tg-pg-data'), `storage:\n  index: ${tgDb}\n`));
    const uniform = requests(big);
    const hot = requests({ ...big, uris: big.uris.slice(0, HOT_URIS) });
    note('postgres-s3: TimeGate warm-up');
    for (const s of [tgSqlite, tgPg]) {
      await measure(s, 'index', uniform, 302, 2)();
      await measure(s, 'index', hot, 302, 2)();
      await measure(s, 'index', hot, 302, 2)();
    }
    note(`postgres-s3: TimeGate, ${ROUNDS} rounds × 4 arms × ${SECONDS} s`);
    const tg = await alternate(ROUNDS, {
      sqlite: measure(tgSqlite, 'index', uniform, 302),
      pg: measure(tgPg, 'index', uniform, 302),
      sqliteHot: measure(tgSqlite, 'index', hot, 302),
      pgHot: measure(tgPg, 'index', hot, 302),
    });
    await stop(tgSqlite);
    await stop(tgPg);

    // Memento id_: SQLite + folder and PostgreSQL + bucket, the same 1,000 pages; read caches on, then off.
    const rnd = lcg(4242);
    const raw = {
      path: () => {
        const i = Math.floor(rnd() * pages.uris.length);
        return `/bench/memento/${toTimestamp14(pages.datetimes(i)[0])}id_/${pages.uris[i]}`;
      },
    };
    const off = 'index_cache_bytes: 0\nrecord_cache_bytes: 0\n';
    const mementoArms = async (label: string, sqliteConfig: string, pgConfig: string) => {
      const a = await start(`archive-m-sqlite${label}`, sqliteConfig);
      const b = await start(`archive-m-pg-s3${label}`, pgConfig);
      // Every page read once (the record cache keeps it then), and a warm-up of the load.
      for (const server of [a, b]) {
        await readAll(
          server.url,
          pages.uris.map((u, i) => `/bench/memento/${toTimestamp14(pages.datetimes(i)[0])}id_/${u}`),
        );
        await measure(server, 'record', raw, 200, 2)();
      }
      note(`postgres-s3: Memento${label}, ${ROUNDS} rounds × 2 arms × ${SECONDS} s`);
      const res = await alternate(ROUNDS, { sqlite: measure(a, 'record', raw, 200), pg: measure(b, 'record', raw, 200) });
      await stop(a);
      await stop(b);
      return res;
    };
    const mOn = await mementoArms('', pages.configFile, mConfig('memento'));
    const mOff = await mementoArms(
      ' (caches off)',
      writeArchiveConfig(path.join(work, 'm-sqlite-off'), path.join(pages.dir, 'data'), off),
      mConfig('memento-off', off),
    );

    const rps = (xs: Measured[]) => median(xs.map((x) => x.rps));
    const us = (xs: Measured[], k: 'archiveUs' | 'pgUs' | 's3Us') => fmt(median(xs.map((x) => x[k])), 0);
    const hits = (xs: Measured[], what: string) => {
      const h = xs.filter((x) => x.hitRate !== undefined).map((x) => x.hitRate!);
      return h.length ? `, ${fmt(100 * median(h), 0)}% ${what} cache hits` : '';
    };
    const shared = (xs: Measured[], what: string, s3: boolean) =>
      `${fmt(rps(xs))} req/s (CPU per request: archive ${us(xs, 'archiveUs')} µs, PostgreSQL ${us(xs, 'pgUs')} µs${s3 ? `, s3rver ${us(xs, 's3Us')} µs` : ''}${hits(xs, what)})`;
    const embedded = (xs: Measured[], what: string, kind: string) =>
      `${fmt(rps(xs))} req/s (${kind}: archive CPU ${us(xs, 'archiveUs')} µs/req${hits(xs, what)})`;
    const row = (name: string, a: Measured[], b: Measured[], what: 'index' | 'record', s3: boolean, kind: string): BenchRow => ({
      name,
      figure: shared(a, what, s3),
      baseline: embedded(b, what, kind),
      ratio: rps(a) / rps(b),
      target: 'report',
    });
    const tgName = `${fmt(big.mementos)} mementos over ${fmt(big.uris.length)} URI-Rs, ${CONNECTIONS} connections`;
    return [
      row(`TimeGate req/s, index in PostgreSQL (no read cache), ${tgName}`, tg.pg, tg.sqlite, 'index', false, 'SQLite index, default read cache'),
      row(
        `TimeGate req/s, index in PostgreSQL, ${tgName}: the hot set (requests for ${fmt(HOT_URIS)} URI-Rs)`,
        tg.pgHot,
        tg.sqliteHot,
        'index',
        false,
        'SQLite index, default read cache',
      ),
      row(
        `Memento GET of a 10 KB page, raw (id_), index in PostgreSQL + WARCs in S3 (s3rver), default read caches (the record cache; no index cache), ${CONNECTIONS} connections`,
        mOn.pg,
        mOn.sqlite,
        'record',
        true,
        'SQLite + WARC folder, default read caches',
      ),
      row(
        `Memento GET of a 10 KB page, raw (id_), index in PostgreSQL + WARCs in S3 (s3rver), read caches off (an index query, a ranged GET, a gunzip per request), ${CONNECTIONS} connections`,
        mOff.pg,
        mOff.sqlite,
        'record',
        true,
        'SQLite + WARC folder, read caches off',
      ),
    ];
  } finally {
    for (const c of started.reverse()) await c.stop();
    await postgres.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

/** `VACUUM ANALYZE` the index table: the planner's statistics and the visibility map, as a database in use has them (autovacuum). */
async function vacuum(url: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query('VACUUM ANALYZE memento');
  } finally {
    await c.end();
  }
}

/** GETs each of `paths` from `url` once, 50 at a time; each must answer 200. */
async function readAll(url: string, paths: string[]): Promise<void> {
  for (let i = 0; i < paths.length; i += 50) {
    await Promise.all(
      paths.slice(i, i + 50).map(async (p) => {
        const r = await fetch(url + p);
        await r.arrayBuffer();
        if (r.status !== 200) throw new Error(`warm-up: ${p} answered ${r.status}`);
      }),
    );
  }
}
