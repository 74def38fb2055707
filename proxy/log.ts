/**
 * The capture proxy's log: one JSON object per line on stdout, in the
 * format both daemons write (shared/log.ts).
 *
 * Every entry has `level` (`info`, `warn`, `error`), `time` (ISO 8601, UTC)
 * and `msg`; the rest depends on the entry (`type: "request"` is the one
 * line per proxied request, see proxy/exchange.ts).
 */
import pino from 'pino';
import { jsonLine } from '#shared/log.js';

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
 * the format of shared/log.ts `jsonLine`) to file descriptor `fd`
 * (default 1, stdout), asynchronously (sonic-boom, as pino does): the lines
 * of one turn of the event loop go out together, at its end, in one write;
 * `flush()` writes out what is waiting (call it before `process.exit`).
 */
export function pinoLogger(fd = 1): Logger {
  const dest = pino.destination({ dest: fd, sync: false, minLength: 0 });
  let waiting = '';
  let scheduled = false;
  const writeOut = () => {
    scheduled = false;
    const lines = waiting;
    waiting = '';
    if (lines) dest.write(lines);
  };
  const log: Logger = (entry) => {
    if (entry.level === undefined) waiting += jsonLine('info', entry);
    else {
      // The line's `level` comes first: the entry goes without it.
      const { level, ...rest } = entry;
      waiting += jsonLine(level, rest);
    }
    if (!scheduled) {
      scheduled = true;
      setImmediate(writeOut);
    }
  };
  log.flush = () => {
    writeOut();
    try {
      dest.flushSync();
    } catch {
      // not ready yet, or closed: nothing to flush
    }
  };
  return log;
}

/** A logger that drops everything. */
export const silentLogger: Logger = () => {};
