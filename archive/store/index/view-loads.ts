/**
 * What both index adapters do the same way around the read cache
 * (read-cache.ts), written once: the batching of view loads, and the
 * neighbourhood of a URL read from its view. An adapter gives only its own
 * query of many urlkeys' rows at once ({@link LoadViews}).
 *
 * Loads asked for in one turn of the event loop, or while a query runs, go
 * together in the next query (up to the adapter's batch size): each query
 * is a round trip (libuv's thread pool for SQLite, the network for
 * PostgreSQL), which under load costs more than the lookup itself.
 */
import type { ReadCache, UrlView, ViewRow } from '../read-cache.js';
import type { MementoRow, Neighbourhood, Ranges } from './memento-row.js';

/**
 * An adapter's query of the rows of `urlkeys` (at most its batch size):
 * for each, in order, its mementos, or `undefined` when it has more than a
 * view holds. @throws the database's error (every load of the batch rejects)
 */
export type LoadViews = (urlkeys: readonly string[]) => Promise<(ViewRow[] | undefined)[]>;

/** A waiting view load. */
interface ViewLoad {
  urlkey: string;
  resolve: (rows: ViewRow[] | undefined) => void;
  reject: (err: unknown) => void;
}

/** The read cache's views of one index, loaded in batches; see the module comment. */
export class ViewLoads {
  private waiting: ViewLoad[] = [];
  private running = false;
  private scheduled = false;

  /**
   * @param cache the index's read cache
   * @param load the adapter's query of many urlkeys' rows
   * @param maxBatch most urlkeys one query asks for
   */
  constructor(
    private readonly cache: ReadCache,
    private readonly load: LoadViews,
    private readonly maxBatch: number,
  ) {}

  /** The read cache's view of `urlkey`: every memento of it per archive, from memory or loaded (batched) from the index. */
  view(urlkey: string): Promise<UrlView> {
    return this.cache.view(
      urlkey,
      () =>
        new Promise<ViewRow[] | undefined>((resolve, reject) => {
          this.waiting.push({ urlkey, resolve, reject });
          this.schedule();
        }),
    );
  }

  /** Runs the waiting loads after this turn of the event loop (so that requests read in it join), one query at a time. */
  private schedule(): void {
    if (this.scheduled || this.running || !this.waiting.length) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.run();
    });
  }

  private async run(): Promise<void> {
    if (this.running || !this.waiting.length) return;
    this.running = true;
    const batch = this.waiting.splice(0, this.maxBatch);
    try {
      const out = await this.load(batch.map((b) => b.urlkey));
      for (const [i, q] of batch.entries()) q.resolve(out[i]);
    } catch (err) {
      for (const q of batch) q.reject(err);
    } finally {
      this.running = false;
      this.schedule();
    }
  }
}

/** Every datetime: the ranges of a plain query through the index's `neighbourhoodWithin`. */
const ALL_TIME: Ranges = [[-Infinity, Infinity]];

/**
 * First, last and the two mementos on each side of `t` (epoch s) for
 * `urlkey` in `archive`, from the URL's view in the read cache (loaded when
 * it is not there), with `view` set to it (answers made from it are kept
 * with it); a URL with more mementos than a view holds is asked of the
 * index each time (`neighbourhoodWithin` over all time). With `whole`, the
 * last memento at or before `t` (`atOrBefore[0]`) is the whole row (one
 * more query). `undefined` when the URI-R has no memento there.
 */
export async function neighbourhoodFromView(
  index: {
    view(urlkey: string): Promise<UrlView>;
    byId(id: number): Promise<MementoRow | undefined>;
    neighbourhoodWithin(archive: string, urlkey: string, t: number, ranges: Ranges, whole?: boolean): Promise<Neighbourhood | undefined>;
  },
  archive: string,
  urlkey: string,
  t: number,
  whole: boolean,
): Promise<Neighbourhood | undefined> {
  const v = await index.view(urlkey);
  if (!v.complete) return index.neighbourhoodWithin(archive, urlkey, t, ALL_TIME, whole);
  const n = v.timeline(archive)?.neighbourhood(t);
  if (!n) return undefined;
  n.view = v;
  if (whole && n.atOrBefore[0]) n.atOrBefore[0] = (await index.byId(n.atOrBefore[0].id)) ?? n.atOrBefore[0];
  return n;
}
