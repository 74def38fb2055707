/**
 * The settings of archive.yaml that concern the evidence log's standard
 * formats (docs/evidence.md "Witnesses", "Timestamps"): the witnesses a
 * new checkpoint is submitted to (C2SP tlog-witness), how many of them
 * must cosign it before it is published, and the RFC 3161 time-stamping
 * authority asked for a token over it; and the log's origin, the name of
 * each archive's log in its checkpoints (C2SP tlog-checkpoint).
 * archive/config.ts puts the schema properties in archive.yaml's schema.
 */
import { ConfigError, type YamlSource } from '#shared/config.js';
import { defineCheck } from '#shared/config-schema.js';
import { formatHostPort, type HostPort } from '#shared/net.js';
import { parseVerifierKey, SIG_COSIGNATURE_V1, type VerifierKey } from './signed-note.js';

/** A witness as the config names it: its name, URL prefix (`<url>/add-checkpoint`) and cosignature verifier key (type 0x04). */
export interface WitnessSetting {
  readonly name: string;
  readonly url: string;
  readonly key: VerifierKey;
}

/** The settings, resolved. */
export interface TlogSettings {
  /** `witnesses:`, in the order listed. */
  witnesses: WitnessSetting[];
  /** `witness_quorum:`: cosignatures a checkpoint needs before it is published (default: every witness listed; 0 without witnesses). */
  witnessQuorum: number;
  /** `tsa_url:`: the RFC 3161 time-stamping authority's URL; `undefined`: no tokens. */
  tsaUrl?: string;
}

/** Whether `v` is a verifier key of an Ed25519 cosigner (type 0x04). */
function isCosignerKey(v: unknown): boolean {
  try {
    return typeof v === 'string' && parseVerifierKey(v).type === SIG_COSIGNATURE_V1;
  } catch {
    return false;
  }
}

defineCheck('witness-key', isCosignerKey);

/** One entry of `witnesses:`. */
const WITNESS_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'url', 'key'],
  errorMessage: 'each witness is a mapping {name, url, key}, not {value}',
  properties: {
    name: {
      type: 'string',
      pattern: '^[^\\s+]{1,512}$',
      description: "the witness's key name (the name its verifier key starts with)",
      errorMessage: 'a witness name has no spaces or "+", not {value}',
      missingMessage: "the witness's key name",
    },
    url: {
      type: 'string',
      pattern: '^https?://[^\\s?#]+$',
      description: 'its URL prefix: checkpoints are POSTed to `<url>/add-checkpoint`',
      errorMessage: 'a witness url is an http(s) URL prefix, not {value}',
      missingMessage: 'the URL prefix of its add-checkpoint endpoint',
    },
    key: {
      type: 'string',
      check: 'witness-key',
      description: 'its verifier key `<name>+<key ID hex>+<base64>`, of an Ed25519 cosignature key (signature type 0x04)',
      errorMessage:
        'a witness key is a signed-note verifier key of an Ed25519 cosigner, <name>+<8 hex digits>+<base64 of 0x04 and 32 bytes>, whose key ID matches, not {value}',
      missingMessage: 'its verifier key',
    },
  },
} as const;

/** The schema properties of archive.yaml these settings take (documentation order). */
export const TLOG_FILE_PROPERTIES = {
  witnesses: {
    type: 'array',
    items: WITNESS_SCHEMA,
    default: [],
    description:
      'witnesses of the evidence log (C2SP tlog-witness), `{name, url, key}`: each new checkpoint of each archive is POSTed to `<url>/add-checkpoint` with its consistency proof, and the timestamped cosignatures that verify with `key` are kept with it (docs/evidence.md "Witnesses"). Set `base_url` too: the witnesses know the log by its origin',
    errorMessage: '{key} must be a list of witnesses {name, url, key}',
  },
  witness_quorum: {
    type: 'integer',
    minimum: 0,
    maximum: 64,
    docDefault: 'every witness listed',
    description:
      'cosignatures a checkpoint needs before it is published (served at `/<id>/tlog/checkpoint`, used in receipts); below it the checkpoint is not served and the witnesses that did not answer are asked again, without waiting for new captures',
    errorMessage: 'must be a whole number of witnesses, 0 or more',
  },
  tsa_url: {
    type: 'string',
    pattern: '^https?://\\S+$',
    docDefault: 'none',
    description:
      'an RFC 3161 time-stamping authority: each checkpoint gets a token over its note text before it is published (`/<id>/tlog/checkpoint.tsr`, and in receipts); while the authority cannot be reached, no new checkpoint is published',
    errorMessage: 'must be the http(s) URL of an RFC 3161 time-stamping authority',
  },
} as const;

/** The raw values of {@link TLOG_FILE_PROPERTIES}, as the schema checked them. */
interface TlogFileValues {
  witnesses: readonly { name: string; url: string; key: string }[];
  witness_quorum?: number;
  tsa_url?: string;
}

/**
 * The settings resolved: witness keys parsed, each witness's `name` the
 * key name of its `key`, names unique, a quorum no larger than the list,
 * and no `+` in `base_url`'s path (it goes into the log's origin).
 * @throws ConfigError `file:line: reason`
 */
export function tlogSettings(src: YamlSource, raw: TlogFileValues, baseUrl: string | undefined): TlogSettings {
  if (baseUrl && /[+\s]/.test(new URL(baseUrl).pathname))
    throw new ConfigError(`${src.where(0, ['base_url'])}: base_url's path holds a "+", which the log's origin (a signed-note key name) may not`);
  const seen = new Set<string>();
  const witnesses = raw.witnesses.map((w, i) => {
    const key = parseVerifierKey(w.key);
    if (key.name !== w.name)
      throw new ConfigError(`${src.where(0, ['witnesses', i, 'name'])}: witness name ${w.name} is not the name in its key (${key.name})`);
    if (seen.has(w.name)) throw new ConfigError(`${src.where(0, ['witnesses', i, 'name'])}: witness ${w.name} is listed twice`);
    seen.add(w.name);
    return { name: w.name, url: w.url.replace(/\/+$/, ''), key };
  });
  const witnessQuorum = raw.witness_quorum ?? witnesses.length;
  if (witnessQuorum > witnesses.length)
    throw new ConfigError(
      `${src.where(0, ['witness_quorum'])}: witness_quorum ${witnessQuorum} is more than the ${witnesses.length} witness(es) listed: no checkpoint could be published`,
    );
  const out: TlogSettings = { witnesses, witnessQuorum };
  if (raw.tsa_url !== undefined) out.tsaUrl = raw.tsa_url;
  return out;
}

/**
 * The origin of an archive's log (C2SP tlog-checkpoint's first line, and
 * the key name of the log's note signatures): `base_url`'s host with its
 * port when it has one, then its path without a trailing slash, then
 * `/<id>` (`archive.example.org/current`). Without `base_url`, the listen
 * address `host:port` then `/<id>` (`127.0.0.1:8090/current`); with
 * `listen` port 0, the port the daemon got (`bound`) when given.
 */
export function logOrigin(config: { baseUrl?: string; listen: HostPort }, archiveId: string, bound?: number): string {
  if (config.baseUrl) {
    const u = new URL(config.baseUrl);
    return `${u.host}${u.pathname.replace(/\/+$/, '')}/${archiveId}`;
  }
  const port = config.listen.port === 0 && bound !== undefined ? bound : config.listen.port;
  return `${formatHostPort(config.listen.host, port)}/${archiveId}`;
}
