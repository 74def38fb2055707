/**
 * The capture proxy's log: one JSON object per line on stdout (pino), easy
 * to read, easy to grep, and `jq` takes it as it is.
 *
 * Every entry has `level` (`info`, `warn`, `error`), `time` (ISO 8601, UTC)
 * and `msg`; the rest depends on the entry (`type: "request"` is the one
 * line per proxied request, see proxy/exchange.ts).
 */
import pino from 'pino';

/** One log entry; `level` defaults to `info`. */
export interface LogEntry {
  level?: 'info' | 'warn' | 'error';
  msg: string;
  [key: string]: unknown;
}

/** Where the proxy's modules write their log entries. Must not throw. */
export type Logger = ((entry: LogEntry) => void) & { flush?: () => void };

/**
 * A pino logger writing JSON lines (`{"level":"info","time":"…","msg":"…",…}`)
 * to file descriptor `fd` (default 1, stdout), asynchronously (sonic-boom);
 * `flush()` writes out what is buffered (call it before `process.exit`).
 */
export function pinoLogger(fd = 1): Logger {
  const dest = pino.destination({ dest: fd, sync: false, minLength: 0 });
  const p = pino(
    {
      base: undefined,
      messageKey: 'msg',
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    dest,
  );
  const log: Logger = (entry) => {
    const { level = 'info', msg, ...rest } = entry;
    p[level](rest, msg);
  };
  log.flush = () => {
    try {
      dest.flushSync();
    } catch {
      // not ready yet or closed: nothing to flush
    }
  };
  return log;
}

/** A logger that drops everything. */
export const silentLogger: Logger = () => {};
