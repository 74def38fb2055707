/**
 * How the archive sends a page for people: an Eta template of
 * archive/web/views/ rendered with what every page needs (the base URL of
 * the pages, the nonce of its stylesheet and script, the formatting
 * helpers), under a nonce-based Content-Security-Policy. The `/web/` pages
 * (routes.ts) and the error answers a browser gets anywhere in the archive
 * (the 404 of a URL never captured at a Memento address, the error handler
 * of archive/server.ts) are sent here, so that they look and behave alike.
 *
 * A page is the archive's own: it never holds markup of a memento (every
 * value is escaped by the template); its script and stylesheet load by
 * the nonce alone (every memento is on the archive's origin, so `'self'`
 * would admit a stored page's script).
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Eta } from 'eta';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { toTimestamp14 } from '#shared/http-date.js';
import type { ArchiveConfig } from '../config.js';
import { baseOf, onReplayHost, pagesOrigin } from '../http/context.js';
import { REPLAY_SCRIPT_PATH } from '../replay/urls.js';
import { count, displayHost, distance, displayUrl, isoDate, longDate, monthName, plural, shortDate, span } from './format.js';

const VIEWS = fileURLToPath(new URL('./views/', import.meta.url));
const HTML = 'text/html; charset=utf-8';
const eta = new Eta({ views: VIEWS, autoEscape: true, autoTrim: false, cache: true });

/** The formatting helpers the templates call (`it.fmt.longDate(t)`…). */
const FORMAT = { count, distance, isoDate, longDate, monthName, plural, shortDate, span, ts14: toTimestamp14, url: displayUrl, host: displayHost };

/**
 * The Content-Security-Policy of every page: its stylesheet and script by
 * `nonce` alone, frames only from `frames` (the origin mementos are served
 * from), images from its origin, forms to its origin, nothing else (no
 * fetch, no plugin, no base element; forms to `forms`, its own origin
 * unless told); framed by `ancestors` (none, but for
 * an error page a memento's frame may show: the pages' origin).
 */
export function pageCsp(nonce: string, frames: string, ancestors = "'none'", forms = "'self'"): string {
  return (
    `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; img-src 'self' data:; frame-src ${frames}; ` +
    `form-action ${forms}; base-uri 'none'; object-src 'none'; frame-ancestors ${ancestors}`
  );
}

/** What a page needs besides its template's own data. */
export interface PageOptions {
  /** The base URL its links, stylesheet and script use (no trailing slash). */
  base: string;
  /** Origin its frames may come from (`frame-src`); `'none'` when it has none. */
  frames: string;
  /** Who may frame it (`frame-ancestors`). */
  ancestors?: string;
  /** Where its forms may go (`form-action`; its own origin unless told). */
  forms?: string;
  /** Load the replay shim too (an error answered at a Memento address: it tells the banner page where its frame went). */
  shim?: string;
}

/** A page ready to send: its body and the headers that go with it (lower-case names). */
export interface Page {
  html: string;
  headers: Record<string, string>;
}

/**
 * Renders `view` with `data` as an HTML page: the body, and its headers:
 * `Content-Type`, the {@link pageCsp} (with a fresh nonce),
 * `X-Content-Type-Options: nosniff`.
 */
export function page(view: string, data: Record<string, unknown>, opts: PageOptions): Page {
  const nonce = randomBytes(16).toString('base64url');
  const html = eta.render(view, { fmt: FORMAT, ...data, base: opts.base, nonce, shim: opts.shim });
  return {
    html,
    headers: { 'content-type': HTML, 'content-security-policy': pageCsp(nonce, opts.frames, opts.ancestors, opts.forms), 'x-content-type-options': 'nosniff' },
  };
}

/** Sends {@link page} with `status`; headers already set on `reply` are kept. */
export function sendPage(reply: FastifyReply, status: number, view: string, data: Record<string, unknown>, opts: PageOptions): FastifyReply {
  const p = page(view, data, opts);
  return reply.code(status).headers(p.headers).send(p.html);
}

/** The heading of an error page for a status. */
export function errorTitle(status: number): string {
  return status === 404 ? 'Not found' : status === 451 ? 'Withheld' : status >= 500 ? 'Archive error' : 'Cannot show this';
}

/**
 * An error answer as a page for a browser (the caller sends it with the
 * status and headers of its text answer): the error page (`view`, `error`
 * unless told) in the look of the `/web/` pages, and `Vary` (`vary`, the
 * answer's own, if any) with `accept` added, since the body depends on it.
 * At a Memento address the page may be shown in the banner page's frame:
 * it may be framed by the pages' origin, and it loads the replay shim,
 * which posts its address to the banner page as a replayed page does (the
 * banner then moves to `/web/<ts>/<URL>`, which says what the archive has
 * there). On `replay_origin`, which serves none of the pages, only an
 * error at a Memento address is a page (`undefined` for the others: they
 * stay one line), and its links, stylesheet, script and search form are
 * the pages' (`base_url`).
 */
export function errorPage(
  config: Pick<ArchiveConfig, 'baseUrl' | 'listen' | 'replayOrigin'>,
  req: FastifyRequest,
  status: number,
  data: Record<string, unknown>,
  vary?: string,
  view = 'error',
): Page | undefined {
  const onReplay = onReplayHost(config, req.headers.host);
  const atMemento = req.routeOptions?.config?.resource === 'memento';
  if (onReplay && !atMemento) return undefined;
  // fastify's router errors (a malformed address) come with a bare request: its base is worked out here.
  const own = typeof req.base === 'string' && req.base ? req.base : baseOf(config, req.headers.host);
  const base = onReplay && config.baseUrl ? config.baseUrl : own;
  const pages = pagesOrigin(config, own);
  const p = page(
    view,
    { title: errorTitle(status), ...data },
    {
      base,
      frames: "'none'",
      ancestors: pages,
      forms: pages,
      shim: atMemento ? `${own}${REPLAY_SCRIPT_PATH}` : undefined,
    },
  );
  p.headers.vary = vary ? `${vary}, accept` : 'accept';
  return p;
}
