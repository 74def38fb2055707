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
 * archive/replay/embedded.ts), in the `panel` work pool's thread
 * (archive/work/pool.ts) within {@link PANEL_DEADLINE_MS}: a hostile page
 * (megabytes of `style` attributes) costs its thread, never the event
 * loop, and a page whose list takes longer is shown without it, saying
 * why. Each page's list is kept ({@link PANEL_KEPT} pages), so that a
 * page read again is not scanned again. For each resource, the index
 * gives the capture nearest to T among those the access rules show (a
 * hidden resource reads as "not archived", as one never captured), and
 * whether another capture of it with a different payload digest lies
 * between it and the page's Memento-Datetime, among the first
 * {@link PANEL_BETWEEN} captures in between (a resource captured more
 * often than that in between, all of those the same, is shown as "at
 * least … captures in between", not compared further): one statement for the
 * resources that share their rules' condition (all those whose rules hide
 * nothing in one; a few seeks of the `(urlkey, datetime)` index each), at
 * most {@link PANEL_STATEMENTS} statements, the list cut before the
 * resource that would need one more. The cost of a replay page is so
 * bounded by one read of the page's record, one task of bounded time, and
 * {@link PANEL_STATEMENTS} statements over {@link MAX_EMBEDDED}
 * resources' seeks and {@link PANEL_BETWEEN} + 1 index entries each.
 * Everything here is text from a stored page: the
 * template escapes it.
 */
import type { FastifyInstance } from 'fastify';
import { LRUCache } from 'lru-cache';
import { parseUriR } from '../http/context.js';
import { storedContentEncoding } from '../replay/content-coding.js';
import { canDecode } from '../replay/content-coding.js';
import { isHtml } from '../replay/html-base.js';
import { type EmbeddedResource, MAX_EMBEDDED } from '../replay/embedded.js';
import type { MementoRow } from '../read/rows.js';
import type { StoredResponse } from '../store/warcs/warc-reader.js';
import { plural, span } from './format.js';
import type { Capture } from '../read/pages.js';
import { readDecodedText } from './text.js';
import { WorkRefused } from '../work/pool.js';

export { MAX_EMBEDDED };

/** Most decoded bytes of the page read for its resources. */
export const PANEL_TEXT_LIMIT = 2 * 1024 * 1024;
/** Most time the list of a page's resources may take in its thread, ms. */
export const PANEL_DEADLINE_MS = 1000;
/** Most index statements of one panel. */
export const PANEL_STATEMENTS = 8;
/** Pages whose resource lists are kept. */
export const PANEL_KEPT = 512;
/** Most captures of a resource between its capture and the page's time compared for a change. */
export const PANEL_BETWEEN = 100;

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
  /** Another capture of it with another payload lies between its capture and the page's time (among the first {@link PANEL_BETWEEN}). */
  changed: boolean;
  /** More than {@link PANEL_BETWEEN} captures of it lie in between, and none of the first ones differs: whether it changed is not known. */
  notCompared?: boolean;
}

/** The panel: its entries and a one-line summary. */
export interface CoherencePanel {
  entries: PanelEntry[];
  /** The page names more resources than listed, or was read only in part. */
  more: boolean;
  summary: string;
  /** Why no resource is listed, when the list was not made (the page takes too long to read for it, the archive is busy). */
  unlisted?: string;
  /** How many captures in between were compared for each resource ({@link PANEL_BETWEEN}). */
  between: number;
}

/** A page's resources as its thread found them, or why they were not (a task past its deadline, the thread's failure). */
type ResourceList = { resources: EmbeddedResource[]; more: boolean } | { unlisted: string };

/** The lists kept, per daemon, by page record (file, offset and digest: a record never changes where it is). */
const kept = new WeakMap<FastifyInstance, LRUCache<string, ResourceList>>();

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

/** A resource's capture found, with whether it changed in between (or more captures lie in between than were compared). */
type Found = { capture: ResourceCapture; changed: boolean; notCompared: boolean };

/**
 * The captures the replay shows at `t` of the resources `urls` (each the
 * nearest shown one in any archive: VisibleIndex `nearestMany`), by place in
 * `urls`, and whether another capture with another digest lies strictly
 * between each and `pageTime` among the first {@link PANEL_BETWEEN} there;
 * at most {@link PANEL_STATEMENTS} statements, `upTo` how many of `urls`
 * fit in them, in order. A resource the rules hide, or whose URL the
 * archive does not take, is absent.
 */
async function capturesOf(app: FastifyInstance, urls: readonly string[], t: number, pageTime: number): Promise<{ found: Map<number, Found>; upTo: number }> {
  const keys: { i: number; urlkey: string }[] = [];
  for (let i = 0; i < urls.length; i++) {
    try {
      keys.push({ i, urlkey: parseUriR(urls[i], app.config.maxUrlLength).urlkey });
    } catch {
      // not a URL the archive takes: absent
    }
  }
  const many = await app.visible.nearestMany(
    keys.map((k) => k.urlkey),
    t,
    pageTime,
    PANEL_BETWEEN,
    PANEL_STATEMENTS,
  );
  const found = new Map<number, Found>();
  for (const [j, r] of many.found)
    found.set(keys[j].i, { capture: { archiveId: r.archive_id, uriR: r.uri_r, datetime: r.datetime }, changed: r.changed, notCompared: !r.changed && r.more });
  return { found, upTo: many.upTo < keys.length ? keys[many.upTo].i : urls.length };
}

/**
 * The resources of a stored HTML page (embedded.ts) in the `panel` work pool's thread, kept per record; a list
 * that could not be made says why (the thread past {@link PANEL_DEADLINE_MS} is kept as such too: reading the
 * page again would take as long; a busy pool is not kept).
 */
async function resourcesOf(app: FastifyInstance, page: Capture, row: MementoRow): Promise<ResourceList> {
  let cache = kept.get(app);
  if (!cache) kept.set(app, (cache = new LRUCache<string, ResourceList>({ max: PANEL_KEPT })));
  const key = `${row.warc_file}\n${row.warc_offset}\n${page.digest}`;
  const hit = cache.get(key);
  if (hit) return hit;
  let stored: StoredResponse;
  try {
    stored = await app.store.readResponse(row);
  } catch {
    return { unlisted: 'the page’s record could not be read' };
  }
  const { text, cut } = await pageText(stored, PANEL_TEXT_LIMIT);
  let list: ResourceList;
  try {
    const r = await app.work.panel.run('embedded', { html: text, uriR: page.uri_r, max: MAX_EMBEDDED }, PANEL_DEADLINE_MS);
    list = { resources: r.resources, more: r.more || cut };
  } catch (err) {
    if (!(err instanceof WorkRefused)) throw err;
    if (err.outcome === 'busy') return { unlisted: 'the archive is busy; reload the page to see them' };
    list = { unlisted: 'the page takes longer to read for them than one page may take' };
  }
  cache.set(key, list);
  return list;
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
  const row = await app.visible.rowOf(page);
  if (!row) return undefined;
  const list = await resourcesOf(app, page, row);
  if ('unlisted' in list) return { entries: [], more: false, summary: 'Embedded resources not listed', unlisted: list.unlisted, between: PANEL_BETWEEN };
  const { found, upTo } = await capturesOf(
    app,
    list.resources.map((r) => r.url),
    t,
    page.datetime,
  );
  const entries = list.resources.slice(0, upTo).map((r, i): PanelEntry => {
    const f = found.get(i);
    if (!f) return { ...r, changed: false };
    return { ...r, capture: f.capture, delta: f.capture.datetime - page.datetime, changed: f.changed, ...(f.notCompared ? { notCompared: true } : {}) };
  });
  const more = list.more || upTo < list.resources.length;
  return { entries, more, summary: panelSummary(entries, more), between: PANEL_BETWEEN };
}

/**
 * The panel's one line: `7 resources: 5 within a day of the page, 2 captured up to 3 days after`, then how many are
 * not archived, how many changed between their capture and the page's time, and how many have more captures in
 * between than were compared. Every resource captured after the page (the rows' "captured after the page" mark),
 * however soon after, is counted as such, never as within a day.
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
  const unknown = entries.filter((e) => e.notCompared).length;
  const head = `${plural(entries.length, 'resource')}${more ? ' (the first found)' : ''}: ${parts.join(', ')}`;
  const withChanged = changed ? `${head}; ${changed} changed between ${changed === 1 ? 'its' : 'their'} capture and the page’s` : head;
  return unknown ? `${withChanged}; ${unknown} with more than ${PANEL_BETWEEN} captures in between, not compared further` : withChanged;
}
