/**
 * Config files of both daemons are YAML: this module reads them, keeps the
 * way back from any key to its line (so that every error reads
 * `file:line: reason`), and holds the small value shapes the files share
 * (On/Off, paths relative to the file's folder). What each file may hold is
 * its schema's (shared/config-schema.ts).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { type Document, LineCounter, type Node, parseAllDocuments } from 'yaml';

/** A config that cannot be used; `message` is `file:line: reason`. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** A parsed YAML document with a way to name the line of any key path in errors. */
export interface YamlSource {
  file: string;
  /** The plain JS value of each document in the file (usually one). */
  values: unknown[];
  /** `file:line` of the node at `docIndex`/`keyPath`, or `file` if unknown. */
  where(docIndex: number, keyPath: (string | number)[]): string;
}

/**
 * Reads and parses a YAML file (one or more documents).
 *
 * @throws ConfigError `file:line: reason` for a file that cannot be read or
 *   does not parse as YAML.
 */
export function loadYamlFile(file: string): YamlSource {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`${file}: cannot read: ${(err as Error).message}`);
  }
  return parseYamlText(text, file);
}

/** As {@link loadYamlFile}, for text already read; `file` names it in errors. */
export function parseYamlText(text: string, file: string): YamlSource {
  const lineCounter = new LineCounter();
  const docs: Document.Parsed[] = parseAllDocuments(text, { lineCounter, prettyErrors: false }) as Document.Parsed[];
  for (const doc of docs) {
    const err = doc.errors[0];
    if (err) {
      const line = err.linePos?.[0]?.line ?? lineCounter.linePos(err.pos[0]).line;
      throw new ConfigError(`${file}:${line}: ${err.message.split('\n')[0]}`);
    }
  }
  const values = docs.map((d) => d.toJS());
  return {
    file,
    values,
    where(docIndex, keyPath) {
      const doc = docs[docIndex];
      if (!doc) return file;
      let node: unknown = doc.getIn(keyPath, true) as Node | undefined;
      // For a key whose value is missing or scalar-less, point at the parent.
      for (let n = keyPath.length; !node && n > 0; n--) node = doc.getIn(keyPath.slice(0, n - 1), true);
      const range = (node as { range?: [number, number, number] } | undefined)?.range;
      if (!range) return file;
      return `${file}:${lineCounter.linePos(range[0]).line}`;
    },
  };
}

/** True for a YAML mapping turned into a plain object. */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Reads an On/Off setting (the Apache module's spelling); `true`/`false`
 * (YAML booleans or strings) are accepted too, case-insensitively.
 *
 * @returns the boolean, or `undefined` when the value is not one of them.
 */
export function parseOnOff(value: unknown): boolean | undefined {
  if (typeof value === 'boolean') return value;
  if (typeof value !== 'string') return undefined;
  const v = value.trim().toLowerCase();
  if (v === 'on' || v === 'true') return true;
  if (v === 'off' || v === 'false') return false;
  return undefined;
}

/** A path from a config file, made absolute against the folder of that file. */
export function resolveConfigPath(configFile: string, p: string): string {
  return path.resolve(path.dirname(configFile), p);
}
