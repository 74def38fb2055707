/**
 * The answer of the CDX server API: the index rows a {@link CdxQuery}
 * matches, in its order (walked from the index a page at a time, so an
 * answer of any size takes constant memory), and their text — one CDX line
 * per memento, space-separated fields or one JSON object per line, made by
 * the index's database as it reads the rows (archive/store/index/cdx-line.ts) — with the resume key after
 * the last line when the answer was cut short. The contract:
 * docs/http-api.md "CDX server API".
 */
import { type CdxColumn, type CdxRow, type CdxWalk, cdxWalk, type IndexPosition } from '../store/index/cdx-walk.js';
import type { MementoIndex } from '../store/index/memento-index.js';
import { type CdxQuery, formatResumeKey, type ResumePoint } from './query.js';

/** Media type of `output=json`: newline-delimited JSON, one object per line (pywb's). */
export const NDJSON = 'application/x-ndjson';

/** Text is yielded once this many characters are waiting. */
const CHUNK_CHARS = 32 * 1024;
/** Rows per index query at most. */
const PAGE = 1000;

/** A row of the answer, with where a next page would start after it. */
export interface PlacedRow {
  row: CdxRow;
  /** For sort=closest: the last row taken on each side of the instant, this one included. */
  before?: { datetime: number; id: number };
  after?: { datetime: number; id: number };
}

/**
 * The rows `q` matches, in its order: urlkey then oldest first (`asc`),
 * the reverse (`reverse`), or nearest `q.closest` first (`closest`: the
 * rows at or before the instant walked backwards and those after it walked
 * forwards, merged by distance; a tie goes to the earlier). Starts after
 * `q.resume` when given. Each row has its `line`, and the `columns` asked
 * for. Every row of the index that matches; with `shown.within` (for a
 * query of one urlkey: the spans of datetimes the access rules show) or
 * `shown.shown` (the rules, AccessRules `shownRules`, for a query of many), only those the
 * access rules show.
 */
export async function* cdxRows(
  index: MementoIndex,
  q: CdxQuery,
  columns: readonly CdxColumn[] = [],
  shown: Pick<CdxWalk, 'within' | 'shown'> = {},
): AsyncGenerator<PlacedRow> {
  const walk: CdxWalk = { since: q.since, until: q.until, columns, line: { fields: q.fields, output: q.output }, page: Math.min(PAGE, q.limit + 1), ...shown };
  if (q.sort === 'closest') {
    yield* closestRows(index, q, walk);
    return;
  }
  const desc = q.sort === 'reverse';
  const after: IndexPosition | undefined = q.resume?.kind === 'linear' ? q.resume : undefined;
  for (const range of desc ? [...q.ranges].reverse() : q.ranges) {
    for await (const row of cdxWalk(index, range, { ...walk, desc, after })) yield { row };
  }
}

/** sort=closest: two walks of one urlkey away from the instant, merged by distance. */
async function* closestRows(index: MementoIndex, q: CdxQuery, walk: CdxWalk): AsyncGenerator<PlacedRow> {
  const urlkey = q.ranges[0].from;
  const t = q.closest!;
  const resume = q.resume?.kind === 'closest' ? q.resume : undefined;
  let lastBefore = resume?.before;
  let lastAfter = resume?.after;
  // (t, beyond every id): backwards from it are the rows at or before t, forwards those after t.
  const start = { urlkey, datetime: t, id: Number.MAX_SAFE_INTEGER };
  const range = { from: urlkey };
  const before = cdxWalk(index, range, { ...walk, desc: true, after: lastBefore ? { urlkey, ...lastBefore } : start });
  const after = cdxWalk(index, range, { ...walk, desc: false, after: lastAfter ? { urlkey, ...lastAfter } : start });
  try {
    let b = await before.next();
    let a = await after.next();
    while (!b.done || !a.done) {
      if (!b.done && (a.done || t - b.value.datetime <= a.value.datetime - t)) {
        const row = b.value;
        lastBefore = { datetime: row.datetime, id: row.id };
        yield { row, before: lastBefore, after: lastAfter };
        b = await before.next();
      } else if (!a.done) {
        const row = a.value;
        lastAfter = { datetime: row.datetime, id: row.id };
        yield { row, before: lastBefore, after: lastAfter };
        a = await after.next();
      }
    }
  } finally {
    await before.return(undefined);
    await after.return(undefined);
  }
}

/** Where the answer continues after `p` (its resume key, {@link formatResumeKey}). */
export function resumePointAfter(p: PlacedRow, q: CdxQuery): ResumePoint {
  if (q.sort === 'closest') return { kind: 'closest', urlkey: p.row.urlkey, before: p.before, after: p.after };
  return { kind: 'linear', urlkey: p.row.urlkey, datetime: p.row.datetime, id: p.row.id };
}

/**
 * The body of a CDX answer: the line of each row `shown` lets through, up
 * to `q.limit` of them; after the last, when more rows follow and
 * `q.showResumeKey` is set, the resume key: an empty line and the key
 * (`text`, as the Wayback CDX server prints it) or a line
 * `{"resumeKey":"<key>"}` (`json`). Yields text a chunk at a time.
 * `rows` are the rows that may be listed (archive/read/visible-index.ts
 * `cdxRows`: the access rules are applied there).
 */
export async function* cdxBody(rows: AsyncIterable<PlacedRow>, q: CdxQuery): AsyncGenerator<string> {
  let out = '';
  let n = 0;
  let last: PlacedRow | undefined;
  let more = false;
  for await (const p of rows) {
    if (n === q.limit) {
      more = true;
      break;
    }
    out += p.row.line + '\n';
    n++;
    last = p;
    if (out.length >= CHUNK_CHARS) {
      yield out;
      out = '';
    }
  }
  if (more && last && q.showResumeKey) {
    const key = formatResumeKey(resumePointAfter(last, q));
    out += q.output === 'json' ? JSON.stringify({ resumeKey: key }) + '\n' : '\n' + key + '\n';
  }
  if (out) yield out;
}
