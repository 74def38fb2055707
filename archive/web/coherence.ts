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
 * archive/replay/embedded.ts); for each, one index statement finds the
 * capture nearest to T among those the access rules show (a hidden
 * resource reads as "not archived", as one never captured), and whether
 * another capture of it with a different payload digest lies between it
 * and the page's Memento-Datetime. The cost of a replay page is so bounded
 * by one read of the page's record and {@link MAX_EMBEDDED} index seeks.
 * Everything here is text from a stored page: the template escapes it.
 */
import type { FastifyInstance } from 'fastify';
import { getHeader } from '#shared/http-head.js';
import { parseUriR } from '../http/context.js';
import { storedContentEncoding } from '../memento/body.js';
import { canDecode, decodeBody } from '../memento/content-coding.js';
import { isHtml } from '../memento/html-base.js';
import { embeddedResources, MAX_EMBEDDED } from '../replay/embedded.js';
import { rangeSql } from '../store/index-db.js';
import type { StoredResponse } from '../store/warc-reader.js';
import { plural, span } from './format.js';
import { type Capture, captureRow } from './queries.js';
import { decoderFor } from './text.js';

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
  const contentType = getHeader(stored.headers, 'content-type');
  let decoder: TextDecoder | undefined;
  let text = '';
  let read = 0;
  let cut = false;
  try {
    for await (const chunk of enc ? decodeBody(stored.body, enc) : stored.body) {
      let buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      if (read + buf.length > limit) {
        buf = buf.subarray(0, limit - read);
        cut = true;
      }
      read += buf.length;
      decoder ??= decoderFor(contentType, buf);
      text += decoder.decode(buf, { stream: true });
      if (cut) break;
    }
  } catch {
    // a corrupt content-coding: what was read so far
  } finally {
    stored.close();
  }
  return { text: text + (decoder?.decode() ?? ''), cut };
}

/**
 * The capture of `url` the replay shows at `t` (the nearest, a tie to the
 * earlier, in any archive, among those the access rules show), and whether
 * another shown capture with another digest lies strictly between it and
 * `pageTime`. One statement over the `(urlkey, datetime)` index.
 */
async function captureAt(app: FastifyInstance, url: string, t: number, pageTime: number): Promise<{ capture: ResourceCapture; changed: boolean } | undefined> {
  let urlkey: string;
  try {
    urlkey = parseUriR(url, app.config.maxUrlLength).urlkey;
  } catch {
    return undefined;
  }
  const policy = app.access.policy(urlkey);
  const cond = policy.open ? '' : ` AND (${rangeSql(policy.ranges('allow'))})`;
  const cols = 'archive_id, uri_r, datetime, digest';
  const rows = await app.store.index.browse<{ archive_id: string; uri_r: string; datetime: number; changed: number }>(
    policy.open ? 'web.panel' : null,
    `WITH b AS (SELECT ${cols} FROM memento WHERE urlkey = $urlkey AND datetime <= $t${cond} ORDER BY datetime DESC LIMIT 1),
          a AS (SELECT ${cols} FROM memento WHERE urlkey = $urlkey AND datetime > $t${cond} ORDER BY datetime ASC LIMIT 1),
          c AS (SELECT * FROM (SELECT * FROM b UNION ALL SELECT * FROM a) ORDER BY abs(datetime - $t), datetime LIMIT 1)
     SELECT c.archive_id, c.uri_r, c.datetime, EXISTS (SELECT 1 FROM memento WHERE urlkey = $urlkey
       AND datetime > min(c.datetime, $page) AND datetime < max(c.datetime, $page) AND digest != c.digest${cond}) AS changed FROM c`,
    { $urlkey: urlkey, $t: t, $page: pageTime },
  );
  const r = rows[0];
  return r && { capture: { archiveId: r.archive_id, uriR: r.uri_r, datetime: r.datetime }, changed: r.changed === 1 };
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
  const row = await captureRow(app.store.index, page);
  if (!row) return undefined;
  let stored: StoredResponse;
  try {
    stored = await app.store.readResponse(row);
  } catch {
    return undefined;
  }
  const { text, cut } = await pageText(stored, PANEL_TEXT_LIMIT);
  const { resources, more } = embeddedResources(text, page.uri_r, MAX_EMBEDDED);
  const entries = await Promise.all(
    resources.map(async (r): Promise<PanelEntry> => {
      const found = await captureAt(app, r.url, t, page.datetime);
      if (!found) return { ...r, changed: false };
      return { ...r, capture: found.capture, delta: found.capture.datetime - page.datetime, changed: found.changed };
    }),
  );
  return { entries, more: more || cut, summary: panelSummary(entries, more || cut) };
}

/**
 * The panel's one line: `7 resources: 6 within a day of the page, 1 captured 3 days after`, then how many are
 * not archived and how many changed between their capture and the page's time.
 */
export function panelSummary(entries: readonly PanelEntry[], more = false): string {
  if (!entries.length) return more ? 'No embedded resource found in the part of the page read' : 'No embedded resources';
  const shown = entries.filter((e) => e.capture);
  const within = shown.filter((e) => Math.abs(e.delta!) <= DAY).length;
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
      shown.filter((e) => e.delta! > DAY),
      'after',
    ),
    missing ? `${missing} not archived` : undefined,
  ].filter((p) => p !== undefined);
  const changed = entries.filter((e) => e.changed).length;
  const head = `${plural(entries.length, 'resource')}${more ? ' (the first found)' : ''}: ${parts.join(', ')}`;
  return changed ? `${head}; ${changed} changed between ${changed === 1 ? 'its' : 'their'} capture and the page’s` : head;
}
