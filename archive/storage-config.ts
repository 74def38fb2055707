/**
 * The `storage:` settings of conf/archive.yaml that say where the WARC
 * files live: a folder in `data_dir` (the default) or a bucket of an
 * S3-compatible object store shared by several daemons (docs/scale-out.md).
 */
import os from 'node:os';
import { defineCheck } from '#shared/config-schema.js';

/** WARC files in an S3-compatible bucket (`storage.warcs: s3://bucket/prefix/`), resolved. */
export interface S3WarcsConfig {
  bucket: string;
  /** Key prefix of every object, `''` or ending in `/`. */
  prefix: string;
  /** `storage.s3.endpoint`: the store's URL; `undefined` for AWS S3 itself. */
  endpoint?: string;
  /** `storage.s3.region` (default `us-east-1`). */
  region: string;
  /** `storage.s3.force_path_style`: `http://host/bucket/key` instead of `http://bucket.host/key` (MinIO, Ceph RGW, tests). */
  forcePathStyle: boolean;
  /** `storage.replica`: this daemon's name, the folder of the objects it writes (`<prefix><replica>/…`). */
  replica: string;
}

/** A `s3://bucket/prefix/` URL: bucket and key prefix (`''` or ending in `/`); `undefined` when it is not one. */
export function parseS3Url(v: unknown): { bucket: string; prefix: string } | undefined {
  if (typeof v !== 'string') return undefined;
  const m = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(v);
  if (!m) return undefined;
  const prefix = (m[2] ?? '').replace(/\/+$/, '');
  if (/\/\/|^\/|[\\\s]/.test(prefix)) return undefined;
  return { bucket: m[1], prefix: prefix ? prefix + '/' : '' };
}

defineCheck('warcs-location', (v) => v === 'folder' || parseS3Url(v) !== undefined);

/** What docs/configuration.md says of the `storage` keys of the WARC files. */
export const WARC_STORAGE_DOC =
  "where the WARC files are: `warcs: folder` (`warcs/` in `data_dir`) or `warcs: s3://bucket/prefix/`, a bucket of an S3-compatible store (AWS S3, MinIO, Ceph RGW) that several daemons may share (replicas: one PostgreSQL `index` and one bucket shared by all; a daemon with `warcs: folder` must be alone on a PostgreSQL index, and is refused beside another); then `s3: {endpoint, region, force_path_style}` (`endpoint` the store's URL, omitted for AWS; `region` default `us-east-1`; `force_path_style` default `false`, `true` for most other stores) and `replica`, this daemon's name among those sharing the bucket (default `<host name>-<listen port>`; each writes its objects under `<prefix><replica>/`). Credentials as the AWS SDK finds them (`AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`, `~/.aws/credentials`, an instance role). `purge` replaces the objects holding what it erases. See docs/scale-out.md";

/** The schema properties of `storage` that concern the WARC files (archive/config.ts puts them under `storage`). */
export const WARC_STORAGE_PROPERTIES = {
  warcs: {
    type: 'string',
    check: 'warcs-location',
    docDefault: '`folder`',
    description:
      'where the WARC files are: `folder` (`warcs/` in `data_dir`) or `s3://bucket/prefix/`, a bucket of an S3-compatible store (AWS S3, MinIO, Ceph RGW) that several daemons may share, each writing its objects under `<prefix><replica>/`; credentials as the AWS SDK finds them (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `~/.aws/credentials`, an instance role). See docs/scale-out.md',
    errorMessage: 'storage.warcs must be folder or a URL like s3://bucket/prefix/, not {value}',
  },
  s3: {
    type: 'object',
    additionalProperties: false,
    default: {},
    description:
      'the S3-compatible store of `storage.warcs`: `endpoint` (its URL, e.g. `http://127.0.0.1:9000`; omit for AWS), `region` (default `us-east-1`), `force_path_style` (default `false`; `true` for most stores other than AWS)',
    errorMessage: '{key} must be a mapping like {endpoint: http://127.0.0.1:9000, region: us-east-1, force_path_style: true}',
    properties: {
      endpoint: {
        type: 'string',
        pattern: '^https?://[^/\\s?#@]+/?$',
        errorMessage: 'storage.s3.endpoint must be a URL like http://127.0.0.1:9000, not {value}',
      },
      region: { type: 'string', pattern: '^[a-z0-9-]+$', default: 'us-east-1', errorMessage: 'storage.s3.region must be a region name like us-east-1' },
      force_path_style: { type: 'boolean', default: false, errorMessage: 'storage.s3.force_path_style must be true or false' },
    },
  },
  replica: {
    type: 'string',
    pattern: '^[A-Za-z0-9._-]{1,64}$',
    docDefault: '`<host name>-<listen port>`',
    description:
      "this daemon's name among the replicas sharing `storage.warcs`: the folder of the WARC objects it writes (`<prefix><replica>/`); each replica needs its own",
    errorMessage: 'storage.replica must be 1 to 64 letters, digits, dots, dashes or underscores, not {value}',
  },
} as const;

/** The raw `storage` mapping as the schema checked it (only the WARC keys read here). */
interface RawStorage {
  warcs?: string;
  s3?: { endpoint?: string; region?: string; force_path_style?: boolean };
  replica?: string;
}

/**
 * The resolved WARC location: `undefined` for the folder (the default),
 * else the bucket, prefix, client settings and replica name (default: the
 * host name and the listen port, `web1-8090`).
 */
export function s3WarcsConfig(raw: RawStorage | undefined, listenPort: number): S3WarcsConfig | undefined {
  const where = parseS3Url(raw?.warcs);
  if (!where) return undefined;
  const s3 = raw?.s3 ?? {};
  const host =
    os
      .hostname()
      .replace(/[^A-Za-z0-9._-]/g, '_')
      .slice(0, 50) || 'replica';
  return {
    ...where,
    ...(s3.endpoint ? { endpoint: s3.endpoint.replace(/\/+$/, '') } : {}),
    region: s3.region ?? 'us-east-1',
    forcePathStyle: s3.force_path_style ?? false,
    replica: raw?.replica ?? `${host}-${listenPort}`,
  };
}

/** A database URL (`storage.index`) for messages: its password, if any, as `***`; `postgres://…` when it does not parse. */
export function withoutPassword(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.href;
  } catch {
    return 'postgres://…';
  }
}
