/**
 * The bound on the archive's open connections (`max_connections`), with a
 * share kept for the writers (`put_reserved_connections`): every
 * connection is counted from its accept to its close; one accepted when
 * the bound is reached, or when only the writers' share is left and its
 * peer is not in `put_allow`, is answered at once with a minimal
 * `503 Service Unavailable` (`Retry-After`, `Connection: close`, one line
 * of reason) and closed, and counted in
 * `memento_archive_connections_refused_total`. So a crowd of idle or slow
 * clients (each held until `headers_timeout`, or `keep_alive_timeout`
 * between requests) costs the daemon at most `max_connections` file
 * descriptors, never all it has, and the capture proxy's PUTs still get
 * in. The bound is also kept below the process's open-file limit (Linux:
 * `/proc/self/limits`), with room for the WARC files and the index.
 * docs/operations.md "Connections", docs/threat-model.md.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { Socket } from 'node:net';
import { errorText } from '#shared/http-error.js';
import { addressMatcher, clientAddress } from '#shared/net.js';
import type { ArchiveConfig } from '../config.js';
import { TEXT } from './context.js';

/** File descriptors kept for what is not a connection (WARC files, the index, logs, the work pools). */
export const FILES_KEPT = 256;
/** Seconds a refused client is told to wait. */
const RETRY_AFTER_S = 1;
/** Most time a refused connection stays open for its 503 to be read, ms. */
const REFUSED_LINGER_MS = 1000;
/** Most refused connections left open for their 503 to be read at once; past it one is closed without an answer. */
const REFUSED_LINGERING = 64;

/** Which share was full when a connection was refused. */
export type RefusedShare = 'all' | 'readers';

/** The open-file limit of this process (its soft limit), or `undefined` where it cannot be read. */
export function openFileLimit(): number | undefined {
  try {
    const line = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return line && line[1] !== 'unlimited' ? Number(line[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** The bound in force: `max_connections`, lowered to fit the open-file limit less {@link FILES_KEPT}; never below the writers' share plus one. */
export function connectionBound(config: Pick<ArchiveConfig, 'maxConnections' | 'putReservedConnections'>, fileLimit = openFileLimit()): number {
  const fits = fileLimit === undefined ? Infinity : fileLimit - FILES_KEPT;
  return Math.max(config.putReservedConnections + 1, Math.min(config.maxConnections, fits));
}

/** Counts and bounds the connections of one HTTP server (see the module comment). */
export class ConnectionGate {
  /** Connections open now, by whether their peer is in `put_allow`. */
  readonly open = { writers: 0, readers: 0 };
  private lingering = 0;
  private readonly isWriter: ReturnType<typeof addressMatcher>;

  /**
   * Takes over `server`'s `connection` listeners: each accepted socket goes to them only when admitted.
   *
   * @param bound most connections open at once ({@link connectionBound})
   * @param onRefuse told of each refused connection
   */
  constructor(
    server: http.Server,
    readonly bound: number,
    readonly reserved: number,
    putAllow: readonly string[],
    private readonly onRefuse: (share: RefusedShare) => void = () => undefined,
  ) {
    this.isWriter = addressMatcher([...putAllow]);
    const listeners = server.listeners('connection') as ((socket: Socket) => void)[];
    server.removeAllListeners('connection');
    server.on('connection', (socket: Socket) => {
      if (!this.admit(socket)) return;
      for (const l of listeners) l.call(server, socket);
    });
  }

  /** Counts `socket` in until it closes, or refuses it; whether it was admitted. */
  private admit(socket: Socket): boolean {
    const writer = this.isWriter(clientAddress(socket.remoteAddress));
    const total = this.open.writers + this.open.readers;
    if (total >= this.bound) return this.refuse(socket, 'all', `the archive has ${total} connections open, its max_connections`);
    if (!writer && this.open.readers >= this.bound - this.reserved)
      return this.refuse(socket, 'readers', `the archive has ${this.open.readers} connections of readers open, all it takes beside those kept for its writers`);
    const kind = writer ? 'writers' : 'readers';
    this.open[kind]++;
    socket.once('close', () => this.open[kind]--);
    return true;
  }

  /** Answers 503 on `socket` without reading its request, and closes it. */
  private refuse(socket: Socket, share: RefusedShare, reason: string): false {
    this.onRefuse(share);
    if (this.lingering >= REFUSED_LINGERING) {
      socket.destroy();
      return false;
    }
    this.lingering++;
    socket.once('close', () => this.lingering--);
    const body = errorText(503, `${reason}; try again in a moment`);
    socket.on('error', () => undefined);
    socket.setTimeout(REFUSED_LINGER_MS, () => socket.destroy());
    // What the client sends is read and dropped, so that the close is not a reset that loses the answer.
    socket.resume();
    socket.end(
      `HTTP/1.1 503 Service Unavailable\r\nContent-Type: ${TEXT}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nRetry-After: ${RETRY_AFTER_S}\r\nConnection: close\r\n\r\n${body}`,
    );
    return false;
  }
}
