/**
 * What the proxy's two kinds of config file (proxy-file.ts, vhost-file.ts)
 * share: the check with the proxy's message for an unknown key (a "did you
 * mean" for a near miss), and numbers that YAML may hand over as
 * strings (`ArchivePort: "9000"`).
 */

import type { YamlSource } from '#shared/config.js';
import { type CheckOptions, type ConfigOf, type ConfigSchema, checkConfig, likelyKey } from '#shared/config-schema.js';

/**
 * Checks `value` (a vhost, or a whole file: document `doc` of `src`, at
 * `at` in it) against `schema` with shared/config-schema.ts `checkConfig`,
 * unknown keys refused with {@link unknownKey}'s message, and fills in the
 * defaults.
 *
 * @throws ConfigError `file:line: reason` for the first problem found
 */
export function checkSettings<S extends ConfigSchema>(schema: S, src: YamlSource, doc: number, at: (string | number)[], value: unknown): ConfigOf<S> {
  const opts: CheckOptions = { unknownKey };
  // Called untyped: deriving ConfigOf of a generic schema inside a generic function is too deep for tsc.
  const check = checkConfig as (...args: unknown[]) => unknown;
  return check(schema, src, doc, at, value, opts) as ConfigOf<S>;
}

/**
 * The reason given for a key no schema property names: a near miss gets a
 * "did you mean" (in case: `enableip` → `EnableIP`; a letter or two off,
 * case ignored: `upstrem` → `upstream`, shared/config-schema.ts
 * `likelyKey`), anything else the list of known keys. For `checkConfig`'s
 * `unknownKey` option.
 */
function unknownKey(key: string, known: string[]): string {
  const lower = key.toLowerCase();
  for (const k of known) if (k.toLowerCase() === lower) return `unknown setting "${key}" (did you mean "${k}"? names are case-sensitive)`;
  const likely = likelyKey(key, known);
  if (likely) return `unknown setting "${key}" (did you mean "${likely}"?)`;
  return `unknown setting "${key}"; known settings: ${known.join(', ')}`;
}

/**
 * A number setting as written: a YAML number, or a string of digits with
 * an optional decimal part (`"30"`, `"0.5"`).
 *
 * @returns the number, or `undefined` for anything else (or a non-finite number)
 */
export function numberOf(value: unknown): number | undefined {
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\d+(\.\d+)?$/.test(value.trim()) ? Number(value) : NaN;
  return Number.isFinite(n) ? n : undefined;
}
