/**
 * How the proxy stops (SIGTERM, SIGINT, `RunningProxy.close`): no new
 * connections; requests and then their captures in flight get a grace
 * period; what is left is cut (a capture whose body was complete goes to
 * the spool); then the spool's senders, the vhost watcher and the
 * connections to the content servers and the archives are closed.
 */
import type http from 'node:http';
import type httpProxy from 'http-proxy';
import type { Capture } from './capture/capture.js';
import type { Spool } from './spool/spool.js';

/** What {@link drainAndClose} stops. */
export interface ShutdownParts {
  server: http.Server;
  admin?: http.Server;
  /** Captures not settled yet (the set changes as they settle). */
  captures: Set<Capture>;
  spool: Spool;
  proxy: httpProxy;
  /** The connections to the content servers. */
  agent: http.Agent;
  /** The connections to the archives: live PUTs and re-sends. */
  archives: http.Agent;
  /** Closes or detaches the vhost registry (the proxy closes only a registry it opened). */
  releaseVhosts(): Promise<void>;
}

/** Resolves once every capture now in `captures` has settled. */
function settled(captures: Set<Capture>): Promise<unknown> {
  return Promise.all([...captures].map((c) => c.settled));
}

/**
 * Stops the proxy: closes the listener (idle connections at once), waits
 * up to `graceMs` for the requests in flight and then their captures,
 * then cuts the connections and captures left; closes the admin server,
 * the spool, http-proxy and its agent, the connections to the archives,
 * and the vhosts.
 *
 * @param graceMs how long requests and captures in flight may take, ms
 */
export async function drainAndClose(parts: ShutdownParts, graceMs: number): Promise<void> {
  const { server, admin, captures } = parts;
  const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const adminClosed = admin ? new Promise<void>((resolve) => admin.close(() => resolve())) : Promise.resolve();
  admin?.closeAllConnections();
  let timer: NodeJS.Timeout | undefined;
  const grace = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), graceMs)));
  // Requests first (their captures start when their responses do), then the captures.
  const drained = (async () => {
    await serverClosed;
    await settled(captures);
  })();
  const result = await Promise.race([drained, grace]);
  clearTimeout(timer);
  if (result === 'timeout') {
    server.closeAllConnections();
    for (const c of [...captures]) c.abort('the proxy is shutting down');
    await serverClosed;
    await settled(captures);
  }
  await adminClosed;
  await parts.spool.close();
  parts.proxy.close();
  parts.agent.destroy();
  parts.archives.destroy();
  await parts.releaseVhosts();
}
