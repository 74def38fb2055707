/**
 * What each archive holds of a URI-R, for the redirector's choice
 * (archive/memento/choice.ts) and the index TimeMap: local archives from
 * the index (first and last Memento-Datetime), remote ones by asking them
 * (archive/memento/remote.ts), only when the caller needs them.
 */
import { type ArchiveSpan, isLocal } from '../spans.js';
import type { VisibleIndex } from '../read/visible-index.js';
import type { Holding, Holdings } from './choice.js';

/**
 * The local archives' holdings of `urlkey` (an archive without mementos of
 * it is absent), of the mementos the access rules show.
 */
export async function localHoldings(visible: VisibleIndex, archives: readonly ArchiveSpan[], urlkey: string): Promise<Holdings> {
  const local = new Set(archives.filter(isLocal).map((a) => a.id));
  const out: Holdings = new Map();
  const spans = await visible.spans(urlkey);
  for (const s of spans) if (local.has(s.archive_id)) out.set(s.archive_id, { state: 'yes', first: s.first, last: s.last });
  return out;
}

/**
 * Adds the remote archives' holdings to `holdings`, asking every remote
 * archive at once with `ask` (which never rejects: a failure is `unknown`).
 *
 * @returns `holdings`
 */
export async function addRemoteHoldings(holdings: Holdings, archives: readonly ArchiveSpan[], ask: (a: ArchiveSpan) => Promise<Holding>): Promise<Holdings> {
  await Promise.all(
    archives
      .filter((a) => !isLocal(a))
      .map(async (a) => {
        holdings.set(a.id, await ask(a));
      }),
  );
  return holdings;
}
