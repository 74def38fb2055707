/**
 * How both command lines (`memento-archive`, `capture-proxy`) end on an
 * error they did not expect: one line on stderr, `<program>: <what>: <the
 * error's message>`, and exit status 1, never a Node stack trace. A file
 * system error names its code and path as Node gives them (`ENOENT: no such
 * file or directory, open '/srv/archive/data.lock'`). With the environment
 * variable `MEMENTO_DEBUG=1` the stack follows the line, for a bug report.
 */

/** The one line for `err`: its message with line breaks folded into spaces (a non-Error is turned into text). */
export function errorLine(err: unknown): string {
  const message = err instanceof Error ? err.message || err.name : String(err);
  return message.replace(/\s*\n\s*/g, ' ').trim();
}

/**
 * Writes `<program>: <context>: <errorLine(err)>` on stderr (the stack too
 * when `MEMENTO_DEBUG` is set) and exits the process with status 1.
 *
 * @param program `memento-archive` or `capture-proxy`
 * @param context what was being done, e.g. the command (`reindex`); empty for none
 */
export function exitWithErrorLine(program: string, context: string, err: unknown): never {
  process.stderr.write(`${program}: ${context ? `${context}: ` : ''}${errorLine(err)}\n`);
  if (process.env.MEMENTO_DEBUG && err instanceof Error && err.stack) process.stderr.write(`${err.stack}\n`);
  process.exit(1);
}
