/**
 * A capture stored as a revisit of a memento its sender names: what
 * `memento-archive import` makes of a WARC `revisit` record (WARC 1.1
 * §6.7), whose payload is another record's. The capture goes in as any
 * other, with its body (the original's), and names that memento — in a PUT
 * by the `Archive-Revisit-Of` header ({@link formatRevisitOf}), to the
 * store by `IngestOptions.revisitOf`. Unless the capture is a duplicate of
 * (or a revisit of) its own URI-R's newest memento, the store writes it as
 * a WARC `revisit` record naming that memento's response record, never as
 * a second full copy: a memento of another URI-R included, so that
 * `purge` of the original takes the revisit with it (it has no body of its
 * own), and a taken-down body never lives on under another URL.
 *
 * Only a memento the access rules show, whose payload is shown too, may be
 * named (archive/read/visible-index.ts `revisitTargetShown`), asked the way every read asks
 * (archive/read/access-rules.ts `AccessRules.verdict`); for a hidden one the sender
 * learns nothing it would not learn of a memento never stored.
 */
import { exactUrlkey } from '#shared/uri.js';
import { parseTimestamp14, toTimestamp14 } from '#shared/http-date.js';
import type { MementoRow } from '../index/memento-row.js';

/** The field name of a capture PUT naming the memento it repeats. */
export const REVISIT_OF = 'Archive-Revisit-Of';

/** `Archive-Revisit-Of`'s value for memento `row`: `<archive id> <14-digit Memento-Datetime> <URI-R>`, one space between. */
export function formatRevisitOf(row: Pick<MementoRow, 'archive_id' | 'datetime' | 'uri_r'>): string {
  return `${row.archive_id} ${toTimestamp14(row.datetime)} ${row.uri_r}`;
}

/** The memento an `Archive-Revisit-Of` value names: archive id, urlkey and Memento-Datetime (epoch s); `undefined` when it is not of that form. */
export function parseRevisitOf(value: string): { archiveId: string; urlkey: string; datetime: number } | undefined {
  const m = /^(\S+) (\d{14}) (\S+)$/.exec(value.trim());
  const when = m && parseTimestamp14(m[2]);
  if (!m || !when) return undefined;
  try {
    return { archiveId: m[1], urlkey: exactUrlkey(m[3]), datetime: when.getTime() / 1000 };
  } catch {
    return undefined;
  }
}
