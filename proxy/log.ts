/**
 * The capture proxy's log: one JSON object per line on stdout (easy to read,
 * easy to grep, and `jq` takes it as it is).
 *
 * Every entry has `time` (ISO 8601, UTC), `level` and `msg`; the rest
 * depends on the entry (`type: "request"` is the one line per proxied
 * request, see proxy/server.ts).
 */

/** One log entry; `level` defaults to `info`. */
export interface LogEntry {
  level?: 'info' | 'warn' | 'error';
  msg: string;
  [key: string]: unknown;
}

/** Where the proxy's modules write their log entries. Must not throw. */
export type Logger = (entry: LogEntry) => void;

/** A logger writing JSON lines (`{"time":…,"level":…,"msg":…,…}`) to `stream`. */
export function jsonLineLogger(stream: NodeJS.WritableStream = process.stdout): Logger {
  return (entry) => {
    const { level = 'info', msg, ...rest } = entry;
    stream.write(JSON.stringify({ time: new Date().toISOString(), level, msg, ...rest }) + '\n');
  };
}

/** A logger that drops everything. */
export const silentLogger: Logger = () => {};
