/**
 * How both command lines (`memento-archive`, `capture-proxy`) end on an
 * error they did not expect: one line on stderr, `<program>: <what>: <the
 * error's message>`, and exit status 1, never a Node stack trace. A file
 * system error names its code and path as Node gives them (`ENOENT: no such
 * file or directory, open '/srv/archive/data.lock'`). With the environment
 * variable `MEMENTO_DEBUG=1` the stack follows the line, for a bug report.
 *
 * An error an operator can act on (shared/operator-error.ts) is the one
 * check: it ends in its one line and its own exit status, never a stack.
 */
import { OperatorError } from './operator-error.js';

/** The one line for `err`: its message with line breaks folded into spaces (a non-Error is turned into text). */
export function errorLine(err: unknown): string {
  const message = err instanceof Error ? err.message || err.name : String(err);
  return message.replace(/\s*\n\s*/g, ' ').trim();
}

/**
 * Writes `<program>: <context>: <errorLine(err)>` on stderr and exits the
 * process. An {@link OperatorError}: without the context when its message
 * is the whole line, and with its exit status. Any other error (a bug):
 * exit status 1, and the stack too when `MEMENTO_DEBUG` is set.
 *
 * @param program `memento-archive` or `capture-proxy`
 * @param context what was being done, e.g. the command (`reindex`); empty for none
 */
export function exitWithErrorLine(program: string, context: string, err: unknown): never {
  if (err instanceof OperatorError) {
    process.stderr.write(`${program}: ${context && !err.whole ? `${context}: ` : ''}${errorLine(err)}\n`);
    process.exit(err.status);
  }
  process.stderr.write(`${program}: ${context ? `${context}: ` : ''}${errorLine(err)}\n`);
  if (process.env.MEMENTO_DEBUG && err instanceof Error && err.stack) process.stderr.write(`${err.stack}\n`);
  process.exit(1);
}
