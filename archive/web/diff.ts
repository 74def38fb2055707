/**
 * What changed between the texts of two captures (`/web/diff/…`, the
 * lines of text.ts), within a budget: Myers' diff (jsdiff) of the lines,
 * then of the words of each changed line paired with its replacement,
 * long unchanged runs folded. Its cost grows with the edits between the
 * texts (about the square of their number), so it runs in a work pool's
 * thread (archive/work/pool.ts) and keeps to {@link DIFF_BUDGET}: more
 * line edits than it allows, or more time, and the texts are "too
 * different to compare line by line" (the page offers the two captures);
 * a changed line whose words would cost more is shown whole ("too
 * different to show word by word"); past the row limit the rest is
 * counted, not shown. The same two texts give the same answer unless the
 * time runs out first (a machine much slower than the edit limits
 * assume).
 */
import { diffArrays, diffWordsWithSpace } from 'diff';

/** What one comparison may cost (docs/threat-model.md "What one request may cost"). */
export const DIFF_BUDGET = {
  /** Most line edits (lines removed plus added) the line diff looks for; past it the texts are too different. */
  lineEdits: 1000,
  /** Most word edits within one changed line; past it the line is shown whole. */
  wordEdits: 1000,
  /** Most time for the whole comparison, ms: the line diff, then the words of the changed lines while time is left. */
  ms: 1500,
  /** Most rows (lines, folds) shown; the changes after are counted. */
  rows: 1000,
} as const;

/** The pool's deadline of one comparison, ms: the budget's time and a margin (the thread is then terminated). */
export const DIFF_DEADLINE_MS = 3 * DIFF_BUDGET.ms;

/** One line of a diff: kept, removed, added, or a run of kept lines left out; words marked within a changed line. */
export interface DiffRow {
  kind: 'same' | 'del' | 'ins' | 'change' | 'skip';
  left?: { text: string; mark?: 'del' }[];
  right?: { text: string; mark?: 'ins' }[];
  skipped?: number;
}

/** A line diff within the budget. */
export interface LineDiff {
  rows: DiffRow[];
  /** Lines added and removed (all of them, shown or not). */
  added: number;
  removed: number;
  /** Changed lines shown whole: their words were too different (or the time was up) to mark word by word. */
  wholeLines: number;
  /** Changed lines past the row limit, not shown. */
  notShown: number;
}

/** The outcome: a line diff, or the texts too different for the budget (`edits`: more line edits; `time`: the time ran out). */
export type DiffResult = { kind: 'lines'; diff: LineDiff } | { kind: 'too-different'; why: 'edits' | 'time' };

/** Kept lines shown around a change. */
const CONTEXT = 3;

type Budget = { -readonly [K in keyof typeof DIFF_BUDGET]: number };

/** Rows of a diff as they are made: stops adding rows at the limit, and counts what it leaves out. */
class Rows {
  readonly rows: DiffRow[] = [];
  notShown = 0;
  wholeLines = 0;
  constructor(
    private readonly limit: number,
    private readonly until: number,
    private readonly wordEdits: number,
  ) {}

  get full(): boolean {
    return this.rows.length >= this.limit;
  }

  same(lines: readonly string[]): void {
    for (const l of lines) if (!this.full) this.rows.push({ kind: 'same', left: [{ text: l }], right: [{ text: l }] });
  }

  skip(n: number): void {
    if (!this.full) this.rows.push({ kind: 'skip', skipped: n });
  }

  del(l: string): void {
    if (this.full) this.notShown++;
    else this.rows.push({ kind: 'del', left: [{ text: l, mark: 'del' }] });
  }

  ins(l: string): void {
    if (this.full) this.notShown++;
    else this.rows.push({ kind: 'ins', right: [{ text: l, mark: 'ins' }] });
  }

  /** A removed line and the line that replaced it: its words marked, or both shown whole when that costs too much. */
  change(del: string, ins: string): void {
    if (this.full) {
      this.notShown += 2;
      return;
    }
    const left = Date.now();
    const words = this.until > left ? diffWordsWithSpace(del, ins, { maxEditLength: this.wordEdits, timeout: this.until - left }) : undefined;
    if (!words) {
      this.wholeLines += 2;
      this.rows.push({ kind: 'change', left: [{ text: del, mark: 'del' }], right: [{ text: ins, mark: 'ins' }] });
      return;
    }
    this.rows.push({
      kind: 'change',
      left: words.filter((w) => !w.added).map((w) => ({ text: w.value, mark: w.removed ? 'del' : undefined })),
      right: words.filter((w) => !w.removed).map((w) => ({ text: w.value, mark: w.added ? 'ins' : undefined })),
    });
  }
}

/**
 * The diff of two texts' lines (see the module comment): with word marks
 * inside changed lines, long unchanged runs folded, within `budget`.
 *
 * @param a the older text's lines
 * @param b the newer text's lines
 */
export function diffTexts(a: readonly string[], b: readonly string[], budget: Budget = { ...DIFF_BUDGET }): DiffResult {
  const until = Date.now() + budget.ms;
  const parts = diffArrays(a as string[], b as string[], { maxEditLength: budget.lineEdits, timeout: budget.ms });
  if (!parts) return { kind: 'too-different', why: Date.now() >= until ? 'time' : 'edits' };
  const out = new Rows(budget.rows, until, budget.wordEdits);
  let added = 0;
  let removed = 0;
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i];
    if (!p.added && !p.removed) {
      const lines = p.value;
      const keepHead = i === 0 ? 0 : CONTEXT;
      const keepTail = i === parts.length - 1 ? 0 : CONTEXT;
      if (lines.length > keepHead + keepTail + 1) {
        out.same(lines.slice(0, keepHead));
        out.skip(lines.length - keepHead - keepTail);
        out.same(lines.slice(lines.length - keepTail));
      } else out.same(lines);
      continue;
    }
    if (p.removed && parts[i + 1]?.added) {
      const del = p.value;
      const ins = parts[i + 1].value;
      removed += del.length;
      added += ins.length;
      for (let k = 0; k < Math.max(del.length, ins.length); k++) {
        if (k < del.length && k < ins.length) out.change(del[k], ins[k]);
        else if (k < del.length) out.del(del[k]);
        else out.ins(ins[k]);
      }
      i++;
      continue;
    }
    for (const l of p.value) {
      if (p.removed) {
        removed++;
        out.del(l);
      } else {
        added++;
        out.ins(l);
      }
    }
  }
  return { kind: 'lines', diff: { rows: out.rows, added, removed, wholeLines: out.wholeLines, notShown: out.notShown } };
}
