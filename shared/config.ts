/**
 * Config loading shared by both daemons: YAML files with errors that name
 * file, line and reason, and the value shapes the configs use (On/Off,
 * host:port, paths relative to the file's folder).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { LineCounter, parseAllDocuments, isMap, isSeq, type Document, type Node } from 'yaml';

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

export { isMap, isSeq };

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

/** A listen address `host:port`; `port` 0 asks the OS for a free port. */
export interface ListenAddress {
  host: string;
  port: number;
}

/**
 * Parses `host:port`, `[v6]:port` or a bare port number.
 *
 * @returns the address, or `undefined` when it is not one of those shapes
 *   or the port is outside 0–65535.
 */
export function parseListen(value: unknown, defaultHost = '127.0.0.1'): ListenAddress | undefined {
  if (typeof value === 'number') value = String(value);
  if (typeof value !== 'string') return undefined;
  const m = /^(?:(\[[^\]]+\]|[^:]+):)?(\d{1,5})$/.exec(value.trim());
  if (!m) return undefined;
  const port = Number(m[2]);
  if (port > 65535) return undefined;
  const host = m[1] ? m[1].replace(/^\[|\]$/g, '') : defaultHost;
  return { host, port };
}

/** A path from a config file, made absolute against the folder of that file. */
export function resolveConfigPath(configFile: string, p: string): string {
  return path.resolve(path.dirname(configFile), p);
}
