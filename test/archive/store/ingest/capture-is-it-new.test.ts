/**
 * Is a capture new? The archive's one decision (archive/store/ingest/capture-is-new.ts,
 * docs/storage.md "Deduplication", "Same-second captures"): through the
 * store (what is written and what a PUT is told), and the order of the
 * decisions inside one write batch.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import t, { type Test } from 'tap';
import { validateArchiveConfig } from '../../../../archive/config.js';
import { type AnyRow, CaptureIsNew } from '../../../../archive/store/ingest/capture-is-new.js';
import type { AtOrBefore, IndexDb, NewMementoRow } from '../../../../archive/store/index/index-db.js';
import { ArchiveStore } from '../../../../archive/store/store.js';
import { WarcWriter } from '../../../../archive/store/warcs/warc-writer.js';
import { parseYamlText } from '#shared/config.js';
import { captureRecord } from '../../../helpers/archive.js';

async function openStore(t: Test): Promise<ArchiveStore> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'is-new-'));
  const config = validateArchiveConfig(
    parseYamlText(`listen: 127.0.0.1:0\ndata_dir: ${JSON.stringify(dataDir)}\narchives:\n  - id: a\n`, path.join(dataDir, 'archive.yaml')),
  );
  const store = await ArchiveStore.open(config);
  t.teardown(async () => {
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return store;
}

/** Bytes of all WARC files of the store. */
function warcBytes(store: ArchiveStore): number {
  let n = 0;
  for (const d of readdirSync(store.warcsDir)) for (const f of readdirSync(path.join(store.warcsDir, d))) n += statSync(path.join(store.warcsDir, d, f)).size;
  return n;
}

const T0 = Date.UTC(2026, 0, 5, 10, 0, 0);
/** Ingests a capture of http://www.example.org/p at `T0 + seconds`. */
function put(store: ArchiveStore, seconds: number, body: string, opts: { status?: number; type?: string; target?: string } = {}) {
  const rec = captureRecord({ target: opts.target ?? '/p', body, status: opts.status, responseHeaders: [['Content-Type', opts.type ?? 'text/html']] });
  return store.ingest(Readable.from([rec]), new Date(), { datetime: new Date(T0 + seconds * 1000) });
}

t.test('capture is new: a first capture of a URI-R is stored (created, its row)', async (t) => {
  const store = await openStore(t);
  const r = await put(store, 0, 'A');
  t.equal(r.created, true);
  t.equal(r.conflict, false);
  t.equal(r.row.datetime, T0 / 1000);
  t.equal(await store.index.count(), 1);
});

t.test('capture is not new: identical to the memento it follows (digest, status, type): nothing written, the answer names that memento', async (t) => {
  const store = await openStore(t);
  const first = await put(store, 0, 'A');
  const bytes = warcBytes(store);
  const again = await put(store, 60, 'A');
  t.same([again.created, again.conflict], [false, false]);
  t.equal(again.row.datetime, first.row.datetime, 'the duplicate names the first memento');
  t.equal(again.row.warc_offset, first.row.warc_offset);
  t.equal(await store.index.count(), 1, 'no new index row');
  t.equal(warcBytes(store), bytes, 'no WARC bytes written');
  t.equal(store.stats.duplicates, 1);
});

t.test('capture is new: the same body with another status or another media type is stored', async (t) => {
  const store = await openStore(t);
  await put(store, 0, 'A');
  const status = await put(store, 10, 'A', { status: 404 });
  t.equal(status.created, true, 'another status: stored');
  const type = await put(store, 20, 'A', { status: 404, type: 'text/plain' });
  t.equal(type.created, true, 'another media type: stored');
  const back = await put(store, 30, 'A', { status: 404, type: 'text/plain' });
  t.equal(back.created, false, 'then identical to the latest: not stored');
  t.equal(back.row.datetime, T0 / 1000 + 20);
  t.equal(await store.index.count(), 3);
});

t.test('capture is a conflict: a different capture at the same second is refused (the stored memento stays, nothing written)', async (t) => {
  const store = await openStore(t);
  const first = await put(store, 0, 'A');
  const bytes = warcBytes(store);
  const other = await put(store, 0, 'B');
  t.same([other.created, other.conflict], [false, true]);
  t.equal(other.row.digest, first.row.digest, 'the answer is the stored memento');
  t.equal(warcBytes(store), bytes, 'no WARC bytes written');
  const same = await put(store, 0, 'A');
  t.same([same.created, same.conflict], [false, false], 'the identical capture at that second is a duplicate');
  t.equal(await store.index.count(), 1);
});

t.test('capture is new once: of racing identical captures exactly one is stored, the others name it', async (t) => {
  const store = await openStore(t);
  const results = await Promise.all(Array.from({ length: 16 }, () => put(store, 0, 'same page')));
  const created = results.filter((r) => r.created);
  t.equal(created.length, 1, 'one stored');
  for (const r of results) t.equal(r.row.digest, created[0].row.digest);
  t.equal(results.filter((r) => r.conflict).length, 0, 'no conflicts: identical is a duplicate');
  t.equal(await store.index.count(), 1);
});

/** An index that knows nothing (every urlkey new), counting its queries. */
function emptyIndex() {
  const asked: number[] = [];
  const index = {
    atOrBeforeMany: async (pairs: { urlkey: string; t: number }[]): Promise<AtOrBefore[]> => {
      asked.push(pairs.length);
      return pairs.map(() => ({ row: undefined, isNewest: true }));
    },
  };
  return { index: index as unknown as IndexDb, asked };
}

function row(datetime: number, digest: string, urlkey = 'org,example)/p'): NewMementoRow {
  return {
    archive_id: 'a',
    urlkey,
    uri_r: 'http://www.example.org/p',
    datetime,
    status: 200,
    mime: 'text/html',
    digest,
    warc_file: '',
    warc_offset: 0,
    warc_length: 0,
    client_ip: null,
    refers_to: null,
  };
}

t.test('capture is new, inside one batch: decided in queue order against the captures written before it, by time', async (t) => {
  const { index, asked } = emptyIndex();
  const isNew = new CaptureIsNew(index, () => undefined);
  // Queue order: @10 A, @5 A (earlier, no memento before it), @12 A (follows @10), @10 B (same second as @10: conflict), @5 C (same second as @5).
  const rows = [row(10, 'A'), row(5, 'A'), row(12, 'A'), row(10, 'B'), row(5, 'C'), row(12, 'A', 'org,example)/q')];
  const batch = await isNew.batch(rows);
  t.same(asked, [rows.length], 'one index query for the batch');
  const kinds: string[] = [];
  const of: (AnyRow | undefined)[] = [];
  for (const [i, r] of rows.entries()) {
    const v = batch.verdict(i, r);
    kinds.push(v.kind);
    of.push(v.kind === 'duplicate' ? v.of : v.kind === 'conflict' ? v.with : undefined);
    if (v.kind === 'new') batch.wrote(r);
  }
  t.same(kinds, ['new', 'new', 'duplicate', 'conflict', 'conflict', 'new']);
  t.equal(of[2], rows[0], '@12 duplicates @10 (the latest before it), not @5');
  t.equal(of[3], rows[0], '@10 B conflicts with @10 A');
  t.equal(of[4], rows[1], '@5 C conflicts with @5 A');
  t.equal(batch.predecessor(0, { urlkey: 'org,example)/p', datetime: 11 }), rows[0], 'a question at 11 is answered with @10');
});

t.test('capture is new when its would-be original is not written: a capture found new counts only once written', async (t) => {
  const { index } = emptyIndex();
  const isNew = new CaptureIsNew(index, () => undefined);
  const rows = [row(10, 'A'), row(11, 'A')];
  const batch = await isNew.batch(rows);
  t.equal(batch.verdict(0, rows[0]).kind, 'new');
  // Its append failed: not wrote(). The next identical capture is new then, not a duplicate of nothing.
  t.equal(batch.verdict(1, rows[1]).kind, 'new');
});

t.test('capture is new after a commit: committed rows are known without asking the index again', async (t) => {
  const { index, asked } = emptyIndex();
  const isNew = new CaptureIsNew(index, () => undefined);
  await isNew.batch([row(10, 'A')]); // learns: the urlkey has no memento
  isNew.committed([row(10, 'A')]);
  const later = row(20, 'A');
  const batch = await isNew.batch([later]);
  t.same(asked, [1], 'the second batch needed no index query');
  const v = batch.verdict(0, later);
  t.equal(v.kind, 'duplicate');
});

t.test('capture is new when the memento it would duplicate is hidden by the access rules', async (t) => {
  const { index } = emptyIndex();
  let hide = false;
  const isNew = new CaptureIsNew(index, () => (hide ? () => true : undefined));
  await isNew.batch([row(10, 'A')]);
  isNew.committed([row(10, 'A')]);
  hide = true;
  const b = await isNew.batch([row(20, 'A')]);
  t.equal(b.verdict(0, row(20, 'A')).kind, 'new');
});

/** An index whose one memento of `org,example)/p` is `known` (with an id). */
function indexHolding(known: AnyRow & { id: number }) {
  const index = {
    atOrBeforeMany: async (pairs: { urlkey: string; t: number }[]): Promise<AtOrBefore[]> =>
      pairs.map((p) => ({ row: p.urlkey === known.urlkey && known.datetime <= p.t ? known : undefined, isNewest: true })),
  };
  return index as unknown as IndexDb;
}

t.test('capture is a revisit: identical, and revisit_interval or more after the memento it follows; else a duplicate', async (t) => {
  const original = { ...row(0, 'A'), id: 7 };
  const day = 86_400;
  const rows = [row(day - 1, 'A'), row(day, 'A'), row(day, 'B')];
  const b = await new CaptureIsNew(indexHolding(original), () => undefined, day).batch(rows);
  t.same(
    rows.map((r, i) => b.verdict(i, r)),
    [{ kind: 'duplicate', of: original }, { kind: 'revisit', of: original }, { kind: 'new' }],
  );
  b.wrote(rows[1]);
  t.equal(b.inBatch(rows[1]), true, 'a revisit written in this batch is not committed yet');
  t.equal(b.inBatch(original), false);
  const off = await new CaptureIsNew(indexHolding(original), () => undefined, null).batch([row(10 * day, 'A')]);
  t.equal(off.verdict(0, row(10 * day, 'A')).kind, 'duplicate', 'off: never a revisit');
  const zero = await new CaptureIsNew(indexHolding(original), () => undefined, 0).batch([row(0, 'A'), row(1, 'A')]);
  t.same([zero.verdict(0, row(0, 'A')).kind, zero.verdict(1, row(1, 'A')).kind], ['duplicate', 'revisit'], '0: a revisit at every new second');
});

t.test('capture is a revisit of a memento written in the same batch: the batch ends before it, and it refers to that row once committed', async (t) => {
  const store = await openStore(t);
  // Hold the first batch in its fsync, so that the next two captures queue up behind it and form one batch.
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  let held = false;
  const realSync = WarcWriter.prototype.sync;
  WarcWriter.prototype.sync = async function (this: WarcWriter) {
    if (!held) {
      held = true;
      await gate;
    }
    return realSync.call(this);
  };
  t.teardown(() => {
    WarcWriter.prototype.sync = realSync;
  });
  const other = put(store, 0, 'another page', { target: '/other' });
  while (!held) await new Promise((r) => setImmediate(r));
  const day = 86_400;
  const original = put(store, 0, 'A');
  const revisit = put(store, day, 'A');
  // The store's queue is private: wait until both captures are in it (read whole and queued).
  const queue = (store as unknown as { queue: unknown[] }).queue;
  while (queue.length < 2) await new Promise((r) => setImmediate(r));
  open();
  const [o, r] = await Promise.all([original, revisit]);
  await other;
  t.equal(o.kind, 'new');
  t.equal(r.kind, 'revisit', 'the capture a day later is a revisit');
  const originalRow = await store.index.rowAt('a', o.row.urlkey, o.row.datetime);
  t.ok(originalRow);
  t.equal(r.row.refers_to, originalRow!.id, "it refers to the original's row id");
  t.equal(store.stats.batches, 3, 'the held batch, then the queued two split at the revisit');
  t.equal(store.stats.transactions, 3);
  const rows: { id: number; refers_to: number | null }[] = [];
  for await (const m of store.index.allMementos()) rows.push(m);
  t.same(
    rows.filter((m) => m.refers_to !== null).map((m) => m.refers_to),
    [originalRow!.id],
    'the index row of the revisit names the original',
  );
  const read = await store.readResponse((await store.index.rowAt('a', r.row.urlkey, r.row.datetime))!);
  const body: Buffer[] = [];
  for await (const c of read.body) body.push(Buffer.from(c));
  t.equal(Buffer.concat(body).toString(), 'A', "read back: the original's body");
});
