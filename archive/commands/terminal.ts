/**
 * What the `memento-archive` commands show on the terminal besides their
 * output: a one-line complaint on stderr, and the one progress bar
 * (cli-progress) that `import`, `verify`, `reindex`, `purge` and `migrate` draw while
 * they read WARC files.
 */
import cliProgress from 'cli-progress';

/** Writes `memento-archive: <line>` on stderr. */
export function say(line: string): void {
  process.stderr.write(`memento-archive: ${line}\n`);
}

/** Says `line` on stderr ({@link say}) and exits the process with `code`. */
export function fail(line: string, code: number): never {
  say(line);
  process.exit(code);
}

/** Bytes as MiB with one decimal (`12.5`). */
export function mib(n: number): string {
  return (n / 1048576).toFixed(1);
}

/** A progress display over bytes, drawn on stderr. */
export interface ProgressBar {
  /**
   * `done` of `total` bytes read; `extra`, when given, is shown after the
   * byte counts (`3 new, 1 duplicate`). The bar appears at the first call.
   */
  update(done: number, total: number, extra?: string): void;
  /** Ends the bar (first drawn at 100% when `complete`, the default); nothing when it is not shown. */
  stop(complete?: boolean): void;
}

/**
 * A cli-progress bar labelled `label` (`import [████░░] 40% | 4.0/10.0 MiB
 * | ETA 3s`; with `unit` `rows`, a count of index rows) when stderr is a terminal; otherwise one that draws nothing,
 * so that output piped or logged holds no control characters. Its methods
 * may be passed on as plain functions.
 */
export function progressBar(label: string, unit: 'MiB' | 'rows' = 'MiB'): ProgressBar {
  if (!process.stderr.isTTY) return { update() {}, stop() {} };
  const bar = new cliProgress.SingleBar(
    { format: `${label} [{bar}] {percentage}% | {done}/{all} ${unit}{extra} | ETA {eta}s`, stream: process.stderr, hideCursor: true },
    cliProgress.Presets.shades_classic,
  );
  let total = 0;
  let extra = '';
  const shown = (n: number) => (unit === 'MiB' ? mib(n) : String(n));
  const payload = (done: number) => ({ done: shown(done), all: shown(total), extra });
  return {
    update(done, all, more) {
      if (more !== undefined) extra = ` | ${more}`;
      const started = total > 0;
      total = Math.max(1, all);
      if (started) bar.setTotal(total);
      else bar.start(total, 0, payload(0));
      bar.update(done, payload(done));
    },
    stop(complete = true) {
      if (!total) return;
      if (complete) bar.update(total, payload(total));
      bar.stop();
      total = 0;
    },
  };
}
