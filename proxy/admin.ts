/**
 * The admin server (`admin_listen`): `GET /metrics`, the proxy's metrics in
 * the Prometheus text format 0.0.4 (proxy/metrics.ts), and `GET /healthz`:
 * `200 ok`, or 503 with one line per archive that is unreachable while
 * captures wait for it in the spool. Nothing else; it is meant for a
 * loopback or management address only.
 */
import http from 'node:http';
import { sendError, sendText } from './answers.js';

/**
 * What is wrong, one line each (the spool's archives, proxy/spool/spool.ts
 * `health`; with workers, also a worker that is not running); empty when
 * all is well.
 */
export type HealthCheck = () => string[] | Promise<string[]>;

/**
 * Where `/metrics` comes from: one proxy's {@link ProxyMetrics}
 * (proxy/metrics.ts), or the workers' together (proxy/workers.ts).
 * `text()` rejects when the metrics cannot be had (a worker that does not
 * answer): the admin server then answers 503 with the error's message.
 */
export interface MetricsSource {
  text(): Promise<string>;
  /** The `Content-Type` of {@link text}'s answer. */
  readonly contentType: string;
}

/** An admin server for `metrics` and `health` (not listening yet). */
export function createAdminServer(metrics: MetricsSource, health: HealthCheck = () => []): http.Server {
  return http.createServer((req, res) => void answerAdmin(metrics, health, req, res));
}

/** `GET`/`HEAD` `/metrics` and `/healthz` (`200 ok`, or 503 and what is wrong); 405 for other methods, 404 for other paths. */
async function answerAdmin(metrics: MetricsSource, health: HealthCheck, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const p = (req.url ?? '/').split('?')[0];
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.setHeader('Allow', 'GET, HEAD');
    return sendError(res, 405, 'the admin server answers GET /metrics and GET /healthz');
  }
  if (p === '/metrics') {
    let body: string;
    try {
      body = await metrics.text();
    } catch (err) {
      return sendError(res, 503, (err as Error).message);
    }
    res.writeHead(200, { 'Content-Type': metrics.contentType, 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store' });
    res.end(req.method === 'HEAD' ? undefined : body);
    return;
  }
  if (p === '/healthz') {
    const problems = await health();
    return problems.length ? sendText(res, 503, problems.map((l) => l + '\n').join('')) : sendText(res, 200, '200 ok\n');
  }
  sendError(res, 404, `the admin server answers /metrics and /healthz, not ${JSON.stringify(p)}`);
}
