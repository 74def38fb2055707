/**
 * The log format both daemons write: one JSON object per line on stdout
 * (pino), with `level` as a name (`info`, `warn`, `error`), `time` as ISO
 * 8601 UTC and `msg`; easy to grep, and `jq` reads it as it is.
 */
import pino from 'pino';

let isoMs = -1;
let isoField = '';

/**
 * pino's `timestamp`: `,"time":"<ISO 8601 UTC, milliseconds>"`, formatted
 * once per millisecond (the proxy writes a line per request, several in the
 * same millisecond under load; `Date.prototype.toISOString` was a
 * measurable share of its time per request).
 */
export function isoTimeField(): string {
  const now = Date.now();
  if (now !== isoMs) {
    isoMs = now;
    isoField = `,"time":"${new Date(now).toISOString()}"`;
  }
  return isoField;
}

/**
 * One line of that format, without pino: `{"level":"<level>","time":"…"`,
 * then the fields of `entry` in their order (JSON.stringify's rules:
 * `undefined` left out, a number that is not finite written `null`), then
 * `}` and a newline. An entry JSON cannot write (a cycle, a BigInt) gives
 * a line with its `msg` and an `error` saying so. For a daemon that writes
 * a line per request: V8's JSON.stringify does it in one pass, pino's
 * serialiser field by field.
 */
export function jsonLine(level: string, entry: object): string {
  let body: string;
  try {
    body = JSON.stringify(entry);
  } catch (err) {
    body = JSON.stringify({ msg: String((entry as { msg?: unknown }).msg), error: `log entry not serialisable: ${(err as Error).message}` });
  }
  return `{"level":"${level}"${isoTimeField()}${body.length > 2 ? ',' + body.slice(1) : '}'}\n`;
}

/** pino's settings for that format. */
export const LOG_FORMAT: pino.LoggerOptions = {
  base: undefined,
  messageKey: 'msg',
  timestamp: isoTimeField,
  formatters: { level: (label) => ({ level: label }) },
};

/** A pino destination (sonic-boom): what `endLog` ends. */
export type LogDestination = ReturnType<typeof pino.destination>;

/**
 * Writes out every line `dest` holds, in order, and stops it (sonic-boom
 * `end()`; file descriptors 1 and 2 stay open, any other is closed). The
 * promise resolves when the last line is written, when writing fails, or
 * after `maxMs` milliseconds (default 2,000: a reader that stopped reading
 * the pipe must not keep a stopping daemon alive); it never rejects. Call
 * it, and await it, before `process.exit`; log nothing to `dest` after.
 *
 * sonic-boom's `flushSync()` is not used for this: it writes what is
 * buffered while an earlier asynchronous write may still be on its way,
 * so lines can land out of order.
 */
export function endLog(dest: LogDestination, maxMs = 2000): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, maxMs);
    timer.unref();
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    dest.once('close', done);
    dest.once('error', done);
    try {
      dest.end();
    } catch {
      done(); // already ended
    }
  });
}

/**
 * A pino logger in that format writing to file descriptor `fd` (default 1,
 * stdout), asynchronously (sonic-boom); await `end()` before
 * `process.exit` (see `endLog`). A line logged after `end()` is dropped.
 */
export function jsonLinesLogger(fd = 1): { logger: pino.Logger; end(): Promise<void> } {
  const dest = pino.destination({ dest: fd, sync: false, minLength: 0 });
  let ended = false;
  // Not `dest` itself: sonic-boom throws on a write after its end, and a timer may still log while the daemon stops.
  const out = { write: (line: string) => void (ended || dest.write(line)) };
  return {
    logger: pino(LOG_FORMAT, out),
    end: () => {
      ended = true;
      return endLog(dest);
    },
  };
}
