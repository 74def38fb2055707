/**
 * The one base class of the errors an operator can act on, and how a
 * command says what such an error means where it happened. The command
 * lines (`memento-archive`, `capture-proxy`) tell them from bugs by this
 * class alone (shared/cli-error.ts): no command keeps a list of its own.
 */

/** What {@link OperatorError}'s constructor takes besides the message. */
export interface OperatorErrorOptions {
  /** The exit status the command line ends with: 1 unless given (a config mistake: 2). */
  status?: number;
  /**
   * The message is the whole line after `<program>: ` (it names what it is
   * about itself); otherwise the command line puts the command's name
   * before it, as it does for any error (`memento-archive: reindex: …`).
   */
  whole?: boolean;
  /** The error this one says in an operator's words. */
  cause?: unknown;
}

/**
 * An error whose message is one line an operator can act on: a bad config,
 * a missing or unreadable file, a folder another process holds, a refused
 * input. The command line prints its message alone (never a stack trace,
 * even with `MEMENTO_DEBUG=1`) and exits with its {@link status}; any other
 * error is a bug, and gets the stack with `MEMENTO_DEBUG=1`.
 */
export class OperatorError extends Error {
  /** The command line's exit status for it. */
  readonly status: number;
  /** Whether the message is the whole line ({@link OperatorErrorOptions.whole}). */
  readonly whole: boolean;

  constructor(message: string, options: OperatorErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.status = options.status ?? 1;
    this.whole = options.whole ?? false;
  }
}

/** How a command frames an operator error where it happened ({@link inContext}). */
export interface Frame {
  /** Put before the message (`purge: `). */
  before?: string;
  /** Put after it (`; nothing was changed`). */
  after?: string;
  /** The exit status, when not the error's own. */
  status?: number;
  /**
   * The line for an error that is not an OperatorError but that the
   * command expects all the same (a file system error, with its code and
   * path): it becomes one; `undefined` leaves the error as it is.
   */
  otherwise?: (err: NodeJS.ErrnoException) => string | undefined;
}

/**
 * `err` said where it happened: an OperatorError becomes a whole-line one
 * reading `before + message + after` (its cause the original); another
 * error becomes one only when `otherwise` gives its line. Anything else is
 * returned as it is, for the command line to report as a bug.
 * Thrown by a command: `throw inContext(err, { after: '; stop it before reindex' })`.
 */
export function inContext(err: unknown, frame: Frame): unknown {
  if (err instanceof OperatorError) {
    return new OperatorError(`${frame.before ?? ''}${err.message}${frame.after ?? ''}`, { status: frame.status ?? err.status, whole: true, cause: err });
  }
  const line = err instanceof Error ? frame.otherwise?.(err) : undefined;
  return line === undefined ? err : new OperatorError(line, { status: frame.status, whole: true, cause: err });
}
