/**
 * What the proxy's two kinds of config file (proxy-file.ts, vhost-file.ts)
 * share: the type of a schema and of what it admits, the message for an
 * unknown key, the defaults read off a schema, and numbers that YAML may
 * hand over as strings (`ArchivePort: "9000"`).
 */
import type { ExtendedJSONSchema, FromExtendedSchema } from 'json-schema-to-ts';
import { checkConfig } from '../../shared/config-schema.js';
import type { YamlSource } from '../../shared/config.js';

/** The keywords shared/config-schema.ts adds to JSON Schema (`errorMessage`, `missingMessage`, `docDefault`, `check`). */
type SettingKeywords = { errorMessage?: string; missingMessage?: string; docDefault?: string; check?: string };

/** A config schema: a JSON Schema object literal (`as const`) with the keywords above. */
export type SettingsSchema = ExtendedJSONSchema<SettingKeywords>;

/** What a schema admits once checked, defaults filled in (a `check`-only setting is `unknown`). */
export type SettingsOf<S extends SettingsSchema> = FromExtendedSchema<SettingKeywords, S>;

/**
 * Checks `value` (a vhost, or a whole file: document `doc` of `src`, at
 * `at` in it) against `schema` with shared/config-schema.ts `checkConfig`,
 * unknown keys refused with {@link unknownKey}'s message, and fills in the
 * defaults.
 *
 * @throws ConfigError `file:line: reason` for the first problem found
 */
export function checkSettings<S extends SettingsSchema>(schema: S, src: YamlSource, doc: number, at: (string | number)[], value: unknown): SettingsOf<S> {
  const check = checkConfig as unknown as (schema: SettingsSchema, src: YamlSource, doc: number, at: (string | number)[], value: unknown, opts: { unknownKey: typeof unknownKey }) => unknown;
  return check(schema, src, doc, at, value, { unknownKey }) as SettingsOf<S>;
}

/**
 * The reason given for a key no schema property names: a near miss in case
 * gets a "did you mean" (`enableip` → `EnableIP`), anything else the list
 * of known keys. For `checkConfig`'s `unknownKey` option.
 */
function unknownKey(key: string, known: string[]): string {
  const lower = key.toLowerCase();
  for (const k of known) if (k.toLowerCase() === lower) return `unknown setting "${key}" (did you mean "${k}"? names are case-sensitive)`;
  return `unknown setting "${key}"; known settings: ${known.join(', ')}`;
}

/** The `default` of each property of a mapping's schema, in schema order (properties without one are left out). */
export function defaultsOf(schema: { properties: Record<string, object> }): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, p] of Object.entries(schema.properties)) if ('default' in p && p.default !== undefined) out[k] = p.default;
  return out;
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
