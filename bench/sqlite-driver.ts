/**
 * What one query through the async `sqlite3` driver costs (issue 14), in
 * this process, without HTTP: on the 1M-memento index of bench/timegate.ts,
 * each figure the median of 5 rounds, wall time and CPU time (this
 * process, all threads: the event loop and libuv's pool) per query.
 *
 * - a round trip: a prepared `SELECT 1`, one at a time (nothing but the
 *   hop to libuv's thread pool and back, and the driver's bookkeeping),
 *   against a no-op `await` of a resolved promise;
 * - a point lookup (the newest memento of a random URI-R: one index seek,
 *   one row of three columns), one at a time, against the same lookups 64
 *   to a query (one hop for 64: what the hop costs is the difference);
 * - the TimeGate's lookup (`IndexDb.neighbourhood`: the URL's view, every
 *   memento of it in one query, 10 rows here, then first, last and two on
 *   each side found in it), alone, 64 at a time (one batch query), and
 *   answered by the read cache (read-cache.ts).
 */
import path from 'node:path';
import sqlite3 from 'sqlite3';
import { IndexDb } from '../archive/store/index/index-db.js';
import { exactUrlkey } from '#shared/uri.js';
import { type BenchRow, fmt, median, note } from './lib.js';
import { seedBulk } from './seed.js';

const ROUNDS = 5;

/** Wall and CPU µs per operation of `n` operations run by `body`. */
interface Cost {
  wall: number;
  cpu: number;
}

async function measure(n: number, body: (i: number) => Promise<unknown>, concurrent = 1): Promise<Cost> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < n; i += concurrent) {
    if (concurrent === 1) await body(i);
    else await Promise.all(Array.from({ length: Math.min(concurrent, n - i) }, (_, j) => body(i + j)));
  }
  const wall = ((performance.now() - t0) * 1000) / n;
  const c = process.cpuUsage(c0);
  return { wall, cpu: (c.user + c.system) / n };
}

/** The median over {@link ROUNDS} rounds of each of wall and CPU. */
async function rounds(n: number, body: (i: number) => Promise<unknown>, concurrent = 1): Promise<Cost> {
  await measure(Math.min(n, 2000), body, concurrent);
  const got: Cost[] = [];
  for (let r = 0; r < ROUNDS; r++) got.push(await measure(n, body, concurrent));
  return { wall: median(got.map((c) => c.wall)), cpu: median(got.map((c) => c.cpu)) };
}

const us = (c: Cost) => `${fmt(c.wall, 1)} µs wall, ${fmt(c.cpu, 1)} µs CPU`;

function all<T>(stmt: sqlite3.Statement, params: unknown[]): Promise<T[]> {
  return new Promise((resolve, reject) => stmt.all(params, (err: Error | null, rows: T[]) => (err ? reject(err) : resolve(rows))));
}

/** Runs the driver measurements; returns their rows. */
export async function run(): Promise<BenchRow[]> {
  const seed = await seedBulk('tg-1m', { uris: 100_000, perUri: 10 });
  const file = path.join(seed.dir, 'data', 'index.sqlite3');
  const keys = seed.uris.map((u) => exactUrlkey(u));
  // A fixed pseudo-random order of URI-Rs (LCG).
  let x = 777;
  const order = Array.from({ length: 200_000 }, () => {
    x = (x * 1103515245 + 12345) >>> 0;
    return keys[Math.floor((x / 2 ** 32) * keys.length)];
  });
  const key = (i: number) => order[i % order.length];
  const db = await new Promise<sqlite3.Database>((resolve, reject) => {
    const d = new sqlite3.Database(file, sqlite3.OPEN_READONLY, (err) => (err ? reject(err) : resolve(d)));
  });
  const index = await IndexDb.open(file);
  const cached = await IndexDb.open(file, { cacheBytes: 256 * 1024 ** 2 });
  // As the daemon's read connection: memory-mapped.
  db.run('PRAGMA mmap_size = 268435456');
  const one = db.prepare('SELECT 1 AS x');
  const point = db.prepare("SELECT id, datetime, uri_r FROM memento WHERE urlkey = ? AND archive_id = 'bench' ORDER BY datetime DESC LIMIT 1");
  const batch64 = db.prepare(
    `WITH q(k) AS (VALUES ${new Array(64).fill('(?)').join(', ')})
     SELECT m.id, m.datetime, m.uri_r FROM q CROSS JOIN memento m ON m.id = (SELECT id FROM memento WHERE urlkey = q.k AND archive_id = 'bench' ORDER BY datetime DESC LIMIT 1)`,
  );
  try {
    note('sqlite-driver: no-op await, SELECT 1, point lookups');
    const noop = await rounds(200_000, () => Promise.resolve());
    const roundTrip = await rounds(20_000, () => all(one, []));
    const lookup = await rounds(20_000, (i) => all(point, [key(i)]));
    const lookup64 = await rounds(640, async (i) =>
      all(
        batch64,
        Array.from({ length: 64 }, (_, j) => key(i * 64 + j)),
      ),
    );
    const per64 = { wall: lookup64.wall / 64, cpu: lookup64.cpu / 64 };
    note('sqlite-driver: neighbourhood lookups alone, batched, cached');
    const nb = await rounds(10_000, (i) => index.neighbourhood('bench', key(i), Number.MAX_SAFE_INTEGER));
    const nbBatched = await rounds(12_800, (i) => index.neighbourhood('bench', key(i), Number.MAX_SAFE_INTEGER), 64);
    // The same 2,000 URI-Rs over and over: after the warm-up every lookup is a hit.
    const nbCached = await rounds(100_000, (i) => cached.neighbourhood('bench', key(i % 2000), Number.MAX_SAFE_INTEGER));
    const hitRate = cached.cache.stats.hits / (cached.cache.stats.hits + cached.cache.stats.misses);
    return [
      {
        name: 'sqlite3 driver: one query round trip (prepared SELECT 1, one at a time), per query',
        figure: us(roundTrip),
        baseline: `${us(noop)}: a no-op await`,
        ratio: roundTrip.cpu / noop.cpu,
        target: 'report',
      },
      {
        name: 'sqlite3 driver: index point lookup on 1M rows, one query each, per lookup',
        figure: us(lookup),
        baseline: `${us(per64)}: 64 lookups to a query`,
        ratio: lookup.cpu / per64.cpu,
        target: 'report',
      },
      {
        name: "TimeGate index lookup (IndexDb.neighbourhood: the URL's view, 10 rows), alone, per lookup",
        figure: us(nb),
        baseline: `${us(nbBatched)}: 64 at once (one batch query)`,
        ratio: nb.cpu / nbBatched.cpu,
        target: 'report',
      },
      {
        name: 'TimeGate index lookup answered by the read cache, per lookup',
        figure: us(nbCached),
        baseline: `${us(nbBatched)}: batched query`,
        ratio: nbCached.cpu / nbBatched.cpu,
        target: 'report',
      },
    ].map((r) => (r.name.includes('read cache') ? { ...r, name: `${r.name} (${fmt(hitRate * 100, 1)}% hits)` } : r));
  } finally {
    for (const st of [one, point, batch64]) await new Promise<void>((resolve) => st.finalize(() => resolve()));
    await index.close();
    await cached.close();
    await new Promise<void>((resolve) => db.close(() => resolve()));
  }
}
