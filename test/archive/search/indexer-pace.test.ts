/**
 * The text indexer's catch-up yields to readers (archive/search/indexer.ts):
 * in a walk step that found a full step of rows without text, each memento
 * that began after a GET or HEAD started is preceded by a pause of three
 * times the time the memento before it took (at most a second); with no
 * reader, and for a short step (new captures), no pause at all. Every
 * memento still gets its text.
 */
import t from 'tap';
import { MAX_PAUSE_MS, STEP, TextIndexer } from '../../../archive/search/indexer.js';
import type { MementoIndex } from '../../../archive/store/index/memento-index.js';
import type { MementoRow } from '../../../archive/store/index/memento-row.js';
import type { MementoText } from '../../../archive/store/index/text-queries.js';

/** An index of `n` mementos without text, and the texts stored into it. */
function fakeIndex(n: number) {
  const stored: MementoText[] = [];
  const rows = Array.from({ length: n }, (_, i) => ({ id: i + 1, warc_length: 10, mime: 'text/html', warc_file: 'f.warc.gz', warc_offset: 0 }) as MementoRow);
  const index = {
    text: {
      missing: async (after: number, limit: number) => rows.filter((r) => r.id > after && !stored.some((s) => s.id === r.id)).slice(0, limit),
      putMany: async (texts: readonly MementoText[]) => void stored.push(...texts),
    },
  } as unknown as MementoIndex;
  return { index, stored };
}

/**
 * A walk over `n` mementos, each taking `ms` of a fake clock, where a read
 * starts during each memento `readDuring(i)` says; the pauses asked for.
 */
async function walk(n: number, ms: number, readDuring: (i: number) => boolean) {
  const { index, stored } = fakeIndex(n);
  let clock = 0;
  let reads = 0;
  let i = 0;
  const pauses: number[] = [];
  const indexer = new TextIndexer(
    index,
    async () => new Uint8Array(1),
    () => t.fail('no memento fails'),
    async () => {
      clock += ms;
      if (readDuring(i++)) reads++;
      return { title: 't', body: 'b' };
    },
    { readsStarted: () => reads, now: () => clock, pause: async (p) => void pauses.push(p) },
  );
  indexer.nudge();
  await indexer.drained();
  return { pauses, stored: stored.length, indexed: indexer.stats.indexed };
}

t.test('a catch-up with readers: a pause of three times each memento before the next', async (t) => {
  const r = await walk(STEP * 2, 4, () => true);
  t.equal(r.stored, STEP * 2, 'every memento has its text');
  t.equal(r.indexed, STEP * 2);
  // The first memento of the walk has nothing before it; each later one of a full step pauses 3 × 4 ms.
  t.same(r.pauses, Array(STEP * 2 - 1).fill(12), 'each paused 12 ms (a quarter of the time working)');
});

t.test('a catch-up with no reader runs at full speed', async (t) => {
  const r = await walk(STEP * 2, 4, () => false);
  t.equal(r.stored, STEP * 2);
  t.same(r.pauses, [], 'no pause');
});

t.test('readers now and then: only the mementos after one pause', async (t) => {
  const r = await walk(STEP, 4, (i) => i === 10 || i === 50);
  t.same(r.pauses, [12, 12], 'two pauses, after the two mementos a read came during');
});

t.test('a slow memento: the pause is at most a second', async (t) => {
  const r = await walk(STEP, 2_000, (i) => i === 0);
  t.same(r.pauses, [MAX_PAUSE_MS]);
});

t.test("new captures' texts (a step shorter than a full one) are never paced", async (t) => {
  const r = await walk(STEP - 1, 4, () => true);
  t.equal(r.stored, STEP - 1);
  t.same(r.pauses, [], 'no pause');
});
