/**
 * The capture proxy's log: one JSON object per line on stdout, in the
 * format both daemons write (shared/log.ts).
 *
 * Every entry has `level` (`info`, `warn`, `error`), `time` (ISO 8601, UTC)
 * and `msg`; the rest depends on the entry (`type: "request"` is the one
 * line per proxied request, see proxy/exchange.ts).
 */
import pino from 'pino';
import { endLog, jsonLine } from '#shared/log.js';

/** One log entry; `level` defaults to `info`. */
export interface LogEntry {
  level?: 'info' | 'warn' | 'error';
  msg: string;
  [key: string]: unknown;
}

/**
 * Where the proxy's modules write their log entries. Must not throw.
 * `end()`, where there is one, writes out every waiting line and stops the
 * logger (entries after it are dropped); await it before `process.exit`.
 */
export type Logger = ((entry: LogEntry) => void) & { end?: () => Promise<void> };

/**
 * A logger writing JSON lines (`{"level":"info","time":"…","msg":"…",…}`,
 * the format of shared/log.ts `jsonLine`) to file descriptor `fd`
 * (default 1, stdout), asynchronously (sonic-boom, as pino does): the lines
 * of one turn of the event loop go out together, at its end, in one write;
 * `end()` writes out what is waiting, in order, and stops (shared/log.ts
 * `endLog`); await it before `process.exit`.
 * With `maxWrite` (bytes), no write is longer unless one line is: several
 * processes writing to one pipe (the proxy's workers) then never mix
 * their lines, as a pipe writes up to 4096 bytes (PIPE_BUF) at once.
 */
export function pinoLogger(fd = 1, options: { maxWrite?: number } = {}): Logger {
  const { maxWrite } = options;
  const dest = pino.destination({ dest: fd, sync: false, minLength: 0, ...(maxWrite && { maxWrite }) });
  let waiting = '';
  let scheduled = false;
  let ended = false;
  const writeOut = () => {
    scheduled = false;
    if (ended) return;
    let lines = waiting;
    waiting = '';
    // sonic-boom joins writes up to maxWrite bytes: handed whole lines, no write(2) of it cuts one (unless a line alone is longer).
    while (maxWrite && Buffer.byteLength(lines) > maxWrite) {
      const cut = lineCut(lines, maxWrite);
      dest.write(lines.slice(0, cut));
      lines = lines.slice(cut);
    }
    if (lines) dest.write(lines);
  };
  const log: Logger = (entry) => {
    if (ended) return;
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
  log.end = () => {
    writeOut();
    ended = true;
    return endLog(dest);
  };
  return log;
}

/**
 * Where to cut `lines` (whole lines, each ending in `\n`): the index (in
 * characters) after the last line that keeps the part before it within
 * `maxBytes` of UTF-8; after the first line when it alone is longer.
 */
export function lineCut(lines: string, maxBytes: number): number {
  let cut = lines.lastIndexOf('\n', maxBytes - 1) + 1;
  while (cut > 0 && Buffer.byteLength(lines.slice(0, cut)) > maxBytes) cut = lines.lastIndexOf('\n', cut - 2) + 1;
  return cut || lines.indexOf('\n') + 1 || lines.length;
}

/** A logger that drops everything. */
export const silentLogger: Logger = () => {};
