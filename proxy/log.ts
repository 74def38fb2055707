/**
 * The capture proxy's log: one JSON object per line on stdout, in the
 * format both daemons write (shared/log.ts).
 *
 * Every entry has `level` (`info`, `warn`, `error`), `time` (ISO 8601, UTC)
 * and `msg`; the rest depends on the entry (`type: "request"` is the one
 * line per proxied request, see proxy/exchange.ts).
 */
import { jsonLinesLogger } from '#shared/log.js';

/** One log entry; `level` defaults to `info`. */
export interface LogEntry {
  level?: 'info' | 'warn' | 'error';
  msg: string;
  [key: string]: unknown;
}

/** Where the proxy's modules write their log entries. Must not throw. */
export type Logger = ((entry: LogEntry) => void) & { flush?: () => void };

/**
 * A logger writing JSON lines (`{"level":"info","time":"…","msg":"…",…}`,
 * the format of shared/log.ts) to file descriptor `fd` (default 1,
 * stdout), asynchronously; `flush()` writes out what is buffered (call it
 * before `process.exit`).
 */
export function pinoLogger(fd = 1): Logger {
  const { logger: p, flush } = jsonLinesLogger(fd);
  const log: Logger = (entry) => {
    if (entry.level === undefined) return void p.info(entry);
    // pino writes `level` itself: the entry goes without it (`msg` stays a field of the entry, in its place).
    const { level, ...rest } = entry;
    p[level](rest);
  };
  log.flush = flush;
  return log;
}

/** A logger that drops everything. */
export const silentLogger: Logger = () => {};
