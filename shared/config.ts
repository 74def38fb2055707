/**
 * Config files of both daemons are YAML: this module reads them, keeps the
 * way back from any key to its line (so that every error reads
 * `file:line: reason`), and holds the small value shapes the files share
 * (On/Off, paths relative to the file's folder). What each file may hold is
 * its schema's (shared/config-schema.ts).
 */
import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import path from 'node:path';
import { type Document, LineCounter, type Node, parseAllDocuments, visit } from 'yaml';

/**
 * The most bytes a config file may have (64 KiB): far more than any real
 * one needs (a vhost is a few hundred bytes; a site with more vhosts than
 * fit spreads them over several files), and small enough that the worst
 * YAML a hostile file can hold within it (deep nesting, thousands of keys
 * in one mapping) parses in about a second.
 */
export const MAX_CONFIG_BYTES = 64 * 1024;

/**
 * The most alias expansions a YAML document may do (`yaml`'s
 * `maxAliasCount`): a few anchors and aliases are fine, a "billion laughs"
 * (aliases of aliases, each level multiplying the size) is refused.
 */
export const MAX_YAML_ALIASES = 100;

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

/** What a file that is not a regular file is, for the error that refuses it. */
function kindOf(st: Stats): string {
  if (st.isDirectory()) return 'a folder';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  if (st.isFIFO()) return 'a named pipe';
  if (st.isSocket()) return 'a socket';
  return 'not a regular file';
}

/**
 * Reads a config file as UTF-8 text, refusing what a config file cannot
 * be: anything but a regular file once symbolic links are followed (a
 * device such as `/dev/zero`, a named pipe, a folder) and a file of more
 * than `maxBytes`. The file is opened without blocking (a named pipe does
 * not hang the caller), its type and size are those of the opened file
 * (fstat), and at most `maxBytes + 1` bytes are ever read, so a file that
 * grows while it is read is refused too.
 *
 * @param maxBytes the bound, bytes (default {@link MAX_CONFIG_BYTES})
 * @throws ConfigError `file: reason` for a file that cannot be opened or
 *   read, is not a regular file, or is larger than `maxBytes`.
 */
export function readConfigText(file: string, maxBytes = MAX_CONFIG_BYTES): string {
  const tooLarge = (size: number | string) => new ConfigError(`${file}: ${size} bytes, more than the ${maxBytes} a config file may have`);
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    throw new ConfigError(`${file}: cannot read: ${(err as Error).message}`);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new ConfigError(`${file}: ${kindOf(st)}, not a regular file; only regular files are read`);
    if (st.size > maxBytes) throw tooLarge(st.size);
    const buf = Buffer.alloc(maxBytes + 1);
    let n = 0;
    for (let got = 1; got > 0 && n < buf.length; n += got) got = readSync(fd, buf, n, buf.length - n, null);
    if (n > maxBytes) throw tooLarge(`over ${maxBytes}`);
    return buf.toString('utf8', 0, n);
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(`${file}: cannot read: ${(err as Error).message}`);
  } finally {
    closeSync(fd);
  }
}

/**
 * Reads and parses a YAML file (one or more documents), within the bounds
 * of {@link readConfigText} and {@link parseYamlText}.
 *
 * @throws ConfigError `file:line: reason` (`file: reason` for the file as a
 *   whole) for a file that cannot be read, is not a regular file, is larger
 *   than {@link MAX_CONFIG_BYTES}, does not parse as YAML or expands too
 *   many aliases.
 */
export function loadYamlFile(file: string): YamlSource {
  return parseYamlText(readConfigText(file), file);
}

/** `file:line` of the first alias (`*name`) of `doc`, or `file`. */
function firstAliasAt(doc: Document.Parsed, file: string, lineCounter: LineCounter): string {
  let at = file;
  visit(doc, {
    Alias(_key, node) {
      if (node.range) at = `${file}:${lineCounter.linePos(node.range[0]).line}`;
      return visit.BREAK;
    },
  });
  return at;
}

/**
 * As {@link loadYamlFile}, for text already read; `file` names it in
 * errors. A document whose aliases would expand more than
 * {@link MAX_YAML_ALIASES} times is refused at the line of its first alias.
 */
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
  const values = docs.map((d) => {
    try {
      return d.toJS({ maxAliasCount: MAX_YAML_ALIASES }) as unknown;
    } catch (err) {
      // yaml throws a ReferenceError for too many aliases (and a RangeError when nesting exhausts the stack).
      if (err instanceof ReferenceError) {
        throw new ConfigError(`${firstAliasAt(d, file, lineCounter)}: YAML aliases expand more than ${MAX_YAML_ALIASES} times (an alias bomb?)`);
      }
      throw new ConfigError(`${file}: cannot read the YAML: ${(err as Error).message}`);
    }
  });
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
