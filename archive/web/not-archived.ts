/**
 * The "Not archived" page: what the archive says to a person asking for a
 * URL it has no capture of, wherever they ask (a `/web/` calendar or
 * replay, routes.ts, or a Memento address, archive/http/memento.ts). One
 * view (views/not-archived.eta) with one set of data: the URL, a link to
 * it on the live web and to the listing of its site, and the captures of
 * the same URL under this machine's other loopback names.
 */
import type { FastifyInstance } from 'fastify';
import { parseUriR } from '../http/context.js';
import { displayUrl } from './format.js';

/** The names of the loopback host: one machine, which a capture proxy may file under any one of them (its vhost's canonical name). */
const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'];

/** A URI-R (or prefix) under another name of this machine, and what the archive shows of it. */
export interface SameMachine {
  uriR: string;
  /** The path of its calendar (a URL) or listing (a prefix) under the pages' base URL. */
  path: string;
  /** Captures of the URL shown; for a prefix, URLs shown on its listing's first page. */
  total: number;
  /** A prefix with more URLs than its listing's first page. */
  more?: boolean;
}

/**
 * The same URI-R under the loopback host's other names: a capture proxy
 * with `UseCanonicalName On` files `http://127.0.0.1:8080/` under
 * `http://localhost:8080/`, and the archive does not know the proxy's
 * aliases, but these names are one machine. None for another host.
 */
export function sameMachineNames(app: FastifyInstance, uriR: string): { uriR: string; urlkey: string }[] {
  const u = new URL(uriR);
  if (!LOOPBACK_NAMES.includes(u.hostname) || !uriR.startsWith(u.origin)) return [];
  const out: { uriR: string; urlkey: string }[] = [];
  for (const name of LOOPBACK_NAMES) {
    if (name === u.hostname) continue;
    try {
      out.push(parseUriR(`${u.protocol}//${name}${u.port ? `:${u.port}` : ''}${uriR.slice(u.origin.length)}`, app.config.maxUrlLength));
    } catch {
      // longer than the URI-R limit under this name: nothing can be filed under it
    }
  }
  return out;
}

/** {@link sameMachineNames} of a URI-R with captures the access rules show: at most two index lookups. */
export async function sameMachineCaptures(app: FastifyInstance, uriR: string): Promise<SameMachine[]> {
  const out: SameMachine[] = [];
  for (const other of sameMachineNames(app, uriR)) {
    const summary = await app.visible.pages.calendar(other.urlkey);
    if (summary) out.push({ uriR: other.uriR, path: `/web/*/${other.uriR}`, total: summary.total });
  }
  return out;
}

/**
 * The data of the "Not archived" page of `uriR` (an absolute URI-R the
 * archive shows no capture of): its title, the URI-R, its site's origin
 * and {@link sameMachineCaptures}. The caller sends it with the status 404.
 */
export async function notArchivedData(app: FastifyInstance, uriR: string): Promise<Record<string, unknown>> {
  const sameMachine = await sameMachineCaptures(app, uriR);
  return { title: `Not archived: ${displayUrl(uriR)}`, uriR, site: new URL(uriR).origin, sameMachine };
}
