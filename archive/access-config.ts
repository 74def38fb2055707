/**
 * What `archive.yaml` says in dates and ages (the `from`/`until` of an
 * archive, the `before`/`after`/`embargo` of a rule), and the `access:`
 * rules: their schema (archive/config.ts puts it in the file's) and the
 * rules the daemon applies (archive/read/access-rules.ts; docs/operations.md "Access
 * rules and takedown").
 */
import { ConfigError, type YamlSource } from '#shared/config.js';
import { type ConfigOf, type ConfigSchema, defineCheck } from '#shared/config-schema.js';
import { parseTimestamp14 } from '#shared/http-date.js';
import { type AccessRule, urlPattern } from './read/access-rules.js';

/**
 * An instant in the config: ISO 8601 (`2026-01-01T00:00:00Z`, a date alone
 * = its midnight UTC, no zone = UTC) or 14 digits (a prefix of 4 or more
 * works, as in a URI-M).
 *
 * @returns epoch seconds, or `undefined` when it is neither
 */
export function parseInstant(v: unknown): number | undefined {
  if (v instanceof Date) return Math.floor(v.getTime() / 1000);
  if (typeof v === 'number' && /^\d{4,14}$/.test(String(v))) v = String(v);
  if (typeof v !== 'string') return undefined;
  if (/^\d{4,14}$/.test(v)) {
    const d = parseTimestamp14(v);
    return d ? Math.floor(d.getTime() / 1000) : undefined;
  }
  if (!/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2})?(\.\d+)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(v)) return undefined;
  const t = Date.parse(/T|\s/.test(v) && !/Z|[+-]\d{2}:?\d{2}$/.test(v) ? v + 'Z' : v);
  return Number.isNaN(t) ? undefined : Math.floor(t / 1000);
}

/** Seconds in each unit of an age: seconds, minutes, hours, days, weeks, years of 365 days. */
const AGE_UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400, w: 7 * 86400, y: 365 * 86400 };

/**
 * An age in the config: a number and a unit, `30d`, `12h`, `2w`, `1y`
 * (`s`, `m` minutes, `h`, `d`, `w`, `y` = 365 days).
 *
 * @returns seconds, or `undefined` when it is not one
 */
export function parseAge(v: unknown): number | undefined {
  const m = typeof v === 'string' ? /^(\d+(?:\.\d+)?)\s*([smhdwy])$/.exec(v.trim()) : null;
  return m ? Math.round(Number(m[1]) * AGE_UNITS[m[2]]) : undefined;
}

defineCheck('instant', (v) => parseInstant(v) !== undefined);
defineCheck('age', (v) => parseAge(v) !== undefined);
defineCheck('access-url', (v) => {
  try {
    return typeof v === 'string' && urlPattern(v) !== undefined;
  } catch {
    return false;
  }
});

/** One entry of `access:` (archive/read/access-rules.ts; docs/operations.md "Access rules and takedown"). */
export const ACCESS_RULE_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['url', 'action'],
  errorMessage: 'each access rule is a mapping {url, action, before, after, embargo}, not {value}',
  properties: {
    url: {
      type: 'string',
      check: 'access-url',
      description: 'a URL, or a URL prefix ending in `*`',
      errorMessage: 'url must be an http(s) URL (http://host/page) or a prefix ending in * (http://host/dir/*), not {value}',
      missingMessage: 'the URL, or a prefix ending in *, the rule is for',
    },
    action: {
      type: 'string',
      enum: ['allow', 'block', 'exclude'],
      description: '`block` (451), `exclude` (as if never captured) or `allow`',
      errorMessage: 'action must be block, exclude or allow, not {value}',
      missingMessage: 'block, exclude or allow',
    },
    before: {
      check: 'instant',
      description: 'only mementos earlier than this instant',
      errorMessage: 'before must be a date like 2026-01-01T00:00:00Z, not {value}',
    },
    after: {
      check: 'instant',
      description: 'only mementos at or after this instant',
      errorMessage: 'after must be a date like 2026-01-01T00:00:00Z, not {value}',
    },
    embargo: {
      type: 'string',
      check: 'age',
      description: 'only mementos younger than this age (`30d`)',
      errorMessage: 'embargo must be an age like 30d, 12h or 1y (units s, m, h, d, w, y), not {value}',
    },
  },
} as const satisfies ConfigSchema;

/** One entry of `access:` as the file holds it. */
export type AccessRuleFile = ConfigOf<typeof ACCESS_RULE_SCHEMA>;

/** The `access:` list as rules: instants and ages in seconds; a rule whose `after` is not before its `before` applies to nothing and is refused. */
export function accessRules(src: YamlSource, list: readonly AccessRuleFile[]): AccessRule[] {
  return list.map((r, i) => {
    const rule: AccessRule = { url: r.url, action: r.action };
    if (r.before !== undefined) rule.before = parseInstant(r.before)!;
    if (r.after !== undefined) rule.after = parseInstant(r.after)!;
    if (r.embargo !== undefined) rule.embargo = parseAge(r.embargo)!;
    if (rule.before !== undefined && rule.after !== undefined && rule.after >= rule.before)
      throw new ConfigError(`${src.where(0, ['access', i])}: access rule for ${r.url}: after must be earlier than before, or the rule applies to nothing`);
    return rule;
  });
}
