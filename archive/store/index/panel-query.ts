/**
 * The one query of the banner's "About this capture" panel
 * (archive/web/coherence.ts): for each embedded resource of a replayed
 * page, the capture the replay shows and whether it changed between that
 * capture and the page's time. One statement for a whole list of urlkeys
 * (a JSON array parameter), a few seeks of the `(urlkey, datetime)` index
 * per key and a range scan of a bounded number of entries: the panel's
 * cost is bounded by its number of statements and keys (its caller's
 * budgets). Datetimes are epoch seconds; errors are the database driver's.
 */
import type { Ranges } from './memento-row.js';
import type { IndexReads } from './reads.js';
import { withinSql } from './shown-sql.js';

/** A resource's capture as {@link PanelQuery.capturesAt} finds it. */
export interface PanelCapture {
  /** The resource's place in the list of urlkeys asked for (from 0). */
  i: number;
  archive_id: string;
  uri_r: string;
  /** Memento-Datetime, epoch s. */
  datetime: number;
  /** One of the first `between` captures strictly between it and the page's time has another payload digest. */
  changed: boolean;
  /** More than `between` captures lie strictly between it and the page's time. */
  more: boolean;
}

/** A row of the statement: `lies_between` is 2 when a capture in between has another digest, plus 1 when there are more than `$between`. */
type Row = { i: number; archive_id: string; uri_r: string; datetime: number; lies_between: number | string };

/** The panel's query; the index's `panel`. */
export class PanelQuery {
  constructor(private readonly db: IndexReads) {}

  /**
   * For each of `urlkeys`: its capture nearest to the instant `t` in any
   * archive (archive/read/nearest.ts: one at `t` itself, else the one at
   * the smaller distance, of two at the same distance the earlier; of two
   * at one second, in two archives, the higher row id), and what lies
   * strictly between that capture and `pageTime` among the first `between`
   * captures there (at most `between` + 1 index entries read per key);
   * among the captures whose datetime lies in `within` (the spans
   * the access rules show of these urlkeys; undefined: every capture). One
   * statement, prepared once when `within` is undefined, else per call.
   * @returns one entry per urlkey that has such a capture, in no fixed order
   */
  async capturesAt(urlkeys: readonly string[], t: number, pageTime: number, between: number, within?: Ranges): Promise<PanelCapture[]> {
    const cond = withinSql(within);
    const { sql } = this.db;
    const rows = await this.db.browse<Row>(
      cond ? null : 'web.panel',
      `WITH k AS (${sql.jsonTexts('$keys')}),
            n AS MATERIALIZED (SELECT i, value AS urlkey,
              (SELECT datetime FROM memento WHERE urlkey = k.value AND datetime <= $t${cond} ORDER BY datetime DESC LIMIT 1) AS b,
              (SELECT datetime FROM memento WHERE urlkey = k.value AND datetime > $t${cond} ORDER BY datetime ASC LIMIT 1) AS a FROM k),
            c AS (SELECT i, urlkey, CASE WHEN b IS NULL THEN a WHEN a IS NULL THEN b WHEN a - $t < $t - b THEN a ELSE b END AS dt
              FROM n WHERE a IS NOT NULL OR b IS NOT NULL)
       SELECT c.i, m.archive_id, m.uri_r, m.datetime,
         (SELECT COALESCE(MAX(CASE WHEN w.digest != m.digest THEN 2 ELSE 0 END), 0) + CASE WHEN COUNT(*) > $between THEN 1 ELSE 0 END
           FROM (SELECT digest FROM memento WHERE urlkey = c.urlkey AND datetime > ${sql.least('c.dt', '$page')}
             AND datetime < ${sql.greatest('c.dt', '$page')}${cond} ORDER BY datetime LIMIT $scan) w) AS lies_between
       FROM c JOIN memento m ON m.id = (SELECT id FROM memento WHERE urlkey = c.urlkey AND datetime = c.dt${cond} ORDER BY id DESC LIMIT 1)`,
      { $keys: JSON.stringify(urlkeys), $t: t, $page: pageTime, $between: between, $scan: between + 1 },
    );
    return rows.map((r) => {
      const lies = Number(r.lies_between);
      return { i: Number(r.i), archive_id: r.archive_id, uri_r: r.uri_r, datetime: r.datetime, changed: lies >= 2, more: lies % 2 === 1 };
    });
  }
}
