/**
 * The banner's "About this capture" panel (`/web/<ts>/<url>`): how close
 * in time the replayed page's embedded resources are to the page. The
 * replay frame shows the page at the reader's time T, and each resource
 * at the capture of it nearest to T (archive/http/memento.ts); a page
 * whose stylesheet was captured three days later, or changed since, is
 * not quite the page that was served, and the panel says so.
 *
 * The resources are found in the page's stored HTML (decoded, its first
 * {@link PANEL_TEXT_LIMIT} bytes, at most {@link MAX_EMBEDDED} resources:
 * archive/replay/embedded.ts); for each, the index gives the capture
 * nearest to T among those the access rules show (a hidden resource reads
 * as "not archived", as one never captured), and whether another capture
 * of it with a different payload digest lies between it and the page's
 * Memento-Datetime: one statement for every resource whose rules
 * hide nothing (a few seeks of the `(urlkey, datetime)` index each), one
 * of its own for each other. The cost of a replay page is so bounded by
 * one read of the page's record and {@link MAX_EMBEDDED} resources' seeks.
 * Everything here is text from a stored page: the template escapes it.
 */
import type { FastifyInstance } from 'fastify';
import { parseUriR } from '../http/context.js';
import { storedContentEncoding } from '../memento/body.js';
import { canDecode } from '../memento/content-coding.js';
import { isHtml } from '../memento/html-base.js';
import { embeddedResources, MAX_EMBEDDED } from '../replay/embedded.js';
import { rangeSql } from '../store/index-db.js';
import type { StoredResponse } from '../store/warc-reader.js';
import { plural, span } from './format.js';
import type { Capture } from './queries.js';
import { readDecodedText } from './text.js';

export { MAX_EMBEDDED };

/** Most decoded bytes of the page read for its resources. */
export const PANEL_TEXT_LIMIT = 2 * 1024 * 1024;

const DAY = 86400;

/** The capture of a resource the replay shows. */
export interface ResourceCapture {
  archiveId: string;
  uriR: string;
  /** Memento-Datetime, epoch s. */
  datetime: number;
}

/** One embedded resource in the panel. */
export interface PanelEntry {
  /** Its absolute URL as the page names it. */
  url: string;
  /** What embeds it: `img`, `stylesheet`, `script`, `style` (a CSS url()), … */
  kind: string;
  /** The capture the replay shows; none when it is not archived (or the access rules hide it). */
  capture?: ResourceCapture;
  /** `capture.datetime` minus the page's Memento-Datetime, s. */
  delta?: number;
  /** Another capture of it with another payload lies between its capture and the page's time. */
  changed: boolean;
}

/** The panel: its entries and a one-line summary. */
export interface CoherencePanel {
  entries: PanelEntry[];
  /** The page names more resources than listed, or was read only in part. */
  more: boolean;
  summary: string;
}

/** The decoded text of a stored HTML response, its first `limit` bytes; closes `stored`. */
async function pageText(stored: StoredResponse, limit: number): Promise<{ text: string; cut: boolean }> {
  const enc = storedContentEncoding(stored);
  if (stored.bodyLength === 0 || (enc && !canDecode(enc))) {
    stored.close();
    return { text: '', cut: false };
  }
  let text = '';
  const { cut, rest } = await readDecodedText(stored, enc, limit, (s) => (text += s));
  return { text: text + rest, cut };
}

/** A resource's capture found, with whether it changed in between. */
type Found = { capture: ResourceCapture; changed: boolean };

/** A row of the panel's statements: the resource's place in the list, its capture, and whether it changed in between. */
type FoundRow = { i: number; archive_id: string; uri_r: string; datetime: number; changed: number };

/**
 * The captures the replay shows at `t` of the resources `urlkeys` (each the
 * nearest, a tie to the earlier, in any archive), and whether another
 * capture with another digest lies strictly between each and `pageTime`:
 * one statement for all (a JSON array of urlkeys, two seeks of the
 * `(urlkey, datetime)` index per key, then the row and an `EXISTS` range
 * scan), among the captures `cond` shows.
 */
async function capturesAt(app: FastifyInstance, urlkeys: string[], t: number, pageTime: number, cond = ''): Promise<Map<number, Found>> {
  const { sql } = app.store.index;
  const rows = await app.store.index.browse<FoundRow>(
    cond ? null : 'web.panel',
    `WITH k AS (${sql.jsonTexts('$keys')}),
          n AS MATERIALIZED (SELECT i, value AS urlkey,
            (SELECT datetime FROM memento WHERE urlkey = k.value AND datetime <= $t${cond} ORDER BY datetime DESC LIMIT 1) AS b,
            (SELECT datetime FROM memento WHERE urlkey = k.value AND datetime > $t${cond} ORDER BY datetime ASC LIMIT 1) AS a FROM k),
          c AS (SELECT i, urlkey, CASE WHEN b IS NULL THEN a WHEN a IS NULL THEN b WHEN a - $t < $t - b THEN a ELSE b END AS dt
            FROM n WHERE a IS NOT NULL OR b IS NOT NULL)
     SELECT c.i, m.archive_id, m.uri_r, m.datetime,
       CASE WHEN EXISTS (SELECT 1 FROM memento WHERE urlkey = c.urlkey AND datetime > ${sql.least('c.dt', '$page')}
         AND datetime < ${sql.greatest('c.dt', '$page')} AND digest != m.digest${cond}) THEN 1 ELSE 0 END AS changed
     FROM c JOIN memento m ON m.id = (SELECT id FROM memento WHERE urlkey = c.urlkey AND datetime = c.dt${cond} ORDER BY id LIMIT 1)`,
    { $keys: JSON.stringify(urlkeys), $t: t, $page: pageTime },
  );
  const out = new Map<number, Found>();
  for (const r of rows) out.set(r.i, { capture: { archiveId: r.archive_id, uriR: r.uri_r, datetime: r.datetime }, changed: Number(r.changed) === 1 });
  return out;
}

/**
 * The captures of the resources `urls` the replay shows at `t` ({@link capturesAt}), by place in `urls`: those
 * whose access rules hide nothing in one statement, each of the others in one of its own (its rules' condition).
 * A resource the rules hide, or whose URL the archive does not take, is absent.
 */
async function capturesOf(app: FastifyInstance, urls: readonly string[], t: number, pageTime: number): Promise<Map<number, Found>> {
  const open: { i: number; urlkey: string }[] = [];
  const ruled: { i: number; urlkey: string; cond: string }[] = [];
  urls.forEach((url, i) => {
    let urlkey: string;
    try {
      urlkey = parseUriR(url, app.config.maxUrlLength).urlkey;
    } catch {
      return;
    }
    const policy = app.access.policy(urlkey);
    if (policy.open) open.push({ i, urlkey });
    else ruled.push({ i, urlkey, cond: ` AND (${rangeSql(policy.ranges('allow'))})` });
  });
  const out = new Map<number, Found>();
  if (open.length) {
    const found = await capturesAt(
      app,
      open.map((o) => o.urlkey),
      t,
      pageTime,
    );
    for (const [j, f] of found) out.set(open[j].i, f);
  }
  for (const r of ruled) {
    const f = (await capturesAt(app, [r.urlkey], t, pageTime, r.cond)).get(0);
    if (f) out.set(r.i, f);
  }
  return out;
}

/**
 * The panel of a replayed page (see the module comment); `undefined` when
 * the page is not HTML or its record cannot be read.
 *
 * @param page the capture shown
 * @param t the reader's time the frame replays at (epoch s)
 */
export async function coherencePanel(app: FastifyInstance, page: Capture, t: number): Promise<CoherencePanel | undefined> {
  if (!isHtml(page.mime)) return undefined;
  const row = await app.store.index.rowAt(page.archive_id, page.urlkey, page.datetime);
  if (!row) return undefined;
  let stored: StoredResponse;
  try {
    stored = await app.store.readResponse(row);
  } catch {
    return undefined;
  }
  const { text, cut } = await pageText(stored, PANEL_TEXT_LIMIT);
  const { resources, more } = embeddedResources(text, page.uri_r, MAX_EMBEDDED);
  const found = await capturesOf(
    app,
    resources.map((r) => r.url),
    t,
    page.datetime,
  );
  const entries = resources.map((r, i): PanelEntry => {
    const f = found.get(i);
    return f ? { ...r, capture: f.capture, delta: f.capture.datetime - page.datetime, changed: f.changed } : { ...r, changed: false };
  });
  return { entries, more: more || cut, summary: panelSummary(entries, more || cut) };
}

/**
 * The panel's one line: `7 resources: 5 within a day of the page, 2 captured up to 3 days after`, then how many are
 * not archived and how many changed between their capture and the page's time. Every resource captured after the
 * page (the rows' "captured after the page" mark), however soon after, is counted as such, never as within a day.
 */
export function panelSummary(entries: readonly PanelEntry[], more = false): string {
  if (!entries.length) return more ? 'No embedded resource found in the part of the page read' : 'No embedded resources';
  const shown = entries.filter((e) => e.capture);
  const within = shown.filter((e) => e.delta! <= 0 && e.delta! >= -DAY).length;
  const group = (list: PanelEntry[], side: string) => {
    if (!list.length) return undefined;
    const far = Math.max(...list.map((e) => Math.abs(e.delta!)));
    return `${list.length} captured ${list.length === 1 ? '' : 'up to '}${span(far)} ${side}`;
  };
  const missing = entries.length - shown.length;
  const parts = [
    within ? `${within} within a day of the page` : undefined,
    group(
      shown.filter((e) => e.delta! < -DAY),
      'before',
    ),
    group(
      shown.filter((e) => e.delta! > 0),
      'after',
    ),
    missing ? `${missing} not archived` : undefined,
  ].filter((p) => p !== undefined);
  const changed = entries.filter((e) => e.changed).length;
  const head = `${plural(entries.length, 'resource')}${more ? ' (the first found)' : ''}: ${parts.join(', ')}`;
  return changed ? `${head}; ${changed} changed between ${changed === 1 ? 'its' : 'their'} capture and the page’s` : head;
}
