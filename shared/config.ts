/**
 * Config files of both daemons are YAML: this module reads them, keeps the
 * way back from any key to its line (so that every error reads
 * `file:line: reason`), and holds the small value shapes the files share
 * (On/Off, paths relative to the file's folder). What each file may hold is
 * its schema's (shared/config-schema.ts).
 */
import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import path from 'node:path';
import { OperatorError } from './operator-error.js';
import { type Document, LineCounter, type Node, parseAllDocuments, visit } from 'yaml';

/**
 * The most bytes a config file may have unless its reader says otherwise
 * (1 MiB): far more than `proxy.yaml` or `archive.yaml` need, even with a
 * long list of access rules. Vhost files have their own, smaller bound
 * (proxy/config/vhost-file.ts).
 */
export const MAX_CONFIG_BYTES = 1024 * 1024;

/**
 * The most alias expansions a YAML document may do (`yaml`'s
 * `maxAliasCount`): a few anchors and aliases are fine, a "billion laughs"
 * (aliases of aliases, each level multiplying the size) is refused.
 */
export const MAX_YAML_ALIASES = 100;

/** A config that cannot be used; `message` is `file:line: reason`, the whole line (exit status 2). */
export class ConfigError extends OperatorError {
  constructor(message: string) {
    super(message, { status: 2, whole: true });
    this.name = 'ConfigError';
  }
}

/** A parsed YAML document with a way to name the line of any key path in errors. */
export interface YamlSource {
  file: string;
  /** The file's permission bits as it was read (fstat of the opened file), e.g. `0o640`; absent for text not read from a file. */
  mode?: number;
  /** The plain JS value of each document in the file (usually one). */
  values: unknown[];
  /** `file:line` of the node at `docIndex`/`keyPath`, or `file` if unknown. */
  where(docIndex: number, keyPath: (string | number)[]): string;
}

/**
 * How deep a config file's YAML may nest: at most this many flow brackets
 * (`[`, `{`) open at once, counted anywhere (in quotes and comments too, so
 * that no quoting trick hides one), and at most four times this many
 * columns of indentation and block indicators (`- `, `? `, `: `) before a
 * line's content. A real config nests three or four levels; the YAML parser
 * needs time and memory that grow faster than the nesting (a 64 KiB line of
 * `[` takes it seconds, and can run V8 out of memory).
 */
export const MAX_YAML_DEPTH = 64;

/**
 * Refuses YAML nested deeper than {@link MAX_YAML_DEPTH} before it is
 * parsed: one pass over the text, no backtracking.
 *
 * @throws ConfigError `file:line: reason` at the line where the bound is passed
 */
function checkNesting(text: string, file: string): void {
  let depth = 0;
  let line = 1;
  let lineStart = true;
  let prefix = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '\n') {
      line++;
      lineStart = true;
      prefix = 0;
      continue;
    }
    if (lineStart) {
      // Indentation, and `- `, `? `, `: ` before the content: each may open a block collection.
      const indicator = (c === '-' || c === '?' || c === ':') && (i + 1 === text.length || /[ \t\r\n]/.test(text[i + 1]));
      if (c === ' ' || c === '\t' || indicator) {
        if (++prefix > 4 * MAX_YAML_DEPTH) throw new ConfigError(`${file}:${line}: indented or nested deeper than ${4 * MAX_YAML_DEPTH} columns`);
        continue;
      }
      lineStart = false;
    }
    if (c === '[' || c === '{') {
      if (++depth > MAX_YAML_DEPTH) throw new ConfigError(`${file}:${line}: more than ${MAX_YAML_DEPTH} brackets open at once`);
    } else if ((c === ']' || c === '}') && depth > 0) depth--;
  }
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
  return readConfigFile(file, maxBytes).text;
}

/** As {@link readConfigText}, with the permission bits of the file as it was opened (fstat: the very file read). */
function readConfigFile(file: string, maxBytes: number): { text: string; mode: number } {
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
    return { text: buf.toString('utf8', 0, n), mode: st.mode & 0o777 };
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
 * @param maxBytes the most bytes the file may have (default {@link MAX_CONFIG_BYTES})
 * @throws ConfigError `file:line: reason` (`file: reason` for the file as a
 *   whole) for a file that cannot be read, is not a regular file, is larger
 *   than `maxBytes`, does not parse as YAML, nests too deep or expands too
 *   many aliases.
 */
export function loadYamlFile(file: string, maxBytes = MAX_CONFIG_BYTES): YamlSource {
  const { text, mode } = readConfigFile(file, maxBytes);
  return { ...parseYamlText(text, file), mode };
}

/**
 * The JSON Schema of a setting that is a positive whole number (a count
 * or a size in bytes) with default `dflt`, described for
 * docs/configuration.md (`docDefault`: the default as the docs write it).
 */
export const positiveIntegerSchema = <D extends number>(dflt: D, description: string, docDefault?: string) =>
  ({
    type: 'integer',
    minimum: 1,
    maximum: Number.MAX_SAFE_INTEGER,
    default: dflt,
    description,
    errorMessage: 'must be a positive whole number of bytes or a count',
    ...(docDefault ? { docDefault } : {}),
  }) as const;

/**
 * Refuses a config file that holds a secret (the archive's `put_tokens`, a
 * vhost's `ArchiveToken`: whoever reads it may write captures) while every
 * user of the machine may read it (the "other" read bit, `o+r`). The file
 * may be readable by its group: the service install gives each daemon its
 * files as `root:<daemon group>`, mode 0640 (docs/operations.md). Both
 * daemons refuse such a file the same way, through this one check.
 *
 * @param src the file as {@link loadYamlFile} read it (text without a
 *   file, `mode` absent, is not checked)
 * @param at where the secret is: document index and key path, for `file:line`
 * @param what the setting's name as the file spells it (`put_tokens`)
 * @throws ConfigError `file:line: <what> … every user can read this file
 *   (mode 0644); run: chmod o-r <file>`
 */
export function refuseReadableSecret(src: YamlSource, at: { doc: number; keyPath: (string | number)[] }, what: string): void {
  if (src.mode === undefined || !(src.mode & 0o004)) return;
  throw new ConfigError(
    `${src.where(at.doc, at.keyPath)}: ${what} is a secret, but every user can read this file (mode ${src.mode.toString(8).padStart(4, '0')}); ` +
      `run: chmod o-r ${src.file}`,
  );
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
 * errors. YAML nested deeper than {@link MAX_YAML_DEPTH} is refused before
 * it is parsed, and a document whose aliases would expand more than
 * {@link MAX_YAML_ALIASES} times at the line of its first alias.
 */
export function parseYamlText(text: string, file: string): YamlSource {
  checkNesting(text, file);
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
