/**
 * The config file of `memento-archive witness` (a C2SP tlog-witness
 * server): its schema ({@link WITNESS_FILE_SCHEMA}: each key's type,
 * default, meaning and the reason a value is refused) and the resolved
 * {@link WitnessConfig} the server uses. Relative paths are relative to
 * the file's folder.
 */
import path from 'node:path';
import { ConfigError, loadYamlFile, resolveConfigPath, type YamlSource } from '#shared/config.js';
import { type ConfigSchema, checkConfig, defineCheck } from '#shared/config-schema.js';
import { type HostPort, parseListen } from '#shared/net.js';
import { parseVerifierKey, SIG_ED25519, type VerifierKey } from './signed-note.js';

/** A log's verifier key as the witness accepts it: signed-note text, Ed25519 (type 0x01). */
function logKeyOf(v: unknown): VerifierKey | undefined {
  if (typeof v !== 'string') return undefined;
  try {
    const key = parseVerifierKey(v);
    return key.type === SIG_ED25519 ? key : undefined;
  } catch {
    return undefined;
  }
}

/** A key name (signed-note): not empty, no space, no `+`. */
const KEY_NAME = '^[^\\s+]{1,512}$';

defineCheck('witness-listen', (v) => parseListen(v) !== undefined);
defineCheck('witness-log-key', (v) => logKeyOf(v) !== undefined);

/** The schema of the witness's config file, keys in documentation order. */
export const WITNESS_FILE_SCHEMA = {
  $id: 'witness.yaml',
  type: 'object',
  additionalProperties: false,
  required: ['name', 'logs'],
  errorMessage: 'witness config must be a mapping of settings (listen, name, key_file, state_dir, logs), not {value}',
  properties: {
    listen: {
      check: 'witness-listen',
      default: '127.0.0.1:8092',
      description: '`host:port` to listen on (port 0: any free port); the witness answers `POST /add-checkpoint` (C2SP tlog-witness)',
      errorMessage: 'must be host:port with a port 0-65535',
    },
    name: {
      type: 'string',
      pattern: KEY_NAME,
      description:
        "the witness's key name, a URL without a scheme (`witness.example.org/w1`): the name of its cosignature lines and of its verifier key; logs list it with that key",
      missingMessage: 'the name of the witness key, e.g. witness.example.org/w1',
      errorMessage: 'must be a key name without spaces or "+" (e.g. witness.example.org/w1)',
    },
    key_file: {
      type: 'string',
      pattern: '\\S',
      docDefault: '`witness-key.pem` in `state_dir`',
      description:
        "the witness's Ed25519 private key (PKCS#8 PEM), made on first start with mode 0600; the witness does not start when group or others may read it",
      errorMessage: 'must be a file path',
    },
    state_dir: {
      type: 'string',
      pattern: '\\S',
      default: '../data/witness',
      description: 'folder of what the witness last cosigned for each log (one file per log); one witness at a time uses it',
      errorMessage: 'must be a folder path',
    },
    logs: {
      type: 'array',
      minItems: 1,
      maxItems: 1000,
      description:
        'the logs it witnesses: `- {origin: <checkpoint origin>, key: <vkey>}`, the key as `<name>+<key id>+<base64>` (Ed25519); an origin listed twice has two keys, either may sign',
      errorMessage: 'must be a list of mappings, each with an origin and a key',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['origin', 'key'],
        errorMessage: 'each of {key} is a mapping with an origin and a key, not {value}',
        properties: {
          origin: {
            type: 'string',
            pattern: KEY_NAME,
            description: "the log's checkpoint origin (its first line)",
            missingMessage: "the log's checkpoint origin",
            errorMessage: 'must be a checkpoint origin without spaces or "+"',
          },
          key: {
            check: 'witness-log-key',
            description: "the log's verifier key",
            missingMessage: "the log's verifier key, <name>+<key id>+<base64>",
            errorMessage: '{key} must be an Ed25519 verifier key <name>+<hex key id>+<base64 of 0x01 and the key>, not {value}',
          },
        },
      },
    },
  },
} as const satisfies ConfigSchema;

/** The witness's settings, resolved. */
export interface WitnessConfig {
  readonly file: string;
  readonly listen: HostPort;
  /** the key name of its cosignatures */
  readonly name: string;
  /** absolute path */
  readonly keyFile: string;
  /** absolute path */
  readonly stateDir: string;
  /** the keys of each origin it accepts */
  readonly logs: ReadonlyMap<string, readonly VerifierKey[]>;
}

/** Checks a parsed witness config file and resolves it. @throws ConfigError `file:line: reason` */
export function validateWitnessConfig(src: YamlSource): WitnessConfig {
  const raw = checkConfig(WITNESS_FILE_SCHEMA, src, 0, [], src.values[0] ?? {});
  const logs = new Map<string, VerifierKey[]>();
  for (const [i, log] of raw.logs.entries()) {
    const key = logKeyOf(log.key)!;
    const keys = logs.get(log.origin) ?? [];
    if (keys.some((k) => k.name === key.name && k.keyId.equals(key.keyId)))
      throw new ConfigError(`${src.where(0, ['logs', i, 'key'])}: this key is listed twice for ${log.origin}`);
    logs.set(log.origin, [...keys, key]);
  }
  const stateDir = resolveConfigPath(src.file, raw.state_dir);
  return {
    file: src.file,
    listen: parseListen(raw.listen)!,
    name: raw.name,
    keyFile: raw.key_file === undefined ? path.join(stateDir, 'witness-key.pem') : resolveConfigPath(src.file, raw.key_file),
    stateDir,
    logs,
  };
}

/** Reads and checks the witness config file `file`. @throws ConfigError `file:line: reason` */
export function loadWitnessConfig(file: string): WitnessConfig {
  return validateWitnessConfig(loadYamlFile(path.resolve(file)));
}
