/**
 * The log format both daemons write: one JSON object per line on stdout
 * (pino), with `level` as a name (`info`, `warn`, `error`), `time` as ISO
 * 8601 UTC and `msg`; easy to grep, and `jq` reads it as it is.
 */
import pino from 'pino';

/** pino's settings for that format. */
export const LOG_FORMAT: pino.LoggerOptions = {
  base: undefined,
  messageKey: 'msg',
  timestamp: pino.stdTimeFunctions.isoTime,
  formatters: { level: (label) => ({ level: label }) },
};

/**
 * A pino logger in that format writing to file descriptor `fd` (default 1,
 * stdout), asynchronously (sonic-boom); call `flush()` on its destination
 * before `process.exit`.
 */
export function jsonLinesLogger(fd = 1): { logger: pino.Logger; flush(): void } {
  const dest = pino.destination({ dest: fd, sync: false, minLength: 0 });
  return {
    logger: pino(LOG_FORMAT, dest),
    flush() {
      try {
        dest.flushSync();
      } catch {
        // not ready yet, or closed: nothing to flush
      }
    },
  };
}
