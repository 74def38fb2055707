/**
 * Access rules and takedown (`access:` in archive.yaml): which mementos
 * the read side may show. Every read path asks this module, so that a
 * memento hidden here is hidden everywhere: the redirector, TimeGates,
 * Mementos (every form), TimeMaps, the index TimeMap, the timebundle, and
 * any later page or query API.
 *
 * A rule names a URL (`http://a.example/page`) or a URL prefix ending in
 * `*` (`http://a.example/private/*`) and an action:
 * - `allow`: shown (what every memento is without a rule);
 * - `block`: not shown, and said so: a read of it answers 451 Unavailable
 *   For Legal Reasons (RFC 7725), TimeMaps and navigation links leave it out;
 * - `exclude`: as if never captured: 404, left out of everything.
 * A rule may be limited in time by the mementos' datetime: `after` (at or
 * after that instant), `before` (earlier than it), `embargo` (younger than
 * that age at the moment of the request: `30d`), all of them when several
 * are given.
 *
 * Matching is on SURT urlkeys (shared/uri.ts `exactUrlkey`), as the index
 * is keyed: the scheme does not count (a rule on `http://` also covers
 * `https://`), the host is case-insensitive, a default port is the same as
 * none; `www.example.org` and `example.org` are different hosts; the path
 * and query are compared exactly, case included. A prefix covers every
 * URL whose urlkey starts with the prefix's (`http://a.example/*` is all of
 * host `a.example`, `http://a.example/doc*` covers `/doc`, `/doc/x` and
 * `/documents`). A urlkey whose path holds an encoded slash or backslash
 * (`%2F`, `%5C`: stored before captures of such paths were refused) is
 * named by a rule in its folded form too (`/assets%2Fx` as `/assets/x`,
 * shared/uri.ts `foldEncodedSlashes`): {@link matchesPattern}, the one
 * place a urlkey is compared with a rule; for the rules over the whole
 * index ({@link AccessRules.shownRules}) and the hidden key ranges, the rules carry those stored keys by name
 * (archive/read/access-folded.ts), found when the rules are put in force.
 *
 * The most specific rule that applies to a memento decides:
 * 1. the longer URL wins (an exact URL over any prefix of it; at the same
 *    length an exact URL over a prefix);
 * 2. then a rule limited in time (before/after/embargo) over one that is not;
 * 3. then the stricter action (exclude over block over allow);
 * 4. then the one listed first.
 * A memento no rule applies to is allowed.
 *
 * Read paths never ask this module themselves: archive/read/visible-index.ts
 * (`VisibleIndex`) reads the index through these rules, once, for every
 * route, page and command.
 */
import { exactUrlkey, foldEncodedSlashes, normalizeUriR, UriError } from '#shared/uri.js';
import { foldedPrefixes } from './access-folded.js';
import type { MementoIndex } from '../store/index/memento-index.js';
import type { ShownRule } from '../store/index/shown-sql.js';

export type { ShownRule };

/** What the rules say of a memento: show it, answer 451 (RFC 7725), or act as if it was never captured. */
export type Verdict = 'allow' | 'block' | 'exclude';

/** One access rule as the config holds it (checked: archive/config.ts). Instants are epoch seconds. */
export interface AccessRule {
  /** A URL, or a URL prefix ending in `*`, as written in the config. */
  url: string;
  action: Verdict;
  /** Applies to mementos earlier than this instant (epoch s). */
  before?: number;
  /** Applies to mementos at or after this instant (epoch s). */
  after?: number;
  /** Applies to mementos younger than this many seconds when the request is answered. */
  embargo?: number;
}

/** A rule's URL as the index keys it: a urlkey, or a urlkey prefix. */
export interface UrlPattern {
  key: string;
  prefix: boolean;
}

/** A span of Memento-Datetimes `[from, until)`, epoch seconds; `-Infinity` / `Infinity` for open ends. */
export type Range = readonly [from: number, until: number];

/** A part of the time line and what the rules say of the mementos in it. */
export interface Segment {
  from: number;
  until: number;
  verdict: Verdict;
}

/**
 * The urlkey (or urlkey prefix) of a rule's URL: `http://www.Example.org/a/*`
 * → `{key: 'org,example,www)/a/', prefix: true}`. A URL without a scheme is
 * `http://`; a prefix that ends right after the host (`http://a.example*`)
 * covers the whole host.
 *
 * @throws UriError when it is not an http(s) URL, or has a `*` anywhere but at the end
 */
export function urlPattern(url: string): UrlPattern {
  const prefix = url.endsWith('*');
  const body = prefix ? url.slice(0, -1) : url;
  if (body.includes('*')) throw new UriError('a * may only end a URL prefix');
  let key = exactUrlkey(normalizeUriR(body));
  // `http://a.example/p?*`: the URL parser drops an empty query, a prefix keeps its `?`.
  if (prefix && body.endsWith('?') && !key.endsWith('?')) key += '?';
  return { key, prefix };
}

/** True when the key itself is named by the pattern. */
function namesKey(p: UrlPattern, urlkey: string): boolean {
  return p.prefix ? urlkey.startsWith(p.key) : urlkey === p.key;
}

/**
 * True when `urlkey` is named by the pattern: the key itself, or its form
 * with the encoded slashes of its path read as `/` (shared/uri.ts
 * `foldEncodedSlashes`; the module comment). The one place a urlkey is
 * compared with a rule or a `purge` selection.
 *
 * @param folded `foldEncodedSlashes(urlkey)`, when the caller has it already
 */
export function matchesPattern(p: UrlPattern, urlkey: string, folded: string = foldEncodedSlashes(urlkey)): boolean {
  return namesKey(p, urlkey) || (folded !== urlkey && namesKey(p, folded));
}

/**
 * The stored urlkeys (of `index`) that `patterns` name only in their
 * folded form (not as they are): keys stored before captures of encoded
 * slashes were refused (archive/read/access-folded.ts). Each is given with the
 * patterns that name it so. Ranges of the urlkey index, no full scan.
 */
export async function foldedKeysNamed(index: Pick<MementoIndex, 'keys'>, patterns: readonly UrlPattern[]): Promise<{ urlkey: string; by: UrlPattern[] }[]> {
  const keys = await index.keys.under(patterns.flatMap((p) => foldedPrefixes(p.key)));
  const out: { urlkey: string; by: UrlPattern[] }[] = [];
  for (const urlkey of keys) {
    const by = patterns.filter((p) => !namesKey(p, urlkey) && matchesPattern(p, urlkey));
    if (by.length) out.push({ urlkey, by });
  }
  return out;
}

const STRICTNESS: Record<Verdict, number> = { allow: 0, block: 1, exclude: 2 };

/** A rule with its pattern read; or, for a stored key the rule names only in its folded form, that key by name. */
interface Compiled {
  rule: AccessRule;
  /** What it names: the rule's pattern, or the one stored key. */
  pattern: UrlPattern;
  /** The rule's own pattern: its place in the order of specificity. */
  rank: UrlPattern;
  dated: boolean;
  order: number;
}

/** Rules as {@link AccessRules} keeps them. @throws UriError for a URL that is not one */
function compile(rules: readonly AccessRule[]): Compiled[] {
  return rules.map((rule, order) => {
    const pattern = urlPattern(rule.url);
    return { rule, pattern, rank: pattern, dated: rule.before !== undefined || rule.after !== undefined || rule.embargo !== undefined, order };
  });
}

/** For each stored key that a rule names only in its folded form, the rule as an entry that names that key (module comment). */
async function foldedEntries(index: Pick<MementoIndex, 'keys'>, compiled: readonly Compiled[]): Promise<Compiled[]> {
  if (!compiled.length) return [];
  const found = await foldedKeysNamed(
    index,
    compiled.map((c) => c.pattern),
  );
  return found.flatMap(({ urlkey, by }) =>
    compiled.filter((c) => by.includes(c.pattern)).map((c): Compiled => ({ ...c, pattern: { key: urlkey, prefix: false } })),
  );
}

/** Most specific first (the order in the module comment). */
function bySpecificity(a: Compiled, b: Compiled): number {
  return (
    b.rank.key.length - a.rank.key.length ||
    Number(a.rank.prefix) - Number(b.rank.prefix) ||
    Number(b.dated) - Number(a.dated) ||
    STRICTNESS[b.rule.action] - STRICTNESS[a.rule.action] ||
    a.order - b.order
  );
}

/** The Memento-Datetimes a rule applies to at `now` (epoch s); empty when `from >= until`. */
function ruleRange(r: AccessRule, now: number): Range {
  const from = Math.max(r.after ?? -Infinity, r.embargo === undefined ? -Infinity : Math.floor(now - r.embargo) + 1);
  return [from, r.before ?? Infinity];
}

/** The current time in epoch seconds. */
export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

/**
 * What the rules say of one URL (urlkey) at one moment: a verdict for each
 * Memento-Datetime, as segments of the time line. Made by
 * {@link AccessRules.policy}; cheap to ask, so make one per request.
 */
export class UrlPolicy {
  /** True when no memento of the URL is hidden, whatever its datetime (no rule, or only `allow`): the plain index queries serve. */
  readonly open: boolean;

  /**
   * @param urlkey the URL's urlkey
   * @param segments the whole time line, ordered, adjacent segments with different verdicts
   */
  constructor(
    readonly urlkey: string,
    readonly segments: readonly Segment[],
  ) {
    this.open = segments.every((s) => s.verdict === 'allow');
  }

  /** The verdict for a memento of this URL dated `datetime` (epoch s). */
  verdict(datetime: number): Verdict {
    for (const s of this.segments) if (datetime < s.until) return s.verdict;
    return 'allow';
  }

  /** True when a memento dated `datetime` (epoch s) is shown. */
  visible(datetime: number): boolean {
    return this.verdict(datetime) === 'allow';
  }

  /** The spans of datetimes with verdict `v`, ordered. */
  ranges(v: Verdict): Range[] {
    return this.segments.filter((s) => s.verdict === v).map((s) => [s.from, s.until] as const);
  }

  /**
   * The rows of this URL that are shown (`datetime` epoch s), a page at a
   * time: each page with only those shown (the page itself when nothing
   * is hidden), in their order; pages left empty are skipped. A TimeMap of 100,000 mementos passes 100 pages through
   * here instead of 100,000 rows.
   */
  async *filterPages<T extends { datetime: number }>(pages: AsyncIterable<T[]>): AsyncGenerator<T[]> {
    for await (const page of pages) {
      const shown = this.open ? page : page.filter((r) => this.visible(r.datetime));
      if (shown.length) yield shown;
    }
  }
}

/** The policy of a URL no rule names. */
const OPEN: readonly Segment[] = [{ from: -Infinity, until: Infinity, verdict: 'allow' }];

/**
 * The access rules in force. One instance lives as long as the daemon
 * (held by its `VisibleIndex`, `app.visible`); SIGHUP gives it the rules read again ({@link replace}).
 * All methods are synchronous and read no file: ask them per request.
 */
export class AccessRules {
  private compiled: Compiled[] = [];
  /** Stored keys that rules name only in their folded form, one entry per key and rule (module comment): for {@link shownRules} and {@link wholeHiddenKeys}. */
  private folded: Compiled[] = [];
  /** Counts the rule sets put in force: what was computed under other rules is stale (a cache of the home page's sites). */
  generation = 0;
  /** Counts the calls of {@link replace}: of two under way, only the later is put in force. */
  private asked = 0;

  /**
   * @param rules checked rules (archive/config.ts), in force at once
   * @param index the index whose stored keys the rules may name in their
   *   folded form (the daemon's); without one (a command that asks
   *   {@link policy} or {@link filter} for each row) none are looked up:
   *   {@link matchesPattern} sees them row by row
   * @throws UriError for a URL that is not one (the config check prevents it)
   */
  constructor(
    rules: readonly AccessRule[] = [],
    private readonly index?: Pick<MementoIndex, 'keys'>,
  ) {
    this.compiled = compile(rules);
    this.generation++;
  }

  /**
   * Puts `rules` in force (SIGHUP). They are read at once (a bad one throws
   * and the old rules stay); with an index, the stored keys they name in
   * their folded form are looked up first (a few range reads of the
   * urlkey index per rule), and the rules and those keys are put in force
   * together when the promise resolves (with no index, before it returns).
   *
   * @throws UriError as the constructor (synchronously); the promise
   *   rejects when the index cannot be read, the old rules staying
   */
  replace(rules: readonly AccessRule[]): Promise<void> {
    const compiled = compile(rules);
    const ask = ++this.asked;
    const swap = (folded: Compiled[]) => {
      if (ask !== this.asked) return; // a later replace is under way
      this.compiled = compiled;
      this.folded = folded;
      this.generation++;
    };
    if (!this.index) return Promise.resolve(swap([]));
    return foldedEntries(this.index, compiled).then(swap);
  }

  /** The rules in force, as given. */
  get rules(): AccessRule[] {
    return this.compiled.map((c) => c.rule);
  }

  /**
   * What the rules say of every memento of `urlkey` at `now`: the rules
   * that name it, most specific first, each claiming the part of the time
   * line it applies to that no more specific rule claimed; the rest is
   * allowed.
   *
   * @param urlkey a urlkey (shared/uri.ts `exactUrlkey`), e.g. `req.urlkey`
   * @param now epoch seconds (default: the clock); embargoes count from it
   */
  policy(urlkey: string, now: number = nowSeconds()): UrlPolicy {
    if (!this.compiled.length) return new UrlPolicy(urlkey, OPEN);
    const folded = foldEncodedSlashes(urlkey);
    const named = this.compiled.filter((c) => matchesPattern(c.pattern, urlkey, folded));
    if (!named.length) return new UrlPolicy(urlkey, OPEN);
    let open: Range[] = [[-Infinity, Infinity]];
    const claimed: Segment[] = [];
    for (const c of named.sort(bySpecificity)) {
      const [rf, ru] = ruleRange(c.rule, now);
      const rest: Range[] = [];
      for (const [f, u] of open) {
        const from = Math.max(f, rf);
        const until = Math.min(u, ru);
        if (from >= until) {
          rest.push([f, u]);
          continue;
        }
        claimed.push({ from, until, verdict: c.rule.action });
        if (f < from) rest.push([f, from]);
        if (until < u) rest.push([until, u]);
      }
      open = rest;
    }
    for (const [from, until] of open) claimed.push({ from, until, verdict: 'allow' });
    claimed.sort((a, b) => a.from - b.from);
    const segments: Segment[] = [];
    for (const s of claimed) {
      const last = segments[segments.length - 1];
      if (last && last.verdict === s.verdict && last.until === s.from) last.until = s.until;
      else segments.push({ ...s });
    }
    return new UrlPolicy(urlkey, segments);
  }

  /** The verdict for one memento: `urlkey`, Memento-Datetime `datetime` (epoch s), at `now` (epoch s, default the clock). */
  verdict(urlkey: string, datetime: number, now?: number): Verdict {
    return this.compiled.length ? this.policy(urlkey, now).verdict(datetime) : 'allow';
  }

  /**
   * The urlkeys every memento of which is hidden, whatever its datetime, as
   * sorted, disjoint half-open ranges `[from, to)` (byte order): those named
   * by a rule that `exclude`s or `block`s without `before`/`after`/`embargo`
   * and by no rule of another kind. A walk over many urlkeys (a `/cdx`
   * prefix query) leaves them out, so that it takes the time it would if
   * they had never been captured. A prefix rule names `[key, key+1)`, an
   * exact one `[key, key + "\0")` (urlkeys are ASCII, without NUL); a stored
   * key a rule names in its folded form only counts as that rule's exact key.
   */
  wholeHiddenKeys(): { from: string; to: string }[] {
    const span = (p: UrlPattern) => ({ from: p.key, to: p.prefix ? afterPrefix(p.key) : p.key + '\0' });
    const all = [...this.compiled, ...this.folded];
    const hiding = all.filter((c) => c.rule.action !== 'allow' && !c.dated);
    const other = all.filter((c) => c.rule.action === 'allow' || c.dated);
    return subtractKeys(unionKeys(hiding.map((c) => span(c.pattern))), unionKeys(other.map((c) => span(c.pattern))));
  }

  /**
   * The rules as they apply at `now` (epoch s) to every memento of the
   * index, for counts and lists over the whole index (the home page, a CDX
   * query of many URLs) that the index's database computes
   * (archive/store/index/shown-sql.ts makes them its condition): one entry
   * per rule, most specific first (the order of {@link policy}), plus one
   * per stored key a rule names in its folded form only (as that rule's
   * exact key). The first entry that names a memento's urlkey (exactly, or
   * as a prefix with `prefix`) and whose `[from, until)` holds its datetime
   * decides: shown when `shown`; a memento no entry decides is shown. An
   * empty list when no rule hides anything (every memento shown).
   */
  shownRules(now: number = nowSeconds()): ShownRule[] {
    if (this.compiled.every((c) => c.rule.action === 'allow')) return [];
    return [...this.compiled, ...this.folded].sort(bySpecificity).map((c) => {
      const [from, until] = ruleRange(c.rule, now);
      return { key: c.pattern.key, prefix: c.pattern.prefix, from, until, shown: c.rule.action === 'allow' };
    });
  }

  /**
   * The rows that are shown, in their order: for lists over many URLs
   * (index rows, CDX lines). One policy per urlkey, made at the first row
   * of it, all at one `now` ({@link rowTest}).
   */
  async *filter<T extends { urlkey: string; datetime: number }>(rows: AsyncIterable<T> | Iterable<T>, now: number = nowSeconds()): AsyncGenerator<T> {
    const shown = this.rowTest(now);
    for await (const r of rows) if (shown(r)) yield r;
  }

  /**
   * The test of {@link filter}, for a walk that filters its rows itself:
   * true for a row the rules show at `now` (epoch s). Rows should come
   * grouped by urlkey: one policy per run of a urlkey.
   */
  rowTest(now: number = nowSeconds()): (row: { urlkey: string; datetime: number }) => boolean {
    if (!this.compiled.length) return () => true;
    let policy: UrlPolicy | undefined;
    return (row) => {
      if (policy?.urlkey !== row.urlkey) policy = this.policy(row.urlkey, now);
      return policy.open || policy.visible(row.datetime);
    };
  }
}

/** The string just after every string that begins with `prefix` (for an ASCII `prefix`: its last character plus one). */
export function afterPrefix(prefix: string): string {
  return prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
}

/** A half-open range of urlkeys `[from, to)`. */
export interface KeyRange {
  from: string;
  to: string;
}

/** The union of `ranges` as sorted, disjoint ranges. */
export function unionKeys(ranges: readonly KeyRange[]): KeyRange[] {
  const out: KeyRange[] = [];
  for (const r of [...ranges].sort((a, b) => (a.from < b.from ? -1 : a.from > b.from ? 1 : 0))) {
    const last = out[out.length - 1];
    if (last && r.from <= last.to) {
      if (r.to > last.to) last.to = r.to;
    } else if (r.from < r.to) out.push({ ...r });
  }
  return out;
}

/** What of the sorted, disjoint `a` is in none of the sorted, disjoint `b`. */
export function subtractKeys(a: readonly KeyRange[], b: readonly KeyRange[]): KeyRange[] {
  const out: KeyRange[] = [];
  for (const r of a) {
    let from = r.from;
    for (const x of b) {
      if (x.to <= from || x.from >= r.to) continue;
      if (x.from > from) out.push({ from, to: x.from });
      if (x.to > from) from = x.to;
    }
    if (from < r.to) out.push({ from, to: r.to });
  }
  return out;
}
