/**
 * The conditions of several held captures asked in one exchange: instead
 * of one conditional PUT each (a head, a 412, a last chunk, per capture),
 * the captures whose bodies ended in the same turn of the event loop are
 * asked about in one `POST <ArchivePath>` to their archive, one line each
 * (`<capture tag> <epoch seconds or -> <URI-R>`, docs/capture-record.md,
 * "Several conditions at once"). The archive answers `unchanged` (a
 * conditional PUT would get 412: nothing to send) or `new` for each;
 * only the new ones are then sent, each as a conditional PUT as before,
 * so the archive stays the one authority on what is new (its answer to
 * the PUT is what counts; the question only spares the PUT of what it
 * already has).
 *
 * A question changes nothing on the archive: a failed POST (an archive
 * down, restarting, or one that does not know the POST: 404, 405, 501)
 * only means the captures are sent as conditional PUTs after all; an
 * archive that does not know it is not asked again for a minute.
 *
 * A question only pays when the answer is often `unchanged`: where it
 * seldom is (a site whose pages change at every visit), a question is
 * a line and a PUT after it. So each archive's share of `unchanged`
 * answers is followed (a moving average over about the last 20); below
 * {@link LOW_SHARE}, only one capture in {@link SAMPLE_EVERY} is asked
 * about (the others go straight to their conditional PUT), enough to see
 * the share rise again.
 */
import type { PutTarget } from '../archive-put.js';
import type { ArchiveConnections } from './conditional-client.js';

/** A question's answer: the archive has that memento (`unchanged`), does not (`new`), or the POST failed (`unknown`). */
export type QuestionAnswer = 'unchanged' | 'new' | 'unknown';

/** One capture's question. */
export interface CaptureQuestion {
  /** The archive's host and port, and its `ArchivePath` (the POST goes there). */
  archive: { host: string; port: number; path: string };
  /** `ArchiveToken`, sent as `Authorization: Bearer`. */
  token?: string;
  /** The capture's entity tag (shared/capture-tag.ts). */
  tag: string;
  /** Its Memento-Datetime, epoch seconds, when its response has a valid Date. */
  datetime?: number;
  uriR: string;
}

/** Most questions in one POST (the archive takes up to 1,000). */
const MAX_BATCH = 500;
/** How long an archive that does not know the POST is not asked, ms. */
const UNSUPPORTED_MS = 60_000;
/** Most bytes of an answer read (a line per question). */
const MAX_ANSWER_BYTES = 64 * 1024;
/** Below this share of `unchanged` answers, questions are sampled. */
const LOW_SHARE = 0.1;
/** While sampled, one capture in this many is asked about. */
const SAMPLE_EVERY = 10;
/** Weight of one answer in the moving share of `unchanged` answers. */
const SHARE_STEP = 0.05;

interface Pending {
  question: CaptureQuestion;
  resolve: (a: QuestionAnswer) => void;
}

/** See the module comment. One per proxy, on its {@link ArchiveConnections}. */
export class CaptureQuestions {
  /** Questions waiting for the end of this turn of the event loop, by archive (`host port path token`). */
  private readonly waiting = new Map<string, Pending[]>();
  private scheduled = false;
  /** Archives that answered that they do not know the POST, until when (ms since the epoch). */
  private readonly unsupported = new Map<string, number>();
  /** Per archive, the moving share of `unchanged` answers (1 until it has answered). */
  private readonly share = new Map<string, number>();
  /** Per archive, captures not asked about since the last one asked while sampled. */
  private readonly skipped = new Map<string, number>();

  /**
   * @param connections the proxy's connections to the archives
   * @param timeoutMs how long the archive may stay silent, and a free connection take to come, ms
   */
  constructor(
    private readonly connections: ArchiveConnections,
    private readonly timeoutMs = 60_000,
  ) {}

  /**
   * Asks whether the archive has the memento `q` names, together with the
   * other questions of this turn of the event loop to the same archive.
   *
   * @returns the answer (never rejects); `unknown` at once when the archive
   *   is known not to take such questions, or its answers are seldom
   *   `unchanged` and this capture is not one of the sample
   */
  ask(q: CaptureQuestion): Promise<QuestionAnswer> {
    const key = `${q.archive.host} ${q.archive.port} ${q.archive.path} ${q.token ?? ''}`;
    const until = this.unsupported.get(key);
    if (until !== undefined) {
      if (Date.now() < until) return Promise.resolve('unknown');
      this.unsupported.delete(key);
    }
    if ((this.share.get(key) ?? 1) < LOW_SHARE) {
      const n = (this.skipped.get(key) ?? 0) + 1;
      this.skipped.set(key, n % SAMPLE_EVERY);
      if (n % SAMPLE_EVERY !== 0) return Promise.resolve('unknown');
    }
    return new Promise((resolve) => {
      let list = this.waiting.get(key);
      if (!list) this.waiting.set(key, (list = []));
      list.push({ question: q, resolve });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Sends what is waiting: one POST per archive (per {@link MAX_BATCH} questions). */
  private flush(): void {
    this.scheduled = false;
    for (const [key, list] of this.waiting) {
      for (let i = 0; i < list.length; i += MAX_BATCH) this.send(key, list.slice(i, i + MAX_BATCH));
    }
    this.waiting.clear();
  }

  private send(key: string, batch: Pending[]): void {
    const first = batch[0].question;
    const target: PutTarget = { host: first.archive.host, port: first.archive.port, path: first.archive.path };
    const body = Buffer.from(batch.map(({ question: q }) => `${q.tag} ${q.datetime ?? '-'} ${q.uriR}\n`).join(''), 'utf8');
    const headers: [string, string][] = first.token ? [['Authorization', `Bearer ${first.token}`]] : [];
    const settle = (answers: QuestionAnswer[]) => batch.forEach((p, i) => p.resolve(answers[i] ?? 'unknown'));
    let answer;
    try {
      answer = this.connections.post({ target, headers, body, timeoutMs: this.timeoutMs, maxAnswerBytes: MAX_ANSWER_BYTES }).answer;
    } catch {
      return settle([]);
    }
    void answer.then((a) => {
      if ('error' in a) return settle([]);
      if (a.status === 404 || a.status === 405 || a.status === 501) this.unsupported.set(key, Date.now() + UNSUPPORTED_MS);
      if (a.status !== 200 || a.text === undefined) return settle([]);
      const lines = a.text.split('\n');
      // Every line must be an answer, one per question; anything else, and none is trusted.
      if (lines.length !== batch.length + 1 || lines[batch.length] !== '') return settle([]);
      const answers = lines.slice(0, batch.length);
      if (answers.some((l) => l !== 'unchanged' && l !== 'new')) return settle([]);
      let share = this.share.get(key) ?? 1;
      for (const l of answers) share = share * (1 - SHARE_STEP) + (l === 'unchanged' ? SHARE_STEP : 0);
      this.share.set(key, share);
      settle(answers as QuestionAnswer[]);
    });
  }
}
