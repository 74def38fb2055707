/**
 * Config files as JSON Schemas (plain object literals, checked by ajv; their
 * TypeScript types derived from them by json-schema-to-ts, {@link ConfigOf}):
 * one place holds each setting's type, default, meaning and the reason
 * given when a value is refused. From the same schema come the settings
 * tables of the documentation ({@link settingsTable}).
 *
 * A setting's schema carries, besides JSON Schema's own `default` and
 * `description`:
 * - `errorMessage`: why a value is refused, as a template: `{key}` is the
 *   setting's name, `{value}` the refused value (JSON); without `{`, the
 *   message reads `<key> <errorMessage>, not <value>`;
 * - `missingMessage`: for a required setting, what it is (`server_name is
 *   missing (<missingMessage>)`);
 * - `docDefault`: the default as the documentation shows it when the
 *   `default` value alone says too little (`4294967296 (4 GiB)`), or a
 *   derived one;
 * - `check`: the name of a value check registered with {@link defineCheck}
 *   (a host name, a listen address, On/Off…), for shapes JSON Schema
 *   cannot say.
 *
 * A key with no value (`key:` or `key: null` in YAML) counts as absent.
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Ajv as AjvType, ErrorObject, ValidateFunction } from 'ajv';
import type { ExtendedJSONSchema, FromExtendedSchema } from 'json-schema-to-ts';
import { ConfigError, isPlainObject, type YamlSource } from './config.js';

const require = createRequire(import.meta.url);

/** The ajv settings of every config schema: defaults filled in, no type coercion, the first error only. */
const AJV_OPTIONS = { strict: true, strictTypes: false, useDefaults: true, allErrors: false, coerceTypes: false } as const;

/** An ajv instance with this module's keywords (annotations for ajv: `check` runs after it, see {@link runChecks}). */
function newAjv(options: object = {}): AjvType {
  const { Ajv } = require('ajv') as typeof import('ajv');
  const ajv = new Ajv({ ...AJV_OPTIONS, ...options });
  for (const keyword of ['errorMessage', 'missingMessage', 'docDefault', 'check']) ajv.addKeyword({ keyword, schemaType: 'string' });
  return ajv;
}

const checks = new Map<string, (value: unknown) => boolean>();

/**
 * Registers a value check that schemas name with `check: '<name>'`.
 * Checks are pure functions of the value (no file access).
 */
export function defineCheck(name: string, fn: (value: unknown) => boolean): void {
  checks.set(name, fn);
}

/** The keywords this module adds to JSON Schema (see the module comment). */
export type SettingKeywords = {
  errorMessage?: string;
  missingMessage?: string;
  docDefault?: string;
  check?: string;
};

/** A config schema: JSON Schema (draft 7 keywords) plus {@link SettingKeywords}. */
export type ConfigSchema = ExtendedJSONSchema<SettingKeywords>;

/**
 * The value a schema admits once checked, defaults filled in (a property
 * with a default is never missing); a `check`-only setting is `unknown`.
 * Declare schemas `as const satisfies ConfigSchema`.
 */
export type ConfigOf<S extends ConfigSchema> = FromExtendedSchema<SettingKeywords, S>;

/** What this module reads of a schema node. */
type SchemaNode = SettingKeywords & {
  description?: string;
  default?: unknown;
  properties?: Record<string, SchemaNode>;
  items?: SchemaNode;
  required?: readonly string[];
};

/** Validators precompiled by ajv's standalone code generation (bin/compile-config-schemas.js), with the hash of each schema they were made from. */
interface Precompiled {
  validators: Record<string, ValidateFunction>;
  hashes: Record<string, string>;
}

/** The precompiled validators, when the file exists (`npm ci` and `npm test` write it). */
const precompiled: Precompiled | null = (() => {
  try {
    return require('./generated/config-validators.cjs') as Precompiled;
  } catch {
    return null;
  }
})();

/** A hash of a schema's JSON: a precompiled validator is used only for the schema it was made from. */
export function schemaHash(schema: object): string {
  return createHash('sha256').update(JSON.stringify(schema)).digest('hex');
}

let runtimeAjv: AjvType | undefined;
const compiled = new WeakMap<object, ValidateFunction>();

/**
 * The validator of a schema: the precompiled one when it was made from
 * this very schema (no ajv in memory: ~10 MiB and ~100 ms of start-up
 * less), else one compiled now by ajv (loaded on first use).
 */
function validatorOf(schema: ConfigSchema): ValidateFunction {
  const key = schema as object;
  let v = compiled.get(key);
  if (v) return v;
  const id = (schema as { $id?: string }).$id;
  if (id && precompiled?.hashes[id] === schemaHash(key)) v = precompiled.validators[id];
  else {
    runtimeAjv ??= newAjv();
    v = runtimeAjv.compile(key);
  }
  compiled.set(key, v);
  return v;
}

/**
 * ajv's standalone code (CommonJS) of validators for `schemas` (each with
 * a `$id`), with their hashes: what bin/compile-config-schemas.js writes to
 * shared/generated/config-validators.cjs.
 */
export function standaloneValidators(schemas: ConfigSchema[]): string {
  const ajv = newAjv({ code: { source: true } });
  const refs: Record<string, string> = {};
  const hashes: Record<string, string> = {};
  for (const schema of schemas) {
    const id = (schema as { $id?: string }).$id;
    if (!id) throw new Error('a precompiled config schema needs a $id');
    ajv.addSchema(schema as object);
    refs[id] = id;
    hashes[id] = schemaHash(schema as object);
  }
  const { default: standaloneCode } = require('ajv/dist/standalone/index.js') as typeof import('ajv/dist/standalone/index.js');
  const code = standaloneCode(ajv, refs);
  return `${code}\nmodule.exports.validators = Object.fromEntries(Object.keys(${JSON.stringify(refs)}).map((k) => [k, module.exports[k]]));\nmodule.exports.hashes = ${JSON.stringify(hashes)};\n`;
}

/** A key path into a YAML document: mapping keys and list indexes. */
export type KeyPath = (string | number)[];

/** Removes keys whose value is `null` (YAML `key:`), in mappings at any depth. */
function withoutNulls(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutNulls);
  if (!isPlainObject(v)) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) if (x !== null && x !== undefined) out[k] = withoutNulls(x);
  return out;
}

/** Longest key compared by {@link likelyKey} (a longer one is no near miss of any setting). */
const MAX_KEY_COMPARED = 64;

/**
 * Edit distance between two short strings, case-insensitive: insertions,
 * deletions, substitutions and swaps of two neighbouring letters, each
 * counting 1 (the optimal string alignment distance). O(|a|·|b|).
 */
export function keyDistance(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  const d: number[][] = Array.from({ length: s.length + 1 }, (_, i) => [i, ...Array<number>(t.length).fill(0)]);
  for (let j = 1; j <= t.length; j++) d[0][j] = j;
  for (let i = 1; i <= s.length; i++)
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[s.length][t.length];
}

/**
 * The known key an unknown one was probably meant to be: the nearest by
 * {@link keyDistance} (case ignored), when it is at most 1 edit away for a
 * key of up to 4 letters, 2 for a longer one, and no other known key is as
 * near (`upstrem` → `upstream`, `ArchiveHots` → `ArchiveHost`).
 *
 * @returns the known key, or `undefined` when none is that near (or two are)
 */
export function likelyKey(key: string, known: string[]): string | undefined {
  if (key.length > MAX_KEY_COMPARED) return undefined;
  const limit = key.length <= 4 ? 1 : 2;
  let best: string | undefined;
  let bestD = limit + 1;
  let tie = false;
  for (const k of known) {
    const dist = keyDistance(key, k);
    if (dist < bestD) [best, bestD, tie] = [k, dist, false];
    else if (dist === bestD) tie = true;
  }
  return tie ? undefined : best;
}

/** Options of {@link checkConfig}. */
export interface CheckOptions {
  /** The message for a key the schema does not know (default: `unknown setting "<key>"`). */
  unknownKey?: (key: string, known: string[]) => string;
}

/**
 * Checks `value` (a YAML document or part of one) against `schema`, fills
 * in defaults, and returns the checked value.
 *
 * @param at where `value` sits in document `doc` of `src` (for line numbers)
 * @throws ConfigError `file:line: reason` for the first problem found: a
 *   key the schema does not know, a missing required key, a value of the
 *   wrong type or shape (the setting's `errorMessage`)
 */
export function checkConfig<S extends ConfigSchema>(
  schema: S,
  src: YamlSource,
  doc: number,
  at: KeyPath,
  value: unknown,
  opts: CheckOptions = {},
): ConfigOf<S> {
  const validate = validatorOf(schema);
  const data = withoutNulls(value);
  if (!validate(data)) throw new ConfigError(describeError(validate.errors![0], schema as SchemaNode, src, doc, at, data, opts));
  const failed = runChecks(schema as SchemaNode, data, []);
  if (failed)
    throw new ConfigError(
      describeError({ instancePath: failed, keyword: 'check', params: {}, schemaPath: '' }, schema as SchemaNode, src, doc, at, data, opts),
    );
  return data as ConfigOf<S>;
}

/**
 * Runs the `check`s of a schema over data that passed the schema (a
 * present value whose node names a check), depth first in schema order.
 *
 * @returns the JSON pointer of the first value refused, or `undefined`
 */
function runChecks(node: SchemaNode, data: unknown, path: string[]): string | undefined {
  if (data === undefined) return undefined;
  if (node.check) {
    const fn = checks.get(node.check);
    if (!fn) throw new Error(`config schema: no check named "${node.check}"`);
    if (!fn(data)) return path.map((p) => '/' + p.replace(/~/g, '~0').replace(/\//g, '~1')).join('');
  }
  if (node.properties && isPlainObject(data)) {
    for (const [k, p] of Object.entries(node.properties)) {
      const bad = runChecks(p, data[k], [...path, k]);
      if (bad !== undefined) return bad;
    }
  }
  if (node.items && Array.isArray(data)) {
    for (const [i, item] of data.entries()) {
      const bad = runChecks(node.items, item, [...path, String(i)]);
      if (bad !== undefined) return bad;
    }
  }
  return undefined;
}

/** The instance path of an ajv error as keys and indexes into `data`. */
function keysOf(instancePath: string, data: unknown): KeyPath {
  const out: KeyPath = [];
  let cur = data;
  for (const raw of instancePath.split('/').slice(1)) {
    const seg = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    const key = Array.isArray(cur) ? Number(seg) : seg;
    out.push(key);
    cur = (cur as Record<string | number, unknown> | undefined)?.[key];
  }
  return out;
}

/** The schema node of the value at `keys`. */
function nodeAt(root: SchemaNode, keys: KeyPath): SchemaNode | undefined {
  let node: SchemaNode | undefined = root;
  for (const k of keys) {
    if (!node) return undefined;
    node = typeof k === 'number' ? node.items : node.properties?.[k];
  }
  return node;
}

function valueAt(data: unknown, keys: KeyPath): unknown {
  let cur = data;
  for (const k of keys) cur = (cur as Record<string | number, unknown> | undefined)?.[k];
  return cur;
}

/** Fills a message template: `{key}`, `{value}`; a plain message reads `<key> <message>, not <value>`. */
export function fillMessage(template: string, key: string, value: unknown): string {
  const shown = JSON.stringify(value) ?? String(value);
  if (!template.includes('{')) return `${key} ${template}, not ${shown}`;
  return template.replace(/\{key\}/g, key).replace(/\{value\}/g, shown);
}

function describeError(err: ErrorObject, root: SchemaNode, src: YamlSource, doc: number, at: KeyPath, data: unknown, opts: CheckOptions): string {
  const keys = keysOf(err.instancePath, data);
  const where = (k: KeyPath) => src.where(doc, [...at, ...k]);
  const unknown = (key: string): string => {
    const known = Object.keys(nodeAt(root, keys)?.properties ?? {});
    const likely = likelyKey(key, known);
    const reason = likely ? `unknown setting "${key}" (did you mean "${likely}"?)` : `unknown setting "${key}" (known: ${known.join(', ')})`;
    return `${where([...keys, key])}: ${opts.unknownKey ? opts.unknownKey(key, known) : reason}`;
  };
  if (err.keyword === 'additionalProperties') return unknown(String((err.params as { additionalProperty: string }).additionalProperty));
  if (err.keyword === 'required') {
    const key = String((err.params as { missingProperty: string }).missingProperty);
    // A required key misspelt (`upstrem:`) is named as the unknown key it is, with the one meant.
    const known = Object.keys(nodeAt(root, keys)?.properties ?? {});
    const here = valueAt(data, keys);
    const misspelt = isPlainObject(here) ? Object.keys(here).find((k) => !known.includes(k) && likelyKey(k, known) === key) : undefined;
    if (misspelt !== undefined) return unknown(misspelt);
    const why = nodeAt(root, [...keys, key])?.missingMessage;
    return `${where(keys)}: ${key} is missing${why ? ` (${why})` : ''}`;
  }
  const node = nodeAt(root, keys);
  const key = String([...keys].reverse().find((k) => typeof k === 'string') ?? '');
  const value = valueAt(data, keys);
  const message = node?.errorMessage ?? err.message ?? 'is not valid';
  return `${where(keys)}: ${fillMessage(message, key, value)}`;
}

/** The `default` of each property of a mapping's schema (properties without one are left out). */
export function defaultsOf(schema: ConfigSchema): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, p] of Object.entries((schema as SchemaNode).properties ?? {})) if (p.default !== undefined) out[k] = p.default;
  return out;
}

/** Markdown of a default value: `` `text` ``, numbers as written, lists in YAML flow form. */
function showDefault(node: SchemaNode, required: boolean): string {
  if (node.docDefault !== undefined) return node.docDefault;
  const d = node.default;
  if (d === undefined) return required ? '— (required)' : '—';
  if (Array.isArray(d)) return d.length ? '`[' + d.join(', ') + ']`' : '`[]`';
  if (typeof d === 'boolean') return d ? '`On`' : '`Off`';
  return '`' + String(d) + '`';
}

/**
 * The documentation table of a mapping's settings, in schema order:
 * `| key | default | meaning |` (GitHub markdown), one row per property
 * with its `description`.
 *
 * @param keyHeading the heading of the first column (`key`, `setting`)
 */
export function settingsTable(schema: ConfigSchema, keyHeading = 'key'): string {
  const node = schema as SchemaNode;
  const required = new Set(node.required ?? []);
  const rows = Object.entries(node.properties ?? {}).map(
    ([k, p]) => `| \`${k}\` | ${showDefault(p, required.has(k))} | ${(p.description ?? '').replace(/\|/g, '\\|')} |`,
  );
  return [`| ${keyHeading} | default | meaning |`, '|---|---|---|', ...rows].join('\n') + '\n';
}
