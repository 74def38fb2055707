/**
 * The keys of conf/archive.yaml that bound the daemon's connections
 * (`max_connections`, `put_reserved_connections`; the bound itself is
 * archive/http/connections.ts): their schema, for archive/config.ts, and
 * the check between them. docs/operations.md "Connections".
 */
import { ConfigError, positiveIntegerSchema, type YamlSource } from '#shared/config.js';

/** A count of connections, 1 or more. */
const count = positiveIntegerSchema;

/** The schema properties of the connection keys (archive/config.ts puts them at the top level). */
export const CONNECTION_PROPERTIES = {
  max_connections: count(
    4096,
    'most connections open at once; one more is answered `503` with `Retry-After: 1` and closed as soon as it is accepted (counted in `memento_archive_connections_refused_total`). Lowered at start to the open-file limit (`LimitNOFILE`) less 256 kept for files, when that is smaller (the daemon says so)',
  ),
  put_reserved_connections: count(
    128,
    'of `max_connections`, how many only clients whose address is in `put_allow` may take (the capture proxies: each keeps up to its `archive_connections`, default 64): other clients get 503 once they hold all the rest, so that idle or slow readers never keep the captures out. Less than `max_connections`',
  ),
} as const;

/** @throws ConfigError `file:line: reason` when `put_reserved_connections` leaves no connection to readers */
export function checkConnections(src: YamlSource, max: number, reserved: number): void {
  if (reserved >= max)
    throw new ConfigError(
      `${src.where(0, ['put_reserved_connections'])}: put_reserved_connections (${reserved}) must be less than max_connections (${max}), or no reader gets in`,
    );
}
