/**
 * A search's words as the visitor typed them, checked and made into terms
 * (archive/store/index/text-queries.ts `TextTerm`): words (all must
 * match), `"quoted phrases"` and `prefix*` words, case-insensitive. A
 * word's letters and digits are kept; other characters separate words
 * (`e-mail` is the phrase "e mail", as the index reads the text). What is
 * not this syntax — an unbalanced quote, parentheses, the operators
 * `AND` `OR` `NOT` `NEAR`, a `*` inside a word, nothing to look for — is a
 * 400 with one line, never sent to the engine. Bounded: at most
 * {@link MAX_QUERY_CHARS} characters and {@link MAX_TERMS} terms, each
 * prefix at least {@link MIN_PREFIX_CHARS} letters (a one-letter prefix
 * matches most of the index).
 */
import { httpError } from '#shared/http-error.js';
import type { TextTerm } from '../store/index/text-queries.js';

export type { TextTerm };

/** Most characters of a query. */
export const MAX_QUERY_CHARS = 300;
/** Most terms (words and phrases) of a query, and words of a phrase. */
export const MAX_TERMS = 12;
/** Fewest letters before a prefix's `*`. */
export const MIN_PREFIX_CHARS = 2;

const OPERATORS = new Set(['AND', 'OR', 'NOT', 'NEAR']);

/** The words (runs of letters and digits) of `s`, lower case. */
function wordsOf(s: string): string[] {
  return (
    s
      .normalize('NFKC')
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu) ?? []
  ).slice(0, MAX_TERMS + 1);
}

/**
 * The terms of query `q` (see the module comment).
 * @throws HttpError 400 with one line saying what is wrong
 */
export function parseTextQuery(q: string | undefined): TextTerm[] {
  const text = (q ?? '').trim();
  if (!text) throw httpError(400, 'q= is required: the words to look for (words, "a phrase", prefix*)');
  if (text.length > MAX_QUERY_CHARS) throw httpError(400, `q= is longer than ${MAX_QUERY_CHARS} characters`);
  if ((text.match(/"/g) ?? []).length % 2) throw httpError(400, 'q= has a quote (") that is not closed');
  if (/[()]/.test(text)) throw httpError(400, 'q= has parentheses: give words, "phrases" and prefix* (all must match)');
  const terms: TextTerm[] = [];
  for (const [, phrase, bare] of text.matchAll(/"([^"]*)"|([^\s"]+)/g)) {
    if (phrase !== undefined) {
      const words = wordsOf(phrase);
      if (words.length) terms.push({ words, prefix: false });
      continue;
    }
    if (OPERATORS.has(bare)) throw httpError(400, `q= has the operator ${bare}: this search takes words, "phrases" and prefix* (all must match)`);
    const prefix = bare.endsWith('*');
    const core = prefix ? bare.slice(0, -1) : bare;
    if (core.includes('*')) throw httpError(400, `q=: a * ends a word (prefix*), not ${bare.slice(0, 40)}`);
    const words = wordsOf(core);
    if (!words.length) {
      if (prefix) throw httpError(400, 'q=: a * ends a word (prefix*)');
      continue;
    }
    if (prefix && words[words.length - 1].length < MIN_PREFIX_CHARS)
      throw httpError(400, `q=: a prefix takes at least ${MIN_PREFIX_CHARS} letters before its *`);
    terms.push({ words, prefix });
  }
  if (!terms.length) throw httpError(400, 'q= has no word to look for (letters or digits)');
  if (terms.length > MAX_TERMS || terms.some((t) => t.words.length > MAX_TERMS)) throw httpError(400, `q= has more than ${MAX_TERMS} words or phrases`);
  return terms;
}
