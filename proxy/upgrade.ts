/**
 * Upgrade requests (WebSocket, RFC 6455 §4; any `Upgrade`, RFC 9110 §7.8):
 * routed by `Host` like any request (421 when no vhost serves it), passed
 * through both ways by http-proxy, never captured; one log line when the
 * connection closes.
 */
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import type httpProxy from 'http-proxy';
import { refuseSocket, socketAnswer } from './answers.js';
import { type LogRequest, logNoVhost, noVhostReason } from './exchange.js';
import { dropProxyOwned } from './forwarding.js';
import type { VhostRegistry } from './vhosts.js';

/** What the upgrades of one proxy share. */
export interface UpgradeContext {
  vhosts: VhostRegistry;
  proxy: httpProxy;
  logRequest: LogRequest;
}

/**
 * Listens to http-proxy's `proxyReqWs` and returns the server's
 * `'upgrade'` listener, and the `'error'` listener for upgrades (the
 * caller dispatches http-proxy's `'error'` between this and the exchanges).
 */
export function upgradeHandler(ctx: UpgradeContext): {
  handle(req: http.IncomingMessage, socket: Duplex, head: Buffer): void;
  onError(err: Error, req: http.IncomingMessage, socket: Duplex): void;
} {
  /** The content server's answer to each upgrade request: 101, or the status it refused with. */
  const upgrades = new WeakMap<http.IncomingMessage, { status?: number }>();
  ctx.proxy.on('proxyReqWs', (proxyReq, req) => {
    const up = upgrades.get(req);
    if (!up) return;
    proxyReq.on('upgrade', (r: http.IncomingMessage) => (up.status = r.statusCode ?? 101));
    proxyReq.on('response', (r: http.IncomingMessage) => (up.status = r.statusCode));
  });
  return {
    handle(req, socket, head) {
      const started = performance.now();
      const vhost = ctx.vhosts.lookup(req.headers.host);
      socket.on('error', () => {});
      if (!vhost) {
        refuseSocket(socket, socketAnswer(421, noVhostReason(req)));
        logNoVhost(ctx.logRequest, req, 0, req.headers.upgrade);
        return;
      }
      const up: { status?: number } = {};
      upgrades.set(req, up);
      // http.Server sockets are half-open capable; a client that hangs up is gone (a WebSocket closes with a frame first).
      socket.on('end', () => socket.end());
      dropProxyOwned(req.headers); // X-Client-IP, X-Forwarded-Host… are the proxy's word (proxy/forwarding.ts)
      socket.once('close', () => {
        const ms = Math.round(performance.now() - started);
        const { method, url: target, headers } = req;
        const { serverName, upstream } = vhost;
        ctx.logRequest(
          {
            msg: 'request',
            type: 'request',
            method,
            host: headers.host,
            target,
            status: up.status ?? 0,
            ms,
            client: req.socket.remoteAddress,
            vhost: serverName,
            upstream,
            upgrade: headers.upgrade,
            capture: 'no: websocket',
          },
          'info',
        );
      });
      ctx.proxy.ws(req, socket, head, { target: vhost.upstream, xfwd: true });
    },
    onError(_err, req, socket) {
      const up = upgrades.get(req);
      if (up && up.status === undefined && socket.writable) {
        up.status = 502;
        refuseSocket(socket, socketAnswer(502, 'the content server could not be reached'));
      } else socket.destroy();
    },
  };
}
