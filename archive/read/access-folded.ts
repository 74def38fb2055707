/**
 * Index keys stored before the archive refused encoded slashes in a
 * capture's path (shared/uri.ts `checkCaptureTarget`): `…)/assets%2Fhljs.css`
 * may be a copy of `…)/assets/hljs.css` served by a site that decodes
 * `%2F`. The access rules match such a key in its folded form too
 * (shared/uri.ts `foldEncodedSlashes`, archive/read/access-rules.ts `matchesPattern`);
 * this module finds, for a set of rules, the stored keys that a rule names
 * only in that form, so that the rules over the whole index and their
 * ranges of wholly hidden keys (archive/read/access-rules.ts `shownRules`,
 * `wholeHiddenKeys`) name them too, one by one.
 *
 * No full scan is needed: such a key agrees with its folded form up to its
 * first encoded slash (a urlkey's path has no `//`, nor has a rule's), so
 * it starts with the rule's key up to one of the rule's path slashes,
 * followed by `%2F` or `%5C` in place of that slash or right after it.
 * Each rule gives four urlkey prefixes per `/` of its path, and the index
 * is asked for the keys under them (ranges of its urlkey index:
 * archive/store/index/key-queries.ts `under`).
 */

/** The encoded spellings of `/` and `\` a urlkey holds (upper-case hex: shared/uri.ts `canonicalEscapes`). */
const ENCODED = ['%2F', '%5C'] as const;

/**
 * The urlkey prefixes under which every key lies whose folded form is
 * named by a rule of urlkey (prefix) `key` while the key itself is not:
 * for each `/` of `key`'s path (before any `?`), the part before it and the
 * part up to it, each followed by `%2F` and by `%5C`.
 */
export function foldedPrefixes(key: string): string[] {
  const start = key.indexOf(')/');
  if (start < 0) return [];
  const q = key.indexOf('?', start);
  const end = q < 0 ? key.length : q;
  const out: string[] = [];
  for (let j = key.indexOf('/', start); j >= 0 && j < end; j = key.indexOf('/', j + 1)) {
    for (const e of ENCODED) out.push(key.slice(0, j) + e, key.slice(0, j + 1) + e);
  }
  return out;
}
